"""Read one bundle folder (OKF or an Obsidian vault) into plain records.

`scan_bundle` reads bytes and hashes them (cheap: it is how a rebuild with no
change is detected without parsing), or, for a file the last build saw with the
same size, times and inode, takes that build's digest and reads the bytes only if
they are needed; `parse_bundle` turns them into concepts,
edges, link issues and log entries. Nothing here knows about SQLite, and
nothing outside the bundle root is ever opened: symlinks are resolved and
checked before a byte is read.
"""

from __future__ import annotations

import errno
import hashlib
import itertools
import json
import os
import posixpath
import re
import stat
import time
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import astuple, dataclass, field
from pathlib import Path
from typing import Any

from .dates import BOOKKEEPING, is_date_field
from .folder_types import DEFAULT_TYPES, folder_name, type_for
from .frontmatter import FrontmatterError, parse_frontmatter, split_frontmatter
from .links import PathIndex, RawLink, Resolution, find_links, find_wikilinks
from .markdown import decode, heading, headings, is_binary, mask_code, readable, slug, without_marks
from .schema import MAX_FILE_BYTES, TIMELINE, is_derived_timeline
from .titles import TitleIndex, words

PARSER_VERSION = "25"  # bump when parsing changes, so unchanged files are re-read (25: a folder of two notes
# numbered one after the other is a series: bundle._is_series)
RESERVED = {"index.md", "log.md"}  # OKF §3.1
LOG_TYPE = "Log"  # the type of a log.md note (OKF §9) that does not give one

# Path-valued frontmatter fields (OKF §6.2): (key, nested key or None).
PATH_FIELDS = (
    ("resource", None),
    ("computation", None),
    ("executor", "resource"),
    ("attester", "resource"),
)


@dataclass
class Concept:
    id: str
    bundle: str
    path: str
    type: str | None
    title: str
    description: str | None
    tags: list[str]
    aliases: list[str]
    body: str
    frontmatter: dict[str, Any]
    sources: list[Any]
    status: str
    stale_after: str | None
    trust_tier: str
    generated_by: str | None
    generated_at: str | None
    superseded_by: str | None
    is_index: bool
    content_hash: str
    type_source: str | None = None  # frontmatter | folder (inferred for a vault) | log (OKF §9); None: no type
    description_source: str | None = None  # frontmatter | body (its first sentence of its own)
    is_stub: bool = False  # a template with nothing filled in: a seed only by name, for its links
    template_lines: frozenset[str] = frozenset()  # digests of its prose lines that are a template's (template_share)
    placeholder_lines: frozenset[str] = frozenset()  # of those, the ones TEMPLATE_COPIES notes share: never shown
    properties: str = ""  # the words of its frontmatter values, for the full-text index (property_text)


@dataclass
class Edge:
    src: str
    dst: str | None
    predicate: str
    kind: str
    anchor: str | None = None
    object_literal: str | None = None
    date: str | None = None
    source_id: str | None = None
    line: int | None = None
    text: str | None = None  # the link as the note shows it ("shown" of [[target|shown]]): the row page links it


@dataclass
class Heading:
    concept_id: str
    level: int
    text: str
    slug: str
    line: int


@dataclass
class LinkIssue:
    src: str
    bundle: str
    file: str
    line: int | None
    target: str
    kind: str
    problem: str
    candidates: list[str]


@dataclass
class BuildIssue:
    bundle: str
    file: str
    severity: str  # error | warning
    message: str


@dataclass
class ExternalLink:
    src: str
    url: str
    text: str
    predicate: str
    line: int | None


@dataclass
class LogEntry:
    bundle: str
    file: str
    date: str | None
    text: str
    line: int


@dataclass
class SourceFile:
    path: str  # bundle-relative, posix
    data: bytes | None  # None when not read: unreadable (no digest, see issues) or unchanged, read on demand
    digest: str = ""
    full: str = ""  # where to read it
    stat: str = ""  # size, times and inode, when settled enough to stand for the digest next time (file_stat)
    moved: bool = False  # read after the scan, and its bytes are no longer those of `digest`

    @property
    def readable(self) -> bool:
        return bool(self.digest)

    def read(self) -> bytes:
        """The file's bytes, read now if the scan took its digest from the last build. A file that changed since
        the scan keeps the scanned digest and loses its stat, so that the next build reads it again and sees the
        change (this one's fingerprint must not claim the new bytes), and what is parsed from it is not cached."""
        if self.data is None and self.full:
            try:
                with open(self.full, "rb") as f:
                    self.data = f.read()
            except OSError:
                self.data = b""  # gone since the scan: the next build reports it
            if hashlib.sha256(self.data).hexdigest() != self.digest:
                self.moved, self.stat = True, ""
        return self.data or b""


RACY_NS = 2_000_000_000  # a file written this close to its scan may change again within the file system's clock tick


def file_stat(info: os.stat_result, scanned_at_ns: int) -> str:
    """What says a file is unchanged without reading it, as git's index does: size, modification and change
    times (the change time moves on any write, even one that restores the modification time; on Windows, where
    st_ctime is the creation time, such a rewrite of the same size goes unseen until the file changes again) and
    inode. "" for a file written within RACY_NS of the scan: a second write in the same tick of a coarse clock
    would look alike."""
    if max(info.st_mtime_ns, info.st_ctime_ns) >= scanned_at_ns - RACY_NS:
        return ""
    return f"{info.st_size}:{info.st_mtime_ns}:{info.st_ctime_ns}:{info.st_ino}"


@dataclass
class ScannedBundle:
    name: str
    root: Path
    files: list[SourceFile]
    other_files: list[str]
    issues: list[BuildIssue]

    @property
    def fingerprint(self) -> str:
        h = hashlib.sha256(f"okf-parser {PARSER_VERSION}\n".encode())
        for f in self.files:
            h.update(f"{f.path}\0{f.digest}\n".encode())
        for path in self.other_files:
            h.update(f"{path}\0\n".encode())
        for issue in self.issues:
            h.update(f"{issue.file}\0{issue.message}\n".encode())
        return h.hexdigest()


