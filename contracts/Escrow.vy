# pragma version 0.4.3
# @title Skill purchase escrow: an optimistic fair exchange whose arbiter judges only what is on chain
# @notice The buyer locks the price for one purchase, within the deadline bounds set at deployment.
#         Paid to the seller: when the buyer releases it, or when the seller committed its delivery
#         before the deadline and the dispute window then passed without a dispute. The commitment
#         carries the delivery itself: the skill sealed to the buyer's key (X25519 with a one-time
#         key of the seller's), so a buyer that "received nothing" reads it from the chain, and
#         nobody else can open it. Back to the buyer: after the deadline when nothing was committed.
#         A buyer that cannot open the committed delivery, or finds another skill in it, disputes
#         within the window; the seller answers by publishing its one-time secret, which opens the
#         commitment for anyone; the arbiter named at deployment then compares what it opens to with
#         the content hash of the terms, in one transaction. No answer by the end of the arbitration
#         window refunds the buyer; an answer the arbiter leaves undecided that long pays the seller.
#         Released money is owed to the seller here until it withdraws it (one transfer for many
#         sales; a seller the token refuses to pay cannot block a release) or spends it on its own
#         purchases (``lock_from_credit``). Refunds go straight back to the buyer, or, when the token
#         refuses that transfer (USDC's blacklist or pause), are owed to the buyer the same way. A
#         withdrawal the token refuses reverts and leaves the credit: nothing is ever stuck in a deal.
#
#         The state machine (t: the time stored with the state, of the move that entered it):
#           (none) --lock by the buyer--> LOCKED
#           LOCKED --release by the buyer--> RELEASED (owed to the seller)
#           LOCKED --commit by the seller, before the deadline--> DELIVERED (t = commit)
#           LOCKED --refund by anyone, from the deadline--> REFUNDED (to the buyer, or owed to it)
#           DELIVERED --release by the buyer--> RELEASED
#           DELIVERED --dispute by the buyer, before t + dispute_window--> DISPUTED (t = dispute)
#           DELIVERED --claim by anyone, from t + dispute_window--> RELEASED
#           DISPUTED --answer by the seller, before t + arbitration_window--> ANSWERED (t = answer)
#           DISPUTED --refund by anyone, from t + arbitration_window--> REFUNDED
#           ANSWERED --resolve by the arbiter--> RELEASED or REFUNDED
#           ANSWERED --claim by anyone, from t + arbitration_window--> RELEASED
#         The seller has the arbitration window to answer and the arbiter the same window to decide,
#         each from the other's move. RELEASED and REFUNDED are final; what they pay is owed[party]
#         (withdraw, or lock_from_credit) except a refund the token took at once. owed[party] only
#         falls by the party's own withdraw or lock_from_credit.
#         A purchase id is the buyer's own (keccak of its address and a nonce): nobody else can take
#         one. The nonce is keccak(salt, the buyer's node key) for the seller's salt, so the terms
#         name the key the delivery must be sealed to. Each deal is one storage word: the hash of its
#         terms, its state and its commit time; the terms are passed again with each call and
#         checked against that hash.

interface IERC20:
    def transferFrom(sender: address, receiver: address, amount: uint256) -> bool: nonpayable
    def transfer(receiver: address, amount: uint256) -> bool: nonpayable
    def permit(owner: address, spender: address, amount: uint256, deadline: uint256, v: uint8, r: bytes32, s: bytes32): nonpayable
    def allowance(owner: address, spender: address) -> uint256: view

struct Terms:
    buyer: address
    nonce: bytes32
    seller: address
    amount: uint256
    content_hash: bytes32
    deadline: uint256

LOCKED: constant(uint256) = 1
DELIVERED: constant(uint256) = 2
DISPUTED: constant(uint256) = 3
RELEASED: constant(uint256) = 4
REFUNDED: constant(uint256) = 5
ANSWERED: constant(uint256) = 6

#: The largest sealed delivery a commitment carries (a skill of about 32 KB).
MAX_SEALED: constant(uint256) = 32768

TERMS_SHIFT: constant(uint256) = 96
STATE_SHIFT: constant(uint256) = 64
TIME_MASK: constant(uint256) = 2**64 - 1

event Committed:
    purchase_id: indexed(bytes32)
    ephemeral: bytes32  # the seller's one-time X25519 public key
    salt: bytes32  # with the buyer's node key, the nonce of the terms
    recipient: bytes32  # the buyer's node key (Ed25519) the delivery is sealed to
    sealed: Bytes[MAX_SEALED]  # the skill, sealed to the recipient

