# pragma version 0.4.3
# @title A USDC-like token for development and tests
# @notice 6 decimals, EIP-2612 permit and EIP-3009 transferWithAuthorization and
#         receiveWithAuthorization with USDC's selectors and typehashes, so the node's code runs
#         unchanged against real USDC. Unlike USDC: no proxy, no blacklist, no pause, no minter
#         allowances, no cancelAuthorization, no EIP-1271 (contract wallet) signatures.
#         Only the deployer may mint: this token is never meant for a public chain.

event Transfer:
    sender: indexed(address)
    receiver: indexed(address)
    value: uint256

event Approval:
    owner: indexed(address)
    spender: indexed(address)
    value: uint256

event AuthorizationUsed:
    authorizer: indexed(address)
    nonce: indexed(bytes32)

EIP712_TYPEHASH: constant(bytes32) = keccak256(
    "EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)"
)
PERMIT_TYPEHASH: constant(bytes32) = keccak256(
    "Permit(address owner,address spender,uint256 value,uint256 nonce,uint256 deadline)"
)
TRANSFER_WITH_AUTHORIZATION_TYPEHASH: constant(bytes32) = keccak256(
    "TransferWithAuthorization(address from,address to,uint256 value,uint256 validAfter,uint256 validBefore,bytes32 nonce)"
)
RECEIVE_WITH_AUTHORIZATION_TYPEHASH: constant(bytes32) = keccak256(
    "ReceiveWithAuthorization(address from,address to,uint256 value,uint256 validAfter,uint256 validBefore,bytes32 nonce)"
)

name: public(String[32])
symbol: public(String[16])
decimals: public(constant(uint8)) = 6
version: public(constant(String[8])) = "2"
totalSupply: public(uint256)
balanceOf: public(HashMap[address, uint256])
allowance: public(HashMap[address, HashMap[address, uint256]])
nonces: public(HashMap[address, uint256])
authorizationState: public(HashMap[address, HashMap[bytes32, bool]])
minter: public(address)


@deploy
def __init__():
    self.name = "Dev USD Coin"
    self.symbol = "dUSDC"
    self.minter = msg.sender


@internal
def _transfer(sender: address, receiver: address, amount: uint256):
    assert receiver != empty(address), "transfer to the zero address"
    assert self.balanceOf[sender] >= amount, "transfer amount exceeds balance"
    self.balanceOf[sender] -= amount
    self.balanceOf[receiver] += amount
    log Transfer(sender=sender, receiver=receiver, value=amount)


@internal
def _approve(owner: address, spender: address, amount: uint256):
    self.allowance[owner][spender] = amount
    log Approval(owner=owner, spender=spender, value=amount)


@view
@internal
def _domain_separator() -> bytes32:
    return keccak256(
        abi_encode(EIP712_TYPEHASH, keccak256(self.name), keccak256(version), chain.id, self)
    )


@view
@internal
def _signer(struct_hash: bytes32, v: uint8, r: bytes32, s: bytes32) -> address:
    digest: bytes32 = keccak256(concat(b"\x19\x01", self._domain_separator(), struct_hash))
    return ecrecover(digest, v, r, s)


@view
@external
def DOMAIN_SEPARATOR() -> bytes32:
    return self._domain_separator()


@external
def transfer(receiver: address, amount: uint256) -> bool:
    self._transfer(msg.sender, receiver, amount)
    return True


@external
def transferFrom(sender: address, receiver: address, amount: uint256) -> bool:
    assert self.allowance[sender][msg.sender] >= amount, "transfer amount exceeds allowance"
    self.allowance[sender][msg.sender] -= amount
    self._transfer(sender, receiver, amount)
    return True


@external
def approve(spender: address, amount: uint256) -> bool:
    self._approve(msg.sender, spender, amount)
    return True


@external
def mint(receiver: address, amount: uint256):
    assert msg.sender == self.minter, "only the minter mints"
    self.totalSupply += amount
    self.balanceOf[receiver] += amount
    log Transfer(sender=empty(address), receiver=receiver, value=amount)


@external
def permit(owner: address, spender: address, amount: uint256, deadline: uint256, v: uint8, r: bytes32, s: bytes32):
    assert block.timestamp <= deadline, "permit expired"
    nonce: uint256 = self.nonces[owner]
    struct_hash: bytes32 = keccak256(abi_encode(PERMIT_TYPEHASH, owner, spender, amount, nonce, deadline))
    signer: address = self._signer(struct_hash, v, r, s)
    assert signer != empty(address) and signer == owner, "invalid signature"
    self.nonces[owner] = nonce + 1
    self._approve(owner, spender, amount)


@internal
def _use_authorization(
    typehash: bytes32,
    authorizer: address,
    receiver: address,
    amount: uint256,
    valid_after: uint256,
    valid_before: uint256,
    nonce: bytes32,
    v: uint8,
    r: bytes32,
    s: bytes32,
):
    assert block.timestamp > valid_after, "authorization is not yet valid"
    assert block.timestamp < valid_before, "authorization is expired"
    assert not self.authorizationState[authorizer][nonce], "authorization is used"
    struct_hash: bytes32 = keccak256(abi_encode(typehash, authorizer, receiver, amount, valid_after, valid_before, nonce))
    signer: address = self._signer(struct_hash, v, r, s)
    assert signer != empty(address) and signer == authorizer, "invalid signature"
    self.authorizationState[authorizer][nonce] = True
    log AuthorizationUsed(authorizer=authorizer, nonce=nonce)
    self._transfer(authorizer, receiver, amount)


@external
def transferWithAuthorization(
    authorizer: address,
    receiver: address,
    amount: uint256,
    valid_after: uint256,
    valid_before: uint256,
    nonce: bytes32,
    v: uint8,
    r: bytes32,
    s: bytes32,
):
    self._use_authorization(
        TRANSFER_WITH_AUTHORIZATION_TYPEHASH, authorizer, receiver, amount, valid_after, valid_before, nonce, v, r, s
    )


@external
def receiveWithAuthorization(
    authorizer: address,
    receiver: address,
    amount: uint256,
    valid_after: uint256,
    valid_before: uint256,
    nonce: bytes32,
    v: uint8,
    r: bytes32,
    s: bytes32,
):
    """EIP-3009's front-running-proof form, as USDC has it: only the payee may submit it."""
    assert msg.sender == receiver, "caller must be the payee"
    self._use_authorization(
        RECEIVE_WITH_AUTHORIZATION_TYPEHASH, authorizer, receiver, amount, valid_after, valid_before, nonce, v, r, s
    )