@dataclass
class Bundle:
    name: str
    root: Path
    fingerprint: str
    okf_version: str | None = None
    concepts: list[Concept] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)
    link_issues: list[LinkIssue] = field(default_factory=list)
    build_issues: list[BuildIssue] = field(default_factory=list)
    external_links: list[ExternalLink] = field(default_factory=list)
    log_entries: list[LogEntry] = field(default_factory=list)
    headings: list[Heading] = field(default_factory=list)
    index: PathIndex | None = None  # how links were resolved (the converter reuses it)
    parse_cache: dict[str, Any] = field(default_factory=dict)  # per-file parse results, by path and digest
    # concepts whose links were not resolved again (same bytes, same file set and aliases): their
    # edges, issues and external links are the previous build's, so the store need not compare them
    links_reused: set[str] = field(default_factory=set)
    cache_updates: set[str] = field(default_factory=set)  # parse_cache keys whose entry changed


def rows(records: Iterable[Any]) -> list[dict[str, Any]]:
    """Records as dicts (shallow: every field is a scalar, or a list/dict stored as JSON later)."""
    return [dict(r.__dict__) for r in records]


# ------------------------------------------------------------------ scanning


def scan_bundle(root: Path | str, max_bytes: int = MAX_FILE_BYTES, skip: set[Path] = frozenset(),
                known: dict[str, tuple[str, str]] | None = None) -> ScannedBundle:
    """List a bundle's files and read its markdown, never leaving the root.

    Hidden folders (`.obsidian`, `.git`, `.trash`) are skipped; symlinks are
    followed only when they resolve inside the root; oversized and binary files
    are reported and not parsed. `skip` holds real paths never to list: the
    build's own outputs, when the database is written inside the bundle.
    `known` is the last build's (stat, digest) by path: a file whose stat is
    the same is not read (at 10k notes reading and hashing took 0.3-0.4 s of a
    one-edit rebuild).
    """
    known = known or {}
    scanned_at = time.time_ns()
    root = Path(root)
    real_root = root.resolve()
    name = real_root.name
    files: list[SourceFile] = []
    other: list[str] = []
    issues: list[BuildIssue] = []

    def issue(rel: str, message: str, severity: str = "error") -> None:
        issues.append(BuildIssue(name, rel, severity, message))

    skip_names = {str(path) for path in skip}

    def scan_file(entry: os.DirEntry, rel: str) -> None:
        filename, full = entry.name, entry.path
        if filename.startswith(".") and not filename.lower().endswith(".md") or full in skip_names:
            return
        if entry.is_symlink():
            try:
                target = Path(full).resolve(strict=True)
            except RuntimeError:  # Python < 3.13 reports a loop this way
                return issue(rel, "symlink loop; not read")
            except OSError as error:
                return issue(rel, "symlink loop; not read" if error.errno == errno.ELOOP else
                             f"cannot read: {error.strerror} (dangling symlink?)")
            if not target.is_relative_to(real_root):
                return issue(rel, f"symlink points outside the bundle ({os.readlink(full)}); not read")
        try:
            info = entry.stat()
        except OSError as error:
            return issue(rel, f"cannot read: {error.strerror}")
        if not stat.S_ISREG(info.st_mode):
            return
        if not filename.lower().endswith(".md"):
            return other.append(rel)
        if info.st_size > max_bytes:
            issue(rel, f"file is {info.st_size:,} bytes, over the {max_bytes:,}-byte limit; not parsed")
            return files.append(SourceFile(rel, None))
        seen = file_stat(info, scanned_at)
        if seen and known.get(rel, ("", ""))[0] == seen:
            return files.append(SourceFile(rel, None, known[rel][1], full, seen))
        try:
            with open(full, "rb") as f:
                data = f.read()
        except OSError as error:
            issue(rel, f"cannot read: {error.strerror}")
            return files.append(SourceFile(rel, None))
        files.append(SourceFile(rel, data, hashlib.sha256(data).hexdigest(), full, seen))

    def scan_folder(folder: str, rel_folder: str) -> None:
        # os.scandir, not os.walk and pathlib: at 10k files, Path objects and their stat calls cost 0.3 s a scan
        try:
            with os.scandir(folder) as listing:
                entries = sorted(listing, key=lambda e: e.name)
        except OSError as error:
            return issue(rel_folder or ".", f"cannot list folder: {error.strerror}", "warning")
        folders = [e for e in entries if _is_folder(e)]  # a symlink to a folder too, as os.walk lists it
        for entry in folders:
            if entry.is_symlink():
                issue(posixpath.join(rel_folder, entry.name), "symlinked folder not followed", "warning")
        listed = {e.name for e in folders}
        for entry in entries:
            if entry.name not in listed:
                scan_file(entry, posixpath.join(rel_folder, entry.name))
        for entry in folders:
            if not entry.is_symlink() and not entry.name.startswith("."):
                scan_folder(entry.path, posixpath.join(rel_folder, entry.name))

    scan_folder(str(real_root), "")
    return ScannedBundle(name, root, files, other, issues)


def _is_folder(entry: os.DirEntry) -> bool:
    try:
        return entry.is_dir()
    except OSError:  # a symlink loop: the file scan reports it
        return False


# ------------------------------------------------------------------- parsing


