"""Records -> one SQLite file, written with sqlite-utils.

A build never writes to the live database: it copies it (if there is one) to a
temporary file beside it, updates the copy, and swaps it in with os.replace()
only when everything succeeded. A crash or Ctrl-C leaves the old file as it was.
Unchanged input is detected by fingerprint before anything is parsed, and then
the file is not touched at all.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Iterable

import sqlite_utils

from . import __version__
from .bundle import Bundle, ScannedBundle, parse_bundle, rows, scan_bundle

FORMAT_VERSION = "1"
FTS_COLUMNS = ["title", "aliases", "description", "tags", "body"]
FTS_TOKENIZE = "porter unicode61 remove_diacritics 2"


class BuildError(Exception):
    """The build was refused; the existing database was not changed."""


@dataclass
class BundleReport:
    name: str
    concepts: int = 0
    index_nodes: int = 0
    edges_by_kind: dict[str, int] = field(default_factory=dict)
    link_problems: dict[str, int] = field(default_factory=dict)
    errors: int = 0
    warnings: int = 0
    changed: int = 0
    unchanged: int = 0
    kept_missing: int = 0
    pruned: int = 0
    up_to_date: bool = False


@dataclass
class BuildReport:
    output: Path
    bundles: list[BundleReport]
    seconds: float = 0.0

    @property
    def up_to_date(self) -> bool:
        return all(b.up_to_date for b in self.bundles)


def build(
    bundle_paths: Iterable[Path | str],
    output: Path | str,
    prune: bool = False,
    on_file: Callable[[str], None] | None = None,
    on_scanned: Callable[[int], None] | None = None,
) -> BuildReport:
    """Build (or update) `output` from one or more bundle folders."""
    started = time.perf_counter()
    output = Path(output)
    scanned = [scan_bundle(Path(p)) for p in bundle_paths]
    names = Counter(s.name for s in scanned)
    clash = [n for n, count in names.items() if count > 1]
    if clash:
        raise BuildError(f"two bundles share the folder name {clash[0]!r}; concept ids would collide")
    for s in scanned:
        if not s.root.is_dir():
            raise BuildError(f"{s.root} is not a folder")
    if on_scanned:
        on_scanned(sum(len(s.files) for s in scanned))

    previous = _previous_fingerprints(output)
    if previous is not None and not prune and all(
        previous.get(s.name) == s.fingerprint for s in scanned
    ):
        report = BuildReport(output, [_report_from_db(output, s.name) for s in scanned])
        report.seconds = time.perf_counter() - started
        return report

    output.parent.mkdir(parents=True, exist_ok=True)
    temp = output.with_name(f".{output.name}.{os.getpid()}.tmp")
    try:
        if output.exists():
            shutil.copyfile(output, temp)
        db = sqlite_utils.Database(temp)
        reports = []
        with db.conn:
            ensure_schema(db)
            for s in scanned:
                parsed = parse_bundle(s, on_file)
                reports.append(_write_bundle(db, parsed, prune))
            _write_meta(db, scanned)
        db.conn.close()
        os.replace(temp, output)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    report = BuildReport(output, reports)
    report.seconds = time.perf_counter() - started
    return report


def ensure_schema(db: sqlite_utils.Database) -> None:
    """Create the tables, indexes and full-text index if they are missing."""
    db["concepts"].create(
        {
            "id": str, "bundle": str, "path": str, "type": str, "title": str,
            "description": str, "tags": str, "aliases": str, "body": str,
            "frontmatter": str, "sources": str, "status": str, "stale_after": str,
            "trust_tier": str, "generated_by": str, "generated_at": str,
            "superseded_by": str, "is_index": int, "content_hash": str,
        },
        pk="id",
        if_not_exists=True,
    )
    db["edges"].create(
        {
            "id": int, "src": str, "dst": str, "predicate": str, "kind": str,
            "anchor": str, "object_literal": str, "date": str, "source_id": str, "line": int,
        },
        pk="id",
        if_not_exists=True,
    )
    db["link_issues"].create(
        {
            "id": int, "src": str, "bundle": str, "file": str, "line": int,
            "target": str, "kind": str, "problem": str, "candidates": str,
        },
        pk="id",
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
        if_not_exists=True,
    )
    db["log_entries"].create(
        {"id": int, "bundle": str, "file": str, "date": str, "text": str, "line": int},
        pk="id",
        if_not_exists=True,
    )
    db["meta"].create({"key": str, "value": str}, pk="key", if_not_exists=True)
    for table, columns in [
        ("concepts", ["bundle"]),
        ("concepts", ["type"]),
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


def _concept_row(concept) -> dict:
    row = rows([concept])[0]
    for column in ("tags", "aliases", "frontmatter", "sources"):
        row[column] = json.dumps(row[column], ensure_ascii=False)
    row["is_index"] = int(row["is_index"])
    return row


def _write_bundle(db: sqlite_utils.Database, bundle: Bundle, prune: bool) -> BundleReport:
    report = BundleReport(bundle.name)
    stored = {
        r["id"]: (r["content_hash"], r["superseded_by"])
        for r in db.query("select id, content_hash, superseded_by from concepts where bundle = ?", [bundle.name])
    }
    present = [c.id for c in bundle.concepts]
    present_json = json.dumps(present)
    missing = sorted(set(stored) - set(present))
    if prune and missing and not present:
        raise BuildError(
            f"refusing to prune {bundle.name!r}: it parsed to zero concepts, "
            f"which would delete all {len(stored)} stored ones"
        )
    changed = [c for c in bundle.concepts if stored.get(c.id) != (c.content_hash, c.superseded_by)]
    if changed:
        db["concepts"].upsert_all([_concept_row(c) for c in changed], pk="id")
    report.changed, report.unchanged = len(changed), len(present) - len(changed)

    for table in ("edges", "external_links", "link_issues"):
        db.execute(f"delete from {table} where src in (select value from json_each(?))", [present_json])
    if prune and missing:
        doomed = json.dumps(missing)
        for table in ("edges", "external_links", "link_issues"):
            db.execute(f"delete from {table} where src in (select value from json_each(?))", [doomed])
        db.execute("delete from concepts where id in (select value from json_each(?))", [doomed])
        report.pruned = len(missing)
    else:
        report.kept_missing = len(missing)
    for table in ("build_issues", "log_entries"):
        db.execute(f"delete from {table} where bundle = ?", [bundle.name])

    db["edges"].insert_all(rows(bundle.edges))
    issues = rows(bundle.link_issues)
    for issue in issues:
        issue["candidates"] = json.dumps(issue["candidates"], ensure_ascii=False)
    db["link_issues"].insert_all(issues)
    db["external_links"].insert_all(rows(bundle.external_links))
    db["build_issues"].insert_all(rows(bundle.build_issues))
    db["log_entries"].insert_all(rows(bundle.log_entries))
    _fill_report(db, report)
    return report


def _write_meta(db: sqlite_utils.Database, scanned: list[ScannedBundle]) -> None:
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    existing = _meta(db).get("bundles", "{}")
    bundles = json.loads(existing)
    for s in scanned:
        bundles[s.name] = {"path": str(s.root.resolve()), "fingerprint": s.fingerprint, "built_at": now}
    db["meta"].upsert_all(
        [
            {"key": "format_version", "value": FORMAT_VERSION},
            {"key": "tool_version", "value": __version__},
            {"key": "built_at", "value": now},
            {"key": "bundles", "value": json.dumps(bundles, sort_keys=True)},
        ],
        pk="key",
    )


def _meta(db: sqlite_utils.Database) -> dict[str, str]:
    if "meta" not in db.table_names():
        return {}
    return {r["key"]: r["value"] for r in db.query("select key, value from meta")}


def _previous_fingerprints(output: Path) -> dict[str, str] | None:
    """Fingerprints of the bundles in an existing, current-format database."""
    if not output.exists():
        return None
    try:
        db = sqlite_utils.Database(output)
        meta = _meta(db)
        db.conn.close()
    except Exception:
        return None
    if meta.get("format_version") != FORMAT_VERSION or meta.get("tool_version") != __version__:
        return None
    return {name: b.get("fingerprint") for name, b in json.loads(meta.get("bundles", "{}")).items()}


def _fill_report(db: sqlite_utils.Database, report: BundleReport) -> None:
    name = report.name
    for r in db.query(
        "select is_index, count(*) as n from concepts where bundle = ? group by is_index", [name]
    ):
        if r["is_index"]:
            report.index_nodes = r["n"]
        else:
            report.concepts = r["n"]
    report.edges_by_kind = {
        r["kind"]: r["n"]
        for r in db.query(
            "select kind, count(*) as n from edges where src in (select id from concepts where bundle = ?)"
            " group by kind order by n desc",
            [name],
        )
    }
    report.link_problems = {
        r["problem"]: r["n"]
        for r in db.query(
            "select problem, count(*) as n from link_issues where bundle = ? group by problem order by n desc",
            [name],
        )
    }
    for r in db.query(
        "select severity, count(*) as n from build_issues where bundle = ? group by severity", [name]
    ):
        if r["severity"] == "error":
            report.errors = r["n"]
        else:
            report.warnings = r["n"]


def _report_from_db(output: Path, name: str) -> BundleReport:
    db = sqlite_utils.Database(output)
    report = BundleReport(name, up_to_date=True)
    _fill_report(db, report)
    report.unchanged = report.concepts + report.index_nodes
    db.conn.close()
    return report
