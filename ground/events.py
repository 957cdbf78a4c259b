"""Structured events: ``log.info("node.started", peer_id=...)``, an event name and fields, carried on
the standard ``logging`` record for ``node.logs`` to format (as text or JSON, secrets redacted).
Every package logs this way, so it lives on the ground floor."""

from __future__ import annotations

import logging
from typing import Any


class EventLogger:
    """``log.info("node.started", peer_id=...)``: an event name and fields."""

    def __init__(self, name: str) -> None:
        self._logger = logging.getLogger(name)

    def _log(self, level: int, event: str, exc_info: bool, fields: dict[str, Any]) -> None:
        if self._logger.isEnabledFor(level):
            self._logger.log(level, event, extra={"fields": fields}, exc_info=exc_info)

    def debug(self, event: str, **fields: Any) -> None:
        self._log(logging.DEBUG, event, False, fields)

    def info(self, event: str, **fields: Any) -> None:
        self._log(logging.INFO, event, False, fields)

    def warning(self, event: str, **fields: Any) -> None:
        self._log(logging.WARNING, event, False, fields)

    def error(self, event: str, exc_info: bool = False, **fields: Any) -> None:
        self._log(logging.ERROR, event, exc_info, fields)


def get_logger(name: str) -> EventLogger:
    return EventLogger(name)
