"""`bitterbot-node doctor`: what goes wrong in the first hour, checked, each with its fix.

Every check returns ok, warn or fail with one line of detail and, unless ok, the fix.
Checks never change anything. A daemon running on the data dir is noticed, so its own
ports do not count as "in use by something else".
"""

from __future__ import annotations

import asyncio
import email.utils
import shutil
import socket
import stat
import subprocess
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from node.config import Config
from node.paths import NodePaths, write_problem
from node.runtime.ports import TcpEndpoint, busy_reason, dial_target, tcp_endpoint
from node.runtime.status import probe_daemon

OK, WARN, FAIL = "ok", "warn", "fail"
SKEW_WARN_S = 30  # envelopes from the future are refused beyond 60 s (wire.max_ahead_s default)


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    status: str
    detail: str
    fix: str = ""


def _private_file(path: Path, what: str) -> Check:
    if not path.exists():
        return Check(what, WARN, f"{path} does not exist yet", "bitterbot-node init (or the first run) creates it")
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077:
        return Check(what, FAIL, f"{path} is readable by others (mode {mode:o})", f"chmod 600 {path}")
    return Check(what, OK, f"{path} is private (mode {mode:o})")


def check_data_dir(paths: NodePaths) -> list[Check]:
    out = []
    data = paths.data_dir
    problem = write_problem(data)
    if problem is not None:  # issue 32: doctor said all was well of a data dir nothing could write
        out.append(Check("data dir", FAIL, f"{data}: {problem}", "pick another with --data-dir, or make it writable"))
    elif not data.exists():
        out.append(Check("data dir", WARN, f"{data} does not exist yet", "bitterbot-node init"))
    else:
        mode = stat.S_IMODE(data.stat().st_mode)
        if mode & 0o077:
            out.append(Check("data dir", WARN, f"{data} is open to others (mode {mode:o})", f"chmod 700 {data}"))
        else:
            out.append(Check("data dir", OK, f"{data} (mode {mode:o})"))
    out.append(_private_file(paths.key_file, "identity key"))
    tokens = (("api token", paths.api_token_file), ("owner token", paths.owner_token_file))
    for name, path in (("wallet key", data / "wallet.key"), *tokens):
        if path.exists():
            out.append(_private_file(path, name))
    return out


def _port_check(name: str, endpoint: TcpEndpoint, ours: bool) -> Check:
    where = f"{endpoint.host}:{endpoint.port}"
    if endpoint.port == 0:
        return Check(name, OK, "a free port is picked at start (port 0)")
    busy = busy_reason(endpoint)
    if busy is None:
        return Check(name, OK, f"{where} is free")
    if ours:
        return Check(name, OK, f"{where} is in use by this node's running daemon")
    return Check(name, FAIL, f"{where} is in use ({busy})",
                 f"stop what uses port {endpoint.port}, or give this node another port in its config")  # fmt: skip


def check_ports(config: Config, ours: bool) -> list[Check]:
    out = []
    if config.p2p.enabled:
        for address in config.p2p.listen:
            endpoint = tcp_endpoint(address)
            if endpoint is not None:
                out.append(_port_check(f"p2p port {endpoint.port}", endpoint, ours))
    if config.api.enabled:
        api = TcpEndpoint.of_host(config.api.host, config.api.port)
        out.append(_port_check(f"api port {config.api.port}", api, ours))
    return out


def check_sqlite() -> Check:
    try:
        import sqlean
        import sqlite_vec

        conn = sqlean.connect(":memory:")
        conn.enable_load_extension(True)
        sqlite_vec.load(conn)
        conn.enable_load_extension(False)
        (vec,) = conn.execute("SELECT vec_version()").fetchone()
        conn.execute("CREATE VIRTUAL TABLE t USING fts5(x)")
        (version,) = conn.execute("SELECT sqlite_version()").fetchone()
        conn.close()
    except Exception as exc:  # noqa: BLE001 - any failure here is the finding
        return Check("sqlite", FAIL, f"SQLite with sqlite-vec and FTS5 does not load ({exc})",
                     "reinstall: pip install --force-reinstall sqlean.py sqlite-vec")  # fmt: skip
    return Check("sqlite", OK, f"SQLite {version}, sqlite-vec {vec}, FTS5")


def check_embedder(config: Config) -> Check:
    from memory.setup.store import configured_embedder

    try:
        embedder = configured_embedder(config.memory)
        started = time.perf_counter()
        vector = embedder.embed_query("doctor check")
        took = (time.perf_counter() - started) * 1000
    except Exception as exc:  # noqa: BLE001 - any failure here is the finding
        return Check("embedder", FAIL, f"{config.memory.embedder}: {exc}",
                     'reinstall the package, or set [memory] embedder = "hashing" to run without a model')  # fmt: skip
    return Check("embedder", OK, f"{embedder.id} ({vector.shape[-1]} dims, {took:.0f} ms for one query)")


