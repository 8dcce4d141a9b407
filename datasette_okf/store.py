"""Records -> one SQLite file, written with sqlite-utils.

A failed build never damages the previous database. An existing file of the
current format is updated in one transaction, which SQLite's rollback journal
undoes on any error, Ctrl-C or crash; a new file (or one of an older format) is
built in a temporary file and swapped in with os.replace() only on success.
Unchanged input is detected by fingerprint before anything is parsed, and then
the file is not touched at all.
"""

from __future__ import annotations

import errno
import functools
import gc
import glob
import json
import os
import shutil
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import sqlite_utils
from sqlite_utils.utils import sqlite3  # pysqlite3 where installed, as sqlite-utils and Datasette use

from . import __version__
from .bundle import (
    TEMPLATE_COPIES,
    Bundle,
    Concept,
    ScannedBundle,
    cache_key,
    parse_bundle,
    rows,
    scan_bundle,
    template_share,
    without_placeholders,
)
from .calibrate import calibrate, chunk_counts, needs_calibration
from .chunks import embedding_text, split_into_chunks, text_hash
from .derived import DerivedFileError, write_derived
from .embed import EmbeddingError, canonical_id, dimensions, embed_texts, get_model, is_default
from .locks import LOCK_SUFFIX, LockTimeout, build_lock, held_open
from .schema import (
    FORMAT_VERSION,
    IS_LOG,
    SIDE_FILES,
    VECTORS_PENDING,
    bundles_of,
    connect,
    derived_paths,
    ensure_schema,
    file_kind,
    read_meta,
)
from .vector_cache import open_cache

T = TypeVar("T")



class BuildError(Exception):
    """The build was refused or failed; the existing database was not changed."""


class BuildRefused(BuildError):
    """The output is not ours to write now: another file, in use, or locked by another build."""


@dataclass
class BundleReport:
    name: str
    concepts: int = 0
    index_nodes: int = 0
    logs: int = 0
    chunks: int = 0
    edges_by_kind: dict[str, int] = field(default_factory=dict)
    link_problems: dict[str, int] = field(default_factory=dict)
    errors: int = 0
    warnings: int = 0
    changed: int = 0
    unchanged: int = 0
    kept_missing: int = 0
    pruned: int = 0
    up_to_date: bool = False
    touched: set[str] = field(default_factory=set)  # concepts whose edges changed in this build


@dataclass
class EmbedReport:
    model: str
    dimensions: int
    embedded: int = 0  # chunks the model embedded in this build
    seconds: float = 0.0
    model_changed_from: str | None = None
    cached: int = 0  # chunks whose vector came from the shared embedding cache (vector_cache.py)
    cache: str | None = None  # the cache file consulted, if one was
    cache_problem: str | None = None  # why the cache was given up, if it was (the build went on without it)


@dataclass
class BuildReport:
    output: Path
    bundles: list[BundleReport]
    embedding: EmbedReport | None = None
    seconds: float = 0.0
    wal_pending: str | None = None  # why the .db does not stand alone yet (its -wal holds the newest data)
    wal_folded: bool = False  # a no-change build folded in a log an earlier build could not
    derived: list[Path] = field(default_factory=list)  # derived files whose bytes changed
    derived_error: str | None = None
    vectors_pending: int = 0  # chunks left without a vector by a vectors_behind build

    @property
    def up_to_date(self) -> bool:
        return all(b.up_to_date for b in self.bundles)


class Progress:
    """What a build reports while it runs; the CLI draws bars, the default says nothing."""

    def waiting(self, message: str) -> None: ...
    def files(self, total: int) -> None: ...
    def file(self, path: str) -> None: ...
    def embedding(self, total: int, model: str) -> None: ...
    def embedded(self, count: int) -> None: ...


def _without_cyclic_gc(function: Callable[..., T]) -> Callable[..., T]:
    """A build creates hundreds of thousands of small acyclic records; Python's cyclic collector
    re-scanning them took about 1 s of a 2.5 s one-file rebuild at 10k concepts. Reference
    counting still frees everything; the collector runs again once the build is over."""

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> T:
        enabled = gc.isenabled()
        gc.disable()
        try:
            return function(*args, **kwargs)
        finally:
            if enabled:
                gc.enable()

    return wrapper


