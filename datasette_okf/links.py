"""Find links in markdown and resolve them inside a bundle.

Two halves, both pure: `find_links` scans text (markdown links, reference links,
autolinks, Obsidian wikilinks and embeds; nothing inside code or comments) and
`PathIndex` resolves a target against the set of files in one bundle. Nothing
here touches the file system, so nothing here can read outside a bundle.
"""

from __future__ import annotations

import bisect
import posixpath
import re
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from urllib.parse import unquote

from .markdown import blank, mask_code, shown_text


@dataclass(frozen=True)
class RawLink:
    """A link as written. `kind`: link | image | wikilink | embed | autolink."""

    kind: str
    target: str
    text: str
    line: int


@dataclass(frozen=True)
class Resolution:
    """Where a link points.

    status: note | file | folder | external | self | dead | missing-file |
    ambiguous | escapes-bundle. `path` is bundle-relative (posix) for note,
    file and folder; `candidates` lists every match for ambiguous.
    """

    status: str
    path: str | None = None
    anchor: str | None = None
    candidates: tuple[str, ...] = field(default=())


# ---------------------------------------------------------------- scanning

_WIKILINK = re.compile(r"(!?)\[\[([^\[\]\n]+?)\]\]")
_LINK_TEXT = r"(?:[^\[\]\\\n]|\\.|\[[^\[\]\n]*\])*"
_DESTINATION = r"<[^<>\n]*>|[^\s()<>]*(?:\([^\s()]*\)[^\s()<>]*)*"
_TITLE = r"\"[^\"]*\"|'[^']*'|\([^()]*\)"
_INLINE = re.compile(
    rf"(!?)\[({_LINK_TEXT})\]\(\s*({_DESTINATION})(?:\s+(?:{_TITLE}))?\s*\)"
)
_REF_DEF = re.compile(
    rf"^[ \t]{{0,3}}\[([^\]\n^][^\]\n]*)\]:[ \t]*(<[^<>\n]*>|\S+)(?:[ \t]+(?:{_TITLE}))?[ \t]*$",
    re.MULTILINE,
)
_REF_USE = re.compile(rf"(!?)\[({_LINK_TEXT})\](?:\[([^\[\]\n]*)\])?(?![(:\[])")
_AUTOLINK = re.compile(r"<([A-Za-z][A-Za-z0-9+.\-]{1,31}:[^\s<>]*)>")
SCHEME = re.compile(r"^(?:[A-Za-z][A-Za-z0-9+.\-]{1,31}:|//)")


class _Lines:
    def __init__(self, text: str, first_line: int):
        self.starts = [m.end() for m in re.finditer("\n", text)]
        self.first = first_line

    def at(self, offset: int) -> int:
        return self.first + bisect.bisect_right(self.starts, offset)


def _wikilinks(text: str, lines: _Lines) -> Iterator[tuple[int, RawLink]]:
    for match in _WIKILINK.finditer(text):
        inner = match.group(2).replace("\\|", "|")
        kind = "embed" if match.group(1) else "wikilink"
        link = RawLink(kind, inner.partition("|")[0].strip(), shown_text(inner), lines.at(match.start()))
        yield match.start(), link


def wikilink_spans(text: str) -> list[tuple[int, int, RawLink]]:
    """(start, end, link) of each wikilink or embed outside code, for rewriting them in place."""
    masked = mask_code(text, links_live=True)
    lines = _Lines(masked, 1)
    return [(start, _WIKILINK.match(masked, start).end(), link) for start, link in _wikilinks(masked, lines)]


def find_wikilinks(text: str, first_line: int = 1) -> list[RawLink]:
    """Obsidian `[[target#anchor|shown]]` links and `![[embeds]]` in plain text."""
    return [link for _, link in _wikilinks(text, _Lines(text, first_line))]


