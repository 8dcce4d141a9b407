"""`datasette okf convert`: vault -> OKF bundle, with a report instead of guesses."""

import hashlib
import json
import shutil

import pytest
import sqlite_utils
from click.testing import CliRunner
from datasette.cli import cli

from datasette_okf.convert import DEFAULT_TYPES, ConvertError, convert, first_sentence, type_for
from datasette_okf.store import build

from .conftest import CORPORA, VAULT, needs_corpora, write_bundle


@pytest.fixture
def vault(tmp_path):
    """The Obsidian fixture vault plus a reserved-name clash and a link to a missing heading."""
    root = tmp_path / "vault"
    shutil.copytree(VAULT, root)
    (root / "Places" / "index.md").write_text("---\ntags: [hub]\n---\nAll the places: [[Port Vell]].\n")
    session = root / "Sessions" / "Session 2.md"
    session.write_text(session.read_text() + "\nSee [[Port Vell#No Such Heading]] and [[index]].\n")
    return root


def digest(folder):
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def pairs(db_path, bundle, renamed=None):
    """Distinct note -> note pairs by bundle-relative path, index nodes and the report left out."""
    db = sqlite_utils.Database(db_path)
    rows = db.execute(
        """select distinct s.path, d.path from edges e join concepts s on s.id = e.src join concepts d on d.id = e.dst
           where not s.is_index and not d.is_index and s.id != d.id and s.type is not 'Conversion Report'"""
    ).fetchall()
    renamed = renamed or {}
    return {(renamed.get(a, a), renamed.get(b, b)) for a, b in rows}


def test_converted_bundle_builds_clean_with_the_same_graph(vault, tmp_path):
    before = digest(vault)
    out = tmp_path / "out"
    report = convert(vault, out, generated_at="2026-11-29T00:00:00+00:00")
    assert digest(vault) == before  # the vault is only read
    assert report.renamed == {"Places/index.md": "Places/index-note.md"}
    build([vault], tmp_path / "vault.db", embed=False)
    build([out], tmp_path / "out.db", embed=False)
    db = sqlite_utils.Database(tmp_path / "out.db")
    assert db.execute("select count(*) from concepts where not is_index and (type is null or type = '')").fetchone()[0] == 0
    # every link that was converted resolves: the only issues left are the ones the report lists
    left = {(r[0], r[1]) for r in db.execute("select file, target from link_issues")}
    reported = {(p.file, p.target) for p in report.problems if p.problem != "missing-heading"}
    assert {(report.renamed.get(f, f), t) for f, t in reported} == left


def test_same_note_graph_before_and_after(tmp_path):
    out = tmp_path / "out"
    convert(VAULT, out)
    build([VAULT], tmp_path / "vault.db", embed=False)
    build([out], tmp_path / "out.db", embed=False)
    assert pairs(tmp_path / "vault.db", "vault") == pairs(tmp_path / "out.db", "out")


def test_links_relations_and_frontmatter(vault, tmp_path):
    out = tmp_path / "out"
    report = convert(vault, out, generated_at="2026-11-29T00:00:00+00:00")
    nessa = (out / "People" / "Nessa Thorne.md").read_text()
    assert "type: Person" in nessa and "title: Nessa Thorne" in nessa
    assert "description: Captain of the Black Gulls." in nessa
    assert "by: datasette-okf/" in nessa and "at: '2026-11-29T00:00:00+00:00'" in nessa
    assert "location: '[[Port Vell]]'" in nessa  # the original property is kept
    assert "- predicate: location\n  object: /Places/Port Vell.md" in nessa
    assert "[Fish Market](../Places/Docks/Fish%20Market.md)" in nessa
    session1 = (out / "Sessions" / "Session 1.md").read_text()
    assert "![[Port Vell]]" in session1 and "![[harbour.png]]" in session1  # embeds left exactly as written
    assert "[Port Vell](../Places/Port%20Vell.md#districts)" in session1  # anchor as the heading's slug
    assert "[Old Marrek](../People/Marrek%20Tindall.md)" in session1  # shown text kept
    assert "[[Captain Orlo]]" in session1  # dead: left as written
    assert "[[Secret Door]]" in session1  # inside code: untouched
    gulls = (out / "Factions" / "Black Gulls.md").read_text()
    assert "[[Marrek Tindall]]" in gulls  # ambiguous: left as written
    session2 = (out / "Sessions" / "Session 2.md").read_text()
    assert "[[Port Vell#No Such Heading]]" in session2 and "[index](../Places/index-note.md)" in session2
    assert "[Loot](#loot)" in session2
    problems = {(p.target, p.problem) for p in report.problems}
    assert ("Port Vell#No Such Heading", "missing-heading") in problems
    assert ("Marrek Tindall", "ambiguous") in problems and ("Captain Orlo", "dead") in problems
    assert report.counts["dead"] == 2 and report.counts["ambiguous"] == 1 and report.counts["missing_heading"] == 1
    assert report.counts["embeds_left"] == 2 and report.counts["notes"] == 13


