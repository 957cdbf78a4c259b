"""``python -m memory.cognition.typing_worker``: the typer of a bulk import, in its own process.

Reads JSON lines on stdin: first the corrections (``[[text, type], ...]``), then one batch per line,
``{"texts": [...], "untyped": [true, ...]}``; writes one line per batch: each text's content hash and
sensitivity, and for the untyped ones ``[type, confidence, source]`` (a correction, else the model).
Exits at the end of its input. See ``memory.cognition.bulk_typing``.
"""

from __future__ import annotations

import json
import signal
import sys

from memory.cognition.typer import Typer
from memory.model import SemanticType


def main() -> None:
    # Ctrl-C reaches the whole process group; the importer that started this worker decides when it
    # ends (it closes our stdin). A traceback of ours on the person's terminal said nothing useful.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    lines = iter(sys.stdin.buffer)
    first = next(lines, None)
    if first is None:
        return
    typer = Typer([(str(text), SemanticType(stype)) for text, stype in json.loads(first)])
    for line in lines:
        request = json.loads(line)
        texts = [str(t) for t in request["texts"]]
        chat = [bool(c) for c in request.get("chat", [False] * len(texts))]
        answer = typer.classify_batch(texts, [bool(u) for u in request["untyped"]], chat)
        sys.stdout.buffer.write(json.dumps(answer).encode() + b"\n")
        sys.stdout.buffer.flush()


if __name__ == "__main__":
    main()
