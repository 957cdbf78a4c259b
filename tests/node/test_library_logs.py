"""py-libp2p's log records as the daemon routes them (node.logs.route_library_logs)."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from node.logs import route_library_logs


class Kept(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def kept() -> Iterator[Kept]:
    import libp2p  # noqa: F401 - its loggers exist once it is imported, as in the daemon

    handler = Kept()
    logging.getLogger().addHandler(handler)
    try:
        yield handler
    finally:
        logging.getLogger().removeHandler(handler)
        route_library_logs(debug=False)


def _connection_closing_with_the_host() -> None:
    from libp2p.tools.anyio_service.exceptions import LifecycleError

    error = LifecycleError("Cannot schedule task after service has stopped")
    logging.getLogger("libp2p.network.swarm").warning("[ADDCONN_FAIL] add_conn failed for peer P: %r", error,
                                                      exc_info=error)  # fmt: skip


def test_a_connection_that_ends_with_the_host_leaves_no_traceback_and_real_warnings_stay(kept: Kept) -> None:
    """Found at a daemon's SIGTERM (CI at a18d4dc): the library's warning carried a traceback."""
    route_library_logs(debug=False)
    _connection_closing_with_the_host()
    logging.getLogger("libp2p.network.swarm").warning("a warning that matters")
    assert [r.getMessage() for r in kept.records] == ["a warning that matters"]


def test_when_debugging_it_is_a_debug_line_without_the_traceback(kept: Kept) -> None:
    route_library_logs(debug=True)
    _connection_closing_with_the_host()
    (record,) = kept.records
    assert record.levelno == logging.DEBUG and record.exc_info is None
    assert "while the host stops" in record.getMessage()
