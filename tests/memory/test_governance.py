"""Governance: sensitivity classification, visibility, and the export gate."""

from __future__ import annotations

import pytest

from memory.errors import ExportRefused
from memory.governance.rules import check_exportable, classify_sensitivity
from memory.intake.store import IntakeStore
from memory.model import NewCrystal, Scope, SemanticType, Sensitivity


@pytest.mark.parametrize(
    "text",
    [
        "my password is correct-horse-battery",
        "API_KEY=sk-proj-abcdefghijklmnop1234",
        "aws AKIAIOSFODNN7EXAMPLE in the config",
        "-----BEGIN OPENSSH PRIVATE KEY-----",
        "Authorization: Bearer abcdefghijklmnopqrstuvwxyz123",
        "card 4111 1111 1111 1111 exp 12/29",
        "wallet key 0x" + "ab" * 32,
        "token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        # account numbers are secrets too (issue 27): an IBAN whose checksum holds, an SSN named as one
        "IBAN DE89 3704 0044 0532 0130 00",
        "SSN 123-45-6789",
    ],
)
def test_secrets_are_confidential(text: str) -> None:
    assert classify_sensitivity(text) is Sensitivity.CONFIDENTIAL


@pytest.mark.parametrize(
    "text",
    [
        "email me at jo.smith@example.com",
        "call +44 20 7946 0958 after six",
        "ring (415) 555-0134",
        "the form wants 123-45-6789 in box 4",
        "Her date of birth is in May",
    ],
)
def test_personal_data_is_personal(text: str) -> None:
    assert classify_sensitivity(text) is Sensitivity.PERSONAL


@pytest.mark.parametrize(
    "text",
    [
        "The meeting moved to 3pm",
        "Use a password manager for every account",
        "order 1234 5678 shipped",
        "version 2.14.3 fixed it",
        "between 2019 and 2023 sales grew 40%",
    ],
)
def test_ordinary_text_is_normal(text: str) -> None:
    assert classify_sensitivity(text) is Sensitivity.NORMAL


@pytest.mark.parametrize(
    "stype",
    [SemanticType.EPISODE, SemanticType.PREFERENCE, SemanticType.RELATIONSHIP, SemanticType.FACT, SemanticType.GOAL],
)
async def test_memory_crystals_can_never_be_exported(store: IntakeStore, stype: SemanticType) -> None:
    crystal = (await store.remember(NewCrystal(f"a {stype} of mine", semantic_type=stype, scope=Scope.PUBLIC))).crystal
    with pytest.raises(ExportRefused, match="private memories"):
        check_exportable(crystal, store.now_ms())


async def test_only_clean_live_skills_export(store: IntakeStore) -> None:
    skill = (
        await store.remember(
            NewCrystal("How to bisect a regression with git", semantic_type=SemanticType.SKILL, scope=Scope.PUBLIC)
        )
    ).crystal
    check_exportable(skill, store.now_ms())
    leaky = (
        await store.remember(NewCrystal("Login with password: swordfish99", semantic_type=SemanticType.SKILL))
    ).crystal
    with pytest.raises(ExportRefused, match="confidential"):
        check_exportable(leaky, store.now_ms())
    general = (await store.remember(NewCrystal("just a note", semantic_type=SemanticType.GENERAL))).crystal
    with pytest.raises(ExportRefused, match="only skills"):
        check_exportable(general, store.now_ms())
    private = (await store.remember(NewCrystal("Rebase onto main with git", semantic_type=SemanticType.SKILL))).crystal
    with pytest.raises(ExportRefused, match="private"):  # issue 13: `skills share` gossiped private skills
        check_exportable(private, store.now_ms())
    forgotten = await store.forget(skill.id)
    with pytest.raises(ExportRefused, match="expired"):
        check_exportable(forgotten, store.now_ms())
