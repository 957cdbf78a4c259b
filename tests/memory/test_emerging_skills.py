"""Issue 30: skills that crystallise from practice. A task written down again and again is found,
counted with its recorded executions, shown with occurrences and confidence (CLI, MEMORY.md), and
promoted by `skills crystallise`: a new skill derived from the practices, which are frozen."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from memory.emerging.patterns import MIN_OCCURRENCES, Practice, confidence, emerging
from tests.conftest import clean_env, run_cli

ENV = clean_env(BITTERBOT_MEMORY__EMBEDDER="hashing")


def _practice(name: str, vector: list[float], at: int, executions: int = 0, successes: int = 0) -> Practice:
    unit = np.asarray(vector, dtype=np.float32)
    return Practice(name, f"text of {name}", unit / np.linalg.norm(unit), at, executions, successes)


def test_the_same_task_written_again_is_one_emerging_skill_and_another_task_is_not() -> None:
    practices = [
        _practice("renew-1", [1.0, 0.1, 0.0], 1),
        _practice("backup-1", [0.0, 1.0, 0.1], 2),
        _practice("renew-2", [0.95, 0.15, 0.05], 3),
        _practice("renew-3", [0.9, 0.05, 0.1], 4),
        _practice("backup-2", [0.05, 0.97, 0.0], 5),
    ]
    found = emerging(practices)
    assert [s.crystal_ids for s in found] == [("renew-1", "renew-2", "renew-3")]  # backup: 2 occurrences
    renew = found[0]
    assert renew.id == "renew-1" and renew.occurrences == 3 and 0.5 < renew.confidence < 0.7
    assert renew.last_seen_ms == 4
    # Executions recorded against a practice count as occurrences: the backup task now emerges too.
    practices[1] = _practice("backup-1", [0.0, 1.0, 0.1], 2, executions=3, successes=3)
    assert {s.id: s.occurrences for s in emerging(practices)} == {"renew-1": 3, "backup-1": 5}


def test_a_single_practice_never_emerges_however_often_it_ran() -> None:
    """A skill run many times is a skill already: 'emerging' means written down again."""
    assert emerging([_practice("solo", [1.0, 0.0], 1, executions=50, successes=50)]) == []
    assert MIN_OCCURRENCES == 3


def test_confidence_grows_with_occurrences_and_falls_with_failures() -> None:
    assert confidence(0.9, 3, 0, 0) < confidence(0.9, 7, 0, 0) < 0.9
    assert confidence(0.9, 7, 4, 0) < confidence(0.9, 7, 4, 4)
    assert confidence(0.9, 7, 4, 0) > 0  # failures lower it, never to nothing


def _add(data: str, text: str, kind: str = "task_pattern") -> str:
    done = run_cli("memory", "add", text, "--type", kind, "--data-dir", data, "--json", env=ENV)
    assert done.returncode == 0, done.stderr
    return str(json.loads(done.stdout)["crystal"]["id"])


@pytest.mark.slow  # real CLI processes
def test_the_cli_finds_records_crystallises_and_memory_md_lists_it(tmp_path: Path) -> None:
    data = str(tmp_path / "d")
    first = _add(data, "To renew the TLS certificate: run certbot renew, then reload nginx")
    _add(data, "To renew the TLS certificate run certbot renew and then reload nginx")
    third = _add(data, "Renew the TLS certificate: certbot renew, then reload nginx")
    _add(data, "Water the tomatoes every evening in July")
    found = json.loads(run_cli("skills", "emerging", "--data-dir", data, "--json", env=ENV).stdout)
    assert found["total"] == 1, found
    pattern = found["emerging"][0]
    assert pattern["id"] == first and pattern["occurrences"] == 3 and len(pattern["crystal_ids"]) == 3

    for _ in range(2):
        assert run_cli("skills", "record", third, "--success", "--data-dir", data, env=ENV).returncode == 0
    shown = run_cli("skills", "emerging", "--data-dir", data, env=ENV)
    assert "Occurrences: 5" in shown.stdout and "skills crystallise" in shown.stdout, shown.stdout

    dreamt = run_cli("memory", "dream", "--data-dir", data, env=ENV)
    assert dreamt.returncode == 0, dreamt.stderr
    memory_md = next((tmp_path / "d").rglob("MEMORY.md")).read_text()
    section = memory_md.split("## Emerging Skills", 1)[1]
    assert "→ Confidence:" in section and "| Occurrences: 5" in section, section

    promoted = run_cli("skills", "crystallise", first, "--text", "Renew TLS: certbot renew; reload nginx",
                       "--data-dir", data, "--json", env=ENV)  # fmt: skip
    assert promoted.returncode == 0, promoted.stderr
    doc = json.loads(promoted.stdout)
    skill = doc["skill"]
    assert skill["semantic_type"] == "skill" and skill["origin"] == "skill" and doc["frozen"] == 3
    shown_first = json.loads(run_cli("memory", "show", first, "--data-dir", data, "--json", env=ENV).stdout)
    assert shown_first["crystal"]["lifecycle"] == "frozen"
    assert any(link["type"] == "part_of" and skill["id"] in (link["src_id"], link["dst_id"])
               for link in shown_first["associations"])  # fmt: skip
    after = json.loads(run_cli("skills", "emerging", "--data-dir", data, "--json", env=ENV).stdout)
    assert after["total"] == 0  # frozen practices and the crystallised skill count no more

    again = run_cli("skills", "crystallise", first, "--data-dir", data, env=ENV)
    assert again.returncode == 2 and "no emerging skill" in again.stderr
