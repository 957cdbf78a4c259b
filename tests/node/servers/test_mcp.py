"""`bitterbot-node mcp` through the official SDK's client over stdio: alone, and beside a daemon."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.types import TextContent

from memory.model import Sensitivity
from tests.conftest import clean_env
from tests.daemons import Node

pytestmark = pytest.mark.slow  # real processes, hosts or chains (`-m "not slow"` skips them)

TOOLS = {
    "memory_search", "memory_remember", "memory_retype", "memory_feedback", "memory_gaps", "memory_link",
    "memory_forget", "memory_status", "memory_supersede", "memory_unsupersede", "memory_show", "memory_event",
    "memory_list", "memory_edit", "memory_capture", "memory_entities", "memory_entity",
    "working_memory_note", "working_memory_bootstrap", "working_memory_dream", "working_memory_show",
    "skills_search", "skills_record", "skills_price", "skills_purchases", "memory_quarantine",
    "skills_emerging", "skills_crystallise",
    "network_peers", "network_weather", "wallet_show",
}  # fmt: skip


@asynccontextmanager
async def mcp_client(data_dir: Path, embedder: str = "hashing") -> AsyncIterator[Client]:
    env = clean_env(BITTERBOT_MEMORY__EMBEDDER=embedder)
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "node", "mcp", "--data-dir", str(data_dir)], env=env
    )
    with (data_dir.parent / f"{data_dir.name}-mcp.log").open("w") as errlog:
        async with Client(stdio_client(params, errlog=errlog)) as client:
            yield client


def _text(result: Any) -> str:
    (content,) = result.content
    assert isinstance(content, TextContent)
    return content.text


def _data(result: Any) -> Any:
    """A tool's structured result (or its text, for a plain string result)."""
    assert not result.is_error, result.content
    if result.structured_content is not None:
        content = result.structured_content
        return content.get("result", content) if isinstance(content, dict) and set(content) == {"result"} else content
    return json.loads(_text(result))


