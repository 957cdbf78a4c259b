"""Issue 49: from practice to sale. A crystallised skill is stored private, and `skills publish` is
the one way it reaches the market: the quality gate first, then the scope change, the person's
alone (the agent's token gets 403 and an audit line), then the listing. A skill the gate refuses
(too few runs, a secret in it, another node's) keeps its scope, and the answer says why."""

from __future__ import annotations

from pathlib import Path

import pytest

from ground.authority import NotAllowed, Speaker
from memory.embedders.hashing import HashingEmbedder
from memory.errors import EditRefused
from memory.governance.scope import change_scope
from memory.intake.store import IntakeStore
from memory.model import NewCrystal, Origin, Scope, SemanticType
from tests.node.servers.test_api import Api
from tests.node.test_agent_authority import _refused_with_an_audit_line
from tests.node.test_agent_authority import api as api  # a daemon of this module's own (module scope)

PRACTICES = (
    "To renew the TLS certificate: run certbot renew, then reload nginx",
    "To renew the TLS certificate run certbot renew and then reload nginx",
    "Renew the TLS certificate: certbot renew, then reload nginx",
)


async def test_only_the_person_changes_a_scope_and_never_of_another_nodes_words(tmp_path: Path) -> None:
    store = await IntakeStore.open(tmp_path / "m.db", HashingEmbedder())
    try:
        skill = (
            await store.remember(NewCrystal("Rotate logs: logrotate -f", semantic_type=SemanticType.SKILL))
        ).crystal
        sold = NewCrystal(
            "Vacuum: VACUUM", semantic_type=SemanticType.SKILL, origin=Origin.PEER, speaker=Speaker.SELLER
        )
        bought = (await store.remember(sold)).crystal
        with pytest.raises(NotAllowed, match="the agent may not change a crystal's scope"):
            await change_scope(store, skill.id, Scope.PUBLIC, speaker=Speaker.AGENT, actor="agent", reason="sell")
        assert (await store.get(skill.id)).scope is Scope.PRIVATE
        with pytest.raises(EditRefused, match="its scope is its author's"):
            await change_scope(store, bought.id, Scope.PUBLIC, speaker=Speaker.PERSON, actor="cli", reason="sell")
        public = await change_scope(store, skill.id, Scope.PUBLIC, speaker=Speaker.PERSON, actor="cli", reason="sell")
        assert public.scope is Scope.PUBLIC
        async with store.reader().execute(
            "SELECT actor, detail FROM attributions WHERE crystal_id = ? AND action = 'scope'", (skill.id,)
        ) as cursor:
            assert [tuple(r) for r in await cursor.fetchall()] == [("cli", "private -> public: sell")]
    finally:
        await store.close()


def _as_person(api: Api, method: str, path: str, body: object = None) -> tuple[int, dict[str, object]]:
    return api.call(method, path, body, token=api.owner_token)


@pytest.mark.slow  # a real daemon
def test_a_crystallised_skill_is_published_by_the_person_alone(api: Api) -> None:
    for text in PRACTICES:  # the agent writes the practice down three times
        api.ok("POST", "/v1/memory", {"text": text, "type": "task_pattern"})
    (pattern,) = api.ok("GET", "/v1/skills/emerging")["emerging"]
    skill = api.ok("POST", f"/v1/skills/emerging/{pattern['id']}/crystallise", {})["skill"]
    assert skill["scope"] == "private"  # crystallised, and still the node's own
    for _ in range(3):
        api.ok("POST", f"/v1/skills/{skill['id']}/executions", {"success": True, "reward": 0.9})

    status, refused = api.call("POST", f"/v1/skills/{skill['id']}/publish", {})
    _refused_with_an_audit_line(api, status, refused, "skills.publish")
    assert api.ok("GET", f"/v1/memory/{skill['id']}")["crystal"]["scope"] == "private"

    status, listed = _as_person(api, "POST", f"/v1/skills/{skill['id']}/publish", {"title": "Renew TLS"})
    assert status == 200, listed
    shown = api.ok("GET", f"/v1/memory/{skill['id']}")
    assert shown["crystal"]["scope"] == "public"
    assert [a["detail"] for a in shown["attribution"] if a["action"] == "scope"] == ["private -> public: for sale"]
    assert [r["stable_skill_id"] for r in api.ok("GET", "/v1/skills") if r["mine"]] == [listed["stable_skill_id"]]


@pytest.mark.slow  # a real daemon
def test_a_skill_the_gate_refuses_keeps_its_scope_and_is_told_why(api: Api) -> None:
    unproven = api.ok("POST", "/v1/memory", {"text": "Flush the DNS cache: resolvectl flush-caches", "type": "skill"})
    status, refused = _as_person(api, "POST", f"/v1/skills/{unproven['crystal']['id']}/publish", {})
    assert status == 400 and "needs at least 3 recorded executions, has 0" in str(refused["error"])
    assert api.ok("GET", f"/v1/memory/{unproven['crystal']['id']}")["crystal"]["scope"] == "private"

    secret = api.ok(
        "POST", "/v1/memory", {"text": "Deploy: ssh in with password hunter2-hunter2, then run make", "type": "skill"}
    )["crystal"]
    for _ in range(3):
        api.ok("POST", f"/v1/skills/{secret['id']}/executions", {"success": True})
    status, refused = _as_person(api, "POST", f"/v1/skills/{secret['id']}/publish", {})
    assert status == 400 and "sensitive content is never listed" in str(refused["error"]), refused
    assert api.ok("GET", f"/v1/memory/{secret['id']}")["crystal"]["scope"] == "private"
