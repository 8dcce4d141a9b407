"""Records become one SQLite file: schema, incremental rebuilds, prune, atomic replace."""

import contextlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
import sqlite_utils

from datasette_okf import bundle as bundle_module
from datasette_okf import schema, store
from datasette_okf.embed import EmbeddingError
from datasette_okf.store import BuildError, BuildRefused, build

from .conftest import EXAMPLES, VAULT, write_bundle

NOTE = "---\ntype: Person\ntitle: {title}\ntags: [npc, {tag}]\n---\n# {title}\n\nKnows [b](/b.md).\n"


@pytest.fixture
def bundle(tmp_path):
    return write_bundle(
        tmp_path / "alpha",
        {
            "a.md": NOTE.format(title="Ann Harrow", tag="dock"),
            "b.md": NOTE.format(title="Bel Crane", tag="guild"),
            "c.md": "---\ntype: Place\n---\nThe [missing](/nowhere.md) abbey.\n",
        },
    )


def test_one_bundle_builds_to_the_same_rows_in_the_same_order_in_every_process(tmp_path):
    """Rows that belong to a note are written note by note in the order of their ids: it was the order of a set of
    strings, which string hashing seeds afresh in each process, so two builds of one vault differed in their edge
    ids (and any tie a query broke by rowid)."""
    db_path = tmp_path / "examples.db"
    build([EXAMPLES], db_path, embed=False)
    db = sqlite_utils.Database(db_path)
    for table, key in store.PER_CONCEPT:
        keys = [row[0] for row in db.execute(f"select {key} from {table} order by id")]
        assert len(set(keys)) > 1 and keys == sorted(keys), table


def test_schema_and_contents(bundle, tmp_path):
    db_path = tmp_path / "out.db"
    build([bundle], db_path, embed=False)
    db = sqlite_utils.Database(db_path)
    assert set(db.table_names()) >= {
        "concepts", "edges", "link_issues", "build_issues", "external_links", "log_entries", "meta", "concepts_fts",
    }
    assert db["concepts"].detect_fts() == "concepts_fts"
    ann = db["concepts"].get("alpha/a")
    assert json.loads(ann["tags"]) == ["npc", "dock"] and ann["title"] == "Ann Harrow"
    assert json.loads(ann["frontmatter"])["type"] == "Person"
    assert db.execute("select dst, predicate, kind from edges where src = 'alpha/a'").fetchall() == [
        ("alpha/b", "links_to", "link")
    ]
    assert [r["target"] for r in db["link_issues"].rows] == ["/nowhere.md"]
    meta = {r["key"]: r["value"] for r in db["meta"].rows}
    assert meta["format_version"] == schema.FORMAT_VERSION and json.loads(meta["bundles"])["alpha"]["okf_version"] is None
    hits = [r["id"] for r in db.query(
        "select concepts.id from concepts join concepts_fts on concepts.rowid = concepts_fts.rowid"
        " where concepts_fts match 'harrow'")]
    assert hits == ["alpha/a"]
    assert {r["name"] for r in db.query("select name from pragma_index_list('edges')")} >= {"idx_edges_src", "idx_edges_dst"}


def test_rebuild_with_no_change_does_not_touch_the_file(bundle, tmp_path):
    db_path = tmp_path / "out.db"
    build([bundle], db_path, embed=False)
    before = (db_path.stat().st_mtime_ns, db_path.read_bytes())
    report = build([bundle], db_path, embed=False)
    assert report.up_to_date
    assert (db_path.stat().st_mtime_ns, db_path.read_bytes()) == before


def test_one_edit_rewrites_one_concept_and_keeps_fts_in_step(bundle, tmp_path):
    db_path = tmp_path / "out.db"
    build([bundle], db_path, embed=False)
    (bundle / "a.md").write_text(NOTE.format(title="Ann Marlowe", tag="dock"))
    report = build([bundle], db_path, embed=False)
    [alpha] = report.bundles
    assert (alpha.changed, alpha.unchanged) == (1, 2)
    db = sqlite_utils.Database(db_path)
    assert db["concepts"].get("alpha/a")["title"] == "Ann Marlowe"
    match = "select count(*) from concepts_fts where concepts_fts match ?"
    assert db.execute(match, ["marlowe"]).fetchone()[0] == 1
    assert db.execute(match, ["harrow"]).fetchone()[0] == 0
    assert db.execute("select src, dst from edges").fetchall() == [("alpha/a", "alpha/b")]  # not duplicated


def test_an_edit_is_no_schema_change(bundle, tmp_path, test_models):
    """Datasette reads every table's schema again after a schema change (10-14 ms on the Thellade vault's file, at
    the next request): a rebuild writes rows, not tables. sqlite-utils' upsert probe created and dropped one."""
    db_path = tmp_path / "out.db"
    build([bundle], db_path, model="okf-test-hash-8")

    def version():
        with contextlib.closing(sqlite3.connect(db_path)) as conn:
            return conn.execute("pragma schema_version").fetchone()[0]

    before = version()
    (bundle / "a.md").write_text(NOTE.format(title="Ann Marlowe", tag="dock"))
    assert build([bundle], db_path, model="okf-test-hash-8").bundles[0].changed == 1
    assert version() == before


def _last_stats(db_path, name="alpha"):
    conn = sqlite3.connect(db_path)
    try:
        return {path: (seen, digest) for path, seen, digest in conn.execute(
            "select path, stat, digest from file_stats where bundle = ?", [name])}
    finally:
        conn.close()


