"""The vector cache shared between databases (issue 18 §2): a second database from the same notes embeds nothing."""

import logging
import os
import sqlite3

import llm
import pytest
import sqlite_utils
from click.testing import CliRunner
from datasette.cli import cli

from datasette_okf import embed, vector_cache
from datasette_okf.calibrate import OFF_TOPIC
from datasette_okf.sqlfunctions import prepare_connection
from datasette_okf.store import build
from datasette_okf.vector_cache import VectorCache, default_path

from .conftest import HashEmbedding, write_bundle

NOT_CHUNKS = {"dimension probe", *OFF_TOPIC}  # what a build also embeds: the dimension probe, the gate's calibration
SECTIONS = 20  # more chunks than one batch of 16


def notes(root, changed: str = ""):
    """Three notes, 2 + SECTIONS + 1 chunks; `changed` rewrites one section of a.md."""
    many = "".join(f"## Part {i}\n\nThe quartermaster counts crate {i} of salted {i * 7} fish.\n\n" for i in range(SECTIONS))
    return write_bundle(root, {
        "a.md": f"---\ntype: Person\ndescription: A harbour pilot\n---\n## Work\n\nGuides ships past the reef.{changed}\n\n"
                "## Family\n\nHer brother keeps the lighthouse.\n",
        "b.md": "---\ntype: Ledger\n---\n" + many,
        "c.md": "---\ntype: Place\n---\nA quiet cove north of the harbour.\n",
    })


CHUNKS = 2 + SECTIONS + 1


def vectors(db_path) -> list[tuple[str, int, bytes]]:
    db = sqlite_utils.Database(db_path)
    prepare_connection(db.conn)
    return db.execute(
        "select chunks.concept_id, chunks.seq, chunk_vectors.embedding from chunks"
        " join chunk_vectors on chunk_vectors.rowid = chunks.id order by 1, 2"
    ).fetchall()


def record(model, monkeypatch) -> list[str]:
    """Every text `model` is asked to embed, in order."""
    seen: list[str] = []
    original = model.embed_batch

    def embed_batch(items):
        items = list(items)
        seen.extend(items)
        return original(items)

    monkeypatch.setattr(model, "embed_batch", embed_batch)
    return seen


def chunk_texts(seen: list[str]) -> list[str]:
    return [text for text in seen if text not in NOT_CHUNKS]


def test_a_second_database_from_the_same_notes_asks_the_model_for_nothing(test_models, tmp_path, monkeypatch,
                                                                            embedding_cache_file):
    root = notes(tmp_path / "kb")
    seen = record(test_models["okf-test-hash-8"], monkeypatch)
    first = build([root], tmp_path / "a.db", model="okf-test-hash-8")
    assert (first.embedding.embedded, first.embedding.cached) == (CHUNKS, 0)
    assert len(chunk_texts(seen)) == CHUNKS  # the recorder sees every chunk the model embeds
    assert first.embedding.cache == str(embedding_cache_file)
    seen.clear()
    second = build([root], tmp_path / "b.db", model="okf-test-hash-8")
    assert chunk_texts(seen) == []  # not one chunk reached the model
    assert (second.embedding.embedded, second.embedding.cached) == (0, CHUNKS)
    assert vectors(tmp_path / "b.db") == vectors(tmp_path / "a.db")
    assert len(vectors(tmp_path / "b.db")) == CHUNKS


def test_a_changed_chunk_is_embedded_and_the_rest_come_from_the_cache(test_models, tmp_path, monkeypatch):
    build([notes(tmp_path / "kb")], tmp_path / "a.db", model="okf-test-hash-8")
    seen = record(test_models["okf-test-hash-8"], monkeypatch)
    report = build([notes(tmp_path / "kb2", changed=" And past the shoals.")], tmp_path / "b.db", model="okf-test-hash-8")
    assert (report.embedding.embedded, report.embedding.cached) == (1, CHUNKS - 1)
    [text] = chunk_texts(seen)
    assert "And past the shoals." in text
    fresh = build([tmp_path / "kb2"], tmp_path / "fresh.db", model="okf-test-hash-8", embedding_cache=False)
    assert fresh.embedding.embedded == CHUNKS
    assert [v for _, _, v in vectors(tmp_path / "b.db")] == [v for _, _, v in vectors(tmp_path / "fresh.db")]


