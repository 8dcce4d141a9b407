"""Rebuilding from references (docs/design.md §10.4): which concept files re-running ingest would recreate.

Read-only: it lists candidates and what deleting them would lose; deleting and
re-ingesting stay with the user. The scan is sql/operations/rebuild_candidates.sql
(also the canned query okf_rebuild_candidates); this module adds what SQL cannot
see, the files' modification times, to flag edits made after `generated.at`.
A checkout or a copy also sets them: a prompt to look, not proof of a hand edit.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

from .lint import operations, run_lint
from .schema import bundles_of, read_meta

SQL = next(q.sql for q in operations() if q.name == "okf_rebuild_candidates")
EDIT_SLACK_SECONDS = 120  # a file written by the ingest itself is a little newer than its stamp


def rebuild_candidates(conn: Any) -> dict[str, list[dict[str, Any]]]:
    """{"candidates": [...], "unreviewed_references": [...]} for a built database."""
    roots = {name: Path(b["path"]) for name, b in bundles_of(read_meta(conn)).items()}
    cursor = conn.execute(SQL)
    columns = [c[0] for c in cursor.description]
    candidates = []
    for row in cursor.fetchall():
        item = dict(zip(columns, row))
        item["references_cited"] = json.loads(item["references_cited"] or "[]")
        bundle = item["id"].split("/", 1)[0]
        item["would_lose"] = _losses(item, roots.get(bundle))
        candidates.append(item)
    [unreviewed] = run_lint(conn, only="unreviewed_references")
    return {"candidates": candidates,
            "unreviewed_references": [dict(zip(unreviewed["columns"], row)) for row in unreviewed["rows"]]}


def _losses(item: dict[str, Any], root: Path | None) -> list[str]:
    losses = []
    if (item.get("verified_by") or "").startswith("human:"):
        losses.append(f"a human verification ({item['verified_by']})")
    stamp = _parse(item.get("generated_at"))
    if stamp is None:
        losses.append("no generated.at stamp: hand edits cannot be ruled out")
    elif root is not None:
        try:
            modified = (root / item["path"]).stat().st_mtime
        except OSError:
            modified = None
        if modified is not None and modified > stamp.timestamp() + EDIT_SLACK_SECONDS:
            when = datetime.fromtimestamp(modified).astimezone().isoformat(timespec="seconds")
            losses.append(f"edits since generated.at (file modified {when})")
    return losses


def _parse(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return value if value.tzinfo else value.astimezone()
