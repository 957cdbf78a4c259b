"""`bitterbot-node memory consolidate|unmerge|note|bootstrap|dream|hormones|event`.

The living side of memory from the command line: the same library calls the
daemon makes on its timers, run on demand: in the daemon when it runs (it owns the
working-memory files and the dream lock), else here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import click

from memory.dynamics.hormones import Event
from node.cli.common import handles_errors, location_options, resolve
from node.cli.memory import memory_group, progress_bar_on_first_step
from node.cli.transport import run_command
from node.errors import UsageError

if TYPE_CHECKING:  # the store and the cycles load only when a command runs on the file itself
    pass


@memory_group.command("consolidate")
@location_options
@click.option("--dry-run", is_flag=True, help="Show what a cycle would change; change nothing.")
@click.option("--json", "as_json", is_flag=True)
@handles_errors
def memory_consolidate(config_path: Path | None, data_dir: Path | None, dry_run: bool, as_json: bool) -> None:
    """Run one consolidation cycle now: rescore, expire, merge, write."""
    from memory.dynamics.consolidation import CONSOLIDATION_STEPS

    with progress_bar_on_first_step(CONSOLIDATION_STEPS, "consolidating"):
        report = run_command(config_path, data_dir, "memory.consolidate", {"dry_run": dry_run})
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    verb = "would" if dry_run else "did"
    click.echo(
        f"consolidation {verb}: rescore {report['rescored']}, expire {report['expired_by_decay']} decayed + "
        f"{report['expired_by_ttl']} past TTL, merge {report['merged']}, promote {report['promoted']}, "
        f"purge {report['purged']}  ({report['duration_ms']} ms; merge threshold {report['merge_threshold']})"
    )
    for change in report["changes"]:
        click.echo(f"  {change['crystal_id']}  {change['from_state']} -> {change['to_state']}: {change['reason']}")


@memory_group.command("unmerge")
@location_options
@click.argument("crystal_id")
@click.option("--json", "as_json", is_flag=True)
@handles_errors
def memory_unmerge(config_path: Path | None, data_dir: Path | None, crystal_id: str, as_json: bool) -> None:
    """Undo a merge: restore CRYSTAL_ID (archived by a merge) to what it was."""

    doc = run_command(config_path, data_dir, "memory.unmerge", {"id": crystal_id})
    if as_json:
        click.echo(json.dumps(doc, indent=2))
    else:
        click.echo(f"restored {crystal_id} (it had been merged into {doc['merged_into']})")


@memory_group.command("note")
@location_options
@click.argument("text")
@click.option("--importance", type=click.FloatRange(0, 1), default=None, help="0.7 if left out; stated: a floor.")
@click.option("--json", "as_json", is_flag=True)
@handles_errors
def memory_note(
    config_path: Path | None, data_dir: Path | None, text: str, importance: float | None, as_json: bool
) -> None:
    """Write a working-memory note: appended to scratch.md durably, searchable at once."""
    from node.parts.memory import working_memory_files

    _, paths = resolve(config_path, data_dir)
    files = working_memory_files(paths)

    crystal = run_command(config_path, data_dir, "wm.note", {"text": text, "importance": importance})
    if as_json:
        click.echo(json.dumps(crystal, indent=2))
    else:
        click.echo(f"noted in {files.scratch.path} (crystal {crystal['id']})")


@memory_group.command("bootstrap")
@location_options
@click.option(
    "--context-window",
    type=click.IntRange(1, 10_000_000),
    default=128_000,
    show_default=True,
    help="The model's context window in tokens; the text's size follows it.",
)
@click.option("--json", "as_json", is_flag=True, help='{"text": ...} instead of the bare text.')
@handles_errors
def memory_bootstrap(config_path: Path | None, data_dir: Path | None, context_window: int, as_json: bool) -> None:
    """Print the working-memory text an agent puts in its system prompt."""
    doc = run_command(config_path, data_dir, "wm.bootstrap", {"context_window": context_window})
    click.echo(json.dumps(doc, indent=2) if as_json else doc["text"], nl=as_json)


@memory_group.command("dream")
@location_options
@click.option("--json", "as_json", is_flag=True)
@handles_errors
def memory_dream(config_path: Path | None, data_dir: Path | None, as_json: bool) -> None:
    """Run the dream cycle now: fold scratch notes and new memories into MEMORY.md."""
    from node.parts.memory import working_memory_files

    files = working_memory_files(resolve(config_path, data_dir)[1])
    report = run_command(config_path, data_dir, "wm.dream", {})
    if as_json:
        click.echo(json.dumps(report, indent=2))
    elif report["accepted"]:
        click.echo(
            f"dreamt ({report['synthesizer']}, {report['duration_ms']} ms): {report['notes_indexed']} notes folded in, "
            f"{report['pointers_added']} new pointers; wrote {files.memory_md}"
        )
    else:
        raise UsageError(f"the dream was rejected, MEMORY.md is unchanged: {report['rejected_because']}")


@memory_group.command("hormones")
@location_options
@click.option("--json", "as_json", is_flag=True)
@handles_errors
def memory_hormones(config_path: Path | None, data_dir: Path | None, as_json: bool) -> None:
    """Show the hormonal state (effective levels, and any network override)."""

    doc = run_command(config_path, data_dir, "memory.hormones", {})
    if as_json:
        click.echo(json.dumps(doc, indent=2))
        return
    click.echo(f"dopamine {doc['dopamine']:.3f}  cortisol {doc['cortisol']:.3f}  oxytocin {doc['oxytocin']:.3f}")
    if doc["network_override"]:
        o = doc["network_override"]
        click.echo(f"network override: cortisol {o['level']} until {o['until_ms']} ({o['reason']})")


@memory_group.command("event")
@location_options
@click.argument("events", nargs=-1, required=True, type=click.Choice([e.value for e in Event]))
@click.option("--json", "as_json", is_flag=True)
@handles_errors
def memory_event(config_path: Path | None, data_dir: Path | None, events: tuple[str, ...], as_json: bool) -> None:
    """Tell the node what just happened (reward, error, social, achievement, urgency)."""

    doc = run_command(config_path, data_dir, "memory.event", {"events": list(events)})
    click.echo(json.dumps(doc, indent=2) if as_json else f"now: {json.dumps(doc)}")
