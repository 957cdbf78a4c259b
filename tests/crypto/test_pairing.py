"""The pairing code: read back as printed, a typo told apart from a wrong code, and a proof that
binds both devices and the inviter's nonce."""

from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crypto.errors import PairingCodeError
from crypto.pairing import PREFIX, PairingCode, proof, proof_holds, read_code

INVITER = "12D3KooWJ5rtL9XQ4vmKfS2A1y7mJ3b8rT1s4nQwA8uFq2mZkE9d"
JOINER = "12D3KooWQm1VxS8x6mB3r1xT4n9cK2fWd7pYvH5aZ3jE6uLq8RtN"


def test_a_code_reads_back_as_printed_even_spaced_and_in_lower_case() -> None:
    code = PairingCode.new(INVITER, ("/ip4/192.168.1.20/tcp/4001", "/ip4/10.0.0.5/udp/4001/quic-v1"))
    text = code.text()
    assert text.startswith(PREFIX + "-") and text.replace("-", "").isalnum() and text == text.upper()
    assert read_code(text) == code
    spaced = " ".join(text[i : i + 5] for i in range(0, len(text), 5)).lower()
    assert read_code(spaced) == code


def test_a_typo_is_a_mistyped_code_not_a_wrong_one() -> None:
    text = PairingCode.new(INVITER, ()).text()
    i = len(PREFIX) + 5
    typo = text[:i] + ("A" if text[i] != "A" else "B") + text[i + 1 :]
    with pytest.raises(PairingCodeError, match="mistyped"):
        read_code(typo)
    with pytest.raises(PairingCodeError, match="mistyped"):
        read_code(text[:-10] + text[-5:])  # cut short: five characters of the body lost


@given(text=st.text(max_size=400))
@settings(max_examples=300)
def test_any_text_is_a_code_or_the_code_error(text: str) -> None:
    try:
        code = read_code(text)
    except PairingCodeError:
        return
    assert len(code.secret) == 16


def test_the_proof_binds_the_secret_both_devices_and_the_nonce() -> None:
    code = PairingCode.new(INVITER, ())
    nonce = os.urandom(16)
    given_proof = proof(code.secret, INVITER, JOINER, nonce)
    assert proof_holds(code.secret, INVITER, JOINER, nonce, given_proof)
    assert not proof_holds(os.urandom(16), INVITER, JOINER, nonce, given_proof)
    assert not proof_holds(code.secret, INVITER, "12D3KooWother", nonce, given_proof)  # relayed for another joiner
    assert not proof_holds(code.secret, "12D3KooWother", JOINER, nonce, given_proof)  # shown to a fake inviter
    assert not proof_holds(code.secret, INVITER, JOINER, os.urandom(16), given_proof)  # replayed
