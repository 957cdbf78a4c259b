"""One table decides what each error means to a client: its HTTP status and the CLI's exit code."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ValidationError

from crypto.errors import SealedDataTampered
from marketplace.errors import ChainUnreachable, InsufficientFunds, MarketUnavailable, PurchaseError, WalletError
from memory.errors import CrystalNotFound, ExportRefused, InvalidQuery, StoreError
from node.error_status import UNEXPECTED, exit_code, http_status, message_of
from node.errors import EXIT_FAILURE, EXIT_USAGE, PartNotRunning
from p2p.errors import HostNotRunning, RequestFailed, SchemaError


class _Model(BaseModel):
    limit: int


def _validation_error() -> ValidationError:
    try:
        _Model.model_validate({"limit": "many"})
    except ValidationError as exc:
        return exc
    raise AssertionError("the model accepted a bad limit")


@pytest.mark.parametrize(
    ("error", "status"),
    [
        (PartNotRunning("the memory store is not open"), 503),  # was a ValueError, so a 400
        (HostNotRunning(), 503),
        (MarketUnavailable("the marketplace has no chain"), 503),  # was a ValueError, so a 400
        (CrystalNotFound("c1"), 404),
        (ExportRefused("c1", "it is private"), 403),
        (ChainUnreachable("cannot reach http://x"), 502),  # a ChainError, and still a 502
        (RequestFailed("stream reset"), 502),
        (InsufficientFunds("balance"), 400),
        (PurchaseError("quote expired"), 400),  # was a 500 with a traceback where not caught
        (WalletError("no wallet"), 400),
        (SchemaError("bad tags"), 400),
        (InvalidQuery("empty query"), 400),
        (StoreError("the database is closed"), 400),
        (SealedDataTampered("altered"), 400),
        (LookupError("no live listing"), 404),
        (ValueError("bad"), 400),
        (ConnectionError("down"), 502),
        (RuntimeError("a bug of ours"), UNEXPECTED),
    ],
)
def test_each_error_has_its_status(error: BaseException, status: int) -> None:
    assert http_status(error) == status


def test_a_validation_error_is_bad_input() -> None:
    assert http_status(_validation_error()) == 400


def test_every_refusal_exits_2_and_only_a_bug_of_ours_exits_1() -> None:
    assert {exit_code(s) for s in (400, 403, 404, 502, 503, 504)} == {EXIT_USAGE}
    assert exit_code(UNEXPECTED) == EXIT_FAILURE


def test_a_client_is_told_the_errors_own_words() -> None:
    assert message_of(KeyError("crystal_id")) == "crystal_id"  # not "'crystal_id'"
    assert message_of(CrystalNotFound("c1")) == "no crystal 'c1'"  # quotes of its own are kept
    assert message_of(ValueError()) == "ValueError"
