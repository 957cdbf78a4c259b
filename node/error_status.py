"""What each error a command may raise means to a client: one table, read by the HTTP API, the
control socket and the CLI (httpx keeps its exceptions and their mapping in one place the same way).

Most specific first: the first class an error is an instance of decides. An error not in the table
is a bug of ours: 500, logged with its traceback. Exit codes: every refusal exits 2, since the
person can act on each (fix the input, enable or start a part, bring the chain back); a bug of
ours exits 1.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import ValidationError

from crypto.errors import CryptoError
from ground.authority import NotAllowed
from ground.errors import Unavailable
from marketplace.errors import ChainUnreachable, MarketError
from memory.errors import CrystalNotFound, EditRefused, ExportRefused, MemoryError_
from node.errors import EXIT_FAILURE, EXIT_USAGE, PartOff, UnknownCommand
from p2p.errors import P2PError, RequestFailed

UNEXPECTED = 500

HTTP_STATUS: tuple[tuple[type[BaseException], int], ...] = (
    (Unavailable, 503),  # a part that is off, a host not started, a market with no chain: not the request's fault
    (CrystalNotFound, 404),
    (ExportRefused, 403),
    (NotAllowed, 403),
    (EditRefused, 409),  # the crystal's state forbids it (outdated, held): the message names what to edit instead
    (ChainUnreachable, 502),  # before MarketError: the chain is down, not the request wrong
    (RequestFailed, 502),  # before P2PError: the peer did not answer
    (ValidationError, 400),
    (MemoryError_, 400),  # InvalidQuery, and what else the store refuses
    (MarketError, 400),  # a purchase refused, a reverted transaction, a wallet problem
    (P2PError, 400),
    (CryptoError, 400),
    (LookupError, 404),  # ground.errors.NotFound: "no live listing of …"
    (ValueError, 400),
    (TypeError, 400),
    (ConnectionError, 502),
    (TimeoutError, 504),
)


def http_status(error: BaseException) -> int:
    """The HTTP status for ``error``; ``UNEXPECTED`` (500) when it is none of ours."""
    return next((status for kind, status in HTTP_STATUS if isinstance(error, kind)), UNEXPECTED)


def exit_code(status: int) -> int:
    """The CLI's exit code for a refusal with HTTP ``status``."""
    return EXIT_FAILURE if status == UNEXPECTED else EXIT_USAGE


def message_of(error: BaseException) -> str:
    """What a client is told: the error's own words (a KeyError's key without the quotes repr adds;
    for a refused request, the first field pydantic refused and why)."""
    if isinstance(error, ValidationError):
        first = error.errors()[0]
        return f"{'.'.join(str(p) for p in first['loc']) or 'body'}: {first['msg']}"
    if isinstance(error, KeyError) and error.args:
        return str(error.args[0])
    return str(error) or type(error).__name__


def is_unavailable(error: BaseException) -> bool:
    """Whether ``error`` says the command's part is not on this node (or the daemon does not know the
    command), so that a client may run it in-process on the files instead."""
    return isinstance(error, PartOff | UnknownCommand)


@dataclass(frozen=True, slots=True)
class Refusal:
    """What a server answers when ``command`` raised: its status, its message, and whether the
    command's part is off here (``unavailable``). ``status == UNEXPECTED`` is a bug of ours: the
    server logs it with its traceback."""

    status: int
    message: str
    unavailable: bool


def refusal_of(error: BaseException, command: str) -> Refusal:
    status = http_status(error)
    if status == UNEXPECTED:
        return Refusal(status, f"{command} failed: {error}", unavailable=False)
    return Refusal(status, message_of(error), unavailable=is_unavailable(error))
