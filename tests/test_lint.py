"""Every lint check is one SQL file; a fixture bundle trips each exactly once.

tests/fixtures/lint trips every check but the link ones; tests/fixtures/lint-links holds one link of each
link problem. Profiles: okf (the spec's rules) and vault (a plain Obsidian vault), chosen from okf_version.
"""

import json
import re

import pytest
from click.testing import CliRunner
from datasette.cli import cli
from sqlite_utils.utils import sqlite3  # the project's sqlite3 (pysqlite3 where installed)

from datasette_okf import lint
from datasette_okf.cli import summary
from datasette_okf.lint import LINK_PROBLEMS, PROFILES, charts, checks, choose_profile, link_problem_words, run_lint
from datasette_okf.retrieve import connection
from datasette_okf.schema import folder_of
from datasette_okf.store import build

from .conftest import EXAMPLES, HERE, VAULT, write_bundle

CHECKS = [c.name.removeprefix("lint_") for c in checks()]
NO_CONCEPT = {"duplicate_titles", "predicate_drift"}  # culprits: a group of concepts, a predicate
LINK_CHECKS = set(LINK_PROBLEMS.values())
LINKS = HERE / "fixtures" / "lint-links"
# check -> the fixture that trips it exactly once
ONCE = {name: "links" if name in LINK_CHECKS else "lint" for name in [
    "missing_type", "dead_links", "missing_attachments", "escaping_links", "ambiguous_links", "missing_headings",
    "orphans", "broken_relation_targets", "stale_concepts", "predicate_drift", "contradictions",
    "asymmetric_relations", "dangling_supersession", "asymmetric_supersession", "supersession_cycles",
    "unreviewed_references", "duplicate_titles", "log_out_of_order"]}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """name -> (database, build report) for the lint fixtures, the vault fixture and the campaign example."""
    folder = tmp_path_factory.mktemp("lint")
    bundles = {"lint": [HERE / "fixtures" / "lint"], "links": [LINKS], "vault": [VAULT], "campaign": [EXAMPLES],
               "mixed": [LINKS, VAULT]}
    return {name: (folder / f"{name}.db", build(paths, folder / f"{name}.db", embed=False))
            for name, paths in bundles.items()}


@pytest.fixture(scope="module")
def lint_db(built):
    return built["lint"][0]


def test_the_required_checks_exist_with_titles_descriptions_and_levels():
    assert set(CHECKS) >= set(ONCE)
    for check in checks():
        assert check.title and check.description, check.name
        assert all(check.level_for(profile) in ("error", "warning") for profile in PROFILES), check.name
    assert {c.name for c in charts()} == {"chart_concepts_by_type", "chart_edges_by_kind", "chart_log_timeline"}


def test_profiles_differ_only_where_the_spec_binds_an_okf_bundle_and_not_a_vault():
    differ = {c.name.removeprefix("lint_"): (c.level_for("okf"), c.level_for("vault"))
              for c in checks() if c.level_for("okf") != c.level_for("vault")}
    assert differ == {"missing_type": ("error", "warning"), "log_out_of_order": ("error", "warning")}


@pytest.mark.parametrize("name", ONCE)
def test_each_check_trips_exactly_once_on_its_fixture(built, name):
    [result] = run_lint(connection(built[ONCE[name]][0]), only=name)
    assert len(result["rows"]) == 1, result["rows"]


@pytest.mark.parametrize("name", CHECKS)
def test_every_check_runs_on_every_fixture(built, name):
    for database, _ in built.values():
        [result] = run_lint(connection(database), only=name)
        assert result["columns"], name


def test_expected_culprits(lint_db):
    results = {r["name"]: r["rows"][0] for r in run_lint(connection(lint_db)) if r["rows"]}
    assert results["orphans"][0] == "lint/orphan"
    assert results["missing_type"][0] == "lint/t"
    assert results["supersession_cycles"] == ["lint/m", "lint/m -> lint/n -> lint/m"]
    assert results["predicate_drift"][1] == "invested-in, invested_in"
    assert results["contradictions"][1:] == ["born_on", "1321", "s1", "1322", "s2"]
    assert results["missing_headings"][:3] == ["lint/a", "lint/b", "no-such-heading"]