def test_a_file_the_last_build_saw_with_the_same_stat_is_not_read_again(bundle, tmp_path, monkeypatch):
    """At 10k notes, reading and hashing every file took 0.3-0.4 s of a one-edit rebuild: a file whose size, times
    and inode are as the last build saw them keeps that build's digest, unread, as git's index does."""
    monkeypatch.setattr(bundle_module, "RACY_NS", 0)  # the files were written just now
    db_path = tmp_path / "out.db"
    build([bundle], db_path, embed=False)
    known = _last_stats(db_path)
    assert sorted(known) == ["a.md", "b.md", "c.md"]
    scanned = bundle_module.scan_bundle(bundle, known=known)
    assert [(f.path, f.data, f.digest) for f in scanned.files] == [(p, None, known[p][1]) for p in sorted(known)]

    (bundle / "a.md").write_text(NOTE.format(title="Ann Marlowe", tag="dock"))
    scanned = {f.path: f for f in bundle_module.scan_bundle(bundle, known=known).files}
    assert scanned["a.md"].data is not None and scanned["a.md"].digest != known["a.md"][1]
    assert scanned["b.md"].data is None
    report = build([bundle], db_path, embed=False)
    assert (report.bundles[0].changed, report.bundles[0].unchanged) == (1, 2)
    assert sqlite_utils.Database(db_path)["concepts"].get("alpha/a")["title"] == "Ann Marlowe"
    assert _last_stats(db_path)["a.md"] != known["a.md"] and _last_stats(db_path)["b.md"] == known["b.md"]


def test_a_file_changed_between_the_scan_and_its_reading_is_read_again_by_the_next_build(bundle, tmp_path, monkeypatch):
    """An unread file is read when its parse is not cached: if it changed since the scan, its new bytes are parsed
    but neither cached under the scanned digest nor claimed by it, and its stat is dropped, so the next build reads
    it again (else that build would find the fingerprint it wrote and call the file up to date)."""
    monkeypatch.setattr(bundle_module, "RACY_NS", 0)
    db_path = tmp_path / "out.db"
    build([bundle], db_path, embed=False)
    known = _last_stats(db_path)
    scanned = bundle_module.scan_bundle(bundle, known=known)
    (bundle / "a.md").write_text(NOTE.format(title="Ann Marlowe", tag="dock"))
    parsed = bundle_module.parse_bundle(scanned, parse_cache={})  # nothing cached: every file is read now
    source = {f.path: f for f in scanned.files}["a.md"]
    assert (source.moved, source.digest, source.stat) == (True, known["a.md"][1], "")
    assert {c.path: c.title for c in parsed.concepts}["a.md"] == "Ann Marlowe"
    assert not [key for key in parsed.parse_cache if ":a.md:" in key] and len(parsed.parse_cache) == 2
    build([bundle], db_path, embed=False)
    assert sqlite_utils.Database(db_path)["concepts"].get("alpha/a")["title"] == "Ann Marlowe"


