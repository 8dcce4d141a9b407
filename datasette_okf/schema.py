"""What a built database is: its tables, its meta, its format, the files beside it, and how to open it.

The bottom of the package: every module that reads or writes a database imports
this one, and this one imports nothing of the package. It owns FORMAT_VERSION,
the DDL, opening a connection with sqlite-vec loaded, reading `meta`, and
telling a datasette-okf database from any other file.
"""

from __future__ import annotations

import json
import urllib.parse
from pathlib import Path
from typing import Any

import sqlite_utils
import sqlite_vec
from sqlite_utils.utils import sqlite3  # pysqlite3 where installed, as sqlite-utils and Datasette use

FORMAT_VERSION = "11"
MAX_FILE_BYTES = 4 * 1024 * 1024  # the largest note a build reads: every text a database holds is shorter
FTS_COLUMNS = ["title", "aliases", "description", "tags", "body", "properties"]
FTS_TOKENIZE = "porter unicode61 remove_diacritics 2"
# Files a build writes beside DB.db (derived.py makes them from the database alone).
TIMELINE, KEYWORDS = "timeline.md", "wiki-trigger-keywords.txt"
# First line of a timeline.md this tool wrote: the build does not index such a file as a concept.
TIMELINE_MARKER = "<!-- derived by `datasette okf build` from the bundle's relations and log; edits are overwritten -->"


class ExtensionError(RuntimeError):
    """This Python's SQLite cannot load sqlite-vec."""


class OutdatedDatabase(ValueError):
    """The file was built by another version of datasette-okf's format: rebuild it."""


def load_sqlite_vec(conn: Any) -> None:
    """Load sqlite-vec: without it SQLite cannot even read a file holding a vec0 table."""
    try:
        conn.enable_load_extension(True)
        sqlite_vec.load(conn)
        conn.enable_load_extension(False)
    except AttributeError:
        raise ExtensionError(
            "this Python's sqlite3 cannot load extensions, and sqlite-vec is one; "
            "install pysqlite3-binary (Linux x86_64) or use a Python built with extension support"
        ) from None


def connect(path: Path | str) -> sqlite_utils.Database:
    """A sqlite-utils Database with sqlite-vec loaded, so vec0 tables can be read and written."""
    db = sqlite_utils.Database(path)
    # sqlite-utils finds out whether SQLite has upsert by creating and dropping a table at the first upsert: a schema
    # change in every build, and Datasette reads every table's schema again at its next request (10-14 ms on the
    # Thellade vault's file). Upsert is SQLite 3.24's; sqlite-vec needs a newer one.
    db._supports_on_conflict = True
    load_sqlite_vec(db.conn)
    return db


