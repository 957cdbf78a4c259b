"""Backups: one encrypted file holding a consistent snapshot of a node, and its careful restore.

``create_backup`` takes the memory file through SQLite's online backup (consistent while
the daemon writes), MEMORY.md and the scratch log, the config, the trust book and P2P
state, and the keys only when asked; packs them in a tar with a manifest of SHA-256
digests; encrypts it (``crypto.stream``, AES-256-GCM under a passphrase or key file).

``restore_backup`` decrypts and verifies everything into a staging directory first: every
chunk's tag, every file's digest, SQLite's integrity check. Only then does it touch the
target data dir, and what it replaces is moved aside, never deleted.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlean

from crypto.errors import SealedDataError
from crypto.stream import StreamKey, decrypt_file, encrypt_file
from node.errors import EXIT_USAGE, NodeError
from node.paths import NodePaths
from node.servers.json_input import json_object

FORMAT = "bitterbot-node/backup"
VERSION = 1
#: A manifest names each file with its digest, about 100 bytes each: 32 MiB is 300,000 files.
MAX_MANIFEST_BYTES = 32 * 1024 * 1024


class BackupError(NodeError):
    """A backup could not be made or restored; the message says why and what was left untouched
    (exit 2: the person can act on it)."""

    exit_code = EXIT_USAGE


@dataclass(frozen=True, slots=True)
class BackupReport:
    path: Path
    files: dict[str, int]  # archive name -> bytes
    includes_keys: bool


def _sources(paths: NodePaths, config_file: Path | None, include_keys: bool) -> dict[str, Path]:
    """Archive name -> file on disk, for every file that exists (the memory file is snapshotted apart)."""
    found: dict[str, Path] = {}
    if paths.workspace is not None and paths.workspace.is_dir():
        for file in sorted(paths.workspace.rglob("*")):
            if file.is_file() and not file.name.endswith((".lock", ".tmp")):
                found[f"workspace/{file.relative_to(paths.workspace).as_posix()}"] = file
    if paths.trust_file is not None:
        found["p2p/trust.json"] = paths.trust_file
        found["p2p/state.json"] = paths.trust_file.with_name("state.json")
    if config_file is not None:
        found["config.toml"] = config_file
    if include_keys:
        found["keys/identity.key"] = paths.key_file
        found["keys/wallet.key"] = paths.data_dir / "wallet.key"
        found["keys/api.token"] = paths.api_token_file
        found["keys/owner.token"] = paths.owner_token_file
    return {name: path for name, path in found.items() if path.is_file()}


def _targets(paths: NodePaths) -> dict[str, Path]:
    """Where each archive name goes in ``paths``' data dir."""
    assert paths.memory_db is not None
    assert paths.workspace is not None
    assert paths.trust_file is not None
    return {
        "memory.db": paths.memory_db,
        "p2p/trust.json": paths.trust_file,
        "p2p/state.json": paths.trust_file.with_name("state.json"),
        "config.toml": paths.data_dir / "config.toml",
        "keys/identity.key": paths.key_file,
        "keys/wallet.key": paths.data_dir / "wallet.key",
        "keys/api.token": paths.api_token_file,
        "keys/owner.token": paths.owner_token_file,
    }


def _snapshot(db: Path, into: Path) -> None:
    """SQLite's online backup: a consistent copy even while the daemon writes."""
    source = sqlean.connect(f"file:{db}?mode=ro", uri=True)
    target = sqlean.connect(str(into))
    try:
        source.backup(target)
    finally:
        target.close()
        source.close()


def _digest(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def create_backup(
    paths: NodePaths, out: Path, key: StreamKey, *, config_file: Path | None, include_keys: bool, peer_id: str
) -> BackupReport:
    if paths.memory_db is None or not paths.memory_db.exists():
        raise BackupError(f"nothing to back up: no memory file at {paths.memory_db}")
    if out.exists():
        raise BackupError(f"{out} exists; choose a new name (a backup never overwrites a file)")
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out.parent, prefix=".backup-") as tmp:
        staging = Path(tmp)
        snapshot = staging / "memory.db"
        _snapshot(paths.memory_db, snapshot)
        members = {"memory.db": snapshot, **_sources(paths, config_file, include_keys)}
        files = {name: path.stat().st_size for name, path in members.items()}
        manifest = {
            "format": FORMAT, "version": VERSION, "created_ms": time.time_ns() // 1_000_000, "peer_id": peer_id,
            "includes_keys": include_keys, "sha256": {name: _digest(path) for name, path in members.items()},
        }  # fmt: skip
        tar_path = staging / "backup.tar"
        with tarfile.open(tar_path, "w") as tar:
            data = json.dumps(manifest, indent=2, sort_keys=True).encode()
            info = tarfile.TarInfo("manifest.json")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
            for name, path in members.items():
                tar.add(path, arcname=name, recursive=False)
        partial = out.with_name(out.name + ".partial")
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with tar_path.open("rb") as source, os.fdopen(fd, "wb") as sink:
            encrypt_file(source, sink, key, meta={"format": FORMAT, "version": VERSION})
            sink.flush()
            os.fsync(sink.fileno())
        os.replace(partial, out)
    return BackupReport(out, files, include_keys)


@dataclass(frozen=True, slots=True)
class RestoreReport:
    restored: list[str]
    moved_aside: list[str]
    peer_id: str
    created_ms: int


