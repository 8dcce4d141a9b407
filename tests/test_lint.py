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
from datasette_okf.store import build

from .conftest import EXAMPLES, HERE, VAULT

CHECKS = [c.name.removeprefix("lint_") for c in checks()]
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