def test_a_file_rewritten_with_its_size_and_modification_time_put_back_is_read_again(bundle, tmp_path, monkeypatch):
    """Tools that copy times (rsync -t, a restore, a sync client) can leave a changed file with its old size and
    modification time: its change time still moves, and the stat compares it."""
    monkeypatch.setattr(bundle_module, "RACY_NS", 0)
    db_path = tmp_path / "out.db"
    build([bundle], db_path, embed=False)
    path = bundle / "a.md"
    before = path.stat()
    text = path.read_text()
    path.write_text(text.replace("Harrow", "Hallow"))  # same size
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert (path.stat().st_size, path.stat().st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    build([bundle], db_path, embed=False)
    assert sqlite_utils.Database(db_path)["concepts"].get("alpha/a")["title"] == "Ann Hallow"


def test_a_file_written_just_before_the_scan_is_read_again_next_time(tmp_path):
    """Two writes within one tick of a coarse file system clock (FAT's two seconds) leave the same times: a stat
    taken that close to a write is not kept (git's "racily clean" entries)."""
    path = tmp_path / "n.md"
    path.write_text("fresh")
    assert bundle_module.file_stat(path.stat(), time.time_ns()) == ""
    assert bundle_module.file_stat(path.stat(), time.time_ns() + bundle_module.RACY_NS + 10**9)


def test_an_unchanged_log_not_read_again_keeps_its_entries(tmp_path, monkeypatch):
    """A log's entries are read from its raw body, which an unread file gives only when asked."""
    monkeypatch.setattr(bundle_module, "RACY_NS", 0)
    root = write_bundle(tmp_path / "alpha", {
        "log.md": "# Log\n\n## 2026-11-02\n\n- Added [a](a.md).\n\n## 2026-11-01\n\n- Started.\n",
        "a.md": "---\ntype: Note\n---\nA note.\n",
    })
    db_path = tmp_path / "out.db"
    build([root], db_path, embed=False)
    entries = sqlite3.connect(db_path).execute("select date, text from log_entries order by line").fetchall()
    assert entries == [("2026-11-02", "Added [a](a.md)."), ("2026-11-01", "Started.")]
    (root / "b.md").write_text("---\ntype: Note\n---\nAnother, and every link is resolved again.\n")
    build([root], db_path, embed=False)
    assert sqlite3.connect(db_path).execute("select date, text from log_entries order by line").fetchall() == entries


def test_deleted_files_are_kept_until_prune(bundle, tmp_path):
    db_path = tmp_path / "out.db"
    other = write_bundle(tmp_path / "beta", {"x.md": "---\ntype: T\n---\nx\n"})
    build([bundle, other], db_path, embed=False)
    (bundle / "b.md").unlink()
    report = build([bundle], db_path, embed=False)
    assert report.bundles[0].kept_missing == 1
    db = sqlite_utils.Database(db_path)
    assert db["concepts"].count == 4
    report = build([bundle], db_path, embed=False, prune=True)
    assert report.bundles[0].pruned == 1
    db = sqlite_utils.Database(db_path)  # the build replaced the file: reopen
    ids = {r["id"] for r in db["concepts"].rows}
    assert ids == {"alpha/a", "alpha/c", "beta/x"}  # the other bundle is untouched
    assert db.execute("select count(*) from edges where src = 'alpha/b'").fetchone()[0] == 0
    assert db.execute("select count(*) from concepts_fts").fetchone()[0] == 3


def test_prune_is_refused_when_a_bundle_parses_to_nothing(bundle, tmp_path):
    db_path = tmp_path / "out.db"
    build([bundle], db_path, embed=False)
    before = db_path.read_bytes()
    for f in bundle.glob("*.md"):
        f.write_bytes(b"\x00\x01 not markdown any more")  # every file present, none parses
    with pytest.raises(BuildError, match="refusing to prune"):
        build([bundle], db_path, embed=False, prune=True)
    assert db_path.read_bytes() == before
    for f in bundle.glob("*.md"):
        f.unlink()  # an emptied folder is refused before anything is read
    with pytest.raises(BuildError, match="no markdown"):
        build([bundle], db_path, embed=False, prune=True)
    assert db_path.read_bytes() == before


def test_a_failed_build_never_damages_the_previous_database(bundle, tmp_path, monkeypatch):
    db_path = tmp_path / "out.db"
    build([bundle], db_path, embed=False)
    before = db_path.read_bytes()
    (bundle / "a.md").write_text(NOTE.format(title="Changed", tag="x"))

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(store, "_write_meta", interrupted)
    with pytest.raises(KeyboardInterrupt):
        build([bundle], db_path, embed=False)
    assert db_path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_two_bundles_with_the_same_name_are_refused(tmp_path):
    one = write_bundle(tmp_path / "x" / "kb", {"a.md": "---\ntype: T\n---\n"})
    two = write_bundle(tmp_path / "y" / "kb", {"b.md": "---\ntype: T\n---\n"})
    with pytest.raises(BuildError, match="share the folder name"):
        build([one, two], tmp_path / "out.db")


def test_a_build_killed_mid_write_leaves_the_previous_database(bundle, tmp_path):

    db_path = tmp_path / "out.db"
    build([bundle], db_path, embed=False)
    before = sorted(sqlite_utils.Database(db_path).execute("select id, title from concepts").fetchall())
    (bundle / "a.md").write_text(NOTE.format(title="Killed Midway", tag="x"))
    script = (
        "import os, signal, sys\n"
        "from datasette_okf import store\n"
        "store._write_meta = lambda *a, **k: os.kill(os.getpid(), signal.SIGKILL)\n"
        f"store.build([{str(bundle)!r}], {str(db_path)!r}, embed=False)\n"
    )
    result = subprocess.run([sys.executable, "-c", script])
    assert result.returncode == -9  # killed inside the write transaction
    db = sqlite_utils.Database(db_path)
    assert db.execute("pragma integrity_check").fetchone()[0] == "ok"
    assert sorted(db.execute("select id, title from concepts").fetchall()) == before


def test_degrees_stay_exact_across_incremental_builds(bundle, tmp_path):
    db_path = tmp_path / "out.db"
    build([bundle], db_path, embed=False)
    (bundle / "c.md").write_text("---\ntype: Place\n---\nNow links [a](/a.md) and [b](/b.md).\n")
    build([bundle], db_path, embed=False)
    (bundle / "a.md").write_text("---\ntype: Person\n---\nNo links any more.\n")
    build([bundle], db_path, embed=False)
    db = sqlite_utils.Database(db_path)
    wrong = db.execute(
        """select id, degree from concepts where degree !=
             (select count(*) from edges where src = concepts.id and dst is not null)
           + (select count(*) from edges where dst = concepts.id)"""
    ).fetchall()
    assert wrong == []
    assert db.execute("select degree from concepts where id = 'alpha/b'").fetchone()[0] == 1  # from c; a no longer links


def _link_tables(path) -> dict[str, list]:
    db = sqlite_utils.Database(path)
    out = {}
    for table, order in [("edges", "src, predicate, kind, dst, object_literal, line"),
                         ("link_issues", "src, line, target"), ("external_links", "src, line, url"),
                         ("headings", "concept_id, line"), ("build_issues", "file, message"),
                         ("concepts", "id")]:
        columns = [c for c in db[table].columns_dict if c not in ("id", "body", "degree")] if table != "concepts" else [
            "id", "content_hash", "superseded_by", "degree"]
        out[table] = db.execute(f"select {', '.join(columns)} from {table} order by {order}").fetchall()
    return out


@pytest.mark.parametrize("mentions", [False, True])
@pytest.mark.parametrize("trusted", [False, True], ids=["files read", "unchanged files not read"])
def test_an_incremental_build_equals_a_build_from_scratch(tmp_path, mentions, trusted, monkeypatch):
    """Unchanged files reuse last build's link resolutions; after each kind of change the
    incremental file must hold exactly what a fresh build of the same folder holds. `trusted`: a file's stat
    stands for its bytes however recently it was written, so that unchanged files are not even read (their raw
    body only when links are resolved again, a change of aliases)."""
    import shutil

    from .conftest import VAULT

    if trusted:
        monkeypatch.setattr(bundle_module, "RACY_NS", 0)
    vault = tmp_path / "vault"
    shutil.copytree(VAULT, vault)
    incremental = tmp_path / "incremental.db"
    build([vault], incremental, embed=False, link_mentions=mentions)
    notes = sorted(p for p in vault.rglob("*.md"))
    changes = [
        lambda: notes[0].write_text(notes[0].read_text() + "\nSee [[Nowhere Yet]] and [[nowhere yet#Part]].\n"),
        lambda: (vault / "Nowhere Yet.md").write_text("# Part\n\nNow it exists.\n"),  # dead links elsewhere resolve
        lambda: notes[1].write_text("---\naliases: [Second Name]\n---\nrenamed alias\n"),  # aliases change
        lambda: (vault / "Nowhere Yet.md").unlink(),  # and are dead again (kept until --prune)
        lambda: (vault / "broken.md").write_text("---\nrelations: [{object: x}]\n---\n[[Second Name]]\n"),
        lambda: notes[2].write_text("---\ntitle: Broken\n---\nA new title others mention.\n"),
    ]
    for step, change in enumerate(changes):
        change()
        build([vault], incremental, embed=False, prune=True, link_mentions=mentions)
        fresh = tmp_path / f"fresh-{step}.db"
        build([vault], fresh, embed=False, link_mentions=mentions)
        assert _link_tables(incremental) == _link_tables(fresh), f"after change {step}"


def _many_notes(root, marker: str, count: int = 1500):
    return write_bundle(root, {
        f"notes/n{i:04}.md": f"---\ntype: Note\ntitle: Note {i} {marker}\n---\n# Note {i}\n\n"
                             f"{marker} text, linking [next](n{(i + 1) % count:04}.md) and [[n{(i * 7) % count:04}]].\n"
        for i in range(count)
    })


def test_sigkill_at_random_points_never_costs_the_previous_database(tmp_path):
    """Kill `datasette okf build` with SIGKILL at spread-out moments of a rebuild that rewrites
    every note: each time the file opens, passes integrity_check, answers, and holds either the
    whole old state or the whole new one (one transaction, rolled back from SQLite's journal)."""
    import random
    import signal
    import time

    from datasette_okf.retrieve import context_for

    bundle = _many_notes(tmp_path / "kb", "OLD")
    db_path = tmp_path / "kb.db"
    build([bundle], db_path, embed=False)
    _many_notes(bundle, "NEW")
    command = [sys.executable, "-m", "datasette", "okf", "build", str(bundle), "-o", str(db_path), "--no-embed"]
    started = time.monotonic()
    probe = subprocess.run(command + ["-o", str(tmp_path / "probe.db")], capture_output=True)
    assert probe.returncode == 0
    duration = time.monotonic() - started
    rng = random.Random(9)
    states = set()
    for attempt in range(8):
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.2, 1.0) * duration)
        process.send_signal(signal.SIGKILL)
        process.wait()
        db = sqlite_utils.Database(db_path)
        assert db.execute("pragma integrity_check").fetchone()[0] == "ok"
        markers = db.execute(
            "select sum(title like '% OLD'), sum(title like '% NEW') from concepts").fetchone()
        assert markers in ((1500, 0), (0, 1500)), f"attempt {attempt}: a mixed state {markers}"
        states.add("new" if markers[1] else "old")
        db.conn.close()
        answer = context_for(db_path, "Note 42", mode="keyword")
        assert answer["confident"] and answer["nodes"]
        if markers[1] and "old" in states:
            break
        if markers[1]:  # the rebuild finished before the kill (a shared machine: the probe ran slower): start again
            states.discard("new")  # from the old state, killing sooner
            build([_many_notes(bundle, "OLD")], db_path, embed=False)
            _many_notes(bundle, "NEW")
            duration /= 2
    assert "old" in states  # at least one kill landed inside the write
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_a_running_datasette_keeps_answering_through_a_rebuild_and_then_sees_it(tmp_path):
    import json
    import threading
    import urllib.parse
    import urllib.request

    from .conftest import running_datasette

    bundle = _many_notes(tmp_path / "kb", "OLD", count=800)
    db_path = tmp_path / "kb.db"
    build([bundle], db_path, embed=False)
    with running_datasette(str(db_path)) as url:
        def ask(question: str) -> dict:
            query = urllib.parse.urlencode({"q": question})
            with urllib.request.urlopen(f"{url}-/context_for.json?{query}", timeout=30) as response:
                return json.loads(response.read())

        assert ask("Note 7")["confident"]
        statuses: list = []
        stop = threading.Event()

        def hammer():
            while not stop.is_set():
                try:
                    ask("Note 7")
                    statuses.append(200)
                except Exception as error:  # noqa: BLE001 - any failure is the finding
                    statuses.append(repr(error))

        workers = [threading.Thread(target=hammer) for _ in range(4)]
        for worker in workers:
            worker.start()
        _many_notes(bundle, "NEW", count=800)
        (bundle / "notes" / "zanzibar.md").write_text("---\ntype: Place\ntitle: Zanzibar Quay\n---\nA new quay.\n")
        subprocess.run([sys.executable, "-m", "datasette", "okf", "build", str(bundle), "-o", str(db_path),
                        "--no-embed"], check=True, capture_output=True)
        stop.set()
        for worker in workers:
            worker.join()
        assert statuses and all(s == 200 for s in statuses), [s for s in statuses if s != 200][:3]
        after = ask("Where is Zanzibar Quay?")  # a title added by the rebuild: matched at once
        assert after["nodes"][0]["id"] == "kb/notes/zanzibar"
        assert "title" in after["nodes"][0]["via"]


