"""Every door outside bytes come in by, as a function of those bytes, with the errors it may answer.

A door passes an input when it returns (a result) or raises one of its ``typed`` errors, within
``HANG_S``. Anything else is a crash: a builtin exception escaping (``KeyError``, ``RecursionError``,
``TypeError``), or an input that took too long. The doors are the parsers themselves, run as the
daemon runs them: a transcript through ``read_conversations``, a Mem0 export through
``read_foreign`` from a file, a gossip body through its kind's ``parse``, an API body through
``json_object`` and the command's request model, a config file through ``load_config``.

Each door's seeds (valid inputs) and any input that once crashed it are files in
``tests/fuzz/corpus/<door>/``.
"""

from __future__ import annotations

import asyncio
import io
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from bench.fuzz.device_doors import GroupFiles
from bench.fuzz.device_doors import doors as device_doors
from crypto.envelope import ENVELOPE_VERSION, Envelope, decode_envelope, verify_signature
from crypto.identity import Identity
from ground import json_text
from ground.errors import BitterbotError
from marketplace.exchange import protocol
from marketplace.gossip.kinds import every_kind
from memory.capture.formats import ConversationFormat, detect, read_conversations
from memory.embedders.hashing import HashingEmbedder
from memory.intake.store import IntakeStore
from memory.transfer.foreign_files import read_foreign
from memory.transfer.records import check_header, is_header, parse_record
from memory.transfer.restore import restore_export
from memory.transfer.signature import check_signature, is_signature
from node.commands.catalog import COMMANDS
from node.config_loading import load_config
from node.servers.json_input import json_object
from p2p.framing import read_frame
from p2p.network.discovery import decode as decode_peer_sample
from p2p.weather.ask import read_answer, read_request

CORPUS = Path(__file__).resolve().parents[2] / "tests" / "fuzz" / "corpus"
#: The issuer a weather answer is read for: the seeds' signer (``bench.fuzz.seeds.SIGNER``).
WEATHER_ISSUER = Identity.from_seed(b"\x07" * 32).public_key
HANG_S = 5.0  # one input: longer is a hang (the slowest door, a restore into SQLite, takes ~50 ms)


@dataclass(frozen=True)
class Door:
    name: str
    open: Callable[[bytes], object]
    shape: str  # how ``bench.fuzz.mutate`` bends its seeds: json, jsonl, msgpack, text
    typed: tuple[type[BaseException], ...] = (BitterbotError,)

    def seeds(self) -> tuple[bytes, ...]:
        """The door's corpus: its valid seeds and the inputs that once crashed it."""
        folder = CORPUS / self.name
        return tuple(p.read_bytes() for p in sorted(folder.iterdir())) if folder.is_dir() else ()


class Crash(AssertionError):
    """A door answered an input with an untyped exception or took longer than ``HANG_S``."""

    def __init__(self, message: str, data: bytes) -> None:
        super().__init__(message)
        self.data = data


def knock(door: Door, data: bytes, *, hang_s: float | None = HANG_S) -> str:
    """Run ``door`` on ``data``: 'ok', or the name of the typed error it answered; ``Crash`` otherwise.
    ``hang_s``: an input taking longer is a hang (the campaign's rule); ``None`` in the suite, where a
    time is no assertion (a loaded machine, or tracemalloc, made a 2 ms input take 15 s in CI) and
    pytest's own timeout bounds a real hang."""
    started = time.perf_counter()
    try:
        door.open(data)
        outcome = "ok"
    except door.typed as exc:
        outcome = type(exc).__name__
    except Exception as exc:  # the finding itself: an untyped exception is what a fuzzer looks for
        raise Crash(f"{door.name}: {type(exc).__name__}: {str(exc)[:300]} on {data[:120]!r}", data) from exc
    took = time.perf_counter() - started
    if hang_s is not None and took > hang_s:
        raise Crash(f"{door.name}: took {took:.1f} s (more than {hang_s} s) on {data[:120]!r}", data)
    return outcome


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")  # the capture reader decodes files this way


def _transcript(fmt: ConversationFormat | None) -> Callable[[bytes], object]:
    return lambda data: read_conversations(_text(data), fmt, session="fuzz")