event Disputed:
    purchase_id: indexed(bytes32)

event Answered:
    purchase_id: indexed(bytes32)
    secret: bytes32  # the seller's one-time X25519 secret: anyone can now open the commitment
    buyer: address  # the terms, so that an arbiter that sees only this event can judge and resolve
    nonce: bytes32
    seller: address
    amount: uint256
    content_hash: bytes32
    deadline: uint256

event Released:
    purchase_id: indexed(bytes32)

event Withdrawn:
    account: indexed(address)
    amount: uint256

event Refunded:
    purchase_id: indexed(bytes32)
    amount: uint256

#: What this escrow speaks: 2 is the sealed commitment answered on chain (a node checks it at connect).
PROTOCOL_VERSION: public(constant(uint256)) = 2

token: public(immutable(address))
arbiter: public(immutable(address))
min_delivery_window: public(immutable(uint256))
max_lock: public(immutable(uint256))
dispute_window: public(immutable(uint256))
arbitration_window: public(immutable(uint256))
deals: public(HashMap[bytes32, uint256])
owed: public(HashMap[address, uint256])


@deploy
def __init__(
    token_address: address,
    arbiter_address: address,
    min_window: uint256,
    max_lock_time: uint256,
    dispute_time: uint256,
    arbitration_time: uint256,
):
    assert token_address != empty(address), "no token"
    assert arbiter_address != empty(address), "no arbiter"
    assert min_window > 0 and min_window <= max_lock_time, "bad deadline bounds"
    assert dispute_time > 0 and arbitration_time > 0, "bad windows"
    token = token_address
    arbiter = arbiter_address
    min_delivery_window = min_window
    max_lock = max_lock_time
    dispute_window = dispute_time
    arbitration_window = arbitration_time


@external
@pure
def purchase_id(buyer: address, nonce: bytes32) -> bytes32:
    return keccak256(abi_encode(buyer, nonce))


@internal
@pure
def _id(terms: Terms) -> bytes32:
    return keccak256(abi_encode(terms.buyer, terms.nonce))


@internal
@pure
def _fingerprint(terms: Terms) -> uint256:
    return convert(keccak256(abi_encode(terms)), uint256) >> TERMS_SHIFT


@internal
@pure
def _word(fingerprint: uint256, state: uint256, at: uint256) -> uint256:
    return (fingerprint << TERMS_SHIFT) | (state << STATE_SHIFT) | at


@internal
@view
def _load(terms: Terms) -> (bytes32, uint256, uint256):
    """The deal's id, state and commit time; reverts unless these are its terms."""
    deal_id: bytes32 = self._id(terms)
    word: uint256 = self.deals[deal_id]
    assert word != 0 and word >> TERMS_SHIFT == self._fingerprint(terms), "no such deal"
    return deal_id, (word >> STATE_SHIFT) & 255, word & TIME_MASK


@internal
def _pay(deal_id: bytes32, terms: Terms, state: uint256, receiver: address):
    self.deals[deal_id] = self._word(self._fingerprint(terms), state, 0)
    if state == RELEASED:
        self.owed[receiver] += terms.amount
        log Released(purchase_id=deal_id)
        return
    # A refund goes straight back to the buyer when the token takes it; when it refuses (the buyer
    # blacklisted, the token paused) the deal still ends and the money is owed to the buyer here,
    # to withdraw once the token lets it: no state of the deal waits on the token.
    ok: bool = False
    answer: Bytes[32] = b""
    ok, answer = raw_call(
        token,
        abi_encode(receiver, terms.amount, method_id=method_id("transfer(address,uint256)")),
        max_outsize=32,
        revert_on_failure=False,
    )
    if not ok or (len(answer) == 32 and convert(answer, uint256) == 0):
        self.owed[receiver] += terms.amount
    log Refunded(purchase_id=deal_id, amount=terms.amount)


@internal
def _lock(terms: Terms, from_credit: bool):
    assert terms.buyer == msg.sender, "the buyer locks its own purchase"
    deal_id: bytes32 = self._id(terms)
    assert self.deals[deal_id] == 0, "purchase already locked"
    assert terms.amount > 0, "nothing to lock"
    assert terms.seller != empty(address) and terms.seller != msg.sender, "no seller"
    assert terms.deadline >= block.timestamp + min_delivery_window, "deadline nearer than the delivery window"
    assert terms.deadline <= block.timestamp + max_lock, "deadline further than the longest lock"
    self.deals[deal_id] = self._word(self._fingerprint(terms), LOCKED, 0)
    if from_credit:
        assert self.owed[msg.sender] >= terms.amount, "not owed that much"
        self.owed[msg.sender] -= terms.amount
    else:
        assert extcall IERC20(token).transferFrom(msg.sender, self, terms.amount), "transfer failed"


