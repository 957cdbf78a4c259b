"""The memory commands' answers as a person reads them."""

from __future__ import annotations

import json
from typing import Any

from node.commands.texts.view import CliView
from node.errors import UsageError


def remembered(doc: dict[str, Any], _: CliView) -> str:
    verb = "remembered" if doc["created"] else "already known"
    c = doc["crystal"]
    typed = f"{c['semantic_type']} {c['type_confidence']:.2f}" if c["type_source"] == "model" else c["semantic_type"]
    return f"{verb} {c['id']} ({typed}, {c['epistemic_layer']}, {c['sensitivity']}, {c['lifespan']})"


def captured(doc: dict[str, Any], _: CliView) -> str:
    lines = []
    for c in doc["conversations"]:
        left = ", ".join(f"{n} {why.replace('_', ' ')}" for why, n in c["left_out"].items() if n) or "nothing"
        lines.append(
            f"{c['session']}: {c['new_messages']} new of {c['messages']} messages -> {c['stored']} stored, "
            f"{c['merged']} already known; left out: {left}"
        )
    return "\n".join(lines) or "nothing to capture"


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


def listed(doc: dict[str, Any], _: CliView) -> str:
    crystals = doc["crystals"]
    if not crystals:
        return "no crystals" if not doc["offset"] else f"no crystals after the first {doc['offset']}"
    lines = []
    for at, crystal in enumerate(crystals, start=doc["offset"] + 1):
        text = crystal["text"].replace("\n", " ")
        mark = f"{provenance_mark(crystal)}{superseded_mark(crystal)}"
        lines.append(f"{at:>4}. {crystal['id']}  [{crystal['semantic_type']}]{mark}  {text[:100]}")
    if len(crystals) == doc["limit"]:
        lines.append(f"      more: --offset {doc['offset'] + doc['limit']}")
    return "\n".join(lines)


def hits(found: list[dict[str, Any]], _: CliView) -> str:
    if not found:
        return "no matches"
    lines = []
    for rank, hit in enumerate(found, start=1):
        crystal = hit["crystal"]
        text = crystal["text"].replace("\n", " ")
        mark = f"{provenance_mark(crystal)}{superseded_mark(crystal)}"
        lines.append(f"{rank:>3}. {crystal['id']}  [{crystal['semantic_type']}]{mark}  {text[:100]}")
        if hit["explain"]:
            e = hit["explain"]
            lines.append(
                f"     keyword rank {e['keyword_rank']} bm25 {e['keyword_score']} | vector rank {e['vector_rank']} "
                f"sim {e['vector_similarity']} | rrf {e['rrf']} x importance {e['importance_factor']} "
                f"x recency {e['recency_factor']} x steering {e['steering_factor']} x time {e['time_factor']} "
                f"x superseded {e['superseded_factor']} = {e['final_score']} (fused rank {e['fused_rank']})"
            )
            if e["in_place_of"]:
                lines.append(f"     current in place of {e['in_place_of']}, which it superseded")
    return "\n".join(lines)


def entities(found: list[dict[str, Any]], _: CliView) -> str:
    if not found:
        return "memory names no one and nothing yet"
    width = max(len(e["name"]) for e in found)
    return "\n".join(f"{e['crystals']:>5}  {e['name']:<{width}}  {e['kind']}" for e in found)


def entity(doc: dict[str, Any], _: CliView) -> str:
    e = doc["entity"]
    lines = [f"{e['name']} ({e['kind']}), named in {e['crystals']} memories"]
    if doc["aliases"]:
        lines.append(f"  also called: {', '.join(doc['aliases'])}")
    if doc["belongs"]:
        lines.append(f"  theirs: {', '.join(b['name'] for b in doc['belongs'])}")
    if doc["related"]:
        beside = ", ".join(f"{r['name']} ({r['crystals']})" for r in doc["related"])
        lines.append(f"  named beside: {beside}")
    for memory in doc["memories"]:
        crystal = memory["crystal"]
        text = crystal["text"].replace("\n", " ")
        voice = f"{crystal['voice']}: " if crystal.get("voice") and not text.startswith(f"{crystal['voice']}:") else ""
        lines.append(f"  {crystal['id']}{provenance_mark(crystal)}{superseded_mark(crystal)}  {voice}{text[:100]}")
    return "\n".join(lines)


