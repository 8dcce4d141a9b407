"""Every lint check is one SQL file; a fixture bundle trips each exactly once."""

import json

import pytest
from click.testing import CliRunner
from datasette.cli import cli

from datasette_okf.lint import charts, checks, run_lint
from datasette_okf.retrieve import connection
from datasette_okf.store import build

from .conftest import HERE

CHECKS = [c.name.removeprefix("lint_") for c in checks()]


@pytest.fixture(scope="module")
def lint_db(tmp_path_factory):
    path = tmp_path_factory.mktemp("lint") / "lint.db"
    build([HERE / "fixtures" / "lint"], path, embed=False)
    return path


def test_the_required_checks_exist_with_titles_descriptions_and_levels():
    assert set(CHECKS) >= {
        "missing_type", "dead_links", "ambiguous_links", "missing_headings", "orphans", "broken_relation_targets",
        "stale_concepts", "predicate_drift", "contradictions", "asymmetric_relations", "dangling_supersession",
        "asymmetric_supersession", "supersession_cycles", "unreviewed_references", "duplicate_titles",
        "log_out_of_order",
    }
    for check in checks():
        assert check.title and check.description and check.level in ("error", "warning"), check.name
    assert {c.name for c in charts()} == {"chart_concepts_by_type", "chart_edges_by_kind", "chart_log_timeline"}


@pytest.mark.parametrize("name", CHECKS)
def test_each_check_trips_exactly_once_on_its_fixture(lint_db, name):
    [result] = [r for r in run_lint(connection(lint_db)) if r["name"] == name]
    assert len(result["rows"]) == 1, result["rows"]


def test_expected_culprits(lint_db):
    results = {r["name"]: r["rows"][0] for r in run_lint(connection(lint_db))}
    assert results["orphans"][0] == "lint/orphan"
    assert results["missing_type"][0] == "lint/t"
    assert results["supersession_cycles"] == ["lint/m", "lint/m -> lint/n -> lint/m"]
    assert results["predicate_drift"][1] == "invested-in, invested_in"
    assert results["contradictions"][1:] == ["born_on", "1321", "s1", "1322", "s2"]
    assert results["missing_headings"][:3] == ["lint/a", "lint/b", "no-such-heading"]


def test_multi_valued_predicates_are_configurable(lint_db):
    exempt = [r for r in run_lint(connection(lint_db), multi_valued=["born_on"]) if r["name"] == "contradictions"]
    assert exempt[0]["rows"] == []


def test_cli_exits_1_on_error_level_hits(lint_db, campaign_db):
    runner = CliRunner()
    result = runner.invoke(cli, ["okf", "lint", str(lint_db)])
    assert result.exit_code == 1
    assert "ERR  Supersession cycles: 1" in result.output
    result = runner.invoke(cli, ["okf", "lint", str(campaign_db), "--format", "json"])
    assert result.exit_code == 0, result.output  # the example has warnings only
    by_name = {r["name"]: r for r in json.loads(result.output)}
    assert len(by_name["dead_links"]["rows"]) == 1 and len(by_name["ambiguous_links"]["rows"]) == 1
