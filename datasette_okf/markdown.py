"""Markdown at the level of text: slugs, code, headings, bytes to text.

Each is defined once because the modules that use them must agree: a link's
`#anchor` is checked against the headings the build lists (lint, converter,
retrieval), chunks are named by those headings, and the converter writes the
text the build reads.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_NOT_WORD = re.compile(r"[\W_]+")
_FENCE_OPEN = re.compile(r"^((?:[ \t]*>)*[ \t]{0,3})(`{3,}|~{3,})([^\n]*)$", re.MULTILINE)
_UNQUOTED_LINE = re.compile(r"^(?![ \t]*>)", re.MULTILINE)
_COMMENT = re.compile(r"<!--.*?-->|%%.*?%%", re.DOTALL)
_BACKTICKS = re.compile(r"`+")
_NOT_NEWLINE = re.compile(r"[^\n]+")
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")
_HEADING = re.compile(r"^[ \t]{0,3}(#{1,6})[ \t]+(.+?)[ \t#]*$", re.MULTILINE)


def slug(text: str) -> str:
    """An anchor's comparable form: `#The Drowned Steps`, `#the-drowned-steps` and `#the_drowned_steps` agree."""
    return _NOT_WORD.sub("-", text.casefold()).strip("-")


@dataclass(frozen=True)
class Fence:
    """A fenced code block: `text[start:end]` from its opening line to its closing line, or to where
    the callout it sits in ends, or to the end of the text. `info` is what follows the opening fence."""

    start: int
    end: int
    info: str


def fences(text: str) -> list[Fence]:
    """Every fenced code block, in order, including those inside callouts and blockquotes."""
    found: list[Fence] = []
    pos = 0
    while opening := _FENCE_OPEN.search(text, pos):
        fence = opening.group(2)
        limit = len(text)
        if ">" in opening.group(1):  # a fence in a callout ends with the callout
            outside = _UNQUOTED_LINE.search(text, opening.end() + 1)
            limit = outside.start() if outside else limit
        close = re.compile(
            rf"^(?:[ \t]*>)*[ \t]{{0,3}}{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$", re.MULTILINE
        ).search(text, opening.end(), limit)
        end = close.end() if close else limit
        found.append(Fence(opening.start(), end, opening.group(3).strip()))
        pos = end
    return found


def mask_code(text: str) -> str:
    """Blank out fenced code, inline code spans and comments, keeping offsets and lines."""
    masked = _mask_blocks(text)
    out = list(masked)
    runs = list(_BACKTICKS.finditer(masked))
    i = 0
    while i < len(runs):
        run = runs[i]
        closing = next(
            (j for j in range(i + 1, len(runs)) if len(runs[j].group()) == len(run.group())),
            None,
        )
        if closing is None:
            i += 1
            continue
        start, end = run.start(), runs[closing].end()
        out[start:end] = blank(masked[start:end])
        i = closing + 1
    return "".join(out)


def blank(text: str) -> str:
    """`text` with every character but newlines a space: masked, with its offsets and lines kept."""
    return _NOT_NEWLINE.sub(lambda run: " " * len(run.group()), text)


def drop_comments(text: str) -> str:
    """Text with `<!-- -->` and `%% %%` comments removed (not blanked)."""
    return _COMMENT.sub("", text)


def heading(line: str) -> tuple[int, str] | None:
    """(level, text) when one line is an ATX heading."""
    match = _HEADING.match(line)
    return (len(match.group(1)), match.group(2).strip()) if match else None


def headings(text: str, first_line: int = 1) -> list[tuple[int, str, int]]:
    """(level, text, line) of every ATX heading outside fenced code and comments.

    Code spans are not masked here: a heading keeps the code written in it
    (## The `Gate` Spell), and a stray backtick cannot hide the headings after it.
    """
    return [
        (*found, number)
        for number, line in enumerate(_mask_blocks(text).split("\n"), start=first_line)
        if (found := heading(line))
    ]


def is_binary(data: bytes) -> bool:
    """NUL bytes near the start of a file that is not UTF-16: not text at all."""
    return b"\0" in data[:8192] and not data.startswith(_UTF16_BOMS)


def decode(data: bytes) -> tuple[str, str | None]:
    """A file's text as the build reads it (newlines as `\\n`) and, when it was not clean UTF-8,
    a warning saying how it was read."""
    text, warning = _decode(data)
    return text.replace("\r\n", "\n").replace("\r", "\n"), warning


def _decode(data: bytes) -> tuple[str, str | None]:
    if data.startswith(_UTF16_BOMS):
        warning = "file is UTF-16, not UTF-8 (OKF §4); read as UTF-16"
        try:
            return data.decode("utf-16"), warning
        except UnicodeDecodeError as error:  # odd length, lone surrogate
            return data.decode("utf-16", "replace"), f"{warning}, invalid {_byte(data, error)} replaced"
    try:
        return data.decode("utf-8-sig"), None
    except UnicodeDecodeError as error:
        where = _byte(data, error)
    try:
        return data.decode("cp1252"), f"not valid UTF-8 ({where}); read as Windows-1252"
    except UnicodeDecodeError:
        return data.decode("latin-1"), f"not valid UTF-8 ({where}); read as Latin-1"


def _byte(data: bytes, error: UnicodeDecodeError) -> str:
    return f"byte 0x{data[error.start]:02x} at offset {error.start}"


def _mask_blocks(text: str) -> str:
    """Fenced code, then comments outside it, blanked."""
    out = list(text)
    for fence in fences(text):
        out[fence.start:fence.end] = blank(text[fence.start:fence.end])
    return _COMMENT.sub(lambda comment: blank(comment.group()), "".join(out))