class Reversed(HashEmbedding):
    """Same dimension as okf-test-hash-8, other vectors: the hash model's buckets reversed."""

    def embed_batch(self, items):
        self.calls += 1
        return (vector[::-1] for vector in HashEmbedding("x", self.dims).embed_batch(items))


class _Other:
    @llm.hookimpl
    def register_embedding_models(self, register):
        register(Reversed("okf-test-reversed-8", 8))


@pytest.fixture
def other_model(test_models):
    llm.plugins.pm.register(_Other(), name="okf-test-other")
    yield "okf-test-reversed-8"
    llm.plugins.pm.unregister(name="okf-test-other")


def test_another_model_never_gets_this_models_vectors(test_models, other_model, tmp_path):
    root = notes(tmp_path / "kb")
    build([root], tmp_path / "a.db", model="okf-test-hash-8")
    report = build([root], tmp_path / "b.db", model=other_model)  # same dimension, another model id
    assert (report.embedding.embedded, report.embedding.cached) == (CHUNKS, 0)
    ours, theirs = vectors(tmp_path / "a.db"), vectors(tmp_path / "b.db")
    assert all(a[2] != b[2] for a, b in zip(ours, theirs) if a[2] != a[2][::-1])
    again = build([root], tmp_path / "c.db", model=other_model)
    assert (again.embedding.embedded, again.embedding.cached) == (0, CHUNKS)
    assert vectors(tmp_path / "c.db") == theirs


def test_a_cached_vector_of_another_dimension_is_ignored(test_models, tmp_path, embedding_cache_file):
    root = notes(tmp_path / "kb")
    build([root], tmp_path / "a.db", model="okf-test-hash-8")
    with sqlite3.connect(embedding_cache_file) as conn:  # one entry 16 floats wide, one 32 characters of text
        (one, vector), (two, _) = conn.execute("select digest, vector from vectors order by digest limit 2")
        conn.execute("update vectors set vector = ? where digest = ?", [vector * 2, one])
        conn.execute("update vectors set vector = ? where digest = ?", ["[" + ",".join("0" * 8) + "]" + " " * 15, two])
    report = build([root], tmp_path / "b.db", model="okf-test-hash-8")
    assert (report.embedding.embedded, report.embedding.cached) == (2, CHUNKS - 2)
    assert vectors(tmp_path / "b.db") == vectors(tmp_path / "a.db")  # the model's own 8-d vectors were used
    with sqlite3.connect(embedding_cache_file) as conn:  # and replaced the wrong ones in the cache
        assert conn.execute("select count(*) from vectors where typeof(vector) != 'blob' or length(vector) != 32"
                            ).fetchone()[0] == 0


def _corrupt(path):
    path.write_bytes(b"this is not a SQLite database\n" * 200)
    return "file is not a database"


def _parent_is_a_file(path):
    path.parent.mkdir(parents=True, exist_ok=True)
    (path.parent / "file").write_text("x")
    return path.parent / "file" / "vectors.db"


def _a_folder(path):
    path.mkdir(parents=True)
    return "unable to open database file"


