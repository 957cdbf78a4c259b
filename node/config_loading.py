"""Loading the configuration: one TOML file, then environment variables, into ``node.config.Config``.

Precedence, lowest to highest: the defaults (``node.config``), one TOML file, then environment
variables ``BITTERBOT_<SECTION>__<KEY>`` (for example ``BITTERBOT_LOG__LEVEL=debug``). An
environment value is read as a TOML value when it parses as one (``42``, ``true``, ``["a", "b"]``,
``{ "name" = "debug" }``) and as a plain string otherwise. Unknown keys, wrong types and unknown
``BITTERBOT_*`` variables are errors that name the file or variable, the key, and what was expected.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from ground import failpoints
from node.config import Config
from node.errors import ConfigError

ENV_PREFIX = "BITTERBOT_"
ENV_SEPARATOR = "__"
#: Variables with the prefix that are not config overrides.
ENV_CONFIG_FILE = "BITTERBOT_CONFIG"
ENV_DATA_DIR = "BITTERBOT_DATA_DIR"
ENV_KEY_PASSPHRASE = "BITTERBOT_KEY_PASSPHRASE"  # noqa: S105 - a variable name, not a secret
ENV_NON_OVERRIDES = frozenset({ENV_CONFIG_FILE, ENV_DATA_DIR, ENV_KEY_PASSPHRASE, failpoints.ENV})


@dataclass(frozen=True)
class LoadedConfig:
    config: Config
    #: the file it came from, or None for the embedded defaults
    path: Path | None
    #: dotted key -> environment variable that set it
    env_overrides: dict[str, str] = field(default_factory=dict)


def load_config(path: Path | None, environ: Mapping[str, str]) -> LoadedConfig:
    """Load ``path`` (or the defaults when None), apply environment overrides, validate."""
    source = str(path) if path else "the embedded defaults"
    data: dict[str, Any] = _read_toml(path) if path else {}
    overrides = _env_overrides(environ)
    for dotted, (_, value) in overrides.items():
        section, key = dotted.split(".", 1)
        target = data.setdefault(section, {})
        if not isinstance(target, dict):
            raise ConfigError(source, "expected a table", key=section)
        target[key] = value
    try:
        config = Config.model_validate(data)
    except ValidationError as exc:
        raise _explain(exc, source, {d: v for d, (v, _) in overrides.items()}) from None
    return LoadedConfig(config, path, {d: v for d, (v, _) in overrides.items()})


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise ConfigError(str(path), "file not found") from None
    except IsADirectoryError:
        raise ConfigError(str(path), "is a directory, expected a TOML file") from None
    except OSError as exc:
        raise ConfigError(str(path), f"cannot be read ({exc.strerror})") from None
    try:
        text = raw.decode("utf-8")
        if toml_nesting(text) > MAX_TOML_DEPTH:
            raise ConfigError(str(path), f"nests arrays or inline tables more than {MAX_TOML_DEPTH} levels deep")
        return tomllib.loads(text)
    except UnicodeDecodeError:
        raise ConfigError(str(path), "is not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(str(path), f"is not valid TOML ({exc})") from None
    except RecursionError:  # tomllib recurses once per nested array or inline table
        raise ConfigError(str(path), "is not valid TOML (arrays or inline tables nest too deeply)") from None


def _env_overrides(environ: Mapping[str, str]) -> dict[str, tuple[str, Any]]:
    sections = Config.model_fields
    found: dict[str, tuple[str, Any]] = {}
    for var, raw in sorted(environ.items()):
        if not var.startswith(ENV_PREFIX) or var in ENV_NON_OVERRIDES:
            continue
        name = var[len(ENV_PREFIX) :].lower()
        section, sep, key = name.partition(ENV_SEPARATOR)
        if not sep or section not in sections:
            raise ConfigError(
                f"environment variable {var}",
                f"unknown variable; overrides are named {ENV_PREFIX}<SECTION>{ENV_SEPARATOR}<KEY> "
                f"with SECTION one of {', '.join(s.upper() for s in sections)}",
            )
        section_model = sections[section].annotation
        field_info = getattr(section_model, "model_fields", {}).get(key)
        text_field = field_info is not None and field_info.annotation is str
        found[f"{section}.{key}"] = (var, raw if text_field else _parse_env_value(raw))
    return found


def _parse_env_value(raw: str) -> Any:
    """A TOML literal (numbers, booleans, arrays); anything else is a string. Text fields skip this:
    an address like 0x5FbD… is text, not a hexadecimal integer."""
    if toml_nesting(raw) > MAX_TOML_DEPTH:
        return raw  # nested past any setting: not a literal we take
    try:
        return tomllib.loads(f"value = {raw}")["value"]
    except (tomllib.TOMLDecodeError, RecursionError):  # nested past the stack: not a literal we take
        return raw


#: Deeper than any setting nests (a list of strings, a table of levels: 2).
MAX_TOML_DEPTH = 64
_TOML_STRING = re.compile(
    "|".join(
        (
            r'"""[\s\S]*?"""',  # multi-line basic
            r"'''[\s\S]*?'''",  # multi-line literal
            r'"(?:[^"\\\n]|\\.)*"',  # basic, with escapes
            r"'[^'\n]*'",  # literal
        )
    )
)
_TOML_COMMENT = re.compile(r"#[^\n]*")


def toml_nesting(text: str) -> int:
    """How deeply ``text`` nests arrays and inline tables (outside strings and comments), measured
    before parsing: tomllib recurses once per level, and once the embedded chain's libraries have
    raised the recursion limit to 100,000 a document of 50,000 brackets took minutes to refuse
    (`python -m bench fuzz`, config-toml) where it could overflow the stack. Table headers count 1-2."""
    if text.count("[") + text.count("{") <= MAX_TOML_DEPTH:  # an upper bound: most files stop here
        return 0
    depth = deepest = 0
    for char in _TOML_COMMENT.sub("", _TOML_STRING.sub('""', text)):
        if char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


def _explain(exc: ValidationError, source: str, env_vars: dict[str, str]) -> ConfigError:
    """Turn pydantic's first error into one sentence naming the source, key and expectation."""
    error = exc.errors()[0]
    dotted = ".".join(str(part) for part in error["loc"])
    var = env_vars.get(dotted) or env_vars.get(".".join(dotted.split(".")[:2]))
    where = f"environment variable {var}" if var else source
    if error["type"] == "extra_forbidden":
        section = dotted.rsplit(".", 1)[0] if "." in dotted else None
        valid = _valid_keys(section)
        return ConfigError(where, f"unknown key; valid keys here are: {', '.join(valid)}", key=dotted)
    message = error["msg"]
    if error["type"] == "value_error":  # our own validators: drop pydantic's prefix
        message = message.removeprefix("Value error, ")
    if error["type"] == "dict_type" and var:  # JSON works for a list (it is TOML too), not for a table
        message += ', written as a TOML inline table: { "name" = "value" }'
    return ConfigError(where, f"{message} (got {error.get('input')!r})", key=dotted)


def _valid_keys(section: str | None) -> list[str]:
    if section is None:
        return sorted(Config.model_fields)
    annotation = Config.model_fields[section].annotation if section in Config.model_fields else None
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return sorted(annotation.model_fields)
    return []
