"""Vectors in the same file: the offline default model, incremental re-embedding, model changes, Ollama failures."""

import socket
import threading
import time

import pytest
import sqlite_utils

from datasette_okf import embed
from datasette_okf.chunks import split_into_chunks
from datasette_okf.embed import DEFAULT_MODEL, EmbeddingError, get_model
from datasette_okf.sqlfunctions import prepare_connection
from datasette_okf.store import build

from .conftest import EXAMPLES, closed_port, write_bundle


@pytest.fixture
def no_network(monkeypatch):
    """Any attempt to open a socket fails the test: the default model must need none."""

    def refuse(*args, **kwargs):
        raise AssertionError(f"network use attempted: {args!r}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def open_db(path):
    db = sqlite_utils.Database(path)
    prepare_connection(db.conn)
    return db


NEAREST = """select chunks.concept_id from chunk_vectors join chunks on chunks.id = chunk_vectors.rowid
where chunk_vectors.embedding match okf_embed(?) and k = ? order by chunk_vectors.distance"""


def test_default_model_end_to_end_offline(no_network, tmp_path):
    db_path = tmp_path / "campaign.db"
    report = build([EXAMPLES], db_path)
    assert report.embedding.model == DEFAULT_MODEL and report.embedding.dimensions == 384
    db = open_db(db_path)
    chunks = db.execute("select count(*) from chunks").fetchone()[0]
    assert report.embedding.embedded == chunks > 100
    assert db.execute("select count(*) from chunk_vectors").fetchone()[0] == chunks
    # paraphrases with little word overlap find their notes
    nearest = lambda q: [row[0] for row in db.execute(NEAREST, [q, 3])]
    assert "campaign/people/teodor-vask" == nearest("who is the tinker?")[0]
    assert any("harbour-charter" in c for c in nearest("what does a ship pay to come into port?"))
    assert "campaign/places/the-sump" in nearest("a witch living down in the sewers")
    # okf_embed works in plain SQL, as in Datasette's editor
    rows = db.execute(
        "select rowid from chunk_vectors where embedding match okf_embed(?) and k = 5", ["the lighthouse lamp"]
    ).fetchall()
    assert len(rows) == 5


def test_default_model_vectors_are_unit_length_and_deterministic(no_network):
    encoder = embed.minilm()
    a, b = encoder.encode(["The harbour toll is twelve marks.", "The harbour toll is twelve marks."])
    assert abs(float((a * a).sum()) - 1.0) < 1e-4
    assert float((a * b).sum()) > 0.9999


def test_one_edit_reembeds_only_that_notes_changed_chunks(test_models, tmp_path):
    body = "## One\n\nFirst section text here.\n\n## Two\n\nSecond section text here.\n"
    root = write_bundle(tmp_path / "kb", {"a.md": "---\ntype: T\n---\n" + body, "b.md": "---\ntype: T\n---\nOther note text.\n"})
    db_path = tmp_path / "kb.db"
    first = build([root], db_path, model="okf-test-hash-8")
    assert first.embedding.embedded == 3
    (root / "a.md").write_text("---\ntype: T\n---\n" + body.replace("Second section", "Rewritten section"))
    second = build([root], db_path, model="okf-test-hash-8")
    assert second.embedding.embedded == 1  # only section Two changed
    db = open_db(db_path)
    assert db.execute("select count(*) from chunk_vectors").fetchone()[0] == 3
    assert db.execute("select count(*) from chunks").fetchone()[0] == 3
    # no --model: the model the file was built with is kept, and nothing is left to do
    third = build([root], db_path)
    assert third.up_to_date and third.embedding is None


def test_changing_model_or_dimension_reembeds_everything(test_models, tmp_path):
    root = write_bundle(tmp_path / "kb", {"a.md": "---\ntype: T\n---\n## A\n\nalpha text\n\n## B\n\nbeta text\n"})
    db_path = tmp_path / "kb.db"
    build([root], db_path, model="okf-test-hash-8")
    report = build([root], db_path, model="okf-test-hash-16")
    assert report.embedding.model_changed_from == "okf-test-hash-8"
    assert report.embedding.embedded == 2 and report.embedding.dimensions == 16
    db = open_db(db_path)
    meta = dict(db.execute("select key, value from meta where key like 'embedding%'").fetchall())
    assert meta == {"embedding_model": "okf-test-hash-16", "embedding_dimensions": "16"}
    assert len(db.execute("select embedding from chunk_vectors limit 1").fetchone()[0]) == 16 * 4


def test_querying_with_another_model_is_a_clear_error(test_models, tmp_path, capfd):
    from sqlite_utils.utils import sqlite3

    root = write_bundle(tmp_path / "kb", {"a.md": "---\ntype: T\n---\nalpha\n"})
    db_path = tmp_path / "kb.db"
    build([root], db_path, model="okf-test-hash-8")
    db = open_db(db_path)
    assert db.execute("select okf_embed('alpha', 'okf-test-hash-8') = okf_embed('alpha')").fetchone()[0] == 1
    sqlite3.enable_callback_tracebacks(True)  # as importing Datasette does, for good: the reason reaches its log
    with pytest.raises(sqlite3.OperationalError):
        db.execute("select okf_embed('alpha', 'okf-minilm')").fetchone()
    assert "this database was embedded with 'okf-test-hash-8', not 'okf-minilm'" in capfd.readouterr().err


def test_no_embed_then_embed_fills_the_gaps(test_models, tmp_path):
    root = write_bundle(tmp_path / "kb", {"a.md": "---\ntype: T\n---\nalpha\n", "b.md": "---\ntype: T\n---\nbeta\n"})
    db_path = tmp_path / "kb.db"
    report = build([root], db_path, embed=False)
    assert report.embedding is None
    assert "chunk_vectors" not in sqlite_utils.Database(db_path).table_names()
    report = build([root], db_path, model="okf-test-hash-8")
    assert not report.up_to_date and report.embedding.embedded == 2


def test_chunk_ids_stay_stable_for_unchanged_text(test_models, tmp_path):
    root = write_bundle(tmp_path / "kb", {"a.md": "---\ntype: T\n---\n## A\n\nalpha words\n\n## B\n\nbeta words\n"})
    db_path = tmp_path / "kb.db"
    build([root], db_path, model="okf-test-hash-8")
    before = dict(open_db(db_path).execute("select heading, id from chunks").fetchall())
    (root / "a.md").write_text("---\ntype: T\n---\n## New\n\nnew words\n\n## A\n\nalpha words\n\n## B\n\nbeta words\n")
    build([root], db_path, model="okf-test-hash-8")
    after = dict(open_db(db_path).execute("select heading, id from chunks").fetchall())
    assert after["A"] == before["A"] and after["B"] == before["B"]
    assert [c.heading for c in split_into_chunks((root / "a.md").read_text().split("---", 2)[2])] == ["New", "A", "B"]


def test_unknown_ollama_model_with_no_server_fails_fast(monkeypatch, tmp_path):
    monkeypatch.setenv("LLM_USER_PATH", str(tmp_path / "llm"))
    port = closed_port()
    monkeypatch.setenv("OLLAMA_HOST", f"127.0.0.1:{port}")
    started = time.perf_counter()
    with pytest.raises(EmbeddingError, match=f"no Ollama server answered at http://127.0.0.1:{port}"):
        get_model("ollama/nomic-embed-text")
    assert time.perf_counter() - started < 10


@pytest.fixture
def silent_server():
    """A loopback server that accepts connections and never replies."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    accepted = []
    stop = threading.Event()

    def accept():
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                accepted.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join()
    for conn in accepted:
        conn.close()
    server.close()


def test_a_server_that_never_answers_hits_the_deadline(monkeypatch, tmp_path, silent_server):
    monkeypatch.setenv("LLM_USER_PATH", str(tmp_path / "llm"))
    monkeypatch.setenv("OLLAMA_HOST", f"127.0.0.1:{silent_server}")
    monkeypatch.setenv("OKF_MODEL_DEADLINE", "2")
    started = time.perf_counter()
    with pytest.raises(EmbeddingError, match=rf"no answer within 2 s.*127.0.0.1:{silent_server}"):
        get_model("ollama/nomic-embed-text")
    assert time.perf_counter() - started < 5
    # the default model never asks llm's registry, so it still works
    assert len(embed.embed_texts(get_model(), ["still here"])[0]) == 384 * 4


def test_build_with_an_unreachable_model_leaves_the_database_alone(monkeypatch, tmp_path, test_models):
    root = write_bundle(tmp_path / "kb", {"a.md": "---\ntype: T\n---\nalpha\n"})
    db_path = tmp_path / "kb.db"
    build([root], db_path, model="okf-test-hash-8")
    before = db_path.read_bytes()
    with pytest.raises(EmbeddingError, match="no Ollama server answered"):
        build([root], db_path, model="ollama/nomic-embed-text")
    assert db_path.read_bytes() == before


def test_query_embeddings_are_cached(test_models):
    model = test_models["okf-test-hash-8"]
    embed.embed_query.cache_clear()
    first = embed.embed_query("okf-test-hash-8", "who is the tinker?")
    calls = model.calls
    assert embed.embed_query("okf-test-hash-8", "who is the tinker?") == first
    assert model.calls == calls
    embed.embed_query("okf-test-hash-8", "another question")
    assert model.calls == calls + 1