def restore_backup(archive: Path, paths: NodePaths, key: StreamKey, *, force: bool) -> RestoreReport:
    """Verify ``archive`` whole, then put its files into ``paths``' data dir."""
    if not archive.is_file():
        raise BackupError(f"no backup file at {archive}")
    targets = _targets(paths)
    assert paths.workspace is not None
    if not force and any(p.exists() for p in (targets["memory.db"], paths.workspace / "MEMORY.md")):
        raise BackupError(
            f"{paths.data_dir} already holds a node's memory; restore into a fresh data dir, or add --force "
            "(what is there is moved aside, not deleted)"
        )
    paths.ensure_data_dir()
    with tempfile.TemporaryDirectory(dir=paths.data_dir, prefix=".restore-") as tmp:
        staging = Path(tmp)
        tar_path = staging / "backup.tar"
        try:
            with archive.open("rb") as source, tar_path.open("wb") as sink:
                decrypt_file(source, sink, key)
        except SealedDataError as exc:
            raise BackupError(f"refused {archive}: {exc}; nothing was changed") from None
        manifest = _unpack(tar_path, staging / "files")
        _check_database(staging / "files" / "memory.db")
        restored, aside = [], []
        stamp = time.strftime("%Y%m%d-%H%M%S")
        workspace = paths.workspace
        plan = [  # every target checked before the first file moves
            (
                name,
                _inside(staging / "files", name),
                _inside(workspace, name.removeprefix("workspace/")) if name.startswith("workspace/") else targets[name],
            )
            for name in sorted(manifest["sha256"])
        ]
        for name, source_file, target in plan:
            _private_folders(target.parent, paths.data_dir)
            if target.exists():
                moved = target.with_name(f"{target.name}.before-restore-{stamp}")
                os.replace(target, moved)
                aside.append(str(moved))
            if name == "memory.db":
                for suffix in ("-wal", "-shm"):  # a stale WAL would be replayed over the restored file
                    stale = target.with_name(target.name + suffix)
                    if stale.exists():
                        os.replace(stale, stale.with_name(f"{stale.name}.before-restore-{stamp}"))
            shutil.move(str(source_file), target)
            # Memories, working memory and keys alike: the owner's only (issue 27: a restore left the
            # database and MEMORY.md 0644 until their next write).
            os.chmod(target, 0o600)
            restored.append(name)
    return RestoreReport(restored, aside, str(manifest.get("peer_id", "")), int(manifest.get("created_ms", 0)))


def _private_folders(folder: Path, data_dir: Path) -> None:
    """Make ``folder`` (inside ``data_dir``) and the folders between them, each the owner's only."""
    folder.mkdir(parents=True, exist_ok=True)
    for each in (folder, *folder.parents):
        if each == data_dir.parent or not each.is_relative_to(data_dir):
            break
        os.chmod(each, 0o700)


def _unpack(tar_path: Path, into: Path) -> dict[str, Any]:
    """Extract only regular files named in the manifest, each checked against its digest."""
    into.mkdir()
    try:
        with tarfile.open(tar_path, "r") as tar:
            raw = tar.extractfile("manifest.json")
            if raw is None:
                raise BackupError("the archive has no manifest")
            manifest = json_object(_at_most(raw.read(MAX_MANIFEST_BYTES + 1)), "the archive's manifest", max_depth=4)
            if manifest.get("format") != FORMAT or manifest.get("version") != VERSION:
                raise BackupError(f"not a {FORMAT} v{VERSION} archive")
            digests: dict[str, str] = manifest["sha256"]
            allowed = {"memory.db", "p2p/trust.json", "p2p/state.json", "config.toml", "keys/identity.key",
                       "keys/wallet.key", "keys/api.token", "keys/owner.token"}  # fmt: skip
            for name, expected in digests.items():
                safe = name in allowed or (name.startswith("workspace/") and ".." not in name.split("/"))
                if not safe or name.startswith("/"):
                    raise BackupError(f"the archive names a file outside a node's data: {name!r}; nothing was changed")
                member = tar.getmember(name)
                if not member.isfile():
                    raise BackupError(f"{name} in the archive is not a regular file")
                target = _inside(into, name)
                target.parent.mkdir(parents=True, exist_ok=True)
                source = tar.extractfile(member)
                assert source is not None
                with target.open("wb") as sink:
                    shutil.copyfileobj(source, sink)
                if _digest(target) != expected:
                    raise BackupError(f"{name} does not match the manifest's digest; nothing was changed")
    except (tarfile.TarError, KeyError, ValueError) as exc:
        raise BackupError(f"the archive is damaged ({exc}); nothing was changed") from None
    return manifest


def _inside(folder: Path, relative: str) -> Path:
    """``folder / relative``, refused unless its resolved path stays inside ``folder``: an archive member
    named ``workspace//home/u/.bashrc`` (an absolute path after the prefix), ``a/../../x``, or one that
    goes through a symlink out of the folder."""
    target = folder / relative
    if not target.resolve().is_relative_to(folder.resolve()):
        raise BackupError(f"the archive names a file outside its folder: {relative!r}; nothing was changed")
    return target


def _at_most(data: bytes) -> bytes:
    if len(data) > MAX_MANIFEST_BYTES:
        raise BackupError(f"the archive's manifest is larger than {MAX_MANIFEST_BYTES >> 20} MiB")
    return data


def _check_database(db: Path) -> None:
    conn = sqlean.connect(str(db))
    try:
        result = conn.execute("PRAGMA integrity_check").fetchone()
    except sqlean.DatabaseError as exc:
        raise BackupError(f"the memory file in the archive is not a database ({exc}); nothing was changed") from None
    finally:
        conn.close()
    if result is None or result[0] != "ok":
        raise BackupError(f"the memory file in the archive fails SQLite's integrity check ({result}); nothing changed")