def test_temporary_files_of_killed_builds_are_removed_by_the_next_build(bundle, tmp_path):
    import os

    dead = tmp_path / ".out.db.999999999.tmp"  # no such process: a build killed with SIGKILL
    dead.write_bytes(b"half a database")
    (tmp_path / ".out.db.999999999.tmp-journal").write_bytes(b"x")
    running = tmp_path / f".out.db.{os.getppid()}.tmp"  # a build still running (a live pid): left alone
    running.write_bytes(b"in progress")
    build([bundle], tmp_path / "out.db", embed=False)
    assert sorted(p.name for p in tmp_path.iterdir() if ".tmp" in p.name) == [running.name]


def test_readers_are_not_locked_out_while_a_long_rebuild_embeds(tmp_path, test_models, monkeypatch):
    """A rebuild that re-embeds a real vault takes minutes inside one transaction. With SQLite's
    rollback journal, once the writer spilled its page cache to the file it held an exclusive
    lock until commit and every reader (Datasette) failed with "database is locked" after its
    busy timeout. In-place builds keep their changes in memory until commit instead."""
    import threading
    import time

    bundle = _many_notes(tmp_path / "kb", "OLD", count=3000)
    db_path = tmp_path / "kb.db"
    build([bundle], db_path, model="okf-test-hash-8")
    _many_notes(bundle, "NEW", count=3000)
    model = test_models["okf-test-hash-16"]
    embed = model.embed_batch

    def slowly(items):
        time.sleep(0.03)  # a real model on 2 cores: about 3 s per 100 chunks
        return embed(items)

    monkeypatch.setattr(model, "embed_batch", slowly)
    errors: list[str] = []
    reads = [0]
    done = threading.Event()

    def reader():
        conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=2, check_same_thread=False)
        while not done.is_set():
            try:
                conn.execute("select count(*) from concepts where title like '%OLD'").fetchone()
                reads[0] += 1
            except sqlite3.OperationalError as error:
                errors.append(str(error))
            time.sleep(0.02)
        conn.close()

    threads = [threading.Thread(target=reader) for _ in range(2)]
    for thread in threads:
        thread.start()
    started = time.monotonic()
    build([bundle], db_path, model="okf-test-hash-16")  # a new model: every chunk embedded again
    took = time.monotonic() - started
    done.set()
    for thread in threads:
        thread.join()
    assert took > 4  # long enough for a locked-out reader to have given up (timeout 2 s)
    assert errors == [] and reads[0] > 50
    conn = sqlite3.connect(db_path)
    assert conn.execute("select count(*) from concepts where title like '%NEW'").fetchone()[0] == 3000


