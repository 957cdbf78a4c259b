"""CLI calls of the tests, each a real process forked from one that has already imported the CLI.

A test's ``bitterbot-node ...`` started a fresh interpreter that spent ~0.4 s of CPU importing
click, pydantic, numpy and every command before it ran (a daemon ~0.9 s, with py-libp2p, aiohttp
and web3); the suite makes some 250 such calls and starts some 60 daemons. Here one server process
per test worker (``python -m tests.cli_zygote``, started on first use) imports all that once and,
for each call, forks: the child takes the call's environment, working folder and files for stdin,
stdout and stderr, runs ``node`` as ``python -m node`` does
(``tests.conftest.CLI``; the entry point's daemon-or-full-CLI choice included) and exits as that
interpreter would, through ``SystemExit``, so its own shutdown runs (threads joined, exit handlers,
buffers flushed). The server has no threads, so forking it is safe.

What differs from a fresh interpreter is only what importing did: no module of the node reads the
environment or the clock when imported, and the server's objects are frozen out of the garbage
collector (``gc.freeze``, below). Tests of the entry point itself (the full CLI beside the thin one in
``test_thin_cli``, the README walkthrough) start fresh interpreters, and so do calls inside a network
namespace.

Daemons (``bitterbot-node run``) start the same way (``spawn``), and leave the server at once: the
forked child forks the daemon and exits, and the daemon, an orphan, is taken in by the test worker,
which has made itself its descendants' reaper (Linux's ``PR_SET_CHILD_SUBREAPER``). The worker is
then the daemon's parent, as with ``subprocess.Popen``: it signals it, waits for it (a pidfd) and
reads its exit code (``ForkedProcess``). Elsewhere than on Linux, daemons start as fresh
interpreters.

Protocol, one JSON object per line: the test sends {"argv", "env", "cwd", "out", "err", "spawn"} on
the server's stdin; the server answers {"pid"} once forked (the daemon's, for a spawn), then, for a
call, {"code"} (a negative code: killed by that signal, as ``subprocess`` reports it).
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import gc
import json
import os
import runpy
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import IO, Any, Protocol

#: Imported before the first fork: what the full CLI and a memory command without a daemon load.
PRELOADED = (
    "node.cli.main", "node.cli.thin", "node.parts.memory", "node.clients.local", "numpy",
    # and what a daemon loads beside them
    "node.daemon.daemon", "node.daemon.wiring", "libp2p", "libp2p.pubsub.gossipsub", "aiohttp", "web3", "trio",
)  # fmt: skip
PR_SET_CHILD_SUBREAPER = 36  # linux/prctl.h
ROOT = Path(__file__).resolve().parents[1]


# --- the server --------------------------------------------------------------------------------


def serve() -> None:
    import importlib

    for name in PRELOADED:
        importlib.import_module(name)
    from node.cli.main import register_commands

    register_commands()  # the click commands, built once (each child's main builds them again, cheaply)
    if threading.active_count() != 1:  # a fork copies only the forking thread: locks others hold stay held
        names = [thread.name for thread in threading.enumerate()]
        raise RuntimeError(f"the CLI server must have no threads before it forks; it has {names}")
    # Every object so far out of the collector's sight: a child's first full collection would
    # otherwise touch each one, copying the whole shared heap into the child page by page.
    gc.freeze()
    requests, answers = sys.stdin.buffer, sys.stdout
    while line := requests.readline():
        request = json.loads(line)
        sys.stdout.flush()
        sys.stderr.flush()
        if request["spawn"]:
            answers.write(json.dumps({"pid": _spawned(request)}) + "\n")
            answers.flush()
            continue
        pid = os.fork()
        if pid == 0:
            _child(request)  # never returns
        answers.write(json.dumps({"pid": pid}) + "\n")
        answers.flush()
        _, status = os.waitpid(pid, 0)
        answers.write(json.dumps({"code": os.waitstatus_to_exitcode(status)}) + "\n")
        answers.flush()


def _spawned(request: dict[str, Any]) -> int:
    """Fork a child that forks the daemon, tells its pid and exits: the daemon is the test worker's."""
    read_end, write_end = os.pipe()
    middle = os.fork()
    if middle == 0:
        os.close(read_end)
        daemon = os.fork()
        if daemon == 0:
            os.close(write_end)
            _child(request)  # never returns
        os.write(write_end, str(daemon).encode())
        os._exit(0)  # no shutdown of the server's copy: only the daemon runs on
    os.close(write_end)
    with os.fdopen(read_end, "rb") as told:
        pid = int(told.read())
    os.waitpid(middle, 0)  # after this, the daemon's parent is the test worker (its subreaper)
    return pid


def _child(request: dict[str, Any]) -> None:
    os.setsid()  # its own group, as the test's kill on a timeout takes the call and what it started
    for fd, (path, flags) in enumerate(
        ((os.devnull, os.O_RDONLY), (request["out"], os.O_WRONLY), (request["err"], os.O_WRONLY))
    ):
        opened = os.open(path, flags)
        os.dup2(opened, fd)
        os.close(opened)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.argv = ["-m", *request["argv"]]  # runpy puts the module's path first, as `python -m node` does
    runpy.run_module("node", run_name="__main__", alter_sys=True)
    raise SystemExit(0)  # as the interpreter: its own shutdown, then exit code 0


