"""The `bitterbot-node` command: a thin skin over the library.

Every command resolves the same way: config file (``--config``,
``$BITTERBOT_CONFIG`` or ``<data dir>/config.toml``), environment overrides,
then the data dir (``--data-dir``, ``$BITTERBOT_DATA_DIR``, ``node.data_dir``,
or the platform default). Errors a user can fix print one line and exit 2;
"already running" exits 3; see ``node.errors``.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from crypto.errors import KeyFileMissing
from crypto.identity import Identity, load_identity, read_key_file_info, save_identity, seal_identity_file
from ground.events import get_logger
from node.cli.common import handles_errors, location_options, read_passphrase, resolve
from node.errors import EXIT_FAILURE, UsageError
from node.logs import configure_logging
from node.paths import NodePaths
from node.runtime.exit_watchdog import arm_exit_watchdog
from node.runtime.lockfile import DataDirLock
from node.runtime.status_report import status_report, status_text
from node.servers.api_token import ensure_token

if TYPE_CHECKING:
    from node.daemon.daemon import Daemon

log = get_logger("node.cli")


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="bitterbot-node")
def cli() -> None:
    """bitterbot-node: long-term memory and a skill marketplace for an AI agent, peer to peer."""


@cli.command()
@location_options
@click.option("--encrypt", is_flag=True, help="Seal the key under a passphrase (scrypt + AES-256-GCM).")
@click.option("--passphrase-file", type=click.Path(path_type=Path, dir_okay=False), default=None)
@click.option("--json", "as_json", is_flag=True)
@handles_errors
def init(
    config_path: Path | None, data_dir: Path | None, encrypt: bool, passphrase_file: Path | None, as_json: bool
) -> None:
    """Create the data dir, the node's Ed25519 identity and its wallet (idempotent)."""
    _, paths = resolve(config_path, data_dir)
    paths.ensure_data_dir()
    if paths.key_file.exists():
        info = read_key_file_info(paths.key_file)
        if encrypt and not info.encrypted:
            _seal_existing_keys(paths, passphrase_file)
            info = read_key_file_info(paths.key_file)
        ensure_token(paths.api_token_file)  # a data dir made before the API existed gets its token
        ensure_token(paths.owner_token_file)  # ... and one made before the owner had a token of its own
        if not info.encrypted:  # a sealed node's wallet is made by `run`, which has the passphrase
            _ensure_wallet(paths, None)
        _echo_init(paths, info.public_key, info.peer_id, info.encrypted, created=False, as_json=as_json)
        return
    passphrase = None
    if encrypt:
        passphrase = read_passphrase(passphrase_file, prompt="New key passphrase: ", confirm=True)
        if passphrase is None:
            raise UsageError("--encrypt needs a passphrase: --passphrase-file, $BITTERBOT_KEY_PASSPHRASE or a terminal")
    identity = Identity.generate()
    save_identity(identity, paths.key_file, passphrase=passphrase)
    ensure_token(paths.api_token_file)
    ensure_token(paths.owner_token_file)
    _ensure_wallet(paths, passphrase)
    _echo_init(paths, identity.public_key, identity.peer_id, passphrase is not None, created=True, as_json=as_json)


def _seal_existing_keys(paths: NodePaths, passphrase_file: Path | None) -> None:
    """Seal a node's plaintext identity and wallet under a new passphrase, in place (no daemon may
    run meanwhile: it holds the keys in memory and would write the wallet as it found it)."""
    passphrase = read_passphrase(passphrase_file, prompt="New key passphrase: ", confirm=True)
    if passphrase is None:
        raise UsageError("--encrypt needs a passphrase: --passphrase-file, $BITTERBOT_KEY_PASSPHRASE or a terminal")
    with DataDirLock(paths.lock_file):
        seal_identity_file(paths.key_file, passphrase)
        wallet = paths.data_dir / "wallet.key"
        if wallet.exists():
            from marketplace.wallet import load_or_create_wallet

            load_or_create_wallet(wallet, passphrase)  # seals a plaintext wallet in place


def _ensure_wallet(paths: NodePaths, passphrase: bytes | None) -> None:
    """The node's wallet, made with its identity: its address is what a deployer names as the
    escrow's arbiter (`chain deploy --arbiter`) before any daemon ran."""
    from marketplace.wallet import load_or_create_wallet

    load_or_create_wallet(paths.data_dir / "wallet.key", passphrase)


def _wallet_address(paths: NodePaths) -> str | None:
    from marketplace.wallet import wallet_address

    path = paths.data_dir / "wallet.key"
    return wallet_address(path) if path.exists() else None


def _echo_init(
    paths: NodePaths, public_key: bytes, peer_id: str, encrypted: bool, *, created: bool, as_json: bool
) -> None:
    wallet = _wallet_address(paths)
    if as_json:
        doc = {"data_dir": str(paths.data_dir), "created": created, "key_file": str(paths.key_file),
               "encrypted": encrypted, "public_key": public_key.hex(), "peer_id": peer_id,
               "api_token_file": str(paths.api_token_file), "wallet_address": wallet}  # fmt: skip
        click.echo(json.dumps(doc, indent=2))
        return
    click.echo(f"initialised {paths.data_dir}" if created else f"already initialised: {paths.data_dir}")
    click.echo(f"  identity    {paths.key_file} ({'encrypted' if encrypted else 'unencrypted'})")
    click.echo(f"  public key  {public_key.hex()}")
    click.echo(f"  peer id     {peer_id}")
    click.echo(f"  api token   {paths.api_token_file}")
    if wallet:
        click.echo(f"  wallet      {wallet}")