def test_files_are_left_in_wal_mode_self_contained_and_never_replaced_under_a_reader(bundle, tmp_path):

    db_path = tmp_path / "out.db"
    build([bundle], db_path, embed=False)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("out.db")) == ["out.db"]
    assert db_path.read_bytes()[18:20] == b"\x02\x02"  # the file header says write-ahead log
    reader = subprocess.Popen(  # another process with the file open, as a running Datasette has
        [sys.executable, "-c", ("import sqlite3, sys\n"
         f"c = sqlite3.connect('file:{db_path}?mode=ro', uri=True)\n"
         "print(c.execute('select count(*) from concepts').fetchone()[0], flush=True)\nsys.stdin.read()")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert reader.stdout.readline().strip() == "3"
    try:
        (bundle / "a.md").write_text(NOTE.format(title="Changed Under A Reader", tag="x"))
        build([bundle], db_path, embed=False)  # in place, while the other process reads
        conn = sqlite3.connect(db_path)
        assert conn.execute("select count(*) from concepts where title = 'Changed Under A Reader'").fetchone()[0] == 1
        conn.execute("update meta set value = '1' where key = 'format_version'")  # an old format: replaced...
        conn.commit()
        conn.close()
        with pytest.raises(BuildError, match="open in write-ahead-log mode by another process"):
            build([bundle], db_path, embed=False)  # ...but not under a process that has it open
    finally:
        reader.communicate("", timeout=10)
    build([bundle], db_path, embed=False)
    version = sqlite_utils.Database(db_path).execute("select value from meta where key = 'format_version'").fetchone()[0]
    assert version == schema.FORMAT_VERSION


def test_prune_never_touches_another_bundles_rows(tmp_path):
    """Two bundles whose names share a prefix; pruning one leaves every row of the other as it was."""
    alpha = write_bundle(tmp_path / "kb", {f"n{i}.md": f"---\ntype: T\n---\n# H{i}\n[[n{i + 1}]] [x](https://x.org/{i})\n"
                                           for i in range(20)})
    beta = write_bundle(tmp_path / "kb-2", {f"n{i}.md": f"---\ntype: T\n---\n# H{i}\n[[n{i + 1}]] [[nowhere]]\n"
                                            for i in range(20)})
    db_path = tmp_path / "out.db"
    build([alpha, beta], db_path, embed=False)

    def rows_of(bundle_name: str) -> dict[str, list]:
        db = sqlite_utils.Database(db_path)
        prefix = bundle_name + "/%"
        return {
            "concepts": db.execute("select id, content_hash, degree from concepts where bundle = ? order by id", [bundle_name]).fetchall(),
            "edges": db.execute("select src, dst, predicate, kind from edges where src like ? order by 1, 2, 3", [prefix]).fetchall(),
            "chunks": db.execute("select id, concept_id, text from chunks where concept_id like ? order by id", [prefix]).fetchall(),
            "link_issues": db.execute("select src, target from link_issues where bundle = ? order by 1, 2", [bundle_name]).fetchall(),
            "external_links": db.execute("select src, url from external_links where src like ? order by 1, 2", [prefix]).fetchall(),
            "headings": db.execute("select concept_id, slug from headings where concept_id like ? order by 1, 2", [prefix]).fetchall(),
        }

    before = rows_of("kb-2")
    for i in range(1, 20):
        (alpha / f"n{i}.md").unlink()
    report = build([alpha], db_path, embed=False, prune=True)
    assert report.bundles[0].pruned == 19
    assert rows_of("kb-2") == before
    assert len(rows_of("kb")["concepts"]) == 1


def test_turning_mentions_off_removes_the_mention_edges_of_unchanged_notes(tmp_path):
    """No file changed, so every note reuses its links; the last build's fingerprint says it made
    mention edges, and those are compared (and dropped) all the same."""
    root = write_bundle(tmp_path / "kb", {
        "mira.md": "---\ntype: Person\ntitle: Mira Vell\n---\nLeads the council.\n",
        "log-of-events.md": "---\ntype: Note\n---\nMira Vell spoke first.\n",
    })
    db_path = tmp_path / "kb.db"
    build([root], db_path, embed=False, link_mentions=True)
    count = "select count(*) from edges where kind = 'mention'"
    assert sqlite_utils.Database(db_path).execute(count).fetchone()[0] == 1
    build([root], db_path, embed=False)
    assert sqlite_utils.Database(db_path).execute(count).fetchone()[0] == 0


# nothing lost: full disks, failed checkpoints, deleted files, outputs inside the bundle --------------------



def titles_in(path) -> set[str]:
    conn = sqlite3.connect(path)
    try:
        return {row[0] for row in conn.execute("select title from concepts")}
    finally:
        conn.close()


def alone(db_path, tmp_path):
    """A copy of the .db file alone, without its -wal: what `cp` or a backup of that one file gets."""
    copy = tmp_path / "copied-alone" / db_path.name
    copy.parent.mkdir(exist_ok=True)
    shutil.copyfile(db_path, copy)
    return copy


@contextlib.contextmanager
def reading_process(db_path):
    """Another process with `db_path` open read-only, as a running Datasette has it (a connection in this
    process would not do: it may use another copy of SQLite, whose locks this process's do not see)."""
    reader = subprocess.Popen(
        [sys.executable, "-c", ("import sqlite3, sys\n"
         f"c = sqlite3.connect('file:{db_path}?mode=ro', uri=True)\n"
         "print(c.execute('select count(*) from concepts').fetchone()[0], flush=True)\nsys.stdin.read()")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert reader.stdout.readline().strip().isdigit()
    try:
        yield reader
    finally:
        reader.communicate("", timeout=10)


@contextlib.contextmanager
def small_disk(path, size):
    """A tmpfs of `size` mounted at `path` (root only; the test skips where mounting is not allowed)."""
    path.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                                           capture_output=True).returncode != 0:
        pytest.skip("cannot mount a small tmpfs here (CI runs as root and can)")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=True)


def fill(disk, leave: int) -> None:
    free = shutil.disk_usage(disk).free
    with open(disk / "filler", "wb") as handle:
        handle.write(b"\0" * max(0, free - leave))


def many_notes(root, count, words=400):
    return write_bundle(root, {f"n{i}.md": f"---\ntype: T\ntitle: Note {i}\n---\n" + " ".join(f"word{i}x{j}" for j in range(words))
                               for i in range(count)})


def test_a_full_disk_fails_a_first_build_cleanly(tmp_path):
    from click.testing import CliRunner
    from datasette.cli import cli

    bundle = many_notes(tmp_path / "kb", 300)
    with small_disk(tmp_path / "disk", "1m") as disk:
        result = CliRunner().invoke(cli, ["okf", "build", "--no-embed", str(bundle), "-o", str(disk / "kb.db")])
        assert result.exit_code == 1
        assert "Traceback" not in result.output and "disk full" in result.output, result.output
        assert sorted(p.name for p in disk.iterdir()) == []  # no database, temporary, journal or lock file


def test_a_full_disk_during_a_rebuild_leaves_the_database_as_it_was_and_standing_alone(tmp_path):
    bundle = many_notes(tmp_path / "kb", 20)
    with small_disk(tmp_path / "disk", "8m") as disk:
        db_path = disk / "kb.db"
        build([bundle], db_path, embed=False)
        before = db_path.read_bytes()
        many_notes(bundle, 600)  # far more than the disk has room for
        fill(disk, leave=600_000)
        with pytest.raises(BuildError, match="disk full|not enough free space"):
            build([bundle], db_path, embed=False)
        assert db_path.read_bytes() == before
        assert not Path(f"{db_path}-wal").exists() or Path(f"{db_path}-wal").stat().st_size == 0
        copy = alone(db_path, tmp_path)
        assert sqlite3.connect(copy).execute("pragma integrity_check").fetchone()[0] == "ok"
        assert len(titles_in(copy)) == 20


def test_no_commit_without_room_to_fold_the_log_into_the_file(bundle, tmp_path, monkeypatch):
    db_path = tmp_path / "out.db"
    build([bundle], db_path, embed=False)
    (bundle / "a.md").write_text(NOTE.format(title="Needs Room", tag="x"))
    before = db_path.read_bytes()
    monkeypatch.setattr(store, "free_bytes", lambda folder: 0)
    with pytest.raises(BuildError, match="not enough free space .* the database was not changed"):
        build([bundle], db_path, embed=False)
    assert db_path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("out.db")) == ["out.db"]


def test_a_failed_checkpoint_is_reported_and_folded_by_the_next_build(bundle, tmp_path, monkeypatch):
    """The fault: the rows are committed to the log but cannot be copied into the file (the disk filled
    up in between). The build says so, leaves the log for SQLite, and the next build folds it in: it never
    calls an incomplete file up to date."""
    from click.testing import CliRunner
    from datasette.cli import cli

    db_path = tmp_path / "out.db"
    build([bundle], db_path, embed=False)
    with reading_process(db_path):  # as a running Datasette: its connection keeps the log when ours closes
        (bundle / "a.md").write_text(NOTE.format(title="Only In The Log", tag="x"))
        monkeypatch.setattr(store, "_checkpoint", lambda db: "database or disk is full")
        result = CliRunner().invoke(cli, ["okf", "build", "--no-embed", str(bundle), "-o", str(db_path)])
        assert result.exit_code == 1
        assert "write-ahead log could not be folded into it (database or disk is full)" in result.output
        assert "Only In The Log" not in titles_in(alone(db_path, tmp_path))  # the file alone is not complete
    with_log = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)  # read-only: it cannot fold the log
    assert "Only In The Log" in {row[0] for row in with_log.execute("select title from concepts")}
    with_log.close()
    monkeypatch.undo()
    report = build([bundle], db_path, embed=False)
    assert report.up_to_date and report.wal_folded and report.wal_pending is None
    assert "Only In The Log" in titles_in(alone(db_path, tmp_path))
    assert sqlite3.connect(alone(db_path, tmp_path)).execute("pragma integrity_check").fetchone()[0] == "ok"


