"""The wallet key file: private, checked, sealed with the node's passphrase, written atomically
(issue 15, finding 5: plaintext even after `init --encrypt`, and a crash mid-write left an empty
file that blocked the next start)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crypto import private_file
from crypto.sealed import ScryptParams
from marketplace.chain_types import Account, address_of_key
from marketplace.errors import WalletError
from marketplace.wallet import is_sealed, load_or_create_wallet, load_wallet, wallet_address

FAST = ScryptParams(n=2**10)  # the file carries its parameters; the node's default costs 128 MiB


class _OsThatDiesOnWrite:
    """Named fake: the ``os`` module as ``crypto.private_file`` sees it, whose ``write`` fails."""

    def __init__(self, write: object) -> None:
        self.write = write

    def __getattr__(self, name: str) -> object:
        return getattr(os, name)


def test_wallet_is_created_once_private_and_checked(tmp_path: Path) -> None:
    path = tmp_path / "wallet.key"
    first = load_or_create_wallet(path)
    assert os.stat(path).st_mode & 0o777 == 0o600
    assert load_or_create_wallet(path) == first and first.address.startswith("0x")
    os.chmod(path, 0o644)
    with pytest.raises(WalletError, match="chmod 600"):
        load_wallet(path)
    os.chmod(path, 0o600)
    path.write_text('{"key": "zz"}')
    with pytest.raises(WalletError, match="not a wallet file"):
        load_wallet(path)


def test_a_wallet_made_on_an_encrypted_node_is_sealed_under_its_passphrase(tmp_path: Path) -> None:
    path = tmp_path / "wallet.key"
    account = load_or_create_wallet(path, b"correct horse", params=FAST)
    assert is_sealed(path) and account.private_key.hex() not in path.read_text()
    assert wallet_address(path) == account.address  # readable without the passphrase
    with pytest.raises(WalletError, match="is sealed; give the node's passphrase"):
        load_wallet(path)
    with pytest.raises(WalletError, match="wrong passphrase"):
        load_wallet(path, b"wrong")
    assert load_wallet(path, b"correct horse") == account


def test_a_plaintext_wallet_is_sealed_in_place_once_the_node_has_a_passphrase(tmp_path: Path) -> None:
    path = tmp_path / "wallet.key"
    account = load_or_create_wallet(path)
    assert not is_sealed(path) and json.loads(path.read_text())["key"] == account.private_key.hex()
    assert load_or_create_wallet(path, b"pass", params=FAST) == account
    assert is_sealed(path) and account.private_key.hex() not in path.read_text()
    assert os.stat(path).st_mode & 0o777 == 0o600


def test_a_write_cut_short_leaves_no_wallet_to_block_the_next_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "wallet.key"

    def dies(fd: int, data: bytes) -> int:
        raise OSError(28, "No space left on device")  # stands for the process dying mid-write

    monkeypatch.setattr(private_file, "os", _OsThatDiesOnWrite(dies))
    with pytest.raises(OSError, match="No space left"):
        load_or_create_wallet(path)
    monkeypatch.undo()
    assert not path.exists()  # nothing half written where the wallet goes
    account = load_or_create_wallet(path)  # the next start makes one
    assert load_wallet(path) == account


#: secp256k1's group order: a private key is an integer in [1, N).
_N = 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141


@settings(max_examples=200)
@given(st.integers(1, _N - 1))
def test_the_wallets_address_is_the_one_eth_account_derives(secret: int) -> None:
    """The address is worked out without eth-account (whose import cost every daemon start 0.45 s of
    a core, issue 31): it must be the same checksummed address for every valid key."""
    from eth_account import Account as EthAccount

    key = secret.to_bytes(32, "big")
    assert address_of_key(key) == EthAccount.from_key(key).address


def test_a_known_key_has_its_known_address() -> None:
    key = bytes.fromhex("4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318")
    assert address_of_key(key) == "0x2c7536E3605D9C16a7a3D7b1898e529396a65c23"
    assert Account.create().address != Account.create().address
    with pytest.raises(ValueError, match="Secret scalar"):
        address_of_key(_N.to_bytes(32, "big"))  # no key: the wallet file is refused (load_wallet)
