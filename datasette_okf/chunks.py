"""Split a concept into heading-shaped chunks for embedding.

A whole-note embedding of a real vault note sees mostly plugin markup in its
first 256 tokens (thellade NOTES.md), so every note is cut at its headings into
pieces of at most ~200 words: a session log's scenes, an NPC's sections. Each
chunk's embedded text carries the concept's title and description, so a chunk
about "Appearance" still knows whose appearance it is. Obsidian plugin blocks
(dataview, meta-bind, buttons…) carry no prose and are left out; other fenced
code (a monster's statblock, a query) is kept.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from .markdown import drop_comments, fences, heading

MAX_WORDS = 200

_LANGUAGE = re.compile(r"[\w.+-]*")  # of a fence's info string: `dataview` in "```dataview"
PLUGIN_BLOCKS = frozenset(
    ["dataview", "dataviewjs", "meta-bind", "meta-bind-js-view", "meta-bind-button", "button", "tasks", "query", "leaflet", "tracker", "chart", "mermaid", "base", "contributions"]
)
_PLUGIN_INLINE = re.compile(r"`(?:INPUT|VIEW|BUTTON)\[[^`]*`|`=[^`]*`|`\$=[^`]*`")
# Infobox scaffolding: table rules, empty rows, "**Key** |  |" rows with no value.
_CALLOUT = re.compile(r"^([>\s]*)\[![^\]]*\][-+]?[ \t]*")
_QUOTED_HEADING = re.compile(r"^([>\s]*>[>\s]*)#{1,6}[ \t]*")
_EMPTY_ROW = re.compile(r"^[>\s]*(?:\*\*[^*|]*\*\*|[^|]{0,40})?\s*\|[\s|:-]*$")


@dataclass(frozen=True)
class Chunk:
    seq: int
    heading: str | None
    text: str


def split_into_chunks(body: str, max_words: int = MAX_WORDS) -> list[Chunk]:
    """Cut a markdown body at its headings, then into pieces of at most `max_words`."""
    sections: list[tuple[str | None, list[str]]] = [(None, [])]
    text = drop_comments(body)
    blocks = iter(fences(text))
    block = next(blocks, None)
    offset = 0
    for line in text.split("\n"):
        start, offset = offset, offset + len(line) + 1
        while block is not None and block.end <= start:
            block = next(blocks, None)
        if block is not None and block.start <= start:  # fenced code: kept, unless a plugin's
            if _LANGUAGE.match(block.info).group().lower() not in PLUGIN_BLOCKS:
                sections[-1][1].append(line)
            continue
        found = heading(line)
        if found:
            sections.append((_clean_heading(found[1]), []))
            continue
        line = _QUOTED_HEADING.sub(r"\1", _CALLOUT.sub(r"\1", _PLUGIN_INLINE.sub("", line)))
        if not _EMPTY_ROW.match(line):
            sections[-1][1].append(line)

    chunks: list[Chunk] = []
    for title, lines in sections:
        for piece in _pieces("\n".join(lines), max_words):
            chunks.append(Chunk(len(chunks), title, piece))
    return chunks or [Chunk(0, None, "")]  # still findable by title and description


def embedding_text(title: str, description: str | None, heading: str | None, text: str) -> str:
    """What is embedded for a chunk: the concept's title and description, the heading, the text."""
    return "\n".join(part for part in (title, description, heading, text) if part)


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _clean_heading(text: str) -> str:
    return re.sub(r"<[^>]*>|[*_`]+", "", text).strip()


def _pieces(text: str, max_words: int) -> list[str]:
    """Paragraphs packed greedily into pieces of at most `max_words` words."""
    pieces: list[str] = []
    current: list[str] = []
    count = 0
    for paragraph in re.split(r"\n[ \t>]*\n", text):
        words = paragraph.split()
        lines = [line for line in paragraph.split("\n") if line.strip()]
        if not words or (
            all(line.lstrip().startswith(">") for line in lines)
            and not any(len(line.replace(">", " ").split()) >= 3 for line in lines)
        ):
            continue  # empty, or a callout of bare labels (infobox scaffolding)
        while len(words) > max_words:  # an over-long paragraph is cut at word boundaries
            if current:
                pieces.append("\n\n".join(current))
                current, count = [], 0
            pieces.append(" ".join(words[:max_words]))
            words = words[max_words:]
            paragraph = " ".join(words)
        if count + len(words) > max_words and current:
            pieces.append("\n\n".join(current))
            current, count = [], 0
        current.append(paragraph.strip())
        count += len(words)
    if current:
        pieces.append("\n\n".join(current))
    return pieces
