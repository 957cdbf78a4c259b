"""One-time login codes and dashboard sessions (pure logic on a fake clock)."""

from __future__ import annotations

from node.dashboard.sessions import SessionLimits, Sessions


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000

    def __call__(self) -> int:
        return self.now


def test_a_code_opens_one_session_once() -> None:
    clock = Clock()
    sessions = Sessions(clock)
    code = sessions.new_code()
    session = sessions.redeem(code)
    assert session is not None and sessions.get(session.id) == session
    assert sessions.redeem(code) is None  # used
    assert sessions.redeem("made-up") is None
    assert sessions.redeem("") is None


def test_codes_and_sessions_expire() -> None:
    clock = Clock()
    sessions = Sessions(clock, SessionLimits(code_ttl_ms=60_000, session_ttl_ms=3_600_000))
    late = sessions.new_code()
    clock.now += 60_000
    assert sessions.redeem(late) is None
    session = sessions.redeem(sessions.new_code())
    assert session is not None
    clock.now += 3_599_999
    assert sessions.get(session.id) is not None
    clock.now += 1
    assert sessions.get(session.id) is None


def test_the_tables_are_bounded_oldest_out() -> None:
    sessions = Sessions(Clock(), SessionLimits(max_codes=2, max_sessions=2))
    first, second, third = sessions.new_code(), sessions.new_code(), sessions.new_code()
    assert sessions.redeem(first) is None  # made room for the third
    opened = [sessions.redeem(second), sessions.redeem(third)]
    opened.append(sessions.redeem(sessions.new_code()))
    assert all(s is not None for s in opened)
    assert sessions.get(opened[0].id if opened[0] else "") is None  # the oldest session made room
    assert sessions.get(opened[2].id if opened[2] else "") is not None


def test_ending_a_session_and_the_csrf_check() -> None:
    sessions = Sessions(Clock())
    session = sessions.redeem(sessions.new_code())
    assert session is not None
    assert Sessions.csrf_ok(session, session.csrf)
    assert not Sessions.csrf_ok(session, None)
    assert not Sessions.csrf_ok(session, session.csrf + "x")
    assert not Sessions.csrf_ok(session, session.id)
    sessions.end(session.id)
    assert sessions.get(session.id) is None
    assert sessions.get(None) is None
