"""The signed envelope: what a receiver accepts, and everything it refuses."""

from __future__ import annotations

import contextlib
import dataclasses
import os
from typing import Any

import msgpack
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crypto.envelope import (
    ENVELOPE_VERSION,
    Envelope,
    EnvelopePolicy,
    decode_envelope,
    open_envelope,
    pack_body,
    seal_envelope,
    verify_signature,
)
from crypto.errors import (
    BadSignature,
    EnvelopeError,
    EnvelopeTooLarge,
    Expired,
    FromFuture,
    MalformedEnvelope,
    Replayed,
    UnknownKind,
    UnknownVersion,
)
from crypto.identity import Identity
from crypto.windows import ReplayGuard, TimestampWindow

NOW = 1_700_000_000_000
ALICE = Identity.from_seed(b"\x01" * 32)
MALLORY = Identity.from_seed(b"\x02" * 32)
POLICY = EnvelopePolicy(kinds=frozenset({"skill.listing", "weather.event"}))


def make(kind: str = "skill.listing", body: bytes | None = None, ts: int = NOW) -> Envelope:
    return seal_envelope(ALICE, kind, body if body is not None else pack_body({"title": "x", "n": 1}), now_ms=ts)


def raw_map(env: Envelope) -> dict[str, Any]:
    return msgpack.unpackb(env.encode(), raw=False)


def test_round_trip_accepts_a_genuine_envelope() -> None:
    env = make()
    got = open_envelope(env.encode(), POLICY, now_ms=NOW, replay=ReplayGuard())
    assert got == env
    assert got.body_map() == {"n": 1, "title": "x"}
    assert got.author == ALICE.public_key


@pytest.mark.parametrize(
    ("field", "tamper"),
    [
        ("v", lambda v: v + 1),
        ("kind", lambda k: "weather.event"),
        ("author", lambda a: MALLORY.public_key),
        ("ts_ms", lambda t: t + 1),
        ("nonce", lambda n: bytes([n[0] ^ 1]) + n[1:]),
        ("body", lambda b: b + b"\x00"),
        ("sig", lambda s: bytes([s[0] ^ 1]) + s[1:]),
    ],
)
def test_tampering_any_single_field_fails_verification(field: str, tamper: object) -> None:
    env = make()
    tampered = env._replace(**{field: tamper(getattr(env, field))})  # type: ignore[operator]
    with pytest.raises(BadSignature):
        verify_signature(tampered)


@pytest.mark.parametrize("field", ["kind", "ts_ms", "nonce", "body", "author", "sig"])
def test_tampered_wire_bytes_are_refused_by_the_receive_path(field: str) -> None:
    doc = raw_map(make())
    tampered = {
        "kind": "weather.event",
        "ts_ms": NOW + 5,
        "nonce": os.urandom(16),
        "body": pack_body({"title": "evil"}),
        "author": MALLORY.public_key,
        "sig": bytes(64),
    }[field]
    doc[field] = tampered
    with pytest.raises(BadSignature):
        open_envelope(msgpack.packb(doc, use_bin_type=True), POLICY, now_ms=NOW)


def test_version_change_is_refused_as_unknown_version() -> None:
    doc = raw_map(make())
    doc["v"] = ENVELOPE_VERSION + 1
    with pytest.raises(UnknownVersion):
        open_envelope(msgpack.packb(doc, use_bin_type=True), POLICY, now_ms=NOW)


def test_a_signature_for_one_kind_never_verifies_as_another() -> None:
    listing = make("skill.listing")
    with pytest.raises(BadSignature):
        verify_signature(listing._replace(kind="weather.event"))


def test_kind_outside_the_policy_is_unknown() -> None:
    env = make("peer.attestation")
    with pytest.raises(UnknownKind):
        open_envelope(env.encode(), POLICY, now_ms=NOW)


def test_oversized_envelope_is_refused_before_decoding() -> None:
    env = make(body=b"x" * 70_000)
    with pytest.raises(EnvelopeTooLarge) as info:
        open_envelope(env.encode(), POLICY, now_ms=NOW)
    assert info.value.limit == POLICY.max_bytes


def test_stale_and_future_timestamps_are_refused() -> None:
    window = TimestampWindow(max_age_ms=300_000, max_ahead_ms=60_000)
    policy = dataclasses.replace(POLICY, window=window)
    assert open_envelope(make(ts=NOW - 300_000).encode(), policy, now_ms=NOW)
    assert open_envelope(make(ts=NOW + 60_000).encode(), policy, now_ms=NOW)
    with pytest.raises(Expired):
        open_envelope(make(ts=NOW - 300_001).encode(), policy, now_ms=NOW)
    with pytest.raises(FromFuture):
        open_envelope(make(ts=NOW + 60_001).encode(), policy, now_ms=NOW)


def test_replayed_envelope_is_detected() -> None:
    guard = ReplayGuard()
    env = make()
    open_envelope(env.encode(), POLICY, now_ms=NOW, replay=guard)
    with pytest.raises(Replayed):
        open_envelope(env.encode(), POLICY, now_ms=NOW + 1_000, replay=guard)


