"""Yamux receive credit as go-yamux gives it: once half the window is consumed, not on every read.

A yamux receiver tells the sender how much more it may send (a WINDOW_UPDATE frame). go-yamux sends
one when the bytes read since the last update reach half the receive window. py-libp2p 0.8.1 does
that too, but it also has a branch for reads below that half (its "partial slack") which credits
the bytes just read at once, whatever ``PY_YAMUX_RELEASE_ON_READ`` says. A gossip message is a few
hundred bytes, read on its own, so every message a node received sent a frame back: encrypted,
written to the socket, then read, decrypted and handled by the sender, once per message per peer
(a test with real hosts counted 15 updates for 15 messages).

``install`` replaces the stream's credit step with go-yamux's rule: nothing until the consumed
bytes reach the threshold (half the target window), then one update for all of them, with the
library's own window growth. The sender is never starved by it: it holds at least half a window
of credit at any moment, as with go-yamux. Imported only on the libp2p thread (``p2p.host``).
"""

from __future__ import annotations

from typing import Any

from libp2p.stream_muxer.yamux.yamux import YamuxStream

#: The library's own method, which this replaces.
library_credit = YamuxStream._auto_tune_and_send_window_update


async def credit_at_half_window(self: Any, *, bytes_read: int = 0) -> None:
    """Send one WINDOW_UPDATE once what was read since the last one reaches half the target window."""
    increment = 0
    async with self.window_lock:
        buffered = len(self.conn.stream_buffers.get(self.stream_id, b""))
        # What the sender may still send is recv_window; what it was told it could is the target. The
        # gap, less what waits unread, is what was read and not yet credited.
        consumed = self.target_recv_window - (self.recv_window + buffered)
        if consumed >= self._grow_threshold():
            increment = self._grow_to_delta(buffered) + self._apply_autotune_epoch(buffered)
        self._pending_recv_release = 0  # the library's batch of partial credits, never used here
    if increment > 0:
        await self.send_window_update(increment, skip_lock=True)


def install() -> None:
    """Give every yamux stream in this process go-yamux's credit rule (idempotent)."""
    YamuxStream._auto_tune_and_send_window_update = credit_at_half_window  # type: ignore[method-assign]