@_without_cyclic_gc
def build(
    bundle_paths: Iterable[Path | str],
    output: Path | str,
    prune: bool = False,
    embed: bool = True,
    model: str | None = None,
    progress: Progress | None = None,
    link_mentions: bool = False,
    force: bool = False,
    lock_timeout: float = 60.0,
    derived_files: bool = False,
    into_bundles: Iterable[str] = (),
    embedding_cache: Path | str | bool = True,
    vectors_behind: bool = False,
    jobs: int = 1,
) -> BuildReport:
    """Build (or update) `output` from one or more bundle folders.

    With `embed`, every chunk gets a vector from `model` (default: the model
    the file was built with, else the embedded MiniLM); a different model
    re-embeds everything. Only an empty file or a datasette-okf database is
    ever written to, unless `force`; builds of one output wait for each other
    (up to `lock_timeout` seconds). With `derived_files`, the timeline and
    trigger keywords are rewritten beside the database (and into the roots of
    the bundles named in `into_bundles`) while the build still holds the lock.
    `embedding_cache` is the shared vector cache (vector_cache.py): True for the
    default file, a path, or False for none. With `vectors_behind`, the build
    commits without computing vectors (the file answers from titles, full-text
    search and the graph within seconds) and `report.vectors_pending` says how
    many chunks still need one: embed_pending() computes them, a batch per call.
    `jobs` batches go to a remote embedding model at once (_embedded_batches).
    """
    started = time.perf_counter()
    progress = progress or Progress()
    output = Path(output)
    roots = [Path(p) for p in bundle_paths]
    for root in roots:
        if not root.is_dir():
            raise BuildError(f"{root} is not a folder")
    try:
        output.parent.mkdir(parents=True, exist_ok=True)
        _check_writable(output)
        with build_lock(output, lock_timeout, progress.waiting):
            _refuse_foreign_file(output, force)
            report = _build_locked(roots, output, prune, embed, model, progress, link_mentions, embedding_cache,
                                   vectors_behind, jobs)
            if derived_files:
                report.derived, report.derived_error = _write_derived(output, into_bundles, report.up_to_date)
    except LockTimeout as error:
        raise BuildRefused(str(error)) from None
    except (sqlite3.Error, OSError) as error:
        raise BuildError(_explain(error, output)) from error
    report.seconds = time.perf_counter() - started
    return report


def _build_locked(
    roots: list[Path], output: Path, prune: bool, embed: bool, model: str | None, progress: Progress,
    link_mentions: bool, embedding_cache: Path | str | bool = True, vectors_behind: bool = False, jobs: int = 1,
) -> BuildReport:
    """The build proper, once this process alone may write `output`."""
    # A log an earlier build could not fold into the file (a full disk) is folded first: never call an
    # incomplete file up to date.
    leftover = _log_has_frames(output)
    wal_pending = _fold_leftover_wal(output) if leftover else None
    previous = _previous_state(output)
    last_seen = previous.get("files", {})  # by bundle: each file's stat and digest at the last build
    scanned = [scan_bundle(root, skip=build_outputs(output), known=last_seen.get(Path(root).resolve().name))
               for root in roots]
    clash = [n for n, count in Counter(s.name for s in scanned).items() if count > 1]
    if clash:
        raise BuildError(f"two bundles share the folder name {clash[0]!r}; concept ids would collide")
    for s in scanned:
        if not s.files:
            raise BuildError(f"{s.root} has no markdown (.md) files: nothing to build (a typo in the path?)")
    progress.files(sum(len(s.files) for s in scanned))
    target_model = canonical_id(model or previous.get("embedding_model"))
    if (
        previous
        and not prune
        and all(previous["fingerprints"].get(s.name) == _fingerprint(s, link_mentions) for s in scanned)
        and (not embed or (previous.get("embedding_model") == target_model and (
            vectors_behind or (previous["unembedded"] == 0 and previous["calibrated"]))))
    ):
        return BuildReport(output, [_report_from_db(output, s.name) for s in scanned], wal_folded=leftover and not wal_pending,
                           wal_pending=_pending_message(output, wal_pending) if wal_pending else None,
                           vectors_pending=previous.get("unembedded", 0) if embed else 0)
    embedding_model = get_model(target_model) if embed else None  # fail before any work

    # A current-format file is updated in place inside one transaction: SQLite's journal
    # rolls it back on any failure, Ctrl-C or crash, so the previous database survives
    # whole. Anything else is built in a temporary file swapped in only on success.
    in_place = bool(previous)
    _remove_abandoned_temporary_files(output)
    target = output if in_place else output.with_name(f".{output.name}.{os.getpid()}.tmp")
    if not in_place:
        _make_way_for_a_new_file(output)
    db = None
    try:
        db = connect(target)
        # A file updated in place may be open in a running Datasette. In write-ahead-log mode
        # (set on every file this tool writes, after its first successful build) readers keep
        # reading the last committed state for the whole build. With a rollback journal the
        # writer's spilled cache locked them out for the rest of a build (minutes, for a
        # re-embed) and read-only readers, as Datasette opens files, could fail at commit on a
        # journal they took for a hot one; the cache is kept in memory for those files. (A new
        # file has no readers: it spills as usual, or a 100k build would hold gigabytes.)
        was_wal = db.execute("pragma journal_mode").fetchone()[0] == "wal"
        if in_place and not was_wal:
            db.execute("pragma cache_spill = off")
        with db.conn:
            ensure_schema(db)
            reports, okf_versions = [], {}
            for s in scanned:
                cache = _load_parse_cache(db, s.name)
                parsed = parse_bundle(s, progress.file, link_mentions, parse_cache=dict(cache))
                okf_versions[s.name] = parsed.okf_version
                _save_parse_cache(db, s, cache, parsed)
                _save_file_stats(db, s, last_seen.get(s.name, {}))
                had_mentions = ((previous.get("fingerprints") or {}).get(s.name) or "").endswith(":mentions")
                reports.append(_write_bundle(db, parsed, prune, compare_all_edges=link_mentions or had_mentions))
                _update_degrees(db, reports[-1].touched)
            _write_meta(db, scanned, link_mentions, okf_versions)
            db.execute("delete from template_texts")
            db.execute(TEMPLATE_TEXTS_SQL, {"least": TEMPLATE_COPIES})
            embedded = None
            pending = 0
            if embedding_model is not None and vectors_behind:
                _prepare_vector_tables(db, embedding_model, target_model)
                pending = _unembedded(db, target_model)
                _mark_pending(db, pending)
            elif embedding_model is not None:
                embedded = _embed_missing(db, embedding_model, target_model, progress, embedding_cache, jobs=jobs)
                _calibrate_gate(db, embedding_model, target_model)
            for r in reports:
                _fill_report(db, r)
            if was_wal:
                _check_room_to_checkpoint(db, target)
        # Committed. Nothing below may lose it; what cannot be done is said, not raised.
        wal_pending = None
        if was_wal:  # everything into the main file, so that it can be copied on its own
            wal_pending = _checkpoint(db)
        else:
            try:  # only after success: a failed build leaves the file byte for byte as it was
                db.execute("pragma journal_mode = wal")
            except sqlite3.Error:
                if not in_place:
                    raise
                # an updated file left in rollback-journal mode is complete; the next build retries
        db.conn.close()
        if not in_place:
            _keep_owner_and_mode(output, target)
            os.replace(target, output)
    except BaseException:
        if db is not None:
            db.conn.close()
        if not in_place:
            _remove_temporary(target)
        raise
    return BuildReport(output, reports, embedded, wal_pending=_pending_message(output, wal_pending) if wal_pending else None,
                       vectors_pending=pending)