@pytest.mark.parametrize("spoil", [_corrupt, _parent_is_a_file, _a_folder])
def test_an_unusable_cache_warns_once_and_the_build_makes_the_same_vectors(test_models, tmp_path, monkeypatch,
                                                                          embedding_cache_file, caplog, spoil):
    root = notes(tmp_path / "kb")
    build([root], tmp_path / "plain.db", model="okf-test-hash-8", embedding_cache=False)
    outcome = spoil(embedding_cache_file)
    path = outcome if isinstance(outcome, os.PathLike) else embedding_cache_file
    monkeypatch.setenv("DATASETTE_OKF_CACHE", str(path))
    before = path.read_bytes() if path.is_file() else None
    with caplog.at_level(logging.WARNING, logger="datasette_okf.vector_cache"):
        report = build([root], tmp_path / "a.db", model="okf-test-hash-8")
    assert report.embedding.embedded == CHUNKS and report.embedding.cached == 0 and report.embedding.cache is None
    assert vectors(tmp_path / "a.db") == vectors(tmp_path / "plain.db")
    [warning] = caplog.records
    assert str(path) in warning.getMessage() and "building without it" in warning.getMessage()
    assert report.embedding.cache_problem.startswith(str(path))
    if isinstance(outcome, str):
        assert outcome in warning.getMessage()
    if before is not None:
        assert path.read_bytes() == before  # a file that is not ours is left as it was


def test_a_cache_another_writer_holds_warns_once_and_every_chunk_is_still_embedded(test_models, tmp_path, monkeypatch,
                                                                                    embedding_cache_file, caplog):
    monkeypatch.setattr(vector_cache, "BUSY_TIMEOUT", 0.05)
    VectorCache(embedding_cache_file).close()  # the file exists, in WAL mode
    holder = sqlite3.connect(embedding_cache_file, isolation_level=None)
    holder.execute("begin immediate")  # another build's write that does not end: lookups work, writes time out
    try:
        with caplog.at_level(logging.WARNING, logger="datasette_okf.vector_cache"):
            report = build([notes(tmp_path / "kb")], tmp_path / "a.db", model="okf-test-hash-8")
    finally:
        holder.execute("rollback")
        holder.close()
    assert report.embedding.embedded == CHUNKS > 16  # several batches, each would have been written
    assert len(caplog.records) == 1 and "locked" in caplog.records[0].getMessage()
    assert len(vectors(tmp_path / "a.db")) == CHUNKS


def test_no_embedding_cache_neither_reads_nor_writes_it(test_models, tmp_path, monkeypatch, embedding_cache_file):
    root = notes(tmp_path / "kb")
    report = build([root], tmp_path / "a.db", model="okf-test-hash-8", embedding_cache=False)
    assert report.embedding.embedded == CHUNKS and report.embedding.cache is None
    assert not embedding_cache_file.exists()
    build([root], tmp_path / "b.db", model="okf-test-hash-8")  # fills the cache
    seen = record(test_models["okf-test-hash-8"], monkeypatch)
    report = build([root], tmp_path / "c.db", model="okf-test-hash-8", embedding_cache=False)
    assert (report.embedding.embedded, report.embedding.cached) == (CHUNKS, 0)
    assert len(chunk_texts(seen)) == CHUNKS


def test_an_interrupted_build_keeps_what_it_embedded_for_the_next_one(test_models, tmp_path, monkeypatch):
    root = notes(tmp_path / "kb")
    model = test_models["okf-test-hash-8"]
    original, batches = model.embed_batch, []

    def failing_on_the_second_chunk_batch(items):
        items = list(items)
        if not set(items) <= NOT_CHUNKS:
            batches.append(items)
            if len(batches) == 2:
                raise RuntimeError("the model's server went away")
        return original(items)

    monkeypatch.setattr(model, "embed_batch", failing_on_the_second_chunk_batch)
    with pytest.raises(embed.EmbeddingError, match="went away"):
        build([root], tmp_path / "a.db", model="okf-test-hash-8")
    monkeypatch.setattr(model, "embed_batch", original)
    report = build([root], tmp_path / "a.db", model="okf-test-hash-8")
    assert (report.embedding.cached, report.embedding.embedded) == (16, CHUNKS - 16)  # the first batch was kept