@external
def lock(terms: Terms):
    """Lock after an ``approve`` of this escrow for at least the amount."""
    # The most frequent lock, so its checks are in line rather than through _lock (each internal call
    # copies the terms again): about 370 gas less per purchase. Same checks, same order. Like
    # release, it logs nothing of its own (about 1,100 gas each): the token's Transfer shows the
    # lock and status() every state; events are kept for what the other side must find (a
    # commitment, a dispute, an answer) and for payments by anyone (claim, refund, resolve).
    assert terms.buyer == msg.sender, "the buyer locks its own purchase"
    deal_id: bytes32 = keccak256(abi_encode(terms.buyer, terms.nonce))
    assert self.deals[deal_id] == 0, "purchase already locked"
    assert terms.amount > 0, "nothing to lock"
    assert terms.seller != empty(address) and terms.seller != msg.sender, "no seller"
    assert terms.deadline >= block.timestamp + min_delivery_window, "deadline nearer than the delivery window"
    assert terms.deadline <= block.timestamp + max_lock, "deadline further than the longest lock"
    fingerprint: uint256 = convert(keccak256(abi_encode(terms)), uint256) >> TERMS_SHIFT
    self.deals[deal_id] = (fingerprint << TERMS_SHIFT) | (LOCKED << STATE_SHIFT)
    assert extcall IERC20(token).transferFrom(msg.sender, self, terms.amount), "transfer failed"


@external
def lock_from_credit(terms: Terms):
    """Lock out of what the escrow owes the buyer (its own released sales): no token transfer."""
    self._lock(terms, True)


@external
def lock_with_permit(
    terms: Terms, permit_value: uint256, permit_deadline: uint256, v: uint8, r: bytes32, s: bytes32
):
    """Lock in one transaction: the buyer's EIP-2612 permit replaces the separate approve (for
    ``permit_value``, which may cover later locks too: only its own locks can draw on it). Anyone
    can submit a permit seen in flight first; the allowance it made then serves the same lock."""
    if staticcall IERC20(token).allowance(msg.sender, self) < terms.amount:
        extcall IERC20(token).permit(msg.sender, self, permit_value, permit_deadline, v, r, s)
    self._lock(terms, False)


@external
def withdraw(amount: uint256):
    """Pay out ``amount`` of what the escrow owes the sender (its released sales)."""
    assert amount > 0 and amount <= self.owed[msg.sender], "not owed that much"
    self.owed[msg.sender] -= amount
    assert extcall IERC20(token).transfer(msg.sender, amount), "transfer failed"
    log Withdrawn(account=msg.sender, amount=amount)


@external
def commit(terms: Terms, ephemeral: bytes32, salt: bytes32, recipient: bytes32, sealed: Bytes[MAX_SEALED]):
    """The seller puts its delivery on chain before the deadline: the skill sealed to the buyer. From
    then on no refund is possible without the arbiter, and the dispute window starts."""
    deal_id: bytes32 = empty(bytes32)
    state: uint256 = 0
    at: uint256 = 0
    deal_id, state, at = self._load(terms)
    assert msg.sender == terms.seller, "only the seller commits"
    assert state == LOCKED, "not locked"
    assert block.timestamp < terms.deadline, "deadline passed"
    assert len(sealed) > 0, "nothing sealed"
    self.deals[deal_id] = self._word(self._fingerprint(terms), DELIVERED, block.timestamp)
    log Committed(purchase_id=deal_id, ephemeral=ephemeral, salt=salt, recipient=recipient, sealed=sealed)


@external
def release(terms: Terms):
    """The buyer pays the seller now (the delivery checked out)."""
    # The most frequent call, so it reads the deal in line rather than through _load and _pay:
    # each terms hash is computed once (about 850 gas less per purchase).
    assert msg.sender == terms.buyer, "only the buyer releases"
    deal_id: bytes32 = self._id(terms)
    fingerprint: uint256 = self._fingerprint(terms)
    word: uint256 = self.deals[deal_id]
    assert word != 0 and word >> TERMS_SHIFT == fingerprint, "no such deal"
    state: uint256 = (word >> STATE_SHIFT) & 255
    assert state == LOCKED or state == DELIVERED, "not locked"
    self.deals[deal_id] = self._word(fingerprint, RELEASED, 0)
    self.owed[terms.seller] += terms.amount