def shown(doc: dict[str, Any], _: CliView) -> str:
    c = doc["crystal"]
    lines = [
        f"{c['id']}  {c['semantic_type']} / {c['origin']} / {c['lifecycle']} / {c['scope']} / {c['sensitivity']}",
        f"  typed by {c['type_source']} ({c['type_confidence']:.2f})  layer {c['epistemic_layer']}  "
        f"lifespan {c['lifespan']}",
        f"  importance {c['importance']}  accessed {c['access_count']}x  embedded {c['embedded_with']}",
        f"  {c['text']}",
    ]
    if c.get("superseded"):
        lines.append(f"  superseded by {c['superseded']['by']} (memory unsupersede {c['id']} to undo)")
    if doc.get("held"):
        lines.append(f"  {doc['held']['says']}")
    lines += [f"  captured from {s['session']}: {', '.join(s['messages'])}" for s in doc.get("captured_from", [])]
    lines += [f"  link  {a['type']:<11} {a['src_id']} -> {a['dst_id']} ({a['weight']})" for a in doc["associations"]]
    lines += [
        f"  audit {'(new)' if e['from'] is None else e['from']} -> {e['to']}: {e['reason']} by {e['actor']}"
        for e in doc["audit"]
    ]  # a first row has no state before it: "(new)", not "None" (issue 32)
    lines += [
        f"  {e['action']} {e['detail']} by {e['actor']}"
        for e in doc["attribution"]
        if e["action"] in ("superseded", "supersedes", "unsuperseded")
    ]
    return "\n".join(lines)


def held(items: list[dict[str, Any]], view: CliView) -> str:
    if not items:
        return f"nothing {view.request.status.value}"
    lines = []
    for item in items:
        c = item["crystal"]
        flags = f" [{', '.join(item['flags'])}]" if item["flags"] else ""
        lines.append(f"{c['id']}  from {item['source'][:21]}…  {item['reason']}{flags}")
        lines.append(f"    {c['text'].replace(chr(10), ' ')[:160]}")
    return "\n".join(lines)


def approved(_: dict[str, Any], view: CliView) -> str:
    return f"approved {view.request.id}"


def rejected(_: dict[str, Any], view: CliView) -> str:
    return f"rejected {view.request.id}"


def forgotten(doc: dict[str, Any], _: CliView) -> str:
    if doc.get("erased"):
        return f"erased {doc['forgotten']}: its text is gone from the database, its WAL and its index"
    return f"forgot {doc['forgotten']} (purged after 30 days; --erase removes its text now)"


def counts(stats: dict[str, Any], _: CliView) -> str:
    lines = [
        f"crystals       {stats['total']}  ({stats['file_bytes'] / 1e6:.1f} MB, schema v{stats['schema_version']})",
        f"embedder       {stats['embedder']}  backlog {stats['embedding_backlog']}",
    ]
    for key in ("by_lifecycle", "by_semantic_type", "by_origin", "by_sensitivity"):
        parts = ", ".join(f"{k} {v}" for k, v in sorted(stats[key].items()))
        lines.append(f"{key[3:]:<15}{parts or '-'}")
    return "\n".join(lines)


def consolidated(report: dict[str, Any], view: CliView) -> str:
    verb = "would" if view.request.dry_run else "did"
    lines = [
        f"consolidation {verb}: rescore {report['rescored']}, expire {report['expired_by_decay']} decayed + "
        f"{report['expired_by_ttl']} past TTL, merge {report['merged']}, promote {report['promoted']}, "
        f"purge {report['purged']}  ({report['duration_ms']} ms; merge threshold {report['merge_threshold']})"
    ]
    lines += [
        f"  {change['crystal_id']}  {change['from_state']} -> {change['to_state']}: {change['reason']}"
        for change in report["changes"]
    ]
    return "\n".join(lines)


def unmerged(doc: dict[str, Any], view: CliView) -> str:
    return f"restored {view.request.id} (it had been merged into {doc['merged_into']})"


def noted(crystal: dict[str, Any], view: CliView) -> str:
    return f"noted in {view.locate()[1].working_memory_files().scratch.path} (crystal {crystal['id']})"


def bootstrap_text(doc: dict[str, Any], _: CliView) -> str:
    return str(doc["text"])


def dreamt(report: dict[str, Any], view: CliView) -> str:
    if not report["accepted"]:
        raise UsageError(f"the dream was rejected, MEMORY.md is unchanged: {report['rejected_because']}")
    memory_md = view.locate()[1].working_memory_files().memory_md
    return (
        f"dreamt ({report['synthesizer']}, {report['duration_ms']} ms): {report['notes_indexed']} notes folded in, "
        f"{report['pointers_added']} new pointers; wrote {memory_md}"
    )


def hormone_levels(doc: dict[str, Any], _: CliView) -> str:
    line = f"dopamine {doc['dopamine']:.3f}  cortisol {doc['cortisol']:.3f}  oxytocin {doc['oxytocin']:.3f}"
    if doc["network_override"]:
        o = doc["network_override"]
        line += f"\nnetwork override: cortisol {o['level']} until {o['until_ms']} ({o['reason']})"
    return line


def after_events(doc: dict[str, Any], _: CliView) -> str:
    return f"now: {json.dumps(doc)}"


def working(doc: dict[str, Any], _: CliView) -> str:
    waiting = len(doc["scratch"])
    changed = "; the last dream changed it" if doc["changed_by_last_dream"] else ""
    return f"{doc['memory_md'].rstrip()}\n\n({waiting} scratch notes wait for the next dream{changed})"