def test_the_cache_holds_no_note_text_and_only_its_owner_reads_it(test_models, tmp_path, embedding_cache_file):
    build([notes(tmp_path / "kb")], tmp_path / "a.db", model="okf-test-hash-8")
    stored = b"".join(p.read_bytes() for p in embedding_cache_file.parent.iterdir())
    assert b"quartermaster" not in stored and b"lighthouse" not in stored
    assert embedding_cache_file.stat().st_mode & 0o777 == 0o600
    with sqlite3.connect(embedding_cache_file) as conn:
        assert conn.execute("select count(*), count(distinct model), min(length(digest)) from vectors").fetchone() == (
            CHUNKS, 1, 64)


def test_the_default_model_is_cached_under_its_canonical_id(tmp_path, monkeypatch, embedding_cache_file):
    root = write_bundle(tmp_path / "kb", {"a.md": "---\ntype: T\n---\n## One\n\nThe tinker mends kettles.\n\n"
                                                  "## Two\n\nHe works for the guild.\n"})
    first = build([root], tmp_path / "a.db", model="okf-minilm")  # an alias
    assert first.embedding.embedded == 2
    encoded: list[str] = []
    original = embed.minilm().encode

    def encode(texts):
        encoded.extend(texts)
        return original(texts)

    monkeypatch.setattr(embed.minilm(), "encode", encode)
    second = build([root], tmp_path / "b.db")
    assert (second.embedding.embedded, second.embedding.cached) == (0, 2)
    assert [text for text in encoded if text not in NOT_CHUNKS] == []
    with sqlite3.connect(embedding_cache_file) as conn:
        assert conn.execute("select distinct model, length(vector) from vectors").fetchall() == [
            (embed.DEFAULT_MODEL, 4 * embed.DIMENSIONS)]
    assert vectors(tmp_path / "b.db") == vectors(tmp_path / "a.db")


def test_the_cli_chooses_or_turns_off_the_cache_and_says_what_came_from_it(test_models, tmp_path,
                                                                           embedding_cache_file):
    root = notes(tmp_path / "kb")
    chosen = tmp_path / "elsewhere" / "cache.db"

    def run(*args):
        return CliRunner().invoke(cli, ["okf", "build", str(root), "-m", "okf-test-hash-8", *args],
                                  catch_exceptions=False)

    result = run("-o", str(tmp_path / "a.db"), "--embedding-cache", str(chosen))
    assert result.exit_code == 0, result.output
    assert f"vectors: {CHUNKS} chunks embedded, 0 from the cache, with okf-test-hash-8" in result.output
    assert chosen.exists() and not embedding_cache_file.exists()
    result = run("-o", str(tmp_path / "b.db"), "--embedding-cache", str(chosen))
    assert f"vectors: 0 chunks embedded, {CHUNKS} from the cache, with okf-test-hash-8" in result.output
    result = run("-o", str(tmp_path / "c.db"), "--no-embedding-cache")
    assert f"vectors: {CHUNKS} chunks embedded with okf-test-hash-8" in result.output
    assert not embedding_cache_file.exists()
    result = run("-o", str(tmp_path / "d.db"))  # the default: $DATASETTE_OKF_CACHE
    assert f"vectors: {CHUNKS} chunks embedded, 0 from the cache, with" in result.output
    assert embedding_cache_file.exists()
    result = run("-o", str(tmp_path / "e.db"), "--embedding-cache", str(chosen), "--no-embedding-cache")
    assert result.exit_code == 2 and "exclude each other" in result.output
    assert not (tmp_path / "e.db").exists()


def test_the_default_location(tmp_path, monkeypatch):
    monkeypatch.setenv("DATASETTE_OKF_CACHE", str(tmp_path / "mine.db"))
    assert default_path() == tmp_path / "mine.db"
    monkeypatch.delenv("DATASETTE_OKF_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_path() == tmp_path / "xdg" / "datasette-okf" / "vectors.db"
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for unset in ("", "relative/cache"):  # an empty or relative XDG_CACHE_HOME is ignored, as the spec says
        monkeypatch.setenv("XDG_CACHE_HOME", unset)
        assert default_path() == tmp_path / "home" / ".cache" / "datasette-okf" / "vectors.db"
