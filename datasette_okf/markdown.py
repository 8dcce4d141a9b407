"""Markdown at the level of text: slugs, code, headings, bytes to text.

Each is defined once because the modules that use them must agree: a link's
`#anchor` is checked against the headings the build lists (lint, converter,
retrieval), chunks are named by those headings, and the converter writes the
text the build reads.
"""

from __future__ import annotations

import html
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


def mask_code(text: str, links_live: bool = False) -> str:
    """Blank out fenced code, inline code spans and comments, keeping offsets and lines. With `links_live`,
    the inside of a fence a plugin renders with its links live (LINKED_BLOCKS) is kept: for finding links."""
    masked = _mask_blocks(text, links_live)
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


_MARKS = re.compile(r"[*`]+|(?<!\w)_+|_+(?!\w)")


def without_marks(text: str) -> str:
    """Text with emphasis and code marks out, but an underscore inside a word is the word's own: CommonMark never
    reads `page_location` as emphasis, and "pagelocation" is a column no note has."""
    return _MARKS.sub("", text)


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


def _mask_blocks(text: str, links_live: bool = False) -> str:
    """Fenced code, then comments outside it, blanked (with `links_live`, only the fence lines of a
    LINKED_BLOCKS fence)."""
    out = list(text)
    for fence in fences(text):
        if links_live and _language(fence) in LINKED_BLOCKS:
            inside = text.find("\n", fence.start, fence.end) + 1 or fence.end
            closing = text.rfind("\n", inside, fence.end) + 1 or fence.end
            closing = closing if text[closing:fence.end].lstrip(" \t>").startswith(("```", "~~~")) else fence.end
            out[fence.start:inside] = blank(text[fence.start:inside])
            out[closing:fence.end] = blank(text[closing:fence.end])
            continue
        out[fence.start:fence.end] = blank(text[fence.start:fence.end])
    return _COMMENT.sub(lambda comment: blank(comment.group()), "".join(out))


def _language(fence: Fence) -> str:
    """A fence's language: `dataview` for "```dataview", lower case."""
    return _LANGUAGE.match(fence.info).group().lower()


# --- Readable text: what a reader of the rendered note sees, for chunks, descriptions, FTS and the LLM ---

# Fenced blocks written for a plugin, not a reader: a query, a script, a widget, a frame.
PLUGIN_BLOCKS = frozenset([
    "dataview", "dataviewjs", "meta-bind", "meta-bind-js-view", "meta-bind-button", "meta-bind-embed", "button",
    "tasks", "query", "leaflet", "tracker", "chart", "mermaid", "base", "bases", "contributions", "custom-frames",
    "templater", "js-engine", "iframe", "statblock-render",
])
# Fenced blocks a plugin renders with their links live: Fantasy Statblocks renders the markdown in a
# `statblock`'s fields, so `[[Spider-Mount|Spider Mount]]` there is a link in Obsidian (the 13th Age SRD vault:
# 633 statblocks, 90 of them linking the rules and monsters they use). Their links are links; the rest is code.
LINKED_BLOCKS = frozenset(["statblock"])
_LANGUAGE = re.compile(r"[\w.+-]*")  # of a fence's info string: `dataview` in "```dataview"
_RAW_HTML_BLOCK = re.compile(r"<(script|style|iframe|svg)\b.*?(?:</\1\s*>|\Z)", re.DOTALL | re.IGNORECASE)
_TEMPLATER = re.compile(r"<%.*?%>", re.DOTALL)
_QUOTE = re.compile(r"^[ \t]*(?:>[ \t]?)+")
_CALLOUT_MARK = re.compile(r"^\[![^\]\n]*\][-+]?[ \t]*")
# Meta Bind (INPUT/VIEW/BUTTON, in backticks or bare) and Dataview inline queries (`= expr`, `$= js`).
_PLUGIN_INLINE = re.compile(
    r"`(?:INPUT|VIEW|BUTTON)\[[^`]*`|`\$?=[^`]*`|\b(?:INPUT|VIEW|BUTTON)\[(?:\\.|[^\]\\\n])*\](?:\[[^\]\n]*\])?"
)
_INLINE_FIELD = re.compile(r"^([ \t]*(?:[-*+][ \t]+)?)(\**)([^\s:*`|\[][^:`|\[]*?)(\**)::[ \t]*")
_BRACKET_FIELD = re.compile(r"[\[(]([\w][\w \-]*)::[ \t]*([^\]\)\n]*)[\])]")
_BREAK = re.compile(r"<br\s*/?>", re.IGNORECASE)
_TAG = re.compile(r"</?[A-Za-z][\w-]*(?:\s[^<>]*)?/?>")
_ENTITY = re.compile(r"&(?:#\d+|#x[0-9a-fA-F]+|[A-Za-z]\w*);")
_EMBED = re.compile(r"!\[\[[^\[\]\n]*\]\]|!\[[^\]\n]*\]\([^)\n]*\)")
WIKILINK = re.compile(r"\[\[([^\[\]\n]+?)\]\]")
_INTERNAL_LINK = re.compile(r"(?<!!)\[((?:[^\[\]\n]|\\[\[\]])*)\]\((?![A-Za-z][\w+.-]*:|//|#)[^)\s]*(?:\s+\"[^\"]*\")?\)")
_BLOCK_ID = re.compile(r"(?:^|[ \t])\^[\w-]+[ \t]*$")  # at a line's end, or alone under a table or list
_TABLE_RULE = re.compile(r"^[\s|:-]*-[\s|:-]*$")
_EMPTY_ROW = re.compile(r"^(?:\*\*[^*|]*\*\*|[^|]{0,40})?[\s|]*\|[\s|:-]*$")
_DATAVIEW_QUERY = re.compile(r"^(?:TABLE|LIST|TASK|CALENDAR)\b.*$|^(?:FROM|WHERE|SORT|GROUP BY|FLATTEN|LIMIT)\s+\S.*$")
_FENCE_LINE = re.compile(r"^[ \t>]*(`{3,}|~{3,})")
_HAS_WORD = re.compile(r"\w")
_CELL_PADDING = re.compile(r"(?<=\S)[ \t]{2,}")  # spaces that line a table's columns up in the file