def test_other_encodings_of_the_same_fields_are_refused() -> None:
    env = make()
    reordered = msgpack.packb(dict(reversed(list(raw_map(env).items()))), use_bin_type=True)
    wide_int = bytearray(env.encode())
    at = wide_int.index(b"ts_ms") + 5
    assert wide_int[at] == 0xCF  # uint64
    wide_int[at] = 0xD3  # the same value as int64
    for variant in (reordered, bytes(wide_int)):
        assert msgpack.unpackb(variant, raw=False) == raw_map(env)  # same fields…
        with pytest.raises(MalformedEnvelope, match="canonical"):  # …but not the one wire form
            open_envelope(variant, POLICY, now_ms=NOW)


def test_forged_envelopes_do_not_enter_the_replay_guard() -> None:
    guard = ReplayGuard()
    env = make()
    forged = env._replace(sig=bytes(64))
    with pytest.raises(BadSignature):
        open_envelope(forged.encode(), POLICY, now_ms=NOW, replay=guard)
    assert len(guard) == 0
    # The genuine one, with the same nonce, is still accepted afterwards.
    open_envelope(env.encode(), POLICY, now_ms=NOW, replay=guard)


@pytest.mark.parametrize(
    ("mutate", "detail"),
    [
        (lambda d: d.pop("nonce"), "fields missing"),
        (lambda d: d.update(extra=1), "unexpected"),
        (lambda d: d.update(v=True), "v must be an integer"),
        (lambda d: d.update(ts_ms=-1), "ts_ms"),
        (lambda d: d.update(ts_ms=1.5), "ts_ms"),
        (lambda d: d.update(author=b"short"), "author"),
        (lambda d: d.update(nonce=b"\x00" * 8), "nonce"),
        (lambda d: d.update(sig="text"), "sig"),
        (lambda d: d.update(body="text"), "body"),
        (lambda d: d.update(kind="Has Spaces"), "kind"),
    ],
)
def test_structurally_wrong_envelopes_are_malformed(mutate: object, detail: str) -> None:
    doc = raw_map(make())
    mutate(doc)  # type: ignore[operator]
    with pytest.raises(MalformedEnvelope, match=detail):
        decode_envelope(msgpack.packb(doc, use_bin_type=True))


def test_non_map_and_garbage_inputs_are_malformed() -> None:
    for data in [b"", b"\xc1", msgpack.packb([1, 2, 3]), msgpack.packb("s"), b"\x81\xa1v"]:
        with pytest.raises(MalformedEnvelope):
            decode_envelope(data)


def test_an_invalid_author_key_is_a_bad_signature_not_a_crash() -> None:
    env = make()
    # All-zero bytes are a small-order point that libsodium refuses as a key.
    with pytest.raises(BadSignature):
        verify_signature(env._replace(author=bytes(32)))


def test_body_map_rejects_a_non_map_body() -> None:
    env = make(body=msgpack.packb([1, 2]))
    with pytest.raises(MalformedEnvelope):
        env.body_map()


@pytest.mark.parametrize("body_size", [0, 1, 31, 32, 255, 256, 65_535, 65_536])
def test_signed_bytes_sliced_from_the_wire_equal_the_encoded_ones(body_size: int) -> None:
    from crypto.envelope import _signing_bytes_from_wire

    env = make(body=b"b" * body_size)
    assert _signing_bytes_from_wire(env.kind, env.encode()) == env.signing_bytes()


def test_message_id_is_stable_and_distinct() -> None:
    a, b = make(), make()
    assert a.message_id == a._replace().message_id
    assert a.message_id != b.message_id  # fresh nonces


# --- property-based: untrusted bytes never raise anything but EnvelopeError ---

GENUINE = make().encode()
msgpack_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.floats()
    | st.text(max_size=20)
    | st.binary(max_size=70),
    lambda children: st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=8), children, max_size=8),
    max_leaves=8,
)


def _open_untrusted(data: bytes) -> None:
    with contextlib.suppress(EnvelopeError):
        open_envelope(data, POLICY, now_ms=NOW, replay=ReplayGuard())


@settings(max_examples=3000, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(st.binary(max_size=400))
def test_random_bytes_never_raise_unexpected_errors(data: bytes) -> None:
    _open_untrusted(data)


@settings(max_examples=2000, deadline=None)
@given(st.integers(0, len(GENUINE) - 1))
def test_truncated_envelopes_never_raise_unexpected_errors(cut: int) -> None:
    with pytest.raises(EnvelopeError):
        open_envelope(GENUINE[:cut], POLICY, now_ms=NOW)


@settings(max_examples=2000, deadline=None)
@given(st.integers(0, len(GENUINE) - 1), st.integers(1, 255))
def test_single_byte_flips_are_never_accepted(position: int, xor: int) -> None:
    data = bytearray(GENUINE)
    data[position] ^= xor
    with pytest.raises(EnvelopeError):
        open_envelope(bytes(data), POLICY, now_ms=NOW, replay=ReplayGuard())


GENUINE_FIELDS = msgpack.unpackb(GENUINE, raw=False)
field_values = {name: st.one_of(st.just(value), msgpack_values) for name, value in GENUINE_FIELDS.items()}


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.fixed_dictionaries(field_values, optional={"extra": msgpack_values}))
def test_well_formed_msgpack_of_any_shape_never_raises_unexpected_errors(doc: dict[str, object]) -> None:
    _open_untrusted(msgpack.packb(doc, use_bin_type=True))
