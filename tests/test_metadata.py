"""Every OKF database gets its metadata from the plugin (metadata.py), whatever it is called; a metadata file wins."""

import asyncio
import sqlite3

import pytest
from datasette.app import Datasette

from datasette_okf.metadata import get_metadata
from datasette_okf.store import build

from .conftest import VAULT

CONCEPT_FACETS = {"type", "tags", "status", "trust_tier", "bundle", "type_source", "is_stub"}
INTERNAL = ("chunk_vectors_", "chunk_bits_", "concepts_fts")


@pytest.fixture
def vault_db(tmp_path):
    path = tmp_path / "myvault.db"
    build([VAULT], path, embed=False)
    return path


@pytest.fixture
def vector_vault_db(tmp_path, test_models):
    path = tmp_path / "myvault.db"
    build([VAULT], path, model="okf-test-hash-8")
    return path


def fetch(paths, *urls, metadata=None):
    """The JSON of each URL from one Datasette serving `paths`."""
    async def run():
        ds = Datasette([str(p) for p in paths], metadata=metadata)
        answers = []
        for url in urls:
            response = await ds.client.get(url)
            assert response.status_code == 200, response.text
            answers.append(response.json() if ".json" in url else response.text)
        return answers

    return asyncio.run(run())


def test_concepts_and_edges_get_facets_sort_and_descriptions(vault_db):
    concepts, edges, page = fetch([vault_db], "/myvault/concepts.json", "/myvault/edges.json", "/myvault/concepts")
    assert set(concepts["facet_results"]) == CONCEPT_FACETS
    assert {r["value"] for r in concepts["facet_results"]["tags"]["results"]} >= {"NPC", "location"}  # an array facet
    assert "sorted by id" in concepts["human_description_en"]
    ids = [row[0] for row in concepts["rows"]]
    assert ids == sorted(ids)
    assert set(edges["facet_results"]) == {"kind", "predicate"}
    assert "sorted by src" in edges["human_description_en"]
    assert "One row per concept" in page and "JSON array; facet it with _facet_array=tags" in page


def test_template_texts_come_most_shared_first_and_say_what_they_are(vault_db):
    table, page = fetch([vault_db], "/myvault/template_texts.json", "/myvault/template_texts")
    assert "sorted by notes descending" in table["human_description_en"]
    assert "a template&#39;s words, not the notes&#39;" in page or "a template's words, not the notes'" in page


def test_internal_tables_are_hidden_and_concepts_comes_early(vector_vault_db):
    database, home = fetch([vector_vault_db], "/myvault.json", "/.json")
    visible = [t["name"] for t in database["tables"] if not t["hidden"]]
    hidden = {t["name"] for t in database["tables"] if t["hidden"]}
    assert "chunk_vectors_vector_chunks00" in hidden and "chunk_bits_rowids" in hidden  # vectors were built
    assert not [name for name in visible if name.startswith(INTERNAL)]
    assert not {"chunk_floats", "parse_cache", "file_stats", "sqlite_sequence"} & set(visible)
    assert visible.index("concepts") < 5 and "meta" in visible
    assert not {"chunk_floats", "parse_cache", "file_stats", "sqlite_sequence", "meta"} & {
        t["name"] for t in home["myvault"]["tables_and_views_truncated"]}


def test_a_metadata_file_wins_where_it_says_something(vault_db):
    user = {"databases": {"myvault": {"tables": {"concepts": {"facets": ["status"]}, "parse_cache": {"hidden": False}}}}}
    concepts, database = fetch([vault_db], "/myvault/concepts.json", "/myvault.json", metadata=user)
    assert list(concepts["facet_results"]) == ["status"]
    assert "sorted by id" in concepts["human_description_en"]  # what the file does not say is still ours
    assert {t["name"]: t["hidden"] for t in database["tables"]}["parse_cache"] is False


def test_a_database_that_is_not_okf_gets_nothing(vault_db, tmp_path):
    plain = tmp_path / "plain.db"
    conn = sqlite3.connect(plain)  # a concepts table alone does not make an OKF database
    conn.execute("create table concepts (id text primary key, type text, title text)")
    conn.execute("create table parse_cache (key text primary key)")
    conn.execute("insert into concepts values ('a', 'Person', 'A')")
    conn.commit()
    conn.close()
    concepts, database = fetch([vault_db, plain], "/plain/concepts.json", "/plain.json")
    assert concepts["facet_results"] == {}
    assert "sorted by" not in concepts["human_description_en"]
    assert {t["name"]: t["hidden"] for t in database["tables"]} == {"concepts": False, "parse_cache": False}

    ds = Datasette([str(vault_db), str(plain)])
    assert set(get_metadata(ds, None)["databases"]) == {"myvault"}
    assert get_metadata(ds, "allow") is None  # keys we never set are answered without looking
    assert get_metadata(Datasette([str(plain)]), "databases") is None


def test_tables_a_rebuild_adds_are_hidden_too(vault_db, test_models):
    async def run():
        ds = Datasette([str(vault_db)])
        before = (await ds.client.get("/myvault.json")).json()
        build([VAULT], vault_db, model="okf-test-hash-8")  # the same file, now with vectors
        after = (await ds.client.get("/myvault.json")).json()
        return before, after

    before, after = asyncio.run(run())
    assert not [t for t in before["tables"] if t["name"].startswith("chunk_vectors")]
    visible = [t["name"] for t in after["tables"] if not t["hidden"]]
    assert "chunk_vectors" in visible and not [name for name in visible if name.startswith(INTERNAL)]


def test_a_concept_row_shows_the_links_from_other_tables_and_edges_show_titles(vault_db):
    """Issue 19 item 2: edges, chunks, headings, link_issues and external_links name a concept as a foreign key, so
    Datasette lists what points at a note on its row page and labels ids with titles (before: plain text ids)."""
    conn = sqlite3.connect(vault_db)
    concept_id, title = conn.execute(
        "select id, title from concepts where id in (select dst from edges) and id in (select src from edges) limit 1"
    ).fetchone()
    incoming = conn.execute("select count(*) from edges where dst = ?", [concept_id]).fetchone()[0]
    outgoing = conn.execute("select count(*) from edges where src = ?", [concept_id]).fetchone()[0]
    conn.close()
    quoted = concept_id.replace("/", "~2F").replace(" ", "~20")
    row, edges_page = fetch([vault_db], f"/myvault/concepts/{quoted}.json?_extras=foreign_key_tables",
                            f"/myvault/edges?src={concept_id}")
    links = {(f["other_table"], f["other_column"]): f["count"] for f in row["foreign_key_tables"]}
    assert links[("edges", "dst")] == incoming and links[("edges", "src")] == outgoing
    assert ("chunks", "concept_id") in links and ("link_issues", "src") in links
    assert f">{title}</a>" in edges_page  # the src column is a link labelled with the note's title
