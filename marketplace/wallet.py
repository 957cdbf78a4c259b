"""The node's EVM wallet key: one secp256k1 key in a 0600 JSON file, created on first use.

Separate from the Ed25519 identity (a different curve). Refused, with the fix, when
the file is readable by others or damaged; never overwritten once it exists.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from marketplace.chain import Account
from marketplace.errors import WalletError


def load_or_create_wallet(path: Path) -> Account:
    if path.exists():
        return load_wallet(path)
    account = Account.create()
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = {
        "format": "bitterbot-node/wallet",
        "version": 1,
        "address": account.address,
        "key": account.private_key.hex(),
    }
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(json.dumps(doc))
        out.flush()
        os.fsync(out.fileno())
    return account


def load_wallet(path: Path) -> Account:
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077:
        raise WalletError(f"{path} is readable by others (mode {mode:o}); fix it with: chmod 600 {path}")
    try:
        doc = json.loads(path.read_text())
        account = Account.from_key(bytes.fromhex(doc["key"]))
    except (ValueError, KeyError, TypeError) as exc:
        raise WalletError(f"{path} is not a wallet file ({exc})") from None
    if account.address != doc.get("address"):
        raise WalletError(f"{path}: the key does not match the address recorded beside it")
    return account