# --- the test's side ---------------------------------------------------------------------------


class CliZygote:
    """This test worker's server, started on first use and again if it died."""

    def __init__(self) -> None:
        self._server: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()  # one call at a time: the server forks and waits for each

    def run(self, argv: list[str], env: dict[str, str], timeout: float) -> subprocess.CompletedProcess[str]:
        with self._lock, tempfile.TemporaryDirectory(prefix="bb-cli-") as folder:
            out, err = Path(folder) / "out", Path(folder) / "err"
            out.touch()
            err.touch()
            server = self._sent(argv, env, out, err, spawn=False)
            assert server.stdout is not None
            deadline = time.monotonic() + timeout
            pid = _answer(server.stdout, deadline + 30)["pid"]
            try:
                code = _answer(server.stdout, deadline)["code"]
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):  # it ended just now
                    os.killpg(pid, signal.SIGKILL)
                _answer(server.stdout, time.monotonic() + 30)
                raise subprocess.TimeoutExpired(argv, timeout, out.read_text(), err.read_text()) from None
            return subprocess.CompletedProcess(argv, code, out.read_text(), err.read_text())

    def spawn(self, argv: list[str], env: dict[str, str], out: Path, err: Path) -> ForkedProcess:
        """A long-running command (a daemon), writing to ``out`` and ``err``, which must exist."""
        with self._lock:
            if not _became_subreaper():
                raise CannotSpawn("this system cannot take in orphaned processes (PR_SET_CHILD_SUBREAPER)")
            server = self._sent(argv, env, out, err, spawn=True)
            assert server.stdout is not None
            return ForkedProcess(argv, _answer(server.stdout, time.monotonic() + 60)["pid"])

    def _sent(
        self, argv: list[str], env: dict[str, str], out: Path, err: Path, *, spawn: bool
    ) -> subprocess.Popen[bytes]:
        server = self._running()
        request = {"argv": argv, "env": env, "cwd": os.getcwd(), "out": str(out), "err": str(err), "spawn": spawn}
        assert server.stdin is not None
        server.stdin.write((json.dumps(request) + "\n").encode())
        server.stdin.flush()
        return server

    def close(self) -> None:
        """End the server (its stdin closed, it returns) and let go of its pipes."""
        server, self._server = self._server, None
        if server is None:
            return
        assert server.stdin is not None and server.stdout is not None
        server.stdin.close()
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        server.stdout.close()

    def _running(self) -> subprocess.Popen[bytes]:
        if self._server is None or self._server.poll() is not None:
            env = {k: v for k, v in os.environ.items() if not k.startswith("BITTERBOT_")}
            self._server = subprocess.Popen(
                [sys.executable, "-m", "tests.cli_zygote"], cwd=ROOT, env=env,
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            )  # fmt: skip
        return self._server


class CannotSpawn(OSError):
    """Raised before anything was forked: the caller may start the command another way."""


class Process(Protocol):
    """What the tests use of a started command: ``subprocess.Popen`` and ``ForkedProcess`` both."""

    pid: int
    returncode: int | None

    def poll(self) -> int | None: ...
    def wait(self, timeout: float | None = None) -> int: ...
    def send_signal(self, sig: int) -> None: ...
    def terminate(self) -> None: ...
    def kill(self) -> None: ...


class ForkedProcess:
    """A spawned daemon, whose parent is this process (its subreaper): ``subprocess.Popen``'s calls
    the tests make of one."""

    def __init__(self, args: list[str], pid: int) -> None:
        self.args, self.pid = args, pid
        self.returncode: int | None = None
        self._exited = os.pidfd_open(pid)  # readable once it has exited, whether or not yet reaped

    def poll(self) -> int | None:
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self._reaped(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.poll() is None:
            if not select.select([self._exited], [], [], timeout)[0]:
                raise subprocess.TimeoutExpired(self.args, timeout or 0.0)
            self._reaped(os.waitpid(self.pid, 0)[1])
        assert self.returncode is not None
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:  # as Popen: never a signal to a pid that may have been reused
            os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def _reaped(self, status: int) -> None:
        self.returncode = os.waitstatus_to_exitcode(status)
        os.close(self._exited)


@functools.cache
def _became_subreaper() -> bool:
    """Whether this process now takes in its orphaned descendants (asked of the kernel once)."""
    if sys.platform != "linux":
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    return bool(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)


def _answer(stream: IO[bytes], deadline: float) -> dict[str, Any]:
    """The server's next line, or TimeoutError at ``deadline``; EOF (the server died) is an error."""
    fd = stream.fileno()
    line = b""
    while not line.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            raise TimeoutError("the CLI call did not end in time")
        chunk = os.read(fd, 1)
        if not chunk:  # its errors go nowhere: `python -m tests.cli_zygote` by hand shows them
            raise RuntimeError("the CLI server of this test worker stopped")
        line += chunk
    answer: dict[str, Any] = json.loads(line)
    return answer


if __name__ == "__main__":
    serve()
