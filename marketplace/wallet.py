"""The node's EVM wallet key: one secp256k1 key in a 0600 JSON file, created on first use.

Separate from the Ed25519 identity (a different curve). On a node whose identity is sealed under
a passphrase, the wallet is sealed under the same one (scrypt + AES-256-GCM, ``crypto.sealed``):
it holds real USDC in production. A plaintext wallet found on such a node is sealed in place.
Every write is atomic (``crypto.private_file``): a crash never leaves a half-written key that
blocks the next start. Refused, with the fix, when the file is readable by others or damaged.
"""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

from crypto.errors import SealedDataError, SealedDataTampered
from crypto.private_file import write_private_atomically
from crypto.sealed import ScryptParams, SealedBlob, seal, unseal
from marketplace.chain_types import Account
from marketplace.errors import WalletError

FORMAT = "bitterbot-node/wallet"


def load_or_create_wallet(
    path: Path, passphrase: bytes | None = None, *, params: ScryptParams | None = None
) -> Account:
    """The wallet at ``path``, created if missing; sealed under ``passphrase`` when one is given."""
    if not path.exists():
        account = Account.create()
        _write(path, account, passphrase, params)
        return account
    account = load_wallet(path, passphrase)
    if passphrase is not None and not is_sealed(path):
        _write(path, account, passphrase, params)  # the node was encrypted after the wallet was made
    return account


def load_wallet(path: Path, passphrase: bytes | None = None) -> Account:
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077:
        raise WalletError(f"{path} is readable by others (mode {mode:o}); fix it with: chmod 600 {path}")
    doc = _document(path)
    address = doc.get("address")
    try:
        if doc.get("protection") == "passphrase":
            if passphrase is None:
                raise WalletError(f"{path} is sealed; give the node's passphrase (--passphrase-file or "
                                  "BITTERBOT_KEY_PASSPHRASE)")  # fmt: skip
            key = unseal(SealedBlob.from_json(doc.get("sealed")), passphrase, context=str(address).encode())
        else:
            key = bytes.fromhex(doc["key"])
        account = Account.from_key(key)
    except SealedDataTampered:
        raise WalletError(f"{path}: wrong passphrase (or the sealed wallet was altered)") from None
    except (SealedDataError, ValueError, KeyError, TypeError) as exc:
        raise WalletError(f"{path} is not a wallet file ({exc})") from None
    if account.address != address:
        raise WalletError(f"{path}: the key does not match the address recorded beside it")
    return account


def is_sealed(path: Path) -> bool:
    """Whether the wallet file keeps its key sealed under a passphrase (False for a plaintext one)."""
    return _document(path).get("protection") == "passphrase"


def wallet_address(path: Path) -> str:
    """The address recorded in the wallet file: readable without the passphrase."""
    return str(_document(path).get("address", ""))


def _document(path: Path) -> dict[str, Any]:
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise WalletError(f"{path} is not a wallet file ({exc})") from None
    if not isinstance(doc, dict):
        raise WalletError(f"{path} is not a wallet file (not a JSON object)")
    return doc


def _write(path: Path, account: Account, passphrase: bytes | None, params: ScryptParams | None) -> None:
    doc: dict[str, Any] = {"format": FORMAT, "version": 2, "address": account.address}
    if passphrase is None:
        doc |= {"protection": "none", "key": account.private_key.hex()}
    else:
        sealed = seal(account.private_key, passphrase, context=account.address.encode(), params=params)
        doc |= {"protection": "passphrase", "sealed": sealed.to_json()}
    write_private_atomically(path, json.dumps(doc).encode())
