"""Where in a text a secret sits, and what kind of secret it is."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Span:
    start: int
    end: int
    kind: str  # "password", "pin", "key", "account", "card", "seed", "recovery", "credential-url", …


def merged(spans: list[Span]) -> list[Span]:
    """Overlapping spans joined (the first one's kind kept), in text order."""
    out: list[Span] = []
    for span in sorted(spans, key=lambda s: (s.start, -s.end)):
        if out and span.start < out[-1].end:
            last = out[-1]
            out[-1] = Span(last.start, max(last.end, span.end), last.kind)
        else:
            out.append(span)
    return out


def replaced(text: str, spans: list[Span], stand_in: str) -> str:
    """``text`` with each span replaced by ``stand_in``."""
    pieces: list[str] = []
    at = 0
    for span in merged(spans):
        pieces.append(text[at : span.start])
        pieces.append(stand_in)
        at = span.end
    pieces.append(text[at:])
    return "".join(pieces)