def _remove_abandoned_temporary_files(output: Path) -> None:
    """A build killed with SIGKILL cannot delete its temporary file; the next build does, once the
    process named in the file name is gone."""
    for leftover in output.parent.glob(f".{glob.escape(output.name)}.*.tmp"):
        pid = leftover.name[len(output.name) + 2 : -len(".tmp")]
        if pid.isdigit() and not _process_alive(int(pid)):
            _remove_temporary(leftover)


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True


def _check_writable(output: Path) -> None:
    """Say so before anything is opened: SQLite would open a read-only file read-only and leave -wal and
    -shm files beside it, and a lock or temporary file cannot be made in a read-only folder."""
    folder = output.parent
    if not os.access(folder, os.W_OK | os.X_OK):
        raise BuildError(f"cannot write in {folder} (read-only folder or permission denied): the build writes "
                         f"{output.name} and SQLite's -wal and -shm files there; the database was not changed")
    if output.exists() and not os.access(output, os.W_OK):
        raise BuildError(f"cannot write {output}: the file is read-only; the database was not changed")


def _refuse_foreign_file(output: Path, force: bool) -> None:
    """Only an empty file or one of our databases is ever replaced or updated, unless `force`."""
    if force or not output.exists():
        return
    if output.is_dir():
        raise BuildRefused(f"{output} is a folder; -o names the database file to write")
    kind = file_kind(output)
    if kind in ("empty", "okf"):
        return
    what = "a SQLite database that datasette-okf did not build" if kind == "sqlite" else "not a SQLite database"
    raise BuildRefused(f"{output} is {what}; refusing to replace it. Choose another -o, or pass --force to overwrite it.")


def build_outputs(output: Path) -> set[Path]:
    """Every file a build of `output` writes, as real paths: a bundle holding its own output never indexes them."""
    real = Path(os.path.realpath(output))
    return {real, *(Path(f"{real}{suffix}") for suffix in (*SIDE_FILES, LOCK_SUFFIX)), *derived_paths(real)}


def _make_way_for_a_new_file(output: Path) -> None:
    """Before a new file takes `output`'s name: refuse while another process has the old one open (it
    would go on reading the replaced or deleted file), and never let an old write-ahead log or shared
    memory file be applied to the new file: fold the log into the old file, or drop what a deleted
    file left."""
    if held_open(output):
        if output.exists():
            raise BuildRefused(
                f"{output} is open in write-ahead-log mode by another process (a running Datasette?); "
                "replacing it under that process would corrupt it. Stop it, then build again."
            )
        raise BuildRefused(
            f"{output} was deleted, but another process (a running Datasette?) still has it open and would go "
            "on answering from the deleted file. Stop it, then build again."
        )
    if output.exists() and Path(f"{output}-wal").exists():
        try:  # leaving write-ahead-log mode folds the log into the file and removes it
            conn = sqlite3.connect(output, timeout=0.5)
            try:
                conn.execute("pragma journal_mode = delete")
            finally:
                conn.close()
        except sqlite3.DatabaseError:
            pass  # not a database (a --force overwrite): nothing to fold
    for suffix in ("-wal", "-shm"):
        Path(f"{output}{suffix}").unlink(missing_ok=True)


def _remove_temporary(target: Path) -> None:
    target.unlink(missing_ok=True)
    for suffix in SIDE_FILES:
        Path(f"{target}{suffix}").unlink(missing_ok=True)


def _keep_owner_and_mode(output: Path, replacement: Path) -> None:
    """A rebuilt file keeps the permissions (and, when root rebuilds it, the owner) of the one it replaces."""
    try:
        old = output.stat()
    except FileNotFoundError:
        return
    os.chmod(replacement, old.st_mode & 0o7777)
    if os.geteuid() == 0:
        os.chown(replacement, old.st_uid, old.st_gid)


