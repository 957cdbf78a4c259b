"""The plain-Python WordPiece (memory.embedders.wordpiece) gives the ids Hugging Face's ``tokenizers``
gives, configured as the MiniLM embedder had it: on the project's own texts, on the edge cases of
BERT's normaliser, on every character, and on any text Hypothesis writes.

With one known difference: ``tokenizers`` classifies characters by older Unicode tables than Python
3.11's (Unicode 14), so 757 characters assigned since (newer marks, punctuation, format characters,
CJK extension F) are unassigned to it: kept inside their word, which becomes ``[UNK]``; and two
changed category. Here they are what Unicode 14 says they are. A test checks that every difference
is such a character."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from tokenizers import BertWordPieceTokenizer

from memory.embedders.minilm_onnx import MAX_TOKENS, VOCAB_PATH
from memory.embedders.wordpiece import WordPiece

ROOT = Path(__file__).resolve().parents[2]
EDGES = [
    "",
    "Café naïve résumé, Ångström and façade",
    "ΟΔΟΣ Σ σ ς: a capital sigma ending a word",
    "日本語のテキスト and 中文 inside English, 한국어 too",
    "tab\there, vertical\x0btab, next\x85line, line\u2028separator, no\u00a0break, zero\u200bwidth",
    "nul\x00 and the replacement \ufffd character",
    "emoji 😀👍🏽 and a flag 🇵🇹",
    "don't stop-me now!! (really?) [yes] {no} <maybe> ~tilde~ `code` $5 #tag @me 50% a&b a|b",
    "ﬁ ligature, ＦＵＬＬ width, ① circled, x² superscript",
    "İstanbul, ß, Æsir, Øresund, ŁÓDŹ",
    "a" * 101,
    "a" * 100,
    " ".join(["word"] * 400),
    "supercalifragilisticexpialidocious antidisestablishmentarianism",
    "\u0301\u0301 lone combining marks",
    "\ue000 private use and \U000e0001 tag",
]


@pytest.fixture(scope="module")
def reference() -> Any:
    tokenizer = BertWordPieceTokenizer(
        str(VOCAB_PATH), lowercase=True, strip_accents=None, clean_text=True, handle_chinese_chars=True
    )
    tokenizer.enable_truncation(MAX_TOKENS)
    return tokenizer


@pytest.fixture(scope="module")
def ours() -> WordPiece:
    return WordPiece(VOCAB_PATH, MAX_TOKENS)


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _project_texts() -> list[str]:
    texts: list[str] = []
    for path in sorted([*ROOT.glob("bench/data/**/*.jsonl"), *ROOT.glob("memory/cognition/data/*.jsonl")]):
        for line in path.read_text("utf-8").splitlines():
            if line.strip():
                texts.extend(_strings(json.loads(line)))
    return texts


def test_the_projects_texts_and_the_normalisers_edge_cases_get_the_same_ids(reference: Any, ours: WordPiece) -> None:
    texts = _project_texts() + EDGES
    assert len(texts) > 5_000  # the sets were found
    differ = [t[:60] for t in texts if reference.encode(t).ids != ours.encode(t)]
    assert differ == []


#: Two characters whose category Unicode changed after the reference's tables: a sign it splits off as
#: punctuation (Po, So since Unicode 12), a vowel sign it strips as a combining mark (Mn, Mc since 14).
RECLASSIFIED = {"\u166d", "\u1734"}


def _newer_than_the_reference(reference: Any, ours: WordPiece, char: str) -> bool:
    """A character the reference treats as unassigned (as it does U+0378) where Unicode 14 assigns it,
    or one whose category changed since."""
    probe = f"a{char}b"
    unassigned = reference.encode(probe).ids == reference.encode("a\u0378b").ids != ours.encode(probe)
    return unassigned or char in RECLASSIFIED


@given(st.text(max_size=300))
def test_any_text_gets_the_same_ids(reference: Any, ours: WordPiece, text: str) -> None:
    if ours.encode(text) != reference.encode(text).ids:
        assert any(_newer_than_the_reference(reference, ours, c) for c in text), text


@pytest.mark.slow  # every character of the basic multilingual plane, both ways
def test_every_character_differs_only_where_the_reference_does_not_know_it(reference: Any, ours: WordPiece) -> None:
    chars = [chr(c) for c in range(0x10000) if not 0xD800 <= c <= 0xDFFF]
    probes = [f"a{c}b" for c in chars]
    expected = reference.encode_batch(probes)
    differ = [c for c, probe, e in zip(chars, probes, expected, strict=True) if ours.encode(probe) != e.ids]
    unexplained = [hex(ord(c)) for c in differ if not _newer_than_the_reference(reference, ours, c)]
    assert unexplained == []
    assert len(differ) < 300  # of 63,488: a few ranges of late additions


def test_a_batch_is_padded_to_its_longest_text_with_a_mask(reference: Any, ours: WordPiece) -> None:
    texts = ["short", "a somewhat longer text, with punctuation", ""]
    ids, mask = ours.encode_batch(texts)
    reference.enable_padding(pad_id=0, pad_token="[PAD]")
    try:
        expected = reference.encode_batch(texts)
    finally:
        reference.no_padding()
    assert np.array_equal(ids, np.array([e.ids for e in expected]))
    assert np.array_equal(mask, np.array([e.attention_mask for e in expected]))
