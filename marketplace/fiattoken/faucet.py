"""Someone who holds USDC pays a wallet on a test chain: the token's minter (the chain's first
account, as ``deploy`` sets it up) mints to the address and sends it ether for gas. What a buyer
gets from a faucet on a public test network, for tests that use the token as a user would (not
``wallet fund``, which mints our development token only).

    python -m marketplace.fiattoken.faucet URL TOKEN ADDRESS MICRO_USDC
"""

from __future__ import annotations

import sys
from typing import Any

from marketplace.fiattoken.build import artifacts
from marketplace.fiattoken.deploy import send

GAS_WEI = 10**18


def give(w3: Any, token: str, address: str, micro_usdc: int, *, gas_wei: int = GAS_WEI) -> None:
    """Mint ``micro_usdc`` of the FiatToken at ``token`` to ``address``, and send it ``gas_wei``."""
    minter = w3.eth.accounts[0]
    w3.eth.wait_for_transaction_receipt(w3.eth.send_transaction({"from": minter, "to": address, "value": gas_wei}))
    fiat = w3.eth.contract(address=w3.to_checksum_address(token), abi=artifacts()["FiatTokenV2_2"]["abi"])
    send(w3, fiat.functions.mint(w3.to_checksum_address(address), micro_usdc), minter)


def main(argv: list[str]) -> int:
    from web3 import Web3

    if len(argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    url, token, address, amount = argv
    give(Web3(Web3.HTTPProvider(url)), token, address, int(amount))
    print(f"{address} was given {int(amount) / 10**6:.6f} USDC and gas")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