CHECKPOINT_MARGIN = 1 << 20


def free_bytes(folder: Path) -> int:
    return shutil.disk_usage(folder).free


def _check_room_to_checkpoint(db: sqlite_utils.Database, path: Path) -> None:
    """Refuse, and so roll back, before committing what could not then be folded into the main file.

    After the commit the new pages sit in the write-ahead log; folding them in grows the main file
    by the database's growth. Committed but not folded, the `.db` alone would be incomplete, and
    neither "as it was" nor "built" would be true. What is left to write to the log at the commit
    is at most the page cache."""
    page_size = db.execute("pragma page_size").fetchone()[0]
    growth = max(0, db.execute("pragma page_count").fetchone()[0] * page_size - path.stat().st_size)
    cache = db.execute("pragma cache_size").fetchone()[0]
    needed = growth + (-cache * 1024 if cache < 0 else cache * page_size) + CHECKPOINT_MARGIN
    free = free_bytes(path.parent)
    if free < needed:
        raise BuildError(
            f"not enough free space to finish {path}: about {needed / 1e6:.1f} MB needed, {free / 1e6:.1f} MB free "
            f"on {path.parent}; the database was not changed"
        )


def _checkpoint(db: sqlite_utils.Database) -> str | None:
    """Fold the write-ahead log into the main file and empty it; None when done, else why not."""
    for attempt in range(5):
        try:
            busy = db.execute("pragma wal_checkpoint(truncate)").fetchone()[0]
        except sqlite3.Error as error:
            return str(error)
        if not busy:
            return None
        time.sleep(0.2 * (attempt + 1))
    return "readers kept the log busy"


def _log_has_frames(output: Path) -> bool:
    wal = Path(f"{output}-wal")
    return wal.exists() and wal.stat().st_size > 0 and output.exists()


def _fold_leftover_wal(output: Path) -> str | None:
    """Fold in a log an earlier checkpoint could not; None when done, else why not."""
    db = connect(output)
    try:
        return _checkpoint(db)
    finally:
        db.conn.close()


def _pending_message(output: Path, reason: str) -> str:
    return (
        f"{output} is built, but its write-ahead log could not be folded into it ({reason}). The newest data "
        f"is safe in {output}-wal, which SQLite reads with it; until a later build folds it in (free some space "
        f"first if the disk is full), copy {output} together with {output}-wal, or with `sqlite3 {output} .backup COPY`."
    )


def _explain(error: BaseException, output: Path) -> str:
    """A one-line reason for an operating-system or SQLite failure during a build (no build was committed)."""
    text = str(error)
    code = getattr(error, "errno", None)
    where = getattr(error, "filename", None) or output
    if code == errno.ENOSPC or "disk is full" in text:
        return f"disk full while writing {output}; the database was not changed (free some space, then build again)"
    if code in (errno.EACCES, errno.EPERM, errno.EROFS) or "readonly" in text or "read-only" in text:
        return (f"cannot write {where}: permission denied or read-only file system (the file and its folder must "
                f"be writable); the database was not changed")
    if "unable to open database file" in text:
        return f"cannot open {output} for writing (is its folder writable?); the database was not changed"
    if isinstance(error, OSError):
        return f"{where}: {error.strerror or text}; the database was not changed"
    return f"building {output} failed: {text}; the database was not changed"


def _write_derived(output: Path, into_bundles: Iterable[str], unchanged: bool) -> tuple[list[Path], str | None]:
    try:
        return write_derived(output, list(into_bundles), database_unchanged=unchanged), None
    except DerivedFileError as error:
        return error.written, str(error)


def _concept_row(concept) -> dict:
    row = rows([concept])[0]
    del row["template_lines"], row["placeholder_lines"]  # read into chunks (template_share, text), not columns
    for column in ("tags", "aliases", "frontmatter", "sources"):
        row[column] = json.dumps(row[column], ensure_ascii=False)
    row["is_index"], row["is_stub"] = int(row["is_index"]), int(row["is_stub"])
    return row


