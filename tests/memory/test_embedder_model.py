"""A daemon's MiniLM runs in a worker process, started when a text first needs it and let go after
``idle_s`` unused (issue 31: an idle daemon holds none of the model); the vectors are the in-process
model's. A worker that dies is named, and the next text starts a new one."""

from __future__ import annotations

import io
import json
import os
import signal
import struct
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from memory.embedders.base import HeldModel
from memory.embedders.minilm_onnx import VOCAB_PATH, MiniLMOnnxEmbedder, default_model_path
from memory.embedders.minilm_worker import MiniLMWorkerEmbedder, serve
from memory.errors import EmbedderError

TEXTS = ["the staging database lives on db2", "Paid the electricity bill: 80 euros", "ok"]


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


def test_the_worker_starts_on_first_use_goes_after_idle_and_gives_the_in_process_vectors(clock: Clock) -> None:
    embedder = MiniLMWorkerEmbedder(idle_s=60, clock=clock)
    assert isinstance(embedder, HeldModel)
    try:
        assert not embedder.loaded and embedder.starts == 0  # made, nothing started: a daemon starts light
        first = embedder.embed_documents(TEXTS)
        assert embedder.loaded and embedder.starts == 1
        np.testing.assert_allclose(first, MiniLMOnnxEmbedder().embed_documents(TEXTS), atol=1e-6)
        clock.now += 59
        assert not embedder.release_if_idle() and embedder.loaded  # not idle long enough
        embedder.embed_query("a use resets the wait")
        clock.now += 59
        assert not embedder.release_if_idle()
        clock.now += 2
        assert embedder.release_if_idle() and not embedder.loaded
        assert not embedder.release_if_idle()  # nothing left to let go
        np.testing.assert_allclose(embedder.embed_query(TEXTS[0]), first[0], atol=1e-6)
        assert embedder.starts == 2
        assert embedder.embed_documents([]).shape == (0, 384)
    finally:
        embedder.close()
    assert not embedder.loaded


def test_idle_zero_keeps_the_worker(clock: Clock) -> None:
    embedder = MiniLMWorkerEmbedder(idle_s=0, clock=clock)
    try:
        embedder.embed_query("x")
        clock.now += 1e9
        assert not embedder.release_if_idle() and embedder.loaded
    finally:
        embedder.close()


class DiesOnFirstText(MiniLMWorkerEmbedder):
    """A named fake worker: says ready like the real one, then exits when asked anything."""

    def command(self) -> list[str]:
        script = (
            "import sys; sys.stdout.buffer.write(bytes([0, 0, 0, 1]) + b'R'); sys.stdout.flush(); sys.stdin.read(1)"
        )
        return [sys.executable, "-c", script]


class NeverAnswers(MiniLMWorkerEmbedder):
    """A named fake worker: says ready like the real one, then reads a request and never answers."""

    def command(self) -> list[str]:
        script = (
            "import sys, time; sys.stdout.buffer.write(bytes([0, 0, 0, 1]) + b'R'); sys.stdout.flush(); "
            "sys.stdin.buffer.read(4); time.sleep(3600)"
        )
        return [sys.executable, "-c", script]


def test_closing_does_not_wait_for_a_request_in_flight(clock: Clock) -> None:
    embedder = NeverAnswers(idle_s=60, clock=clock)
    failed: list[BaseException] = []

    def ask() -> None:
        try:
            embedder.embed_query(TEXTS[0])
        except EmbedderError as exc:
            failed.append(exc)

    asking = threading.Thread(target=ask)
    asking.start()
    while not embedder.loaded:  # the request is in flight once the worker said it is ready
        asking.join(0.05)
    embedder.close()  # before the fix this waited on the request for ever (the test's timeout failed it)
    asking.join()
    assert not embedder.loaded and len(failed) == 1 and "embedding worker exited" in str(failed[0])


def test_a_worker_killed_between_texts_is_replaced(clock: Clock) -> None:
    embedder = MiniLMWorkerEmbedder(idle_s=60, clock=clock)
    try:
        expected = embedder.embed_query(TEXTS[1])
        assert embedder._proc is not None
        os.kill(embedder._proc.pid, signal.SIGKILL)
        embedder._proc.wait()
        np.testing.assert_allclose(embedder.embed_query(TEXTS[1]), expected, atol=1e-6)  # a new one, same answer
        assert embedder.starts == 2
    finally:
        embedder.close()


def test_a_worker_that_dies_while_asked_is_named_and_the_next_text_starts_another(clock: Clock) -> None:
    embedder = DiesOnFirstText(idle_s=60, clock=clock)
    try:
        with pytest.raises(EmbedderError, match="embedding worker exited"):
            embedder.embed_query(TEXTS[1])
        assert not embedder.loaded
        with pytest.raises(EmbedderError, match="embedding worker exited"):
            embedder.embed_query(TEXTS[1])
        assert embedder.starts == 2
    finally:
        embedder.close()


def test_a_missing_or_altered_model_file_is_said_when_the_embedder_is_made(tmp_path: Path) -> None:
    with pytest.raises(EmbedderError, match="is missing"):
        MiniLMWorkerEmbedder(model_path=tmp_path / "none.onnx", idle_s=1)
    altered = tmp_path / "vocab.txt"
    altered.write_text(VOCAB_PATH.read_text() + "extra\n")
    with pytest.raises(EmbedderError, match="expected sha256"):
        MiniLMOnnxEmbedder(model_path=default_model_path(), vocab_path=altered)
    with pytest.raises(EmbedderError, match="expected sha256"):
        MiniLMWorkerEmbedder(model_path=default_model_path(), vocab_path=altered, idle_s=1)


def test_the_worker_answers_a_bad_request_with_an_error_and_goes_on() -> None:
    def frame(payload: bytes) -> bytes:
        return struct.pack(">I", len(payload)) + payload

    requests = io.BytesIO(frame(b"not json") + frame(json.dumps(TEXTS[:1]).encode()))
    answers = io.BytesIO()
    assert serve(default_model_path(), VOCAB_PATH, 1, requests, answers) == 0  # stdin ended: it exits cleanly
    answers.seek(0)
    got = [answers.read(struct.unpack(">I", answers.read(4))[0]) for _ in range(3)]
    assert got[0] == b"R" and got[1].startswith(b"EJSONDecodeError") and got[2][:1] == b"V"
    vector = np.frombuffer(got[2][1:], dtype="<f4")
    np.testing.assert_allclose(vector, MiniLMOnnxEmbedder().embed_query(TEXTS[0]), atol=1e-6)


def test_unfolded_weights_give_the_same_vectors() -> None:
    unfolded = MiniLMOnnxEmbedder(fold_weights=False).embed_documents(TEXTS)
    np.testing.assert_allclose(unfolded, MiniLMOnnxEmbedder().embed_documents(TEXTS), atol=1e-5)
