"""Claude Code sessions written the way an agent writes them, into a watched folder: several turns
appended at a time, now and then a damaged line, a rotation (the file renamed inside the folder, a
new session started under its name) or a truncation (the file emptied and written again with the
turns it held plus new ones). Every turn's token is in ``written``; a damaged line's in ``damaged``.

Only turns that capture keeps carry a token to count (``memory.capture.extract``): the person's
(``user``) and the assistant's statements, never small talk or an echo. A damaged line is never one
of a file's first five lines, which tell the watcher the file's format (``formats.detect``).
"""

from __future__ import annotations

import json
import random
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from bench.soak.tokens import DAMAGED, TRANSCRIPT, Tokens, agent_says, person_says

#: A file is the first five lines' format: no damaged line among them.
HEAD_LINES = 5


@dataclass
class Session:
    path: Path
    session_id: str
    good_lines: list[str] = field(default_factory=list)  # what a truncation writes back
    lines: int = 0


class TranscriptWriter:
    """Appends to ``files`` sessions under ``folder``; every choice is drawn from ``rng``."""

    def __init__(self, folder: Path, rng: random.Random, files: int = 3) -> None:
        self.folder = folder
        self.rng = rng
        self.tokens = Tokens(TRANSCRIPT, rng)
        self.bad_tokens = Tokens(DAMAGED, rng)
        self.written: set[str] = set()
        self.damaged: set[str] = set()
        self.counts = {"messages": 0, "chunks": 0, "damaged_lines": 0, "rotations": 0, "truncations": 0}
        self._clock_ms = 1_780_000_000_000  # 2026: turns a minute apart, in the past of any run
        self.sessions = [self._new_session(folder / f"project-{n}") for n in range(files)]

    def _new_session(self, project: Path) -> Session:
        project.mkdir(parents=True, exist_ok=True)
        session_id = str(uuid.UUID(int=self.rng.getrandbits(128)))
        return Session(project / f"{session_id}.jsonl", session_id)

    def _line(self, session: Session, role: str) -> str:
        token = self.tokens.next()
        text = person_says(token, self.rng) if role == "user" else agent_says(token, self.rng)
        self._clock_ms += 60_000
        when = datetime.fromtimestamp(self._clock_ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        self.written.add(token)
        self.counts["messages"] += 1
        entry = {
            "type": role,
            "sessionId": session.session_id,
            "uuid": str(uuid.UUID(int=self.rng.getrandbits(128))),
            "timestamp": when,
            "message": {"role": role, "content": text},
        }
        return json.dumps(entry) + "\n"

    def _damaged_line(self, session: Session) -> str:
        token = self.bad_tokens.next()
        self.damaged.add(token)
        self.counts["damaged_lines"] += 1
        said = person_says(token, self.rng)
        shapes = (
            '{"type": "user", "sessionId": "' + session.session_id + '", "message": {"content": "' + said,  # cut off
            json.dumps(["user", said]),  # JSON, not an object
            json.dumps(said),  # a bare string
            json.dumps({"type": "user", "sessionId": session.session_id, "message": said}),  # message not an object
            json.dumps({"type": "note", "sessionId": session.session_id, "message": {"role": "user", "content": said}}),
            "\x00\x00" + said + "\xff",  # binary junk around words
        )
        return self.rng.choice(shapes) + "\n"

    def step(self) -> str:
        """One move: mostly a chunk of turns appended; sometimes a rotation or truncation. Says which."""
        session = self.rng.choice(self.sessions)
        roll = self.rng.random()
        if roll < 0.04 and session.lines > HEAD_LINES:
            self._rotate(session)
            return "rotation"
        if roll < 0.08 and session.lines > HEAD_LINES:
            self._truncate(session)
            return "truncation"
        self._append(session)
        return "chunk"

    def _chunk(self, session: Session) -> str:
        out = []
        for _ in range(self.rng.randint(2, 7)):
            if session.lines >= HEAD_LINES and self.rng.random() < 0.08:
                out.append(self._damaged_line(session))
            else:
                line = self._line(session, self.rng.choice(("user", "user", "assistant")))
                session.good_lines.append(line)
                out.append(line)
            session.lines += 1
        return "".join(out)

    def _append(self, session: Session) -> None:
        text = self._chunk(session)
        with session.path.open("a", encoding="utf-8") as handle:
            handle.write(text)  # one write: a real agent appends whole lines
        self.counts["chunks"] += 1

    def _rotate(self, session: Session) -> None:
        """Renamed inside the watched folder (still read there), and a new session under a new name."""
        rotated = session.path.with_name(f"{session.path.stem}.{self.counts['rotations']}.jsonl")
        session.path.rename(rotated)
        index = self.sessions.index(session)
        self.sessions[index] = self._new_session(session.path.parent)
        self.counts["rotations"] += 1

    def _truncate(self, session: Session) -> None:
        """Emptied, then written again: the turns it held (damaged lines dropped) and new ones."""
        with session.path.open("w", encoding="utf-8") as handle:
            handle.flush()
        session.lines = len(session.good_lines)
        text = "".join(session.good_lines) + self._chunk(session)
        with session.path.open("a", encoding="utf-8") as handle:
            handle.write(text)
        self.counts["truncations"] += 1