def parse_bundle(
    scanned: ScannedBundle,
    on_file: Callable[[str], None] | None = None,
    link_mentions: bool = False,
    parse_cache: dict[str, Any] | None = None,
) -> Bundle:
    """Turn a scanned bundle into records, resolving every link within it.

    With `link_mentions`, an unlinked mention of another concept's title or
    alias in a body becomes an edge of kind `mention`.
    """
    bundle = Bundle(scanned.name, scanned.root, scanned.fingerprint)
    bundle.parse_cache = parse_cache if parse_cache is not None else {}
    bundle.build_issues.extend(scanned.issues)
    documents: list[_Document] = []
    # macOS and Windows see `Ann.md` and `ann.md`, or `Café.md` composed (NFC) and decomposed
    # (NFD), as one file: two of them would be one concept there, so only one is kept. A reserved
    # file (index.md, log.md: OKF §3.1) wins over a look-alike; otherwise the first in path order.
    seen_ids: dict[str, str] = {
        _id_key(f.path): f.path for f in scanned.files if posixpath.basename(f.path) in RESERVED
    }
    unreadable: list[str] = []
    for source in scanned.files:
        if on_file:
            on_file(source.path)
        if not source.readable:
            unreadable.append(source.path)
            continue
        doc = _read_document(bundle, source, bundle.parse_cache)
        if doc is None:
            unreadable.append(source.path)
            continue
        if doc.path == TIMELINE and is_derived_timeline(doc.body):
            unreadable.append(doc.path)  # our own derived view (seed 003 §3): a file, not a concept
            continue
        key = _id_key(doc.path)
        if seen_ids.get(key, doc.path) != doc.path:
            same_case = seen_ids[key].casefold() == doc.path.casefold()
            why = "on a case-insensitive file system" if same_case else "once names are compared after Unicode normalisation (NFC)"
            bundle.build_issues.append(
                BuildIssue(bundle.name, doc.path, "error", f"same concept id as {seen_ids[key]} {why}; skipped")
            )
            unreadable.append(doc.path)
            continue
        seen_ids.setdefault(key, doc.path)
        documents.append(doc)

    aliases = {d.path: _string_list(d.frontmatter.get("aliases", d.frontmatter.get("alias"))) for d in documents}
    paths = [d.path for d in documents] + scanned.other_files + unreadable
    index = bundle.index = PathIndex(paths, aliases)
    # what every link resolution depends on besides the file itself
    index_key = hashlib.sha256(
        json.dumps([bundle.name, sorted(paths), sorted(aliases.items())], ensure_ascii=False).encode()
    ).hexdigest()
    read: list[tuple[Concept, _Document]] = []
    for doc in documents:
        concept = _concept(bundle.name, doc)
        read.append((concept, doc))
        if doc.name == "log.md":  # its entries as rows, and the log itself a note, one chunk a dated entry
            entries = _log_entries(bundle.name, doc)
            bundle.log_entries.extend(entries)
            for problem in log_date_problems(entries):
                bundle.build_issues.append(BuildIssue(bundle.name, doc.path, "warning", problem + " (OKF §9)"))
            folder = posixpath.basename(posixpath.dirname(doc.path))
            if concept.type is None:
                concept.type, concept.type_source = LOG_TYPE, "log"
            if concept.title == "log":
                concept.title = f"Log of {folder}" if folder else "Log"
        if doc.path == "index.md" and "okf_version" in doc.frontmatter:
            bundle.okf_version = str(doc.frontmatter["okf_version"])  # OKF §12
        bundle.concepts.append(concept)
        bundle.headings.extend(
            Heading(concept.id, level, text, slug(text), line)
            for level, text, line in doc.headings
        )
        _link(bundle, index, index_key, doc, concept)

    for concept in bundle.concepts:
        if concept.type is not None or concept.is_index:
            continue
        if bundle.okf_version is None:  # a plain vault: the folder says what a note is
            concept.type, concept.type_source = type_for(concept.path, DEFAULT_TYPES)[0], "folder"
        else:
            bundle.build_issues.append(
                BuildIssue(bundle.name, concept.path, "warning", "no `type` in frontmatter (OKF §4.1); indexed anyway")
            )
    describe_and_find_stubs(bundle.concepts, {c.id: d.facts for c, d in read})
    _derive_superseded_by(bundle)
    bundle.edges.extend(sequence_edges(bundle.concepts))
    if link_mentions:
        bundle.edges.extend(mention_edges(bundle.concepts, bundle.edges))
    return bundle


TEMPLATE_NOTES = 3  # a sentence or line in more notes than this (with different text) is template, not content
TEMPLATE_COPIES = 20  # notes sharing a text word for word, for it to be a template's placeholder and not a note's
STUB_WORDS = 4  # template lines and fewer words of its own than this: an unfilled template
DESCRIPTION_CHARS = 200
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_FIELD = re.compile(r"^[-+*_\s]*[\w'’ ]{1,40}?[*_]*:[*_]*\s")  # a `Key: value` line, Dataview's fields among them
_FENCE_MARK = re.compile(r"^[ \t]*(?:`{3,}|~{3,})")
_QUOTATION = re.compile(r"^[\"“”'‘’].*[\"“”'‘’]$")


CANDIDATES = 24  # sentences per note that may become its description (shortened as a description is)


def text_facts(text: str) -> dict[str, Any]:
    """What describe_and_find_stubs needs of one note, from its readable text alone, so that it is parsed once
    and kept in the parse cache (at 10k notes, reading every note's lines again took 1.8 s of each rebuild):
    `lines`, [digest, words, prose] of each line that could be content, `sentences`, [line index, sentence] of
    the first CANDIDATES prose sentences (those of `Key: value` lines after the others), `fields`, the digests of
    those `Key: value` lines, and the text's `digest`."""
    lines = _content_lines(text)
    plain = [(i, line) for i, (line, prose) in enumerate(lines) if prose and not _FIELD.match(line)]
    fields = [(i, line) for i, (line, prose) in enumerate(lines) if prose and _FIELD.match(line)]
    sentences = [[i, _shortened(s)] for i, line in plain + fields for s in _sentences([line])][:CANDIDATES]
    return {"lines": [[_digest(line), len(line.split()), prose] for line, prose in lines], "sentences": sentences,
            "fields": [_digest(line) for _, line in fields], "digest": _digest(text)}