def _write_bundle(db: sqlite_utils.Database, bundle: Bundle, prune: bool, compare_all_edges: bool) -> BundleReport:
    report = BundleReport(bundle.name)
    stored = {
        concept_id: (content_hash, superseded_by)
        for concept_id, content_hash, superseded_by in db.execute(
            "select id, content_hash, superseded_by from concepts where bundle = ?", [bundle.name])
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
        _write_chunks(db, changed)
    report.changed, report.unchanged = len(changed), len(present) - len(changed)

    if prune and missing:
        doomed = json.dumps(missing)
        for table, key in PER_CONCEPT:
            db.execute(f"delete from {table} where {key} in (select value from json_each(?))", [doomed])
        _delete_chunks(db, "concept_id in (select value from json_each(?))", [doomed])
        db.execute("delete from concepts where id in (select value from json_each(?))", [doomed])
        report.pruned = len(missing)
    else:
        report.kept_missing = len(missing)

    # A concept whose links were not resolved again still has last build's rows: compare the others
    # only. Mention edges depend on every title: when this build or the last made any (the fingerprint
    # says so), all edges are compared.
    settled = bundle.links_reused - {c.id for c in changed}
    records = {"edges": bundle.edges, "external_links": bundle.external_links,
               "link_issues": bundle.link_issues, "headings": bundle.headings}
    for table, key in PER_CONCEPT:
        scope = set() if table == "edges" and compare_all_edges else settled
        fresh = rows(r for r in records[table] if getattr(r, key) not in scope)
        if table == "link_issues":
            for issue in fresh:
                issue["candidates"] = json.dumps(issue["candidates"], ensure_ascii=False)
        scope_json = json.dumps([i for i in present if i not in scope]) if scope else present_json
        touched = _sync(db, table, key, fresh, scope_json)
        if table == "edges":
            # an upserted concept row has lost its degree: recount it too
            report.touched = touched | {c.id for c in changed} | (set(missing) if prune else set())
    for table in ("build_issues", "log_entries"):
        db.execute(f"delete from {table} where bundle = ?", [bundle.name])
    db["build_issues"].insert_all(rows(bundle.build_issues))
    db["log_entries"].insert_all(rows(bundle.log_entries))
    return report


def _update_degrees(db: sqlite_utils.Database, touched: set[str]) -> None:
    """concepts.degree = edges touching the concept, both directions: the walk damps by it on every query.

    Only concepts whose edges changed (either end) are recounted."""
    if touched:
        db.execute(
            """update concepts set degree =
                 (select count(*) from edges where edges.src = concepts.id and edges.dst is not null)
               + (select count(*) from edges where edges.dst = concepts.id)
               where id in (select value from json_each(?))""",
            [json.dumps(sorted(touched))],
        )


# Tables whose rows belong to one concept, and the column naming it.
PER_CONCEPT = (("edges", "src"), ("external_links", "src"), ("link_issues", "src"), ("headings", "concept_id"))


def _sync(db: sqlite_utils.Database, table: str, key: str, new_rows: list[dict], scope_json: str) -> set[str]:
    """Rewrite only the concepts whose rows in `table` changed: a one-file edit touches a few rows, not all.

    Returns the concepts whose rows changed, plus (for edges) every concept those rows point to."""
    if not new_rows and not db.execute(f"select 1 from {table} limit 1").fetchone():
        return set()
    columns = [c for c in (new_rows[0] if new_rows else db[table].columns_dict) if c != "id"]
    old: dict[str, list[tuple]] = {}
    for row in db.execute(
        f"select {', '.join(columns)} from {table} where {key} in (select value from json_each(?))", [scope_json]
    ):
        old.setdefault(row[columns.index(key)], []).append(tuple(row))
    new: dict[str, list[tuple]] = {}
    for row in new_rows:
        new.setdefault(row[key], []).append(tuple(row[c] for c in columns))
    changed = [k for k in sorted(old.keys() | new.keys()) if Counter(old.get(k, ())) != Counter(new.get(k, ()))]
    if not changed:
        return set()
    touched = set(changed)
    if "dst" in columns:
        where = columns.index("dst")
        touched |= {row[where] for k in changed for row in (*old.get(k, ()), *new.get(k, ())) if row[where]}
    db.execute(f"delete from {table} where {key} in (select value from json_each(?))", [json.dumps(changed)])
    placeholders = ", ".join("?" for _ in columns)
    db.conn.executemany(
        f"insert into {table} ({', '.join(columns)}) values ({placeholders})",
        [values for k in changed for values in new.get(k, [])],
    )
    return touched


def _load_parse_cache(db: sqlite_utils.Database, bundle: str) -> dict[str, Any]:
    """Per-file parse results from the previous build: unchanged files are not parsed again."""
    return {key: json.loads(entry) for key, entry in db.execute(
        "select key, entry from parse_cache where bundle = ?", [bundle])}


def _save_parse_cache(db, scanned: ScannedBundle, before: dict[str, Any], parsed: Bundle) -> None:
    """Keep the entries of files still present; write new ones and those whose links were resolved again."""
    after = parsed.parse_cache
    current = {cache_key(f) for f in scanned.files if f.readable}
    stale = [key for key in before if key not in current]
    db.conn.executemany("delete from parse_cache where key = ?", [(key,) for key in stale])
    db["parse_cache"].upsert_all(
        ({"key": key, "bundle": scanned.name, "entry": json.dumps(after[key], ensure_ascii=False)}
         for key in sorted((current - set(before)) | (parsed.cache_updates & current)) if key in after),
        pk="key",
    )


def _save_file_stats(db: sqlite_utils.Database, scanned: ScannedBundle, before: dict[str, tuple[str, str]]) -> None:
    """What the next scan compares each file with (bundle.file_stat): only the rows that changed are written."""
    now = {f.path: (f.stat, f.digest) for f in scanned.files if f.readable and f.stat}
    db.conn.executemany("delete from file_stats where bundle = ? and path = ?",
                        [(scanned.name, path) for path in before if path not in now])
    db.conn.executemany("insert or replace into file_stats (bundle, path, stat, digest) values (?, ?, ?, ?)",
                        [(scanned.name, path, *seen) for path, seen in now.items() if before.get(path) != seen])


def _write_chunks(db: sqlite_utils.Database, concepts: list[Concept]) -> None:
    """Re-chunk changed concepts, keeping the row (and so the vector) of every chunk whose text is unchanged.
    Index nodes get none: they are never seeds nor returned (docs/design.md §1.1), so their vectors would be read by
    nothing (a converted vault has one per folder: 289 on Thellade)."""
    ids = json.dumps([c.id for c in concepts])
    old: dict[tuple[str, str], list[int]] = {}
    for chunk_id, concept_id, digest in db.execute(
        "select id, concept_id, content_hash from chunks where concept_id in (select value from json_each(?))", [ids]
    ):
        old.setdefault((concept_id, digest), []).append(chunk_id)
    kept: list[tuple[int, int, str | None, float]] = []
    new_rows = []
    for concept in concepts:
        for chunk in [] if concept.is_index else split_into_chunks(concept.body, title=concept.title):
            text = without_placeholders(chunk.text, concept.placeholder_lines)
            if not text.strip():
                continue
            digest = text_hash(embedding_text(concept.title, concept.description, chunk.heading, text))
            share = template_share(text, concept.template_lines)
            reusable = old.get((concept.id, digest))
            if reusable:
                kept.append((reusable.pop(), chunk.seq, chunk.heading, share))
            else:
                new_rows.append(
                    {"concept_id": concept.id, "seq": chunk.seq, "heading": chunk.heading, "text": text,
                     "content_hash": digest, "embedded_with": None, "template_share": share}
                )
    stale = [chunk_id for leftovers in old.values() for chunk_id in leftovers]
    _delete_chunks(db, "id in (select value from json_each(?))", [json.dumps(stale)])
    db.conn.executemany("update chunks set seq = ?, heading = ?, template_share = ? where id = ?",
                        [(seq, h, share, i) for i, seq, h, share in kept])
    db["chunks"].insert_all(new_rows)


def _delete_chunks(db: sqlite_utils.Database, where: str, params: list) -> None:
    tables = db.table_names()
    for table, key in (("chunk_vectors", "rowid"), ("chunk_bits", "rowid"), ("chunk_floats", "id")):
        if table in tables:
            db.execute(f"delete from {table} where {key} in (select id from chunks where {where})", params)
    db.execute(f"delete from chunks where {where}", params)


def _prepare_vector_tables(db: sqlite_utils.Database, model, model_id: str) -> EmbedReport:
    """The vector tables for `model_id`, made (and every chunk marked unembedded) when the model changed."""
    meta = read_meta(db.conn)
    previous = meta.get("embedding_model")
    report = EmbedReport(model_id, int(meta.get("embedding_dimensions") or 0))
    if previous != model_id or "chunk_vectors" not in db.table_names():
        report.model_changed_from = previous if previous and previous != model_id else None
        report.dimensions = dimensions(model)
        for table in ("chunk_vectors", "chunk_bits", "chunk_floats"):
            db.execute(f"drop table if exists {table}")
        db.execute(
            f"create virtual table chunk_vectors using vec0(embedding float[{report.dimensions}] distance_metric=cosine)"
        )
        # For large collections: binary codes to find candidates fast, floats by id to re-rank them exactly.
        db.execute(f"create virtual table chunk_bits using vec0(embedding bit[{report.dimensions}])")
        db.execute("create table chunk_floats (id integer primary key, embedding blob)")
        db.execute("update chunks set embedded_with = null")
        db["meta"].upsert_all(
            [{"key": "embedding_model", "value": model_id},
             {"key": "embedding_dimensions", "value": str(report.dimensions)}],
            pk="key",
        )
    return report


def last_chunk_id(output: Path | str) -> int:
    """The highest chunk id in a built file: chunks written after it are newer (rows of changed text are new)."""
    db = connect(Path(output))
    try:
        return db.execute("select coalesce(max(id), 0) from chunks").fetchone()[0]
    finally:
        db.conn.close()


def _unembedded(db: sqlite_utils.Database, model_id: str) -> int:
    return db.execute("select count(*) from chunks where embedded_with is null or embedded_with != ?",
                      [model_id]).fetchone()[0]


def _mark_pending(db: sqlite_utils.Database, pending: int) -> None:
    """meta.vectors_pending while chunks lack vectors after a vectors_behind build: context_for then counts them."""
    if pending:
        db["meta"].upsert({"key": VECTORS_PENDING, "value": str(pending)}, pk="key")
    else:
        db.execute("delete from meta where key = ?", [VECTORS_PENDING])


def _embed_missing(
    db: sqlite_utils.Database, model, model_id: str, progress: Progress, embedding_cache: Path | str | bool = True,
    limit: int | None = None, first_above: int = -1, jobs: int = 1,
) -> EmbedReport:
    """Give every chunk without a vector from `model_id` one (with `limit`, that many: chunks whose id is above
    `first_above` first, so an edited note's come before the backlog, then the shortest): from the shared cache
    (vector_cache.py) when it holds one for this model and exactly this text, else from the model, shortest texts
    batched together (similar lengths pad less)."""
    started = time.perf_counter()
    report = _prepare_vector_tables(db, model, model_id)
    todo = [
        (chunk_id, embedding_text(title, description, heading, text))
        for chunk_id, title, description, heading, text in db.execute(
            "select chunks.id, concepts.title, concepts.description, chunks.heading, chunks.text"
            " from chunks join concepts on concepts.id = chunks.concept_id"
            " where chunks.embedded_with is null or chunks.embedded_with != ?"
            " order by chunks.id > ? desc, length(chunks.text) limit ?",
            [model_id, first_above, -1 if limit is None else limit],
        )
    ]
    todo.sort(key=lambda item: len(item[1]))  # similar lengths pad less
    progress.embedding(len(todo), model_id)
    cache = open_cache(embedding_cache) if todo else None
    try:
        digests = [text_hash(text) for _, text in todo]
        hits = cache.lookup(model_id, report.dimensions, digests) if cache else {}
        if cache and cache.usable:
            report.cache = str(cache.path)
        found = [(chunk_id, hits[digest]) for (chunk_id, _), digest in zip(todo, digests) if digest in hits]
        for start in range(0, len(found), 256):
            pairs = found[start : start + 256]
            _insert_vectors(db, model_id, pairs)
            report.cached += len(pairs)
            progress.embedded(len(pairs))
        missing = [(chunk_id, text, digest) for (chunk_id, text), digest in zip(todo, digests) if digest not in hits]
        batch_size = getattr(model, "batch_size", None) or 16
        batches = [missing[start : start + batch_size] for start in range(0, len(missing), batch_size)]
        for batch, blobs in _embedded_batches(model, batches, jobs):
            _insert_vectors(db, model_id, list(zip([chunk_id for chunk_id, _, _ in batch], blobs)))
            if cache:
                cache.store(model_id, zip([digest for _, _, digest in batch], blobs))
            report.embedded += len(batch)
            progress.embedded(len(batch))
    finally:
        if cache:
            cache.close()
            report.cache_problem = cache.problem
    report.seconds = time.perf_counter() - started
    return report


def embed_pending(output: Path | str, model: Any, model_id: str, batch: int = 64, progress: Progress | None = None,
                  embedding_cache: Path | str | bool = True, lock_timeout: float = 60.0, first_above: int = -1) -> int:
    """Embed up to `batch` of the chunks a vectors_behind build left and commit them: Datasette answers from them
    at once (write-ahead log). Chunks with an id above `first_above` (written since: an edited note's) go first,
    then the shortest, as a whole build orders them. Returns how many chunks still lack a vector; with none left
    the gate is calibrated and the log folded into the file. Each call holds the build lock for one batch only."""
    output = Path(output)
    try:
        with build_lock(output, lock_timeout, (progress or Progress()).waiting):
            db = connect(output)
            try:
                with db.conn:
                    _embed_missing(db, model, model_id, progress or Progress(), embedding_cache, limit=batch,
                                   first_above=first_above)
                    left = _unembedded(db, model_id)
                    if not left:
                        _calibrate_gate(db, model, model_id)
                    _mark_pending(db, left)
                if not left:
                    _checkpoint(db)
            finally:
                db.conn.close()
    except LockTimeout as error:
        raise BuildRefused(str(error)) from None
    except (sqlite3.Error, OSError) as error:
        raise BuildError(_explain(error, output)) from error
    return left


def _embed_twice(model: Any, texts: list[str]) -> list[bytes]:
    """A batch's vectors, for --jobs: in a pool of servers a batch that fails (one server restarting, a timeout) is
    tried once more, most likely on another, before the build fails."""
    try:
        return embed_texts(model, texts)
    except EmbeddingError as first:
        try:
            return embed_texts(model, texts)
        except EmbeddingError as second:
            raise EmbeddingError(f"a batch of {len(texts)} chunks failed twice: {first}; then: {second}") from second


def _embedded_batches(model: Any, batches: list[list[tuple]], jobs: int) -> Iterator[tuple[list[tuple], list[bytes]]]:
    """(batch, its vectors) in order. With `jobs` > 1, that many batches are with the model at once: for a remote
    model (an Ollama or OpenAI-compatible server, or a load-balanced pool of them) whose time is the network's and
    the server's. The default model runs in this process and already uses every core, so it keeps one."""
    texts = [[text for _, text, _ in batch] for batch in batches]
    if jobs <= 1 or is_default(getattr(model, "model_id", None)):
        for batch, batch_texts in zip(batches, texts):
            yield batch, embed_texts(model, batch_texts)  # one try: a dead server fails the build at once
        return
    pool = ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="okf-embed")
    try:
        futures = [pool.submit(_embed_twice, model, batch_texts) for batch_texts in texts]
        for batch, future in zip(batches, futures):
            yield batch, future.result()
    finally:  # a failed batch fails the build: the batches not started are not sent
        pool.shutdown(wait=True, cancel_futures=True)