def test_link_checks_each_list_one_problem(built):
    rows = {r["name"]: r["rows"] for r in run_lint(connection(built["links"][0])) if r["name"] in LINK_CHECKS}
    assert {name: [(row[3], row[4], row[5]) for row in found] for name, found in rows.items()} == {
        "dead_links": [("/nowhere.md", "link", "dead")],
        "missing_attachments": [("harbour.png", "embed", "missing-file")],
        "escaping_links": [("../../outside.md", "link", "escapes-bundle")],
        "ambiguous_links": [("Twin", "wikilink", "ambiguous")],
    }


def test_dead_note_links_count_every_kind_of_link(lint_db):
    """A dead relation object or supersession target is a dead note link too (the build summary counts it);
    broken_relation_targets and dangling_supersession list it again, at error level."""
    [dead] = run_lint(connection(lint_db), only="dead_links")
    assert sorted((row[3], row[4]) for row in dead["rows"]) == [
        ("/ghost.md", "supersedes"), ("/gone.md", "link"), ("/nobody.md", "relation")]


def _summary_links(report):
    """The build summary's links line as {words: count}."""
    [line] = [line for line in summary(report).splitlines() if line.startswith("  links: ")]
    return {words: int(n) for n, words in re.findall(r"(\d+) ([^,]+)", line.removeprefix("  links: "))}


@pytest.mark.parametrize("name", ["links", "lint", "vault", "campaign"])
def test_the_build_summary_and_lint_count_link_problems_with_the_same_words(built, name):
    database, report = built[name]
    by_title = {r["title"].lower(): len(r["rows"]) for r in run_lint(connection(database)) if r["name"] in LINK_CHECKS}
    assert _summary_links(report) == by_title
    assert set(by_title) == {"dead note links", "missing attachments", "links leaving the bundle", "ambiguous links"}
    if name == "links":
        assert set(by_title.values()) == {1}


def test_link_problem_words_are_the_check_titles():
    titles = {c.name.removeprefix("lint_"): c.title for c in checks()}
    assert link_problem_words() == {problem: titles[check].lower() for problem, check in LINK_PROBLEMS.items()}
    assert list(link_problem_words()) == ["dead", "missing-file", "escapes-bundle", "ambiguous"]


def test_the_profile_follows_okf_version(built):
    assert choose_profile(connection(built["campaign"][0])) == lint.Profile(
        "okf", "every bundle declares okf_version in its root index.md, OKF §12: campaign declares 0.2")
    assert choose_profile(connection(built["vault"][0])) == lint.Profile(
        "vault", "bundle vault has no okf_version in its root index.md, OKF §12")
    mixed = choose_profile(connection(built["mixed"][0]))
    assert mixed.name == "vault"
    assert mixed.reason == ("bundle vault has no okf_version in its root index.md, OKF §12; lint-links declares 0.2, "
                            "but one profile covers the whole database")
    forced = choose_profile(connection(built["vault"][0]), "okf")
    assert forced.name == "okf" and forced.reason.startswith("--profile okf; the automatic choice is vault: bundle vault")
    with pytest.raises(ValueError, match="unknown lint profile"):
        choose_profile(connection(built["vault"][0]), "strict")
    with pytest.raises(ValueError, match="unknown lint profile"):
        run_lint(connection(built["vault"][0]), profile="strict")


def test_a_vault_lints_with_the_vault_profile_and_exits_0_on_warnings(built):
    runner = CliRunner()
    result = runner.invoke(cli, ["okf", "lint", str(built["vault"][0])])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == "profile: vault (bundle vault has no okf_version in its root index.md, OKF §12)"
    assert not any(line.startswith("ERR") for line in lines)
    assert re.search(r"^warn Concepts without a type in their frontmatter: [1-9]", result.output, re.MULTILINE)
    strict = runner.invoke(cli, ["okf", "lint", str(built["vault"][0]), "--profile", "okf"])
    assert strict.exit_code == 1
    assert strict.output.startswith("profile: okf (--profile okf; the automatic choice is vault: bundle vault has no")
    assert re.search(r"^ERR  Concepts without a type in their frontmatter: [1-9]", strict.output, re.MULTILINE)


