"""Finding secrets told in words (issue 27): reworded secrets are confidential, look-alikes are not,
and redaction removes the secret and keeps the rest."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
import sqlean

from memory.embedders.hashing import HashingEmbedder
from memory.governance.rules import SECRET_STAND_IN, classify_sensitivity, redacted
from memory.governance.secrets import find_secrets
from memory.intake.store import IntakeStore
from memory.model import NewCrystal, Sensitivity
from memory.storage.schema import SCHEMA_VERSION

DEV_SET = Path(__file__).resolve().parents[2] / "bench" / "data" / "secrets_dev.jsonl"


@pytest.mark.parametrize(
    "text",
    [
        "the staging db pw is hunter2",  # the example: classified normal before
        "hunter2 — that's the staging database password",
        "Kennwort für das Intranet: Sommer2025!",
        "alarm code is 2468, disarm within 30 seconds",
        "account 31926819, sort code 60-16-13",
        "postgresql://admin:Adm1nPg!@10.0.0.5:5432/main",
        "legal winner thank year wave sausage worth useful legal winner thank yellow",
        "STRIPE_SECRET_KEY=sk_test_4eC39HqLyjWDarjtT1zdp7dc",
        "the wifi pass: 4421 / gymrat2025",
        "I use Fjord!Whale#12 for the work VPN",
    ],
)
def test_reworded_secrets_are_confidential(text: str) -> None:
    assert classify_sensitivity(text) is Sensitivity.CONFIDENTIAL


@pytest.mark.parametrize(
    "text",
    [
        # each of these was confidential before: a cue word followed by any four characters
        "The secret is out: we're moving to Lisbon",
        "password: see the team vault",
        "The password is stored in the team vault, ask Ahmed",
        "PASSWORD = getpass.getpass()",
        "tx hash 0x88df016429689c079f3b2f6ad39fa052532c56795b733da78a91ebe6a713944b",
        # and look-alikes that never were
        "The API key for Stripe lives in 1Password under 'Stripe prod'",
        "postgres://user:password@localhost/db is the example in the docs",
        "My PIN got blocked after three wrong tries",
        "the password was leaked in 2023, we reset everything",
        "Boarding pass is in the wallet app, seat 14C",
        "My SSH public key: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl",
    ],
)
def test_look_alikes_are_not_confidential(text: str) -> None:
    assert classify_sensitivity(text) is not Sensitivity.CONFIDENTIAL


def test_redaction_removes_the_secret_and_keeps_the_topic() -> None:
    text = "the staging db pw is hunter2, the host is db2.internal"
    assert redacted(text) == f"the staging db pw is {SECRET_STAND_IN}, the host is db2.internal"
    assert redacted("Card 4111 1111 1111 1111 exp 09/28") == f"Card {SECRET_STAND_IN} exp 09/28"


def test_every_span_is_inside_the_text_and_they_do_not_overlap() -> None:
    text = "u: admin p: P@ssw0rd; IBAN DE89 3704 0044 0532 0130 00; PIN 4821"
    spans = find_secrets(text)
    assert [text[s.start : s.end] for s in spans] == ["P@ssw0rd", "DE89 3704 0044 0532 0130 00", "4821"]
    assert all(a.end <= b.start for a, b in itertools.pairwise(spans))


def test_the_development_split_stays_found() -> None:
    """A guard on the split the rules were tuned on (the held-out split is only measured: ``python -m bench
    secrets``): a change that loses recall or raises false alarms here fails."""
    rows = [json.loads(line) for line in DEV_SET.read_text(encoding="utf-8").splitlines()]
    secrets = [r["text"] for r in rows if r["secret"]]
    benign = [r["text"] for r in rows if not r["secret"]]
    missed = [t for t in secrets if classify_sensitivity(t) is not Sensitivity.CONFIDENTIAL]
    alarms = [t for t in benign if classify_sensitivity(t) is Sensitivity.CONFIDENTIAL]
    assert len(secrets) >= 150 and len(benign) >= 150
    assert len(missed) <= len(secrets) // 20, missed
    assert len(alarms) <= len(benign) // 50, alarms


async def test_an_upgrade_raises_a_secret_stored_under_the_old_rules_to_confidential(tmp_path: Path) -> None:
    """Schema v18: a crystal the rules before issue 27 called normal is confidential after the upgrade;
    nothing is lowered."""
    db = tmp_path / "crystals.db"
    store = await IntakeStore.open(db, HashingEmbedder())
    try:
        secret = (await store.remember(NewCrystal("the staging db pw is hunter2"))).crystal.id
        cautious = (await store.remember(NewCrystal("Deploys happen on Thursdays"))).crystal.id
        plain = (await store.remember(NewCrystal("The cat sleeps on the sofa"))).crystal.id
    finally:
        await store.close()
    conn = sqlean.connect(str(db))  # as the release before v18 left it
    with conn:
        conn.execute("UPDATE crystals SET sensitivity = 'normal' WHERE id = ?", (secret,))
        conn.execute("UPDATE crystals SET sensitivity = 'confidential' WHERE id = ?", (cautious,))
        for trigger in ("entities_owed_new", "entities_owed_changed", "entities_gone", "entity_unmentioned",
                        "entity_mentioned", "entity_mention_gone"):  # fmt: skip
            conn.execute(f"DROP TRIGGER {trigger}")  # v25's
        for table in ("entities", "crystal_entities", "entity_aliases", "entities_owed"):
            conn.execute(f"DROP TABLE {table}")
        conn.execute("DROP TABLE captured_messages")  # v19's
        conn.execute("DROP TABLE capture_files")  # v20's
        conn.execute("DROP INDEX crystals_speaker")  # v21's
        conn.execute("ALTER TABLE crystals DROP COLUMN speaker")
        conn.execute("DROP TABLE after_embedding_owed")  # v22's
        conn.execute("DROP TABLE foreign_export_ids")  # v23's
        conn.execute("ALTER TABLE crystals DROP COLUMN voice")  # v24's
        conn.execute("UPDATE meta SET value = '17' WHERE key = 'schema_version'")
    conn.close()
    store = await IntakeStore.open(db, HashingEmbedder())
    try:
        assert (await store.get(secret)).sensitivity is Sensitivity.CONFIDENTIAL
        assert (await store.get(cautious)).sensitivity is Sensitivity.CONFIDENTIAL
        assert (await store.get(plain)).sensitivity is Sensitivity.NORMAL
        assert await store.get_meta("schema_version") == str(SCHEMA_VERSION)
    finally:
        await store.close()