def test_deleting_a_served_file_and_rebuilding_is_refused(bundle, tmp_path):
    db_path = tmp_path / "out.db"
    build([bundle], db_path, embed=False)
    with reading_process(db_path):
        db_path.unlink()
        with pytest.raises(BuildRefused, match="was deleted, but another process .* still has it open"):
            build([bundle], db_path, embed=False)
        assert not db_path.exists()  # not even an empty file where it was
    build([bundle], db_path, embed=False)  # the reader is gone: the left-over -wal and -shm go with it
    assert sqlite3.connect(db_path).execute("pragma integrity_check").fetchone()[0] == "ok"
    assert titles_in(db_path) == {"Ann Harrow", "Bel Crane", "c"}


def test_a_database_inside_its_own_bundle_never_indexes_its_outputs(tmp_path):
    from click.testing import CliRunner
    from datasette.cli import cli

    gin = write_bundle(tmp_path / "gin", {"a.md": "---\ntype: T\n---\nSee [b](b.md).\n", "b.md": "---\ntype: T\n---\nb\n"})
    out = gin / "out.db"
    for _ in range(2):
        result = CliRunner().invoke(cli, ["okf", "build", "--no-embed", str(gin), "-o", str(out)])
        assert result.exit_code == 0, result.output
    assert (gin / "out.timeline.md").exists() and (gin / "out.wiki-trigger-keywords.txt").exists()
    assert "up to date, file not touched" in result.output
    (gin / "a.md").write_text("---\ntype: T\n---\nNow [c](c.md).\n")
    assert CliRunner().invoke(cli, ["okf", "build", "--no-embed", str(gin), "-o", str(out)]).exit_code == 0
    conn = sqlite3.connect(out)
    assert sorted(row[0] for row in conn.execute("select id from concepts")) == ["gin/a", "gin/b"]
    assert conn.execute("select count(*) from build_issues").fetchone()[0] == 0


def test_a_rebuilt_file_keeps_its_owner_and_mode_and_leaves_no_side_files(bundle, tmp_path):
    db_path = tmp_path / "out.db"
    build([bundle], db_path, embed=False)
    os.chmod(db_path, 0o640)
    owner = (65534, 65534) if os.geteuid() == 0 else (os.getuid(), os.getgid())
    os.chown(db_path, *owner)
    (bundle / "a.md").write_text(NOTE.format(title="In Place", tag="x"))
    build([bundle], db_path, embed=False)  # updated in place
    conn = sqlite3.connect(db_path)
    conn.execute("update meta set value = '1' where key = 'format_version'")  # an old format: replaced
    conn.commit()
    conn.close()
    build([bundle], db_path, embed=False)
    info = db_path.stat()
    assert (info.st_mode & 0o777, info.st_uid, info.st_gid) == (0o640, *owner)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("out.db")) == ["out.db"]


