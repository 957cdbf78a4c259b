"""Structured logging: an event name plus fields, as text for people or JSON for machines.

Fields whose names suggest secrets are redacted, so a careless call cannot put
a key or token in a log. Memory text belongs at debug level only.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from collections.abc import Mapping
from typing import Any, TextIO

_SECRET_HINTS = ("secret", "passphrase", "password", "seed", "private", "token")
_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}


def _redact(fields: dict[str, Any]) -> dict[str, Any]:
    return {k: "[redacted]" if any(h in k.lower() for h in _SECRET_HINTS) else v for k, v in fields.items()}


def _timestamp(record: logging.LogRecord) -> str:
    ms = int(record.msecs)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{ms:03d}Z"


class TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        fields = _redact(getattr(record, "fields", {}))
        tail = " ".join(f"{k}={_text_value(v)}" for k, v in fields.items())
        line = f"{_timestamp(record)} {record.levelname.lower():<7} {record.name:<14} {record.getMessage()}"
        line = f"{line} {tail}" if tail else line
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        doc: dict[str, Any] = {
            "ts": _timestamp(record),
            "level": record.levelname.lower(),
            "logger": record.name,
            "event": record.getMessage(),
        }
        doc.update(_redact(getattr(record, "fields", {})))
        if record.exc_info:
            doc["exception"] = self.formatException(record.exc_info)
        return json.dumps(doc, default=str)


def _text_value(value: Any) -> str:
    text = str(value)
    return json.dumps(text) if (" " in text or not text) else text


def configure_logging(
    level: str = "info", fmt: str = "text", stream: TextIO | None = None, parts: Mapping[str, str] | None = None
) -> None:
    """Route every logger (ours and libraries') to one handler on stderr. ``parts`` sets a level per
    logger prefix (``{"node.p2p": "debug", "memory": "warning"}``) over the overall one."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    # on the handler, not on each library logger: a logger's filter misses the records of loggers
    # made after the routing, the handler's sees every record that reaches the log
    handler.addFilter(ShutdownNoise(level == "debug"))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(_LEVELS[level])
    route_library_logs(debug=level == "debug")
    for name, part_level in (parts or {}).items():
        logging.getLogger(name).setLevel(_LEVELS[part_level])


class ShutdownNoise(logging.Filter):
    """py-libp2p warns, with a traceback, when a connection finishes its handshake while the host is
    being closed ("Cannot schedule task after service has stopped"). Nothing is lost: the connection
    goes with the host. Seen in a daemon's log at SIGTERM (CI at a18d4dc), where a traceback reads as a
    failure; such a record is kept only when debugging, as a line without the traceback."""

    def __init__(self, debug: bool) -> None:
        super().__init__()
        self._debug = debug

    def filter(self, record: logging.LogRecord) -> bool:
        if not record.name.startswith("libp2p"):
            return True
        # the library's swarm formats the traceback into the message, the error among its arguments
        # ("[ADDCONN_FAIL] add_conn failed for peer %s: %r\n%s"); elsewhere it may pass exc_info
        args = record.args if isinstance(record.args, tuple) else ()
        errors = [record.exc_info[1]] if record.exc_info else [a for a in args if isinstance(a, BaseException)]
        if not any(type(e).__name__ == "LifecycleError" and "after service has stopped" in str(e) for e in errors):
            return True
        first_line = record.getMessage().splitlines()[0]
        record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        record.msg, record.args = f"{first_line} (while the host stops)", None
        record.exc_info, record.exc_text = None, None
        return self._debug


def route_library_logs(*, debug: bool) -> None:
    """py-libp2p turns propagation off when it is imported and is chatty at info (dials, identify):
    route it to our handler, warnings and above unless we debug. Call again after importing it."""
    level = logging.DEBUG if debug else logging.WARNING
    libp2p = logging.getLogger("libp2p")
    libp2p.propagate = True
    libp2p.setLevel(level)
    for name in list(logging.root.manager.loggerDict):
        if name.startswith("libp2p."):  # some of its modules set a level of their own
            logging.getLogger(name).setLevel(level)
