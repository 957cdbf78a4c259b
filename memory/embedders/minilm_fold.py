"""MiniLM's weights folded to float32 once per machine, kept in the user's cache folder.

onnxruntime can fold the int8 weights itself when it loads the model (``ConstantFolding``), and a
query then embeds in ~3 ms instead of ~50. But it does so in memory, at every load: the worker
peaked near 280 MB resident while loading and kept ~180 MB of its own, since each float weight was
held twice at once and the 30,522 x 384 word-embedding table (47 MB as floats) in full, though a
text reads a few dozen of its rows. On a 256 MB machine that is the difference between a node
that runs and one the kernel kills (issue 31, measured in ``python -m bench footprint``).

Folded here instead, one weight at a time with numpy (``onnx_graph.fold_dequantized``), into
``weights.bin`` beside a rewritten ``model.onnx``, each weight at an offset onnxruntime maps rather
than copies. The worker's weights are then pages of that file: shared, read when used, and given
back to the system under memory pressure without a write. The values are what onnxruntime's own
folding computes (the same vectors, bit for bit, on this machine).

The folder's name is the shipped model's sha256 and this format's version; the pair of files is
written in a temporary folder and renamed into place, so a crash leaves no half-written fold, and
two processes folding at once each finish and one rename wins. A folder that cannot be written, or
a fold that fails, leaves the caller to load the shipped file as before (``folded_model`` returns
None and logs why).
"""

from __future__ import annotations

import contextlib
import json
import logging
import mmap
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

import numpy as np

from ground.app import user_cache_folder
from memory.embedders.onnx_graph import ALIGNMENT, fold_dequantized
from memory.errors import EmbedderError

FORMAT = 1  # raise when the layout of the folded files changes
MODEL_FILE, WEIGHTS_FILE, MANIFEST_FILE = "model.onnx", "weights.bin", "manifest.json"

log = logging.getLogger(__name__)


def folded_folder(model_sha256: str, cache: Path | None = None) -> Path:
    return (cache or user_cache_folder()) / f"minilm-folded-{model_sha256[:16]}-v{FORMAT}"


def _complete(folder: Path) -> bool:
    """The manifest, the graph and a weights file of the size the manifest says."""
    try:
        manifest = json.loads((folder / MANIFEST_FILE).read_text())
        return bool(
            (folder / MODEL_FILE).is_file() and (folder / WEIGHTS_FILE).stat().st_size == int(manifest["weights_bytes"])
        )
    except (OSError, ValueError, KeyError, TypeError):
        return False


class _AlignedWriter:
    def __init__(self, out: BinaryIO) -> None:
        self._out = out

    def __call__(self, blocks: Iterator[np.ndarray]) -> int:
        offset = -(-self._out.tell() // ALIGNMENT) * ALIGNMENT
        self._out.seek(offset)
        for block in blocks:
            self._out.write(np.ascontiguousarray(block, dtype="<f4").tobytes())
        return offset


def fold_into(model_path: Path, folder: Path) -> None:
    """Write the folded model into ``folder`` (which exists and is empty)."""
    # mapped, not read: its pages are the file's, which the system can take back under pressure
    with (folder / WEIGHTS_FILE).open("wb") as weights, model_path.open("rb") as source:
        model = mmap.mmap(source.fileno(), 0, access=mmap.ACCESS_READ)
        try:
            folded = fold_dequantized(memoryview(model), WEIGHTS_FILE, _AlignedWriter(weights))
        finally:
            with contextlib.suppress(BufferError):  # a failed fold's traceback still holds views of it:
                model.close()  # then the collector unmaps it
        weights.flush()
        os.fsync(weights.fileno())
        size = weights.tell()
    (folder / MODEL_FILE).write_bytes(folded.model)
    manifest = {"source_model": model_path.name, "weights": len(folded.weights), "weights_bytes": size}
    (folder / MANIFEST_FILE).write_text(json.dumps(manifest))


def folded_model(model_path: Path, model_sha256: str, cache: Path | None = None) -> Path | None:
    """The folded model's graph file, folding it first if this machine has not; None when it cannot be."""
    folder = folded_folder(model_sha256, cache)
    if _complete(folder):
        return folder / MODEL_FILE
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        building = Path(tempfile.mkdtemp(dir=folder.parent, prefix=folder.name, suffix=".part"))
    except OSError as exc:
        log.warning("cannot keep MiniLM's folded weights in %s (%s); onnxruntime folds in memory", folder.parent, exc)
        return None
    try:
        fold_into(model_path, building)
        if folder.exists() and not _complete(folder):
            shutil.rmtree(folder, ignore_errors=True)  # a damaged earlier fold
        with contextlib.suppress(OSError):  # another process's rename won: its fold is the same
            os.rename(building, folder)
    except (OSError, EmbedderError) as exc:
        log.warning("cannot fold MiniLM's weights (%s); onnxruntime folds them in memory", exc)
        return None
    finally:
        shutil.rmtree(building, ignore_errors=True)
    return folder / MODEL_FILE if _complete(folder) else None
