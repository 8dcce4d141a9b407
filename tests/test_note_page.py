"""A concept's row page you can read (note_page.py, templates/row.html): rendered, linked, and safe."""

import asyncio
import json
import re
import sqlite3
from html import unescape

import pytest
from datasette.app import Datasette

from datasette_okf.note_page import frontmatter_rows, link_shown_texts, render_body
from datasette_okf.store import build

from .conftest import VAULT, write_bundle

NESSA = "/myvault/concepts/vault~2FPeople~2FNessa~20Thorne"


def page(paths, url, status=200):
    async def run():
        response = await Datasette([str(p) for p in paths]).client.get(url)
        assert response.status_code == status, response.text
        return response.text

    return asyncio.run(run())


@pytest.fixture
def vault_db(tmp_path):
    path = tmp_path / "myvault.db"
    build([VAULT], path, embed=False)
    return path


def anchors(html):
    """(href, text) of every okf link in `html`."""
    return [(unescape(h), unescape(t)) for h, t in re.findall(r'<a class="okf-link" href="([^"]+)"[^>]*>([^<]+)</a>', html)]


def test_a_shown_text_becomes_a_link_once_as_whole_words_and_the_longer_text_first():
    links = {"Port Vell": ("/port", "Port Vell"), "Port Vell Docks": ("/docks", "Docks")}
    html = "<p>Port Vellish. Port Vell Docks, then Port Vell, then Port Vell again.</p>"
    assert anchors(link_shown_texts(html, links)) == [("/docks", "Port Vell Docks"), ("/port", "Port Vell")]


def test_no_link_inside_code_pre_or_an_existing_link():
    html = ('<p><code>Black Gulls</code> <a href="https://x">Black Gulls</a></p><pre>Black Gulls</pre>'
            "<p>the Black Gulls</p>")
    out = link_shown_texts(html, {"Black Gulls": ("/gulls", "t")})
    assert anchors(out) == [("/gulls", "Black Gulls")]
    assert out.index('class="okf-link"') > out.index("<p>the ")


def test_shown_texts_with_html_characters_are_matched_as_escaped_and_links_are_escaped():
    out = link_shown_texts("<p>Salt &amp; Smoke</p>", {"Salt & Smoke": ('/x?a=1&b="2"', "Salt & Smoke")})
    assert anchors(out) == [('/x?a=1&b="2"', "Salt & Smoke")]
    assert 'href="/x?a=1&amp;b=&quot;2&quot;"' in out


def test_frontmatter_values_read_as_in_obsidian_and_link_their_targets():
    rows = dict(frontmatter_rows('{"location": "[[Places/Port Vell.md|Port Vell]]", "tags": ["#NPC"], "n": 3}',
                                 {"Port Vell": ("/port", "Port Vell (location)")}))
    assert anchors(str(rows["location"])) == [("/port", "Port Vell")]
    assert "[[" not in str(rows["location"])
    assert str(rows["n"]) == "3" and "#NPC" in str(rows["tags"])
    assert frontmatter_rows("not json", {}) == []


def test_an_okf_notes_sources_read_as_lines_with_their_addresses_linked():
    """GA4's `sources` (a list of mappings, OKF §5.1) showed as one line of JSON."""
    rows = dict(frontmatter_rows(json.dumps({
        "sources": [{"title": "BigQuery Export Schema", "id": "ga4-export-docs",
                     "resource": "https://support.google.com/analytics/answer/7029846"},
                    {"title": "Evil", "resource": "javascript:alert(1)\"><script>"}],
        "tags": ["analytics", "ga4"]}), {}))
    sources = str(rows["sources"])
    assert sources.startswith("title: BigQuery Export Schema, id: ga4-export-docs, resource: <a href=\"https://support"
                              ".google.com/analytics/answer/7029846\" rel=\"nofollow\">")
    assert "<br>title: Evil" in sources and "<script>" not in sources and 'href="javascript' not in sources
    assert str(rows["tags"]) == "analytics, ga4"


