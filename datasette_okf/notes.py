"""One note and its neighbours, as tools hand them to an agent (the llm toolbox, the MCP tools)."""

from __future__ import annotations

import json
from typing import Any

MAX_NOTE_CHARS = 6000
MAX_LINKS = 40


def read_concept(conn: Any, concept_id: str, max_chars: int = MAX_NOTE_CHARS,
                 max_links: int = MAX_LINKS) -> dict[str, Any] | None:
    """The note's text (cut at `max_chars`), frontmatter, and its edges each way (at most `max_links`)."""
    row = conn.execute(
        "select title, type, path, trust_tier, stale_after, superseded_by, body, frontmatter from concepts where id = ?",
        [concept_id],
    ).fetchone()
    if row is None:
        return None
    title, type_, path, trust, stale_after, superseded_by, body, frontmatter = row
    body = body or ""

    def edges(sql: str) -> tuple[list[dict[str, Any]], int]:
        rows = conn.execute(sql, [concept_id]).fetchall()
        return [{"id": r[0], "predicate": r[1], "kind": r[2]} for r in rows[:max_links]], len(rows)

    links_to, outbound = edges(
        "select distinct dst, predicate, kind from edges where src = ? and dst is not null order by dst, predicate")
    linked_from, inbound = edges(
        "select distinct src, predicate, kind from edges where dst = ? order by src, predicate")
    return {
        "id": concept_id, "title": title, "type": type_, "path": path, "trust": trust,
        "stale_after": stale_after, "superseded_by": superseded_by,
        "frontmatter": json.loads(frontmatter or "{}"),
        "text": body[:max_chars], "truncated": len(body) > max_chars,
        "links_to": links_to, "links_to_total": outbound,
        "linked_from": linked_from, "linked_from_total": inbound,
    }


def similar_ids(conn: Any, concept_id: str, limit: int = 5) -> list[str]:
    """Ids that look like `concept_id`, for a "did you mean" on an unknown one."""
    tail = concept_id.rstrip("/").split("/")[-1]
    return [r[0] for r in conn.execute(
        "select id from concepts where id like ? escape '\\' order by length(id), id limit ?",
        [f"%{tail.replace('%', '').replace('_', '')}%", limit])]