def shown_text(inner: str) -> str:
    """What a reader is shown for `[[inner]]`: `T|shown` → "shown" (an alias as typed; a `\\|` escaped in a table is
    a `|`), `T#H` → "T > H", `#H` → "H", as Obsidian shows them; `Folder/Note` → "Note", as a published vault shows
    it (Quartz's prettyLinks), where Obsidian shows the path as typed. Folder names are filing, not text: Thellade
    writes "a port city on the [[01 Campaign/01 World/04 Subregions/01 Thellade/The Outcast Isles/Kanda Isles]]",
    which cost the LLM 20 tokens and made the bridge round match the planet "Thellade" inside the path."""
    target, _, alias = inner.replace("\\|", "|").partition("|")
    if alias.strip():
        return alias.strip()
    note, *headings = target.split("#")
    parts = [note.rstrip("/").rpartition("/")[2], *headings]
    return " > ".join(part.strip().lstrip("^") for part in parts if part.strip().lstrip("^"))


def readable(body: str, title: str | None = None) -> str:
    """The note's text as a reader sees it rendered: plugin markup left out, meaning kept.

    Removed: plugin fences (dataview, meta-bind, custom-frames…), Meta Bind `INPUT[…]`/`VIEW[…]`/`BUTTON[…]`,
    Dataview inline queries and bare query lines, Templater `<% %>`, comments, script/style/iframe HTML, tags
    (their text kept), quote and callout markers (the callout's title kept), table rules and empty rows,
    the spaces that pad table cells to one width, embeds and Obsidian block ids. Kept as text: links as their
    shown text, Dataview fields `key:: value` as "key: value", other fenced code. A heading made only of markup
    becomes `title` (or is dropped).
    Used for chunks, descriptions, full-text search and what the LLM reads; the file is never changed.
    """
    text = _RAW_HTML_BLOCK.sub("", _TEMPLATER.sub("", drop_comments(body)))
    out: list[str] = []
    lines = text.split("\n")
    skip_to = -1
    unfilled = _unfilled_tables(lines)
    blocks = iter(fences(text))
    block = next(blocks, None)
    offset = 0
    for number, line in enumerate(lines):
        start, offset = offset, offset + len(line) + 1
        while block is not None and block.end <= start:
            block = next(blocks, None)
        if number <= skip_to:
            continue
        if block is not None and block.start <= start:
            language = _language(block)
            if language in PLUGIN_BLOCKS:
                if block.start == start:
                    skip_to = _stray_fence_end(lines, number)
                continue
            line = _QUOTE.sub("", line)
            out.append(_links_as_text(line) if language in LINKED_BLOCKS else line)
            continue
        if number in unfilled:
            continue
        titled = _CALLOUT_MARK.match(_QUOTE.sub("", line))
        out.extend(_CALLOUT_TITLE + part if titled and part.strip() else part for part in _readable_line(line, title))
    cleaned = "\n".join(_without_empty_sections(out))
    return re.sub(r"\n{3,}", "\n\n", cleaned).strip("\n")


_CALLOUT_TITLE = "\0"  # marks a callout's title line until we know whether anything readable follows it


