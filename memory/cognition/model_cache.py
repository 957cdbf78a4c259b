"""The typing models and the shipped examples' vectors, kept between processes in the user's cache
folder: the word model of the shipped examples (below), their vectors in each embedder's space
(``shipped_vectors``) and the model of meaning fitted on them (``meaning_model``).

Fitting it costs about 0.2 s of CPU, and every process that types a statement paid it: each
`memory add` or import run without a daemon, and each daemon's first statement. The fit is
deterministic, so its result is kept in the user's cache folder (platformdirs: ``$XDG_CACHE_HOME`` or
``~/.cache`` on Linux, then ``bitterbot-node``)
under a key of what decides it: the examples and the source of the module that fits them. A
different key, or a file that cannot be read whole, means fitting again, as before; a folder that
cannot be written means fitting in every process, as before. Nothing in the file is executed: numpy
arrays only, read with pickling refused.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
import zipfile
from collections.abc import Callable, Sequence
from functools import lru_cache
from pathlib import Path

import numpy as np

from ground.app import user_cache_folder
from memory.cognition import typing as typing_module
from memory.cognition import vector_typing
from memory.cognition.typing import CLASSES, Example, TypingModel, shipped_examples
from memory.cognition.vector_typing import VectorTypingModel


def model_key(examples: Sequence[Example]) -> str:
    """What the fitted weights depend on: the examples, and the code that turns them into weights."""
    digest = hashlib.sha256(Path(typing_module.__file__).read_bytes())
    for example in examples:
        digest.update(f"\0{example.semantic_type.value}\0{example.weight!r}\0{example.text}".encode())
    return digest.hexdigest()


def _load_arrays(path: Path, key: str, names: Sequence[str]) -> dict[str, np.ndarray] | None:
    """The arrays ``names`` kept at ``path`` under ``key``; None when absent, damaged or of another key.
    Nothing in the file is executed: pickling refused."""
    try:
        with np.load(path, allow_pickle=False) as kept:
            if str(kept["key"]) != key:
                return None
            return {name: kept[name] for name in names}
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):
        return None


def load(path: Path, key: str) -> TypingModel | None:
    """The model kept at ``path`` under ``key``; None when absent, damaged or of another key."""
    kept = _load_arrays(path, key, ("vocabulary", "weights", "bias"))
    if kept is None:
        return None
    vocabulary = {str(name): index for index, name in enumerate(kept["vocabulary"])}
    weights, bias = kept["weights"], kept["bias"]
    if weights.shape != (len(vocabulary), bias.shape[0]):
        return None
    return TypingModel(vocabulary, weights, bias)


def save(path: Path, key: str, model: TypingModel) -> None:
    """Keep ``model`` at ``path``, whole or not at all."""
    vocabulary, weights, bias = model.arrays()
    _save_arrays(path, key=np.array(key), vocabulary=np.array(vocabulary), weights=weights, bias=bias)


def _save_arrays(path: Path, **arrays: np.ndarray) -> None:
    """Written beside ``path``, then renamed over it: whole or not at all."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".part")
    try:
        with os.fdopen(handle, "wb") as out:
            np.savez(out, **arrays)  # type: ignore[arg-type]
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def fitted_once(examples: Sequence[Example], fit: Callable[[Sequence[Example]], TypingModel],
                folder: Path | None = None) -> TypingModel:  # fmt: skip
    """The model of ``examples``: read from the cache when it holds it, else fitted and kept there."""
    key = model_key(examples)
    path = (folder or user_cache_folder()) / f"typing-{key[:32]}.npz"
    kept = load(path, key)
    if kept is not None:
        return kept
    model = fit(examples)
    with contextlib.suppress(OSError):  # a read-only home: fitted per process, as before
        save(path, key, model)
    return model


@lru_cache(maxsize=1)
def shipped_model() -> TypingModel:
    """The model of the shipped examples alone: read from the cache, or fitted once per process."""
    return fitted_once(shipped_examples(), TypingModel.fit)


def shipped_vectors(space: str, embed: Callable[[Sequence[str]], np.ndarray], folder: Path | None = None) -> np.ndarray:
    """The shipped examples embedded in ``space`` (an embedder's id), read from the cache when it holds
    them. The model of meaning (``vector_typing``) is fitted on them in every process that refines a
    type, and embedding the 734 examples with MiniLM cost ~1.5 s (~3 s of CPU) each time: each
    `memory add` without a daemon paid it. The vectors are the embedder's, which is deterministic."""
    texts = [example.text for example in shipped_examples()]
    digest = hashlib.sha256(space.encode())
    for text in texts:
        digest.update(b"\0" + text.encode())
    key = digest.hexdigest()
    path = (folder or user_cache_folder()) / f"typing-vectors-{key[:32]}.npz"
    kept = _load_arrays(path, key, ("vectors",))
    if kept is not None and kept["vectors"].ndim == 2 and kept["vectors"].shape[0] == len(texts):
        return np.asarray(kept["vectors"], dtype=np.float32)
    vectors = np.asarray(embed(texts), dtype=np.float32)
    with contextlib.suppress(OSError):  # a read-only home: embedded per process, as before
        _save_arrays(path, key=np.array(key), vectors=vectors)
    return vectors


def meaning_model(space: str, vectors: np.ndarray, examples: Sequence[Example],
                  folder: Path | None = None) -> VectorTypingModel:  # fmt: skip
    """The model of meaning fitted on ``vectors`` (one row per example, of the embedder ``space``),
    read from the cache when it was fitted on the same: the fit is deterministic, and cost ~0.27 s of
    CPU in every process that refined a type. One file per space, holding the latest fit: a person's
    corrections change the examples, and a file per set of them would pile up."""
    rows = np.ascontiguousarray(vectors, dtype=np.float32)
    digest = hashlib.sha256(Path(vector_typing.__file__).read_bytes())
    digest.update(rows.tobytes())
    for example in examples:
        digest.update(f"\0{example.semantic_type.value}\0{example.weight!r}".encode())
    key = digest.hexdigest()
    path = (folder or user_cache_folder()) / f"typing-meaning-{hashlib.sha256(space.encode()).hexdigest()[:32]}.npz"
    kept = _load_arrays(path, key, ("weights", "bias"))
    shapes = ((rows.shape[1], len(CLASSES)), (len(CLASSES),))
    if kept is not None and (kept["weights"].shape, kept["bias"].shape) == shapes:
        return VectorTypingModel(kept["weights"], kept["bias"])
    model = VectorTypingModel.fit(rows, examples)
    weights, bias = model.arrays()
    with contextlib.suppress(OSError):  # a read-only home: fitted per process, as before
        _save_arrays(path, key=np.array(key), weights=weights, bias=bias)
    return model
