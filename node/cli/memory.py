"""`bitterbot-node memory …`: the memory store from the command line.

With a daemon running, each command is a request to its API; with none, the command
opens the store file itself and calls the same service functions the daemon calls
(``memory.service``), so both ways answer alike (``node.cli.transport``).
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from node.cli.common import handles_errors, location_options, resolve
from node.cli.progress import progress_bar
from node.cli.transport import with_store
from node.errors import EXIT_INTERRUPTED, UsageError

if TYPE_CHECKING:  # the store (and numpy under it) loads only when a command opens the file itself
    from memory.intake.store import IntakeStore
    from memory.transfer.foreign import ForeignSource


@click.group("memory")
def memory_group() -> None:
    """Remember, search, show, forget and import Knowledge Crystals; consolidate, dream, take notes."""


@memory_group.command("import")
@location_options
@click.argument("source", type=click.Path(exists=True, path_type=Path))
@click.option(
    "--no-embed", is_flag=True, help="Store only; the daemon embeds in the background (it always does when it runs)."
)
@click.option(
    "--from",
    "kind",
    type=click.Choice(["mem0", "letta", "obsidian", "chatgpt"]),
    default=None,
    help="Read SOURCE as this tool's export (default: recognised by its shape).",
)
@click.option("--json", "as_json", is_flag=True)
@handles_errors
def memory_import(
    config_path: Path | None, data_dir: Path | None, source: Path, no_embed: bool, kind: str | None, as_json: bool
) -> None:
    """Import a folder of markdown/text files, a JSONL of messages, a `memory export` file (restored
    with its types, times, links and supersession), a Mem0 export, a Letta agent file or passage list,
    or an Obsidian vault; incremental and resumable."""
    from memory.errors import ForeignFormatError
    from memory.transfer.foreign_files import read_foreign

    try:
        foreign = read_foreign(source, kind)  # read before the store opens: a wrong file changes nothing
    except ForeignFormatError as exc:
        raise UsageError(str(exc)) from None
    if foreign is not None:
        _import_foreign(config_path, data_dir, foreign, no_embed, as_json)
        return

    async def go(store: IntakeStore) -> dict[str, int]:
        from memory.errors import FileRefused
        from memory.importer import crystals_from_file, find_sources
        from memory.storage.counts import crystal_total
        from memory.transfer.imported_files import imported_file_hash, mark_imported
        from memory.transfer.restore import is_export_file, restore_export
        from node.cli.export_keys import trusted_signers

        trusted: frozenset[bytes] | None = None  # read at the first export file: a folder of notes needs no key
        max_line = resolve(config_path, data_dir)[0].config.capture.max_line_bytes

        stored_before.append(await crystal_total(store.reader()))
        totals = progress_so_far  # what Ctrl-C reports: the store keeps every batch already written
        sources = find_sources(source)
        with progress_bar(len(sources), "importing") as bar:
            for item in sources:
                key = str(item.path.resolve())
                if await imported_file_hash(store, key) == item.content_hash:
                    totals["skipped_files"] += 1
                elif is_export_file(item.path):  # a `memory export`: restored as it was, not as messages
                    if trusted is None:
                        trusted = trusted_signers(config_path, data_dir)
                    restored = await restore_export(store, item.path, trusted=trusted, max_line=max_line)
                    await mark_imported(store, key, item.content_hash, restored.created + restored.duplicates)
                    totals["files"] += 1
                    for name in ("created", "duplicates", "superseded", "links", "derivations", "demoted", "refused"):
                        totals[name] += getattr(restored, name)
                    totals["damaged_lines"] += restored.damaged_count
                    for line in restored.damaged:
                        click.echo(f"{item.path}: skipped {line}", err=True)
                    if (demoted := restored.summary()) is not None:
                        click.echo(f"{item.path}: {demoted}", err=True)
                        notes.append({"path": str(item.path), "vouched": restored.vouched.name.lower(),
                                      "why": restored.vouched.value, "demoted": restored.demoted})  # fmt: skip
                else:
                    try:
                        crystals = list(crystals_from_file(item, max_line=max_line))
                    except FileRefused as exc:  # swapped for a link since it was listed: the rest go on
                        click.echo(f"{exc}; skipped", err=True)
                        totals["refused_files"] += 1
                        bar.update(1)
                        continue
                    result = await store.remember_many(crystals)
                    await mark_imported(store, key, item.content_hash, result.created + result.duplicates)
                    totals["files"] += 1
                    totals["created"] += result.created
                    totals["duplicates"] += result.duplicates
                bar.update(1)
        if embed_here:
            backlog = await store.backlog_size()
            with progress_bar(backlog, "embedding") as bar:

                def embedded(count: int) -> None:
                    totals["embedded"] += count
                    bar.update(count)

                await store.embed_backlog(progress=embedded)
        return totals

    # A daemon on this data dir embeds the backlog itself, in the background: embedding here as well
    # would do the same work twice, and the import would block for as long as it takes.
    daemon_embeds = daemon_running(config_path, data_dir)
    embed_here = not no_embed and not daemon_embeds
    progress_so_far = dict.fromkeys(
        ("files", "skipped_files", "created", "duplicates", "embedded", "superseded", "links", "derivations"), 0
    )
    progress_so_far.update(damaged_lines=0, demoted=0, refused=0, refused_files=0)
    notes: list[dict[str, Any]] = []  # each export file not taken at its word, and why
    stored_before: list[int] = []  # the crystals there were when the import began
    try:
        totals = with_store(config_path, data_dir, go)
    except KeyboardInterrupt:
        done = progress_so_far
        if stored_before:
            done["created"] = _stored_since(config_path, data_dir, stored_before[0], done["created"])
        click.echo(
            f"\nstopped: {done['created']} new crystals from {done['files']} files are stored, "
            f"{done['embedded']} embedded; run the same command again to go on from there "
            "(nothing stored is lost; `memory embed` embeds the rest)",
            err=True,
        )
        sys.exit(EXIT_INTERRUPTED)
    if as_json:
        click.echo(
            json.dumps(
                {
                    **totals,
                    "embedding": "here" if embed_here else "daemon" if daemon_embeds else "later",
                    "not_vouched_for": notes,
                },
                indent=2,
            )
        )
    else:
        click.echo(
            f"imported {totals['created']} new crystals from {totals['files']} files "
            f"({totals['duplicates']} already known, {totals['skipped_files']} files unchanged, "
            f"{totals['embedded']} embedded)"
            + (
                f"; restored {totals['superseded']} supersessions, {totals['links']} links"
                if totals["links"] or totals["superseded"]
                else ""
            )
            + (f"; skipped {totals['damaged_lines']} damaged lines" if totals["damaged_lines"] else "")
            + (
                f"; {totals['demoted']} from export files not signed by this node came in as imported text"
                if totals["demoted"]
                else ""
            )
        )
        if not embed_here and totals["created"]:
            who = "the running daemon embeds them" if daemon_embeds else "`memory embed` or the daemon embeds them"
            click.echo(
                f"keyword search finds them now; {who} in the background for search by meaning "
                "(`bitterbot-node status` shows how many wait)"
            )


def _stored_since(config_path: Path | None, data_dir: Path | None, before: int, counted: int) -> int:
    """How many crystals an interrupted import stored, counted in the file. The totals kept as it went
    count a file only once all of it is stored, but each batch of 1,000 commits on its own: Ctrl-C in
    a file of 40,000 lines said "0 new crystals" with 10,000 stored. ``counted`` if the file cannot
    be read again."""
    from memory.storage.counts import crystal_total

    async def count(store: IntakeStore) -> int:
        return await crystal_total(store.reader())

    try:
        return max(counted, with_store(config_path, data_dir, count) - before)
    except (KeyboardInterrupt, Exception):  # noqa: BLE001 - a second Ctrl-C, or no count: say what was counted
        return counted


def _import_foreign(
    config_path: Path | None, data_dir: Path | None, foreign: ForeignSource, no_embed: bool, as_json: bool
) -> None:
    """Store what a Mem0, Letta or Obsidian reader found, or capture a ChatGPT export's conversations,
    with a progress bar; Ctrl-C keeps every batch stored, and the same command again goes on (what
    is stored counts as already known, a message captured before is skipped)."""
    from memory.transfer.foreign import ForeignImported, capture_all, store_entries

    done = ForeignImported()

    async def go(store: IntakeStore) -> ForeignImported:
        nonlocal done
        if foreign.conversations:  # a ChatGPT export: each conversation captured, as `memory capture` does
            with progress_bar(len(foreign.conversations), "capturing conversations") as bar:
                done = await capture_all(store, foreign, bar.update)
        else:
            with progress_bar(len(foreign.entries), f"importing from {foreign.kind}") as bar:
                done = await store_entries(store, foreign, bar.update)
        if not no_embed and not daemon_embeds:
            with progress_bar(await store.backlog_size(), "embedding") as bar:
                await store.embed_backlog(progress=bar.update)
        return done

    daemon_embeds = daemon_running(config_path, data_dir)
    try:
        done = with_store(config_path, data_dir, go)
    except KeyboardInterrupt:
        click.echo("\nstopped: every batch written so far is kept; run the same command again to go on", err=True)
        sys.exit(EXIT_INTERRUPTED)
    for reason in foreign.skipped[:20]:
        click.echo(f"skipped {reason}", err=True)
    if len(foreign.skipped) > 20:
        click.echo(f"… and {len(foreign.skipped) - 20} more skipped", err=True)
    if as_json:
        summary = {"from": foreign.kind, **asdict(done), "no_counterpart": foreign.left_out}
        click.echo(json.dumps(summary, indent=2))
        return
    click.echo(
        f"imported from {foreign.kind}: {done.stored} new crystals, {done.known} already in memory (merged), "
        + (
            f"from {done.conversations} conversations ({done.messages_left_out} messages not worth keeping)"
            if foreign.conversations
            else f"{done.skipped} skipped, {done.links} links"
            + (f" ({done.dangling_links} to notes not in the vault)" if done.dangling_links else "")
        )
    )
    if foreign.left_out:
        click.echo("not imported (no counterpart here): " + ", ".join(foreign.left_out))


def daemon_running(config_path: Path | None, data_dir: Path | None) -> bool:
    """Whether a daemon runs on this data dir (it then embeds what an import stores)."""
    from node.runtime.status import probe_daemon

    _, paths = resolve(config_path, data_dir)
    return probe_daemon(paths.data_dir).running


@memory_group.command("embed")
@location_options
@click.option("--json", "as_json", is_flag=True)
@handles_errors
def memory_embed(config_path: Path | None, data_dir: Path | None, as_json: bool) -> None:
    """Embed every crystal not yet in the active embedder's space (after `import --no-embed`, or after
    switching embedder: the old vectors keep serving until each crystal is re-embedded). Resumable."""

    async def go(store: IntakeStore) -> dict[str, Any]:
        backlog = await store.backlog_size()
        with progress_bar(backlog, f"embedding with {store.embedder.id}") as bar:
            embedded = await store.embed_backlog(progress=bar.update)
        return {"embedder": store.embedder.id, "embedded": embedded, "backlog": await store.backlog_size()}

    doc = with_store(config_path, data_dir, go)
    if as_json:
        click.echo(json.dumps(doc, indent=2))
    else:
        click.echo(f"embedded {doc['embedded']} crystals with {doc['embedder']} ({doc['backlog']} left)")