def _without_empty_sections(lines: list[str]) -> list[str]:
    """Drop callout titles with nothing after them (`> [!metadata]- Map` over a removed map) and headings
    with nothing under them before the next heading of the same or a higher level (an unfilled template)."""
    kept: list[str] = []
    content_below = [False] * 7  # per heading level: readable text between here and that level's next heading
    for line in reversed(lines):
        if line.startswith(_CALLOUT_TITLE):
            following = kept[-1] if kept else ""
            if following.strip() and not heading(following) and not following.startswith(_CALLOUT_TITLE):
                kept.append(line)
            continue
        found = heading(line)
        if found:
            level = found[0]
            if content_below[level]:
                kept.append(line)
            content_below[level:] = [False] * (7 - level)
            continue
        if line.strip():
            content_below = [True] * 7
        kept.append(line)
    return [line.removeprefix(_CALLOUT_TITLE) for line in reversed(kept)]


def _unfilled_tables(lines: list[str]) -> set[int]:
    """The lines of tables with no filled row, header included: a template's table nobody filled in
    ("| Item | Cost |" over "|  |  |"). Empty rows and rules go anyway (_readable_line); left alone, the header
    was what the LLM read under "Special Items" for 193 Thellade shops and taverns."""
    unfilled: set[int] = set()
    rows = [_QUOTE.sub("", line).strip() for line in lines]
    start = 0
    while start < len(rows):
        end = start
        while end < len(rows) and "|" in rows[end]:
            end += 1
        table = rows[start:end]
        if len(table) >= 2 and _TABLE_RULE.match(table[1]) and \
                not any(_HAS_WORD.search(_inline(row)) for row in table[2:]):
            unfilled.update(range(start, end))
        start = max(end, start + 1)
    return unfilled


def _stray_fence_end(lines: list[str], opening: int) -> int:
    """A plugin fence opened in a callout whose body was written without `>`: the block runs on to its closing
    fence, a few lines down, quoted or not (custom-frames, thellade NOTES.md; the six party dashboards quote every
    line of their Dataview query but the first, and their one chunk was the query's remains), or, with none, over
    the Dataview query lines that follow it (a query in a column callout: 51 Thellade notes showed "LIST / FROM
    outgoing([[]]) / WHERE econtains(tags, …)" to the LLM)."""
    body = opening + 1
    if ">" not in lines[opening].split("`")[0].split("~")[0] or body >= len(lines) or \
            lines[body].lstrip().startswith(">"):  # not in a callout, or its body is quoted: an ordinary fence
        return opening
    for number in range(body, min(opening + 12, len(lines))):  # its closing fence, quoted or not, before a blank
        if not lines[number].strip():
            break
        if _FENCE_LINE.match(lines[number]) and not lines[number].strip(" \t>`~"):
            return number
    after = body
    while after < len(lines) and _DATAVIEW_QUERY.match(lines[after].strip()):
        after += 1
    return after - 1 if after > body else opening


def _readable_line(line: str, title: str | None) -> list[str]:
    """One line outside code, cleaned; [] when nothing readable is left."""
    line = _CALLOUT_MARK.sub("", _QUOTE.sub("", line))
    found = heading(line)
    if found:
        level, written = found
        text = _inline(written).strip(" \t\"'*_|")
        if not _HAS_WORD.search(text) or (text != written and text.endswith(":")):  # "Updated: VIEW[{updated}]"
            return [f"{'#' * level} {title}"] if title else []
        return [f"{'#' * level} {text}"]
    if _DATAVIEW_QUERY.match(line.strip()) and re.search(r"\b(?:file|this)\.|\b(?:ASC|DESC)\b|\bWITHOUT ID\b", line):
        return []
    line = _INLINE_FIELD.sub(lambda m: f"{m.group(1)}{m.group(2)}{m.group(3)}{m.group(4)}: ", line)
    cleaned = [part.rstrip() for part in _BREAK.split(line)]
    kept = []
    for part in cleaned:
        part = _BLOCK_ID.sub("", _inline(part)).rstrip()
        if _TABLE_RULE.match(part) and "|" in part or _EMPTY_ROW.match(part) and "|" in part:
            continue
        if part.strip() and not _HAS_WORD.search(part):
            continue  # only punctuation left: `""`, `**`, `|  |`
        if part.lstrip().startswith("|"):  # a table row, as rendered: one space between words and bars
            part = _CELL_PADDING.sub(" ", part)
        kept.append(part)
    return kept if any(p.strip() for p in kept) else ([""] if not line.strip() else [])


def _inline(text: str) -> str:
    """Inline markup of one line: plugin code out, HTML tags out (text kept), links as their shown text."""
    text = _PLUGIN_INLINE.sub("", text)
    text = _BRACKET_FIELD.sub(lambda m: f"{m.group(1)}: {m.group(2).strip()}", text)
    text = _links_as_text(_EMBED.sub("", text))
    text = _TAG.sub("", text)
    return _ENTITY.sub(lambda m: html.unescape(m.group()), text)


def _links_as_text(text: str) -> str:
    """Wikilinks and internal markdown links as the text they show."""
    text = WIKILINK.sub(lambda m: shown_text(m.group(1)), text)
    return _INTERNAL_LINK.sub(lambda m: m.group(1).replace("\\[", "[").replace("\\]", "]"), text)