def test_an_okf_bundle_lints_with_the_okf_profile(built):
    runner = CliRunner()
    result = runner.invoke(cli, ["okf", "lint", str(built["campaign"][0]), "--format", "json"])
    assert result.exit_code == 0, result.output  # the example has warnings only
    report = json.loads(result.output)
    assert report["profile"] == "okf" and "campaign declares 0.2" in report["profile_reason"]
    by_name = {r["name"]: r for r in report["checks"]}
    assert by_name["missing_type"]["level"] == "error" and by_name["missing_type"]["rows"] == []
    assert len(by_name["dead_links"]["rows"]) == 1 and len(by_name["ambiguous_links"]["rows"]) == 1
    table = runner.invoke(cli, ["okf", "lint", str(built["campaign"][0])])
    assert table.output.startswith("profile: okf (every bundle declares okf_version in its root index.md, OKF §12")


def test_cli_exits_1_on_error_level_hits(lint_db):
    runner = CliRunner()
    result = runner.invoke(cli, ["okf", "lint", str(lint_db)])  # no okf_version: vault, but a cycle is an error
    assert result.exit_code == 1
    assert result.output.startswith("profile: vault (bundle lint has no okf_version")
    assert "ERR  Supersession cycles: 1" in result.output
    assert "warn Concepts without a type in their frontmatter: 1" in result.output
    assert "warn log.md out of order: 1" in result.output
    strict = runner.invoke(cli, ["okf", "lint", str(lint_db), "--profile", "okf"])
    assert "ERR  Concepts without a type in their frontmatter: 1" in strict.output
    assert "ERR  log.md out of order: 1" in strict.output


def test_missing_type_lists_concepts_whose_type_is_not_from_their_frontmatter():
    conn = sqlite3.connect(":memory:")  # no meta table: the okf profile
    conn.execute("create table concepts (id, path, bundle, type, type_source, is_index)")
    conn.executemany("insert into concepts values (?, ?, 'b', ?, ?, ?)", [
        ("b/typed", "typed.md", "Person", "frontmatter", 0),
        ("b/blank", "blank.md", " ", "frontmatter", 0),
        ("b/People/x", "People/x.md", "Person", "folder", 0),
        ("b/untyped", "untyped.md", None, None, 0),
        ("b/People", "People/index.md", None, None, 1),
        ("b/log", "log.md", "Log", None, 0),
    ])
    [okf] = run_lint(conn, only="missing_type")
    assert okf["level"] == "error"
    assert [row[0] for row in okf["rows"]] == ["b/People/x", "b/blank", "b/untyped"]
    assert okf["rows"][0][3:] == ["Person", "folder"]
    [vault] = run_lint(conn, only="missing_type", profile="vault")
    assert vault["level"] == "warning" and vault["rows"] == okf["rows"]


def test_header_levels_per_profile(tmp_path, monkeypatch):
    monkeypatch.setattr(lint, "SQL", tmp_path)
    (tmp_path / "lint").mkdir()
    (tmp_path / "lint" / "x.sql").write_text("-- title: X\n-- level: error\n-- vault-level: warning\nselect 1\n")
    [x] = checks()
    assert (x.level, x.levels, x.level_for("okf"), x.level_for("vault"), x.sql) == (
        "error", {"vault": "warning"}, "error", "warning", "select 1")
    (tmp_path / "lint" / "x.sql").write_text("-- title: X\n-- level: error\n-- vualt-level: warning\nselect 1\n")
    with pytest.raises(ValueError, match="unknown header -- vualt-level"):
        checks()
    (tmp_path / "lint" / "x.sql").write_text("-- title: X\n-- level: error\n-- vault-level: info\nselect 1\n")
    with pytest.raises(ValueError, match="level 'info'"):
        checks()


def test_multi_valued_predicates_are_configurable(lint_db):
    exempt = [r for r in run_lint(connection(lint_db), multi_valued=["born_on"]) if r["name"] == "contradictions"]
    assert exempt[0]["rows"] == []


def test_unfilled_templates_lists_the_stubs_of_a_vault(tmp_path):
    build([HERE / "fixtures" / "plugins"], tmp_path / "p.db", embed=False)
    [result] = run_lint(connection(tmp_path / "p.db"), only="unfilled_templates")
    assert sorted(row[2] for row in result["rows"]) == ["Eastport", "Highhold Rise", "Sablewatch", "Silverglade"]


