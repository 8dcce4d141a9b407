"""Split a concept into heading-shaped chunks for embedding.

A whole-note embedding of a real vault note sees mostly plugin markup in its
first 256 tokens (thellade NOTES.md), so every note is cut at its headings into
pieces of at most ~200 words: a session log's scenes, an NPC's sections. Each
chunk's embedded text carries the concept's title and description, so a chunk
about "Appearance" still knows whose appearance it is. The text cut is the
note's readable text (markdown.readable: plugin markup already left out).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from .markdown import fences, heading, without_marks

MAX_WORDS = 200
_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})")


@dataclass(frozen=True)
class Chunk:
    seq: int
    heading: str | None
    text: str


HEADING_PATH = " > "  # between a chunk's parent heading and its own: "Heavy Blows > Epic Feat"


def split_into_chunks(text: str, max_words: int = MAX_WORDS, title: str | None = None) -> list[Chunk]:
    """Cut a note's readable text at its headings (outside code), then into pieces of at most `max_words`. A
    chunk's heading is its parent heading and its own ("Heavy Blows > Epic Feat": 13th Age writes an "Epic Feat"
    under each of a class's talents), unless the parent is a level-1 heading or the note's title."""
    sections: list[tuple[str | None, list[str]]] = [(None, [])]
    code = [(block.start, block.end) for block in fences(text)]
    open_headings: list[tuple[int, str]] = []  # (level, text) of the headings the line is under
    offset = 0
    for line in text.split("\n"):
        start, offset = offset, offset + len(line) + 1
        found = None if any(a <= start < b for a, b in code) else heading(line)
        if found:
            level, written = found[0], _clean_heading(found[1])
            while open_headings and open_headings[-1][0] >= level:
                open_headings.pop()
            parent_level, parent = open_headings[-1] if open_headings else (0, "")
            open_headings.append((level, written))
            named = parent_level > 1 and parent.casefold() != (title or "").casefold()
            sections.append((f"{parent}{HEADING_PATH}{written}" if named else written, []))
        else:
            sections[-1][1].append(line)

    chunks: list[Chunk] = []
    for path, lines in sections:
        for piece in _pieces("\n".join(lines), max_words):
            chunks.append(Chunk(len(chunks), path, piece))
    return chunks or [Chunk(0, None, "")]  # still findable by title and description


def own_heading(path: str | None) -> str:
    """A chunk's own heading, without its parent's: what an `#anchor` names."""
    return (path or "").rpartition(HEADING_PATH)[2]


def embedding_text(title: str, description: str | None, heading: str | None, text: str) -> str:
    """What is embedded for a chunk: the concept's title and description, the heading, the text."""
    return "\n".join(part for part in (title, description, heading, text) if part)


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _clean_heading(text: str) -> str:
    return without_marks(re.sub(r"<[^>]*>", "", text)).strip()


def _pieces(text: str, max_words: int) -> list[str]:
    """Paragraphs packed greedily into pieces of at most `max_words` words; a code block cut in two is closed
    and reopened, so each piece reads as what it is."""
    parts = [part.rstrip() for paragraph in re.split(r"\n[ \t]*\n", text)
             for part in _parts(paragraph.strip("\n"), max_words)]  # rstrip only: a code line's indent is its meaning
    return _fences_closed(_packed(parts, max_words, "\n\n", cut=False))


def _parts(paragraph: str, max_words: int) -> list[str]:
    """An over-long paragraph cut at its lines, as it is written (a table's or a statblock's lines, not one long
    line of words), each part of a table led by the table's header row."""
    if len(paragraph.split()) <= max_words:
        return [paragraph]
    lines = paragraph.split("\n")
    header = lines[0] if lines[0].lstrip().startswith("|") and len(lines) > 1 else None
    return _packed(lines, max_words, "\n", lead=header)


def _packed(units: list[str], max_words: int, joiner: str, lead: str | None = None, cut: bool = True) -> list[str]:
    """Units (paragraphs or lines) packed greedily, in order, into pieces of at most `max_words` words, joined by
    `joiner`; with `cut`, a unit longer than that is cut at word boundaries (else it is a piece of its own: a
    table's part is a few words over with its header), and a piece that continues a table starts with `lead` (its
    header)."""
    pieces: list[str] = []
    current: list[str] = []
    count = 0
    for unit in units:
        words = unit.split()
        if not words:
            continue
        while cut and len(words) > max_words:
            if current:
                pieces.append(joiner.join(current))
                current, count = [], 0
            pieces.append(" ".join(words[:max_words]))
            words = words[max_words:]
            unit = " ".join(words)
        if count + len(words) > max_words and current:
            pieces.append(joiner.join(current))
            current, count = ([lead], len(lead.split())) if lead and _continues(unit, lead) else ([], 0)
        current.append(unit)
        count += len(words)
    if current:
        pieces.append(joiner.join(current))
    return pieces


def _continues(unit: str, lead: str) -> bool:
    """Whether a piece opening with `unit` continues the table `lead` heads: a row of it, not the lines written
    after the table in the same paragraph (13th Age's chaos mage: its warp table, then its feats)."""
    return unit != lead and unit.lstrip().startswith("|")


def _fences_closed(pieces: list[str]) -> list[str]:
    """A fenced block that runs from one piece into the next is closed at the end of the first and reopened,
    with its info string, at the start of the next."""
    out = []
    opener: str | None = None  # the opening line of the fence open at the end of the pieces so far
    for piece in pieces:
        reopened = f"{opener}\n{piece}" if opener else piece
        for line in piece.split("\n"):
            fence = _FENCE.match(line)
            if fence and opener is None:
                opener = line.strip()
            elif fence and opener and line.strip() == fence.group(1) and fence.group(1)[0] == opener[0]:
                opener = None
        out.append(f"{reopened}\n{_FENCE.match(opener).group(1)}" if opener else reopened)
    return out
