"""Issue 30: imports from Mem0, Letta and Obsidian into a real store, and through the real CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memory.embedders.hashing import HashingEmbedder
from memory.errors import ForeignFormatError
from memory.intake.store import IntakeStore
from memory.model import AssociationType
from memory.transfer.foreign import ForeignSource, capture_all, store_entries
from memory.transfer.foreign_files import read_foreign
from tests.conftest import clean_env, run_cli

MEM0 = {
    "results": [
        {
            "id": "a1b2",
            "memory": "Prefers window seats on long flights",
            "hash": "x",
            "metadata": {"source": "chat", "tags": ["travel"]},
            "categories": ["preferences", "travel"],
            "created_at": "2024-03-01T10:00:00-08:00",
            "updated_at": "2024-05-02T09:30:00-08:00",
            "user_id": "alex",
        },
        {"id": "c3d4", "memory": "Allergic to penicillin", "created_at": "2024-01-15T08:00:00Z", "user_id": "alex"},
        {"id": "e5f6", "memory": "   ", "user_id": "alex"},
    ],
    "count": 3,
}
LETTA = {
    "agents": [{"name": "companion", "system": "You are Sam.", "messages": [{"role": "user", "content": "hi"}]}],
    "blocks": [
        {"label": "human", "value": "\nFirst name: Chad\nLast name: ?\nOccupation: PhD student at UC Berkeley\n"},
        {"label": "persona", "value": "I am Sam.\nI speak softly."},
    ],
    "tools": [{"name": "conversation_search"}],
}
PASSAGES = [
    {
        "id": "passage-1",
        "text": "The staging cluster moved to eu-west-3",
        "tags": ["ops"],
        "created_at": "2025-11-05 23:04:24+00:00",
    },
    {"id": "passage-2", "text": "old note", "is_deleted": True, "archive_id": "archive-1"},
]


def _vault(root: Path) -> Path:
    vault = root / "vault"
    (vault / ".obsidian").mkdir(parents=True)
    (vault / ".obsidian" / "app.json").write_text("{}")
    (vault / "People").mkdir()
    (vault / "People" / "Marta Soler.md").write_text(
        "---\naliases: [Marta]\ntags:\n  - person\n  - work\ncreated: 2024-02-10\nrole: lead\n---\n"
        "# Marta Soler\nMarta leads the data platform team. #colleague\n"
    )
    (vault / "Boiler.md").write_text(
        "The boiler is a Vaillant ecoTEC, serviced by [[Marta|Marta's brother]] in May.\n\n"
        "See also [[Heating log]] and ![[boiler.png]].\n```\n#not-a-tag\n```\n"
    )
    return vault


async def test_a_mem0_export_keeps_its_times_and_categories_and_names_what_it_leaves_out(tmp_path: Path) -> None:
    path = tmp_path / "mem0.json"
    path.write_text(json.dumps(MEM0))
    source = read_foreign(path, None)
    assert source is not None and source.kind == "mem0"
    assert source.skipped == ["memory 3: no text"]
    assert {"hash", "user_id", "metadata.source"} <= set(source.left_out)
    store = await IntakeStore.open(tmp_path / "m.db", HashingEmbedder())
    try:
        done = await store_entries(store, source)
        assert (done.stored, done.known, done.skipped) == (2, 0, 1)
        again = await store_entries(store, source)  # the same export again: nothing new
        assert (again.stored, again.known) == (0, 2)
        crystals = {c.text: c for c in [c async for c in store.iter_live()]}
        seat = crystals["Prefers window seats on long flights"]
        assert seat.tags == ("preferences", "travel")
        assert seat.created_at_ms == 1714671000000  # updated_at: when its words were last written
        assert seat.source_path == str(path)
    finally:
        await store.close()


async def test_a_letta_agent_file_and_its_passages(tmp_path: Path) -> None:
    agent, passages = tmp_path / "companion.af", tmp_path / "archival.json"
    agent.write_text(json.dumps(LETTA))
    passages.write_text(json.dumps(PASSAGES))
    source = read_foreign(agent, None)
    assert source is not None and source.kind == "letta"
    assert [e.crystal.text for e in source.entries] == [
        "First name: Chad", "Occupation: PhD student at UC Berkeley", "I am Sam.", "I speak softly."
    ]  # fmt: skip
    assert source.entries[0].crystal.tags == ("letta", "human")
    assert any("Last name" in s for s in source.skipped)
    assert {"agents[].system", "agents[].messages", "tools"} <= set(source.left_out)
    archival = read_foreign(passages, None)
    assert archival is not None and [e.crystal.tags for e in archival.entries] == [("letta", "archival", "ops")]
    assert archival.skipped == ["passage 2: deleted"]


async def test_an_obsidian_vault_keeps_tags_links_aliases_and_times(tmp_path: Path) -> None:
    source = read_foreign(_vault(tmp_path), None)
    assert source is not None and source.kind == "obsidian"
    boiler = next(e for e in source.entries if e.crystal.text.startswith("The boiler is a Vaillant"))
    assert "serviced by Marta's brother in May" in boiler.crystal.text  # a link reads as its shown text
    assert boiler.links_to == ("marta", "heating log") and boiler.crystal.context == "Boiler"
    marta = next(e for e in source.entries if "leads the data platform" in e.crystal.text)
    assert marta.crystal.tags == ("person", "work", "colleague")
    assert marta.crystal.created_at_ms == 1707523200000
    assert len(source.entries) == 2  # a '#' line inside a code block is neither a heading nor a tag
    assert "boiler.png" not in boiler.crystal.text and boiler.crystal.tags == ()
    assert "front matter: role" in source.left_out and "embedded files (![[…]])" in source.left_out
    store = await IntakeStore.open(tmp_path / "m.db", HashingEmbedder())
    try:
        done = await store_entries(store, source)
        assert done.links == 1 and done.dangling_links == 1  # [[Heating log]] is not in the vault
        ids = {c.text: c.id for c in [c async for c in store.iter_live()]}
        async with store.reader().execute("SELECT src_id, dst_id, type FROM associations") as cursor:
            edges = [tuple(row) async for row in cursor]
        assert (ids[boiler.crystal.text], ids[marta.crystal.text], AssociationType.REFERENCES.value) in edges
        assert (await store_entries(store, source)).links == 0  # again: no new link, no new crystal
    finally:
        await store.close()


@pytest.mark.slow  # real CLI processes
def test_a_file_that_is_not_what_it_is_named_is_refused_and_nothing_is_stored(tmp_path: Path) -> None:
    broken = tmp_path / "export.json"
    broken.write_text('{"results": [{"memory": "cut off')
    with pytest.raises(ForeignFormatError, match="not JSON"):
        read_foreign(broken, None)
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"hello": 1}))
    assert read_foreign(other, None) is None
    with pytest.raises(ForeignFormatError, match="not a Mem0 export"):
        read_foreign(other, "mem0")
    data = str(tmp_path / "d")
    refused = run_cli(
        "memory", "import", str(broken), "--data-dir", data, env=clean_env(BITTERBOT_MEMORY__EMBEDDER="hashing")
    )
    assert refused.returncode == 2 and "not JSON" in refused.stderr and "Traceback" not in refused.stderr


@pytest.mark.slow  # real CLI processes
def test_the_cli_imports_a_vault_and_a_mem0_export_with_a_summary(tmp_path: Path) -> None:
    env = clean_env(BITTERBOT_MEMORY__EMBEDDER="hashing")
    data = str(tmp_path / "d")
    mem0 = tmp_path / "mem0.json"
    mem0.write_text(json.dumps(MEM0))
    first = run_cli("memory", "import", str(mem0), "--data-dir", data, "--json", env=env)
    assert first.returncode == 0, first.stderr
    summary = json.loads(first.stdout)
    assert (summary["from"], summary["stored"], summary["skipped"]) == ("mem0", 2, 1)
    assert "skipped memory 3: no text" in first.stderr
    vault = run_cli("memory", "import", str(_vault(tmp_path)), "--data-dir", data, env=env)
    assert vault.returncode == 0 and "imported from obsidian: 2 new crystals" in vault.stdout, vault.stdout
    assert "1 links (1 to notes not in the vault)" in vault.stdout
    chats = run_cli("memory", "import", str(CHATGPT), "--data-dir", data, env=env)
    assert chats.returncode == 0 and "imported from chatgpt:" in chats.stdout and "conversations" in chats.stdout
    listed = run_cli("memory", "list", "--tags", "colleague", "--data-dir", data, "--json", env=env)
    assert [c["text"] for c in json.loads(listed.stdout)["crystals"]] == [
        "# Marta Soler\nMarta leads the data platform team. #colleague"
    ]


@pytest.mark.slow  # real CLI processes
def test_exports_to_mem0_and_obsidian_read_back_with_texts_times_tags_and_links(tmp_path: Path) -> None:
    """Issue 30: a person leaves with their memory in the formats other tools read; what is current
    goes (not what was superseded), and each reads back through `memory import`."""
    env = clean_env(BITTERBOT_MEMORY__EMBEDDER="hashing")
    source, back_mem0, back_vault = (str(tmp_path / name) for name in ("src", "m", "v"))
    assert run_cli("memory", "import", str(_vault(tmp_path)), "--data-dir", source, env=env).returncode == 0
    added = run_cli("memory", "add", "The bike lock code is stored in the notes app", "--data-dir", source, env=env)
    assert added.returncode == 0, added.stderr

    mem0 = tmp_path / "out.json"
    done = run_cli("memory", "export", str(mem0), "--to", "mem0", "--data-dir", source, "--json", env=env)
    assert done.returncode == 0 and json.loads(done.stdout)["memories"] == 3, done.stderr
    assert mem0.stat().st_mode & 0o777 == 0o600
    memories = {m["memory"]: m for m in json.loads(mem0.read_text())["results"]}
    marta = next(m for text, m in memories.items() if "leads the data platform" in text)
    assert marta["categories"] == ["person", "work", "colleague"] and marta["created_at"] == "2024-02-10T00:00:00Z"

    vault = tmp_path / "out-vault"
    done = run_cli("memory", "export", str(vault), "--to", "obsidian", "--data-dir", source, "--json", env=env)
    assert done.returncode == 0, done.stderr
    assert (vault / ".obsidian").is_dir() and len(list(vault.glob("*.md"))) == 3
    assert json.loads(done.stdout)["links"] == 1  # the boiler note names Marta's

    again = run_cli("memory", "import", str(mem0), "--data-dir", back_mem0, "--json", env=env)
    assert json.loads(again.stdout)["stored"] == 3, again.stderr
    imported = run_cli("memory", "import", str(vault), "--data-dir", back_vault, "--json", env=env)
    summary = json.loads(imported.stdout)
    assert (summary["stored"], summary["links"], summary["dangling_links"]) == (3, 1, 0), summary
    listed = run_cli("memory", "list", "--tags", "colleague", "--data-dir", back_vault, "--json", env=env)
    assert [c["created_at_ms"] for c in json.loads(listed.stdout)["crystals"]] == [1707523200000]
    letta = tmp_path / "passages.json"
    done = run_cli("memory", "export", str(letta), "--to", "letta", "--data-dir", source, "--json", env=env)
    assert done.returncode == 0 and json.loads(done.stdout)["memories"] == 3, done.stderr
    back_letta = str(tmp_path / "l")
    imported = run_cli("memory", "import", str(letta), "--data-dir", back_letta, "--json", env=env)
    assert json.loads(imported.stdout)["stored"] == 3, imported.stderr
    listed = run_cli("memory", "list", "--tags", "colleague", "--data-dir", back_letta, "--json", env=env)
    assert [c["created_at_ms"] for c in json.loads(listed.stdout)["crystals"]] == [1707523200000]
    refused = run_cli("memory", "export", str(vault), "--to", "obsidian", "--data-dir", source, env=env)
    assert refused.returncode == 2 and "exists" in refused.stderr


CHATGPT = Path(__file__).parent / "data" / "capture" / "chatgpt_conversations.json"


async def test_a_chatgpt_export_is_captured_a_conversation_at_a_time_and_resumes(tmp_path: Path) -> None:
    """Issue 30: a ChatGPT export through `memory import`, with progress, stopped and resumed."""
    source = read_foreign(CHATGPT, None)
    assert source is not None and source.kind == "chatgpt" and len(source.conversations) >= 2
    store = await IntakeStore.open(tmp_path / "m.db", HashingEmbedder())
    try:
        steps: list[int] = []
        stopped = ForeignSource("chatgpt", conversations=source.conversations[:1])  # as after a Ctrl-C
        first = await capture_all(store, stopped, steps.append)
        whole = await capture_all(store, source, steps.append)
        assert first.stored > 0 and whole.conversations == len(source.conversations)
        alone = await IntakeStore.open(tmp_path / "alone.db", HashingEmbedder())
        try:
            once = await capture_all(alone, source)
        finally:
            await alone.close()
        assert first.stored + whole.stored == once.stored  # nothing stored twice
        assert (await capture_all(store, source)).stored == 0
        assert steps == [1] * (1 + len(source.conversations))
    finally:
        await store.close()
    mem0 = tmp_path / "mem0.json"
    mem0.write_text(json.dumps(MEM0))
    with pytest.raises(ForeignFormatError, match="ChatGPT export"):
        read_foreign(mem0, "chatgpt")  # named as another tool's export than it is
