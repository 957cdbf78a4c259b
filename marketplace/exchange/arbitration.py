"""The arbiter's judgement of a disputed purchase, from the chain alone.

Everything it needs is on chain: the terms (their fingerprint is the deal's word; the seller's
answer logs them in full), the delivery the seller committed (the skill sealed to the buyer's node
key, with the one-time key's public half, the salt and the recipient), and the one-time secret the
seller published in answer to the dispute. No message from either party counts, so no key made for
the occasion can sway it, and who speaks first does not matter: the verdict is a function of the
chain. The seller wins only if its secret opens the very bytes it committed, sealed to the key the
buyer locked for, and they hold exactly the listed content.
"""

from __future__ import annotations

from dataclasses import dataclass

from crypto.delivery_box import ephemeral_public, open_with_secret
from crypto.errors import SealedDataTampered
from marketplace.chain_types import Commitment, DealState, DealTerms
from marketplace.errors import PurchaseError
from marketplace.escrow import Escrow
from marketplace.exchange.protocol import box_nonce, nonce_of
from marketplace.gossip.skill_bytes import skill_hash


class NotArbitrable(PurchaseError):
    """No answered dispute to judge: the deal is elsewhere, or its seller has not answered."""


@dataclass(frozen=True, slots=True)
class Verdict:
    terms: DealTerms
    to_seller: bool
    why: str


def judge(terms: DealTerms, commitment: Commitment | None, secret: bytes | None) -> Verdict:
    """The decision on a disputed deal from what the chain holds of it (pure)."""

    def buyer(why: str) -> Verdict:
        return Verdict(terms, False, why)

    if commitment is None:
        return buyer("no delivery was committed for this deal")
    if secret is None or len(secret) != 32:
        return buyer("the seller did not answer the dispute with its one-time secret")
    if ephemeral_public(secret) != commitment.ephemeral:
        return buyer("the secret the seller published is not the one its delivery was sealed with")
    if nonce_of(commitment.salt, commitment.recipient) != terms.nonce:
        return buyer("the delivery was sealed to a key the buyer did not lock for")
    try:
        data = open_with_secret(secret, commitment.recipient, box_nonce(terms.purchase_id), commitment.sealed)
        text = data.decode("utf-8")
    except (SealedDataTampered, UnicodeDecodeError):
        return buyer("the committed delivery does not open with the seller's own secret")
    if skill_hash(text) != terms.content_hash.hex():
        return buyer("the committed delivery is not the listed content")
    return Verdict(terms, True, "the committed delivery is exactly the listed content")


async def judge_on_chain(escrow: Escrow, purchase_id: bytes) -> Verdict:
    """The verdict on an answered dispute, read from the chain (``NotArbitrable`` if there is none)."""
    answered = await escrow.answer_of(purchase_id)
    if answered is None:
        raise NotArbitrable("the seller has not answered a dispute of that purchase (none to judge yet)")
    terms, secret = answered
    status = await escrow.status(terms)
    if status.state is not DealState.ANSWERED:
        raise NotArbitrable(f"the escrow says the deal is {status.state}, not awaiting the arbiter")
    return judge(terms, await escrow.commitment(purchase_id), secret)