def _load_or_create_identity(paths: NodePaths, passphrase_file: Path | None) -> tuple[Identity, bytes | None]:
    """The node's identity, and the passphrase it is sealed under (None: not sealed)."""
    try:
        info = read_key_file_info(paths.key_file)
    except KeyFileMissing:
        identity = Identity.generate()
        save_identity(identity, paths.key_file)
        log.info("identity.created", key_file=str(paths.key_file), peer_id=identity.peer_id)
        return identity, None
    passphrase = None
    if info.encrypted:
        passphrase = read_passphrase(passphrase_file, prompt="Key passphrase: ")
    return load_identity(paths.key_file, passphrase=passphrase), passphrase


@cli.command()
@location_options
@click.option("--passphrase-file", type=click.Path(path_type=Path, dir_okay=False), default=None)
@handles_errors
def run(config_path: Path | None, data_dir: Path | None, passphrase_file: Path | None) -> None:
    """Run the daemon until SIGINT or SIGTERM. Creates an identity on first run."""
    loaded, paths = resolve(config_path, data_dir)
    configure_logging(loaded.config.log.level, loaded.config.log.format, parts=loaded.config.log.parts)
    paths.ensure_data_dir()
    from node.daemon.daemon import Daemon
    from node.runtime.context import NodeContext

    with DataDirLock(paths.lock_file):
        identity, passphrase = _load_or_create_identity(paths, passphrase_file)
        daemon = Daemon(NodeContext(loaded, paths, identity, key_passphrase=passphrase))
        code = asyncio.run(_run_then_bound_exit(daemon, loaded.config.node.shutdown_timeout_s))
    sys.exit(code)


async def _run_then_bound_exit(daemon: Daemon, grace_s: float) -> int:
    code = await daemon.run()
    arm_exit_watchdog(grace_s, code)  # asyncio's and the interpreter's thread joins come next
    return code


@cli.command()
@location_options
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@handles_errors
def status(config_path: Path | None, data_dir: Path | None, as_json: bool) -> None:
    """What the node is and what its daemon is doing."""
    report = status_report(*resolve(config_path, data_dir))
    click.echo(json.dumps(report, indent=2) if as_json else status_text(report))


@cli.group("config")
def config_group() -> None:
    """Check or show the effective configuration."""


@config_group.command("check")
@location_options
@click.option("--json", "as_json", is_flag=True)
@handles_errors
def config_check(config_path: Path | None, data_dir: Path | None, as_json: bool) -> None:
    """Validate the config (file plus environment) and say where it came from."""
    loaded, paths = resolve(config_path, data_dir)
    if as_json:
        doc = {
            "ok": True,
            "source": str(loaded.path) if loaded.path else None,
            "env_overrides": dict(sorted(loaded.env_overrides.items())),
            "data_dir": str(paths.data_dir),
        }
        click.echo(json.dumps(doc, indent=2))
        return
    click.echo(f"ok: {loaded.path or 'embedded defaults'}")
    for key, var in sorted(loaded.env_overrides.items()):
        click.echo(f"  {key} from {var}")
    click.echo(f"  data dir {paths.data_dir}")


@config_group.command("show")
@location_options
@handles_errors
def config_show(config_path: Path | None, data_dir: Path | None) -> None:
    """Print the effective config as JSON."""
    loaded, _ = resolve(config_path, data_dir)
    click.echo(json.dumps(loaded.config.model_dump(), indent=2))


@cli.command("doctor")
@location_options
@click.option("--json", "as_json", is_flag=True)
@click.option(
    "--clock-online", is_flag=True, help="Also compare the clock with [doctor] time_url (contacts that host)."
)
@handles_errors
def doctor(config_path: Path | None, data_dir: Path | None, as_json: bool, clock_online: bool) -> None:
    """Check what usually goes wrong in the first hour, and say how to fix each (exit 1 if any fails)."""
    from dataclasses import asdict

    from node.ops.doctor import FAIL, run_checks

    loaded, paths = resolve(config_path, data_dir)  # a broken config is the first finding (exit 2)
    checks = run_checks(loaded.config, paths, clock_online=clock_online)
    if as_json:
        click.echo(json.dumps([asdict(c) for c in checks], indent=2))
    else:
        marks = {"ok": "ok  ", "warn": "WARN", "fail": "FAIL"}
        for check in checks:
            click.echo(f"{marks[check.status]}  {check.name:<14} {check.detail}")
            if check.fix:
                click.echo(f"{'':20}fix: {check.fix}")
    if any(c.status == FAIL for c in checks):
        raise SystemExit(EXIT_FAILURE)


@cli.command("mcp")
@location_options
@handles_errors
def mcp(config_path: Path | None, data_dir: Path | None) -> None:
    """Serve this node's memory to an agent over the Model Context Protocol (stdio).

    Through the running daemon when there is one, else on the memory file directly.
    Register it with an MCP client as the command `bitterbot-node mcp`.
    """
    import asyncio

    from node.servers.mcp import serve

    loaded, paths = resolve(config_path, data_dir)
    configure_logging(
        loaded.config.log.level, loaded.config.log.format, parts=loaded.config.log.parts
    )  # stderr: stdout carries the protocol
    asyncio.run(serve(loaded.config, paths))


def main() -> None:
    register_commands()
    cli()


def register_commands() -> click.Group:
    """Add the command groups defined in their own modules (they build on this one's helpers)."""
    from node.cli.memory import memory_group  # registered here: memory_cli builds on this module's helpers

    cli.add_command(memory_group)
    from node.cli.backup import backup, restore  # also adds memory export to the memory group
    from node.cli.chain import chain_group
    from node.cli.groups import devices_group, skills_group, weather_group
    from node.cli.stop import stop
    from node.cli.ui import ui

    for command in (weather_group, skills_group, devices_group, chain_group, backup, restore, ui, stop):
        cli.add_command(command)
    from node.cli.generated import add_generated

    add_generated(cli)
    return cli
