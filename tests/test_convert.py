"""`datasette okf convert`: vault -> OKF bundle, with a report instead of guesses."""

import hashlib
import json
import shlex
import shutil

import pytest
import sqlite_utils
from click.testing import CliRunner
from datasette.cli import cli

from datasette_okf.bundle import parse_bundle, scan_bundle
from datasette_okf.convert import DEFAULT_TYPES, ConvertError, convert, suggested_type, type_for
from datasette_okf.frontmatter import parse_frontmatter, split_frontmatter
from datasette_okf.lint import run_lint
from datasette_okf.retrieve import connection
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


def frontmatter(path):
    yaml_text, _, _ = split_frontmatter(path.read_text(encoding="utf-8"))
    return parse_frontmatter(yaml_text)


def descriptions(folder):
    """What the build says each note is about, by path (parse_bundle: frontmatter, else its own words)."""
    return {c.path: c.description for c in parse_bundle(scan_bundle(folder)).concepts
            if not c.is_index and getattr(c, "description_source", None) != "folder"}


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


def test_links_and_frontmatter(vault, tmp_path):
    out = tmp_path / "out"
    report = convert(vault, out, generated_at="2026-11-29T00:00:00+00:00")
    nessa = (out / "People" / "Nessa Thorne.md").read_text()
    assert "type: Person" in nessa and "title: Nessa Thorne" in nessa
    assert "by: datasette-okf/" in nessa and "at: '2026-11-29T00:00:00+00:00'" in nessa
    assert "location: '[[Port Vell]]'" in nessa  # the property as written, and nothing made from it
    assert "relations" not in nessa
    assert "[Fish Market](../Places/Docks/Fish%20Market.md)" in nessa
    session1 = (out / "Sessions" / "Session 1.md").read_text()
    assert "![[Port Vell]]" in session1 and "![[harbour.png]]" in session1  # embeds left exactly as written
    assert "[Port Vell > Districts](../Places/Port%20Vell.md#districts)" in session1  # anchor as the heading's slug
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
    assert report.counts["dead_note_links"] == 2 and report.counts["ambiguous_links"] == 1 and report.counts["missing_heading"] == 1
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


def test_type_map():
    types = {**DEFAULT_TYPES, "bad guys": "Antagonist"}
    assert type_for("01 Campaign/03 Entities/04 NPCs/Isles/Jambito/Tyren.md", types) == ("Person", None)
    assert type_for("Bad Guys/Vecna.md", types) == ("Antagonist", None)
    assert type_for("Misc/Thing.md", types) == ("Note", "Misc")
    # a lettered number is numbering too (before: "02a Demon Lords" was looked up as "a demon lords")
    assert type_for("03 Entities/02a Demon Lords/Orcus.md", {"demon lords": "Demon Lord"}) == ("Demon Lord", None)
    assert type_for("1st Age/Fall.md", {"age": "Era"}) == ("Note", "1st Age")  # a word, not numbering


def test_a_note_without_a_description_gets_the_one_the_build_gives_it(vault, tmp_path):
    # Before: the converter found a first sentence of its own, which could be a template's placeholder
    # (written in many notes) where the build skips those.
    placeholder = "A script for the GM to read when the party arrive."
    for name in ["Gatehouse", "Lighthouse", "Rope Walk", "Tannery"]:
        (vault / "Places" / f"{name}.md").write_text(f"# {name}\n\n{placeholder}\n\nThe {name.lower()} leans north.\n")
    (vault / "Places" / "Chain Tower.md").write_text(f"---\ndescription: Written by hand.\n---\n{placeholder} It is tall.\n")
    (vault / "Places" / "Kiln.md").write_text(f"# Kiln\n\n{placeholder}\n")  # nothing of its own to quote
    expected = descriptions(vault)
    assert expected["Places/Gatehouse.md"] == "The gatehouse leans north."  # needs the build's inference
    assert expected["People/Nessa Thorne.md"] == "Captain of the Black Gulls."  # needs the build's inference
    out = tmp_path / "out"
    report = convert(vault, out)
    for path in expected:
        converted = out / report.renamed.get(path, path)
        assert frontmatter(converted).get("description") == expected[path], path
    assert frontmatter(out / "Places" / "Chain Tower.md")["description"] == "Written by hand."  # kept
    assert "description" not in frontmatter(out / "Places" / "Kiln.md")  # none rather than a made-up one
    assert "* [Gatehouse](Gatehouse.md) - The gatehouse leans north." in (out / "Places" / "index.md").read_text()


