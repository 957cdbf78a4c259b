"""``python -m memory.cognition.typing_worker``: the typer of a bulk import, in its own process.

Reads JSON lines on stdin: first the corrections (``[[text, type], ...]``), then one batch of texts
per line; writes one line of ``[[type, confidence], ...]`` per batch. Exits at the end of its input.
See ``memory.cognition.bulk_typing``.
"""

from __future__ import annotations

import json
import sys

from memory.cognition.typer import Typer
from memory.model import SemanticType


def main() -> None:
    lines = iter(sys.stdin.buffer)
    first = next(lines, None)
    if first is None:
        return
    typer = Typer([(str(text), SemanticType(stype)) for text, stype in json.loads(first)])
    for line in lines:
        texts = json.loads(line)
        guesses = typer.classify_texts([str(t) for t in texts])
        sys.stdout.buffer.write(json.dumps([[g.semantic_type.value, g.confidence] for g in guesses]).encode() + b"\n")
        sys.stdout.buffer.flush()


if __name__ == "__main__":
    main()