def test_the_okf_version_a_root_index_declares_is_kept_in_meta(tmp_path):
    """OKF §12: a bundle says which version of the format it follows in its root index.md; a vault says nothing."""
    okf = write_bundle(tmp_path / "okf", {"index.md": "---\nokf_version: \"0.2\"\n---\n* [a](a.md)\n",
                                          "a.md": "---\ntype: T\n---\na\n"})
    vault = write_bundle(tmp_path / "vault", {"a.md": "just a note\n"})
    db_path = tmp_path / "out.db"
    build([okf, vault], db_path, embed=False)
    bundles = json.loads(sqlite3.connect(db_path).execute("select value from meta where key = 'bundles'").fetchone()[0])
    assert (bundles["okf"]["okf_version"], bundles["vault"]["okf_version"]) == ("0.2", None)


def test_the_gate_is_calibrated_when_vectors_change_and_only_then(tmp_path, test_models, monkeypatch):
    from datasette_okf import calibrate

    root = write_bundle(tmp_path / "kb", {f"n{i}.md": f"---\ntype: T\n---\nnote {i} about lanterns\n" for i in range(5)})
    db_path = tmp_path / "kb.db"
    build([root], db_path, embed=False)
    assert "gate" not in schema.read_meta(schema.connect(db_path).conn)  # no vectors, nothing to calibrate
    build([root], db_path, model="okf-test-hash-8")
    first = json.loads(schema.read_meta(schema.connect(db_path).conn)["gate"])
    assert first["model"] == "okf-test-hash-8" and first["off_topic"]["questions"] == len(calibrate.OFF_TOPIC)
    assert build([root], db_path).up_to_date  # nothing changed: not even recalibrated
    monkeypatch.setattr(calibrate, "METHOD", calibrate.METHOD + " (revised)")
    assert not build([root], db_path).up_to_date  # a new method: the stored calibration is out of date
    assert json.loads(schema.read_meta(schema.connect(db_path).conn)["gate"])["method"].endswith("(revised)")
    build([root], db_path, model="okf-test-hash-16")
    assert json.loads(schema.read_meta(schema.connect(db_path).conn)["gate"])["model"] == "okf-test-hash-16"


def test_the_gate_is_calibrated_again_when_a_tenth_of_the_chunks_is_rewritten_even_at_the_same_count(
        tmp_path, test_models):
    """A re-chunking keeps the count and changes the text: 13th Age went from 3,748 to 3,780 chunks, most rewritten,
    and kept a threshold a fresh build no longer gives (0.44 against 0.41)."""
    root = write_bundle(tmp_path / "kb", {f"n{i}.md": f"---\ntype: T\n---\nnote {i} about lanterns\n" for i in range(20)})
    db_path = tmp_path / "kb.db"

    def gate():
        return json.loads(schema.read_meta(schema.connect(db_path).conn)["gate"])

    build([root], db_path, model="okf-test-hash-8")
    first = gate()
    (root / "n0.md").write_text("---\ntype: T\n---\nnote 0 about harbours\n")  # 1 chunk of 20 rewritten
    build([root], db_path)
    assert gate() == first
    for i in (1, 2):  # 3 of 20 since the calibration, the same count
        (root / f"n{i}.md").write_text(f"---\ntype: T\n---\nnote {i} about harbours\n")
    build([root], db_path)
    again = gate()
    assert again["last_chunk_id"] > first["last_chunk_id"] and again["chunks"] == first["chunks"] == 20
    conn = schema.connect(db_path).conn
    del again["last_chunk_id"]  # a calibration made before it said which chunks it saw
    conn.execute("update meta set value = ? where key = 'gate'", [json.dumps(again)])
    conn.commit()
    assert not build([root], db_path).up_to_date and "last_chunk_id" in gate()


# --- --jobs: a remote embedding model, several batches at once, against real servers on loopback


class _EmbeddingServers:
    """Two stub embedding servers (POST {"texts": [...]} -> {"vectors": [...]}): `slow` answers after a delay,
    `flaky` fails its first request with a 500. Each records how many requests it had in flight at most."""

    def __init__(self, delay: float = 0.3, fail_first: int = 1):
        import http.server
        import json as json_module
        import threading

        outer = self
        self.lock = threading.Lock()
        self.in_flight = 0
        self.most_in_flight = 0
        self.requests = {"slow": 0, "flaky": 0}
        self.failures_left = fail_first
        self.fail_all = False

        def handler(name):
            class Handler(http.server.BaseHTTPRequestHandler):
                def log_message(self, *args):
                    pass

                def do_POST(self):
                    texts = json_module.loads(self.rfile.read(int(self.headers["Content-Length"])))["texts"]
                    with outer.lock:
                        outer.requests[name] += 1
                        outer.in_flight += 1
                        outer.most_in_flight = max(outer.most_in_flight, outer.in_flight)
                        fail = outer.fail_all or (name == "flaky" and outer.failures_left > 0)
                        if fail and not outer.fail_all:
                            outer.failures_left -= 1
                    try:
                        if name == "slow":
                            time.sleep(delay)
                        if fail:
                            self.send_response(500)
                            self.end_headers()
                            return
                        body = json_module.dumps({"vectors": [_hash_vector(t) for t in texts]}).encode()
                        self.send_response(200)
                        self.send_header("Content-Type", "application/json")
                        self.send_header("Content-Length", str(len(body)))
                        self.end_headers()
                        self.wfile.write(body)
                    finally:
                        with outer.lock:
                            outer.in_flight -= 1
            return Handler

        self.servers = [http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler(name)) for name in ("slow", "flaky")]
        self.urls = [f"http://127.0.0.1:{s.server_address[1]}/" for s in self.servers]
        for server in self.servers:
            threading.Thread(target=server.serve_forever, daemon=True).start()

    def close(self):
        for server in self.servers:
            server.shutdown()
            server.server_close()