def _insert_vectors(db: sqlite_utils.Database, model_id: str, pairs: list[tuple[int, bytes]]) -> None:
    """(chunk id, float32 blob) pairs into the three vector tables; the chunks are marked as embedded with `model_id`."""
    ids = [chunk_id for chunk_id, _ in pairs]
    # A chunk that has a vector has its float copy too. Deleting from a vec0 table costs ~0.1 ms a row even
    # when there is nothing to delete, so only chunks with a vector (none, unless re-embedded) are deleted.
    had = [row[0] for row in db.execute(
        "select id from chunk_floats where id in (select value from json_each(?))", [json.dumps(ids)])]
    for table in ("chunk_vectors", "chunk_bits") if had else ():
        db.execute(f"delete from {table} where rowid in (select value from json_each(?))", [json.dumps(had)])
    db.conn.executemany("insert into chunk_vectors(rowid, embedding) values (?, ?)", pairs)
    db.conn.executemany("insert into chunk_bits(rowid, embedding) values (?, vec_quantize_binary(?))", pairs)
    db.conn.executemany("insert or replace into chunk_floats(id, embedding) values (?, ?)", pairs)
    db.conn.executemany("update chunks set embedded_with = ? where id = ?", [(model_id, i) for i in ids])


# A chunk whose text 20 or more notes share word for word is a template's, not what any of them says: the context
# never shows it (retrieve.SECTIONS_SQL). Prose lines that common are in no chunk already (bundle.without_placeholders),
# so what is left is tables and fields: Thellade's reputation table, "| Campaign Group 1 | | Note 1 |…", in 207 notes.
# Outside Thellade no development set has a chunk shared by more than 11 notes (13th Age's "At-Will / Target: One
# enemy / …"). The whole table is redone at each build: a group by over every chunk, 0.8 s at 100k notes.
TEMPLATE_TEXTS_SQL = """insert into template_texts (text, notes)
select text, count(distinct concept_id) from chunks where text != ''
group by text having count(distinct concept_id) >= :least"""


