"""The keys of ``memory export`` and ``memory import``: the node's identity signs its exports, and an
export restores with the authority it records only when one of the trusted keys signed it
(``memory.transfer.signature``).

Trusted today: this node's own key. Paired devices (a later issue) add theirs in ``trusted_signers``.
"""

from __future__ import annotations

from pathlib import Path

from crypto.errors import KeyFileMissing
from crypto.identity import Identity, load_identity, read_key_file_info
from node.cli.common import read_passphrase, resolve
from node.errors import UsageError


def trusted_signers(config_path: Path | None, data_dir: Path | None) -> frozenset[bytes]:
    """The public keys whose exports restore as they were here. Only the public half is read: no
    passphrase is asked for. No key file (a node never initialised): none, every export is a file.
    A key file that cannot be used (open to others, corrupt) is a ``KeyFileError`` saying how to fix
    it, rather than this node's own export quietly taken for a stranger's."""
    _, paths = resolve(config_path, data_dir)
    try:
        return frozenset({read_key_file_info(paths.key_file).public_key})
    except KeyFileMissing:
        return frozenset()


def export_signer(config_path: Path | None, data_dir: Path | None) -> Identity | None:
    """The node's identity, to sign an export; None when the node has none yet (the export is then
    unsigned, and restores anywhere as an imported file). A sealed key needs its passphrase
    (``$BITTERBOT_KEY_PASSPHRASE`` or a prompt): an unsigned export would lose every pin and directive
    on the way back, so none is written without saying so."""
    _, paths = resolve(config_path, data_dir)
    try:
        info = read_key_file_info(paths.key_file)
    except KeyFileMissing:
        return None
    passphrase = read_passphrase(None, prompt="Key passphrase (to sign the export): ") if info.encrypted else None
    if info.encrypted and passphrase is None:
        raise UsageError(
            "the export is signed with the node's key, which is sealed: set $BITTERBOT_KEY_PASSPHRASE or run "
            "on a terminal (an unsigned export restores as an imported file, without pins or directives)"
        )
    return load_identity(paths.key_file, passphrase=passphrase)