def ensure_schema(db: sqlite_utils.Database) -> None:
    """Create the tables, indexes and full-text index if they are missing. Every table that names a concept
    declares it as a foreign key (never enforced: SQLite leaves `foreign_keys` off), so that Datasette shows a
    concept's "Links from other tables" and titles instead of ids in edges and lint results."""
    db["concepts"].create(
        {
            "id": str, "bundle": str, "path": str, "type": str, "type_source": str, "title": str,
            "description": str, "description_source": str, "tags": str, "aliases": str, "body": str,
            "frontmatter": str, "sources": str, "status": str, "stale_after": str,
            "trust_tier": str, "generated_by": str, "generated_at": str,
            "superseded_by": str, "is_index": int, "is_stub": int, "content_hash": str, "degree": int,
            "properties": str,
        },
        pk="id",
        if_not_exists=True,
    )
    db["edges"].create(
        {
            "id": int, "src": str, "dst": str, "predicate": str, "kind": str,
            "anchor": str, "object_literal": str, "date": str, "source_id": str, "line": int, "text": str,
        },
        pk="id",
        foreign_keys=[("src", "concepts", "id"), ("dst", "concepts", "id")],
        if_not_exists=True,
    )
    db["link_issues"].create(
        {
            "id": int, "src": str, "bundle": str, "file": str, "line": int,
            "target": str, "kind": str, "problem": str, "candidates": str,
        },
        pk="id",
        foreign_keys=[("src", "concepts", "id")],
        if_not_exists=True,
    )
    db["build_issues"].create(
        {"id": int, "bundle": str, "file": str, "severity": str, "message": str},
        pk="id",
        if_not_exists=True,
    )
    db["external_links"].create(
        {"id": int, "src": str, "url": str, "text": str, "predicate": str, "line": int},
        pk="id",
        foreign_keys=[("src", "concepts", "id")],
        if_not_exists=True,
    )
    db["log_entries"].create(
        {"id": int, "bundle": str, "file": str, "date": str, "text": str, "line": int},
        pk="id",
        if_not_exists=True,
    )
    db["chunks"].create(
        {
            "id": int, "concept_id": str, "seq": int, "heading": str, "text": str,
            "content_hash": str, "embedded_with": str, "template_share": float,
        },
        pk="id",
        foreign_keys=[("concept_id", "concepts", "id")],
        if_not_exists=True,
    )
    db["template_texts"].create({"text": str, "notes": int}, pk="text", if_not_exists=True)
    db["headings"].create(
        {"id": int, "concept_id": str, "level": int, "text": str, "slug": str, "line": int},
        pk="id",
        foreign_keys=[("concept_id", "concepts", "id")],
        if_not_exists=True,
    )
    db["parse_cache"].create({"key": str, "bundle": str, "entry": str}, pk="key", if_not_exists=True)
    db["file_stats"].create({"bundle": str, "path": str, "stat": str, "digest": str}, pk=("bundle", "path"),
                            if_not_exists=True)
    db["meta"].create({"key": str, "value": str}, pk="key", if_not_exists=True)
    for table, columns in [
        ("concepts", ["bundle"]),
        ("concepts", ["bundle", "is_index"]),  # counts without reading the rows (a body can span pages)
        ("chunks", ["embedded_with"]),  # "anything left to embed?" without reading the chunk texts
        ("concepts", ["type"]),
        ("concepts", ["degree"]),  # the question page's examples, best-connected first, on every page load
        ("chunks", ["concept_id"]),
        ("headings", ["concept_id"]),
        ("parse_cache", ["bundle"]),
        ("edges", ["src"]),
        ("edges", ["dst"]),
        ("link_issues", ["src"]),
        ("external_links", ["src"]),
        ("log_entries", ["bundle"]),
        ("build_issues", ["bundle"]),
    ]:
        db[table].create_index(columns, if_not_exists=True)
    if not db["concepts"].detect_fts():
        db["concepts"].enable_fts(FTS_COLUMNS, tokenize=FTS_TOKENIZE, create_triggers=True)


def read_meta(conn: Any) -> dict[str, str]:
    """The `meta` table as a dict; empty when there is none."""
    try:
        return dict(conn.execute("select key, value from meta").fetchall())
    except sqlite3.Error:
        return {}


def bundles_of(meta: dict[str, str]) -> dict[str, dict[str, str]]:
    """meta's `bundles`: each bundle's name -> {path, fingerprint, built_at}."""
    return json.loads(meta.get("bundles") or "{}")


VECTORS_PENDING = "vectors_pending"  # meta key: chunks still without a vector after a vectors-behind build


def vectors_progress(conn: Any, model: str) -> tuple[int, int] | None:
    """(chunks with a vector from `model`, chunks) while a vectors-behind build is still embedding, else None:
    counted only then, so a finished file pays nothing for it."""
    try:
        if not conn.execute("select 1 from meta where key = ?", [VECTORS_PENDING]).fetchone():
            return None
        done, total = conn.execute(
            "select count(case when embedded_with = ? then 1 end), count(*) from chunks", [model]).fetchone()
    except sqlite3.Error:
        return None
    return done, total


