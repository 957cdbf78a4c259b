"""Each package owns its settings (issue 50): every table of the config file is a model of the
package it configures, and ``node/config.py`` only composes them. A table defined in the node for
a package's component, or a package's model that the node maps by hand, fails here."""

from __future__ import annotations

from node.config import Config

#: The package each table of the config file belongs to.
OWNER = {
    "node": "node", "log": "node", "identity": "node", "api": "node", "doctor": "node",
    "memory": "memory", "hormones": "memory", "consolidation": "memory", "dream": "memory", "capture": "memory",
    "llm": "memory", "devices": "memory",
    "trust": "p2p", "wire": "p2p", "p2p": "p2p",
    "marketplace": "marketplace", "chain": "marketplace",
}  # fmt: skip


def test_every_table_is_a_model_of_the_package_it_configures() -> None:
    assert set(Config.model_fields) == set(OWNER)
    for table, field in Config.model_fields.items():
        model = field.annotation
        assert model is not None
        assert model.__module__.split(".")[0] == OWNER[table], f"[{table}] is {model.__module__}.{model.__name__}"


def test_a_table_is_made_of_its_components_models_not_copies_of_their_fields() -> None:
    """Each field of a package's table is declared once, by the model that first names it: a table
    that repeated a component's field would be a second place to change its default."""
    for table, field in Config.model_fields.items():
        model = field.annotation
        assert model is not None
        for key in model.model_fields:
            declaring = [c for c in model.__mro__ if key in getattr(c, "__annotations__", {})]
            assert len(declaring) == 1, f"[{table}] {key} is declared by {[c.__name__ for c in declaring]}"
