"""py-libp2p's log records as the daemon routes them (node.logs.route_library_logs) to its handler,
which filters its shutdown noise (node.logs.ShutdownNoise, put there by configure_logging)."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from node.logs import ShutdownNoise, route_library_logs


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


def _connection_closing_with_the_host(logger: str = "libp2p.network.swarm") -> None:
    """As py-libp2p 0.8.1's swarm logs it: the traceback formatted into the message, the error among
    the arguments, no exc_info (a local run found it in a daemon's log after a filter that looked
    only at exc_info); and the same with exc_info, as another of its modules might."""
    import traceback

    from libp2p.tools.anyio_service.exceptions import LifecycleError

    try:
        raise LifecycleError("Cannot schedule task after service has stopped")
    except LifecycleError as error:
        text = "".join(traceback.format_exception(type(error), error, error.__traceback__))
        logging.getLogger(logger).warning("[ADDCONN_FAIL] add_conn failed for peer %s: %r\n%s", "P", error, text)
        logging.getLogger(logger).warning("[ADDCONN_FAIL] add_conn failed for peer P: %r", error, exc_info=error)


def test_a_connection_that_ends_with_the_host_leaves_no_traceback_and_real_warnings_stay(kept: Kept) -> None:
    """Found at a daemon's SIGTERM (CI at a18d4dc): the library's warning carried a traceback."""
    route_library_logs(debug=False)
    kept.addFilter(ShutdownNoise(debug=False))  # as configure_logging puts it on the daemon's handler
    _connection_closing_with_the_host()
    logging.getLogger("libp2p.network.swarm").warning("a warning that matters")
    assert [r.getMessage() for r in kept.records] == ["a warning that matters"]


def test_when_debugging_it_is_a_debug_line_without_the_traceback(kept: Kept) -> None:
    route_library_logs(debug=True)
    kept.addFilter(ShutdownNoise(debug=True))
    _connection_closing_with_the_host()
    assert len(kept.records) == 2
    for record in kept.records:
        assert record.levelno == logging.DEBUG and record.exc_info is None
        assert "while the host stops" in record.getMessage() and "Traceback" not in record.getMessage()


def test_a_library_logger_made_after_the_routing_leaves_no_traceback_in_the_daemons_log() -> None:
    """A local run after f602220, which filtered on each library logger: the record of a logger made
    later still reached a daemon's log at SIGTERM. The daemon's handler filters, so every logger is
    covered."""
    import io

    from node.logs import configure_logging

    out = io.StringIO()
    root = logging.getLogger()
    before = list(root.handlers)
    try:
        configure_logging("info", stream=out)
        late = logging.getLogger("libp2p.made.after.the.routing")
        _connection_closing_with_the_host(late.name)
        late.warning("a warning that matters")
        logging.getLogger("node.test").warning("ours, with its traceback", exc_info=ValueError("kept"))
    finally:
        for handler in list(root.handlers):
            root.removeHandler(handler)
        for handler in before:
            root.addHandler(handler)
        route_library_logs(debug=False)
    text = out.getvalue()
    assert "ADDCONN_FAIL" not in text and "a warning that matters" in text
    assert "ValueError: kept" in text  # a traceback of our own is never dropped