def check_chain(config: Config, wallet_file: Path | None = None) -> list[Check]:
    """The chain answers with our token and escrow; and, on a chain that is not for development,
    a wallet holding USDC is sealed (``init --encrypt`` seals it with the identity)."""
    chain = config.chain
    if not chain.url:
        return [Check("chain", OK, "embedded development chain: needs nothing, but trades with no other node")]
    from marketplace.chain import Chain
    from marketplace.errors import ChainError, WalletError
    from marketplace.wallet import is_sealed, wallet_address

    plaintext = None
    try:
        if wallet_file is not None and wallet_file.exists() and not chain.dev and not is_sealed(wallet_file):
            plaintext = wallet_address(wallet_file)
    except WalletError as exc:
        return [Check("wallet", FAIL, str(exc), "restore the wallet from a backup")]

    async def reach() -> tuple[int, int]:
        client = await Chain.rpc(chain.url, chain.token_address, chain.escrow_address, dev=chain.dev)
        try:
            return await client.chain_id(), await client.balance(plaintext) if plaintext else 0
        finally:
            await client.close()

    try:
        chain_id, exposed = asyncio.run(reach())
    except (ChainError, OSError, ValueError) as exc:
        return [Check("chain", FAIL, f"{chain.url}: {exc}",
                      "start the chain (anvil: see the README) or fix [chain] url and addresses")]  # fmt: skip
    checks = [Check("chain", OK, f"{chain.url} answers (chain id {chain_id}), token and escrow deployed")]
    if exposed:
        checks.append(Check(
            "wallet", WARN, f"{wallet_file} keeps its key in plaintext and holds {exposed} micro-USDC on a "
            "chain that is not for development",
            "stop the node and run `bitterbot-node init --encrypt`: it seals the identity and the wallet in place",
        ))  # fmt: skip
    return checks


def ntp_synchronized() -> bool | None:
    """Whether the system says its clock is synchronised (``timedatectl``), None when it cannot say."""
    if shutil.which("timedatectl") is None:
        return None
    try:
        answer = subprocess.run(
            ["timedatectl", "show", "--property=NTPSynchronized", "--value"],
            capture_output=True, text=True, timeout=5, check=False,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return None
    value = answer.stdout.strip()
    return {"yes": True, "no": False}.get(value) if answer.returncode == 0 else None


def check_clock_locally(synchronized: bool | None) -> Check:
    """The clock as the system itself reports it; no outside host is contacted."""
    online = "or run `bitterbot-node doctor --clock-online` to compare it with [doctor] time_url"
    if synchronized is None:
        return Check("clock", WARN, "not compared with another clock (the system does not say whether it is synced)",
                     f"check it by hand (timedatectl), {online}")  # fmt: skip
    if not synchronized:
        return Check("clock", WARN, "the system says its clock is not synchronised; peers refuse messages "
                     "more than a minute off", f"sync the clock: timedatectl set-ntp true, {online}")  # fmt: skip
    return Check("clock", OK, "synchronised, as the system reports (timedatectl)")


def check_clock(url: str, now: Callable[[], float] = time.time) -> Check:
    """The clock against ``url``'s HTTP Date header: contacts that host (only when the person asked)."""
    if not url:
        return Check("clock", WARN, "not checked ([doctor] time_url is empty)", "set [doctor] time_url")
    try:
        request = urllib.request.Request(url, method="HEAD")  # noqa: S310 - the config allows http(s) only
        with urllib.request.urlopen(request, timeout=5) as response:  # noqa: S310 - as above
            date = response.headers.get("Date")
        local = now()
    except OSError as exc:
        return Check("clock", WARN, f"could not compare with {url} ({exc})", "check the clock by hand (timedatectl)")
    if not date:
        return Check("clock", WARN, f"{url} sent no Date header", "set [doctor] time_url to another server")
    skew = local - email.utils.parsedate_to_datetime(date).timestamp()
    detail = f"{abs(skew):.0f} s {'ahead of' if skew > 0 else 'behind'} {url}"
    if abs(skew) > 60:
        return Check("clock", FAIL, detail + "; peers refuse messages outside their time window",
                     "sync the clock: timedatectl set-ntp true")  # fmt: skip
    if abs(skew) > SKEW_WARN_S:
        return Check("clock", WARN, detail, "sync the clock: timedatectl set-ntp true")
    return Check("clock", OK, detail)


def check_disk(paths: NodePaths) -> Check:
    where = paths.data_dir if paths.data_dir.exists() else paths.data_dir.parent
    while not where.exists():
        where = where.parent
    free = shutil.disk_usage(where).free
    detail = f"{free / 2**30:.1f} GiB free at {where}"
    if free < 100 * 2**20:
        return Check("disk", FAIL, detail, "free some space: the memory file and its WAL need room to grow")
    if free < 2**30:
        return Check("disk", WARN, detail, "free some space: consolidation and backups need room")
    return Check("disk", OK, detail)


def check_bootstrap(config: Config) -> list[Check]:
    out = []
    for address in config.p2p.bootstrap if config.p2p.enabled else []:
        target = dial_target(address)
        if target is None:
            out.append(Check("bootstrap", WARN, f"{address}: not a TCP address, not checked"))
            continue
        host, port = target
        try:
            with socket.create_connection(target, timeout=3):
                pass
        except OSError as exc:
            detail = f"{host}:{port} does not answer ({exc.strerror or exc})"
            out.append(Check("bootstrap", FAIL, detail, "start that node, or fix [p2p] bootstrap"))
            continue
        out.append(Check("bootstrap", OK, f"{host}:{port} answers"))
    if config.p2p.enabled and not config.p2p.bootstrap:
        out.append(Check("bootstrap", WARN, "no bootstrap peers: this node waits for others to dial it",
                         "add a peer's address to [p2p] bootstrap, or `bitterbot-node connect ADDR`"))  # fmt: skip
    return out


def run_checks(config: Config, paths: NodePaths, *, clock_online: bool = False) -> list[Check]:
    """Every check; the clock is compared with an outside host only with ``clock_online`` or
    ``[doctor] clock_online``."""
    online = clock_online or config.doctor.clock_online
    ours = probe_daemon(paths.data_dir).running
    return [
        *check_data_dir(paths),
        *check_ports(config, ours),
        check_sqlite(),
        check_embedder(config),
        *check_chain(config, paths.data_dir / "wallet.key"),
        check_clock(config.doctor.time_url) if online else check_clock_locally(ntp_synchronized()),
        check_disk(paths),
        *check_bootstrap(config),
    ]