def test_row_page_shows_the_rendered_note_with_links_in_and_out(vault_db):
    html = page([vault_db], NESSA)
    body = html[html.index('class="okf-note-body"'):html.index('class="okf-note-side"')]
    assert "<h2>Appearance</h2>" in body and "<li>paying the lighthouse keeper" in body
    assert ("/myvault/concepts/vault~2FFactions~2FBlack+Gulls", "Black Gulls") in anchors(body)
    assert ("/myvault/concepts/vault~2FPlaces~2FDocks~2FFish+Market", "Fish Market") in anchors(body)
    out = html[html.index('id="okf-links-out"'):html.index('id="okf-links-in"')]
    assert "Port Vell</a>" in out and "location" in out  # a frontmatter property is a link out too
    linked_from = html[html.index('id="okf-links-in"'):]
    assert "Session 2</a>" in linked_from and "Black Gulls</a>" in linked_from
    assert "Links from other tables" in html  # Datasette's own, from the foreign keys
    assert 'href="/-/context_for?db=myvault&amp;q=Nessa+Thorne">Ask about this note' in html


def test_row_page_html_in_a_note_is_sanitised(tmp_path):
    bundle = write_bundle(tmp_path / "notes", {
        "Evil.md": '# Evil\n\n<b onmouseover="alert(1)">bold</b> <a href="javascript:alert(2)">x</a>\n'
                   "<img src=x onerror=alert(3)>\n",
    })
    db = tmp_path / "evil.db"
    build([bundle], db, embed=False)
    html = page([db], "/evil/concepts/notes~2FEvil")
    body = html[html.index('class="okf-note-body"'):html.index('class="okf-note-side"')]
    assert "bold" in body
    assert "onmouseover" not in body and "onerror" not in body and "javascript:" not in body


def test_row_page_renders_a_notes_tables_and_footnotes(tmp_path):
    """The stored body leaves a table's rule out (the LLM needs none), so GA4's schema table showed as lines of
    pipes, and its "[^ga4-export-docs]" as typed."""
    bundle = write_bundle(tmp_path / "ga4", {
        "events.md": "---\ntype: Table\n---\n# Events\n\nOne row per event.[^docs]\n\n| Field | Type |\n| --- | --- |\n"
                     "| **event_date** | STRING |\n| [[Params\\|event_params]] | RECORD |\n\n```\n| a | code line |\n```\n\n"
                     "[^docs]: BigQuery export schema.\n",
        "Params.md": "# Params\n",
    })
    db = tmp_path / "ga4.db"
    build([bundle], db, embed=False)
    html = page([db], "/ga4/concepts/ga4~2Fevents")
    body = html[html.index('class="okf-note-body"'):html.index('class="okf-note-side"')]
    assert "<th>Field</th>" in body and "<td><strong>event_date</strong></td>" in body
    assert re.search(r"<td><a [^>]+>event_params</a></td>\s*<td>RECORD</td>", body)  # two cells, not three
    assert "<pre><code>| a | code line |" in body  # code stays code
    assert '<sup id="fnref:docs">' in body and "BigQuery export schema." in body and "[^docs]" not in body
    assert ".okf-note-body ol { list-style: decimal" in html  # Datasette's CSS reset took the footnotes' numbers


def test_render_body_sanitises_what_reaches_it():
    """The build already drops tags from the body (markdown.readable); bleach is the second line."""
    html = str(render_body('<b onmouseover="alert(1)">bold</b> <script>alert(2)</script> <a href="javascript:x">y</a>',
                           {}))
    assert "<b>bold</b>" in html
    assert "<script>" not in html and "onmouseover" not in html and "javascript:" not in html


def test_other_tables_and_other_databases_keep_datasette_own_row_page(vault_db, tmp_path):
    other = tmp_path / "plain.db"
    with sqlite3.connect(other) as conn:
        conn.execute("create table concepts (id text primary key, title text, body text)")
        conn.execute("insert into concepts values ('a', 'A', '# A [[B]]')")
    assert "okf-note" not in page([vault_db, other], "/plain/concepts/a")
    assert "okf-note" not in page([vault_db], "/myvault/edges/1")
    assert "okf-note" not in page([vault_db], "/myvault/concepts/nothing~2Fhere", status=404)
