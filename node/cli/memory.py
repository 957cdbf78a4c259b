"""`bitterbot-node memory …`: the memory store from the command line.

With a daemon running, each command is a request to its API; with none, the command
opens the store file itself and calls the same service functions the daemon calls
(``node.commands.memory_service``), so both ways answer alike (``node.cli.transport``).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from click.termui import progressbar

from memory.model import HeldStatus, Origin, Scope, SemanticType
from memory.retrieval.query import SearchMode, SortKey
from node.cli.common import handles_errors, location_options
from node.cli.transport import run_command, with_store
from node.commands.progress import reporting

if TYPE_CHECKING:  # the store (and numpy under it) loads only when a command opens the file itself
    from memory.storage.store import MemoryStore


def _choices(enum: Any) -> click.Choice[str]:
    return click.Choice([e.value for e in enum])


@click.group("memory")
def memory_group() -> None:
    """Remember, search, show, forget and import Knowledge Crystals; consolidate, dream, take notes."""


@memory_group.command("add")
@location_options
@click.argument("text")
@click.option("--type", "stype", type=_choices(SemanticType), default=None, help="Left out: the node types it.")
@click.option("--origin", type=_choices(Origin), default="user_input")
@click.option("--importance", type=click.FloatRange(0, 1), default=None, help="Stated: a floor it keeps.")
@click.option("--scope", type=_choices(Scope), default="private")
@click.option("--ttl", default=None, help="Forget after this long: 30m, 24h, 7d, 2w.")
@click.option("--pin", is_flag=True, help="Keep it for good: it never decays or expires.")
@click.option("--tags", default=None, help="A skill's tags, comma-separated (with --type skill).")
@click.option("--category", default=None, help="A skill's category, e.g. debugging (with --type skill).")
@click.option("--json", "as_json", is_flag=True)
@handles_errors
def memory_add(
    config_path: Path | None,
    data_dir: Path | None,
    text: str,
    stype: str | None,
    origin: str,
    importance: float | None,
    scope: str,
    ttl: str | None,
    pin: bool,
    tags: str | None,
    category: str | None,
    as_json: bool,
) -> None:
    """Remember TEXT (deduplicated: the same text is stored once). Untyped, the node types it."""
    args = dict(text=text, type=stype, origin=origin, importance=importance, scope=scope, ttl=ttl, pin=pin,
                tags=[t for t in (tags or "").split(",") if t.strip()], category=category)  # fmt: skip

    doc = run_command(config_path, data_dir, "memory.remember", args)
    if as_json:
        click.echo(json.dumps(doc, indent=2))
    else:
        verb = "remembered" if doc["created"] else "already known"
        c = doc["crystal"]
        typed = (
            f"{c['semantic_type']} {c['type_confidence']:.2f}" if c["type_source"] == "model" else c["semantic_type"]
        )
        click.echo(f"{verb} {c['id']} ({typed}, {c['epistemic_layer']}, {c['sensitivity']}, {c['lifespan']})")


@memory_group.command("search")
@location_options
@click.argument("query", required=False)
@click.option("--mode", type=_choices(SearchMode), default="hybrid")
@click.option("--limit", type=click.IntRange(1, 1000), default=10)
@click.option("--since", default=None, help="30m, 24h, 7d, 2w or an ISO date.")
@click.option("--until", default=None, help="As memory stood then: 30m, 7d (ago) or an ISO date.")
@click.option("--type", "types", type=_choices(SemanticType), multiple=True)
@click.option("--origin", "origins", type=_choices(Origin), multiple=True)
@click.option("--sort", type=_choices(SortKey), default="recency", help="For --mode typed.")
@click.option("--include-archived", is_flag=True)
@click.option(
    "--include-superseded", is_flag=True, help="Also what a newer crystal replaced (after it, marked superseded)."
)
@click.option("--held", "include_held", is_flag=True, help="Also peer content held in quarantine (marked).")
@click.option("--explain", is_flag=True, help="Show each hit's keyword, vector, fused and final scores.")
@click.option("--json", "as_json", is_flag=True)
@handles_errors
def memory_search(
    config_path: Path | None,
    data_dir: Path | None,
    query: str | None,
    mode: str,
    limit: int,
    since: str | None,
    until: str | None,
    types: tuple[str, ...],
    origins: tuple[str, ...],
    sort: str,
    include_archived: bool,
    include_superseded: bool,
    include_held: bool,
    explain: bool,
    as_json: bool,
) -> None:
    """Search memory (the local agent's view: everything not expired, nothing held in quarantine unless --held)."""
    args = dict(query=query, mode=mode, limit=limit, since=since, until=until, types=list(types),
        origins=list(origins), sort=sort, include_archived=include_archived, include_superseded=include_superseded,
        include_held=include_held, explain=explain,
    )  # fmt: skip

    hits = run_command(config_path, data_dir, "memory.search", args)
    if as_json:
        click.echo(json.dumps(hits, indent=2))
        return
    if not hits:
        click.echo("no matches")
    for rank, hit in enumerate(hits, start=1):
        crystal = hit["crystal"]
        text = crystal["text"].replace("\n", " ")
        mark = f"{provenance_mark(crystal)}{superseded_mark(crystal)}"
        click.echo(f"{rank:>3}. {crystal['id']}  [{crystal['semantic_type']}]{mark}  {text[:100]}")
        if hit["explain"]:
            e = hit["explain"]
            click.echo(
                f"     keyword rank {e['keyword_rank']} bm25 {e['keyword_score']} | vector rank {e['vector_rank']} "
                f"sim {e['vector_similarity']} | rrf {e['rrf']} x importance {e['importance_factor']} "
                f"x recency {e['recency_factor']} x steering {e['steering_factor']} x time {e['time_factor']} "
                f"x superseded {e['superseded_factor']} = {e['final_score']} (fused rank {e['fused_rank']})"
            )
            if e["in_place_of"]:
                click.echo(f"     current in place of {e['in_place_of']}, which it superseded")


@memory_group.command("show")
@location_options
@click.argument("crystal_id")
@click.option("--json", "as_json", is_flag=True)
@handles_errors
def memory_show(config_path: Path | None, data_dir: Path | None, crystal_id: str, as_json: bool) -> None:
    """One crystal with its links, provenance and audit trail."""

    args = dict(id=crystal_id)

    doc = run_command(config_path, data_dir, "memory.show", args)
    if as_json:
        click.echo(json.dumps(doc, indent=2))
        return
    c = doc["crystal"]
    click.echo(
        f"{c['id']}  {c['semantic_type']} / {c['origin']} / {c['lifecycle']} / {c['scope']} / {c['sensitivity']}"
    )
    click.echo(
        f"  typed by {c['type_source']} ({c['type_confidence']:.2f})  layer {c['epistemic_layer']}  "
        f"lifespan {c['lifespan']}"
    )
    click.echo(f"  importance {c['importance']}  accessed {c['access_count']}x  embedded {c['embedded_with']}")
    click.echo(f"  {c['text']}")
    if c.get("superseded"):
        click.echo(f"  superseded by {c['superseded']['by']} (memory unsupersede {c['id']} to undo)")
    for a in doc["associations"]:
        click.echo(f"  link  {a['type']:<11} {a['src_id']} -> {a['dst_id']} ({a['weight']})")
    for entry in doc["audit"]:
        click.echo(f"  audit {entry['from']} -> {entry['to']}: {entry['reason']} by {entry['actor']}")
    for entry in doc["attribution"]:
        if entry["action"] in ("superseded", "supersedes", "unsuperseded"):
            click.echo(f"  {entry['action']} {entry['detail']} by {entry['actor']}")


def superseded_mark(crystal: dict[str, Any]) -> str:
    """An outdated crystal (shown only when asked for) says what replaced it."""
    superseded = crystal.get("superseded")
    return f" [superseded by {superseded['by']}]" if superseded else ""


def provenance_mark(crystal: dict[str, Any]) -> str:
    """A peer's content says so, and held content says that too."""
    if crystal["origin"] != "peer":
        return ""
    held = "HELD, " if crystal.get("quarantined") else ""
    return f" [{held}from {str(crystal['source'] or 'a peer')[:21]}…]"


@memory_group.group("quarantine", invoke_without_command=True)
@location_options
@click.option("--status", type=_choices(HeldStatus), default="held")
@click.option("--limit", type=click.IntRange(1, 10_000), default=100)
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
@handles_errors
def memory_quarantine(
    ctx: click.Context, config_path: Path | None, data_dir: Path | None, status: str, limit: int, as_json: bool
) -> None:
    """Peer content held back from the agent: list it (this), then approve or reject each."""
    if ctx.invoked_subcommand is not None:
        return
    args = dict(status=status, limit=limit)

    items = run_command(config_path, data_dir, "memory.quarantine", args)
    if as_json:
        click.echo(json.dumps(items, indent=2))
        return
    if not items:
        click.echo(f"nothing {status}")
    for item in items:
        c = item["crystal"]
        flags = f" [{', '.join(item['flags'])}]" if item["flags"] else ""
        click.echo(f"{c['id']}  from {item['source'][:21]}…  {item['reason']}{flags}")
        click.echo(f"    {c['text'].replace(chr(10), ' ')[:160]}")


def _decide(command: str, verb: str) -> Callable[..., None]:
    @location_options
    @click.argument("crystal_id")
    @click.option("--json", "as_json", is_flag=True)
    @handles_errors
    def decide(config_path: Path | None, data_dir: Path | None, crystal_id: str, as_json: bool) -> None:
        args = dict(id=crystal_id)

        doc = run_command(config_path, data_dir, command, args)
        click.echo(json.dumps(doc, indent=2) if as_json else f"{verb} {crystal_id}")

    return decide


memory_quarantine.command("approve", help="Release a held crystal to the agent (embedded, searchable).")(
    _decide("memory.quarantine.approve", "approved")
)
memory_quarantine.command("reject", help="Forget a held crystal; the same text is refused from now on.")(
    _decide("memory.quarantine.reject", "rejected")
)


@memory_group.command("forget")
@location_options
@click.argument("crystal_id")
@click.option("--reason", default="forgotten by the user")
@click.option("--json", "as_json", is_flag=True)
@handles_errors
def memory_forget(config_path: Path | None, data_dir: Path | None, crystal_id: str, reason: str, as_json: bool) -> None:
    """Soft-delete a crystal: never returned again, recorded in the audit log."""
    args = dict(id=crystal_id, reason=reason)

    doc = run_command(config_path, data_dir, "memory.forget", args)
    click.echo(json.dumps(doc, indent=2) if as_json else f"forgot {doc['forgotten']}")


@memory_group.command("stats")
@location_options
@click.option("--json", "as_json", is_flag=True)
@handles_errors
def memory_stats(config_path: Path | None, data_dir: Path | None, as_json: bool) -> None:
    """Counts by lifecycle, type, origin and sensitivity; embedding backlog; file size."""
    stats = run_command(config_path, data_dir, "memory.stats", {})
    if as_json:
        click.echo(json.dumps(stats, indent=2))
        return
    click.echo(
        f"crystals       {stats['total']}  ({stats['file_bytes'] / 1e6:.1f} MB, schema v{stats['schema_version']})"
    )
    click.echo(f"embedder       {stats['embedder']}  backlog {stats['embedding_backlog']}")
    for key in ("by_lifecycle", "by_semantic_type", "by_origin", "by_sensitivity"):
        parts = ", ".join(f"{k} {v}" for k, v in sorted(stats[key].items()))
        click.echo(f"{key[3:]:<15}{parts or '-'}")


def progress_bar(length: int, label: str) -> Any:
    """A progress bar on stderr, so --json output on stdout stays clean."""
    return progressbar(length=length, label=label, file=sys.stderr, show_pos=True)


@contextmanager
def progress_bar_on_first_step(length: int, label: str) -> Iterator[None]:
    """A progress bar for a command run here on the files (``node.commands.progress``); it appears at
    the first step reported, so a command the daemon runs (which reports none back) shows none."""
    bars: list[Any] = []

    def step(_: str) -> None:
        if not bars:
            bars.append(progress_bar(length, label).__enter__())
        bars[0].update(1)

    token = reporting.set(step)
    try:
        yield
    finally:
        reporting.reset(token)
        if bars:
            bars[0].__exit__(None, None, None)


@memory_group.command("import")
@location_options
@click.argument("source", type=click.Path(exists=True, path_type=Path))
@click.option("--no-embed", is_flag=True, help="Store only; the daemon embeds in the background.")
@click.option("--json", "as_json", is_flag=True)
@handles_errors
def memory_import(config_path: Path | None, data_dir: Path | None, source: Path, no_embed: bool, as_json: bool) -> None:
    """Import a folder of markdown/text files or a JSONL of messages; incremental and resumable."""

    async def go(store: MemoryStore) -> dict[str, int]:
        from memory.importer import crystals_from_file, find_sources
        from memory.storage.imported_files import imported_file_hash, mark_imported

        totals = {"files": 0, "skipped_files": 0, "created": 0, "duplicates": 0, "embedded": 0}
        sources = find_sources(source)
        with progress_bar(len(sources), "importing") as bar:
            for item in sources:
                key = str(item.path.resolve())
                if await imported_file_hash(store, key) == item.content_hash:
                    totals["skipped_files"] += 1
                else:
                    result = await store.remember_many(list(crystals_from_file(item)))
                    await mark_imported(store, key, item.content_hash, result.created + result.duplicates)
                    totals["files"] += 1
                    totals["created"] += result.created
                    totals["duplicates"] += result.duplicates
                bar.update(1)
        if not no_embed:
            backlog = await store.backlog_size()
            with progress_bar(backlog, "embedding") as bar:
                totals["embedded"] = await store.embed_backlog(progress=bar.update)
        return totals

    totals = with_store(config_path, data_dir, go)
    if as_json:
        click.echo(json.dumps(totals, indent=2))
    else:
        click.echo(
            f"imported {totals['created']} new crystals from {totals['files']} files "
            f"({totals['duplicates']} already known, {totals['skipped_files']} files unchanged, "
            f"{totals['embedded']} embedded)"
        )


@memory_group.command("embed")
@location_options
@click.option("--json", "as_json", is_flag=True)
@handles_errors
def memory_embed(config_path: Path | None, data_dir: Path | None, as_json: bool) -> None:
    """Embed every crystal not yet in the active embedder's space (after `import --no-embed`, or after
    switching embedder: the old vectors keep serving until each crystal is re-embedded). Resumable."""

    async def go(store: MemoryStore) -> dict[str, Any]:
        backlog = await store.backlog_size()
        with progress_bar(backlog, f"embedding with {store.embedder.id}") as bar:
            embedded = await store.embed_backlog(progress=bar.update)
        return {"embedder": store.embedder.id, "embedded": embedded, "backlog": await store.backlog_size()}

    doc = with_store(config_path, data_dir, go)
    if as_json:
        click.echo(json.dumps(doc, indent=2))
    else:
        click.echo(f"embedded {doc['embedded']} crystals with {doc['embedder']} ({doc['backlog']} left)")
