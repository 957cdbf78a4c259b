"""`bitterbot-node backup|restore` and `memory export` as a user runs them."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from tests.conftest import clean_env, run_cli
from tests.daemons import Node

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
    data = tmp_path / "a"
    cli(data, "init")
    for text, kind in MEMORIES:
        cli(data, "memory", "add", text, "--type", kind)
    cli(data, "memory", "note", "Release 2.3 is blocked on the migration")
    passphrase = tmp_path / "pass"
    passphrase.write_text("a long backup passphrase\n")
    return data, passphrase


def test_backup_then_restore_into_a_fresh_dir_gives_the_same_answers(tmp_path: Path) -> None:
    data, passphrase = make_node(tmp_path)
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

    again = run_cli("restore", str(archive), "--passphrase-file", str(passphrase), "--data-dir", str(fresh), env=ENV)
    assert again.returncode == 2 and "already holds a node's memory" in again.stderr
    forced = cli(fresh, "restore", str(archive), "--passphrase-file", str(passphrase), "--force")
    assert "kept the previous file as" in forced.stdout
    assert search(fresh, "Spanish") == search(data, "Spanish")


def test_keys_travel_only_when_asked_and_stay_private(tmp_path: Path) -> None:
    data, passphrase = make_node(tmp_path)
    archive = tmp_path / "with-keys.bbk"
    cli(data, "backup", str(archive), "--passphrase-file", str(passphrase), "--include-keys")
    fresh = tmp_path / "c"
    cli(fresh, "restore", str(archive), "--passphrase-file", str(passphrase))
    assert (fresh / "identity.key").read_bytes() == (data / "identity.key").read_bytes()
    assert os.stat(fresh / "identity.key").st_mode & 0o777 == 0o600
    status = json.loads(cli(fresh, "status", "--json").stdout)
    assert status["identity"]["peer_id"] == json.loads(cli(data, "status", "--json").stdout)["identity"]["peer_id"]


def test_a_tampered_truncated_or_wrongly_keyed_backup_is_refused_and_nothing_changes(tmp_path: Path) -> None:
    data, passphrase = make_node(tmp_path)
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


def test_backup_is_consistent_while_the_daemon_runs_and_restore_refuses_a_running_node(tmp_path: Path) -> None:
    data, passphrase = make_node(tmp_path)
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


def test_memory_export_writes_jsonl_without_confidential_crystals(tmp_path: Path) -> None:
    data, _ = make_node(tmp_path)
    cli(data, "memory", "add", "My bank password is hunter2-correct-horse")
    out = tmp_path / "memories.jsonl"
    done = cli(data, "memory", "export", str(out))
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    texts = {doc["text"] for doc in lines}
    assert {text for text, _ in MEMORIES} <= texts and all("hunter2" not in t for t in texts)
    assert "confidential left out" in done.stdout
    refused = run_cli("memory", "export", str(out), "--data-dir", str(data), env=ENV)
    assert refused.returncode == 2 and "exists" in refused.stderr