def find_links(body: str, first_line: int = 1) -> list[RawLink]:
    """Every link in a markdown body, in order, outside code spans, fences (but LINKED_BLOCKS) and comments."""
    masked = mask_code(body, links_live=True)
    lines = _Lines(masked, first_line)
    found = list(_wikilinks(masked, lines))
    masked = _WIKILINK.sub(lambda m: blank(m.group()), masked)

    definitions: dict[str, str] = {}
    for match in _REF_DEF.finditer(masked):
        label = _label(match.group(1))
        definitions.setdefault(label, _destination(match.group(2)))
    masked = _REF_DEF.sub(lambda m: blank(m.group()), masked)

    def scan(text: str, offset: int) -> Iterator[tuple[int, RawLink]]:
        for match in _INLINE.finditer(text):
            kind = "image" if match.group(1) else "link"
            start = offset + match.start()
            yield start, RawLink(kind, _destination(match.group(3)), match.group(2), lines.at(start))
            yield from scan(match.group(2), offset + match.start(2))
        rest = _INLINE.sub(lambda m: blank(m.group()), text)
        for match in _REF_USE.finditer(rest):
            label = _label(match.group(3) or match.group(2))
            if label in definitions:
                kind = "image" if match.group(1) else "link"
                start = offset + match.start()
                yield start, RawLink(kind, definitions[label], match.group(2), lines.at(start))
        for match in _AUTOLINK.finditer(rest):
            start = offset + match.start()
            yield start, RawLink("autolink", match.group(1), match.group(1), lines.at(start))

    found.extend(scan(masked, 0))
    found.sort(key=lambda pair: pair[0])
    return [link for _, link in found]


def _label(label: str) -> str:
    return " ".join(label.split()).casefold()


def _destination(raw: str) -> str:
    raw = raw.strip()
    return raw[1:-1].strip() if raw.startswith("<") and raw.endswith(">") else raw


def markdown_link(text: str, target: str) -> str:
    """`[text](target)` that find_links reads back whole: a bracket in the text or a space or
    parenthesis in the target would end it early (what derived files and filed-back pages write)."""
    shown = text.replace("[", "(").replace("]", ")")
    return f"[{shown}]({target.replace(' ', '%20').replace('(', '%28').replace(')', '%29')})"


# --------------------------------------------------------------- resolving


