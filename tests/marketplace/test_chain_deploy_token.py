"""`chain deploy --token`: our escrow tied to a USDC already on the chain (as on Base Sepolia),
with Circle's FiatToken on anvil standing for it. A token that does not count in micro-units is
refused before anything is deployed for it."""

from __future__ import annotations

import re

import pytest

from marketplace.chain import Chain
from marketplace.escrow import Escrow
from tests.conftest import run_cli
from tests.marketplace.conftest import ARBITER, anvil_holding_usdc

pytestmark = pytest.mark.slow  # a real anvil and the CLI as a process


def _deploy(url: str, token: str) -> tuple[int, str, str]:
    done = run_cli("chain", "deploy", "--url", url, "--arbiter", ARBITER.address, "--token", token)
    return done.returncode, done.stdout, done.stderr


async def test_only_the_escrow_is_deployed_for_the_token_already_there() -> None:
    with anvil_holding_usdc(name="USDC") as (url, token):
        code, out, err = _deploy(url, token)
        assert code == 0, err
        config = dict(re.findall(r'^(\w+) = "?([^"\n]+)"?$', out, re.MULTILINE))
        assert config["token_address"] == token and config["url"] == url
        assert config["dev"] == "false"  # not our token: `wallet fund` cannot mint it
        assert '# the token: "USDC"' in out  # its name, read from the chain
        chain = await Chain.rpc(url, token, config["escrow_address"])  # checks the escrow holds that token
        try:
            assert (await Escrow(chain).rules()).arbiter.lower() == ARBITER.address.lower()
        finally:
            await chain.close()


@pytest.mark.parametrize("token", ["18 decimals", "no contract", "not an address"])
def test_a_token_that_does_not_count_like_usdc_is_refused(token: str) -> None:
    with anvil_holding_usdc(decimals=18) as (url, wide):
        address = {"18 decimals": wide, "no contract": ARBITER.address, "not an address": "0x1234"}[token]
        code, out, err = _deploy(url, address)
        assert code != 0 and out == ""
        expected = {
            "18 decimals": "has 18 decimals; USDC has 6",
            "no contract": "no contract at the token address",
            "not an address": "is not an address",
        }[token]
        assert expected in err, err
