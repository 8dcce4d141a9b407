"""What is made from one build of a file is made once for every connection of the process, and made again after
the next build: Datasette reads from several threads, each with its own connection."""

from __future__ import annotations

import json
import sqlite3
import threading
import time

import pytest

from datasette_okf import hamming, nearest, sqlfunctions
from datasette_okf.options import ContextOptions
from datasette_okf.per_build import PerBuild
from datasette_okf.retrieve import connection, context_for, prepare
from datasette_okf.sqlfunctions import TITLE_INDEXES
from datasette_okf.store import build

from .conftest import wait_for_preparing, write_bundle


def _names(conn, text: str) -> list[str]:
    return [row["id"] for row in json.loads(conn.execute("select okf_title_names(?)", [text]).fetchone()[0])]


def test_connections_to_one_build_share_its_title_index_and_a_rebuild_makes_a_new_one(tmp_path):
    """At 100k notes a title index is 70 MB and 1.3 s to make: one per reading thread took Datasette's peak RSS to
    the edge of its 500 MB target. An open connection still sees the next build's titles."""
    bundle = write_bundle(tmp_path / "b", {"Maren Holt.md": "# Maren Holt\nCaptain of the Gull.\n"})
    db = tmp_path / "b.db"
    build([bundle], db, embed=False)
    first, second = connection(str(db)), connection(str(db))
    assert _names(first, "Where is Maren Holt?") == _names(second, "Who is Maren Holt?") == ["b/Maren Holt"]
    assert [build for build in TITLE_INDEXES.made if build[0] == str(db)] != []  # what okf_title_names read
    assert TITLE_INDEXES.get(first) is TITLE_INDEXES.get(second)
    before = TITLE_INDEXES.get(first)
    (bundle / "Port Vell.md").write_text("# Port Vell\nA fishing town.\n")
    build([bundle], db, embed=False)
    assert _names(second, "Is Maren Holt in Port Vell?") == ["b/Maren Holt", "b/Port Vell"]
    assert TITLE_INDEXES.get(first) is TITLE_INDEXES.get(second) is not before


def test_what_was_made_while_a_build_committed_is_not_shared(tmp_path):
    """Made from a read that a build overtook, it may hold either state: the caller gets it, no other connection."""
    states = iter([("f", "1"), ("f", "2"), ("f", "2"), ("f", "2"), ("f", "2")])
    made: list[str] = []
    cache = PerBuild(lambda conn: next(states), lambda conn: made.append("made") or len(made))
    assert cache.get(None) == 1  # the state changed while making: not kept
    assert cache.get(None) == 2 and cache.get(None) == 2 and len(made) == 2  # kept from the second on



def test_a_thread_asking_for_a_state_another_is_making_waits_for_it():
    """A server preparing a file as it starts and its first question at once made two copies of each index and of
    the model: a 10k-note Datasette's peak RSS 350 -> 540 MB. Now the second waits and gets the first's."""
    calls, made, results = [], [], []
    second_in, release = threading.Event(), threading.Event()

    def state(conn):
        calls.append(conn)
        if len(calls) == 2:
            second_in.set()
        return ("f", "1")

    def make(conn):
        made.append(conn)
        release.wait(10)
        return f"made by {conn}"

    cache = PerBuild(state, make)
    threads = [threading.Thread(target=lambda who=who: results.append(cache.get(who))) for who in ("first", "second")]
    threads[0].start()
    while not made:
        time.sleep(0.005)
    threads[1].start()
    second_in.wait(10)
    time.sleep(0.05)  # the second is past its state and at the cache
    release.set()
    for thread in threads:
        thread.join(10)
    assert made == ["first"] and results == ["made by first", "made by first"]


@pytest.fixture(autouse=True)
def _no_preparing():
    wait_for_preparing()


def _copy(db, to):
    """A copy of a built file under a name no other test has read: nothing made from it yet in this process."""
    with sqlite3.connect(db) as source, sqlite3.connect(to) as copy:
        source.backup(copy)
    return str(to)


def _not_again(conn):
    raise AssertionError("made again: prepare should have made it")


# a question that reads every index: it asks which (categories), names a year (dates) and a title
QUESTION = "Which goddess did the Lantern Keepers honour in 1346?"