def describe_and_find_stubs(concepts: list[Concept], facts: dict[str, dict[str, Any]]) -> None:
    """Give a note without a frontmatter description its first sentence of its own (OKF §4.1 makes
    description optional; retrieval and the context show one), and mark unfilled templates as stubs.
    `facts` are text_facts() by concept id.

    "Of its own": a sentence or line written the same way in more than TEMPLATE_NOTES notes whose text
    differs is a template's placeholder ("A script for the GM to read when the party arrive…"), not a
    description; identical notes (same title, same text: copies) do not make each other's sentences template
    text, while a template's copies under other names do.
    """
    notes = [c for c in concepts if not c.is_index]
    files_with: dict[str, set[str]] = defaultdict(set)
    for c in notes:
        identity = f"{c.title}\n{facts[c.id]['digest']}"
        for line_digest, _, _ in facts[c.id]["lines"]:
            files_with[line_digest].add(identity)
        for _, sentence in facts[c.id]["sentences"]:
            files_with[sentence].add(identity)
    template = {text for text, files in files_with.items() if len(files) > TEMPLATE_NOTES}
    fields = {field for c in notes for field in facts[c.id]["fields"]}  # "Status: Active" is each note's own news
    for c in notes:
        lines = facts[c.id]["lines"]
        own = [i for i, (line_digest, _, _) in enumerate(lines) if line_digest not in template]
        c.template_lines = frozenset(digest for digest, _, prose in lines if prose and digest in template)
        c.placeholder_lines = frozenset(digest for digest in c.template_lines
                                        if len(files_with[digest]) >= TEMPLATE_COPIES and digest not in fields)
        # a template's lines and (almost) nothing else, or no text at all; a short note of its own is no stub
        c.is_stub = sum(lines[i][1] for i in own) < STUB_WORDS and (len(own) < len(lines) or not own)
        if c.description is None:
            mine = set(own)
            sentence = next((s for i, s in facts[c.id]["sentences"] if i in mine and s not in template), None)
            if sentence:
                c.description, c.description_source = sentence, "body"
            else:  # nothing of its own to quote: say what and where it is, not a template's words
                c.description, c.description_source = _placement(c), "folder"
        inferred = json.dumps([c.type, c.type_source, c.description, c.is_stub, sorted(c.template_lines),
                               sorted(c.placeholder_lines)], ensure_ascii=False)
        c.content_hash = hashlib.sha256(f"{c.content_hash}:{inferred}".encode()).hexdigest()


def _digest(line: str) -> str:
    return hashlib.blake2b(line.encode(), digest_size=8).hexdigest()


def without_placeholders(text: str, placeholder_lines: frozenset[str]) -> str:
    """A chunk's text without the lines a template put in 20 or more notes word for word (placeholder_lines):
    77 Thellade districts read "Theme / *“Where sand meets stone, and roots grasp the sky.”*", the template's
    example, which the LLM took for each district's own theme; 69 deities "Use this section to summarize the
    deity's beliefs…". Code is kept as written."""
    if not placeholder_lines:
        return text
    masked = mask_code(text).split("\n")
    return "\n".join(line for line, outside in zip(text.split("\n"), masked)
                     if not (outside.strip() and _digest(line.strip()) in placeholder_lines))


def template_share(text: str, template_lines: frozenset[str]) -> float:
    """The share of a chunk's words in lines its note has from a template (describe_and_find_stubs): 1.0 for
    Thellade's session prep checklists ("- [x] Intro → Exploration → Conflict → Resolution flow sketched" in 9
    session notes), which the question's "session" made the nearest chunk of "What happened in session 7?"."""
    lines = _content_lines(text)
    words = sum(len(line.split()) for line, _ in lines)
    shared = sum(len(line.split()) for line, _ in lines if _digest(line) in template_lines)
    return round(shared / words, 2) if words else 0.0


def _placement(concept: Concept) -> str:
    """"Silverglade, a Place in Mwingu Isles, The Outcast Isles (an unfilled template)"."""
    folders = [folder_name(part) for part in concept.path.split("/")[:-1]][::-1][:2]
    where = f" in {', '.join(folders)}" if folders else ""
    kind = concept.type or "note"
    article = "an" if kind[:1].lower() in "aeiou" else "a"
    stub = " (an unfilled template)" if concept.is_stub else ""
    return f"{concept.title}, {article} {kind}{where}{stub}"


def _content_lines(text: str) -> list[tuple[str, bool]]:
    """A note's readable lines that could be content, stripped, each with whether it is prose (not code, not
    a table row): headings, fence lines and blank lines left out."""
    masked = mask_code(text).split("\n")
    return [(line.strip(), bool(outside.strip()) and "|" not in line)
            for line, outside in zip(text.split("\n"), masked)
            if line.strip() and not heading(line) and not _FENCE_MARK.match(line)]


def _sentences(lines: Iterable[str]) -> Iterator[str]:
    """Prose sentences of at least three words, markup stripped; epigraphs (a whole quotation) skipped.
    Split at sentence ends in one pass: a lazy `.+?[.!?]` search is quadratic on a long line without any."""
    for line in lines:
        text = without_marks(line).strip().lstrip("-+ ").strip()
        if len(text.split()) < 3 or _QUOTATION.match(text):
            continue
        for sentence in _SENTENCE_END.split(text):
            if len(sentence.split()) >= 3:
                yield sentence.strip()


def _shortened(sentence: str) -> str:
    return sentence if len(sentence) <= DESCRIPTION_CHARS else sentence[: DESCRIPTION_CHARS - 3].rstrip() + "..."