def _calibrate_gate(db: sqlite_utils.Database, model: Any, model_id: str) -> None:
    """The confidence gate's vector threshold for these vectors (calibrate.py), when they are new or have changed."""
    meta = read_meta(db.conn)
    chunks, changed = chunk_counts(db.conn, meta, model_id)
    if chunks and needs_calibration(meta, model_id, changed):
        gate = calibrate(db.conn, model, model_id, chunks)
        db["meta"].upsert({"key": "gate", "value": json.dumps(gate, sort_keys=True)}, pk="key")


def _fingerprint(scanned: ScannedBundle, link_mentions: bool) -> str:
    """The bundle's content fingerprint, plus the options that change what is built from it."""
    return scanned.fingerprint + (":mentions" if link_mentions else "")


def _write_meta(db: sqlite_utils.Database, scanned: list[ScannedBundle], link_mentions: bool,
                okf_versions: dict[str, str | None]) -> None:
    """Format, tool version, build time and, per bundle: its root, fingerprint, build time and the
    `okf_version` its root index.md declares (OKF §12; None for a plain vault)."""
    now = datetime.now(UTC).isoformat(timespec="microseconds")  # also a state stamp (hamming.py)
    bundles = bundles_of(read_meta(db.conn))
    for s in scanned:
        bundles[s.name] = {"path": str(s.root.resolve()), "fingerprint": _fingerprint(s, link_mentions),
                           "built_at": now, "okf_version": okf_versions.get(s.name)}
    db["meta"].upsert_all(
        [
            {"key": "format_version", "value": FORMAT_VERSION},
            {"key": "tool_version", "value": __version__},
            {"key": "built_at", "value": now},
            {"key": "bundles", "value": json.dumps(bundles, sort_keys=True)},
        ],
        pk="key",
    )