def test_indexes_are_generated(vault, tmp_path):
    out = tmp_path / "out"
    convert(vault, out)
    root = (out / "index.md").read_text()
    assert root.startswith('---\nokf_version: "0.2"\n---\n')
    assert "* [People](People/)" in root
    places = (out / "Places" / "index.md").read_text()
    assert "* [Port Vell](Port%20Vell.md) - " in places and "* [Docks](Docks/)" in places
    assert "* [index](index-note.md)" in places


def test_rerun_needs_force_and_is_identical(vault, tmp_path):
    out = tmp_path / "out"
    convert(vault, out)
    first = digest(out)
    with pytest.raises(ConvertError, match="--force"):
        convert(vault, out)
    convert(vault, out, force=True)
    assert digest(out) == first
    with pytest.raises(ConvertError, match="outside the vault"):
        convert(vault, vault / "okf")


def test_type_map_and_description():
    types = {**DEFAULT_TYPES, "bad guys": "Antagonist"}
    assert type_for("01 Campaign/03 Entities/04 NPCs/Isles/Jambito/Tyren.md", types) == ("Person", None)
    assert type_for("Bad Guys/Vecna.md", types) == ("Antagonist", None)
    assert type_for("Misc/Thing.md", types) == ("Note", "Misc")
    body = "# Title\n> [!info] callout\n`INPUT[text:x]`\n```dataview\nTABLE x\n```\nThe [[Black Gulls|Gulls]] run the docks. More.\n"
    assert first_sentence(body) == "The Gulls run the docks."


def test_the_description_skips_code_and_comments_as_the_build_does():
    # Before: a fence closed by the other fence character, and the lines of a long comment, gave the description.
    body = (
        "~~~\nwrite it ```\n```\nnot prose in the code block.\n~~~\n"
        "<!--\nA hidden comment line here.\n-->\nThe `Gull` ship is real.\n"
    )
    assert first_sentence(body) == "The Gull ship is real."


def test_cli(vault, tmp_path):
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["okf", "convert", str(vault), str(out), "--type-map", "Sessions=Session Log",
                                      "--report-json", str(tmp_path / "report.json")])
    assert result.exit_code == 0, result.output
    assert "2 dead, 1 ambiguous" in result.output
    data = json.loads((tmp_path / "report.json").read_text())
    assert data["counts"]["links_converted"] > 20
    assert (out / "conversion-report.md").read_text().startswith("---\ntype: Conversion Report\n")
    assert "type: Session Log" in (out / "Sessions" / "Session 1.md").read_text()
    again = CliRunner().invoke(cli, ["okf", "convert", str(vault), str(out)])
    assert again.exit_code == 1 and "--force" in again.output


def test_notes_in_other_encodings_are_converted_as_the_build_reads_them(tmp_path):
    # Before: the converter decoded UTF-8 with replacement characters ("caf\ufffd") and kept a byte-order
    # mark, which hid the frontmatter, so the note got a guessed type and its own frontmatter became body text.
    vault = write_bundle(tmp_path / "vault", {
        "Places/Cafe.md": b"The caf\xe9 by the quay stays open late.\r\n",
        "Places/Quay.md": b"\xef\xbb\xbf---\r\ntype: Harbour\r\n---\r\nStone steps down to the water.\r\n",
        "Places/Tower.md": "---\ntype: Tower\n---\nThe chain tower, caf\u00e9 below.\n".encode("utf-16"),
    })
    out = tmp_path / "out"
    convert(vault, out, generated_at="2026-11-29T00:00:00+00:00")
    cafe = (out / "Places" / "Cafe.md").read_text(encoding="utf-8")
    assert cafe.endswith("---\nThe caf\u00e9 by the quay stays open late.\n")
    assert "description: The caf\u00e9 by the quay stays open late." in cafe
    quay = (out / "Places" / "Quay.md").read_bytes().decode("utf-8")
    assert quay.startswith("---\ntype: Harbour\ntitle: Quay\n") and quay.count("---") == 2
    tower = (out / "Places" / "Tower.md").read_bytes().decode("utf-8")
    assert tower.startswith("---\ntype: Tower\n") and "caf\u00e9 below" in tower
    build([out], tmp_path / "out.db", embed=False)
    db = sqlite_utils.Database(tmp_path / "out.db")
    assert db.execute("select count(*) from build_issues").fetchone()[0] == 0  # now clean UTF-8
    assert dict(db.execute("select title, type from concepts where not is_index").fetchall()) == {
        "Cafe": "Place", "Quay": "Harbour", "Tower": "Tower"}


@needs_corpora
@pytest.mark.parametrize("name", ["thellade-campaign-vault", "13th-age-srd-vault"])
def test_real_vaults_report_what_the_build_reports(name, tmp_path):
    source = CORPORA / name / "vault"
    report = convert(source, tmp_path / "out")
    build([source], tmp_path / "vault.db", embed=False)
    db = sqlite_utils.Database(tmp_path / "vault.db")
    counts = dict(db.execute("select problem, count(*) from link_issues group by problem").fetchall())
    assert report.counts["dead"] == counts.get("dead", 0)
    assert report.counts["ambiguous"] == counts.get("ambiguous", 0)
    assert report.counts["notes"] == db["concepts"].count
