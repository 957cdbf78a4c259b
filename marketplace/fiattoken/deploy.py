"""Deploy Circle's FiatToken on a development chain as USDC is deployed (README of ../shared/usdc):
the SignatureChecker library, the implementation linked to it, ``FiatTokenProxy`` whose admin then
moves to an account that never calls the token, and through the proxy ``initialize``,
``initializeV2``, ``initializeV2_1``, ``initializeV2_2``; the master minter then configures the
minter. The chain's first (unlocked) account is master minter, minter, pauser, blacklister and owner,
so ``Chain.fund`` mints as on our development token; its last is the proxy's admin.

``usdc_chain`` is a ``Chain`` on that token and our escrow; ``Governor`` does what only Circle can
on the real token (blacklist, pause), for tests of what the market does then.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from marketplace.chain import Chain, TokenDeployer
from marketplace.fiattoken.build import artifacts, linked

#: The name our development token is initialised with; real deployments differ ("USD Coin" on
#: Ethereum, "USDC" on Base): the client must read it from the chain.
NAME = "USD Coin"
SYMBOL = "USDC"
_DEPLOY_GAS = 8_000_000
_UNLIMITED = 2**255


def send(w3: Any, call: Any, sender: str) -> Any:
    receipt = w3.eth.wait_for_transaction_receipt(call.transact({"from": sender, "gas": _DEPLOY_GAS}))
    if int(receipt["status"]) != 1:
        raise RuntimeError(f"FiatToken deployment step failed: {call}")
    return receipt


def _create(w3: Any, sender: str, abi: Any, bytecode: str, *args: Any) -> str:
    factory = w3.eth.contract(abi=abi, bytecode=bytecode)
    return str(send(w3, factory.constructor(*args), sender)["contractAddress"])


def deploy_token(w3: Any, deployer: str, *, name: str = NAME, symbol: str = SYMBOL, decimals: int = 6) -> str:
    """Deploy FiatTokenV2_2 behind its proxy, initialised as USDC is (``decimals``: other than 6 for a
    token the market must refuse); the token's (proxy's) address."""
    proxy = _proxy(w3, deployer)
    _initialise(w3, deployer, proxy, name, symbol, decimals)
    return proxy


def deploy_token_at(w3: Any, deployer: str, address: str, *, name: str = NAME, symbol: str = SYMBOL) -> str:
    """FiatToken behind its proxy at ``address`` (an anvil's ``anvil_setCode``: Base Sepolia's USDC
    address on a local chain with its chain id). The proxy is deployed as above, its runtime code and
    its two slots (implementation, admin) put at ``address``, and the token initialised through it
    there: what lives at the address is real USDC's code, deployed the way Circle deploys it."""
    from eth_utils.crypto import keccak

    proxy = _proxy(w3, deployer)
    w3.provider.make_request("anvil_setCode", [address, w3.eth.get_code(proxy).to_0x_hex()])
    for label in (b"org.zeppelinos.proxy.implementation", b"org.zeppelinos.proxy.admin"):
        slot = "0x" + keccak(label).hex()
        w3.provider.make_request("anvil_setStorageAt", [address, slot, w3.eth.get_storage_at(proxy, slot).to_0x_hex()])
    _initialise(w3, deployer, address, name, symbol, 6)
    return address


def _proxy(w3: Any, deployer: str) -> str:
    """The SignatureChecker library, the implementation linked to it, and the proxy over it, whose
    admin moves to an account that never calls the token (the admin may not): the proxy's address."""
    built = artifacts()
    library = _create(w3, deployer, built["SignatureChecker"]["abi"], built["SignatureChecker"]["bytecode"])
    token = built["FiatTokenV2_2"]
    implementation = _create(w3, deployer, token["abi"], linked(token, {"SignatureChecker": library}))
    proxy_doc = built["FiatTokenProxy"]
    proxy = _create(w3, deployer, proxy_doc["abi"], proxy_doc["bytecode"], implementation)
    send(w3, w3.eth.contract(address=proxy, abi=proxy_doc["abi"]).functions.changeAdmin(w3.eth.accounts[-1]), deployer)
    return proxy


def _initialise(w3: Any, deployer: str, address: str, name: str, symbol: str, decimals: int) -> None:
    """Initialise the token at ``address`` as Circle does, ``deployer`` holding every role, and make it
    a minter without a limit."""
    fiat = w3.eth.contract(address=address, abi=artifacts()["FiatTokenV2_2"]["abi"]).functions
    send(w3, fiat.initialize(name, symbol, "USD", decimals, deployer, deployer, deployer, deployer), deployer)
    send(w3, fiat.initializeV2(name), deployer)
    send(w3, fiat.initializeV2_1(deployer), deployer)
    send(w3, fiat.initializeV2_2([], symbol), deployer)
    send(w3, fiat.configureMinter(deployer, _UNLIMITED), deployer)


def deployer(name: str = NAME) -> TokenDeployer:
    """What ``Chain.embedded`` / ``Chain.rpc_dev`` deploy instead of our development token."""
    return partial(deploy_token, name=name)


async def usdc_chain(url: str | None, *, arbiter: str, name: str = NAME) -> Chain:
    """Our escrow on Circle's token: on the anvil at ``url``, or in the embedded EVM when None."""
    if url is None:
        return await Chain.embedded(arbiter=arbiter, token=deployer(name))
    return await Chain.rpc_dev(url, arbiter=arbiter, token=deployer(name))


class Governor:
    """Circle's powers over the token on a test chain: blacklist an address, pause every transfer."""

    def __init__(self, chain: Chain) -> None:
        self._chain = chain
        self._token = chain.w3.eth.contract(address=chain.token_address, abi=artifacts()["FiatTokenV2_2"]["abi"])

    async def _do(self, make: Any) -> None:
        w3 = self._chain.w3
        await self._chain.run(lambda: send(w3, make(self._token.functions), w3.eth.accounts[0]))

    async def blacklist(self, address: str) -> None:
        await self._do(lambda f: f.blacklist(address))

    async def unblacklist(self, address: str) -> None:
        await self._do(lambda f: f.unBlacklist(address))

    async def pause(self) -> None:
        await self._do(lambda f: f.pause())

    async def unpause(self) -> None:
        await self._do(lambda f: f.unpause())
