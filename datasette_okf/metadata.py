"""Datasette metadata for every OKF database: descriptions, facets, sort orders, hidden internal tables.

Datasette 0.65 asks plugins for metadata with get_metadata(datasette, key, database, table) on
every metadata lookup (several per page), synchronously, and merges the answers key by key under
the metadata file's: a user's metadata.yml wins wherever it says something (a `facets:` list of its
own replaces ours whole; `hidden: false` shows a table we hide). So the answer must be cheap and
must not await: which databases are OKF ones is read from each file's sqlite_master (read-only,
no extension needed, so `has_okf_tables` as in access.py) and remembered until the file changes.
"""

from __future__ import annotations

import copy
import os
from typing import Any

from sqlite_utils.utils import sqlite3

from .schema import file_uri, has_okf_tables

CONCEPTS = {
    "label_column": "title",
    "sort": "id",
    "facets": ["type", {"array": "tags"}, "status", "trust_tier", "bundle", "type_source", "is_stub"],
    "description": "One row per concept (an OKF .md file or a vault note); index.md files are structural "
                   "nodes (is_index = 1).",
    "columns": {
        "id": "<bundle folder>/<path without .md> (OKF §2)",
        "path": "The file's path inside its bundle, as on disk",
        "type": "The frontmatter type (OKF §4.1), else one inferred (see type_source)",
        "type_source": "Where type came from: frontmatter | folder (inferred for a vault) | log (OKF §9); "
                       "empty: no type",
        "description_source": "Where description came from: frontmatter | body (its first sentence) | folder",
        "tags": "JSON array; facet it with _facet_array=tags",
        "aliases": "JSON array of other names (Obsidian aliases)",
        "frontmatter": "The whole frontmatter as JSON, unknown keys included",
        "properties": "The words of its frontmatter values (no links, paths or dates), one a line: full-text indexed",
        "sources": "sources (OKF §5.1), or a v0.1 # Citations list",
        "status": "draft | stable | deprecated | superseded (absent means stable, OKF §5.4)",
        "stale_after": "Stale on and after this instant (OKF §5.5)",
        "trust_tier": "unverified | machine-confirmed | human-reviewed, from verified (OKF §5.3)",
        "superseded_by": "The concept that replaces this one (its own field, or the other's supersedes)",
        "is_index": "1 for an index.md (a structural node, not a concept)",
        "is_stub": "1 for an unfilled template: a seed of context_for only when the question names it and its frontmatter links something",
        "degree": "Edges touching the concept, both directions (the graph walk damps by it)",
        "content_hash": "Hash of the file; unchanged files are not rewritten",
    },
}