def test_a_link_shows_its_shown_text(tmp_path):
    # Before: a link through an alias showed the note's file name, so "Dornal Syle", the name the
    # impostor used, became "Vaust Hadrinel" in the converted text; and [[Note#Heading]] lost its heading.
    vault = write_bundle(tmp_path / "vault", {
        "People/Vaust Hadrinel.md": "---\naliases: [Dornal Syle]\n---\n# Vaust Hadrinel\n\n## Cover\n\nA spice merchant.\n",
        "Sessions/Session 3.md": (
            "[[Dornal Syle]] paid in gold. [[dornal syle|The merchant]] left early.\n"
            "[[People/Vaust Hadrinel]] is the file; [[Vaust Hadrinel#Cover]] and [[Dornal Syle#Cover]] say why.\n"
            "See [[#Loot]] and [[Vaust Hadrinel]].\n\n## Loot\n\n- a ledger\n"
        ),
    })
    out = tmp_path / "out"
    report = convert(vault, out)
    session = (out / "Sessions" / "Session 3.md").read_text()
    target = "../People/Vaust%20Hadrinel.md"
    assert f"[Dornal Syle]({target}) paid in gold." in session  # [[Alias]] shows the alias
    assert f"[The merchant]({target}) left early." in session  # [[T|shown]] shows "shown"
    assert f"[Vaust Hadrinel]({target}) is the file" in session  # a path reads as its note's name
    assert f"[Vaust Hadrinel > Cover]({target}#cover)" in session  # [[Note#Heading]] is "Note > Heading"
    assert f"[Dornal Syle > Cover]({target}#cover)" in session
    assert f"See [Loot](#loot) and [Vaust Hadrinel]({target})." in session  # [[#Heading]] is "Heading"
    assert report.counts["links_converted"] == 7
    assert report.counts["alias_links"] == 3  # the links that reached their note through one of its aliases


def test_frontmatter_that_does_not_parse_is_replaced_and_kept_in_the_body(tmp_path):
    # Before: the note was copied as it was, so the converted bundle had a concept without a type (OKF §4.1, §11).
    original = (
        "tags:\n  - \"#Operation\"\naliases: \n  - Duskfall Protocol\n"
        "factions: [[The Black Sepulcher]]\nlocations: [[Blackwater Crossing]], [[Duskwell Cavern]]\n"
    )
    body = "\n# Duskfall\n\nA kill-and-cover protocol of the [[The Black Sepulcher|Sepulcher]].\n"
    vault = write_bundle(tmp_path / "vault", {
        "Quests/Duskfall.md": f"---\n{original}---\n{body}",
        "Factions/The Black Sepulcher.md": "A cult of Orcus.\n",
        "Places/Blackwater Crossing.md": "A ford.\n",
    })
    out = tmp_path / "out"
    report = convert(vault, out, generated_at="2026-11-29T00:00:00+00:00")
    assert list(report.unparsed_frontmatter) == ["Quests/Duskfall.md"]
    assert "malformed YAML" in report.unparsed_frontmatter["Quests/Duskfall.md"]
    assert report.counts["unparsed_frontmatter"] == 1
    text = (out / "Quests" / "Duskfall.md").read_text()
    fm = frontmatter(out / "Quests" / "Duskfall.md")
    assert fm["type"] == "Quest" and fm["title"] == "Duskfall"  # type from its folder, title from its name
    assert fm.get("description") == descriptions(vault)["Quests/Duskfall.md"]
    # the original block verbatim, then the original body (its links converted as in any note)
    assert text.endswith(
        f"---\n## Original frontmatter (did not parse)\n\n```yaml\n{original}```\n\n"
        "\n# Duskfall\n\nA kill-and-cover protocol of the [Sepulcher](../Factions/The%20Black%20Sepulcher.md).\n"
    )
    bundle = parse_bundle(scan_bundle(out))
    assert [c.path for c in bundle.concepts if not c.is_index and not c.type] == []
    [concept] = [c for c in bundle.concepts if c.path == "Quests/Duskfall.md"]
    assert concept.type == "Quest" and concept.frontmatter.get("tags") is None
    # the links in the kept block are code now, as they were nothing to the build of the vault
    assert {e.dst for e in bundle.edges if e.src == concept.id} == {"out/Factions/The Black Sepulcher"}
    markdown = report.as_markdown()
    assert "- `Quests/Duskfall.md`: malformed YAML" in markdown
    assert "original block is kept verbatim at the top of the body" in markdown


