# pragma version 0.4.3
# @title Skill purchase escrow
# @notice The buyer locks the price for one purchase; the buyer releases it to the seller once the
#         delivered skill matched the signed listing, or takes it back after the deadline if
#         nothing valid was delivered. A purchase id can be locked once, ever: a payment is never
#         made twice for the same purchase.

interface IERC20:
    def transferFrom(sender: address, receiver: address, amount: uint256) -> bool: nonpayable
    def transfer(receiver: address, amount: uint256) -> bool: nonpayable
    def permit(owner: address, spender: address, amount: uint256, deadline: uint256, v: uint8, r: bytes32, s: bytes32): nonpayable

UNUSED: constant(uint8) = 0
LOCKED: constant(uint8) = 1
RELEASED: constant(uint8) = 2
REFUNDED: constant(uint8) = 3

struct Lock:
    buyer: address
    seller: address
    amount: uint256
    deadline: uint256
    state: uint8

event Locked:
    purchase_id: indexed(bytes32)
    buyer: indexed(address)
    seller: indexed(address)
    amount: uint256
    deadline: uint256

event Released:
    purchase_id: indexed(bytes32)
    amount: uint256

event Refunded:
    purchase_id: indexed(bytes32)
    amount: uint256

token: public(immutable(address))
locks: public(HashMap[bytes32, Lock])


@deploy
def __init__(token_address: address):
    token = token_address


@internal
def _lock(purchase_id: bytes32, seller: address, amount: uint256, deadline: uint256):
    assert self.locks[purchase_id].state == UNUSED, "purchase already locked"
    assert amount > 0, "nothing to lock"
    assert seller != empty(address), "no seller"
    assert deadline > block.timestamp, "deadline in the past"
    self.locks[purchase_id] = Lock(buyer=msg.sender, seller=seller, amount=amount, deadline=deadline, state=LOCKED)
    assert extcall IERC20(token).transferFrom(msg.sender, self, amount), "transfer failed"
    log Locked(purchase_id=purchase_id, buyer=msg.sender, seller=seller, amount=amount, deadline=deadline)


@external
def lock(purchase_id: bytes32, seller: address, amount: uint256, deadline: uint256):
    """Lock after an ``approve`` of this escrow for ``amount``."""
    self._lock(purchase_id, seller, amount, deadline)


@external
def lock_with_permit(
    purchase_id: bytes32,
    seller: address,
    amount: uint256,
    deadline: uint256,
    permit_deadline: uint256,
    v: uint8,
    r: bytes32,
    s: bytes32,
):
    """Lock in one transaction: the buyer's EIP-2612 permit replaces the separate approve."""
    extcall IERC20(token).permit(msg.sender, self, amount, permit_deadline, v, r, s)
    self._lock(purchase_id, seller, amount, deadline)


@external
def release(purchase_id: bytes32):
    entry: Lock = self.locks[purchase_id]
    assert entry.state == LOCKED, "not locked"
    assert msg.sender == entry.buyer, "only the buyer releases"
    self.locks[purchase_id].state = RELEASED
    assert extcall IERC20(token).transfer(entry.seller, entry.amount), "transfer failed"
    log Released(purchase_id=purchase_id, amount=entry.amount)


@external
def refund(purchase_id: bytes32):
    entry: Lock = self.locks[purchase_id]
    assert entry.state == LOCKED, "not locked"
    assert block.timestamp >= entry.deadline, "deadline not reached"
    self.locks[purchase_id].state = REFUNDED
    assert extcall IERC20(token).transfer(entry.buyer, entry.amount), "transfer failed"
    log Refunded(purchase_id=purchase_id, amount=entry.amount)