_ISO_DAY = re.compile(r"(?<!\d)\d{4}-\d{2}-\d{2}(?!\d)")
_NUMBER = re.compile(r"(?:(?<=^)|(?<=\s))-\d+|\d+")  # a leading minus only at the start or after a space: -33, not X-1
SERIES_MIN = 3


def sequence_edges(concepts: list[Concept]) -> list[Edge]:
    """`next` edges (kind `sequence`) along the series of a bundle: notes in one folder whose names carry a date
    or a number that orders them — session logs, chapters, daily notes, years. A time question can then fill
    the gap between two sessions it found (docs/design.md §5.9).

    In a folder, the series key is the ISO date in each name, else the first number that differs between the
    names and the numbers after it ("Campaign 3 - Session 08 - …": the session, not the campaign), one name to a
    key. At least SERIES_MIN notes, and half the folder, must carry it; or the folder holds just two notes,
    numbered one after the other (`_is_series`)."""
    by_folder: dict[str, list[Concept]] = {}
    for concept in concepts:
        if not concept.is_index:
            by_folder.setdefault(posixpath.dirname(concept.path), []).append(concept)
    edges = []
    for members in by_folder.values():
        keyed = _series(members)
        if _is_series(keyed, len(members)):
            ordered = [concept for _, concept in sorted(keyed, key=lambda pair: (pair[0], pair[1].path))]
            edges += [Edge(a.id, b.id, "next", "sequence") for a, b in itertools.pairwise(ordered)]
    return edges


def _is_series(keyed: list[tuple[Any, Concept]], folder_size: int) -> bool:
    """Enough of a folder carries its series key: SERIES_MIN notes and half the folder; or the folder holds two
    notes only, numbered one after the other: a campaign two sessions in ("Campaign 4 - Session 05 - …", "Campaign 4
    -Session 06 - …" in Thellade) is a series already, and a question about "their next session" or "session 6"
    found Group 3's session 6 instead. Two notes numbered 1 and 3, or two dated ones, say less."""
    if len(keyed) == folder_size == 2:
        (first, _), (second, _) = keyed
        return isinstance(first, tuple) and isinstance(second, tuple) and abs(first[0] - second[0]) == 1
    return len(keyed) >= max(SERIES_MIN, folder_size / 2)


def _series(members: list[Concept]) -> list[tuple[Any, Concept]]:
    """(key, concept) for the members of a folder that carry the folder's series key."""
    stems = {c.id: posixpath.splitext(posixpath.basename(c.path))[0] for c in members}
    days = {c.id: _ISO_DAY.findall(stems[c.id]) for c in members}
    if sum(bool(found) for found in days.values()) >= len(members) / 2:
        return [(days[c.id][0], c) for c in members if days[c.id]]
    numbers = {c.id: [int(n) for n in _NUMBER.findall(stems[c.id])] for c in members}
    for position in range(max(map(len, numbers.values()), default=0)):
        values = {found[position] for found in numbers.values() if len(found) > position}
        if len(values) > 1:  # the key: that number and those after it ("Session 05 - Part 2": (5, 2))
            keyed = [(tuple(numbers[c.id][position:]), c) for c in members if len(numbers[c.id]) > position]
            keys = [key for key, _ in keyed]
            # names that share their numbers do not order them: 13th Age's articles "5e or 13th Age…", "A 5th
            # Edition … Guide to 13th Age" and "13th Age and Eberron" are no series (a day may hold two notes)
            return keyed if len(set(keys)) == len(keys) else []
    return []


def mention_edges(concepts: list[Concept], edges: list[Edge]) -> list[Edge]:
    """Unlinked mentions of other concepts' titles and aliases, at word boundaries.

    A one-word name is skipped when the word also appears in lower case in the
    bundle's prose ("Time", "Home"): then it is a common word, not a name.
    """
    targets = [c for c in concepts if not c.is_index]
    bodies = {c.id: mask_code(c.body, links_live=True) for c in concepts}
    lower_words = Counter(w for body in bodies.values() for w in re.findall(r"\b[a-z]\w*\b", body))
    names = []
    common: set[tuple[str, ...]] = set()
    for c in targets:
        for name in [c.title, *c.aliases]:
            tokens = tuple(words(name))
            if len(tokens) == 1 and (lower_words[tokens[0]] >= 2 or len(tokens[0]) < 3):
                common.add(tokens)
            names.append((c.id, name))
    index = TitleIndex(names)
    linked = {(e.src, e.dst) for e in edges if e.dst}
    found = []
    for c in concepts:
        for target, name in index.find(bodies[c.id], skip=common):
            if target != c.id and (c.id, target) not in linked:
                found.append(Edge(c.id, target, "mentions", "mention", object_literal=name))
    return found


@dataclass
class _Document:
    path: str
    name: str
    frontmatter: dict[str, Any]
    source: SourceFile
    digest: str
    text: str = ""  # the body as a reader sees it (markdown.readable)
    facts: dict[str, Any] = field(default_factory=dict)  # text_facts(text)
    cache_key: str = ""
    raw_links: list[list[Any]] = field(default_factory=list)  # [kind, target, text, line]: as the parse cache keeps them
    headings: list[tuple[int, str, int]] = field(default_factory=list)
    parts: tuple[str, str, int] | None = None  # frontmatter text, body, body's first line: split_frontmatter's

    def _parts(self) -> tuple[str, str, int]:
        """The file split as written, read only when asked: what the parse cache keeps is all most files need (the
        raw body serves a log's entries, v0.1 citations, and lines of links resolved again)."""
        if self.parts is None:
            yaml_text, body, body_line = split_frontmatter(decode(self.source.read())[0])
            self.parts = (yaml_text or "", body, body_line)
        return self.parts

    @property
    def body(self) -> str:
        return self._parts()[1]

    @property
    def body_line(self) -> int:
        return self._parts()[2]

    @property
    def frontmatter_text(self) -> str:
        return self._parts()[0]

    @property
    def links(self) -> list[RawLink]:
        """The body's links, made only when they are resolved: a file whose links the last build resolved against
        the same files reuses its records, and 10k notes' 64k links cost 0.2 s to make for nothing."""
        return [RawLink(*link) for link in self.raw_links]

    def frontmatter_line(self, needle: str) -> int | None:
        """Line of the file where `needle` first appears in the frontmatter block."""
        at = self.frontmatter_text.find(needle)
        return None if at < 0 else self.frontmatter_text.count("\n", 0, at) + 2