def _previous_state(output: Path) -> dict:
    """Fingerprints, embedding model and count of chunks lacking vectors in an existing database."""
    if not output.exists():
        return {}
    try:
        db = connect(output)
        meta = read_meta(db.conn)
        unembedded = _unembedded(db, meta.get("embedding_model") or "")
        files: dict[str, dict[str, tuple[str, str]]] = defaultdict(dict)
        if "file_stats" in db.table_names():
            for bundle, path, seen, digest in db.execute("select bundle, path, stat, digest from file_stats"):
                files[bundle][path] = (seen, digest)
        db.conn.close()
    except sqlite3.Error:  # unreadable or an older layout: rebuild it
        return {}
    if meta.get("format_version") != FORMAT_VERSION or meta.get("tool_version") != __version__:
        return {}
    fingerprints = {name: b.get("fingerprint") for name, b in bundles_of(meta).items()}
    return {"fingerprints": fingerprints, "embedding_model": meta.get("embedding_model"), "unembedded": unembedded,
            "calibrated": not needs_calibration(meta, meta.get("embedding_model") or "", None), "files": files}


def _fill_report(db: sqlite_utils.Database, report: BundleReport) -> None:
    name = report.name
    for kind, n in db.execute(
        f"select case when is_index then 'index' when {IS_LOG} then 'log' else 'concept' end as kind, count(*)"
        " from concepts where bundle = ? group by kind", [name]
    ):
        setattr(report, {"index": "index_nodes", "log": "logs", "concept": "concepts"}[kind], n)
    report.chunks = db.execute(
        "select count(*) from chunks where concept_id in (select id from concepts where bundle = ?)", [name]
    ).fetchone()[0]
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
    db = connect(output)
    report = BundleReport(name, up_to_date=True)
    _fill_report(db, report)
    report.unchanged = report.concepts + report.index_nodes + report.logs
    db.conn.close()
    return report