def _hash_vector(text: str, dims: int = 8) -> list[float]:
    import hashlib
    import math

    vector = [0.0] * dims
    for word in text.lower().split():
        vector[int(hashlib.md5(word.encode()).hexdigest(), 16) % dims] += 1.0
    norm = math.sqrt(sum(v * v for v in vector)) or 1.0
    return [v / norm for v in vector]


@pytest.fixture
def remote_model(monkeypatch, tmp_path):
    """An llm embedding model that sends each batch to the next of two stub servers (a load balancer's round robin)."""
    import itertools
    import json as json_module
    import threading
    import urllib.request

    import llm

    monkeypatch.setenv("LLM_USER_PATH", str(tmp_path / "llm"))
    servers = _EmbeddingServers()
    turn = itertools.cycle(servers.urls)
    lock = threading.Lock()

    class Remote(llm.EmbeddingModel):
        model_id = "okf-test-remote"
        batch_size = 4
        supports_text = True

        def embed_batch(self, items):
            with lock:
                url = next(turn)
            request = urllib.request.Request(url, json_module.dumps({"texts": list(items)}).encode(),
                                             {"Content-Type": "application/json"})
            with urllib.request.urlopen(request, timeout=10) as response:
                return json_module.load(response)["vectors"]

    class Plugin:
        @llm.hookimpl
        def register_embedding_models(self, register):
            register(Remote())

    llm.plugins.pm.register(Plugin(), name="okf-test-remote")
    yield servers
    llm.plugins.pm.unregister(name="okf-test-remote")
    servers.close()


def test_jobs_send_batches_at_once_and_retry_a_failed_batch(tmp_path, remote_model):
    db = tmp_path / "v.db"
    report = build([VAULT], db, model="okf-test-remote", jobs=4, embedding_cache=False)
    chunks = sum(b.chunks for b in report.bundles)
    assert report.embedding.embedded == chunks
    assert remote_model.most_in_flight >= 2  # several batches were with the servers at once
    assert remote_model.requests["slow"] and remote_model.requests["flaky"]  # both servers of the pool were used
    with sqlite3.connect(db) as conn:
        assert conn.execute("select count(*) from chunks where embedded_with = 'okf-test-remote'").fetchone()[0] == chunks


def test_jobs_fail_the_build_cleanly_when_a_batch_fails_twice(tmp_path, remote_model):
    bundle = tmp_path / "vault"
    shutil.copytree(VAULT, bundle)
    db = tmp_path / "v.db"
    build([bundle], db, model="okf-test-remote", jobs=4, embedding_cache=False)

    def state():
        with contextlib.closing(sqlite3.connect(db)) as conn:
            return conn.execute("select id, content_hash, embedded_with from chunks order by id").fetchall()

    before = state()
    (bundle / "People" / "Nessa Thorne.md").write_text("# Nessa Thorne\n\nShe keeps a parrot called Squawk.\n")
    remote_model.fail_all = True  # the whole pool is down: every batch fails, and fails again
    with pytest.raises(EmbeddingError, match="failed twice"):
        build([bundle], db, model="okf-test-remote", jobs=4, embedding_cache=False)
    assert state() == before  # nothing half-written: the build's transaction was rolled back


REPUTATION = "| Party | Standing | Notes |\n|---|---|---|\n|Campaign Group 1|  | Note 1 |\n|Campaign Group 2|  | Note 1 |"
TEMPLATED = ("# {name}\n\n## Introduction\nA script for the GM to read when the party arrive to this location for the "
             "first time.\n\n## Overview\nStatus: Active\n\n{name} is a harbour town known for {trade}.\n\n"
             "## Reputation\n" + REPUTATION + "\n")


def test_a_chunk_twenty_notes_share_word_for_word_is_a_template_text_redone_at_each_build(tmp_path):
    """Thellade's 207 places carry the template's reputation table, "Note 1" in every row: its words are the same in
    every note, so it says nothing of any of them."""
    files = {f"Places/Town {n}.md": TEMPLATED.format(name=f"Town {n}", trade=f"trade number {n}") for n in range(20)}
    vault = write_bundle(tmp_path / "vault", files)
    db_path = tmp_path / "out.db"
    build([vault], db_path, embed=False)
    rows = sqlite_utils.Database(db_path).execute("select text, notes from template_texts").fetchall()
    assert [(text.split("\n")[0], notes) for text, notes in rows] == [("| Party | Standing | Notes |", 20)]
    # each Overview is a note's own, and 20 notes is where a template starts
    (vault / "Places" / "Town 0.md").unlink()
    build([vault], db_path, embed=False, prune=True)
    assert sqlite_utils.Database(db_path)["template_texts"].count == 0  # 19 copies left: a note's text again


def test_a_line_twenty_notes_share_word_for_word_is_a_templates_placeholder_and_no_chunk_holds_it(tmp_path):
    """77 Thellade districts read "*“Where sand meets stone, and roots grasp the sky.”*" under their own overview, the
    template's example theme, which the LLM read as each district's own; 495 places open on the GM script. A prose
    line 20 notes share word for word leaves their chunks (a chunk of nothing else goes); a `Key: value` line
    ("Status: Active") is each note's own news, however many share it, and 19 notes are still 19 notes' words."""
    files = {f"Places/Town {n}.md": TEMPLATED.format(name=f"Town {n}", trade=f"trade number {n}") for n in range(20)}
    vault = write_bundle(tmp_path / "vault", files)
    build([vault], tmp_path / "out.db", embed=False)
    chunks = sqlite_utils.Database(tmp_path / "out.db").execute(
        "select heading, text from chunks where concept_id = 'vault/Places/Town 3' order by seq").fetchall()
    assert [heading for heading, _ in chunks] == ["Overview", "Reputation"]  # the Introduction held only the script
    assert chunks[0][1] == "Status: Active\n\nTown 3 is a harbour town known for trade number 3."
    (vault / "Places" / "Town 0.md").unlink()
    build([vault], tmp_path / "out.db", embed=False, prune=True)
    kept = sqlite_utils.Database(tmp_path / "out.db").execute(
        "select count(*) from chunks where text like 'A script for the GM%'").fetchone()[0]
    assert kept == 19