def _id_key(path: str) -> str:
    """A path as a case-insensitive, normalisation-insensitive file system compares it."""
    return unicodedata.normalize("NFC", path).casefold()


def cache_key(source: SourceFile) -> str:
    """Where a file's parse results are kept: its path and the digest of its bytes."""
    return f"{PARSER_VERSION}:{source.path}:{source.digest}"


def _read_document(bundle: Bundle, source: SourceFile, cache: dict[str, Any]) -> _Document | None:
    """Decode and parse one file. What depends only on its bytes (frontmatter, links,
    headings, issues) comes from `cache` when the same bytes were parsed before: then
    the file is not even read, when the scan took its digest from the last build."""
    cached = cache.get(cache_key(source))
    issues: list[tuple[str, str]] = []
    name = posixpath.basename(source.path)
    parts = None
    if cached is None:
        data = source.read()
        if is_binary(data):
            bundle.build_issues.append(BuildIssue(bundle.name, source.path, "error", "binary content (NUL bytes) in a .md file; not indexed"))
            return None
        text, warning = decode(data)
        yaml_text, body, body_line = split_frontmatter(text)
        parts = (yaml_text or "", body, body_line)
        if not data.strip():
            issues.append(("warning", "empty file; indexed as a concept with no content"))
        if warning:
            issues.append(("warning", warning))
        frontmatter: dict[str, Any] = {}
        if yaml_text is not None:
            try:
                frontmatter = parse_frontmatter(yaml_text)
            except FrontmatterError as error:
                issues.append(("error", f"{error}; indexed with empty frontmatter"))
        if name == "index.md" and set(frontmatter) - {"okf_version"}:
            issues.append(("warning", "index.md carries frontmatter other than okf_version (OKF §8)"))
        cached = {
            "frontmatter": frontmatter,
            "issues": issues,
            "links": [[l.kind, l.target, l.text, l.line] for l in find_links(body, body_line)],
            "headings": headings(body, body_line),
            "text": readable(body, _text(frontmatter.get("title")) or name[:-3]),
        }
        cached["facts"] = text_facts(cached["text"])
        if not source.moved:
            cache[cache_key(source)] = cached
    for severity, message in cached["issues"]:
        bundle.build_issues.append(BuildIssue(bundle.name, source.path, severity, message))
    return _Document(
        source.path, name, cached["frontmatter"], source, source.digest, cached["text"], cached["facts"],
        cache_key(source), raw_links=cached["links"], headings=[tuple(h) for h in cached["headings"]], parts=parts,
    )


def _concept(bundle: str, doc: _Document) -> Concept:
    fm = doc.frontmatter
    is_index = doc.name == "index.md"
    stem = posixpath.basename(doc.path)[:-3]
    if is_index:
        folder = posixpath.basename(posixpath.dirname(doc.path)) or bundle
        title = _text(fm.get("title")) or (doc.headings[0][1] if doc.headings else folder)
    else:
        title = _text(fm.get("title")) or stem  # OKF §4.1: derive from the file name
    generated = fm.get("generated") if isinstance(fm.get("generated"), dict) else {}
    sources = fm.get("sources")
    if isinstance(sources, dict):
        sources = [sources]
    if not isinstance(sources, list):
        sources = _citations(doc)  # OKF §13.1: v0.1 `# Citations` list
    return Concept(
        id=f"{bundle}/{doc.path[:-3]}",
        bundle=bundle,
        path=doc.path,
        type=_text(fm.get("type")),
        type_source="frontmatter" if _text(fm.get("type")) else None,
        title=title,
        description=_text(fm.get("description")),
        description_source="frontmatter" if _text(fm.get("description")) else None,
        tags=[t.lstrip("#") for t in _string_list(fm.get("tags"))],
        aliases=_string_list(fm.get("aliases", fm.get("alias"))),
        body=doc.text,
        frontmatter=fm,
        sources=sources,
        status=(_text(fm.get("status")) or "stable").lower(),  # OKF §5.4
        stale_after=_text(fm.get("stale_after")),
        trust_tier=trust_tier(fm.get("verified")),
        generated_by=_text(generated.get("by")),
        generated_at=_text(generated.get("at")) or _text(fm.get("timestamp")),  # §13.1
        superseded_by=None,
        is_index=is_index,
        content_hash=hashlib.sha256(f"{PARSER_VERSION}:{doc.digest}".encode()).hexdigest(),
        properties=property_text(fm),
    )


# Frontmatter keys the concept row holds in columns of their own, and OKF's bookkeeping (§4.1, §5)
ROW_KEYS = {"title", "type", "description", "tags", "aliases", "alias", "sources", "status", "stale_after",
            "verified", "generated", "superseded_by", "supersedes", "timestamp", "okf_version"}
# A value that is a link, an address or a file ("z_Assets/Misc/PlaceholderImage.png"), not words
_NOT_WORDS = re.compile(r"\[\[|\]\(|^[a-z][a-z0-9+.-]*://|\.(?:png|jpe?g|gif|webp|svg|pdf|md|canvas|mp[34]|m4a|webm)$",
                        re.IGNORECASE)
_A_WORD = re.compile(r"[^\W\d_]{3}")