@external
def claim(terms: Terms):
    """Anyone pays the seller once its committed delivery was not disputed in the window, or once the
    arbiter left its answer to a dispute undecided for the arbitration window after the answer."""
    deal_id: bytes32 = empty(bytes32)
    state: uint256 = 0
    at: uint256 = 0
    deal_id, state, at = self._load(terms)
    if state == DELIVERED:
        assert block.timestamp >= at + dispute_window, "dispute window open"
    else:
        # The arbiter has the whole window from the answer, however late in its own window the
        # seller answered: a last-second answer cannot be claimed a second later, undecided.
        assert state == ANSWERED, "nothing to claim"
        assert block.timestamp >= at + arbitration_window, "in arbitration"
    self._pay(deal_id, terms, RELEASED, terms.seller)


@external
def refund(terms: Terms):
    """Anyone returns the money to the buyer once the deadline passed with no delivery committed, or
    once a dispute went unanswered by the seller for the arbitration window after it."""
    deal_id: bytes32 = empty(bytes32)
    state: uint256 = 0
    at: uint256 = 0
    deal_id, state, at = self._load(terms)
    if state == LOCKED:
        assert block.timestamp >= terms.deadline, "deadline not reached"
    else:
        assert state == DISPUTED, "not refundable"
        assert block.timestamp >= at + arbitration_window, "in arbitration"
    self._pay(deal_id, terms, REFUNDED, terms.buyer)


@external
def dispute(terms: Terms):
    """The buyer contests the committed delivery within the window: the seller must answer."""
    deal_id: bytes32 = empty(bytes32)
    state: uint256 = 0
    at: uint256 = 0
    deal_id, state, at = self._load(terms)
    assert msg.sender == terms.buyer, "only the buyer disputes"
    assert state == DELIVERED, "no delivery to dispute"
    assert block.timestamp < at + dispute_window, "dispute window closed"
    self.deals[deal_id] = self._word(self._fingerprint(terms), DISPUTED, block.timestamp)
    log Disputed(purchase_id=deal_id)


@external
def answer(terms: Terms, secret: bytes32):
    """The seller answers a dispute with its one-time secret, which opens the committed delivery for
    the arbiter (and anyone): the arbiter judges from the chain alone."""
    deal_id: bytes32 = empty(bytes32)
    state: uint256 = 0
    at: uint256 = 0
    deal_id, state, at = self._load(terms)
    assert msg.sender == terms.seller, "only the seller answers"
    assert state == DISPUTED, "not disputed"
    assert block.timestamp < at + arbitration_window, "arbitration window closed"
    self.deals[deal_id] = self._word(self._fingerprint(terms), ANSWERED, block.timestamp)
    log Answered(
        purchase_id=deal_id, secret=secret, buyer=terms.buyer, nonce=terms.nonce, seller=terms.seller,
        amount=terms.amount, content_hash=terms.content_hash, deadline=terms.deadline,
    )


@external
def resolve(terms: Terms, to_seller: bool):
    """The arbiter's decision on a dispute the seller answered, in one transaction."""
    deal_id: bytes32 = empty(bytes32)
    state: uint256 = 0
    at: uint256 = 0
    deal_id, state, at = self._load(terms)
    assert msg.sender == arbiter, "only the arbiter resolves"
    # An unanswered dispute is not the arbiter's to decide: it refunds by itself once the seller had
    # the whole arbitration window to answer, so the arbiter can never cut an honest seller short.
    assert state == ANSWERED, "the seller has not answered"
    if to_seller:
        self._pay(deal_id, terms, RELEASED, terms.seller)
    else:
        self._pay(deal_id, terms, REFUNDED, terms.buyer)


@external
@view
def status(terms: Terms) -> (uint256, uint256):
    """(state, time of its last move: commitment, dispute or answer) of the deal with exactly these
    terms; (0, 0) for none."""
    word: uint256 = self.deals[self._id(terms)]
    if word == 0 or word >> TERMS_SHIFT != self._fingerprint(terms):
        return 0, 0
    return (word >> STATE_SHIFT) & 255, word & TIME_MASK
