"""The MiniLM model in a process of its own, for a daemon: started when a text first needs
embedding, let go after ``idle_s`` unused, so an idle daemon holds none of it.

Measured on this 2-core machine (``python -m bench footprint``): the model held in the daemon's own
process kept it at ~200 MB resident even after it was let go (onnxruntime's library and a fragmented
heap stay), against ~134 MB for a daemon that never loaded it. In a worker, letting go is exiting.
Starting the worker costs ~0.6 s, paid by the first text after an idle spell.

The two sides speak frames on the worker's stdin and stdout: a 4-byte big-endian length, then a
JSON list of texts one way, and ``V`` + little-endian float32 rows (or ``E`` + an error) the other.
The worker exits when its stdin closes: when it is let go, and when the daemon dies.
"""

from __future__ import annotations

import contextlib
import json
import os
import struct
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO

import numpy as np

from memory.embedders.base import Vectors
from memory.embedders.minilm_onnx import DIM, VOCAB_PATH, MiniLMSpace, check_files, embed_texts, load_model
from memory.errors import EmbedderError

_LENGTH = struct.Struct(">I")
#: glibc's malloc for the worker: memory of 128 KiB or more comes from the system and goes back to
#: it when freed, instead of staying in a heap the batches fragment. Measured on this machine (the
#: worker's own memory, not shared with other processes): at most 112 MB against 150-170 while
#: embedding 800 texts of 1-6 sentences, 96 against 131-141 for 1,500 short ones, and 73-77 against
#: 131-142 after either; for 2-20 % fewer texts a second. Other C libraries ignore it.
WORKER_MALLOC = {"MALLOC_MMAP_THRESHOLD_": str(128 * 1024)}
STOP_WAIT_S = 2.0  # within the daemon's stop budget (4 s); a batch in flight takes well under 1 s


class MiniLMWorkerEmbedder(MiniLMSpace):
    """The daemon's side. One request at a time: the store calls it from worker threads."""

    def __init__(
        self,
        model_path: Path | None = None,
        vocab_path: Path = VOCAB_PATH,
        threads: int | None = None,
        *,
        idle_s: float,
        fold_weights: bool = True,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(model_path, vocab_path, threads, fold_weights=fold_weights)
        self._idle_s = idle_s
        self._clock = clock
        self._proc: subprocess.Popen[bytes] | None = None
        self._last_used = clock()
        self.starts = 0  # how many workers were started: one per spell of use

    @property
    def loaded(self) -> bool:
        return self._proc is not None

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, DIM), dtype=np.float32)
        with self._lock:
            proc = self._running()
            try:
                _write_frame(_stdin(proc), json.dumps(list(texts)).encode())
                answer = _read_frame(_stdout(proc))
            except OSError as exc:  # a broken pipe: the worker died while asked
                answer = None
                reason = str(exc)
            else:
                reason = "it closed its output"
            self._last_used = self._clock()
            if answer is None:
                self._stop_locked()
                raise EmbedderError(f"the embedding worker exited ({reason}); the next text starts a new one")
        if answer[:1] == b"E":
            raise EmbedderError(f"the embedding worker failed: {answer[1:].decode(errors='replace')}")
        rows = np.frombuffer(answer[1:], dtype="<f4")
        if answer[:1] != b"V" or rows.size != len(texts) * DIM:
            raise EmbedderError("the embedding worker answered something that is not vectors")
        return rows.reshape(len(texts), DIM).astype(np.float32)

    def release_if_idle(self) -> bool:
        """Stop the worker when it has not been asked for ``idle_s`` (never with ``idle_s`` 0);
        True when it was stopped. Waits for a request in flight to finish first."""
        with self._lock:
            if self._proc is None or self._idle_s <= 0 or self._clock() - self._last_used < self._idle_s:
                return False
            self._stop_locked()
            return True

    def close(self) -> None:
        """Stop the worker now (the daemon stopping), even in the middle of a request: that request
        fails. Waiting for it first could outlast the daemon's stop budget when the worker is still
        loading the model or embedding a batch on a busy machine (the README walkthrough's buyer
        did, in one CI run)."""
        proc = self._proc
        if proc is not None and proc.poll() is None:
            proc.kill()  # its pipes close: a request in flight reads the end and lets the lock go
        with self._lock:
            self._stop_locked()

    def _running(self) -> subprocess.Popen[bytes]:
        if self._proc is not None and self._proc.poll() is None:
            return self._proc
        self._stop_locked()  # one that died while idle is reaped, and a new one started
        check_files(self._model_path, self._vocab_path)
        proc = subprocess.Popen(  # stderr: the daemon's
            self.command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, env={**os.environ, **WORKER_MALLOC}
        )
        ready = _read_frame(_stdout(proc))
        if ready != b"R":
            proc.kill()
            proc.wait()
            why = ready[1:].decode(errors="replace") if ready else f"it exited with {proc.returncode}"
            raise EmbedderError(f"the embedding worker did not start: {why}")
        self._proc = proc
        self.starts += 1
        return proc

    def command(self) -> list[str]:
        """How the worker is started: this interpreter, ``serve`` below."""
        module = [sys.executable, "-m", "memory.embedders.minilm_worker"]
        fold = "fold" if self._fold_weights else "int8"
        return [*module, str(self._model_path), str(self._vocab_path), str(self._threads), fold]

    def _stop_locked(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        with contextlib.suppress(OSError):  # a worker already gone has nothing to be told
            _stdin(proc).close()  # the worker's signal to exit
        try:
            proc.wait(timeout=STOP_WAIT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


def _stdin(proc: subprocess.Popen[bytes]) -> IO[bytes]:
    assert proc.stdin is not None
    return proc.stdin


def _stdout(proc: subprocess.Popen[bytes]) -> IO[bytes]:
    assert proc.stdout is not None
    return proc.stdout


def _write_frame(stream: IO[bytes], payload: bytes) -> None:
    stream.write(_LENGTH.pack(len(payload)) + payload)
    stream.flush()


def _read_frame(stream: IO[bytes]) -> bytes | None:
    """One frame, or None when the stream ends first."""
    head = stream.read(_LENGTH.size)
    if len(head) < _LENGTH.size:
        return None
    (length,) = _LENGTH.unpack(head)
    payload = stream.read(length)
    return payload if len(payload) == length else None


def serve(
    model_path: Path, vocab_path: Path, threads: int, requests: IO[bytes], answers: IO[bytes], *, fold: bool = True
) -> int:
    """The worker's side: load the model, say ready, answer each list of texts until stdin ends."""
    try:
        model = load_model(model_path, vocab_path, threads, fold_weights=fold)
    except Exception as exc:  # noqa: BLE001 - any failure to load is told to the daemon, which names it
        _write_frame(answers, b"E" + repr(exc).encode())
        return 1
    _write_frame(answers, b"R")
    while (frame := _read_frame(requests)) is not None:
        try:
            texts = json.loads(frame)
            vectors = embed_texts(model, [str(t) for t in texts])
        except Exception as exc:  # noqa: BLE001 - one bad request is answered, the worker goes on
            _write_frame(answers, b"E" + repr(exc).encode())
            continue
        _write_frame(answers, b"V" + vectors.astype("<f4").tobytes())
    return 0


if __name__ == "__main__":
    model_file, vocab_file, thread_count, weights = sys.argv[1:5]
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    sys.exit(serve(Path(model_file), Path(vocab_file), int(thread_count), stdin, stdout, fold=weights == "fold"))
