"""A live vault: `build --watch --serve` follows the folder (watch.py), and a file answers before its vectors exist.

The watcher tests run the real command (the real default model, a real Datasette subprocess) on a copy of
tests/fixtures/vault and poll over HTTP until the database shows each change; how fast it converges is measured
by benchmarks/live_vault.py, not asserted here.
"""

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from datasette_okf.retrieve import context_for
from datasette_okf.schema import VECTORS_PENDING, read_meta
from datasette_okf.store import build, build_outputs, embed_pending, last_chunk_id
from datasette_okf.watch import is_change

from .conftest import VAULT, closed_port

DEADLINE = 60  # seconds: far above what the benchmark measures, so a slow shared machine does not fail a test


def test_editors_temporary_files_hidden_folders_and_our_outputs_are_not_changes(tmp_path):
    outputs = {p.resolve() for p in build_outputs(tmp_path / "vault" / "out.db")}
    for path in ("vault/.obsidian/workspace.json", "vault/.git/index", "vault/People/.Nessa.md.swp",
                 "vault/People/Nessa.md~", "vault/4913", "vault/.#Nessa.md", "vault/People/Nessa.md.tmp",
                 "vault/.DS_Store", "vault/out.db", "vault/out.db-wal", "vault/out.timeline.md"):
        assert not is_change(str(tmp_path / path), outputs), path
    for path in ("vault/People/Nessa.md", "vault/maps/harbour.png", "vault/.hidden-note.md"):
        assert is_change(str(tmp_path / path), outputs), path


def test_a_file_answers_before_its_vectors_and_says_how_far_they_are(tmp_path, test_models):
    db = tmp_path / "myvault.db"
    report = build([VAULT], db, model="okf-test-hash-8", vectors_behind=True)
    total = sum(b.chunks for b in report.bundles)
    assert report.vectors_pending == total > 10
    first = context_for(str(db), "Who is Nessa Thorne?")
    assert first["vectors"] == f"partial: 0 of {total} chunks"
    assert first["confident"] and first["nodes"][0]["id"] == "vault/People/Nessa Thorne"
    model = test_models["okf-test-hash-8"]
    left = embed_pending(db, model, "okf-test-hash-8", batch=10)
    assert left == total - 10
    assert context_for(str(db), "Who is Nessa Thorne?")["vectors"] == f"partial: 10 of {total} chunks"
    # nothing names a note and no keyword covers the question: with every vector that would be a refusal on
    # similarity; while vectors are missing it is answered from what there is, and says so
    vague = context_for(str(db), "whereabouts of the smugglers' lantern signals", vector_threshold=0.999)
    assert vague["confident"] and "vectors are still being computed" in vague["reason"]
    while left:
        left = embed_pending(db, model, "okf-test-hash-8", batch=10)
    import sqlite3

    with sqlite3.connect(db) as conn:
        meta = read_meta(conn)
    assert VECTORS_PENDING not in meta and "gate" in meta
    assert context_for(str(db), "Who is Nessa Thorne?")["vectors"] == "used"
    assert not context_for(str(db), "whereabouts of the smugglers' lantern signals", vector_threshold=0.999)["confident"]


def test_an_edited_note_is_embedded_before_the_backlog_and_the_backlog_shortest_first(tmp_path, test_models):
    import sqlite3

    bundle = tmp_path / "vault"
    shutil.copytree(VAULT, bundle)
    db = tmp_path / "v.db"
    build([bundle], db, model="okf-test-hash-8", vectors_behind=True)
    model = test_models["okf-test-hash-8"]
    embed_pending(db, model, "okf-test-hash-8", batch=3)
    with sqlite3.connect(db) as conn:
        lengths = [n for (n,) in conn.execute("select length(text) from chunks order by embedded_with is null, "
                                              "length(text)")]
    assert lengths[:3] == sorted(lengths)[:3]  # as a whole build: similar lengths pad less
    backlog_until = last_chunk_id(db)
    (bundle / "People" / "Nessa Thorne.md").write_text("# Nessa Thorne\n\nShe keeps a parrot called Squawk.\n")
    build([bundle], db, model="okf-test-hash-8", vectors_behind=True)
    embed_pending(db, model, "okf-test-hash-8", batch=1, first_above=backlog_until)
    with sqlite3.connect(db) as conn:
        newest = conn.execute("select concept_id, embedded_with from chunks where id > ?", [backlog_until]).fetchall()
    assert newest == [("vault/People/Nessa Thorne", "okf-test-hash-8")]


# --- the real command


def get_json(url):
    with urllib.request.urlopen(url, timeout=30) as response:
        return json.load(response)


def ask(base, question):
    return get_json(base + "-/context_for.json?" + urllib.parse.urlencode({"q": question, "db": "myvault"}))


def concept_ids(base):
    rows = get_json(base + "myvault.json?" + urllib.parse.urlencode(
        {"sql": "select id from concepts order by id", "_shape": "array"}))
    return {row["id"] for row in rows}


def until(check, what):
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:
        try:
            value = check()
        except OSError:
            value = None
        if value:
            return value
        time.sleep(0.2)
    pytest.fail(f"not within {DEADLINE} s: {what}")