def property_text(frontmatter: dict[str, Any]) -> str:
    """The words a note keeps in its frontmatter values, a value a line, for the full-text index: Thellade writes an
    NPC's fears and mannerisms there ("Cleans her armor only with ash and holy oil—never with water"), a deity's
    `sanctification: Must Choose Unholy`, a month's `season: Summer`, and no list found them. Not the keys with
    columns of their own, nor bookkeeping; not links, addresses, paths, dates (the dated list reads those, §2.9) or
    values without a word; not nested mappings."""
    values = []
    for key, value in frontmatter.items():
        key = str(key)
        if key.casefold() in ROW_KEYS or BOOKKEEPING.search(key):
            continue
        for item in value if isinstance(value, list) else [value]:
            text = item.strip() if isinstance(item, str) else ""
            if _A_WORD.search(text) and not _NOT_WORDS.search(text) and not is_date_field(key, text):
                values.append(text)
    return "\n".join(values)


def trust_tier(verified: Any) -> str:
    """OKF §5.3: unverified, machine-confirmed, or human-reviewed.

    A bare mapping counts as a one-element list (§11); an entry with no `by`
    actor confirms nothing.
    """
    if isinstance(verified, (dict, str)):
        verified = [verified]
    if not isinstance(verified, list):
        return "unverified"
    actors = [
        (v.get("by") if isinstance(v, dict) else v) for v in verified
    ]
    actors = [a for a in actors if isinstance(a, str) and a.strip()]
    if any(a.strip().startswith("human:") for a in actors):
        return "human-reviewed"
    return "machine-confirmed" if actors else "unverified"


def _text(value: Any) -> str | None:
    if value is None or isinstance(value, (dict, list)):
        return None
    value = str(value).strip()
    return value or None


