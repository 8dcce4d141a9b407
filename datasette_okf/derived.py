"""timeline.md and wiki-trigger-keywords.txt: files derived from a built database (docs/design.md §10.1, §10.2).

Both are regenerated whole and never hand-edited. They are made from the
database alone, rows sorted and no time of generation written, so the same
database always gives the same bytes, and a file is only rewritten when its
bytes would change.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .links import markdown_link
from .schema import IS_LOG, KEYWORDS, TIMELINE, TIMELINE_MARKER, bundles_of, derived_paths, read_meta
from .titles import STOPWORDS

KEYWORDS_HEADER = "# wiki-trigger-keywords.txt, derived by `datasette okf build`; edits are overwritten."
_ISO_DATE = re.compile(r"^\d{4}(-\d{2}(-\d{2})?)?")


class DerivedFileError(Exception):
    """Derived files could not be written (the message names each); the database itself is built, and
    `written` lists the files that were."""

    def __init__(self, message: str, written: list[Path]):
        super().__init__(message)
        self.written = written


def timeline_markdown(conn: sqlite3.Connection, bundles: dict[str, str]) -> str:
    """Every date-qualified relation and every log entry, grouped by date, oldest first.

    `bundles` maps each bundle to include to the prefix its links need from where the file
    will live ("" inside the bundle, a relative path to the bundle beside the database).
    """
    names = json.dumps(sorted(bundles))
    titles, paths, bundle_of = {}, {}, {}
    for concept_id, title, path, bundle in conn.execute(
        "select id, coalesce(title, id), path, bundle from concepts where bundle in (select value from json_each(?))",
        [names],
    ):
        titles[concept_id], paths[concept_id], bundle_of[concept_id] = title, path, bundle

    def link(concept_id: str) -> str:
        return markdown_link(titles.get(concept_id, concept_id), bundles[bundle_of[concept_id]] + paths[concept_id])

    lines: list[tuple[str, str]] = []
    for src, predicate, dst, literal, date, source_id in conn.execute(
        """select src, predicate, dst, object_literal, date, source_id from edges
           where kind = 'relation' and date is not null and trim(date) != ''
             and src in (select id from concepts where bundle in (select value from json_each(?)))""",
        [names],
    ):
        target = link(dst) if dst in paths else (literal or dst or "")
        source = f" (source: {source_id})" if source_id else ""
        lines.append((date.strip(), f"- {link(src)} {predicate.replace('_', ' ')} {target}{source}"))
    for bundle, file, date, text in conn.execute(
        "select bundle, file, date, text from log_entries where bundle in (select value from json_each(?))", [names]
    ):
        entry = " ".join((text or "").split())
        lines.append((date.strip(), f"- {markdown_link('log', bundles[bundle] + file)}: {entry}"))
    out = ["# Timeline", "", TIMELINE_MARKER, ""]
    if not lines:
        out.append("No dated relations or log entries yet.")
    current = None
    for date, line in sorted(set(lines), key=lambda item: (_date_key(item[0]), item[1])):
        if date != current:
            out += ["", f"## {date}", ""] if current is not None else [f"## {date}", ""]
            current = date
        out.append(line)
    return "\n".join(out).rstrip("\n") + "\n"


def trigger_keywords(conn: sqlite3.Connection, bundles: Iterable[str]) -> list[str]:
    """Titles, aliases and string tags of every concept, deduplicated without regard to case.

    Left out: non-string tags (a bare `2009` is a YAML number), numbers, one-character words
    and very common words — each would fire on unrelated messages."""
    found: dict[str, str] = {}
    for title, aliases, frontmatter in conn.execute(
        f"select title, aliases, frontmatter from concepts where not is_index and not {IS_LOG} and bundle in "
        "(select value from json_each(?)) order by id",
        [json.dumps(sorted(bundles))],
    ):
        tags = (json.loads(frontmatter or "{}") or {}).get("tags")
        for keyword in [title, *json.loads(aliases or "[]"), *_string_tags(tags)]:
            keyword = " ".join(str(keyword or "").split())
            if _useful(keyword):
                key = keyword.casefold()
                if key not in found or keyword < found[key]:
                    found[key] = keyword
    return [found[key] for key in sorted(found)]


def keywords_text(keywords: list[str], database: Path) -> str:
    return "\n".join([
        KEYWORDS_HEADER,
        f"# database: {database}",
        "# One keyword per line (titles, aliases, tags). Read by `datasette okf trigger` / `python -m datasette_okf.trigger`.",
        *keywords,
    ]) + "\n"


def write_derived(database: Path, into_bundles: Iterable[str] = (), database_unchanged: bool = False) -> list[Path]:
    """Write DB.timeline.md and DB.wiki-trigger-keywords.txt beside `database` (every bundle in it) and
    timeline.md and wiki-trigger-keywords.txt into the root of each bundle named in `into_bundles`.
    An unchanged database has the same derived files: they are written only if one is missing.
    Returns the files whose bytes changed."""
    database = Path(database)
    conn = sqlite3.connect(database)  # not mode=ro: a read-only connection leaves the -wal and -shm files behind
    try:
        roots = {name: Path(b["path"]) for name, b in bundles_of(read_meta(conn)).items()}
        timeline, keywords = derived_paths(database)
        paths = [timeline, keywords] + [roots[name] / file for name in into_bundles for file in (TIMELINE, KEYWORDS)]
        if database_unchanged and all(path.exists() for path in paths):
            return []
        beside = {name: _relative(root, database.parent) for name, root in roots.items()}
        outputs = {
            timeline: timeline_markdown(conn, beside),
            keywords: keywords_text(trigger_keywords(conn, roots), database.resolve()),
        }
        for name in into_bundles:
            outputs[roots[name] / TIMELINE] = timeline_markdown(conn, {name: ""})
            outputs[roots[name] / KEYWORDS] = keywords_text(trigger_keywords(conn, [name]), database.resolve())
    finally:
        conn.close()
    written, problems = [], []
    for path, text in outputs.items():
        try:
            if _write_if_changed(path, text):
                written.append(path)
        except OSError as error:
            problems.append(f"could not write the derived file {path}: {error.strerror or error}")
    if problems:
        raise DerivedFileError("; ".join(problems), written)
    return written


def _string_tags(tags: Any) -> list[str]:
    if isinstance(tags, str):
        return [t.strip().lstrip("#") for t in re.split(r"[,\n]", tags) if t.strip()]
    if isinstance(tags, list):
        return [t.strip().lstrip("#") for t in tags if isinstance(t, str) and t.strip()]
    return []


def _useful(keyword: str) -> bool:
    if len(keyword) < 2 or keyword.casefold() in STOPWORDS:
        return False
    return not re.fullmatch(r"[\d\W_]+", keyword)  # numbers and punctuation alone


def _date_key(date: str) -> tuple:
    """ISO dates in calendar order first; anything else ("autumn 1420") after them, by its text."""
    match = _ISO_DATE.match(date)
    return (0, match.group(0), date) if match else (1, date.casefold(), date)


def _relative(root: Path, start: Path) -> str:
    return Path(os.path.relpath(Path(root).resolve(), Path(start).resolve())).as_posix() + "/"


def _write_if_changed(path: Path, text: str) -> bool:
    """Replace `path` atomically if its bytes would change; nothing is left behind if that fails."""
    data = text.encode("utf-8")
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        if path.is_file() and path.read_bytes() == data:
            return False
        temporary.write_bytes(data)
        os.replace(temporary, path)
    except OSError:
        temporary.unlink(missing_ok=True)
        raise
    return True