class _Files:
    """A temp folder the file doors write their input into, and the store a restore writes to."""

    def __init__(self) -> None:
        self._dir = tempfile.TemporaryDirectory(prefix="bitterbot-fuzz-")
        self.root = Path(self._dir.name)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._store: IntakeStore | None = None

    def file(self, name: str, data: bytes) -> Path:
        path = self.root / name
        path.write_bytes(data)
        return path

    def foreign(self, kind: str | None) -> Callable[[bytes], object]:
        return lambda data: read_foreign(self.file("export.json", data), kind)

    def vault(self, data: bytes) -> object:
        vault = self.root / "vault"
        (vault / ".obsidian").mkdir(parents=True, exist_ok=True)
        (vault / "note.md").write_bytes(data)
        (vault / "other.md").write_bytes(b"# Other\nlinks back to [[note]]\n")
        return read_foreign(vault, "obsidian")

    def restore(self, data: bytes) -> object:
        """The export restored into one store kept across inputs; its own signer's key trusted (as
        a node trusts its own exports), so a seed takes the trusted path and a bent one the demoted."""
        if self._loop is None:
            self._loop = asyncio.new_event_loop()
            self._store = self._loop.run_until_complete(IntakeStore.open(self.root / "m.db", HashingEmbedder()))
        assert self._store is not None
        first = data.split(b"\n", 1)[0]
        try:
            signer = bytes.fromhex(json_text.loads(first).get("signer") or "")
        except (ValueError, AttributeError, TypeError):  # no header naming a signer: nothing is trusted
            signer = b""
        path = self.file("export.jsonl", data)
        return self._loop.run_until_complete(restore_export(self._store, path, trusted=frozenset({signer})))

    def config(self, data: bytes) -> object:
        return load_config(self.file("bitterbot.toml", data), {})

    def close(self) -> None:
        if self._loop is not None:
            if self._store is not None:
                self._loop.run_until_complete(self._store.close())
            self._loop.close()
        self._dir.cleanup()


def _records(data: bytes) -> object:
    """The file's signature check, then each record line as ``restore`` reads it: the header
    checked, the signature line passed over, any other line parsed as a record."""
    check_signature(io.BytesIO(data), frozenset())
    for line in data.splitlines():
        try:
            doc = json_text.loads(line)
        except ValueError:  # restore counts the line as damaged
            continue
        if is_header(doc):
            check_header(doc)
        elif not is_signature(doc):
            parse_record(doc)
    return None


def _gossip(kind: Any) -> Callable[[bytes], object]:
    def parse(body: bytes) -> object:
        return kind.parse(Envelope(ENVELOPE_VERSION, kind.name, b"\x01" * 32, 0, b"\x00" * 16, body, b"\x00" * 64))

    return parse


def _market(parse: Callable[[dict[str, Any]], object]) -> Callable[[bytes], object]:
    def opened(body: bytes) -> object:
        envelope = Envelope(ENVELOPE_VERSION, "market.x", b"\x01" * 32, 0, b"\x00" * 16, body, b"\x00" * 64)
        return parse(envelope.body_map())

    return opened


class _Stream:
    def __init__(self, data: bytes) -> None:
        self._data = io.BytesIO(data)

    async def read(self, n: int) -> bytes:
        return self._data.read(n)


def _frame(data: bytes) -> object:
    return asyncio.run(read_frame(_Stream(data)))


def _request(data: bytes) -> object:
    """``<command name>\\n<JSON body>``: the body as the API reads it, then the command's request."""
    name, _, body = data.partition(b"\n")
    args = json_object(body, "the request body")
    found = COMMANDS.get(name.decode("utf-8", errors="replace"))
    return found.parse(args) if found is not None else None


def gossip_kinds() -> list[Any]:
    kinds = every_kind()
    return [kinds.kind(name) for topic in kinds.topics for name in sorted(kinds.names_on(topic))]


@contextmanager
def opened_doors() -> Iterator[list[Door]]:
    """Every door, with the temp folder and store the file doors use (removed on leaving)."""
    files = _Files()
    group_files = GroupFiles()
    doors = [
        Door("transcript-detect", lambda data: detect(_text(data)), "json"),
        Door("transcript-any", _transcript(None), "json"),
        *(Door(f"transcript-{fmt.value}", _transcript(fmt), "jsonl" if "l" in fmt.value else "json")
          for fmt in ConversationFormat),
        *(Door(f"import-{kind}", files.foreign(kind), "json") for kind in ("mem0", "letta", "chatgpt")),
        Door("import-any", files.foreign(None), "json"),
        Door("import-obsidian", files.vault, "text"),
        Door("export-records", _records, "jsonl"),
        Door("export-restore", files.restore, "jsonl"),
        Door("envelope", lambda data: verify_signature(decode_envelope(data)), "msgpack"),
        *(Door(f"gossip-{kind.name}", _gossip(kind), "msgpack") for kind in gossip_kinds()),
        Door("market-quote-request", _market(protocol.parse_quote_request), "msgpack"),
        Door("market-quote", _market(protocol.parse_quote), "msgpack"),
        Door("market-delivery-request", _market(protocol.parse_delivery_request), "msgpack"),
        Door("market-delivery", _market(protocol.parse_delivery), "msgpack"),
        Door("stream-frame", _frame, "text", (BitterbotError, ConnectionError)),
        Door("peer-sample", lambda data: decode_peer_sample(data, 0), "json"),
        Door("weather-request", read_request, "text"),
        Door("weather-answer", lambda data: read_answer(data, WEATHER_ISSUER), "msgpack"),
        Door("api-request", _request, "jsonl", (BitterbotError, ValidationError)),
        Door("config-toml", files.config, "text"),
        *(Door(name, door, shape) for name, door, shape in device_doors(group_files)),
    ]  # fmt: skip
    try:
        yield doors
    finally:
        files.close()
        group_files.close()
