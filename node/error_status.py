"""What each error a command may raise means to a client: one table, read by the HTTP API, the
control socket and the CLI (httpx keeps its exceptions and their mapping in one place the same way).

Most specific first: the first class an error is an instance of decides. Only our own errors are in
the table (and pydantic's refusal of a request): a builtin exception (a ``KeyError``, a ``TypeError``)
is a bug of ours, whatever its class says, and answers 500 with an id that its log line carries,
never its message (a ``KeyError`` once answered 404 with the key as its words).

Exit codes: every refusal exits 2, since the person can act on each (fix the input, enable or start
a part, bring the chain back); a bug of ours exits 1.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from pydantic import ValidationError

from crypto.errors import CryptoError
from ground.authority import NotAllowed
from ground.errors import BitterbotError, Invalid, NotFound, Unavailable
from marketplace.errors import ChainUnreachable, ListingNotFound, MarketError
from memory.errors import (
    CrystalNotFound,
    DeviceNotFound,
    EditRefused,
    EntityNotFound,
    ExportRefused,
    MemoryError_,
)
from node.errors import EXIT_FAILURE, EXIT_USAGE, PartOff, UnknownCommand
from p2p.errors import P2PError, RequestFailed, RequestTimedOut

UNEXPECTED = 500

HTTP_STATUS: tuple[tuple[type[BaseException], int], ...] = (
    (Unavailable, 503),  # a part that is off, a host not started, a market with no chain: not the request's fault
    (CrystalNotFound, 404),
    (DeviceNotFound, 404),  # before MemoryError_: no device of the group has that id
    (EntityNotFound, 404),  # before MemoryError_: memory names nobody by that name
    (ExportRefused, 403),
    (NotAllowed, 403),
    (EditRefused, 409),  # the crystal's state forbids it (outdated, held): the message names what to edit instead
    (ChainUnreachable, 502),  # before MarketError: the chain is down, not the request wrong
    (ListingNotFound, 404),  # before MarketError: "no live listing of …"
    (RequestFailed, 502),  # before P2PError: the peer could not be reached or the stream broke
    (RequestTimedOut, 504),  # before P2PError: the peer did not answer in time
    (ValidationError, 400),
    (MemoryError_, 400),  # InvalidQuery, and what else the store refuses
    (MarketError, 400),  # a purchase refused, a reverted transaction, a wallet problem
    (P2PError, 400),
    (CryptoError, 400),
    (NotFound, 404),  # "no live listing of …"
    (Invalid, 400),  # every package's wrong value
    (BitterbotError, 400),  # a refusal of ours no row above names
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
    message names only ``error_id``, and the server logs the error with its traceback and that id."""

    status: int
    message: str
    unavailable: bool
    error_id: str = ""


def refusal_of(error: BaseException, command: str) -> Refusal:
    status = http_status(error)
    if status == UNEXPECTED:
        error_id = secrets.token_hex(6)
        message = f"{command} failed with an internal error ({error_id}); the node's log has it under that id"
        return Refusal(status, message, unavailable=False, error_id=error_id)
    return Refusal(status, message_of(error), unavailable=is_unavailable(error))
