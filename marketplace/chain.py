"""The chain client: USDC balances, transfers and the purchase escrow, over web3.py.

One class, two backends, the same code path:
- ``Chain.embedded()``: an in-process EVM (py-evm through eth-tester) with our two
  contracts deployed at start: the default, no service needed. A named dev chain:
  its token is ``DevUSDC`` and ``fund`` mints it.
- ``Chain.rpc(url, token, escrow)``: any JSON-RPC chain (anvil locally; a real chain
  with the real USDC address in production).

eth-tester is not thread-safe and a synchronous EVM call stalls whatever thread runs
it, so every web3 call runs on one thread of its own (a ``ground.bridge.TrioThread``, the
bridge the libp2p host uses too), one call at a time, never on the event loop.
Reverts surface as ``TransactionReverted`` (``InsufficientFunds`` for balance and
allowance failures) whatever the backend: transactions are signed locally and sent
with an explicit gas limit, and a failed one is re-run as a call, which yields the
contract's reason the same way everywhere.
Amounts are integer micro-USDC everywhere.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from importlib import resources
from typing import Any, TypeVar

from ground.bridge import TrioThread
from marketplace.chain_types import Account, EscrowRules, GasSpent, Receipt, TransferAuthorization, micro_usdc_amount
from marketplace.deploy_policy import arbiter_refusal, usdc_like
from marketplace.errors import (
    ChainError,
    ChainUnreachable,
    GasPriceTooHigh,
    InvalidValue,
    TransactionPending,
    TransactionReverted,
    no_gas,
    reverted,
)

T = TypeVar("T")
#: Deploys a development chain's token: (web3, deploying account) -> the token's address.
TokenDeployer = Callable[[Any, str], str]
GAS_LIMIT = 300_000
RECEIPT_TIMEOUT_S = 30.0
#: What our development deployments of the escrow are made with (the arbiter: given, or the deployer).
ESCROW_RULES = EscrowRules(
    arbiter="", min_delivery_window_s=300, max_lock_s=86_400, dispute_window_s=3_600, arbitration_window_s=7 * 86_400
)
ESCROW_PROTOCOL_VERSION = 2

_PERMIT_FIELDS = [
    {"name": "owner", "type": "address"},
    {"name": "spender", "type": "address"},
    {"name": "value", "type": "uint256"},
    {"name": "nonce", "type": "uint256"},
    {"name": "deadline", "type": "uint256"},
]
_AUTHORIZATION_FIELDS = [
    {"name": "from", "type": "address"},
    {"name": "to", "type": "address"},
    {"name": "value", "type": "uint256"},
    {"name": "validAfter", "type": "uint256"},
    {"name": "validBefore", "type": "uint256"},
    {"name": "nonce", "type": "bytes32"},
]


def artifact(name: str) -> dict[str, Any]:
    text = resources.files("marketplace.artifacts").joinpath(f"{name}.json").read_text()
    doc: dict[str, Any] = json.loads(text)
    return doc


class Chain:
    def __init__(self, w3: Any, token_address: str, escrow_address: str, *, dev: bool) -> None:
        self._w3 = w3
        self._token = w3.eth.contract(address=token_address, abi=artifact("DevUSDC")["abi"])
        self.escrow_contract = w3.eth.contract(address=escrow_address, abi=artifact("Escrow")["abi"])
        self.token_contract = self._token
        self.token_address = token_address
        self.escrow_address = escrow_address
        self.dev = dev
        self._thread: TrioThread | None = None
        #: How long a send waits for its receipt before it reports the transaction pending.
        self.receipt_timeout_s = RECEIPT_TIMEOUT_S
        #: Transactions this client sent and mined, and their gas, by sender address.
        self.sent: dict[str, GasSpent] = {}
        self._chain_id: int | None = None
        self._domain: dict[str, Any] | None = None
        #: Set by ``public_chain.presets.ChainTuning.apply`` on a public chain; 0 on a dev chain.
        self.confirmations = self.reorg_blocks = self.max_gas_price_wei = self.log_chunk_blocks = self.log_lookback = 0

    # --- construction --------------------------------------------------------------------

    @classmethod
    async def embedded(cls, *, arbiter: str | None = None, token: TokenDeployer | None = None) -> Chain:
        """An EVM in this process with our token and escrow (``arbiter``: who decides disputes; the
        deploying account when None; ``token``: deploys another token than DevUSDC, for tests)."""

        def build() -> Chain:
            from web3 import Web3

            return cls._with_our_contracts(Web3(Web3.EthereumTesterProvider()), arbiter, token)

        return await cls._on_worker(build)

    @classmethod
    async def rpc(cls, url: str, token: str, escrow: str, *, dev: bool = False, chain_id: int | None = None) -> Chain:
        """A JSON-RPC chain where the token and escrow are deployed. ``dev``: a local development chain
        (anvil) whose first unlocked account deployed our DevUSDC, so ``fund`` can mint. ``chain_id``:
        the chain it must be (a preset's), or it is refused."""
        token_address, escrow_address = token, escrow

        def build() -> Chain:
            from web3 import Web3

            w3 = _connect(url)
            if chain_id is not None and (answered := int(w3.eth.chain_id)) != chain_id:
                raise ChainError(f"{url} is chain {answered}, not {chain_id}: point [chain] url at that network")
            for name, address in (("token", token_address), ("escrow", escrow_address)):
                if not w3.eth.get_code(Web3.to_checksum_address(address)):
                    raise ChainError(f"no contract at the {name} address {address} on {url}")
            chain = cls(w3, Web3.to_checksum_address(token_address), Web3.to_checksum_address(escrow_address), dev=dev)
            chain._check_contracts()
            return chain

        return await cls._on_worker(build)

    @classmethod
    async def rpc_dev(cls, url: str, *, arbiter: str, token: TokenDeployer | None = None) -> Chain:
        """A local development JSON-RPC chain (anvil): deploy our contracts with its first,
        unlocked account, which is then the dev token's minter (``fund`` works as embedded).
        ``arbiter`` decides disputes: a key the deployer chose, never an unlocked account."""

        def build() -> Chain:
            w3 = _connect(url)
            if (why := arbiter_refusal(arbiter, [str(a) for a in w3.eth.accounts])) is not None:
                raise ChainError(why)
            return cls._with_our_contracts(w3, arbiter, token)

        return await cls._on_worker(build)

    @classmethod
    def _with_our_contracts(cls, w3: Any, arbiter: str | None, deploy_token: TokenDeployer | None = None) -> Chain:
        """Deploy DevUSDC (or what ``deploy_token`` deploys) and the escrow with the chain's first
        (unlocked) account: a dev chain, whose first account mints."""
        deployer = w3.eth.accounts[0]
        # Reads name their sender: without one, web3's tester middleware asks the chain for its
        # accounts twice per call to pick the first (this one), checksumming each: a fifth of the
        # CPU of a purchase on the embedded chain.
        w3.eth.default_account = deployer
        token = _deploy(w3, deployer, "DevUSDC") if deploy_token is None else deploy_token(w3, deployer)
        rules = ESCROW_RULES
        escrow = _deploy(
            w3, deployer, "Escrow", token, arbiter or deployer, rules.min_delivery_window_s, rules.max_lock_s,
            rules.dispute_window_s, rules.arbitration_window_s,
        )  # fmt: skip
        return cls(w3, token, escrow, dev=True)

    @classmethod
    async def _on_worker(cls, build: Callable[[], Chain]) -> Chain:
        """Build the client on a thread of its own, which then runs every web3 call."""
        thread = TrioThread("evm")
        await thread.start()
        try:
            chain = await thread.call_blocking(build)
        except BaseException:
            await thread.stop()
            raise
        chain._thread = thread
        return chain

    async def close(self) -> None:
        """Stop the chain's thread once the call it runs (if any) returns."""
        if self._thread is not None:
            thread, self._thread = self._thread, None
            await thread.stop()

    @property
    def w3(self) -> Any:
        """The web3 client: for calls made inside ``run`` (on the chain's thread) only."""
        return self._w3

    # --- reads ---------------------------------------------------------------------------

    async def chain_id(self) -> int:
        return await self.run(lambda: int(self._w3.eth.chain_id))

    async def balance(self, address: str) -> int:
        return await self.run(lambda: int(self._token.functions.balanceOf(address).call()))

    async def timestamp(self) -> int:
        return await self.run(lambda: int(self._w3.eth.get_block("latest")["timestamp"]))

    # --- writes --------------------------------------------------------------------------

    async def transfer(self, account: Account, to: str, amount: int) -> Receipt:
        return await self.send(account, lambda: self._token.functions.transfer(to, micro_usdc_amount(amount)))

    async def approve(self, account: Account, spender: str, amount: int) -> Receipt:
        return await self.send(account, lambda: self._token.functions.approve(spender, micro_usdc_amount(amount)))

    async def permit_nonce(self, address: str) -> int:
        """The token's EIP-2612 nonce of ``address`` (the next permit must carry it)."""
        return await self.run(lambda: int(self._token.functions.nonces(address).call()))

    async def sign_permit(
        self, account: Account, spender: str, value: int, deadline: int, nonce: int | None
    ) -> tuple[int, bytes, bytes]:
        """An EIP-2612 permit letting ``spender`` draw ``value`` from ``account`` until ``deadline``
        (``nonce``: the token's permit nonce if the caller read it already; a stale one only makes
        the transaction that carries the permit revert)."""
        micro_usdc_amount(value)

        def permit_signature() -> tuple[int, bytes, bytes]:
            current = nonce if nonce is not None else int(self._token.functions.nonces(account.address).call())
            return self._sign_typed(account, "Permit", _PERMIT_FIELDS, {
                "owner": account.address, "spender": spender, "value": value, "nonce": current, "deadline": deadline,
            })  # fmt: skip

        return await self.run(permit_signature)

    async def submit_permit(
        self,
        submitter: Account,
        owner: str,
        spender: str,
        value: int,
        deadline: int,
        signature: tuple[int, bytes, bytes],
    ) -> Receipt:
        """Send ``owner``'s signed permit (anyone may: it only sets what ``owner`` signed)."""
        v, r, s = signature
        return await self.send(
            submitter, lambda: self._token.functions.permit(owner, spender, micro_usdc_amount(value), deadline, v, r, s)
        )

    async def allowance(self, owner: str, spender: str) -> int:
        return await self.run(lambda: int(self._token.functions.allowance(owner, spender).call()))

    async def authorize_transfer(
        self, account: Account, receiver: str, amount: int, nonce: bytes, valid_before: int, *, payee_only: bool = True
    ) -> TransferAuthorization:
        """Sign (no transaction) an EIP-3009 authorization for ``receiver`` to collect exactly ``amount``
        once: ``nonce`` can be used once, ever, so signing again for the same nonce never pays twice.
        ``payee_only``: a ``receiveWithAuthorization``, which only ``receiver`` may submit, so nobody
        can copy it from the mempool and spend it first; else a ``transferWithAuthorization`` (anyone)."""
        micro_usdc_amount(amount)
        if len(nonce) != 32:
            raise InvalidValue("an authorization nonce is 32 bytes")
        primary = "ReceiveWithAuthorization" if payee_only else "TransferWithAuthorization"

        def sign() -> TransferAuthorization:
            from web3 import Web3

            to = Web3.to_checksum_address(receiver)
            v, r, s = self._sign_typed(account, primary, _AUTHORIZATION_FIELDS, {
                "from": account.address, "to": to, "value": amount, "validAfter": 0, "validBefore": valid_before,
                "nonce": nonce,
            })  # fmt: skip
            return TransferAuthorization(account.address, to, amount, 0, valid_before, nonce, v, r, s)

        return await self.run(sign)

    async def transfer_with_authorization(self, submitter: Account, auth: TransferAuthorization) -> Receipt:
        """Submit ``auth`` signed with ``payee_only=False`` (anyone may; the money goes only where it says)."""
        return await self.send(submitter, lambda: self._token.functions.transferWithAuthorization(*auth.to_wire()))

    async def receive_with_authorization(self, payee: Account, auth: TransferAuthorization) -> Receipt:
        """Collect ``auth`` (signed payee-only) as its payee: the token refuses anyone else."""
        return await self.send(payee, lambda: self._token.functions.receiveWithAuthorization(*auth.to_wire()))

    async def authorization_used(self, authorizer: str, nonce: bytes) -> bool:
        return await self.run(lambda: bool(self._token.functions.authorizationState(authorizer, nonce).call()))

    # --- development chain only ----------------------------------------------------------

    async def fund(self, address: str, micro_usdc: int, *, gas_wei: int = 10**18) -> None:
        """Give an account dUSDC and gas (the embedded dev chain only)."""
        self._dev_only("fund")

        def give() -> None:
            minter = self._w3.eth.accounts[0]
            _wait(self._w3, self._w3.eth.send_transaction({"from": minter, "to": address, "value": gas_wei}))
            _wait(
                self._w3,
                self._token.functions.mint(address, micro_usdc_amount(micro_usdc)).transact(
                    {"from": minter, "gas": GAS_LIMIT}
                ),
            )

        await self.run(give)

    async def set_automine(self, on: bool) -> None:
        """Mine each transaction as it arrives (the dev chains' default), or leave it pending until
        ``mine``: how a test makes a receipt slow."""
        self._dev_only("set_automine")

        def switch() -> None:
            tester = getattr(self._w3.provider, "ethereum_tester", None)
            if tester is not None:
                (tester.enable_auto_mine_transactions if on else tester.disable_auto_mine_transactions)()
            else:
                self._w3.provider.make_request("evm_setAutomine", [on])

        await self.run(switch)

    async def mine(self) -> None:
        """Mine one block on the dev chain (with whatever is pending)."""
        self._dev_only("mine")

        def one() -> None:
            tester = getattr(self._w3.provider, "ethereum_tester", None)
            if tester is not None:
                tester.mine_blocks()
            else:
                self._w3.provider.make_request("evm_mine", [])

        await self.run(one)

    async def advance_time(self, seconds: int) -> None:
        """Move the dev chain's clock forward and mine a block (for timeouts in tests)."""
        self._dev_only("advance_time")

        def travel() -> None:
            tester = getattr(self._w3.provider, "ethereum_tester", None)
            if tester is not None:
                # From the pending block (less the second mining adds): after an idle spell it is ahead.
                latest = int(self._w3.eth.get_block("latest")["timestamp"])
                pending = int(self._w3.eth.get_block("pending")["timestamp"])
                tester.time_travel(max(latest, pending - 1) + seconds)
                tester.mine_blocks()
            else:  # anvil (and hardhat) speak these development RPC methods
                self._w3.provider.make_request("evm_increaseTime", [seconds])
                self._w3.provider.make_request("evm_mine", [])

        await self.run(travel)

    # --- internals -----------------------------------------------------------------------

    def _check_contracts(self) -> None:
        """The token counts in micro-units like USDC (6 decimals), and the escrow holds that token:
        amounts are integer micro-USDC everywhere, and a mismatch would move other sums (worker thread)."""
        usdc_like(self._w3, self.token_address)
        try:
            held = str(self.escrow_contract.functions.token().call())
        except Exception as exc:  # noqa: BLE001
            raise ChainError(f"the escrow address {self.escrow_address} does not answer token(): {exc}") from None
        try:
            version = int(self.escrow_contract.functions.PROTOCOL_VERSION().call())
        except Exception:  # noqa: BLE001 - escrows before the sealed commitment (issue 26) have no version
            version = 1
        if version != ESCROW_PROTOCOL_VERSION:
            raise ChainError(
                f"the escrow at {self.escrow_address} is an earlier version ({version}; this node speaks "
                f"{ESCROW_PROTOCOL_VERSION}): deploy the current one (`bitterbot-node chain deploy`) and point every "
                "node at it"
            ) from None
        if held.lower() != self.token_address.lower():
            raise ChainError(
                f"the escrow at {self.escrow_address} holds the token {held}, not the configured {self.token_address}"
            )

    def _permit_domain(self) -> dict[str, Any]:
        """The token's EIP-712 domain, read from the chain (never from constants), once."""
        if self._domain is None:
            self._domain = {
                "name": self._token.functions.name().call(),
                "version": self._token.functions.version().call(),
                "chainId": int(self._w3.eth.chain_id),
                "verifyingContract": self.token_address,
            }
        return self._domain

    def _sign_typed(
        self, account: Account, primary: str, fields: list[dict[str, str]], message: dict[str, Any]
    ) -> tuple[int, bytes, bytes]:
        """An EIP-712 signature under the token's domain (worker thread only)."""
        from eth_account import Account as EthAccount

        signed = EthAccount.sign_typed_data(
            account.private_key,
            domain_data=self._permit_domain(),
            message_types={primary: fields},
            message_data=message,
        )
        return int(signed.v), signed.r.to_bytes(32, "big"), signed.s.to_bytes(32, "big")

    def _dev_only(self, what: str) -> None:
        if not self.dev:
            raise ChainError(f"{what} exists on the embedded development chain only")

    async def run(self, work: Callable[[], T]) -> T:
        """Run ``work`` (web3 calls) on the chain's own thread; a transport failure is ``ChainUnreachable``."""
        if self._thread is None:
            raise ChainError("the chain client is closed")
        try:
            return await self._thread.call_blocking(work)
        except ChainError:
            raise
        except OSError as exc:  # the JSON-RPC transport's errors (requests') are OSErrors
            where = getattr(self._w3.provider, "endpoint_uri", None) or "the chain"
            raise ChainUnreachable(f"cannot reach {where}: {exc}") from None

    async def send(self, account: Account, make: Callable[[], Any], *, gas: int = GAS_LIMIT) -> Receipt:
        """Sign and send the transaction ``make`` builds (on the chain's thread), and wait for its
        receipt. ``gas``: the most it may use (a commitment carrying a large skill needs more)."""

        def send() -> Receipt:
            from eth_account import Account as EthAccount
            from web3.exceptions import TimeExhausted

            function = make()
            # Nothing is sent that reverts now (an eth_call on the block it would join): a revert costs
            # gas, and some moves are made on a stranger's word (issue 49: 46k-1.3M gas, free to ask for).
            price = int(self._w3.eth.gas_price)  # named in the call, so a sender without the ether is told so
            if 0 < self.max_gas_price_wei < price:
                raise GasPriceTooHigh(price, self.max_gas_price_wei)
            try:
                function.call({"from": account.address, "gas": gas, "gasPrice": price}, block_identifier="pending")
            except OSError:
                raise
            except Exception as exc:  # noqa: BLE001 - normalised as after a revert
                raise no_gas(account.address, exc) or reverted(exc) from None
            if self._chain_id is None:
                self._chain_id = int(self._w3.eth.chain_id)
            tx = function.build_transaction(
                {
                    "from": account.address,
                    "nonce": self._w3.eth.get_transaction_count(account.address, "pending"),
                    "gas": gas,
                    "gasPrice": price,
                    "chainId": self._chain_id,
                }
            )
            signed = EthAccount.sign_transaction(tx, account.private_key)
            try:
                tx_hash = self._w3.eth.send_raw_transaction(signed.raw_transaction)
            except OSError:
                raise
            except Exception as exc:  # noqa: BLE001 - refused before mining: its reason is the answer
                refused = TransactionReverted(f"the chain refused the transaction: {exc}")
                raise no_gas(account.address, exc) or refused from None
            try:
                receipt = _wait(self._w3, tx_hash, self.receipt_timeout_s)
                failed = int(receipt["status"]) != 1
            except OSError:
                raise  # the chain is unreachable, nothing reverted: ``_run`` says so
            except TimeExhausted:  # sent and not mined yet: not a revert, and not to be re-run as one
                raise TransactionPending(tx_hash.to_0x_hex(), self.receipt_timeout_s) from None
            except Exception:  # noqa: BLE001 - each backend raises its own type; normalised below
                failed = True
            if failed:
                # Only now run it as a call: it yields the contract's reason the same way on every backend.
                try:
                    function.call({"from": account.address})
                except OSError:
                    raise
                except Exception as exc:  # noqa: BLE001 - normalised
                    raise reverted(exc) from None
                raise TransactionReverted("reverted on chain")
            mined = Receipt(tx_hash.hex(), int(receipt["blockNumber"]), int(receipt["gasUsed"]))
            spent = self.sent.setdefault(account.address, GasSpent())
            spent.transactions += 1
            spent.gas += mined.gas_used
            spent.wei += mined.gas_used * price  # a legacy transaction pays its gas price, whatever the base fee
            return mined

        return await self.run(send)


def _connect(url: str) -> Any:
    from web3 import Web3

    w3 = Web3(Web3.HTTPProvider(url, request_kwargs={"timeout": 10}))
    if not w3.is_connected():
        raise ChainUnreachable(f"no chain answers at {url}")
    return w3


def _wait(w3: Any, tx_hash: Any, timeout_s: float = RECEIPT_TIMEOUT_S) -> Any:
    return w3.eth.wait_for_transaction_receipt(tx_hash, timeout=timeout_s)


def _deploy(w3: Any, deployer: str, name: str, *args: Any) -> str:
    doc = artifact(name)
    factory = w3.eth.contract(abi=doc["abi"], bytecode=doc["bytecode"])
    receipt = _wait(w3, factory.constructor(*args).transact({"from": deployer, "gas": 3_000_000}))
    return str(receipt["contractAddress"])
