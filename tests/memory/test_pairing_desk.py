"""The inviting device's desk (``memory.devices.desk``), played by joiners honest and not, on an
injected clock: a code joins one device within its life, wrong proofs burn it, and nothing a
stranger sends gets past the checks or raises."""

from __future__ import annotations

import os
from pathlib import Path

import msgpack
import pytest

from crypto.identity import Identity
from crypto.pairing import proof
from memory.devices.desk import PairingDesk
from memory.devices.keeper import DeviceGroupKeeper
from memory.devices.settings import DevicesSettings
from memory.devices.wire import JoinRequest, Refusal, Refused, Welcome, read_answer
from tests.memory.conftest import FakeClock

MINUTE = 60_000


class Joiner:
    def __init__(self, root: Path, name: str) -> None:
        self.identity = Identity.generate()
        self.name = name
        self.keeper = DeviceGroupKeeper(self.identity, root / name / "group.bin")

    def request(self, secret: bytes, inviter: str, *, name: str | None = None) -> bytes:
        nonce = os.urandom(16)
        given = proof(secret, inviter, self.identity.peer_id, nonce)
        return JoinRequest(self.identity.public_key, name or self.name, nonce, given).pack()


@pytest.fixture
def desk(tmp_path: Path, clock: FakeClock) -> PairingDesk:
    identity = Identity.generate()
    keeper = DeviceGroupKeeper(identity, tmp_path / "laptop" / "group.bin", now_ms=clock)
    return PairingDesk(keeper, identity, DevicesSettings(), "laptop", now_ms=clock)


def ask(desk: PairingDesk, joiner: Joiner, secret: bytes) -> Welcome | Refused:
    return desk.decide(joiner.identity.peer_id, joiner.request(secret, desk_peer(desk)))


def desk_peer(desk: PairingDesk) -> str:
    return desk._identity.peer_id


def test_a_code_joins_one_device_and_its_answer_opens_there(desk: PairingDesk, tmp_path: Path) -> None:
    code = desk.open(("/ip4/127.0.0.1/tcp/4001",)).code
    desktop, pi = Joiner(tmp_path, "desktop"), Joiner(tmp_path, "pi")
    answer = ask(desk, desktop, code.secret)
    assert isinstance(answer, Welcome) and desk.is_open() is None
    view = desktop.keeper.join(_key(desk), answer.member_list, answer.sealed_keys)
    assert [m.name for m in view.members.members] == ["laptop", "desktop"]
    assert ask(desk, pi, code.secret) == Refused(Refusal.USED)  # the code again, by another device
    again = ask(desk, desktop, code.secret)  # the same device again (its answer was lost): the same group
    assert isinstance(again, Welcome) and again.member_list == answer.member_list
    desk._keeper.remove(desktop.identity.public_key)
    assert ask(desk, desktop, code.secret) == Refused(Refusal.USED)  # removed since: the old code no longer joins it


def _key(desk: PairingDesk) -> bytes:
    return desk._identity.public_key


def test_wrong_proofs_burn_the_code_and_are_told_apart_from_an_old_code(desk: PairingDesk, tmp_path: Path) -> None:
    code = desk.open(()).code
    desktop = Joiner(tmp_path, "desktop")
    wrong = os.urandom(16)
    assert ask(desk, desktop, wrong) == Refused(Refusal.WRONG_CODE, 2)
    assert ask(desk, desktop, wrong) == Refused(Refusal.WRONG_CODE, 1)
    assert ask(desk, Joiner(tmp_path, "stranger"), wrong) == Refused(Refusal.BURNT)  # a third, from anyone
    assert ask(desk, desktop, code.secret) == Refused(Refusal.BURNT)  # the right code, too late
    assert ask(desk, desktop, wrong) == Refused(Refusal.WRONG_CODE)  # not counted on a dead code
    assert desk._keeper.view() is None  # nobody joined: no group was founded
    fresh = desk.open(()).code  # a new code replaces the burnt one
    assert isinstance(ask(desk, desktop, fresh.secret), Welcome)


def test_two_wrong_proofs_leave_the_code_usable(desk: PairingDesk, tmp_path: Path) -> None:
    code = desk.open(()).code
    desktop = Joiner(tmp_path, "desktop")
    for _ in range(2):
        assert isinstance(ask(desk, desktop, os.urandom(16)), Refused)
    assert isinstance(ask(desk, desktop, code.secret), Welcome)


def test_a_code_expires(desk: PairingDesk, tmp_path: Path, clock: FakeClock) -> None:
    code = desk.open(()).code
    clock.advance(10 * MINUTE)
    assert desk.is_open() is None
    assert ask(desk, Joiner(tmp_path, "desktop"), code.secret) == Refused(Refusal.EXPIRED)


def test_no_code_open_and_strangers_bytes(desk: PairingDesk, tmp_path: Path) -> None:
    desktop = Joiner(tmp_path, "desktop")
    assert ask(desk, desktop, os.urandom(16)) == Refused(Refusal.NO_CODE)
    code = desk.open(()).code
    peer = desktop.identity.peer_id
    for raw in (b"", b"\xc1", os.urandom(600), msgpack.packb(["join", 1, b"x", "n", b"", b""]), msgpack.packb([1, 2])):
        assert desk.decide(peer, raw) == Refused(Refusal.MALFORMED)
    # a good proof, but from a connection whose peer id is not the key's
    assert desk.decide(Identity.generate().peer_id, desktop.request(code.secret, desk_peer(desk))) == Refused(
        Refusal.MALFORMED
    )
    # a name a terminal would act on
    assert desk.decide(peer, desktop.request(code.secret, desk_peer(desk), name="\x1b[2Jx")) == Refused(
        Refusal.MALFORMED
    )
    assert desk.is_open() is not None  # none of that counted against the code


async def test_the_handler_bounds_its_rate_and_answers_bytes(desk: PairingDesk, tmp_path: Path) -> None:
    desk.open(())
    desktop = Joiner(tmp_path, "desktop")
    answers = [read_answer(await desk.answer(desktop.identity.peer_id, b"junk")) for _ in range(15)]
    assert answers[0] == Refused(Refusal.MALFORMED)
    assert Refused(Refusal.BUSY) in answers  # one peer gets a third of the 30 a minute
    assert desk.counts["refused"] == 15
