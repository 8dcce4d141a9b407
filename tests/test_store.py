"""Records become one SQLite file: schema, incremental rebuilds, prune, atomic replace."""

import json

import pytest
import sqlite_utils

from datasette_okf import store
from datasette_okf.store import BuildError, build

from .conftest import write_bundle

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
    assert meta["format_version"] == store.FORMAT_VERSION and "alpha" in json.loads(meta["bundles"])
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
        f.unlink()
    with pytest.raises(BuildError, match="refusing to prune"):
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
    import subprocess
    import sys

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
def test_an_incremental_build_equals_a_build_from_scratch(tmp_path, mentions):
    """Unchanged files reuse last build's link resolutions; after each kind of change the
    incremental file must hold exactly what a fresh build of the same folder holds."""
    from .conftest import VAULT
    import shutil

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
