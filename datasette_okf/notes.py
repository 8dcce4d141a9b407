"""One note and its neighbours, as tools hand them to an agent (the llm toolbox, the MCP tools)."""

from __future__ import annotations

import json
from typing import Any

MAX_NOTE_CHARS = 6000
MAX_LINKS = 40
MAX_ID_CHARS = 4096  # Linux's PATH_MAX: ids are a bundle name and a file path, far shorter in practice
EXAMPLE_ID = "campaign/people/mira-vell"


class BadConceptId(ValueError):
    """An id no note can have; the message says what to pass instead."""


def check_id(concept_id: str) -> str:
    """`concept_id` if a note could have it, else BadConceptId.

    Agents pass whatever they make up; every surface checks here first, so each says
    the same helpful thing instead of failing in SQLite on a huge or broken string."""
    how = f"as context_for returns them, e.g. {EXAMPLE_ID}"
    if not isinstance(concept_id, str):
        raise BadConceptId(f"id must be a string, {how}")
    if not concept_id.strip():
        raise BadConceptId(f"id is empty; pass a concept id {how}")
    if len(concept_id) > MAX_ID_CHARS:
        raise BadConceptId(f"id is {len(concept_id):,} characters; "
                           f"concept ids are at most {MAX_ID_CHARS:,} characters, {how}")
    if "\0" in concept_id:
        raise BadConceptId(f"id contains a NUL character, which no concept id has; pass one {how}")
    return concept_id


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
    """Ids containing the last part of `concept_id`, for a "did you mean" on an unknown one.

    Safe for any text: matched literally with instr, as LIKE would take % and _ for
    wildcards (suggesting every note) and refuses patterns over 50,000 bytes."""
    try:
        tail = check_id(concept_id).rstrip("/").split("/")[-1]
    except BadConceptId:
        return []
    if not tail:
        return []
    return [r[0] for r in conn.execute(
        "select id from concepts where instr(lower(id), lower(?)) order by length(id), id limit ?", [tail, limit])]