def test_markup_left_finds_what_the_cleaning_missed(tmp_path):
    build([HERE / "fixtures" / "plugins"], tmp_path / "p.db", embed=False)
    conn = connection(tmp_path / "p.db")
    assert run_lint(conn, only="markup_left")[0]["rows"] == []  # every plugin snippet of the fixture is cleaned
    conn.execute("update chunks set text = text || ' `VIEW[{pronounced}]`' where id = (select min(id) from chunks)")
    assert len(run_lint(conn, only="markup_left")[0]["rows"]) == 1
    conn.execute("update chunks set text = text || ' WHERE econtains(tags, \"#Character\")'"
                 " where id = (select max(id) from chunks)")  # a Dataview query line the cleaning let through
    assert len(run_lint(conn, only="markup_left")[0]["rows"]) == 2
    conn.execute("update chunks set text = text || ' \"\" + link(file.link, Title) + \"\" AS Title'"
                 " where id = (select min(id) + 1 from chunks)")  # a query's column list (the party dashboards)
    assert len(run_lint(conn, only="markup_left")[0]["rows"]) == 3


def test_every_check_names_its_culprit_concept_and_takes_a_folder(built):
    for check in checks():
        name = check.name.removeprefix("lint_")
        [result] = run_lint(connection(built["lint"][0]), only=name)
        if name in NO_CONCEPT:
            assert "concept" not in result["columns"] and not check.by_folder and result["folders"] is None
            assert "not a concept" in check.description and "whole database" in check.description
        else:
            assert "concept" in result["columns"] and check.by_folder, name
    for database, _ in built.values():  # a culprit is an existing concept (log_out_of_order's: the log note)
        conn = connection(database)
        ids = {row[0] for row in conn.execute("select id from concepts")}
        for result in run_lint(conn):
            if result["folders"] is not None:
                assert {row[result["columns"].index("concept")] for row in result["rows"]} <= ids, result["name"]


def test_folders_are_the_bundle_and_two_folders_down():
    conn = connection(sqlite3.connect(":memory:"))
    for concept_id, folder in [("vault/01 Campaign/03 Entities/04 NPCs/Kanda/Dello", "vault/01 Campaign/03 Entities"),
                               ("vault/Places/Docks/Fish Market", "vault/Places/Docks"), ("vault/Scratchpad", "vault"),
                               (None, None)]:
        assert folder_of(concept_id) == conn.execute("select okf_folder(?)", [concept_id]).fetchone()[0] == folder


def test_the_folder_parameter_keeps_one_of_the_summarys_folders(built):
    conn = connection(built["vault"][0])
    [result] = run_lint(conn, only="missing_type")
    assert result["folders"] == {"vault/People": 3, "vault/Factions": 2, "vault/Places/Docks": 2, "vault/Sessions": 2,
                                 "vault/Places": 1, "vault": 1, "vault/Sessions/Old": 1}
    [check] = [c for c in checks() if c.name == "lint_missing_type"]
    for folder, hits in result["folders"].items():  # exactly that folder: vault/Places leaves out Places/Docks
        rows = conn.execute(check.sql, {"folder": folder}).fetchall()
        assert len(rows) == hits and {folder_of(row[0]) for row in rows} == {folder}
    assert conn.execute(check.sql, {"folder": "vault/Nowhere"}).fetchall() == []
    counts = conn.execute(lint.summary(checks(), "vault").sql, {"folder": "vault/Sessions"}).fetchall()
    assert counts == [("warning", "missing_attachments", 2, "vault/Sessions", 2),  # duplicate_titles: not by folder
                      ("warning", "missing_type", 2, "vault/Sessions", 2), ("warning", "orphans", 2, "vault/Sessions", 2),
                      ("warning", "dead_links", 1, "vault/Sessions", 1)]


@pytest.mark.parametrize("name", ["lint", "links", "vault", "campaign", "mixed"])
def test_the_summary_counts_are_the_checks_row_counts(built, name):
    conn = connection(built[name][0])
    profile = choose_profile(conn).name
    rows = conn.execute(lint.summary(checks(), profile).sql, {"folder": ""}).fetchall()
    expected = [(r["level"], r["name"], r["count"], folder, hits) for r in run_lint(conn, profile=profile) if r["rows"]
                for folder, hits in (r["folders"] or {None: r["count"]}).items()]
    assert sorted(rows, key=str) == sorted(expected, key=str) != []
    ranks = [(lint.LEVELS.index(level), -check_hits) for level, _, check_hits, _, _ in rows]
    assert ranks == sorted(ranks)  # errors first, then the checks with most hits


