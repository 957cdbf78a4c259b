"""What our escrow may be deployed with and tied to.

- Its arbiter: a key the deployer chose, never a development account whose key is public (anvil's
  and hardhat's defaults) or that the chain's node holds unlocked.
- Its token: one that counts in micro-units as USDC does (6 decimals), since every amount here is
  integer micro-USDC; on a chain where USDC already exists (Base Sepolia), that token as it is.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from marketplace.errors import ChainError

USDC_DECIMALS = 6
#: Enough of any ERC-20's interface to tell what it is.
_ERC20_ABI = [
    {"name": name, "type": "function", "stateMutability": "view", "inputs": [], "outputs": [{"name": "", "type": kind}]}
    for name, kind in (("decimals", "uint8"), ("name", "string"))
]

#: The accounts of the development mnemonic anvil and hardhat unlock by default ("test test ... junk"):
#: their keys are public, so none of them may decide disputes where money is real to anyone.
WELL_KNOWN_DEV_ACCOUNTS = frozenset(
    a.lower()
    for a in (
        "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266", "0x70997970C51812dc3A010C7d01b50e0d17dc79C8",
        "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC", "0x90F79bf6EB2c4f870365E785982E1f101E93b906",
        "0x15d34AAf54267DB7D7c367839AAf71A00a2C6A65", "0x9965507D1a55bcC2695C58ba16FB37d819B0A4dc",
        "0x976EA74026E726554dB657fA54763abd0C3a0aa9", "0x14dC79964da2C08b23698B3D3cc7Ca32193d9955",
        "0x23618e81E3f5cdF7f54C3d65f7FBc0aBf5B21E8f", "0xa0Ee7A142d267C1f36714E4a8F75612F20a79720",
    )
)  # fmt: skip


def arbiter_refusal(arbiter: str | None, unlocked: list[str]) -> str | None:
    """Why ``arbiter`` may not decide disputes on a chain whose node unlocks ``unlocked``, or None."""
    from web3 import Web3

    if not arbiter:
        return "name the escrow's arbiter (--arbiter ADDRESS: a management node's wallet, a key you chose)"
    if not Web3.is_address(arbiter):
        return f"the arbiter {arbiter!r} is not an address"
    if arbiter.lower() in WELL_KNOWN_DEV_ACCOUNTS or arbiter.lower() in {a.lower() for a in unlocked}:
        return (
            f"the arbiter {arbiter} is an unlocked development account whose key is public: anyone could decide "
            "disputes; name a key you chose (a management node's wallet: `bitterbot-node wallet`)"
        )
    return None


def usdc_like(w3: Any, address: str) -> str:
    """The name of the token at ``address`` (its EIP-712 domain name: "USD Coin", "USDC", ...), once
    it is shown to count like USDC; else ``ChainError`` saying what the address holds instead."""
    from web3 import Web3

    if not Web3.is_address(address):
        raise ChainError(f"the token {address!r} is not an address")
    address = Web3.to_checksum_address(address)
    if not w3.eth.get_code(address):
        raise ChainError(f"no contract at the token address {address} on this chain")
    token = w3.eth.contract(address=address, abi=_ERC20_ABI)
    try:
        decimals = int(token.functions.decimals().call())
    except Exception as exc:  # noqa: BLE001 - whatever the contract there does, it is no ERC-20 token
        raise ChainError(f"the token address {address} does not answer decimals(): {exc}") from None
    if decimals != USDC_DECIMALS:
        raise ChainError(
            f"the token at {address} has {decimals} decimals; USDC has {USDC_DECIMALS}, and every amount here "
            "is in micro-USDC"
        )
    try:
        return str(token.functions.name().call())
    except Exception as exc:  # noqa: BLE001 - no name: no EIP-712 domain to sign permits under
        raise ChainError(f"the token address {address} does not answer name(): {exc}") from None


def existing_token(address: str) -> Callable[[Any, str], str]:
    """A token deployer (``Chain.rpc_dev``'s ``token``) that deploys nothing: the escrow is tied to the
    token already at ``address``, once ``usdc_like`` accepts it."""

    def checked(w3: Any, _deployer: str) -> str:
        from web3 import Web3

        usdc_like(w3, address)
        return str(Web3.to_checksum_address(address))

    return checked
