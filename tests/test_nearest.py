"""The vector list's nearest chunks, from the float vectors held in memory, are sqlite-vec's: same chunks, same
order (exact duplicates aside), same distances."""

from __future__ import annotations

import struct

import pytest

from datasette_okf.nearest import nearest_chunks
from datasette_okf.retrieve import connection
from datasette_okf.store import build

from .conftest import write_bundle

QUESTIONS = ["Who is the tinker?", "harbour tolls", "a witch in the sewers", "When did the lighthouse go dark?", "zzz"]


def _vector(conn, text: str) -> bytes:
    return conn.execute("select okf_embed(?)", [text]).fetchone()[0]


def test_the_same_chunks_in_the_same_order_at_the_same_distances_as_sqlite_vec(campaign_db):
    conn = connection(str(campaign_db))
    duplicates = {text: ids for text, ids in conn.execute(
        "select text, json_group_array(id) from chunks group by text having count(*) > 1")}
    assert not duplicates  # else two chunks of one vector tie, and each side breaks the tie its own way
    for question in QUESTIONS:
        vector = _vector(conn, question)
        mine = nearest_chunks(conn, vector, 20)
        theirs = conn.execute("select rowid, distance from chunk_vectors where embedding match ? and k = 20",
                              [vector]).fetchall()
        assert [chunk for chunk, _ in mine] == [rowid for rowid, _ in theirs]
        assert all(abs(mine_distance - distance) < 1e-6 for (_, mine_distance), (_, distance) in zip(mine, theirs))


def test_the_vector_list_asks_the_vectors_in_memory_and_finds_what_sqlite_vec_finds(campaign_db):
    conn = connection(str(campaign_db))
    from datasette_okf.retrieve import VECTOR_SQL

    vec0 = VECTOR_SQL.replace(
        "from (select json_extract(value, '$[0]') as rowid, json_extract(value, '$[1]') as distance\n"
        "      from json_each(okf_nearest_chunks(okf_embed(:question), :vector_k))) as knn",
        "from (select rowid, distance from chunk_vectors\n"
        "      where embedding match okf_embed(:question) and k = :vector_k) as knn")
    assert vec0 != VECTOR_SQL and "okf_nearest_chunks" in VECTOR_SQL
    for question in QUESTIONS:
        params = {"question": question, "k": 10, "vector_k": 60}
        mine = conn.execute(f"select id, rank from ({VECTOR_SQL})", params).fetchall()
        theirs = conn.execute(f"select id, rank from ({vec0})", params).fetchall()
        assert mine == theirs and len(mine) == 10


def test_equal_distances_put_the_older_chunk_first_and_a_count_past_the_collection_returns_all(tmp_path, test_models):
    bundle = write_bundle(tmp_path / "b", {
        "a.md": "---\ntype: Note\n---\nthe same words\n",
        "b.md": "---\ntype: Note\n---\nother words\n",
        "c.md": "---\ntype: Note\n---\nsomething else entirely\n",
    })
    db = tmp_path / "b.db"
    build([bundle], db, model="okf-test-hash-8")
    conn = connection(str(db))
    first, second = (row[0] for row in conn.execute(
        "select id from chunks where text like '%the same words%' or text like '%other words%' order by id desc"))
    conn.execute("update chunk_floats set embedding = (select embedding from chunk_floats where id = ?) where id = ?",
                 [first, second])  # one vector, two chunks (a text two notes share)
    conn.commit()
    found = nearest_chunks(conn, conn.execute("select embedding from chunk_floats where id = ?", [first]).fetchone()[0],
                           10)
    assert len(found) == 3 and [chunk for chunk, _ in found[:2]] == sorted([first, second])
    assert found[0][1] == found[1][1] == pytest.approx(0.0, abs=1e-6)


def test_a_rebuild_is_seen_by_an_open_connection(tmp_path, test_models):
    bundle = write_bundle(tmp_path / "b", {"a.md": "---\ntype: Note\n---\nalpha beta gamma\n"})
    db = tmp_path / "b.db"
    build([bundle], db, model="okf-test-hash-8")
    conn = connection(str(db))
    query = _vector(conn, "zeta eta theta")
    assert len(nearest_chunks(conn, query, 10)) == 1
    (bundle / "c.md").write_text("---\ntype: Note\n---\nzeta eta theta\n")
    build([bundle], db)  # in place: the open connection reads the new rows
    found = nearest_chunks(conn, query, 10)
    added = conn.execute("select id from chunks where text like '%zeta eta theta%'").fetchone()[0]
    assert len(found) == 2 and found[0][0] == added


def test_a_query_of_another_width_is_refused_and_no_vector_is_at_distance_one(tmp_path, test_models, campaign_db):
    conn = connection(str(campaign_db))
    vector = _vector(conn, "tinker")
    with pytest.raises(ValueError, match="okf_nearest_chunks: the vector must be a float32 blob of 1,536 bytes"):
        nearest_chunks(conn, vector[:-4], 5)
    bundle = write_bundle(tmp_path / "b", {"a.md": "---\ntype: Note\n---\nalpha\n"})
    db = tmp_path / "b.db"
    build([bundle], db, model="okf-test-hash-8")
    found = nearest_chunks(connection(str(db)), struct.pack("8f", *([0.0] * 8)), 5)
    assert [distance for _, distance in found] == [1.0]
