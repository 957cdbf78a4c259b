"""`bitterbot-node backup|restore` and `memory export`: moving a node's memory safely."""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

import click

from crypto.errors import KeyFileError, SealedDataError
from crypto.identity import read_key_file_info
from node.cli.common import handles_errors, location_options, read_passphrase, resolve
from node.cli.memory import memory_group
from node.cli.transport import with_store
from node.errors import UsageError
from node.runtime.lockfile import DataDirLock

if TYPE_CHECKING:  # backups, their ciphers and the store load only when a backup command runs
    from crypto.stream import StreamKey


def _key(passphrase_file: Path | None, key_file: Path | None, *, confirm: bool) -> StreamKey:
    from crypto.stream import StreamKey

    if key_file is not None:
        if passphrase_file is not None:
            raise UsageError("give --passphrase-file or --key-file, not both")
        try:
            return StreamKey.from_key_file(key_file)
        except (OSError, SealedDataError) as exc:
            raise UsageError(f"--key-file: {exc}") from None
    passphrase = read_passphrase(passphrase_file, prompt="Backup passphrase: ", confirm=confirm)
    if passphrase is None:
        raise UsageError("a backup is encrypted: give --passphrase-file, --key-file, or run it on a terminal")
    return StreamKey(passphrase=passphrase)


_PASS = click.option("--passphrase-file", type=click.Path(path_type=Path, dir_okay=False), default=None,
                     help="The passphrase, first line of this file.")  # fmt: skip
_KEYFILE = click.option("--key-file", "backup_key_file", type=click.Path(path_type=Path, dir_okay=False),
                        default=None, help="A 32-byte key (raw or hex) instead of a passphrase.")  # fmt: skip


@click.command("backup")
@location_options
@click.argument("out", type=click.Path(path_type=Path, dir_okay=False))
@_PASS
@_KEYFILE
@click.option("--include-keys", is_flag=True, help="Also the identity, wallet and API token keys.")
@click.option("--json", "as_json", is_flag=True)
@handles_errors
def backup(
    config_path: Path | None,
    data_dir: Path | None,
    out: Path,
    passphrase_file: Path | None,
    backup_key_file: Path | None,
    include_keys: bool,
    as_json: bool,
) -> None:
    """Write an encrypted, consistent snapshot of this node to OUT (safe while the daemon runs).

    Memory (SQLite online backup), MEMORY.md and scratch, config, trust; keys only with --include-keys.
    AES-256-GCM under a passphrase (scrypt) or a key file.
    """
    loaded, paths = resolve(config_path, data_dir)
    key = _key(passphrase_file, backup_key_file, confirm=True)
    try:
        peer_id = read_key_file_info(paths.key_file).peer_id
    except KeyFileError:
        peer_id = ""
    from node.ops.backup import BackupError, create_backup

    try:
        report = create_backup(paths, out, key, config_file=loaded.path, include_keys=include_keys, peer_id=peer_id)
    except BackupError as exc:
        raise UsageError(str(exc)) from None
    total = sum(report.files.values())
    if as_json:
        doc = {"path": str(report.path), "files": report.files, "bytes": total, "includes_keys": report.includes_keys}
        click.echo(json.dumps(doc, indent=2))
        return
    click.echo(f"backed up {len(report.files)} files ({total / 1e6:.1f} MB) to {report.path}"
               + (" (with keys)" if report.includes_keys else " (without keys)"))  # fmt: skip