def stored_model(conn: Any) -> str | None:
    """The embedding model a database was built with, or None (no vectors yet)."""
    try:
        row = conn.execute("select value from meta where key = 'embedding_model'").fetchone()
    except sqlite3.Error:  # no meta table: not a datasette-okf database
        return None
    return row[0] if row else None


def check_format(conn: Any) -> None:
    """OutdatedDatabase unless `conn` reads a database of this FORMAT_VERSION."""
    try:
        row = conn.execute("select value from meta where key = 'format_version'").fetchone()
    except sqlite3.Error:
        raise OutdatedDatabase("this is not a datasette-okf database (no meta table)") from None
    if not row or row[0] != FORMAT_VERSION:
        raise OutdatedDatabase(
            f"this database has format {row[0] if row else 'unknown'}, this datasette-okf reads format "
            f"{FORMAT_VERSION}: rebuild it with datasette okf build (only changed vectors are recomputed "
            "when the model is the same)"
        )


# A log.md (OKF §9) is a note of its own, one chunk a dated entry; it is not an entity a question names.
IS_LOG = "(concepts.path = 'log.md' or concepts.path like '%/log.md')"
# A frontmatter link that is not one of the note's sources: those say where it comes from (OKF §5.1), not how it is
# related to what it links
NOT_A_SOURCE = "edges.predicate != 'sources' and edges.predicate not like 'sources.%'"
FOLDER_LEVELS = 2  # folders below the bundle that lint counts hits by: vault/01 Campaign/03 Entities


def folder_of(concept_id: str | None) -> str | None:
    """The folder lint counts a concept's hits under (SQL okf_folder, and the checks' :folder filter): its
    bundle and at most FOLDER_LEVELS folders below it, so a vault's thousands of hits fit a screen of counts."""
    if concept_id is None:
        return None
    return "/".join(concept_id.split("/")[:-1][:1 + FOLDER_LEVELS])


def has_okf_tables(table_names: set[str] | list[str]) -> bool:
    """A database built by datasette-okf, of any format version, has these tables."""
    return {"concepts", "edges", "meta"} <= set(table_names)


SQLITE_HEADER = b"SQLite format 3\x00"
SIDE_FILES = ("-wal", "-shm", "-journal")


def file_uri(path: Path | str, **parameters: str) -> str:
    """A `file:` URI for `path` that survives `#`, `?`, `%` and spaces in the name."""
    query = urllib.parse.urlencode(parameters)
    return f"file:{urllib.parse.quote(str(Path(path).resolve()))}" + (f"?{query}" if query else "")


def file_kind(path: Path) -> str:
    """"empty", "okf" (a datasette-okf database, any format version), "sqlite" (someone else's) or "other".

    Read with `immutable=1`: looking creates no -wal or -shm file and takes no lock."""
    with open(path, "rb") as handle:
        header = handle.read(len(SQLITE_HEADER))
    if not header:
        return "empty"
    if header != SQLITE_HEADER:
        return "other"
    try:
        conn = sqlite3.connect(file_uri(path, immutable="1"), uri=True)
        try:
            tables = {row[0] for row in conn.execute("select name from sqlite_master where type = 'table'")}
            ours = has_okf_tables(tables) and conn.execute(
                "select 1 from meta where key = 'format_version'").fetchone() is not None
        finally:
            conn.close()
    except sqlite3.Error:
        return "sqlite"
    return "okf" if ours else "sqlite"


def derived_paths(database: Path) -> tuple[Path, Path]:
    """DB.timeline.md and DB.wiki-trigger-keywords.txt beside `database`."""
    return database.with_name(f"{database.stem}.{TIMELINE}"), database.with_name(f"{database.stem}.{KEYWORDS}")


def is_derived_timeline(text: str) -> bool:
    """A timeline.md this tool wrote (not a note someone happened to call timeline.md)."""
    return text.lstrip("\ufeff").startswith("# Timeline\n\n" + TIMELINE_MARKER)
