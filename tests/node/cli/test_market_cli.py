"""`bitterbot-node skills record|price` as a user runs them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import clean_env, run_cli

pytestmark = pytest.mark.slow  # real processes, hosts or chains (`-m "not slow"` skips them)

ENV = clean_env(BITTERBOT_MEMORY__EMBEDDER="hashing")


def test_record_until_listable_and_explain_the_price(tmp_path: Path) -> None:
    data = str(tmp_path / "d")
    added = run_cli("memory", "add", "Blue-green deploy: switch the router after health checks", "--type", "skill",
                    "--scope", "shared", "--data-dir", data, "--json", env=ENV)  # fmt: skip
    crystal_id = json.loads(added.stdout)["crystal"]["id"]
    first = run_cli("skills", "record", crystal_id, "--success", "--reward", "0.8", "--data-dir", data, env=ENV)
    assert first.returncode == 0 and "not listable yet: it needs at least 3 recorded executions, has 1" in first.stdout
    run_cli("skills", "record", crystal_id, "--success", "--data-dir", data, env=ENV)
    third = run_cli("skills", "record", crystal_id, "--failure", "--data-dir", data, "--json", env=ENV)
    assert json.loads(third.stdout) == {"executions": 3, "successes": 2, "listable": True, "reasons": []}
    # success 2/3, average reward (0.8 + 1 + 0) / 3 = 0.6: quality 0.4; demand 1; neutral reputation 1;
    # rare category 1.5: 10,000 x 0.4 x 1.5 = 6,000 micro-USDC.
    priced = json.loads(run_cli("skills", "price", crystal_id, "--data-dir", data, "--json", env=ENV).stdout)
    assert priced["price_micro_usdc"] == 6_000 and priced["price"] == "0.006000 USDC" and priced["listable"]
    explained = run_cli("skills", "price", crystal_id, "--explain", "--data-dir", data, env=ENV).stdout
    assert "quality" in explained and "scarcity    1.5  (rare" in explained and "= 0.006000 USDC" in explained


def test_bad_input_is_refused(tmp_path: Path) -> None:
    data = str(tmp_path / "d")
    fact = run_cli("memory", "add", "The sky is blue", "--type", "fact", "--data-dir", data, "--json", env=ENV)
    fact_id = json.loads(fact.stdout)["crystal"]["id"]
    refused = run_cli("skills", "record", fact_id, "--success", "--data-dir", data, env=ENV)
    assert refused.returncode == 2 and "not a fact" in refused.stderr
    missing = run_cli("skills", "price", "nope", "--data-dir", data, env=ENV)
    assert missing.returncode == 2 and "no crystal" in missing.stderr
    bad_reward = run_cli("skills", "record", fact_id, "--success", "--reward", "2", "--data-dir", data, env=ENV)
    assert bad_reward.returncode == 2