def test_checks_are_listed_errors_first_after_the_summary(lint_db):
    by_name = {c.name: c for c in checks()}
    for profile in PROFILES:
        names = list(lint.canned_queries(profile=profile))
        assert names[0] == "lint_summary" and names[-4:] == [
            "chart_concepts_by_type", "chart_edges_by_kind", "chart_log_timeline", "okf_rebuild_candidates"]
        levels = [by_name[name].level_for(profile) for name in names[1:-4]]
        assert levels == sorted(levels, key=lint.LEVELS.index) and set(levels) == {"error", "warning"}
        assert lint.canned_queries(profile=profile)["lint_summary"]["title"] == "Lint: summary"
    errors = [name for name in lint.canned_queries(profile="okf") if name in by_name][:5]
    assert {"lint_missing_type", "lint_log_out_of_order"} <= set(errors)
    results = run_lint(connection(lint_db))
    assert [r["level"] for r in results] == sorted((r["level"] for r in results), key=lint.LEVELS.index)


def test_cli_prints_counts_by_folder_before_any_row(tmp_path):
    notes = {f"People/Person {i:02}.md": f"Person {i} sells rope at stall {i}.\n" for i in range(15)}
    notes |= {f"Places/Place {i:02}.md": f"Place {i} has a well near gate {i}.\n" for i in range(10)}
    build([write_bundle(tmp_path / "big", notes)], tmp_path / "big.db", embed=False)
    result = CliRunner().invoke(cli, ["okf", "lint", str(tmp_path / "big.db")])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    start = lines.index("warn Concepts without a type in their frontmatter: 25")
    assert lines[start + 1:start + 3] == ["       15  big/People", "       10  big/Places"]
    counts = [i for i, line in enumerate(lines) if re.match(r"(ok |warn|ERR ) ", line)]
    details = [i for i, line in enumerate(lines) if line.endswith(("(25):", "(1):"))]
    assert len(counts) == len(CHECKS) and max(counts) < min(details)
    assert "Concepts without a type in their frontmatter (25):" in lines
    report = json.loads(CliRunner().invoke(cli, ["okf", "lint", str(tmp_path / "big.db"), "--format", "json"]).output)
    by_name = {c["name"]: c for c in report["checks"]}
    assert by_name["missing_type"]["count"] == 25
    assert by_name["missing_type"]["folders"] == {"big/People": 15, "big/Places": 10}
    assert by_name["predicate_drift"]["folders"] is None


def _chart(database, name: str) -> tuple[list[str], list[tuple]]:
    [chart] = [c for c in charts() if c.name == f"chart_{name}"]
    cursor = connection(database).execute(chart.sql)
    return [c[0] for c in cursor.description], cursor.fetchall()


def test_the_type_chart_counts_inferred_types_apart(built):
    assert _chart(built["vault"][0], "concepts_by_type") == (["type", "type_source", "concepts"], [
        ("Person", "folder", 3), ("Place", "folder", 3), ("Session Log", "folder", 3), ("Organization", "folder", 2),
        ("Note", "folder", 1)])
    _, rows = _chart(built["campaign"][0], "concepts_by_type")
    assert {source for _, source, _ in rows} == {"frontmatter", "log"} and ("Person", "frontmatter", 10) in rows


def test_the_timeline_charts_log_md_else_dated_notes_and_relations(built, tmp_path):
    assert _chart(built["vault"][0], "log_timeline") == (  # no log.md: the notes' frontmatter `date`
        ["date", "source", "entries"], [("2026-03-14", "date", 1), ("2026-03-28", "date", 1)])
    _, rows = _chart(built["campaign"][0], "log_timeline")  # a log.md: its entries only, not session_date
    assert {source for _, source, _ in rows} == {"log.md"} and sum(n for *_, n in rows) == 11
    build([EXAMPLES, VAULT], tmp_path / "both.db", embed=False)  # each bundle on its own terms
    _, both = _chart(tmp_path / "both.db", "log_timeline")
    assert both == sorted(rows + [("2026-03-14", "date", 1), ("2026-03-28", "date", 1)])
    dated = write_bundle(tmp_path / "dated", {
        "a.md": '---\ntype: Person\nrelations:\n  - {predicate: employs, object: /b.md, date: "1346-11-20"}\n---\nA.\n',
        "b.md": "---\ntype: Person\n---\nB.\n"})
    build([dated], tmp_path / "dated.db", embed=False)
    assert _chart(tmp_path / "dated.db", "log_timeline")[1] == [("1346-11-20", "relation date", 1)]
