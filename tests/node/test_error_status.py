"""One table decides what each error means to a client: its HTTP status and the CLI's exit code."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ValidationError

from crypto.errors import SealedDataTampered
from ground.errors import BitterbotError, Invalid, NotFound
from marketplace.errors import ChainUnreachable, InsufficientFunds, MarketUnavailable, PurchaseError, WalletError
from memory.errors import CrystalNotFound, ExportRefused, InvalidQuery, StoreError
from node.error_status import UNEXPECTED, exit_code, http_status, message_of, refusal_of
from node.errors import EXIT_FAILURE, EXIT_USAGE, PartNotRunning
from p2p.errors import HostNotRunning, PeerUnreachable, RequestFailed, RequestTimedOut, SchemaError


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
        (PeerUnreachable("cannot reach p1"), 502),  # a builtin ConnectionError before
        (RequestTimedOut("p1 did not answer"), 504),  # a builtin TimeoutError before
        (InsufficientFunds("balance"), 400),
        (PurchaseError("quote expired"), 400),  # was a 500 with a traceback where not caught
        (WalletError("no wallet"), 400),
        (SchemaError("bad tags"), 400),
        (InvalidQuery("empty query"), 400),
        (StoreError("the database is closed"), 400),
        (SealedDataTampered("altered"), 400),
        (NotFound("no live listing"), 404),
        (Invalid("bad"), 400),
        (RuntimeError("a bug of ours"), UNEXPECTED),
        # a builtin is a bug of ours whatever its class says (issue 50: a KeyError answered 404)
        (KeyError("crystal_id"), UNEXPECTED),
        (LookupError("no live listing"), UNEXPECTED),
        (ValueError("bad"), UNEXPECTED),
        (TypeError("bad"), UNEXPECTED),
        (ConnectionError("down"), UNEXPECTED),
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


def test_a_bug_answers_500_with_an_id_and_never_its_own_words() -> None:
    refused = refusal_of(KeyError("/home/person/.aws/credentials"), "memory.show")
    assert refused.status == UNEXPECTED
    assert "credentials" not in refused.message
    assert len(refused.error_id) == 12 and refused.error_id in refused.message
    assert refusal_of(KeyError("x"), "memory.show").error_id != refused.error_id  # one id per failure


def _rooted_only_in_builtins() -> list[str]:
    """Classes of our packages whose every base is a builtin exception (``class X(ValueError)``):
    private ones (a ``_RollBack`` that never leaves its function) excepted."""
    import ast
    import builtins
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    found = []
    for package in ("ground", "crypto", "memory", "p2p", "marketplace", "node"):
        for file in (root / package).rglob("*.py"):
            for node in ast.walk(ast.parse(file.read_text())):
                if not isinstance(node, ast.ClassDef) or node.name.startswith("_") or not node.bases:
                    continue
                names = [b.id for b in node.bases if isinstance(b, ast.Name)]
                builtin = [n for n in names if isinstance(getattr(builtins, n, None), type)]
                if (
                    builtin
                    and len(builtin) == len(node.bases)
                    and issubclass(getattr(builtins, builtin[0]), BaseException)
                ):
                    found.append(f"{file.relative_to(root)}:{node.name}")
    return found


def test_every_error_class_of_ours_roots_in_the_projects_tree() -> None:
    assert _rooted_only_in_builtins() == ["ground/errors.py:BitterbotError"]  # the root itself
    from memory.errors import InvalidRequest
    from memory.working_memory.scratch import ScratchError
    from node.clients.base import ControlError
    from node.ops.backup import BackupError

    for kind in (ScratchError, ControlError, InvalidRequest, BackupError):
        assert issubclass(kind, BitterbotError), kind
    assert http_status(ScratchError("empty note")) == 400
    assert http_status(InvalidRequest("limit")) == 400