async def test_tools_are_described_and_work_on_the_memory_file_alone(tmp_path: Path) -> None:
    async with mcp_client(tmp_path / "alone") as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert set(tools) == TOOLS
        search = tools["memory_search"]
        fields = search.input_schema["properties"]
        assert "peer" in (search.description or "") and {"query", "mode", "since"} <= set(fields)
        assert "hybrid" in fields["mode"]["description"] and fields["limit"]["maximum"] == 1000  # from the request
        assert "origin" not in fields  # set for the agent, never by it

        made = _data(await client.call_tool("memory_remember", {"text": "Ana prefers answers in Spanish",
                                                                "type": "preference", "importance": 0.8}))  # fmt: skip
        assert made["created"] and made["type"] == "preference"
        hits = _data(await client.call_tool("memory_search", {"query": "Spanish answers", "mode": "keyword"}))
        assert [h["id"] for h in hits] == [made["id"]]
        # issue 32: a hit carried no date and no sensitivity, and nothing said it replaced an older one
        assert hits[0]["said_at"].endswith("Z") and hits[0]["sensitivity"] in {s.value for s in Sensitivity}
        old = _data(await client.call_tool("memory_remember", {"text": "The staging server is db2"}))
        new = _data(
            await client.call_tool("memory_remember", {"text": "Actually, the staging server moved to db7, not db2"})
        )
        found = _data(await client.call_tool("memory_search", {"query": "staging server db2", "mode": "keyword"}))
        assert found[0]["id"] == new["id"] and found[0]["replaces"] == old["id"], found
        # issue 32: editing with the history kept; the agent edits its own words, never the person's
        outdated = await client.call_tool("memory_edit", {"id": old["id"], "text": "The staging server is db3"})
        assert outdated.is_error and f"replaced by {new['id']}" in _text(outdated)
        edited = _data(await client.call_tool("memory_edit", {"id": new["id"], "text": "The staging server is db8"}))
        assert edited["replaces"] == new["id"] and edited["id"] != new["id"]
        found = _data(await client.call_tool("memory_search", {"query": "staging server", "mode": "keyword"}))
        assert [h["id"] for h in found] == [edited["id"]]
        note = _data(await client.call_tool("working_memory_note", {"text": "Deploy freeze until Friday"}))
        assert note["noted"] == "Deploy freeze until Friday"
        text = _data(await client.call_tool("working_memory_bootstrap", {"context_window": 8000}))
        assert "Deploy freeze until Friday" in str(text)
        status = _data(await client.call_tool("memory_status", {}))
        assert status["crystals"] == 5 and "dopamine" in status["hormones"]  # the edit's old version is kept
        skill = _data(await client.call_tool("memory_remember", {"text": "Rotate logs with logrotate -f",
                                                                 "type": "skill"}))  # fmt: skip
        found = _data(await client.call_tool("skills_search", {"query": "rotate logs"}))
        assert [h["id"] for h in found["local"]] == [skill["id"]] and found["network"] == []
        assert _data(await client.call_tool("memory_forget", {"id": made["id"]})) == {
            "forgotten": made["id"],
            "erased": False,
        }
        assert _data(await client.call_tool("memory_search", {"query": "Spanish", "mode": "keyword"})) == []
        chat = [
            {"role": "user", "content": "thanks!"},
            {"role": "user", "content": "Our VPN endpoint is vpn.acme.test"},
        ]
        captured = _data(await client.call_tool("memory_capture", {"messages": chat, "session": "mcp-1"}))
        assert (captured["stored"], captured["left_out"]) == (1, 1)
        again = _data(await client.call_tool("memory_capture", {"messages": chat, "session": "mcp-1"}))
        assert again["stored"] == 0 and again["new_messages"] == 0

        # issue 52: who memory names, and what it knows of one of them (named in two memories)
        said = [_data(await client.call_tool("memory_remember", {"text": text})) for text in
                ("Gina Torres runs the Lisbon office", "The quarterly review is with Gina Torres")]  # fmt: skip
        named = _data(await client.call_tool("memory_entities", {}))
        assert {"name": "Gina Torres", "kind": "person", "memories": 2} in named, named  # "with Gina Torres"
        gina = _data(await client.call_tool("memory_entity", {"name": "gina torres"}))
        assert [m["id"] for m in gina["memories"]] == [said[1]["id"], said[0]["id"]]  # the newest first
        assert gina["related"] == [{"name": "Lisbon", "kind": "thing", "memories": 1}]
        nobody = await client.call_tool("memory_entity", {"name": "Quentin Nobody"})
        assert nobody.is_error and "names no one" in _text(nobody)

        bad = await client.call_tool("memory_remember", {"text": "x", "importance": 3})
        assert bad.is_error and "importance" in _text(bad)
        missing = await client.call_tool("memory_forget", {"id": "no-such"})
        assert missing.is_error and "no crystal" in _text(missing)


async def test_beside_a_running_daemon_it_goes_through_the_daemon(tmp_path: Path) -> None:
    node = Node(tmp_path, "node", clean_env(BITTERBOT_MEMORY__EMBEDDER="hashing"))
    node.start()
    try:
        node.address()
        async with mcp_client(node.data) as client:
            made = _data(await client.call_tool("memory_remember", {"text": "The VPN endpoint is vpn.example.org"}))
            assert made["created"]
            found = _data(await client.call_tool("skills_search", {"query": "anything"}))
            assert found == {"local": [], "network": []}  # the daemon answered skills.list (no listings)
        shown = node.json("memory", "show", made["id"])
        assert shown["crystal"]["text"] == "The VPN endpoint is vpn.example.org"
        assert (tmp_path / "node-mcp.log").read_text().count("mcp.via_daemon") == 1
    finally:
        log = node.stop()
    assert "Traceback" not in log, log


