"""MiniLM's weights folded to float32 once per machine, in the user's cache folder, and mapped by
onnxruntime instead of folded in memory at each load (issue 31: a node on a 256 MB machine). The
vectors are the same; what cannot be folded or kept falls back to onnxruntime's own folding."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory.embedders import onnx_graph
from memory.embedders.minilm_fold import MANIFEST_FILE, MODEL_FILE, WEIGHTS_FILE, folded_folder, folded_model
from memory.embedders.minilm_onnx import (
    BATCH,
    BATCH_TOKENS,
    MODEL_SHA256,
    VOCAB_PATH,
    batches,
    default_model_path,
    embed_texts,
    load_model,
)
from memory.errors import EmbedderError

TEXTS = [
    "the staging database lives on db2",
    "Paid the electricity bill: 80 euros",
    "ok",
    "Went for a 5 km run along the river this morning. " * 12,  # long: a batch of its own
]


@pytest.fixture(scope="module")
def model_bytes() -> bytes:
    return default_model_path().read_bytes()


@pytest.fixture
def blocked(tmp_path: Path) -> Path:
    """A cache folder that cannot be made: a file is where it would be."""
    path = tmp_path / "a-file"
    path.write_text("not a folder")
    return path


def test_the_folded_model_gives_the_vectors_of_onnxruntimes_own_folding(tmp_path: Path, blocked: Path) -> None:
    cache = tmp_path / "cache"
    folded = load_model(default_model_path(), VOCAB_PATH, 1, cache=cache)
    in_memory = load_model(default_model_path(), VOCAB_PATH, 1, cache=blocked)
    assert (cache / folded_folder(MODEL_SHA256, cache).name / MODEL_FILE).is_file()
    np.testing.assert_array_equal(embed_texts(folded, TEXTS), embed_texts(in_memory, TEXTS))


def test_a_cache_that_cannot_be_written_falls_back_to_folding_in_memory(blocked: Path) -> None:
    assert folded_model(default_model_path(), MODEL_SHA256, blocked) is None
    model = load_model(default_model_path(), VOCAB_PATH, 1, cache=blocked)
    assert embed_texts(model, TEXTS[:1]).shape == (1, 384)


def test_the_fold_keeps_each_weight_mapped_in_place_and_none_of_the_int8_ones(tmp_path: Path) -> None:
    path = folded_model(default_model_path(), MODEL_SHA256, tmp_path)
    assert path is not None
    folder = path.parent
    manifest = json.loads((folder / MANIFEST_FILE).read_text())
    assert manifest["weights"] == 38  # 36 matrices, the word and position tables
    assert (folder / WEIGHTS_FILE).stat().st_size == manifest["weights_bytes"]
    assert path.stat().st_size < 1_000_000  # the graph alone: the 22 MB of int8 weights are gone
    graph = next(f for f in onnx_graph.fields(path.read_bytes()) if f.number == onnx_graph.MODEL_GRAPH)
    external = []
    for item in onnx_graph.fields(graph.value):  # type: ignore[arg-type]
        if item.number == onnx_graph.GRAPH_INITIALIZER:
            entries = [e for e in onnx_graph.fields(item.value) if e.number == onnx_graph.TENSOR_EXTERNAL_DATA]  # type: ignore[arg-type]
            for entry in entries:
                key, value = (bytes(f.value).decode() for f in onnx_graph.fields(entry.value))  # type: ignore[arg-type]
                if key == "offset":
                    external.append(int(value))
        if item.number == onnx_graph.GRAPH_NODE:
            node = onnx_graph.Node.parse(item.value)  # type: ignore[arg-type]
            assert node.op_type != "Cast" or not node.inputs[0].endswith("_q")
    assert len(external) == 38 and all(offset % onnx_graph.ALIGNMENT == 0 for offset in external)


def test_a_damaged_fold_is_made_again(tmp_path: Path, blocked: Path) -> None:
    path = folded_model(default_model_path(), MODEL_SHA256, tmp_path)
    assert path is not None
    weights = path.parent / WEIGHTS_FILE
    with weights.open("r+b") as handle:  # cut short, as a full disk would leave it
        handle.truncate(weights.stat().st_size // 2)
    again = folded_model(default_model_path(), MODEL_SHA256, tmp_path)
    manifest = json.loads((path.parent / MANIFEST_FILE).read_text())
    assert again == path and weights.stat().st_size == manifest["weights_bytes"]
    model = load_model(default_model_path(), VOCAB_PATH, 1, cache=tmp_path)
    reference = load_model(default_model_path(), VOCAB_PATH, 1, cache=blocked)
    np.testing.assert_array_equal(embed_texts(model, TEXTS[:2]), embed_texts(reference, TEXTS[:2]))
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".part")]  # nothing half-made left


def test_a_model_file_that_cannot_be_folded_leaves_the_caller_to_load_it_as_shipped(tmp_path: Path) -> None:
    damaged = tmp_path / "model.onnx"
    damaged.write_bytes(default_model_path().read_bytes()[:5000])  # cut short
    assert folded_model(damaged, "0" * 64, tmp_path / "cache") is None
    assert not [p for p in (tmp_path / "cache").iterdir()]  # nothing half-made left


def test_the_wire_codec_writes_back_what_it_read(model_bytes: bytes) -> None:
    top = list(onnx_graph.fields(model_bytes))
    assert onnx_graph.encode(top) == model_bytes
    graph = next(f for f in top if f.number == onnx_graph.MODEL_GRAPH)
    assert onnx_graph.encode(list(onnx_graph.fields(graph.value))) == bytes(graph.value)  # type: ignore[arg-type]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_damaged_model_file_is_an_embedder_error_or_a_fold_never_another_exception(
    model_bytes: bytes, data: st.DataObject
) -> None:
    head = model_bytes[: 4096 * 8]  # the graph's start: nodes, then the first initializers
    flips = data.draw(st.lists(st.tuples(st.integers(0, len(head) - 1), st.integers(0, 255)), min_size=1, max_size=6))
    damaged = bytearray(head)
    for at, byte in flips:
        damaged[at] = byte
    cut = data.draw(st.integers(1, len(damaged)))
    try:
        folded = onnx_graph.fold_dequantized(bytes(damaged[:cut]), "w.bin", lambda weight: 0)
    except EmbedderError:
        return
    assert folded.weights and any(onnx_graph.fields(folded.model))  # a fold, of a graph that reads back


@given(st.binary(max_size=300))
def test_random_bytes_are_an_embedder_error(blob: bytes) -> None:
    with pytest.raises(EmbedderError):
        onnx_graph.fold_dequantized(blob, "w.bin", lambda weight: 0)


@given(st.lists(st.integers(1, 256), max_size=200))
def test_batches_hold_each_text_once_and_stay_within_the_token_budget(lengths: list[int]) -> None:
    groups = batches(lengths)
    assert sorted(i for group in groups for i in group) == list(range(len(lengths)))
    for group in groups:
        width = max(lengths[i] for i in group)
        assert len(group) <= BATCH
        assert len(group) == 1 or len(group) * width <= BATCH_TOKENS
