"""A concept's row page you can read: the note rendered, its links in and out, and a way to ask about it.

Datasette's own row page shows a concept as one row of raw columns. For a row of `concepts` in an OKF
database, the extra_template_vars hook adds `okf_note` and templates/row.html (which extends Datasette's
own) shows it above that row: the body as sanitised HTML (datasette-render-markdown's bleach allow-list)
whose link texts point at the linked concepts' row pages, the frontmatter as a key/value table, the
notes it links to and the notes linking to it by title, and links to ask about it on /-/context_for.

The body is the readable text the build stored (links already turned into their shown text), so
which words were links comes from `edges.text`: the first occurrence of each shown text outside
code and existing links becomes a link to its target. Every link is also listed under the note, so
nothing depends on finding the text again.
"""

from __future__ import annotations

import json
import re
from html import escape
from typing import Any
from urllib.parse import urlencode

from datasette.utils import tilde_encode, urlsafe_components
from markupsafe import Markup

from .markdown import mask_code, shown_text

MARKDOWN_EXTENSIONS = ["tables", "fenced_code", "sane_lists", "nl2br", "footnotes"]  # nl2br: Obsidian shows a newline as one
EXTRA_TAGS = ["table", "thead", "tbody", "tr", "th", "td", "hr", "br", "del", "sup", "sub", "div"]
EXTRA_ATTRS = {"sup": ["id"], "li": ["id"], "div": ["class"]}  # a footnote's number and its text jump to each other
BODY_KINDS = {"link", "wikilink", "embed"}  # the other kinds of edge come from the frontmatter
MAX_LINKS_IN = 50  # listed by title; Datasette's "Links from other tables" counts them all
_WIKILINK = re.compile(r"\[\[([^\[\]]+)\]\]")
_TAG = re.compile(r"(<[^>]+>)")
_NO_LINKS_INSIDE = {"a", "code", "pre"}
_URL = re.compile(r"https?://[^\s<>\"']+")  # in escaped text: no quote or angle bracket can end up in the href
_CELL_BAR = re.compile(r"(?<!\\)\|")  # a `\|` is a bar inside a cell ([[Note\|shown]] in a table)

LINKS_OUT_SQL = """select edges.text, edges.dst, edges.predicate, edges.kind, concepts.title
from edges join concepts on concepts.id = edges.dst
where edges.src = :id and edges.dst != :id and edges.kind != 'mention'
order by edges.line is null, edges.line, edges.id"""
LINKS_IN_SQL = """select edges.src, edges.predicate, edges.kind, concepts.title
from edges join concepts on concepts.id = edges.src
where edges.dst = :id and edges.src != :id and edges.kind not in ('mention', 'sequence')
group by edges.src order by concepts.title, edges.src limit :limit"""
COUNT_IN_SQL = """select count(distinct src) from edges
where dst = :id and src != :id and kind not in ('mention', 'sequence')"""


def link_shown_texts(html: str, links: dict[str, tuple[str, str]]) -> str:
    """`html` with the first occurrence of each shown text (outside <a>, <code>, <pre>) made a link.

    `links`: shown text -> (href, tooltip). Longer texts win over texts they contain ("Port Vell Docks"
    before "Port Vell"); a text is matched as whole words, case as written."""
    if not links:
        return html
    wanted = sorted(links, key=len, reverse=True)
    pattern = re.compile(r"(?<!\w)(" + "|".join(re.escape(escape(t, quote=False)) for t in wanted) + r")(?!\w)")
    by_escaped = {escape(t, quote=False): t for t in wanted}
    done: set[str] = set()
    inside = 0
    out = []

    def link(match: re.Match) -> str:
        text = by_escaped[match.group(1)]
        if text in done:
            return match.group(0)
        done.add(text)
        href, tooltip = links[text]
        return f'<a class="okf-link" href="{escape(href)}" title="{escape(tooltip)}">{match.group(0)}</a>'

    for part in _TAG.split(html):
        if part.startswith("<"):
            name = part.strip("</>").split()[0].lower() if part.strip("</>") else ""
            if name in _NO_LINKS_INSIDE and not part.endswith("/>"):
                inside += -1 if part.startswith("</") else 1
            out.append(part)
        elif inside <= 0 and len(done) < len(links):
            out.append(pattern.sub(link, part))
        else:
            out.append(part)
    return "".join(out)


def render_body(body: str, links: dict[str, tuple[str, str]]) -> Markup:
    """The readable body as sanitised HTML, its link texts pointing at row pages."""
    from datasette_render_markdown import render_markdown

    html = str(render_markdown(with_table_rules(body or ""), MARKDOWN_EXTENSIONS, EXTRA_TAGS, EXTRA_ATTRS))
    return Markup(link_shown_texts(html, links))


