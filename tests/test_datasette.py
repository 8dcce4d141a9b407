"""The built file opens in Datasette: search box, facets on JSON arrays, lint culprits and counts as links."""

import asyncio
import sqlite3
from urllib.parse import quote

from datasette.app import Datasette

from datasette_okf import cells
from datasette_okf.store import build

from .conftest import write_bundle


def get(db_paths, path):
    async def fetch():
        ds = Datasette([str(p) for p in db_paths])
        response = await ds.client.get(path)
        assert response.status_code == 200, response.text
        return response

    return asyncio.run(fetch())


def get_json(db_path, path):
    return get([db_path], path).json()


def test_search_and_tag_facets_work(tmp_path):
    bundle = write_bundle(
        tmp_path / "lore",
        {
            "a.md": "---\ntype: Person\ntags: [npc, smuggler]\n---\nSmuggles brandy past the harbour watch.\n",
            "b.md": "---\ntype: Person\ntags: [npc]\n---\nKeeps the lighthouse.\n",
        },
    )
    db_path = tmp_path / "lore.db"
    build([bundle], db_path, embed=False)
    rows = get_json(db_path, "/lore/concepts.json?_search=brandy&_shape=array")
    assert [r["id"] for r in rows] == ["lore/a"]
    data = get_json(db_path, "/lore/concepts.json?_facet_array=tags")
    counts = {f["value"]: f["count"] for f in data["facet_results"]["tags"]["results"]}
    assert counts == {"npc": 2, "smuggler": 1}


def vault(tmp_path):
    """A small vault (no okf_version: the vault profile) with lint hits in two folders."""
    bundle = write_bundle(tmp_path / "lore", {
        "People/Ash Vey.md": "---\ntitle: Ash Vey the Elder\n---\nAsh keeps the [[Nowhere]] inn on the quay.\n",
        "People/Bram.md": "Bram rows the ferry to [[Port]] and back.\n",
        "Places/Port.md": "The port where [[Ash Vey]] keeps an inn.\n",
    })
    build([bundle], tmp_path / "lore.db", embed=False)
    return tmp_path / "lore.db"


ASH = '<a href="/lore/concepts/lore~2FPeople~2FAsh+Vey">Ash Vey the Elder</a>&nbsp;<em>lore/People/Ash Vey</em>'


def test_lint_culprits_link_to_their_row_page_by_title(tmp_path):
    db_path = vault(tmp_path)
    assert ASH in get([db_path], "/lore/lint_dead_links").text  # no folder given: the check runs on everything
    assert "Ash Vey the Elder" in get([db_path], "/lore/concepts/lore~2FPeople~2FAsh+Vey").text
    sql = "select 'lore/People/Ash Vey' as concept, 'lore/Nowhere' as concept"
    editor = get([db_path], "/lore?sql=" + quote(sql)).text  # the SQL editor too; only existing ids are links
    assert ASH in editor and '<td class="col-concept">lore/Nowhere</td>' in editor
    plain = tmp_path / "plain.db"  # not an OKF database, though it has a concepts table
    with sqlite3.connect(plain) as conn:
        conn.execute("create table concepts (id, title)")
        conn.execute("insert into concepts values ('lore/People/Ash Vey', 'Ash')")
    html = get([plain], "/plain?sql=" + quote("select id as concept from concepts")).text
    assert '<td class="col-concept">lore/People/Ash Vey</td>' in html


def test_a_culprit_link_escapes_the_title_and_follows_a_rebuild(tmp_path, monkeypatch):
    db_path = vault(tmp_path)
    monkeypatch.setattr(cells, "RECHECK_SECONDS", 0)  # ask at every cell whether the file changed

    async def pages():
        ds = Datasette([str(db_path)])
        before = (await ds.client.get("/lore/lint_dead_links")).text
        with sqlite3.connect(db_path) as conn:  # a rebuild under a running Datasette
            conn.execute("update concepts set title = '<b>Ash</b> & co' where id = 'lore/People/Ash Vey'")
        return before, (await ds.client.get("/lore/lint_dead_links")).text

    before, after = asyncio.run(pages())
    assert ASH in before and ASH not in after
    assert '~2FAsh+Vey">&lt;b&gt;Ash&lt;/b&gt; &amp; co</a>&nbsp;<em>lore/People/Ash Vey</em>' in after


def test_the_lint_summary_comes_first_and_links_each_count_to_its_rows(tmp_path):
    db_path = vault(tmp_path)
    queries = [q["name"] for q in get_json(db_path, "/lore.json")["queries"]]
    assert queries[:4] == ["lint_summary", "lint_broken_relation_targets", "lint_dangling_supersession",
                           "lint_supersession_cycles"]  # then the errors, then the warnings
    rows = get_json(db_path, "/lore/lint_summary.json?_shape=array")
    assert {(r["check"], r["folder"], r["hits"]) for r in rows if r["check"] == "missing_type"} == {
        ("missing_type", "lore/People", 2), ("missing_type", "lore/Places", 1)}
    for row in rows:  # each count is its check's rows in that folder
        folder = f"&folder={quote(row['folder'])}" if row["folder"] else ""
        assert len(get_json(db_path, f"/lore/lint_{row['check']}.json?_shape=array{folder}")) == row["hits"], row
    html = get([db_path], "/lore/lint_summary").text
    assert '<a href="/lore/lint_missing_type?folder=lore%2FPeople">Concepts without a type in their frontmatter</a>' in html
