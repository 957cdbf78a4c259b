"""The `bitterbot-node` entry point: a command line the running daemon can answer is sent to it
whole (``POST /v1/cli``, ``node.servers.cli_call``) and its answer printed; anything else runs the
full CLI (``node.cli.main``).

This module imports only the standard library and small modules of ours, so a call answered by
the daemon costs the interpreter's start and one loopback request (measured in ``python -m bench
footprint``), where the full CLI spends ~0.4 s importing click, pydantic and every command before
it asks. The daemon is found the way the full CLI finds it (``--data-dir``, ``$BITTERBOT_DATA_DIR``,
``node.data_dir`` in the config, the platform default); the daemon itself then checks that the full
CLI would load the same config and reach it, and declines otherwise.

Once the line has been sent, its outcome is the daemon's: a lost answer is an error, never a
second run by the full CLI (a purchase must not happen twice).
"""

from __future__ import annotations

import http.client
import json
import os
import sys
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ground.app import user_data_folder
from node.runtime.status import probe_daemon

ANSWER_TIMEOUT_S = 3600.0  # the daemon runs a command to its end, as on its own route; this bounds a hang
#: The command-line words that only the full CLI handles; they never reach the daemon.
FULL_ONLY = frozenset({"-", "-h", "--help", "--version"})
#: Answers to /v1/cli given before any command ran: a bad body, the token refused (the full CLI
#: names the fix), a daemon from before /v1/cli.
NOTHING_RAN = frozenset({400, 401, 403, 404, 405, 413})
LOST = 2  # the full CLI's exit code when the daemon cannot be reached (node.error_status: a refusal)
PASSPHRASE = "BITTERBOT_KEY_PASSPHRASE"  # noqa: S105 - a variable's name; never sent to the daemon


def main() -> None:
    code = through_the_daemon(sys.argv[1:], os.environ)
    if code is None:
        from node.cli.main import main as full_cli

        full_cli()
        return
    sys.exit(code)


def through_the_daemon(argv: list[str], environ: Mapping[str, str]) -> int | None:
    """The exit code of the line answered by the running daemon, having printed its answer; None when
    the full CLI must run it (no daemon, a line the daemon declines, or one it was never sent)."""
    if not argv or argv[0].startswith("-") or FULL_ONLY & set(argv):
        return None
    data_dir = _data_dir(argv, environ)
    if data_dir is None:
        return None
    try:
        probe = probe_daemon(data_dir)
    except OSError:
        return None  # a data dir that cannot be read (a file where a folder should be): the full CLI says why
    url = probe.status.details.get("api", {}).get("url") if probe.running and probe.status else None
    if not isinstance(url, str) or not url.startswith("http://"):
        return None
    try:
        cwd = os.getcwd()  # relative paths on the line are the caller's (a removed folder: the full CLI says so)
        token = (data_dir / "owner.token").read_text().strip()
        parts = urlsplit(url)
        connection = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=ANSWER_TIMEOUT_S)
        connection.connect()
    except (OSError, ValueError):
        return None  # nothing was sent: the full CLI says what is wrong
    settings = {k: v for k, v in environ.items() if k.startswith("BITTERBOT_") and k != PASSPHRASE}
    body = json.dumps({"argv": argv, "env": settings, "cwd": cwd})
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    try:
        connection.request("POST", "/v1/cli", body, headers)
        response = connection.getresponse()
        status, raw = response.status, response.read()
    except (OSError, http.client.HTTPException) as exc:  # exit 2, as the full CLI's lost daemon
        reason = str(exc) or type(exc).__name__
        lost = f"it took the command, and its answer was lost ({reason}); `status` and its log say what became of it"
        print(f"error: cannot reach the daemon's API at {url}: {lost}", file=sys.stderr)
        return LOST
    finally:
        connection.close()
    return _printed(status, raw)


def _printed(status: int, raw: bytes) -> int | None:
    try:
        answer: Any = json.loads(raw)
    except ValueError:
        answer = None
    if status in NOTHING_RAN or (status == 200 and isinstance(answer, dict) and answer.get("fallback")):
        return None  # declined before anything ran: the full CLI runs it, and says what is wrong
    if status != 200 or not isinstance(answer, dict):
        message = answer.get("error") if isinstance(answer, dict) else raw[:200].decode(errors="replace")
        print(f"error: the daemon refused the command line ({status}): {message}", file=sys.stderr)
        return 1
    if answer.get("stdout") is not None:  # an empty answer is still a line, as click prints it
        sys.stdout.write(str(answer["stdout"]) + ("\n" if answer.get("newline", True) else ""))
    if answer.get("stderr"):
        sys.stderr.write(str(answer["stderr"]) + "\n")
    code = answer.get("exit_code", 1)
    return code if isinstance(code, int) else 1


def _data_dir(argv: list[str], environ: Mapping[str, str]) -> Path | None:
    """Where the full CLI would look for the node, or None when only it can tell."""
    given = _option(argv, "--data-dir")
    if given:
        return Path(given).expanduser().resolve()
    if environ.get("BITTERBOT_DATA_DIR"):
        return Path(environ["BITTERBOT_DATA_DIR"]).expanduser().resolve()
    if "BITTERBOT_NODE__DATA_DIR" in environ:
        return None
    default = _default_data_dir()
    config = _option(argv, "--config") or environ.get("BITTERBOT_CONFIG") or default / "config.toml"
    try:
        with Path(config).expanduser().open("rb") as handle:
            chosen = tomllib.load(handle).get("node", {}).get("data_dir")
    except FileNotFoundError:
        chosen = None
    except (OSError, tomllib.TOMLDecodeError, AttributeError):
        return None
    if chosen is not None and not isinstance(chosen, str):
        return None
    return Path(chosen).expanduser().resolve() if chosen else default.resolve()


def _option(argv: list[str], name: str) -> str | None:
    """The value of ``--name X`` or ``--name=X`` on the line (the last one, as click takes it)."""
    found = None
    for i, word in enumerate(argv):
        if word == name and i + 1 < len(argv):
            found = argv[i + 1]
        elif word.startswith(name + "="):
            found = word.partition("=")[2]
    return found


def _default_data_dir() -> Path:
    return user_data_folder()
