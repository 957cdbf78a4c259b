"""Management keys as trust anchors, and signed key rotation."""

from __future__ import annotations

import pytest

from crypto.anchors import TrustAnchors, make_rotation, parse_public_key, verify_rotation
from crypto.envelope import pack_body, seal_envelope
from crypto.errors import BadSignature, MalformedEnvelope
from crypto.identity import Identity

NOW = 1_700_000_000_000


def test_rotation_moves_trust_from_old_key_to_new_and_never_back() -> None:
    old, new = Identity.generate(), Identity.generate()
    anchors = TrustAnchors([old.public_key])
    rotation = verify_rotation(make_rotation(old, new, now_ms=NOW))
    assert (rotation.old_key, rotation.new_key) == (old.public_key, new.public_key)
    assert anchors.apply_rotation(rotation)
    assert anchors.is_management(new.public_key)
    assert not anchors.is_management(old.public_key)
    # A later rotation back to the retired key is not honoured.
    back = verify_rotation(make_rotation(new, old, now_ms=NOW + 1))
    assert not anchors.apply_rotation(back)
    assert not anchors.is_management(old.public_key)


def test_rotation_from_a_non_anchor_changes_nothing() -> None:
    stranger, new = Identity.generate(), Identity.generate()
    anchors = TrustAnchors([Identity.generate().public_key])
    assert not anchors.apply_rotation(verify_rotation(make_rotation(stranger, new, now_ms=NOW)))
    assert not anchors.is_management(new.public_key)


def test_rotation_to_a_key_whose_holder_did_not_agree_is_refused() -> None:
    old, new, victim = Identity.generate(), Identity.generate(), Identity.generate()
    genuine = make_rotation(old, new, now_ms=NOW)
    body = genuine.body_map()
    # The old key claims the victim's key, reusing new's acceptance signature: re-signed by old, but new_sig is wrong.
    forged = seal_envelope(
        old, genuine.kind, pack_body({"new_key": victim.public_key, "new_sig": body["new_sig"]}), now_ms=NOW
    )
    with pytest.raises(BadSignature):
        verify_rotation(forged)


def test_rotation_statement_signed_by_someone_else_is_refused() -> None:
    env = make_rotation(Identity.generate(), Identity.generate(), now_ms=NOW)
    with pytest.raises(BadSignature):
        verify_rotation(env._replace(author=Identity.generate().public_key))


def test_rotation_body_must_be_complete() -> None:
    old = Identity.generate()
    env = seal_envelope(old, "identity.rotation", pack_body({"new_key": b"x"}), now_ms=NOW)
    with pytest.raises(MalformedEnvelope):
        verify_rotation(env)


def test_parse_public_key_explains_what_is_wrong() -> None:
    key = Identity.generate().public_key
    assert parse_public_key(key.hex()) == key
    with pytest.raises(ValueError, match="not hex"):
        parse_public_key("zz" * 32)
    with pytest.raises(ValueError, match="64 hex digits"):
        parse_public_key("ab" * 8)
