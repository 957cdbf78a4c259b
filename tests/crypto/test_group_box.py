"""Blobs sealed for the device group: members of the epoch read them, no one else, and their size
says only the bucket."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crypto.errors import GroupSealError
from crypto.group_box import BUCKETS, MAX_PLAINTEXT, GroupKey, epoch_of, open_sealed, seal

KEY = GroupKey.generate(3)
BOUND = b"group-1|laptop|42"
OVERHEAD = 4 + 4 + 12 + 16 + 32


@pytest.mark.parametrize("length", [0, 1, 251, 252, 253, 1_020, 1_021, 16_380, MAX_PLAINTEXT])
def test_a_blob_opens_to_its_words_and_its_size_is_only_the_bucket(length: int) -> None:
    words = bytes(range(256)) * (length // 256) + bytes(length % 256)
    sealed = seal(KEY, BOUND, words)
    assert open_sealed({3: KEY}, BOUND, sealed) == words
    assert len(sealed) - OVERHEAD in BUCKETS
    assert len(sealed) - OVERHEAD == next(b for b in BUCKETS if length + 4 <= b)
    assert epoch_of(sealed) == 3


def test_words_of_different_lengths_in_one_bucket_look_the_same_size() -> None:
    assert len(seal(KEY, BOUND, b"yes")) == len(seal(KEY, BOUND, b"my passport number is X1234567, renew by May"))


def test_too_much_for_one_blob_is_refused() -> None:
    with pytest.raises(GroupSealError, match="more than"):
        seal(KEY, BOUND, bytes(MAX_PLAINTEXT + 1))


@given(position=st.integers(min_value=0), flip=st.integers(1, 255))
@settings(max_examples=200)
def test_any_byte_changed_on_the_way_is_refused(position: int, flip: int) -> None:
    sealed = bytearray(seal(KEY, BOUND, b"The Berlin trip is in June"))
    sealed[position % len(sealed)] ^= flip
    with pytest.raises(GroupSealError):
        open_sealed({3: KEY}, BOUND, bytes(sealed))


def test_a_blob_moved_to_another_operation_group_or_epoch_is_refused() -> None:
    sealed = seal(KEY, BOUND, b"words")
    with pytest.raises(GroupSealError, match="MAC"):
        open_sealed({3: KEY}, b"group-1|laptop|43", sealed)
    with pytest.raises(GroupSealError, match="MAC"):
        open_sealed({3: GroupKey(3, bytes(32))}, BOUND, sealed)  # another group's key, same epoch
    with pytest.raises(GroupSealError, match="epoch 3"):
        open_sealed({2: KEY}, BOUND, sealed)


def test_a_removed_device_keeps_the_old_key_and_cannot_read_the_new_epoch() -> None:
    old, new = GroupKey.generate(0), GroupKey.generate(1)
    after_removal = seal(new, BOUND, b"written after the pi was removed")
    with pytest.raises(GroupSealError, match="epoch 1"):
        open_sealed({0: old}, BOUND, after_removal)
    assert open_sealed({0: old, 1: new}, BOUND, after_removal) == b"written after the pi was removed"


@given(blob=st.binary(max_size=70_000))
@settings(max_examples=200)
def test_any_bytes_from_outside_get_the_error_and_nothing_else(blob: bytes) -> None:
    with pytest.raises(GroupSealError):
        open_sealed({3: KEY}, BOUND, blob)
