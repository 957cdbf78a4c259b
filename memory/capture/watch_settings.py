"""The ``[capture]`` keys of continuous capture (``memory.capture.watch``), in a module of their own:
``node.config`` reads them without loading the capture and the store."""

from __future__ import annotations

from pydantic import Field

from ground.settings import Section


class WatchSettings(Section):
    """The ``[capture]`` keys that say which folders to follow, how often and how much to read."""

    # Folders of transcripts the daemon follows and captures as they are written (memory.capture.watch),
    # e.g. ["~/.claude/projects"]: *.jsonl and *.json files under them, at any depth.
    watch: list[str] = Field(default_factory=list, max_length=32)
    """Folders of conversation transcripts the daemon follows, capturing new messages as they are
    written (a Claude Code session, OpenAI chat JSON, a ChatGPT export, JSONL messages; *.jsonl and
    *.json at any depth), e.g. ["~/.claude/projects"]. Empty: nothing is followed. At most 32.
    """
    poll_s: float = Field(default=5.0, ge=0.2, le=3600)
    """Seconds between two looks at the folders. [0.2, 3600]."""
    max_file_mb: int = Field(default=50, ge=1, le=10_000)
    """The most read of a transcript in one look (MB): a file of lines is read on from its watermark
    over the next looks; a JSON file larger than this is reported in `status` and skipped. [1, 10000].
    """
    # The longest line of a JSONL input read (a watched transcript, a JSONL import, an export restored):
    # a longer one is read past in blocks, never held whole, and skipped and counted like a damaged line.
    max_line_mb: int = Field(default=8, ge=1, le=1_000)
    """The longest JSONL line read (MB), in a watched transcript, a JSONL import or an export restored: a
    longer one is read past, never held whole, and skipped and counted like a damaged line. [1, 1000].
    """

    @property
    def max_line_bytes(self) -> int:
        return self.max_line_mb * 1_000_000
