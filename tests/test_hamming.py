"""The in-memory Hamming scan must agree with sqlite-vec's own bit[] KNN, and notice rebuilds."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from datasette_okf.hamming import hamming_candidates
from datasette_okf.retrieve import connection
from datasette_okf.store import build

from .conftest import write_bundle


def _vector(conn, text: str) -> bytes:
    return conn.execute("select okf_embed(?)", [text]).fetchone()[0]


def test_same_distances_as_sqlite_vec_bit_knn(campaign_db):
    conn = connection(str(campaign_db))
    for question in ["Who is the tinker?", "harbour tolls", "a witch in the sewers", "zzz"]:
        vector = _vector(conn, question)
        mine = hamming_candidates(conn, vector, 25)
        theirs = conn.execute(
            "select rowid, distance from chunk_bits where embedding match vec_quantize_binary(?) and k = 25", [vector]
        ).fetchall()
        # the same distances; equal distances may be broken differently at the cut
        distance = {}
        for rowid, code in conn.execute("select rowid, embedding from chunk_bits"):
            query_bits = np.packbits(np.frombuffer(vector, dtype=np.float32) > 0, bitorder="little")
            distance[rowid] = int(np.unpackbits(np.frombuffer(code, dtype=np.uint8) ^ query_bits).sum())
        assert len(mine) == 25
        assert sorted(distance[i] for i in mine) == sorted(int(d) for _, d in theirs)
        assert [distance[i] for i in mine] == sorted(distance[i] for i in mine)  # nearest first


def test_codes_read_a_few_rows_at_a_time_are_every_chunks_code(campaign_db, monkeypatch):
    """The codes are read in batches into arrays made once: 400,280 rows as Python tuples first took Datasette's
    peak RSS at 100k notes up by 135 MB, to the edge of its 500 MB target (README, "Scale")."""
    from datasette_okf import hamming

    monkeypatch.setattr(hamming, "LOAD_BATCH", 7)
    monkeypatch.setattr(hamming, "_CODES", hamming.PerBuild(hamming.chunk_state, hamming._load))  # read afresh
    conn = connection(str(campaign_db))
    ids, codes = hamming.codes_for(conn)
    rows = conn.execute("select rowid, embedding from chunk_bits").fetchall()
    assert len(rows) > 7 * 3 and ids.tolist() == [rowid for rowid, _ in rows]
    expected = np.frombuffer(b"".join(code for _, code in rows), dtype=np.uint8).reshape(len(rows), -1)
    assert codes.shape == (expected.shape[1] // 8, len(rows)) and codes.flags["C_CONTIGUOUS"]
    assert np.array_equal(codes.T.copy().view(np.uint8), expected)


def test_count_larger_than_the_collection_returns_everything(campaign_db):
    conn = connection(str(campaign_db))
    total = conn.execute("select count(*) from chunk_bits").fetchone()[0]
    found = hamming_candidates(conn, _vector(conn, "tinker"), total + 100)
    assert sorted(found) == sorted(r[0] for r in conn.execute("select rowid from chunk_bits"))


def test_a_rebuild_is_seen_by_an_open_connection(tmp_path, test_models):
    bundle = write_bundle(tmp_path / "b", {
        "a.md": "---\ntype: Note\n---\nalpha beta gamma\n",
        "b.md": "---\ntype: Note\n---\ndelta epsilon\n",
    })
    db = tmp_path / "b.db"
    build([bundle], db, model="okf-test-hash-8")
    conn = connection(str(db))
    query = struct.pack("8f", *([1.0] * 8))
    before = hamming_candidates(conn, query, 10)
    assert len(before) == 2
    (bundle / "c.md").write_text("---\ntype: Note\n---\nzeta eta theta\n")
    build([bundle], db)  # in place: the open connection reads the new rows
    after = hamming_candidates(conn, query, 10)
    assert len(after) == 3 and set(before) < set(after)


def test_no_vectors_no_candidates(tmp_path, test_models):
    bundle = write_bundle(tmp_path / "b", {"a.md": "---\ntype: Note\n---\n"})
    db = tmp_path / "b.db"
    build([bundle], db, model="okf-test-hash-8")
    conn = connection(str(db))
    conn.execute("delete from chunk_bits")
    conn.commit()
    assert hamming_candidates(conn, struct.pack("8f", *([1.0] * 8)), 5) == []


def test_a_query_of_another_width_is_refused_not_answered(campaign_db):
    conn = connection(str(campaign_db))
    vector = _vector(conn, "tinker")
    with pytest.raises(ValueError, match="float32 blob of 1,536 bytes, not a blob of 1,532 bytes"):
        hamming_candidates(conn, vector[:-4], 5)
    with pytest.raises(ValueError, match="float32 blob of 1,536 bytes, not str"):
        hamming_candidates(conn, "tinker", 5)
