"""Write each door's valid seeds into ``tests/fuzz/corpus/<door>/`` (``python -m bench.fuzz.seeds``).

Seeds are real inputs: the capture fixtures, exports written by ``memory export`` (signed and not),
gossip bodies each field of which its kind's description accepts, a request per API command. Run
again after a format changes; inputs that once crashed a door (``crash-*``) are left as they are.
"""

from __future__ import annotations

import asyncio
import io
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import msgpack
from pydantic import BaseModel, ValidationError

from bench.fuzz.device_doors import seeds as device_seeds
from bench.fuzz.doors import CORPUS, gossip_kinds
from crypto.envelope import pack_body, seal_envelope
from crypto.identity import Identity
from ground.wire import Wire
from marketplace.exchange import protocol
from memory.capture.formats import ConversationFormat
from memory.embedders.hashing import HashingEmbedder
from memory.intake.store import IntakeStore
from memory.model import NewCrystal, content_hash
from memory.transfer.export import export_memory
from node.commands.catalog import COMMANDS
from p2p.network.discovery import KnownPeer, encode
from p2p.weather import Weather, WeatherSequences, weather_kind

FIXTURES = Path(__file__).resolve().parents[2] / "tests" / "memory" / "data" / "capture"
#: Values tried for a field, in turn, until its description accepts one.
CANDIDATES: tuple[Any, ...] = (
    "skill.one", 1, 1000, True, "ab" * 32, "0x" + "ab" * 20, b"\x01" * 32, b"\x01" * 64, b"\x02" * 24,
    "sam", ["a"], [], "A short reason.", b"\x03" * 48, 0, None,
)  # fmt: skip
MEM0 = {
    "results": [
        {"id": "a1", "memory": "Prefers window seats", "metadata": {"tags": ["travel"]}, "categories": ["travel"],
         "created_at": "2024-03-01T10:00:00-08:00", "updated_at": "2024-05-02T09:30:00-08:00", "user_id": "alex"},
        {"id": "c3", "memory": "Allergic to penicillin", "created_at": "2024-01-15T08:00:00Z"},
    ]
}  # fmt: skip
LETTA = {
    "agents": [
        {"name": "companion", "system": "You are Sam.", "memory_blocks": [{"label": "p", "value": "I am Sam."}]}
    ],
    "blocks": [{"label": "human", "value": "\nFirst name: Chad\nOccupation: PhD student\n"}],
}
PASSAGES = [
    {"id": "passage-1", "text": "The cluster moved", "tags": ["ops"], "created_at": "2025-11-05 23:04:24+00:00"}
]
SIGNER = Identity.from_seed(b"\x07" * 32)
NOTE = "---\naliases: [Marta]\ntags:\n  - person\ncreated: 2024-02-10\n---\n# Marta\nLeads [[Other|the team]]. #work\n"


def wire_body(wire: Wire[Any]) -> dict[str, Any]:
    """A body each field of which ``wire`` accepts (the first of ``CANDIDATES`` that passes)."""
    body: dict[str, Any] = {}
    for name, spec in wire.fields.items():
        for value in CANDIDATES:
            try:
                spec.read({name: value}, name)
            except Exception:  # any refusal: try the next value
                continue
            body[name] = value
            break
    if isinstance(body.get("content"), str) and "content_hash" in body:  # a listing's check across fields
        body["content_hash"] = content_hash(body["content"])
    return body


def request_args(model: type[BaseModel]) -> dict[str, Any]:
    """Arguments each field of which ``model`` accepts."""
    args: dict[str, Any] = {}
    for name in model.model_fields:
        for value in CANDIDATES[:6]:
            try:
                model.model_validate({**args, name: value})
            except ValidationError as exc:
                if any(e["loc"][:1] == (name,) for e in exc.errors()):
                    continue
            args[name] = value
            break
    return args


async def _exports() -> list[bytes]:
    with tempfile.TemporaryDirectory() as folder:
        store = await IntakeStore.open(Path(folder) / "m.db", HashingEmbedder())
        try:
            for text in ("The staging database lives on db2.", "Always answer me in Spanish.", "Tea, not coffee."):
                await store.remember(NewCrystal(text))
            out = []
            for signer in (None, SIGNER):
                sink = io.StringIO()
                await export_memory(store, sink, signer=signer)
                out.append(sink.getvalue().encode())
            return out
        finally:
            await store.close()


def seeds() -> dict[str, list[bytes]]:
    """Every door's seeds, by door name."""
    transcripts = [p.read_bytes() for p in sorted(FIXTURES.iterdir())]
    exports = asyncio.run(_exports())
    out: dict[str, list[bytes]] = {
        "transcript-detect": transcripts,
        "transcript-any": transcripts,
        **{f"transcript-{fmt.value}": transcripts for fmt in ConversationFormat},
        "import-mem0": [json.dumps(MEM0).encode()],
        "import-letta": [json.dumps(LETTA).encode(), json.dumps(PASSAGES).encode()],
        "import-chatgpt": [(FIXTURES / "chatgpt_conversations.json").read_bytes()],
        "import-any": [json.dumps(d).encode() for d in (MEM0, LETTA, PASSAGES)],
        "import-obsidian": [NOTE.encode()],
        "export-records": exports,
        "export-restore": exports,
        "stream-frame": [b"\x00\x00\x00\x05hello", b"\x00\x10\x00\x01x"],
        "peer-sample": [encode([KnownPeer("12D3KooWExamplePeer", ("/ip4/1.2.3.4/tcp/4001",), 0)])],
        "api-request": [
            f"{name}\n{json.dumps(request_args(c.request))}".encode() for name, c in sorted(COMMANDS.items())
        ],
        "config-toml": [p.read_bytes() for p in sorted((CORPUS.parents[2] / "configs").glob("*.toml"))],
    }
    markets: dict[str, Wire[Any]] = {"quote-request": protocol.QUOTE_REQUEST_WIRE, "quote": protocol.QUOTE_WIRE}
    markets |= {"delivery-request": protocol.DELIVERY_REQUEST_WIRE, "delivery": protocol.DELIVERY_WIRE}
    for name, wire in markets.items():
        out[f"market-{name}"] = [msgpack.packb(wire_body(wire))]
    issued = 1_700_000_000_000
    answer = weather_kind(WeatherSequences()).seal(SIGNER, Weather(900, 600, "storm", issued, 5), issued)
    out["weather-request"] = [SIGNER.public_key]
    out["weather-answer"] = [answer.encode(), b""]
    out |= device_seeds()
    for kind in gossip_kinds():
        out[f"gossip-{kind.name}"] = [msgpack.packb(wire_body(kind.wire))]
        sealed = seal_envelope(SIGNER, kind.name, pack_body(wire_body(kind.wire)), now_ms=1_700_000_000_000)
        out.setdefault("envelope", []).append(sealed.encode())
    return out


def write_corpus() -> None:
    for door, found in seeds().items():
        folder = CORPUS / door
        for old in folder.glob("seed-*"):
            old.unlink()
        folder.mkdir(parents=True, exist_ok=True)
        for n, data in enumerate(found):
            (folder / f"seed-{n}").write_bytes(data)
    shutil.rmtree(CORPUS / "__pycache__", ignore_errors=True)


if __name__ == "__main__":
    write_corpus()