def _string_list(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [v.strip() for v in re.split(r"[,\n]", value) if v.strip()]
    if isinstance(value, list):
        return [str(v).strip() for v in value if v is not None and not isinstance(v, (dict, list)) and str(v).strip()]
    return [str(value)]


_URL = re.compile(r"https?://[^\s)>\]]+")


def _citations(doc: _Document) -> list[dict[str, str]]:
    """The URLs between a `Citations` heading and the next heading."""
    for at, (_, text, line) in enumerate(doc.headings):
        if text == "Citations":
            lines = doc.body.split("\n")
            end = doc.headings[at + 1][2] - doc.body_line if at + 1 < len(doc.headings) else len(lines)
            section = "\n".join(lines[line - doc.body_line + 1:end])
            return [{"resource": url} for url in _URL.findall(section)]
    return []


_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_BULLET = re.compile(r"^[ \t]*[*+-][ \t]+(.*)$")


def _log_entries(bundle: str, doc: _Document) -> list[LogEntry]:
    """OKF §9: `## YYYY-MM-DD` headings, newest first, each with bullet entries."""
    entries: list[LogEntry] = []
    dates = {line: text for level, text, line in doc.headings if level == 2}
    date: str | None = None
    for number, line in enumerate(doc.body.split("\n"), start=doc.body_line):
        if number in dates:
            date = dates[number]
            continue
        bullet = _BULLET.match(line)
        if bullet:
            entries.append(LogEntry(bundle, doc.path, date, bullet.group(1).strip(), number))
        elif line.startswith((" ", "\t")) and line.strip() and entries:
            entries[-1].text += " " + line.strip()
    return entries


def log_date_problems(entries: list[LogEntry]) -> list[str]:
    """Log headings that are not ISO dates, or dates not newest first (OKF §9)."""
    problems = []
    dates = []
    for entry in entries:
        if entry.date is None or not _ISO_DATE.match(entry.date):
            problems.append(f"line {entry.line}: log heading {entry.date!r} is not an ISO 8601 YYYY-MM-DD date")
        elif not dates or dates[-1] != entry.date:
            dates.append(entry.date)
    if dates != sorted(dates, reverse=True):
        problems.append("log dates are not newest first")
    return problems


_LINKED = (("edges", Edge), ("link_issues", LinkIssue), ("external_links", ExternalLink), ("build_issues", BuildIssue))


def _link(bundle: Bundle, index: PathIndex, index_key: str, doc: _Document, concept: Concept) -> None:
    """Resolve one document's links, or reuse the last build's records when neither the
    document nor anything its links resolve against (file set, aliases) has changed."""
    entry = bundle.parse_cache.get(doc.cache_key)
    linked = entry.get("linked") if entry else None
    if linked and linked["index"] == index_key:
        for name, record in _LINKED:
            getattr(bundle, name).extend(record(*values) for values in linked[name])
        bundle.links_reused.add(concept.id)
        return
    marks = {name: len(getattr(bundle, name)) for name, _ in _LINKED}
    _Linker(bundle, index, doc, concept).run()
    if entry is not None:
        entry["linked"] = {"index": index_key, **{
            name: [astuple(r) for r in getattr(bundle, name)[marks[name]:]] for name, _ in _LINKED}}
        bundle.cache_updates.add(doc.cache_key)


class _Linker:
    """Turns one document's links and link-valued frontmatter into edges and issues."""

    def __init__(self, bundle: Bundle, index: PathIndex, doc: _Document, concept: Concept):
        self.bundle, self.index, self.doc, self.concept = bundle, index, doc, concept
        self.seen: set[tuple] = set()

    def run(self) -> None:
        fm = self.doc.frontmatter
        for link in self.doc.links:
            self.body_link(link)
        for key, nested in PATH_FIELDS:
            value = fm.get(key)
            if nested:
                value = value.get(nested) if isinstance(value, dict) else None
            self.path_field(value, f"{key}.{nested}" if nested else key)
        sources = fm.get("sources")
        for source in sources if isinstance(sources, list) else [sources]:
            if isinstance(source, dict):
                self.path_field(source.get("resource"), "sources.resource")
        self.relations(fm.get("relations"))
        for key in ("superseded_by", "supersedes"):
            for value in _as_list(fm.get(key)):
                if isinstance(value, str):
                    self.reference(value, key, "supersedes", literal_ok=False)
        for key, value in fm.items():
            if key not in ("relations", "superseded_by", "supersedes"):
                self.frontmatter_wikilinks(key, value)

    # --- where links come from
    def body_link(self, link: RawLink) -> None:
        if link.kind in ("wikilink", "embed"):
            resolution = self.index.resolve_wikilink(self.doc.path, link.target)
        else:
            resolution = self.index.resolve_path(self.doc.path, link.target)
        embed = link.kind in ("embed", "image")
        kind = "embed" if embed else ("wikilink" if link.kind == "wikilink" else "link")
        self.add(resolution, link.target, "embeds" if embed else "links_to", kind, link.line, link.text)

    def path_field(self, value: Any, predicate: str) -> None:
        if not isinstance(value, str) or not value.strip():
            return
        if "[[" in value:
            return  # handled as a frontmatter wikilink
        resolution = self.index.resolve_path(self.doc.path, value)
        if resolution.status in ("dead", "escapes-bundle") and re.search(r"\s", value.strip()):
            return  # a scope descriptor such as "all queries in project X" (OKF §5.1)
        self.add(resolution, value, predicate, "property", self.doc.frontmatter_line(value.strip()), value)

    def relations(self, relations: Any) -> None:
        """Typed triples (seed 003 §4.3): {predicate, object, date, source}."""
        for relation in _as_list(relations):
            if not isinstance(relation, dict) or not relation.get("predicate"):
                self.bundle.build_issues.append(
                    BuildIssue(self.bundle.name, self.doc.path, "warning", f"relation without a predicate: {relation!r}")
                )
                continue
            obj = relation.get("object")
            self.reference(
                "" if obj is None else str(obj),
                str(relation["predicate"]),
                "relation",
                literal_ok=True,
                date=_text(relation.get("date")),
                source_id=_text(relation.get("source")),
            )

    def reference(self, value: str, predicate: str, kind: str, literal_ok: bool, **extra: Any) -> None:
        """An object that may be a wikilink, a path, or (for relations) a literal."""
        value = value.strip()
        links = find_wikilinks(value)
        if links:
            for link in links:
                resolution = self.index.resolve_wikilink(self.doc.path, link.target)
                line = self.doc.frontmatter_line(f"[[{link.target}")
                self.add(resolution, link.target, predicate, kind, line, link.text, keep_dead=True, **extra)
            return
        looks_like_path = value.startswith(("/", "./", "../")) or value.lower().endswith(".md")
        if literal_ok and not looks_like_path:
            self.edge(None, predicate, kind, object_literal=value, **extra)
            return
        resolution = self.index.resolve_path(self.doc.path, value)
        line = self.doc.frontmatter_line(value)
        self.add(resolution, value, predicate, kind, line, value, keep_dead=True, **extra)

    def frontmatter_wikilinks(self, key: str, value: Any) -> None:
        if isinstance(value, str):
            if "[[" not in value:
                return
            for link in find_wikilinks(value):
                resolution = self.index.resolve_wikilink(self.doc.path, link.target)
                line = self.doc.frontmatter_line(f"[[{link.target}")
                self.add(resolution, link.target, key, "property", line, link.text)
        elif isinstance(value, list):
            for item in value:
                self.frontmatter_wikilinks(key, item)
        elif isinstance(value, dict):
            for sub, item in value.items():
                self.frontmatter_wikilinks(f"{key}.{sub}", item)

    # --- what a resolution becomes
    def add(
        self,
        resolution: Resolution,
        target: str,
        predicate: str,
        kind: str,
        line: int | None,
        text: str,
        keep_dead: bool = False,
        **extra: Any,
    ) -> None:
        status = resolution.status
        if status == "external":
            self.bundle.external_links.append(ExternalLink(self.concept.id, target, text, predicate, line))
        elif status == "note":
            dst = f"{self.bundle.name}/{resolution.path[:-3]}"
            if dst != self.concept.id or kind in ("relation", "supersedes"):
                self.edge(dst, predicate, kind, anchor=resolution.anchor, line=line, text=text, **extra)
        elif status in ("file", "folder"):
            self.edge(None, predicate, kind, object_literal=resolution.path, line=line, **extra)
        elif status != "self":
            self.bundle.link_issues.append(
                LinkIssue(
                    self.concept.id,
                    self.bundle.name,
                    self.doc.path,
                    line,
                    target,
                    kind,
                    status,
                    list(resolution.candidates),
                )
            )
            if keep_dead:  # a typed fact survives a broken object (OKF §6.1)
                self.edge(None, predicate, kind, object_literal=target, line=line, **extra)

    def edge(self, dst: str | None, predicate: str, kind: str, **fields: Any) -> None:
        edge = Edge(self.concept.id, dst, predicate, kind, **fields)
        key = (edge.dst, edge.predicate, edge.kind, edge.anchor, edge.object_literal, edge.date, edge.source_id)
        if key not in self.seen:
            self.seen.add(key)
            self.bundle.edges.append(edge)


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def _derive_superseded_by(bundle: Bundle) -> None:
    """`superseded_by` on a concept, or another concept's `supersedes` pointing at it."""
    replaced: dict[str, str] = {}
    for edge in bundle.edges:
        if edge.kind == "supersedes" and edge.dst and edge.predicate == "superseded_by":
            replaced.setdefault(edge.src, edge.dst)
    for edge in bundle.edges:
        if edge.kind == "supersedes" and edge.dst and edge.predicate == "supersedes":
            replaced.setdefault(edge.dst, edge.src)
    for concept in bundle.concepts:
        concept.superseded_by = replaced.get(concept.id)