@pytest.fixture
def live(tmp_path):
    """`datasette okf build COPY -o COPY/myvault.db --watch --serve` (the output inside the folder it watches)."""
    bundle = tmp_path / "vault"
    shutil.copytree(VAULT, bundle)
    (bundle / ".obsidian").mkdir(exist_ok=True)
    port = closed_port()
    log = (tmp_path / "watch.log").open("w")
    # Ctrl-C as a terminal's foreground process gets it: a test run started in the background (`&` in a shell
    # without job control) has SIGINT ignored, which its children inherit, and the watch never stopped (seen
    # twice). A signal with a handler is reset to its default in a new program, an ignored one is not.
    ignored = signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    if ignored:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "datasette", "okf", "build", str(bundle), "-o", str(bundle / "myvault.db"),
             "--watch", "--serve", "--port", str(port)], stdout=log, stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONFAULTHANDLER": "1"},  # SIGABRT prints where every thread is
            start_new_session=True)  # its own process group: the server it starts goes with it, whatever happens
    finally:
        if ignored:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
    base = f"http://127.0.0.1:{port}/"
    try:
        until(lambda: ask(base, "Who is Nessa Thorne?")["confident"], "the first answer")
        yield bundle, base, tmp_path / "watch.log", process
    finally:
        if process.poll() is None:
            process.terminate()
            process.wait(timeout=20)
        with contextlib.suppress(ProcessLookupError):  # a watch that was aborted left its Datasette serving
            os.killpg(process.pid, signal.SIGKILL)
        log.close()


def rebuild_lines(log: Path) -> list[str]:
    return [line for line in log.read_text().splitlines() if ": rebuilt in " in line]


def test_watch_follows_edits_additions_renames_deletes_and_bursts(live):
    bundle, base, log, _ = live
    until(lambda: ask(base, "Who is Nessa Thorne?")["vectors"] == "used", "every vector")
    nessa = bundle / "People" / "Nessa Thorne.md"
    nessa.write_text(nessa.read_text() + "\nShe keeps a red parrot called Squawk.\n")
    until(lambda: "Squawk" in ask(base, "Who keeps a parrot called Squawk?")["context"], "an edit")
    (bundle / "People" / "Orla Vance.md").write_text("# Orla Vance\n\nHarbourmaster of [[Port Vell]].\n")
    until(lambda: "vault/People/Orla Vance" in concept_ids(base), "an added note")
    (bundle / "People" / "Orla Vance.md").rename(bundle / "People" / "Orla Vane.md")
    until(lambda: {"vault/People/Orla Vane"} == {i for i in concept_ids(base) if "Orla" in i}, "a rename")
    (bundle / "Scratchpad.md").unlink()
    until(lambda: "vault/Scratchpad" not in concept_ids(base), "a delete")
    for n in range(20):  # ten saves a second, as an editor's autosave does while you type
        nessa.write_text(f"# Nessa Thorne\n\nDraft {n}: the parrot is called Squawk {n}.\n")
        time.sleep(0.1)
    until(lambda: "Squawk 19" in ask(base, "Who keeps a parrot called Squawk?")["context"], "the last of a burst")
    until(lambda: ask(base, "Who keeps a parrot called Squawk?")["vectors"] == "used", "the burst's vectors")
    assert "Squawk 18" not in ask(base, "Who keeps a parrot called Squawk?")["context"]
    assert "not rebuilt" not in log.read_text() and "Traceback" not in log.read_text()


def test_watch_ignores_its_own_outputs_and_editor_churn_and_stops_cleanly(live):
    bundle, base, log, process = live
    until(lambda: ask(base, "Who is Nessa Thorne?")["vectors"] == "used", "every vector")
    time.sleep(1.5)
    before = rebuild_lines(log)
    (bundle / ".obsidian" / "workspace.json").write_text("{}")
    (bundle / "People" / ".Nessa Thorne.md.swp").write_bytes(b"\0" * 100)
    (bundle / "4913").write_text("")
    time.sleep(2)
    assert rebuild_lines(log) == before  # not even the database and timeline written beside the notes
    process.send_signal(signal.SIGINT)
    try:
        assert process.wait(timeout=20) == 0
    except subprocess.TimeoutExpired:  # seen in full runs: keep what it said, and where each thread was
        process.send_signal(signal.SIGABRT)
        process.wait(timeout=10)
        pytest.fail("build --watch --serve did not stop within 20 s of Ctrl-C; its log ends:\n" + log.read_text()[-6000:])
    assert "stopped watching" in log.read_text()
    with pytest.raises(OSError):
        urllib.request.urlopen(base, timeout=2)


def test_the_question_page_and_json_show_the_embedding_progress(tmp_path, test_models):
    import asyncio

    from datasette.app import Datasette

    db = tmp_path / "myvault.db"
    report = build([VAULT], db, model="okf-test-hash-8", vectors_behind=True)
    embed_pending(db, test_models["okf-test-hash-8"], "okf-test-hash-8", batch=5)
    total = report.vectors_pending

    async def fetch():
        ds = Datasette([str(db)])
        page = await ds.client.get("/-/context_for?db=myvault")
        answer = await ds.client.get("/-/context_for?db=myvault&q=Who+is+Nessa+Thorne%3F")
        data = await ds.client.get("/-/context_for.json?db=myvault&q=Who+is+Nessa+Thorne%3F")
        return page.text, answer.text, data.json()

    page, answer, data = asyncio.run(fetch())
    assert f"Computing vectors: 5 of {total} chunks so far" in page
    assert 'id="okf-vectors-partial"' in answer and f"5 of {total} chunks" in answer
    assert data["vectors"] == f"partial: 5 of {total} chunks"
    while embed_pending(db, test_models["okf-test-hash-8"], "okf-test-hash-8", batch=50):
        pass
    page, answer, data = asyncio.run(fetch())
    assert "Computing vectors" not in page and "okf-vectors-partial" not in answer and data["vectors"] == "used"
