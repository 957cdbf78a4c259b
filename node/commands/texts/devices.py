"""The ``devices`` commands' answers as a person reads them, with the pairing code as a QR code."""

from __future__ import annotations

import io
import time
from typing import Any

from node.commands.texts.network import when
from node.commands.texts.view import CliView


def qr_lines(text: str) -> str:
    """``text`` as a QR code of half blocks, light modules drawn (for a terminal of light text on a
    dark background, as ``qrencode -t UTF8`` draws them); its letters and digits pack in
    alphanumeric mode."""
    import segno  # only when a code is shown: describing the commands stays cheap

    out = io.StringIO()
    segno.make(text, error="l", micro=False).terminal(out, compact=True)
    return out.getvalue().rstrip("\n")


def qr_svg(text: str) -> str:
    """``text`` as an inline SVG QR code (the dashboard's)."""
    import segno

    return str(segno.make(text, error="l", micro=False).svg_inline(scale=4, border=4, light="#fff"))


def _shown(name: str) -> str:
    """A name as a terminal shows it harmlessly: a control character (an escape sequence) as "?"."""
    return "".join(c if c.isprintable() else "?" for c in name)


def paired(doc: dict[str, Any], _: CliView) -> str:
    return "\n".join(
        [
            qr_lines(doc["code"]),
            "",
            "On your other device, run:",
            f"  bitterbot-node devices join {doc['code']}",
            f"The code works once, until {when(doc['expires_ms'])}; only a device with it can join.",
        ]
    )


def joined(doc: dict[str, Any], _: CliView) -> str:
    return f"joined the device group ({doc['members']} devices)"


def sync_words(sync: dict[str, Any] | None, this_device: bool) -> str:
    """A member's sync status as the person reads it: in sync, or who lacks how much; last seen."""
    if this_device:
        return "-"
    if not sync:
        return "unknown"
    if sync["last_seen_ms"] is None:
        return "not met yet" + (f" ({sync['last_error']})" if sync.get("last_error") else "")
    if sync["in_sync"]:
        state = "in sync"
    else:
        state = f"it lacks {sync['they_lack']} changes, this device lacks {sync['we_lack']}"
    ago = max(0, int(time.time() - sync["last_seen_ms"] / 1000))
    seen = f"last seen {ago} s ago" if ago < 120 else f"last seen {when(sync['last_seen_ms'])}"
    error = f"; last try: {sync['last_error']}" if sync.get("last_error") else ""
    return f"{state}, {seen}{error}"


def listing(doc: dict[str, Any], _: CliView) -> str:
    lines = []
    if doc["group_id"] is None:
        lines.append("this device is in no device group (`devices pair` starts one, `devices join CODE` joins one)")
    else:
        lines.append(f"device group {doc['group_id'][:12]}  version {doc['version']}  epoch {doc['epoch']}")
        for member in doc["members"]:
            status = sync_words(member["sync"], member["this_device"])
            mark = "  (this device)" if member["this_device"] else ""
            lines.append(f"  {_shown(member['name']):<20} {member['peer_id']}  sync: {status}{mark}")
    if doc["pairing_open_until_ms"] is not None:
        lines.append(f"a pairing code is open until {when(doc['pairing_open_until_ms'])}")
    removed = doc["removed"]
    if removed is not None:
        how = "left" if removed["left"] else f"was removed by {removed['by']}"
        lines.append(f"this device {how} on {when(removed['at_ms'])} (group {removed['group_id'][:12]})")
    return "\n".join(lines)


def removed(doc: dict[str, Any], _: CliView) -> str:
    if doc["left"]:
        return "this device left the device group; its memory stays here"
    return f"removed {doc['removed']}: the group is at epoch {doc['epoch']}; {doc['told']} devices told now"