class PathIndex:
    """The files of one bundle, for resolving link targets without touching the disk.

    `files` are bundle-relative posix paths; `aliases` maps a markdown path to
    the `aliases:` of its frontmatter (Obsidian resolves wikilinks through them).
    """

    def __init__(self, files: Iterable[str], aliases: dict[str, list[str]] | None = None):
        self.files = set(files)
        self.lower: dict[str, list[str]] = defaultdict(list)
        self.by_name: dict[str, list[str]] = defaultdict(list)
        self.folders: set[str] = set()
        for path in sorted(self.files):
            self.lower[path.casefold()].append(path)
            self.by_name[posixpath.basename(path).casefold()].append(path)
            folder = posixpath.dirname(path)
            while folder and folder not in self.folders:
                self.folders.add(folder)
                folder = posixpath.dirname(folder)
        self.folders_lower = {f.casefold(): f for f in sorted(self.folders, reverse=True)}
        self._memo: dict[str, Resolution] = {}  # resolve_path by (folder, target): links repeat
        self.by_alias: dict[str, list[str]] = defaultdict(list)
        for path, names in (aliases or {}).items():
            for name in names:
                if path not in self.by_alias[name.casefold()]:
                    self.by_alias[name.casefold()].append(path)

    # Markdown links and path-valued frontmatter (OKF §6.1, §6.2)
    def resolve_path(self, source: str, target: str) -> Resolution:
        """Resolve a markdown link or path field written in `source`.

        `/x.md` is bundle-absolute; anything else is tried against the source's
        folder first and then the bundle root (vaults and the acme_retail
        sample write root-relative paths without the leading slash).
        """
        target = target.strip()
        memo_key = (target if target.startswith("/") else posixpath.dirname(source) + "\0" + target)
        cached = self._memo.get(memo_key)
        if cached is not None:
            return cached if cached.status != "self" else Resolution("self", source, cached.anchor)
        resolution = self._resolve_path(source, target)
        self._memo[memo_key] = resolution
        return resolution

    def _resolve_path(self, source: str, target: str) -> Resolution:
        if SCHEME.match(target):
            return Resolution("external", target)
        path, _, anchor = target.partition("#")
        path = unquote(path.partition("?")[0]).replace("\\", "/")
        anchor = unquote(anchor) or None
        if not path:
            return Resolution("self", source, anchor)
        if path.startswith("/"):
            tries = [path.lstrip("/")]
        else:
            tries = [posixpath.join(posixpath.dirname(source), path), path]
        for number, candidate in enumerate(tries):
            normal = posixpath.normpath(candidate) if candidate else "."
            if normal == ".." or normal.startswith("../"):
                if number == 0:
                    return Resolution("escapes-bundle", None, anchor)
                continue
            found = self._lookup(normal, folder_link=path.endswith("/"))
            if found:
                return Resolution(found.status, found.path, anchor, found.candidates)
        # a missing image or PDF is a missing attachment, as for wikilinks, not a dead note link
        return Resolution("missing-file" if _has_other_extension(path.casefold()) else "dead", None, anchor)

    def _lookup(self, normal: str, folder_link: bool) -> Resolution | None:
        if normal == ".":
            normal = ""
        if not folder_link:
            for name in (normal, normal + ".md"):
                exact = self._one(name)
                if exact:
                    return exact
        folder = self.folders_lower.get(normal.casefold()) if normal else ""
        if folder is not None:
            index = self._one(posixpath.join(folder, "index.md"))
            return index or Resolution("folder", folder or ".")
        return None

    def _one(self, path: str) -> Resolution | None:
        if path in self.files:
            matches = [path]
        else:
            matches = self.lower.get(path.casefold(), [])
        if not matches:
            return None
        if len(matches) > 1:
            return Resolution("ambiguous", None, None, tuple(matches))
        return Resolution(_file_status(matches[0]), matches[0])

    # Obsidian wikilinks
    def resolve_wikilink(self, source: str, target: str) -> Resolution:
        """Resolve `[[target]]` by path, then path suffix, then file name, then alias.

        Case-insensitive, as Obsidian is. Of several matches at the first step that
        matches, the one in the linking note's own folder is the link, as in Obsidian
        (13th Age's drow in Humanoid/Drow/ write [[Drow]], and Beast/Drow/Drow.md exists
        too); otherwise it is ambiguous: every candidate is kept, none is guessed.
        """
        path, _, anchor = target.partition("#")
        anchor = anchor.strip() or None
        name = path.strip().replace("\\", "/").lstrip("/")
        if not name:
            return Resolution("self", source, anchor)
        if SCHEME.match(name):
            return Resolution("external", target)
        key = name.casefold()
        is_note = not _has_other_extension(key)
        if is_note and key.endswith(".md"):
            key = key[:-3]
        wanted = key + ".md" if is_note else key
        base = posixpath.basename(wanted)
        steps = [
            lambda: self.lower.get(wanted, []),
            lambda: [p for p in self.by_name.get(base, []) if p.casefold().endswith("/" + wanted)],
            lambda: self.by_name.get(base, []) if "/" not in key else [],
            lambda: self.by_alias.get(name.casefold(), []) if is_note else [],
        ]
        folder = posixpath.dirname(source)
        for step in steps:
            matches = step()
            if len(matches) > 1:
                matches = [p for p in matches if posixpath.dirname(p) == folder] or matches
            if len(matches) == 1:
                return Resolution(_file_status(matches[0]), matches[0], anchor)
            if matches:
                return Resolution("ambiguous", None, anchor, tuple(sorted(matches)))
        return Resolution("dead" if is_note else "missing-file", None, anchor)


def _file_status(path: str) -> str:
    return "note" if path.casefold().endswith(".md") else "file"


_EXTENSION = re.compile(r"\.([a-z0-9]{1,8})$")


def _has_other_extension(name: str) -> bool:
    """`map.png` names an attachment; `Note`, `Note.md` and `Mr. Smith` name notes."""
    match = _EXTENSION.search(name)
    return bool(match) and match.group(1) != "md" and not match.group(1).isdigit() and (
        match.group(1) in ATTACHMENT_EXTENSIONS
    )


ATTACHMENT_EXTENSIONS = frozenset(
    ["png", "jpg", "jpeg", "gif", "bmp", "svg", "webp", "avif", "tif", "tiff", "ico", "pdf", "mp3", "wav", "ogg", "m4a", "flac", "webm", "mp4", "mov", "mkv", "avi", "canvas", "excalidraw", "txt", "csv", "tsv", "json", "yaml", "yml", "xml", "html", "htm", "py", "sql", "js", "ts", "css", "zip", "gz", "tar", "docx", "xlsx", "pptx", "epub"]
)