@click.command("restore")
@location_options
@click.argument("archive", type=click.Path(path_type=Path, dir_okay=False))
@_PASS
@_KEYFILE
@click.option("--force", is_flag=True, help="Replace an existing node's files (moved aside, not deleted).")
@click.option("--json", "as_json", is_flag=True)
@handles_errors
def restore(
    config_path: Path | None,
    data_dir: Path | None,
    archive: Path,
    passphrase_file: Path | None,
    backup_key_file: Path | None,
    force: bool,
    as_json: bool,
) -> None:
    """Restore a backup into the data dir, after checking all of it (tags, digests, SQLite integrity)."""
    _, paths = resolve(config_path, data_dir)
    key = _key(passphrase_file, backup_key_file, confirm=False)
    from node.ops.backup import BackupError, restore_backup

    paths.ensure_data_dir()
    with DataDirLock(paths.lock_file):  # no daemon may run on the data dir being restored
        try:
            report = restore_backup(archive, paths, key, force=force)
        except BackupError as exc:
            raise UsageError(str(exc)) from None
    if as_json:
        click.echo(json.dumps(asdict(report), indent=2))
        return
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(report.created_ms / 1000))
    click.echo(f"restored {len(report.restored)} files from a backup of {report.peer_id or 'a node'} made {when}")
    for moved in report.moved_aside:
        click.echo(f"  kept the previous file as {moved}")


def _export_foreign(
    config_path: Path | None, data_dir: Path | None, out: Path, kind: str, include_confidential: bool, as_json: bool
) -> None:
    from memory.transfer.foreign_export import ForeignExported, export_letta, export_mem0, export_obsidian

    if kind == "obsidian":
        done: ForeignExported = with_store(
            config_path, data_dir, lambda store: export_obsidian(store, out, include_confidential=include_confidential)
        )
    else:
        write = export_letta if kind == "letta" else export_mem0
        with open(os.open(out, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w", encoding="utf-8") as sink:
            done = with_store(
                config_path, data_dir, lambda store: write(store, sink, include_confidential=include_confidential)
            )
    if as_json:
        click.echo(json.dumps({"path": str(out), "to": kind, **asdict(done)}, indent=2))
        return
    click.echo(
        f"exported {done.memories} current memories"
        + (f" and {done.links} links" if kind == "obsidian" else "")
        + f" to {out} for {kind}"
        + (f" ({done.skipped_confidential} confidential left out)" if done.skipped_confidential else "")
    )


@memory_group.command("export")
@location_options
@click.argument("out", type=click.Path(path_type=Path))
@click.option("--include-confidential", is_flag=True, help="Also crystals classified confidential.")
@click.option(
    "--to",
    "kind",
    type=click.Choice(["mem0", "obsidian", "letta"]),
    default=None,
    help="What is current, for another tool: a Mem0 export or Letta archival passages (JSON), or an "
    "Obsidian vault (a new folder).",
)
@click.option("--json", "as_json", is_flag=True)
@handles_errors
def memory_export(
    config_path: Path | None, data_dir: Path | None, out: Path, include_confidential: bool, kind: str | None,
    as_json: bool,
) -> None:  # fmt: skip
    """Write every live memory as JSONL, with its type, origin, times, lifecycle, supersession, links and
    history: `memory import` of the file restores them as they were. With --to, what is current, in
    another tool's format."""
    if out.exists():
        raise UsageError(f"{out} exists; choose a new name")
    if kind is not None:
        _export_foreign(config_path, data_dir, out, kind, include_confidential, as_json)
        return
    from memory.transfer.export import Exported, export_memory
    from node.cli.export_keys import export_signer

    signer = export_signer(config_path, data_dir)  # before the file is made: a refusal leaves none
    # Personal data: 0600 whatever the umask, and never over a file that appeared since the check. No
    # newline translation: the signature is over the bytes as written.
    with open(os.open(out, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w", encoding="utf-8", newline="") as sink:
        done: Exported = with_store(
            config_path,
            data_dir,
            lambda store: export_memory(store, sink, include_confidential=include_confidential, signer=signer),
        )
    if as_json:
        click.echo(json.dumps({"path": str(out), **asdict(done)}, indent=2))
        return
    click.echo(
        f"exported {done.crystals} memories, {done.links} links and {done.derivations} derivations to {out}"
        + (f" ({done.skipped_confidential} confidential left out)" if done.skipped_confidential else "")
        + (", signed by this node" if done.signed else "")
    )
    if not done.signed:
        click.echo(
            "not signed: this node has no identity yet (`bitterbot-node init`); the file restores as an "
            "imported file, without pins, directives or whose words they were",
            err=True,
        )
