"""Filing an answer back into the bundle as a Concept page (docs/design.md §10.3).

A synthesized answer worth keeping becomes a new page instead of chat history:
`type: Concept`, a `generated` stamp instead of `verified` (it is machine
output, unreviewed), `sources` and body links to every concept it cites. The
folder's index.md lists it and log.md records it, newest first (OKF §8, §9);
then the database is rebuilt incrementally so the page answers the next
question. Only ever an explicit command: nothing here runs on its own.
"""

from __future__ import annotations

import json
import re
import sqlite3
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

from .links import markdown_link
from .markdown import slug
from .schema import bundles_of, read_meta

FOLDER = "syntheses"
MAX_SLUG = 80


class FileBackError(Exception):
    """The page cannot be written (it exists, the bundle is not in the database, ...)."""


def file_back(
    database: Path | str,
    bundle_dir: Path | str,
    question: str,
    answer: str,
    model_id: str,
    cited_ids: list[str],
    title: str | None = None,
    now: datetime | None = None,
    rebuild: bool = True,
) -> Path:
    """Write the answer as a new page of `bundle_dir`, list it, log it, rebuild `database`. Returns the page."""
    bundle_dir = Path(bundle_dir)
    name = bundle_dir.resolve().name
    now = now or datetime.now().astimezone()
    title = " ".join((title or _title_from(question)).split())
    if not title:
        raise FileBackError("the page needs a title: give --title")
    concepts, has_vectors = _cited_concepts(Path(database), name, cited_ids)
    folder = bundle_dir / FOLDER
    page = folder / f"{_safe_slug(title)}.md"
    if page.exists():
        raise FileBackError(f"{page} exists; refusing to overwrite it (give another --title)")
    folder.mkdir(exist_ok=True)
    frontmatter = {
        "type": "Concept",
        "title": title,
        "description": _description(answer, question),
        "generated": {"by": model_id, "at": now.isoformat(timespec="seconds")},
        "sources": [{"resource": f"/{c['path']}", "title": c["title"]} for c in concepts],
    }
    body = _linked(answer.strip(), concepts)
    cited = "\n".join(f"- {markdown_link(c['title'], '/' + c['path'])}" for c in concepts) or "- (no notes were cited)"
    text = (
        "---\n" + yaml.safe_dump(frontmatter, sort_keys=False, allow_unicode=True, width=1000) + "---\n\n"
        f"# {title}\n\n*Question:* {' '.join(question.split())}\n\n{body}\n\n## Cited notes\n\n{cited}\n"
    )
    with open(page, "x", encoding="utf-8") as handle:  # "x": never overwrite, even in a race
        handle.write(text)
    relative = page.relative_to(bundle_dir).as_posix()
    _list_in_index(folder / "index.md", title, page.name)
    _log(bundle_dir / "log.md", now, f"Filed back {markdown_link(title, '/' + relative)}: an answer by {model_id} to "
         f"\u201c{' '.join(question.split())}\u201d, citing {len(concepts)} note{'s' if len(concepts) != 1 else ''}.")
    if rebuild:  # the same steps as a build (docs/design.md §10.3): the database, then the derived files
        from .schema import KEYWORDS, TIMELINE
        from .store import build

        opted_in = any((bundle_dir / f).exists() for f in (TIMELINE, KEYWORDS))
        build([bundle_dir], database, embed=has_vectors, derived_files=True, into_bundles=[name] if opted_in else [])
    return page


def bracketed_ids(answer: str) -> list[str]:
    """Everything the answer cites as [id]; those that are concepts of the bundle become sources."""
    return [m.group(1).strip() for m in re.finditer(r"\[([^\[\]]+)\](?!\()", answer)]


def _cited_concepts(database: Path, bundle: str, ids: list[str]) -> tuple[list[dict[str, Any]], bool]:
    """The cited notes of `bundle`, in citation order, and whether the database has vectors."""
    conn = sqlite3.connect(database)
    try:
        try:
            meta = read_meta(conn)
        except sqlite3.DatabaseError as error:
            raise FileBackError(f"{database} is not a database built by datasette okf build ({error})") from None
        if bundle not in bundles_of(meta):
            raise FileBackError(f"{database} was not built from a bundle named {bundle!r}; file back into that bundle")
        rows = {r[0]: {"id": r[0], "path": r[1], "title": r[2] or r[0]} for r in conn.execute(
            "select id, path, title from concepts where bundle = ? and id in (select value from json_each(?))",
            [bundle, json.dumps(ids)])}
    finally:
        conn.close()
    return [rows[i] for i in dict.fromkeys(ids) if i in rows], "embedding_model" in meta


def _title_from(question: str) -> str:
    text = " ".join(question.split()).strip().rstrip("?!.").strip()
    return (text[:1].upper() + text[1:])[:120]


def _safe_slug(title: str) -> str:
    """A file name that cannot leave the folder or clash with reserved names (index, log)."""
    name = slug(title)[:MAX_SLUG].strip("-") or "answer"
    return f"{name}-answer" if name in ("index", "log", "timeline") else name


def _description(answer: str, question: str) -> str:
    plain = re.sub(r"\s*\[[^\[\]\s]*/[^\[\]\s]*\](?!\()", "", " ".join(answer.split()))  # [bundle/id] citations
    plain = re.sub(r"\[([^\[\]]+)\]\([^)]*\)", r"\1", plain)  # markdown links: their text
    first = re.split(r"(?<=[.!?])\s", plain, maxsplit=1)[0]
    return (first if 20 <= len(first) <= 240 else f"An answer to: {' '.join(question.split())}")[:240]


def _linked(answer: str, concepts: list[dict[str, Any]]) -> str:
    """`[campaign/people/mira-vell]` citations as links to the notes."""
    by_id = {c["id"]: c for c in concepts}

    def replace(match: re.Match) -> str:
        concept = by_id.get(match.group(1).strip())
        return markdown_link(concept["title"], "/" + concept["path"]) if concept else match.group(0)

    return re.sub(r"\[([^\[\]]+)\](?!\()", replace, answer)


def _list_in_index(index: Path, title: str, file_name: str) -> None:
    line = f"* {markdown_link(title, file_name)}\n"
    if index.exists():
        text = index.read_text(encoding="utf-8")
        index.write_text(text + ("" if text.endswith("\n") else "\n") + line, encoding="utf-8")
    else:
        index.write_text(f"# Syntheses\n\nAnswers filed back into the bundle.\n\n{line}", encoding="utf-8")


def _log(log: Path, now: datetime, entry: str) -> None:
    """A dated entry at the top of log.md: newest first (OKF §9)."""
    heading = f"## {now.date().isoformat()}"
    bullet = f"* {entry}\n"
    text = log.read_text(encoding="utf-8") if log.exists() else "# Log\n"
    lines = text.splitlines(keepends=True)
    first = next((i for i, line in enumerate(lines) if line.startswith("## ")), None)
    if first is not None and lines[first].strip() == heading:
        at = first + 1
        while at < len(lines) and not lines[at].strip():
            at += 1
        lines.insert(at, bullet)
    else:
        at = first if first is not None else len(lines)
        block = ("" if at == 0 or lines[at - 1].strip() == "" else "\n") + f"{heading}\n\n{bullet}\n"
        lines.insert(at, block)
    log.write_text("".join(lines), encoding="utf-8")

