"""Buying and selling a skill between two nodes: the stream protocol, the buyer, the seller, and
the records of their deals.

Quote, escrow, encrypted delivery, release or refund. Paying directly (``payment="direct"``)
replaces the escrow with an EIP-3009 ``transferWithAuthorization`` for exactly the price, with the
purchase id as its nonce (usable once, ever), sent with the delivery request; the seller collects
it on chain, then delivers. There is no escrow, so no refund: the buyer trusts the seller (its
trust level and reputation are the guard), and a refused delivery counts against it.
"""