def with_table_rules(body: str) -> str:
    """The readable body leaves a table's `| --- |` rule out (the LLM needs none); Markdown needs it to see a
    table, so one goes back under each table's first row, outside code."""
    out: list[str] = []
    after_row = False
    for line, outside in zip(body.split("\n"), mask_code(body).split("\n")):
        row = outside.lstrip().startswith("|")
        out.append(line)
        if row and not after_row:
            out.append("|" + " --- |" * (len(_CELL_BAR.findall(line.strip().strip("|"))) + 1))
        after_row = row
    return "\n".join(out)


def frontmatter_rows(frontmatter: str | None, links: dict[str, tuple[str, str]]) -> list[tuple[str, Markup]]:
    """(key, value as HTML) for each frontmatter key: a list one item a line, a mapping as `key: value` pairs (an
    OKF note's `sources` read as a reader would, not as JSON), web addresses and the shown texts of its links
    (`links`, as for render_body) made links."""
    try:
        data = json.loads(frontmatter or "{}")
    except ValueError:
        return []
    if not isinstance(data, dict):
        return []
    rows = []
    for key, value in data.items():
        text = _WIKILINK.sub(lambda m: shown_text(m.group(1)), _as_text(value))  # [[a/b.md|B]] reads "B"
        html = _URL.sub(lambda m: f'<a href="{m.group(0)}" rel="nofollow">{m.group(0)}</a>', escape(text, quote=False))
        rows.append((str(key), Markup(link_shown_texts(html, links).replace("\n", "<br>"))))
    return rows


def _as_text(value: Any) -> str:
    """A frontmatter value as text: a list of mappings one a line, other lists comma-separated."""
    if isinstance(value, dict):
        return ", ".join(f"{key}: {_as_text(item)}" for key, item in value.items())
    if isinstance(value, list):
        return ("\n" if any(isinstance(item, dict) for item in value) else ", ").join(_as_text(i) for i in value)
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def concept_id_from(request: Any) -> str | None:
    """The concept id a row page's URL names (one primary key, tilde-encoded)."""
    pks = (request.url_vars or {}).get("pks") if request is not None else None
    if not pks:
        return None
    parts = urlsafe_components(pks)
    return parts[0] if len(parts) == 1 else None


async def note_view(datasette: Any, database: str, concept_id: str) -> dict[str, Any] | None:
    """What templates/row.html shows for one concept, or None when there is no such concept."""
    db = datasette.get_database(database)
    rows = list(await db.execute(
        "select id, title, body, frontmatter, is_index, is_stub from concepts where id = :id", {"id": concept_id}))
    if not rows:
        return None
    concept = rows[0]

    def row_url(other: str) -> str:
        return datasette.urls.row(database, "concepts", tilde_encode(other))

    out: dict[str, dict[str, Any]] = {}  # one entry per linked note, its predicates in order
    shown: dict[str, dict[str, tuple[str, str]]] = {"body": {}, "frontmatter": {}}  # where the text is: in which
    for row in await db.execute(LINKS_OUT_SQL, {"id": concept_id}):
        where = shown["body" if row["kind"] in BODY_KINDS else "frontmatter"]
        if row["text"] and row["text"].strip() and row["text"].strip() not in where:
            where[row["text"].strip()] = (row_url(row["dst"]), f"{row['title']} ({row['predicate']})")
        link = out.setdefault(row["dst"], {"title": row["title"] or row["dst"], "id": row["dst"],
                                           "url": row_url(row["dst"]), "predicates": []})
        if row["predicate"] not in link["predicates"]:
            link["predicates"].append(row["predicate"])
    links_in = [{"title": r["title"] or r["src"], "id": r["src"], "url": row_url(r["src"]),
                 "predicate": r["predicate"], "kind": r["kind"]}
                for r in await db.execute(LINKS_IN_SQL, {"id": concept_id, "limit": MAX_LINKS_IN})]
    count_in = (await db.execute(COUNT_IN_SQL, {"id": concept_id})).first()[0]
    title = concept["title"] or concept_id
    ask = "/-/context_for?" + urlencode({"db": database, "q": title})
    return {
        "id": concept_id,
        "title": title,
        "is_index": bool(concept["is_index"]),
        "is_stub": bool(concept["is_stub"]),
        "show_title": not (concept["body"] or "").lstrip().startswith("# "),
        "body_html": render_body(concept["body"], shown["body"]),
        "frontmatter": frontmatter_rows(concept["frontmatter"], shown["frontmatter"]),
        "links_out": list(out.values()),
        "links_in": links_in,
        "links_in_count": count_in,
        "links_in_url": datasette.urls.table(database, "edges") + "?" + urlencode({"dst": concept_id}),
        "ask_url": ask,
        "neighbourhood_url": ask + "&" + urlencode({"mode": "graph-walk"}),
    }
