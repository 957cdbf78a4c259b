"""Proof of a direct payment (EIP-3009): what a seller checks before it delivers against an
authorization whose nonce is already used."""

from __future__ import annotations

from marketplace.chain import Chain


async def authorization_paid(chain: Chain, authorizer: str, nonce: bytes, receiver: str, amount: int) -> bool:
    """Whether ``nonce`` of ``authorizer`` was used by a transfer of exactly ``amount`` to
    ``receiver``. A used nonce alone proves nothing: the authorizer can spend it first on any
    transfer of its own (a zero one to itself, say). EIP-3009 tokens log the transfer right
    after ``AuthorizationUsed`` in the same transaction; that pair is what counts."""

    def read() -> bool:
        from web3 import Web3

        used = chain.token_contract.events.AuthorizationUsed().get_logs(
            from_block=0, argument_filters={"authorizer": authorizer, "nonce": nonce}
        )
        for event in used:
            receipt = chain.w3.eth.get_transaction_receipt(event["transactionHash"])
            logs = sorted(receipt["logs"], key=lambda entry: int(entry["logIndex"]))
            following = [e for e in logs if int(e["logIndex"]) == int(event["logIndex"]) + 1]
            if not following or following[0]["address"].lower() != chain.token_address.lower():
                continue
            try:
                transfer = chain.token_contract.events.Transfer().process_log(following[0])
            except Exception:  # noqa: BLE001, S112 - the next log is not a Transfer: not this payment
                continue
            args = transfer["args"]
            if (
                Web3.to_checksum_address(args["sender"]) == Web3.to_checksum_address(authorizer)
                and Web3.to_checksum_address(args["receiver"]) == Web3.to_checksum_address(receiver)
                and int(args["value"]) == amount
            ):
                return True
        return False

    return await chain.run(read)