TABLES: dict[str, dict[str, Any]] = {
    "concepts": CONCEPTS,
    "edges": {
        "sort": "src",
        "facets": ["kind", "predicate"],
        "description": "Links, wikilinks, frontmatter properties, typed relations, mentions and supersession, "
                       "from src to dst (dst is null for literals and attachments).",
        "columns": {
            "kind": "link | wikilink | embed | property | relation | supersedes | mention",
            "predicate": "links_to, embeds, a frontmatter key, or a relation's predicate",
            "anchor": 'The "#heading" a link points at',
            "object_literal": "A relation's literal object, or an attachment's path",
            "date": "A relation's date",
            "source_id": "The sources[].id a relation cites",
        },
    },
    "link_issues": {
        "facets": ["problem", "kind"],
        "description": "Links that could not be resolved; ambiguous ones list every candidate.",
    },
    "build_issues": {
        "facets": ["severity"],
        "description": "Files that could not be read cleanly, and why. The build went on.",
    },
    "external_links": {"description": "Links from a concept to a URL outside the bundles."},
    "chunks": {
        "description": "Each concept cut at its headings into pieces of at most ~200 words; the vector of "
                       "chunk N is rowid N of chunk_vectors.",
    },
    "chunk_vectors": {
        "description": "sqlite-vec vec0 table (cosine). Nearest chunks: select rowid, distance from "
                       "chunk_vectors where embedding match okf_embed('your text') and k = 10",
    },
    "template_texts": {
        "sort_desc": "notes",
        "description": "Chunk text that 20 or more notes share word for word: a template's words, not the notes'. "
                       "Redone at each build; a context never shows one as a note's chunk.",
    },
    "headings": {"description": "Every heading of every concept, for checking links to #headings."},
    "log_entries": {
        "sort_desc": "date",
        "description": "Entries of log.md files (OKF §9). Chart them with the chart_log_timeline query.",
    },
    "meta": {
        "description": "What the build recorded: format_version, tool_version, built_at, bundles (path, "
                       "fingerprint, built_at), embedding_model and its dimensions, the gate's calibration.",
    },
    "chunk_bits": {
        "description": "1-bit codes of the chunk vectors (vec0 bit[D]): the candidate search used from "
                       "20,000 chunks.",
    },
    "chunk_floats": {
        "hidden": True,
        "description": "A float copy of each chunk vector by id, for re-ranking binary candidates exactly.",
    },
    "parse_cache": {
        "hidden": True,
        "description": "Per-file parse results of the last build: unchanged files are not parsed again.",
    },
    "file_stats": {
        "hidden": True,
        "description": "Each file's size, times and inode at the last build, with its digest: a file whose stat is "
                       "unchanged is not read again.",
    },
    "sqlite_sequence": {"hidden": True},
}
# The FTS tables (concepts_fts, concepts_fts_*) need nothing: Datasette hides them itself.

_cache: dict[str, tuple[Any, dict[str, Any] | None]] = {}  # database path -> (file signature, metadata)


def _signature(path: str) -> Any:
    """Changes when the file (or its write-ahead log) is written: a rebuild adds vec0 tables."""
    stats = [os.stat(name) for name in (path, f"{path}-wal") if os.path.exists(name)]
    return tuple((s.st_mtime_ns, s.st_size) for s in stats)


def _read(path: str, mutable: bool) -> dict[str, Any] | None:
    """The metadata of the database at `path`, or None when it is not an OKF database."""
    uri = file_uri(path, mode="ro") if mutable else file_uri(path, immutable="1")
    conn = sqlite3.connect(uri, uri=True, timeout=0.2)
    try:
        rows = conn.execute("select name, sql like '%using vec0%' from sqlite_master where type = 'table'").fetchall()
    finally:
        conn.close()
    names = {name for name, _ in rows}
    if not has_okf_tables(names):
        return None
    tables = {name: copy.deepcopy(config) for name, config in TABLES.items() if name in names}
    for vec0 in (name for name, is_vec0 in rows if is_vec0):  # its shadow tables: _info, _chunks, _rowids, ...
        for shadow in sorted(n for n in names if n.startswith(f"{vec0}_")):
            tables[shadow] = {"hidden": True}
    return {"tables": tables}


def database_metadata(db: Any) -> dict[str, Any] | None:
    """Our metadata for a Datasette Database, remembered until its file changes; None if it is not OKF."""
    path = getattr(db, "path", None)
    if not path or getattr(db, "is_memory", False):
        return None
    try:
        signature = _signature(path)
        cached = _cache.get(path)
        if cached is None or cached[0] != signature:
            cached = _cache[path] = (signature, _read(path, db.is_mutable))
    except (OSError, sqlite3.Error):  # gone, locked or not SQLite: keep what was known
        cached = _cache.get(path, (None, None))
    return cached[1]


def get_metadata(datasette: Any, key: str | None) -> dict[str, Any] | None:
    """{"databases": {name: {"tables": ...}}} for every OKF database attached (a fresh copy each time:
    Datasette merges the metadata file into it)."""
    if key not in (None, "databases", "tables"):  # "allow", "plugins", "title", ...: nothing of ours
        return None
    databases = {}
    for name, db in datasette.databases.items():
        if name != "_internal" and (found := database_metadata(db)) is not None:
            databases[name] = copy.deepcopy(found)
    return {"databases": databases} if databases else None
