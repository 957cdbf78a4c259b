"""Who may see the dashboard: one-time login codes and the browser sessions they open.

Pure logic over a clock. A code is minted for a caller holding the API token (``bitterbot-node
ui``), works once and only for ``code_ttl_ms``; redeeming it opens a session whose id goes into
an HttpOnly, SameSite=Strict cookie and whose CSRF token every state-changing request must
repeat. Both tables are bounded: past the bound the oldest entry makes room.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class SessionLimits:
    code_ttl_ms: int = 60_000
    session_ttl_ms: int = 12 * 3_600_000
    max_codes: int = 16
    max_sessions: int = 32


@dataclass(frozen=True, slots=True)
class Session:
    id: str
    csrf: str
    expires_ms: int


def _key(secret: str) -> str:
    """Tables are keyed by a digest, so a lookup's timing says nothing about a stored secret."""
    return hashlib.sha256(secret.encode()).hexdigest()


class Sessions:
    def __init__(self, now_ms: Callable[[], int], limits: SessionLimits | None = None) -> None:
        self._now_ms = now_ms
        self._limits = limits or SessionLimits()
        self._codes: OrderedDict[str, int] = OrderedDict()  # digest -> expires_ms
        self._sessions: OrderedDict[str, Session] = OrderedDict()  # digest -> session

    def new_code(self) -> str:
        """A one-time login code (256 bits), good for ``code_ttl_ms``."""
        code = secrets.token_urlsafe(32)
        self._codes[_key(code)] = self._now_ms() + self._limits.code_ttl_ms
        while len(self._codes) > self._limits.max_codes:
            self._codes.popitem(last=False)
        return code

    def redeem(self, code: str) -> Session | None:
        """The session a valid code opens; None for a code used before, expired or never minted."""
        expires = self._codes.pop(_key(code), None)
        if expires is None or expires <= self._now_ms():
            return None
        session = Session(
            secrets.token_urlsafe(32), secrets.token_urlsafe(32), self._now_ms() + self._limits.session_ttl_ms
        )
        self._sessions[_key(session.id)] = session
        while len(self._sessions) > self._limits.max_sessions:
            self._sessions.popitem(last=False)
        return session

    def get(self, session_id: str | None) -> Session | None:
        """The live session with this id, or None (unknown, ended or expired)."""
        if not session_id:
            return None
        key = _key(session_id)
        session = self._sessions.get(key)
        if session is None:
            return None
        if session.expires_ms <= self._now_ms():
            del self._sessions[key]
            return None
        return session

    def end(self, session_id: str) -> None:
        self._sessions.pop(_key(session_id), None)

    @staticmethod
    def csrf_ok(session: Session, token: str | None) -> bool:
        return token is not None and hmac.compare_digest(session.csrf.encode(), token.encode())
