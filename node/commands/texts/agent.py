"""What an agent gets back from a command through MCP (``McpSpec.shape``): the few fields it needs,
and every hit marked as the prompt gate says (``memory.governance.prompt_gate``)."""

from __future__ import annotations

from typing import Any

from ground.authority import Speaker
from ground.clock import iso_utc
from memory.governance.prompt_gate import Passage, Route, decide
from memory.model import SemanticType, Sensitivity
from node.commands.texts.view import Caller


def hits(found: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [out for out in map(hit, found) if out is not None]


def compact(found: dict[str, Any]) -> dict[str, Any]:
    """A search hit or a listed crystal (``{"crystal": …, "score"?: …}``) in the API's default shape:
    the dozen fields an agent or a script reads, of the crystal's fifty (issue 32; ``detail: full``
    gives them all)."""
    crystal = found["crystal"]
    out = {"id": crystal["id"], "text": crystal["text"], "type": crystal["semantic_type"],
           "importance": round(crystal["importance"], 3), "origin": crystal["origin"], "source": crystal["source"],
           # when it was said, and how private it is, on every hit (issue 32: neither was there)
           "said_at": iso_utc(crystal["created_at_ms"]), "sensitivity": crystal["sensitivity"]}  # fmt: skip
    if "score" in found:
        out["score"] = round(found["score"], 4)
    if crystal.get("superseded"):
        out["superseded_by"] = crystal["superseded"]["by"]  # outdated: a newer memory replaced it
        out["valid_until"] = iso_utc(crystal["superseded"]["at_ms"])
    if found.get("replaces"):
        out["replaces"] = found["replaces"]  # the older memory this one was shown in place of
    if crystal.get("quarantined"):
        out["held_in_quarantine"] = True
    if found.get("explain"):
        out["explain"] = found["explain"]
    return out


def hit(found: dict[str, Any]) -> dict[str, Any] | None:
    """One search hit as the agent gets it, marked as the gate says (``None``: the gate says never)."""
    crystal = found["crystal"]
    out = compact(found)
    held = bool(crystal.get("quarantined"))
    confidential = crystal.get("sensitivity") == Sensitivity.CONFIDENTIAL.value
    speaker = Speaker(crystal.get("speaker", Speaker.FILE))
    passage = decide(Route.SEARCH_RESULT, speaker=speaker, held=held, confidential=confidential, instructions=False)
    if passage is Passage.NEVER:
        return None
    if passage is Passage.MARKED:
        # Someone else's words (another node, a file, a page the agent quoted): data, never instructions.
        if speaker in (Speaker.PEER, Speaker.SELLER):
            out["peer_content"] = True
        out["not_the_persons_words"] = True
        out["said_by"] = speaker.value
        out["held_in_quarantine"] = held
    if confidential:
        out["confidential"] = True  # a secret of the person's: for this machine's agent only, never to repeat
    return out


def listed(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """A page of crystals as the agent gets it: each marked by the gate like a search hit, no score."""
    shown = hits([{"crystal": crystal, "score": 0.0} for crystal in doc["crystals"]])
    return [{k: v for k, v in item.items() if k != "score"} for item in shown]


def remembered(done: dict[str, Any]) -> dict[str, Any]:
    crystal = done["crystal"]
    return {"id": crystal["id"], "created": done["created"], "type": crystal["semantic_type"],
            "type_confidence": round(crystal["type_confidence"], 3),
            "layer": crystal["epistemic_layer"]}  # fmt: skip


def steered(crystal: dict[str, Any]) -> dict[str, Any]:
    return {"id": crystal["id"], "steering_reward": round(crystal["steering_reward"], 3)}


def typed(crystal: dict[str, Any]) -> dict[str, Any]:
    return {"id": crystal["id"], "type": crystal["semantic_type"], "layer": crystal["epistemic_layer"]}


def superseded(crystal: dict[str, Any]) -> dict[str, Any]:
    return {"id": crystal["id"], "superseded_by": crystal["superseded"]["by"]}


def edited(crystal: dict[str, Any]) -> dict[str, Any]:
    return {"id": crystal["id"], "replaces": crystal["replaces"], "type": crystal["semantic_type"]}


def current_again(crystal: dict[str, Any]) -> dict[str, Any]:
    return {"id": crystal["id"], "current": crystal["superseded"] is None}


def gaps(found: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"question": g["query"], "asked": g["asked"]} for g in found]


def entities(found: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [out for out in map(_entity, found) if out is not None]


def entity(doc: dict[str, Any]) -> dict[str, Any] | None:
    """One entity with the memories that name it, each marked as a search hit is; a name that only
    someone else's words gave is marked too, and one the gate keeps from the agent is not shown."""
    main = _entity(doc["entity"])
    if main is None:
        return None
    return {
        **main,
        "aliases": doc["aliases"],
        "memories": hits(doc["memories"]),
        "belongs": entities(doc["belongs"]),
        "related": entities(doc["related"]),
    }


def _entity(found: dict[str, Any]) -> dict[str, Any] | None:
    """A name is words: it reaches the agent as the words that gave it would (``prompt_gate``)."""
    passages = {
        decide(Route.SEARCH_RESULT, speaker=Speaker(s), held=False, confidential=False, instructions=False)
        for s in found.get("named_by") or [Speaker.FILE.value]
    }
    if passages <= {Passage.NEVER}:
        return None
    out = {"name": found["name"], "kind": found["kind"], "memories": found["crystals"]}
    if Passage.AS_IS not in passages:
        out["not_the_persons_words"] = True  # named only by a page, a file or another node
    return out


def held(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"id": item["crystal"]["id"], "text": item["crystal"]["text"], "source": item["source"],
             "reason": item["reason"], "flags": item["flags"], "peer_content": True}
            for item in items]  # fmt: skip


def shown(doc: dict[str, Any]) -> dict[str, Any] | None:
    """One memory with its links; another node's text marked, as a search hit is."""
    out = hit({"crystal": doc["crystal"], "score": 1.0})
    if out is None:
        return None
    out.pop("score")
    out["links"] = [{"type": a["type"], "from": a["src_id"], "to": a["dst_id"]} for a in doc["associations"]]
    return out


def noted(crystal: dict[str, Any]) -> dict[str, Any]:
    return {"id": crystal["id"], "noted": crystal["text"]}


def bootstrap_text(doc: dict[str, Any]) -> str:
    return str(doc["text"])


def dreamt(report: dict[str, Any]) -> dict[str, Any]:
    return {k: report[k] for k in ("accepted", "rejected_because", "notes_indexed", "pointers_added", "insights")}


async def status(call: Caller, _: Any) -> dict[str, Any]:
    """How much is remembered, the embedding backlog, and the hormonal state: two commands, one tool."""
    stats = await call("memory.stats", {})
    return {"crystals": stats["total"], "by_semantic_type": stats["by_semantic_type"],
            "by_lifecycle": stats["by_lifecycle"], "embedding_backlog": stats["embedding_backlog"],
            "hormones": await call("memory.hormones", {})}  # fmt: skip


async def skills_found(call: Caller, request: Any) -> dict[str, Any]:
    """The agent's own skills and task patterns that match, and (through the daemon) the network's."""
    types = [SemanticType.SKILL, SemanticType.TASK_PATTERN]
    found = {"query": request.query, "limit": request.limit, "types": types, "detail": "full"}  # the gate reads all
    local = await call("memory.search", found)
    listings = (
        await call("skills.list", {"query": request.query, "limit": request.limit + 1}) if call.through_daemon else []
    )
    offered = [
        {"listing": f"{row['seller_peer_id']}/{row['stable_skill_id']}", "title": row["title"],
         "price_usdc": row["price_micro_usdc"] / 1_000_000, "seller_level": row["seller_level"],
         "verified": row["verified"], "peer_content": True}  # a seller's words: data, never instructions
        for row in listings
        if not row["mine"]
    ]  # fmt: skip
    return {"local": hits(local), "network": offered[: request.limit]}


def without_sellers_words(doc: dict[str, Any]) -> dict[str, Any]:
    """A wallet or deals report as the agent gets it: a purchase's ``skill`` is the seller's words (its
    listing title, or the bought skill's first line), so it stays on the person's dashboard and CLI,
    and the agent gets the purchase id and state alone."""
    out = dict(doc)
    for key in ("purchases", "recent_purchases"):
        if key in out:
            out[key] = [{k: v for k, v in deal.items() if k != "skill"} for deal in out[key]]
    return out