def test_the_report_says_how_to_type_the_notes_that_fell_back_to_note(tmp_path):
    # Before: it listed the folders; now each comes with a --type-map option to paste, most notes first.
    files = {"Vault Hub.md": "Start here.\n"}
    for n in range(3):
        files[f"01 Campaign/03 Entities/02 Demigods/God {n}.md"] = "A god.\n"
        files[f"01 Campaign/03 Entities/02a Demon Lords/Lord {n}.md"] = "A demon.\n"
    files["Other/Demon Lords/Lord 9.md"] = "Another demon.\n"  # one name, one line: a name maps every folder so called
    files["01 Campaign/01 World/05 Reaches/The Veins.md"] = "A reach.\n"
    for name in ["Galaxies", "Star Systems", "Planes", "Jokes", "Images", "Ideas", "Misc", "Party Dashboards"]:
        files[f"01 Campaign/{name}/{name} note.md"] = "Something.\n"
    files["People/Ann.md"] = "A person.\n"  # mapped by default: not listed
    vault = write_bundle(tmp_path / "vault", files)
    report = convert(vault, tmp_path / "out")
    suggestions = report.type_map_suggestions()
    assert [(s["option"], s["notes"]) for s in suggestions[:3]] == [
        ('--type-map "Demon Lords=Demon Lord"', 4), ('--type-map "Demigods=Demigod"', 3),
        ('--type-map "Galaxies=Galaxy"', 1)]
    assert suggestions[0]["folders"] == ["01 Campaign/03 Entities/02a Demon Lords", "Other/Demon Lords"]
    assert len(suggestions) == 11 and report.type_fallbacks[""] == ["Vault Hub.md"]  # the root has no folder to map
    markdown = report.as_markdown()
    assert ('- 4 notes: `--type-map "Demon Lords=Demon Lord"` '
            '(`01 Campaign/03 Entities/02a Demon Lords`, `Other/Demon Lords`)') in markdown
    assert "- 1 note at the vault root, which has no folder name to map" in markdown

    result = CliRunner().invoke(cli, ["okf", "convert", str(vault), str(tmp_path / "cli")])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[1].startswith("16 notes in folders with no type mapping were typed Note")
    assert lines[2:4] == ['     4 notes  --type-map "Demon Lords=Demon Lord"', '     3 notes  --type-map "Demigods=Demigod"']
    assert lines[12:14] == ["  … 1 more in the report", "1 note at the vault root was typed Note (no folder to map)."]
    # pasted back, the options leave only the vault root untyped
    options = [arg for s in suggestions for arg in shlex.split(s["option"])]
    again = CliRunner().invoke(cli, ["okf", "convert", str(vault), str(tmp_path / "typed"), *options])
    assert again.exit_code == 0, again.output
    assert "typed Note; to type them" not in again.output
    assert frontmatter(tmp_path / "typed" / "01 Campaign" / "03 Entities" / "02a Demon Lords" / "Lord 0.md")["type"] == "Demon Lord"
    assert frontmatter(tmp_path / "typed" / "01 Campaign" / "01 World" / "05 Reaches" / "The Veins.md")["type"] == "Reach"


def test_suggested_type_names():
    assert [suggested_type(name) for name in [
        "04 NPCs", "Factions", "02a Demon Lords", "Galaxies", "Reaches", "Classes", "Star Systems", "Misc", "Lore",
        "Status", "Series", "Thellade",
    ]] == ["NPC", "Faction", "Demon Lord", "Galaxy", "Reach", "Class", "Star System", "Misc", "Lore", "Status",
           "Series", "Thellade"]


