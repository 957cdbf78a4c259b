"""The node's key file: permissions, encryption, corruption, and the derived peer id."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from crypto.errors import (
    KeyFileCorrupt,
    KeyFileMissing,
    KeyFilePermissions,
    PassphraseRequired,
    WrongPassphrase,
)
from crypto.identity import Identity, load_identity, read_key_file_info, save_identity
from crypto.peer_id import b58encode, peer_id_from_ed25519
from crypto.sealed import ScryptParams

FAST = ScryptParams(n=2**10)  # tests only: the default costs 128 MiB per unlock


def test_unencrypted_key_round_trips_with_mode_0600(tmp_path: Path) -> None:
    ident = Identity.generate()
    path = tmp_path / "identity.key"
    save_identity(ident, path)
    assert path.stat().st_mode & 0o777 == 0o600
    assert load_identity(path).public_key == ident.public_key
    info = read_key_file_info(path)
    assert (info.public_key, info.encrypted, info.peer_id) == (ident.public_key, False, ident.peer_id)


def test_encrypted_key_needs_the_right_passphrase(tmp_path: Path) -> None:
    ident = Identity.generate()
    path = tmp_path / "identity.key"
    save_identity(ident, path, passphrase=b"correct horse", scrypt_params=FAST)
    assert ident.seed.hex() not in path.read_text()
    assert read_key_file_info(path).encrypted
    with pytest.raises(PassphraseRequired):
        load_identity(path)
    with pytest.raises(WrongPassphrase):
        load_identity(path, passphrase=b"battery staple")
    assert load_identity(path, passphrase=b"correct horse").seed == ident.seed


def test_sealed_key_cannot_be_moved_under_another_public_key(tmp_path: Path) -> None:
    path = tmp_path / "identity.key"
    save_identity(Identity.generate(), path, passphrase=b"pw", scrypt_params=FAST)
    doc = json.loads(path.read_text())
    doc["public_key"] = Identity.generate().public_key.hex()
    path.write_text(json.dumps(doc))
    with pytest.raises(WrongPassphrase):  # the public key is bound into the AEAD
        load_identity(path, passphrase=b"pw")


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o660])
def test_key_readable_by_others_is_refused_with_the_fix(tmp_path: Path, mode: int) -> None:
    path = tmp_path / "identity.key"
    save_identity(Identity.generate(), path)
    os.chmod(path, mode)
    with pytest.raises(KeyFilePermissions, match="chmod 600"):
        load_identity(path)


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"\xff\xfe not utf8",
        b"{not json",
        b"[]",
        b'{"format": "something-else"}',
        b'{"format": "bitterbot-node/identity", "version": 99}',
        b'{"format": "bitterbot-node/identity", "version": 1, "protection": "rot13"}',
        b'{"format": "bitterbot-node/identity", "version": 1, "protection": "none", "public_key": "zz"}',
        b'{"format": "bitterbot-node/identity", "version": 1, "protection": "none", "public_key": "'
        + b"00" * 32
        + b'", "seed": "'
        + b"11" * 32
        + b'"}',
        b'{"format": "bitterbot-node/identity", "version": 1, "protection": "passphrase", "public_key": "'
        + b"00" * 32
        + b'", "sealed": {"kdf": "scrypt", "n": 1099511627776, "r": 8, "p": 1}}',
    ],
)
def test_corrupt_key_files_are_refused_as_corrupt(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "identity.key"
    path.write_bytes(content)
    os.chmod(path, 0o600)
    with pytest.raises(KeyFileCorrupt):
        load_identity(path, passphrase=b"pw")


def test_missing_key_file_says_how_to_create_one(tmp_path: Path) -> None:
    with pytest.raises(KeyFileMissing, match="bitterbot-node init"):
        load_identity(tmp_path / "nope.key")


def test_save_never_overwrites_an_identity(tmp_path: Path) -> None:
    path = tmp_path / "identity.key"
    save_identity(Identity.generate(), path)
    before = path.read_bytes()
    with pytest.raises(FileExistsError):
        save_identity(Identity.generate(), path)
    assert path.read_bytes() == before


def test_repr_and_str_never_show_the_secret() -> None:
    ident = Identity.from_seed(b"\x07" * 32)
    assert "0707" not in repr(ident) and "0707" not in str(ident)


def test_peer_id_matches_py_libp2p_for_a_known_key() -> None:
    # Known answer computed with libp2p 0.8.1: ID.from_pubkey(Ed25519PrivateKey.from_bytes(bytes(range(32)))).
    ident = Identity.from_seed(bytes(range(32)))
    assert ident.public_key.hex() == "03a107bff3ce10be1d70dd18e74bc09967e4d6309ba50d5f1ddc8664125531b8"
    assert ident.peer_id == "12D3KooWA4Xop1JaT3MHxwYMkCepYsv4iPVopMXwCz5iHYdBfeSB"


def test_base58_keeps_leading_zero_bytes() -> None:
    assert b58encode(b"\x00\x00\x01") == "112"
    assert b58encode(b"") == ""
    with pytest.raises(ValueError, match="32 bytes"):
        peer_id_from_ed25519(b"\x00" * 31)