def test_prepare_makes_what_a_first_question_reads(campaign_db, tmp_path, monkeypatch):
    """A server prepares each database as it starts (the `startup` hook): its first question then makes no index and
    reads no vectors of the build, which at 10k notes cost that question 0.4-0.8 s and the next new one 0.2-0.3 s."""
    db = _copy(campaign_db, tmp_path / "copy.db")
    assert list(prepare(db)) == ["titles", "categories", "dates", "series", "model", "vectors"]
    for cache in (sqlfunctions.TITLE_INDEXES, sqlfunctions.CATEGORY_INDEXES, sqlfunctions.DATED_INDEXES,
                  nearest._VECTORS, hamming._CODES):
        monkeypatch.setattr(cache, "make", _not_again)
    result = context_for(db, QUESTION)
    assert result["vectors"] == "used" and result["nodes"][0]["title"] == "The Lantern Keepers"


def test_without_prepare_the_first_question_makes_them(campaign_db, tmp_path, monkeypatch):
    """The test above can fail: a question on a file nothing has prepared makes its indexes itself."""
    db = _copy(campaign_db, tmp_path / "copy.db")
    monkeypatch.setattr(sqlfunctions.TITLE_INDEXES, "make", _not_again)
    with pytest.raises(Exception, match="user-defined function raised exception"):  # pysqlite3's or sqlite3's
        context_for(db, QUESTION)


def test_prepare_reads_the_one_bit_codes_where_questions_would(campaign_db, tmp_path, monkeypatch):
    """From `binary_from` chunks the vector list reads 1-bit codes, not the floats: prepare reads what it would."""
    db = _copy(campaign_db, tmp_path / "copy.db")
    assert list(prepare(db, ContextOptions(binary_from=1)))[-1] == "codes"
    monkeypatch.setattr(hamming._CODES, "make", _not_again)
    monkeypatch.setattr(nearest._VECTORS, "make", _not_again)
    assert context_for(db, QUESTION, binary_from=1)["nodes"]


def test_prepare_never_calls_a_model_that_is_not_the_embedded_one(tmp_path, test_models, monkeypatch):
    """Another model may be a server (Ollama) that is not running: a start-up must not wait on it, or fail by it."""
    bundle = write_bundle(tmp_path / "b", {"Maren Holt.md": "# Maren Holt\nCaptain of the Gull.\n"})
    db = tmp_path / "b.db"
    build([bundle], db, model="okf-test-hash-8")

    def no_model(*args):
        raise AssertionError("prepare called the model")

    monkeypatch.setattr(sqlfunctions, "embed_query", no_model)
    assert list(prepare(str(db))) == ["titles", "categories", "dates", "series"]


def test_prepare_leaves_the_vectors_to_a_build_that_is_still_embedding_them(tmp_path):
    """`build --watch` commits a batch of vectors a second, each a new state of the vectors: a following server
    (web.Follower) prepares after each commit, and reading them all every time would be wasted. The indexes and the
    model are prepared; the vectors once the last batch is in."""
    from datasette_okf.embed import DEFAULT_MODEL, get_model
    from datasette_okf.store import embed_pending

    bundle = write_bundle(tmp_path / "b", {f"Captain {n}.md": f"# Captain {n}\nSails the {n} seas.\n" for n in "ABCD"})
    db = tmp_path / "b.db"
    build([bundle], db, vectors_behind=True)
    assert list(prepare(str(db))) == ["titles", "categories", "dates", "series", "model"]
    model = get_model(DEFAULT_MODEL)
    assert embed_pending(db, model, DEFAULT_MODEL, batch=2) > 0
    assert list(prepare(str(db))) == ["titles", "categories", "dates", "series", "model"]
    while embed_pending(db, model, DEFAULT_MODEL, batch=2):
        pass
    assert list(prepare(str(db))) == ["titles", "categories", "dates", "series", "model", "vectors"]


def test_a_make_that_fails_leaves_nothing_behind_and_the_next_ask_makes_it():
    attempts = []

    def make(conn):
        attempts.append(conn)
        if len(attempts) == 1:
            raise OSError("disk read error")
        return "made"

    cache = PerBuild(lambda conn: ("f", "1"), make)
    with pytest.raises(OSError):
        cache.get("first")
    assert cache.making == {} and cache.get("second") == "made" and cache.making == {}