async def test_the_readme_agent_session(tmp_path: Path) -> None:
    """The MCP session of docs/agents/mcp.md, step by step: memories without types, a search, feedback, a note,
    a dream, and the MEMORY.md it produced. With the default embedder, as the page
    runs it: the types are the ones words and meaning give once a memory is embedded."""
    data = tmp_path / "agent"
    async with mcp_client(data, embedder="minilm") as client:
        said = {}
        for text in (
            "My brother Tomas moved to Tallinn last year",
            "answers in Norwegian when I write in Norwegian",
            "wants to pass the Oslo sailing licence this summer",
            "Realised the flaky login test was a timezone problem",
        ):
            made = _data(await client.call_tool("memory_remember", {"text": text}))
            said[text] = (made["type"], made["layer"])
        assert said == {
            "My brother Tomas moved to Tallinn last year": ("relationship", "world_fact"),
            # The agent's words never direct it (issue 47): the person's preference, as a fact about them.
            "answers in Norwegian when I write in Norwegian": ("preference", "world_fact"),
            "wants to pass the Oslo sailing licence this summer": ("goal", "experience"),
            "Realised the flaky login test was a timezone problem": ("insight", "mental_model"),
        }
        hits = _data(await client.call_tool("memory_search", {"query": "where does Tomas live"}))
        assert hits[0]["text"] == "My brother Tomas moved to Tallinn last year"
        steered = _data(await client.call_tool("memory_feedback", {"id": hits[0]["id"], "feedback": "useful"}))
        assert steered["steering_reward"] == 0.3
        assert _data(await client.call_tool("memory_search", {"query": "When is the dentist appointment?"})) == []
        await client.call_tool("working_memory_note", {"text": "User's name is Douglas, deadline Friday",
                                                       "importance": 0.8})  # fmt: skip
        dreamt = _data(await client.call_tool("working_memory_dream", {}))
        assert dreamt["accepted"] and dreamt["notes_indexed"] == 1
        boot = _data(await client.call_tool("working_memory_bootstrap", {"context_window": 128_000}))
    memory_md = (data / "workspace" / "MEMORY.md").read_text()
    print(memory_md)  # what docs/agents/mcp.md shows
    assert "# The person's directives" not in boot  # the agent said them all: no orders
    assert "answers in Norwegian when I write in Norwegian" in boot
    for line in (
        "## Phenotype\n- Realised the flaky login test was a timezone problem",
        "## Bond\n- User's name is Douglas, deadline Friday\n- answers in Norwegian when I write in Norwegian\n"
        "- My brother Tomas moved to Tallinn last year",
        '## Curiosity Gaps\n- Unanswered: "When is the dentist appointment?" (asked 1x)\n- wants to pass the Oslo',
    ):
        assert line in memory_md, line


CAPTURED_CHAT = [
    {"role": "user", "id": "m1", "content": "hi!"},
    {"role": "assistant", "id": "m2", "content": "Hello! How can I help?"},
    {"role": "user", "id": "m3", "content": "I'm moving the family blog from WordPress to Hugo this month."},
    {"role": "assistant", "id": "m4", "content": "Where will it be hosted?"},
    {"role": "user", "id": "m5", "content": "On Netlify, free tier."},
    {"role": "user", "id": "m6", "content": "My wife Carmen writes the recipes; I only do the tech side."},
    {"role": "assistant", "id": "m7", "content": "Your wife Carmen writes the recipes and you do the tech side."},
    {"role": "user", "id": "m8", "content": "Always answer me with shell commands, not GUI steps."},
    {"role": "assistant", "id": "m9", "content": "Understood."},
    {"role": "user", "id": "m10", "content": "thanks!"},
]


async def test_the_readme_captured_session(tmp_path: Path) -> None:
    """The captured conversation of docs/agents/mcp.md: an agent hands the node a chat, the
    node keeps what is worth keeping, and the dream puts it in MEMORY.md."""
    data = tmp_path / "agent"
    async with mcp_client(data, embedder="minilm") as client:
        captured = _data(await client.call_tool("memory_capture", {"messages": CAPTURED_CHAT, "session": "blog-1"}))
        assert (captured["new_messages"], captured["stored"], captured["left_out"]) == (10, 2, 5)
        again = _data(await client.call_tool("memory_capture", {"messages": CAPTURED_CHAT, "session": "blog-1"}))
        assert (again["new_messages"], again["stored"]) == (0, 0)
        hits = _data(await client.call_tool("memory_search", {"query": "where is the blog hosted"}))
        assert "Netlify" in hits[0]["text"]
        dreamt = _data(await client.call_tool("working_memory_dream", {}))
        assert dreamt["accepted"]
    memory_md = (data / "workspace" / "MEMORY.md").read_text()
    print(memory_md)  # what docs/agents/mcp.md shows
    for line in (
        # A captured user turn is the person's word, not an order, until the person pins it (issue 47).
        "- [said in a conversation, not an order] Always answer me with shell commands, not GUI steps.",
        # The assistant's question only frames the person's words: the piece is theirs, unmarked.
        "## Active Context\n- user: I'm moving the family blog from WordPress to Hugo this month. assistant: Where "
        "will it be hosted? user: On Netlify, free tier. user: My wife Carmen writes the recipes",
    ):
        assert line in memory_md, line
