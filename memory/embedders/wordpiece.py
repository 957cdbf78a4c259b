"""BERT-uncased WordPiece tokenization in plain Python, the same ids as Hugging Face's ``tokenizers``.

MiniLM reads word pieces. The ``tokenizers`` package did this, and with it came ``huggingface_hub``
and its downloader (about 36 MB of a runtime install that downloads nothing). This module does what
its ``BertWordPieceTokenizer(lowercase=True, clean_text=True, handle_chinese_chars=True)`` did, step
for step: clean the text (drop control characters, every kind of space becomes a space), put spaces
around CJK ideographs, strip accents (NFD, then drop combining marks), lowercase; split on spaces and
around punctuation; then each word into the longest pieces of the vocabulary, left to right, a piece
inside a word prefixed ``##``, a word that cannot be split (or of more than 100 characters) being
``[UNK]``; then ``[CLS] … [SEP]``, truncated to ``max_tokens``. ``tests/memory/test_wordpiece.py``
checks the ids against the ``tokenizers`` package (a development dependency) on the project's texts
and on edge cases.

Words repeat, so each word's pieces are kept (bounded): a batch of ordinary text costs tens of
microseconds a text, next to milliseconds for the model.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

import numpy as np

MAX_WORD_CHARS = 100
#: Code point ranges BERT treats as CJK ideographs (each becomes a word of its own).
_CJK = (
    (0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F), (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F),
)  # fmt: skip


def _is_cjk(code: int) -> bool:
    return any(low <= code <= high for low, high in _CJK)


def _is_control(char: str) -> bool:
    """A control, format, private-use or surrogate character (Cc, Cf, Co, Cs) other than tab, newline
    and return; an unassigned one (Cn) stays, as ``tokenizers`` has it (and becomes ``[UNK]``)."""
    return char not in "\t\n\r" and unicodedata.category(char) in ("Cc", "Cf", "Co", "Cs")


def _is_whitespace(char: str) -> bool:
    """What is left of Unicode's White_Space once controls are gone: the three, and Zs, Zl, Zp."""
    return char in " \t\n\r" or unicodedata.category(char) in ("Zs", "Zl", "Zp")


def _is_punctuation(char: str) -> bool:
    code = ord(char)
    if 33 <= code <= 47 or 58 <= code <= 64 or 91 <= code <= 96 or 123 <= code <= 126:
        return True
    return unicodedata.category(char).startswith("P")


def normalise(text: str) -> str:
    """Clean, space out CJK, strip accents, lowercase: BERT's normaliser, in its order."""
    out = []
    for char in text:
        code = ord(char)
        if code == 0 or code == 0xFFFD or _is_control(char):
            continue
        if _is_whitespace(char):
            out.append(" ")
        elif _is_cjk(code):
            out.append(f" {char} ")
        else:
            out.append(char)
    decomposed = unicodedata.normalize("NFD", "".join(out))
    stripped = "".join(c for c in decomposed if unicodedata.category(c) != "Mn")
    # Character by character, as ``tokenizers`` does: str.lower() would make a word-final capital sigma ς.
    return stripped.lower() if "\u03a3" not in stripped else "".join(c.lower() for c in stripped)


def words(text: str) -> list[str]:
    """BERT's pre-tokenizer: split on whitespace, and every punctuation character is a word."""
    out: list[str] = []
    for chunk in text.split():
        start = 0
        for i, char in enumerate(chunk):
            if _is_punctuation(char):
                if start < i:
                    out.append(chunk[start:i])
                out.append(char)
                start = i + 1
        if start < len(chunk):
            out.append(chunk[start:])
    return out


class WordPiece:
    """Token ids for texts, from a ``vocab.txt`` (one piece a line, the line number its id)."""

    def __init__(self, vocab_path: Path, max_tokens: int, *, cache_words: int = 50_000) -> None:
        pieces = vocab_path.read_text("utf-8").splitlines()
        self._ids = {piece: index for index, piece in enumerate(pieces)}
        self.unk, self.cls, self.sep, self.pad = (self._ids[t] for t in ("[UNK]", "[CLS]", "[SEP]", "[PAD]"))
        self.max_tokens = max_tokens
        self._word_ids = lru_cache(maxsize=cache_words)(self._split_word)

    def _split_word(self, word: str) -> tuple[int, ...]:
        if len(word) > MAX_WORD_CHARS:
            return (self.unk,)
        ids = []
        start = 0
        while start < len(word):
            end = len(word)
            found = None
            while start < end:
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                found = self._ids.get(piece)
                if found is not None:
                    break
                end -= 1
            if found is None:
                return (self.unk,)
            ids.append(found)
            start = end
        return tuple(ids)

    def encode(self, text: str) -> list[int]:
        """``[CLS]``, the text's pieces (as many as fit), ``[SEP]``."""
        ids = [self.cls]
        limit = self.max_tokens - 1  # [CLS] and the pieces; [SEP] makes max_tokens
        for word in words(normalise(text)):
            ids.extend(self._word_ids(word))
            if len(ids) > limit:
                del ids[limit:]
                break
        ids.append(self.sep)
        return ids

    def encode_batch(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Ids and attention mask, padded with ``[PAD]`` to the longest text of the batch."""
        return self.padded([self.encode(t) for t in texts])

    def padded(self, rows: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
        """Encoded texts as ids and attention mask, padded with ``[PAD]`` to the longest."""
        width = max((len(r) for r in rows), default=0)
        ids = np.full((len(rows), width), self.pad, dtype=np.int64)
        mask = np.zeros((len(rows), width), dtype=np.int64)
        for i, row in enumerate(rows):
            ids[i, : len(row)] = row
            mask[i, : len(row)] = 1
        return ids, mask
