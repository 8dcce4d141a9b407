"""Lint culprits as links in Datasette's query results (canned queries and the SQL editor) of an OKF database.

A column named `concept` holding a concept's id shows the concept's title linked to its row page, with the
id after it, as Datasette shows a foreign key; lint_summary's `check` column shows the check's title linked
to its rows in that row's folder. Datasette 0.65 calls render_cell once per cell, up to 1,000 rows a page,
so titles come from one read of the concepts table per database file and each link is made once; whether
the file changed is asked at most once a second (stat calls were half the cost of a 1,000-row page).
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from datasette.utils import tilde_encode
from markupsafe import Markup

from .lint import checks
from .metadata import database_metadata

CONCEPT = "concept"  # the lint checks' culprit column (lint.py)
CHECK = "check"  # lint_summary's column naming a check
COLUMNS = (CONCEPT, CHECK)  # the hook in __init__.py passes on only these
RECHECK_SECONDS = 1.0  # a rebuild under a running Datasette shows in links within this


@dataclass
class Concepts:
    """One database file's concept titles, and the links made from them so far."""

    metadata: Any  # database_metadata's answer they were read with: the same object until the file changes
    titles: dict[str, str | None]  # id -> title
    checked: float  # time.monotonic() when the file was last seen unchanged
    links: dict[str, Markup] = field(default_factory=dict)  # id -> concept_link


_concepts: dict[str, Concepts] = {}  # database path -> its concepts


def concept_link(url: str, concept_id: str, title: str | None) -> Markup:
    """A concept's title linked to its row page, then its id (as Datasette shows a foreign key)."""
    if not title:
        return Markup('<a href="{}">{}</a>').format(url, concept_id)
    return Markup('<a href="{}">{}</a>&nbsp;<em>{}</em>').format(url, title, concept_id)


def check_link(url: str, folder: str | None, title: str) -> Markup:
    """A lint check's title linked to its rows in `folder` (all of them when the summary gives none)."""
    return Markup('<a href="{}">{}</a>').format(url + ("?" + urlencode({"folder": folder}) if folder else ""), title)


@functools.cache
def check_titles() -> dict[str, str]:
    """Check name (as lint_summary writes it: dead_links) -> its title."""
    return {check.name.removeprefix("lint_"): check.title for check in checks()}


async def concepts_of(db: Any) -> Concepts | None:
    """The concepts of an OKF database, read again when its file changes; None for any other database."""
    now = time.monotonic()
    cached = _concepts.get(db.path)
    if cached is not None and now - cached.checked < RECHECK_SECONDS:
        return cached
    metadata = database_metadata(db)
    if metadata is None:
        return None
    if cached is None or cached.metadata is not metadata:
        titles = await db.execute_fn(lambda conn: dict(conn.execute("select id, title from concepts").fetchall()))
        cached = _concepts[db.path] = Concepts(metadata, titles, now)
    cached.checked = now
    return cached


async def render_cell(row: Any, value: Any, column: str, table: str | None, database: str,
                      datasette: Any) -> Markup | None:
    """A link for a culprit cell of a query's results in an OKF database; None leaves the cell to Datasette."""
    if table is not None or column not in COLUMNS or not isinstance(value, str):
        return None
    concepts = await concepts_of(datasette.get_database(database))
    if concepts is None:
        return None
    if column == CHECK:
        if value not in check_titles() or "folder" not in row.keys():  # noqa: SIM118 - `in` a Row tests values
            return None
        return check_link(datasette.urls.query(database, f"lint_{value}"), row["folder"], check_titles()[value])
    if value not in concepts.links and value in concepts.titles:
        url = datasette.urls.row(database, "concepts", tilde_encode(value))
        concepts.links[value] = concept_link(url, value, concepts.titles[value])
    return concepts.links.get(value)