def test_frontmatter_links_stay_properties_and_make_no_one_way_relations(vault, tmp_path):
    # Before: every wikilink in a property also became a `relations` entry, one way only: OKF core has no
    # `relations` (v0.2 §4.1 allows extra keys; §6.1 says a link's kind comes from its context), and the
    # graph-wiki convention that does wants both directions asserted together, so a vault converted this way
    # drew thousands of "asymmetric relations" lint warnings (6,292 for the Thellade vault).
    out = tmp_path / "out"
    convert(vault, out)
    assert frontmatter(out / "People" / "Dagna Forsythe.md")["organization"] == ["[[The Sable Accord]]", "[[Black Gulls]]"]
    build([vault], tmp_path / "vault.db", embed=False)
    build([out], tmp_path / "out.db", embed=False)
    edges = """select s.path, e.predicate, d.path from edges e join concepts s on s.id = e.src
               join concepts d on d.id = e.dst where e.kind = ?"""
    property_edges = set(connection(str(tmp_path / "out.db")).execute(edges, ["property"]).fetchall())
    assert ("People/Dagna Forsythe.md", "organization", "Factions/Black Gulls.md") in property_edges
    assert property_edges == set(connection(str(tmp_path / "vault.db")).execute(edges, ["property"]).fetchall())
    conn = connection(str(tmp_path / "out.db"))
    assert conn.execute(edges, ["relation"]).fetchall() == []
    [asymmetric] = run_lint(conn, only="asymmetric_relations")
    assert asymmetric["rows"] == []


def test_relations_the_vault_wrote_are_kept_as_written(vault, tmp_path):
    gulls = vault / "Factions" / "Black Gulls.md"
    gulls.write_text(gulls.read_text().replace(
        "aliases: [Gulls]\n",
        "aliases: [Gulls]\nbase: '[[Drowned Steps]]'\n"
        "relations:\n  - {predicate: rival_of, object: '[[The Sable Accord]]', date: '1346'}\n"))
    out = tmp_path / "out"
    convert(vault, out)
    written = frontmatter(out / "Factions" / "Black Gulls.md")
    assert written["relations"] == [{"predicate": "rival_of", "object": "[[The Sable Accord]]", "date": "1346"}]
    assert written["base"] == "[[Drowned Steps]]"  # and no `base` relation added beside the vault's own
    assert "relations" not in frontmatter(out / "People" / "Nessa Thorne.md")


def test_cli(vault, tmp_path):
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["okf", "convert", str(vault), str(out), "--type-map", "Sessions=Session Log",
                                      "--report-json", str(tmp_path / "report.json")])
    assert result.exit_code == 0, result.output
    assert "2 dead note links, 2 missing attachments, 1 ambiguous links" in result.output
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
    converted = parse_bundle(scan_bundle(tmp_path / "out"))
    assert [c.path for c in converted.concepts if not c.is_index and not c.type] == []  # Thellade's Duskfall.md too
    assert [e for e in converted.edges if e.kind == "relation"] == []
    build([source], tmp_path / "vault.db", embed=False)
    db = sqlite_utils.Database(tmp_path / "vault.db")
    counts = dict(db.execute("select problem, count(*) from link_issues group by problem").fetchall())
    assert report.counts["dead_note_links"] == counts.get("dead", 0)
    assert report.counts["missing_attachments"] == counts.get("missing-file", 0)
    assert report.counts["ambiguous_links"] == counts.get("ambiguous", 0)
    assert report.counts["notes"] == db["concepts"].count


def test_a_statblock_link_is_converted_and_still_a_link(tmp_path):
    """Fantasy Statblocks renders the links in a statblock's fields: converted, they stay links the build reads
    (`[[Spider-Mount|Spider Mount]]` becomes a relative markdown link inside the same fence)."""
    vault = write_bundle(tmp_path / "srd", {
        "Bestiary/Spider-Mount.md": "---\ntype: beast\n---\nA spider the drow ride.\n",
        "Bestiary/Drow-Cavalry.md": "---\ntype: humanoid\n---\n```statblock\nname: \"Drow Cavalry\"\ntraits:\n"
                                    "    - desc: \"its mount acts (See [[Spider-Mount|Spider Mount]])\"\n```\n",
    })
    out = tmp_path / "out"
    convert(vault, out)
    cavalry = (out / "Bestiary" / "Drow-Cavalry.md").read_text()
    assert "```statblock\n" in cavalry and '(See [Spider Mount](Spider-Mount.md))"\n```' in cavalry
    build([vault], tmp_path / "vault.db", embed=False)
    build([out], tmp_path / "out.db", embed=False)
    assert pairs(tmp_path / "vault.db", "srd") == pairs(tmp_path / "out.db", "out") == {
        ("Bestiary/Drow-Cavalry.md", "Bestiary/Spider-Mount.md")}
