"""What `bitterbot-node status` says: the node's name, data dir and identity, and what its daemon
last reported (``node.runtime.status``). Built by the full CLI, and by the daemon when it answers
the line itself (``node.servers.cli_call``), so the two print the same."""

from __future__ import annotations

import time
from typing import Any

from crypto.errors import KeyFileMissing
from crypto.identity import read_key_file_info
from node.config_loading import LoadedConfig
from node.paths import NodePaths
from node.runtime.status import probe_daemon


def status_report(loaded: LoadedConfig, paths: NodePaths) -> dict[str, Any]:
    report: dict[str, Any] = {
        "data_dir": str(paths.data_dir),
        "name": loaded.config.node.name,
        "role": loaded.config.node.role,
    }
    try:
        info = read_key_file_info(paths.key_file)
        report["identity"] = {
            "public_key": info.public_key.hex(),
            "peer_id": info.peer_id,
            "encrypted": info.encrypted,
            "key_file": str(paths.key_file),
        }
    except KeyFileMissing:
        report["identity"] = None
    probe = probe_daemon(paths.data_dir)
    report["daemon"] = {"running": probe.running, "pid": probe.pid}
    if probe.running and probe.status is not None:
        report["daemon"].update(
            state=probe.status.state,
            uptime_s=round(time.time() - probe.status.started_at_ms / 1000),
            status_age_s=round(time.time() - probe.status.updated_at_ms / 1000, 1),
            parts=probe.status.parts,
            details=probe.status.details,
        )
    return report


def status_text(report: dict[str, Any]) -> str:
    lines = [f"node        {report['name']} ({report['role']})", f"data dir    {report['data_dir']}"]
    ident = report["identity"]
    if ident is None:
        lines.append("identity    none yet: run `bitterbot-node init` (or `run`, which creates one)")
    else:
        lines.append(f"public key  {ident['public_key']}{'  (encrypted)' if ident['encrypted'] else ''}")
        lines.append(f"peer id     {ident['peer_id']}")
    daemon = report["daemon"]
    if not daemon["running"]:
        lines.append("daemon      not running")
        return "\n".join(lines)
    state, up = daemon.get("state", "running"), daemon.get("uptime_s", "?")
    lines.append(f"daemon      {state} (pid {daemon['pid']}, up {up} s)")
    details = daemon.get("details", {})
    for name, state in daemon.get("parts", {}).items():
        summary = details.get(name, {}).get("summary")
        lines.append(f"  {name:<10}{state}{'  ' + summary if summary else ''}")
    lines.extend(f"listening   {address}" for address in details.get("p2p", {}).get("listen", []))
    for task, health in sorted(details.get("restarts", {}).items()):  # issue 48: restarted, not stopped
        lines.append(f"restarted   {task} {health['restarts']}x, last error {health['last_error']}")
    return "\n".join(lines)
