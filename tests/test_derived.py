"""timeline.md and wiki-trigger-keywords.txt: what goes in, what stays out, and the same bytes every time."""

from __future__ import annotations

import shutil

from click.testing import CliRunner
from datasette.cli import cli

from datasette_okf.derived import trigger_keywords, write_derived
from datasette_okf.retrieve import connection
from datasette_okf.schema import is_derived_timeline
from datasette_okf.store import build

from .conftest import EXAMPLES, write_bundle

NOTE = "---\ntype: {type}\ntitle: {title}\n{extra}---\n{body}\n"


def small(tmp_path):
    return write_bundle(tmp_path / "saga", {
        "people/mira.md": NOTE.format(
            type="Person", title="Mira Vell", body="Leader.",
            extra="aliases: [The Harbourmaster]\ntags: [npc, 2009, a, the, '1420', harbour]\n"
                  "relations:\n  - {predicate: leads, object: /orgs/council.md, date: '1344-09-01', source: s1}\n"
                  "  - {predicate: born_in, object: Saltmere, date: autumn 1320}\n"),
        "orgs/council.md": NOTE.format(type="Organization", title="Harbour Council", extra="tags: 'harbour, guild'\n",
                                       body="Rules the docks."),
        "log.md": "# Log\n\n## 2026-03-02\n\n* Added the council.\n\n## 2026-03-01\n\n* Started.\n",
    })


def test_timeline_groups_dated_relations_and_log_entries_oldest_first(tmp_path):
    bundle = small(tmp_path)
    db = tmp_path / "out" / "saga.db"
    build([bundle], db, embed=False)
    changed = write_derived(db)
    timeline = (tmp_path / "out" / "saga.timeline.md").read_text()
    assert changed == [tmp_path / "out" / "saga.timeline.md", tmp_path / "out" / "saga.wiki-trigger-keywords.txt"]
    assert is_derived_timeline(timeline)
    dates = [line[3:] for line in timeline.splitlines() if line.startswith("## ")]
    assert dates == ["1344-09-01", "2026-03-01", "2026-03-02", "autumn 1320"]  # ISO in order, free text after
    assert "- [Mira Vell](../saga/people/mira.md) leads [Harbour Council](../saga/orgs/council.md) (source: s1)" in timeline
    assert "- [Mira Vell](../saga/people/mira.md) born in Saltmere" in timeline  # a literal object
    assert "- [log](../saga/log.md): Added the council." in timeline


def test_keywords_are_titles_aliases_and_string_tags_only(tmp_path):
    bundle = small(tmp_path)
    db = tmp_path / "saga.db"
    build([bundle], db, embed=False)
    keywords = trigger_keywords(connection(str(db)), ["saga"])
    assert keywords == ["guild", "harbour", "Harbour Council", "Mira Vell", "npc", "The Harbourmaster"]
    # left out: the YAML number 2009, the quoted number '1420', one-letter "a", the common word "the",
    # and duplicates ("harbour" twice) and index nodes


def test_the_same_database_gives_the_same_bytes_and_nothing_is_rewritten(tmp_path):
    bundle = tmp_path / "campaign"
    shutil.copytree(EXAMPLES, bundle)
    db = tmp_path / "campaign.db"
    build([bundle], db, embed=False)
    first = write_derived(db, ["campaign"])
    assert len(first) == 4
    snapshot = {p: p.read_bytes() for p in first}
    assert write_derived(db, ["campaign"]) == []  # identical: not even touched
    db.unlink()  # from scratch, with the derived timeline.md now inside the bundle
    build([bundle], db, embed=False)
    assert connection(str(db)).execute("select count(*) from concepts where id = 'campaign/timeline'").fetchone()[0] == 0
    write_derived(db, ["campaign"])
    for path, data in snapshot.items():
        assert path.read_bytes() == data, path


def test_build_command_writes_them_beside_the_database_and_into_bundles_only_when_asked(tmp_path):
    bundle = small(tmp_path)
    out = tmp_path / "build" / "saga.db"
    result = CliRunner().invoke(cli, ["okf", "build", str(bundle), "-o", str(out), "--no-embed"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "build" / "saga.wiki-trigger-keywords.txt").exists()
    assert not (bundle / "timeline.md").exists()
    result = CliRunner().invoke(cli, ["okf", "build", str(bundle), "-o", str(out), "--no-embed", "--write-bundle-files"])
    assert result.exit_code == 0 and (bundle / "timeline.md").exists() and (bundle / "wiki-trigger-keywords.txt").exists()
    (bundle / "timeline.md").unlink()
    result = CliRunner().invoke(cli, ["okf", "build", str(bundle), "-o", str(out), "--no-embed"])
    assert not (bundle / "timeline.md").exists()  # never written into a bundle behind the user's back
    beside = tmp_path / "build" / "saga.timeline.md"
    beside.unlink()  # an untouched database skips the derived files unless one is missing
    assert "derived: " + str(beside) in CliRunner().invoke(cli, ["okf", "build", str(bundle), "-o", str(out), "--no-embed"]).output
    assert "derived:" not in CliRunner().invoke(cli, ["okf", "build", str(bundle), "-o", str(out), "--no-embed"]).output


def test_a_hand_written_timeline_is_a_concept_like_any_other(tmp_path):
    bundle = write_bundle(tmp_path / "b", {"timeline.md": "---\ntype: Concept\n---\n# My own timeline\n"})
    db = tmp_path / "b.db"
    build([bundle], db, embed=False)
    assert connection(str(db)).execute("select count(*) from concepts where id = 'b/timeline'").fetchone()[0] == 1
