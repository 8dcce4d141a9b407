"""Filing an answer back: a new Concept page our own lint passes, listed and logged, retrievable at once."""

from __future__ import annotations

import shutil
from datetime import datetime, timedelta, timezone

import pytest
import yaml

from datasette_okf import context_for
from datasette_okf.fileback import FileBackError, file_back
from datasette_okf.lint import run_lint
from datasette_okf.retrieve import connection
from datasette_okf.store import build

from .conftest import EXAMPLES

QUESTION = "Why does the Sable Accord pay Teodor Vask?"
ANSWER = ("The Sable Accord pays Teodor Vask for the clockwork locks he builds for their vaults "
          "[campaign/people/teodor-vask] [campaign/organisations/sable-accord]. Nobody else knows [not/a-note].")
NOW = datetime(2026, 11, 29, 21, 30, tzinfo=timezone(timedelta(hours=1)))


@pytest.fixture
def campaign(tmp_path):
    bundle = tmp_path / "campaign"
    shutil.copytree(EXAMPLES, bundle)
    db = tmp_path / "campaign.db"
    build([bundle], db, embed=False)
    return bundle, db


def test_the_page_has_the_concept_shape_and_links_every_cited_note(campaign):
    bundle, db = campaign
    ids = ["campaign/people/teodor-vask", "campaign/organisations/sable-accord", "not/a-note"]
    page = file_back(db, bundle, QUESTION, ANSWER, "okf-test-scripted", ids, now=NOW)
    assert page == bundle / "syntheses" / "why-does-the-sable-accord-pay-teodor-vask.md"
    text = page.read_text()
    frontmatter = yaml.safe_load(text.split("---\n")[1])
    assert frontmatter["type"] == "Concept" and frontmatter["title"] == "Why does the Sable Accord pay Teodor Vask"
    assert frontmatter["generated"] == {"by": "okf-test-scripted", "at": "2026-11-29T21:30:00+01:00"}
    assert "verified" not in frontmatter
    assert [s["resource"] for s in frontmatter["sources"]] == ["/people/teodor-vask.md", "/organisations/sable-accord.md"]
    assert frontmatter["description"].startswith("The Sable Accord pays Teodor Vask for the clockwork locks")
    assert "[Teodor Vask](/people/teodor-vask.md)" in text and "[not/a-note]" in text  # unknown ids left as written


def test_it_is_listed_logged_newest_first_and_passes_our_lint(campaign):
    bundle, db = campaign
    page = file_back(db, bundle, QUESTION, ANSWER, "okf-test-scripted",
                     ["campaign/people/teodor-vask", "campaign/organisations/sable-accord"], now=NOW)
    assert "* [Why does the Sable Accord pay Teodor Vask](why-does-the-sable-accord-pay-teodor-vask.md)" in (
        bundle / "syntheses" / "index.md").read_text()
    log = (bundle / "log.md").read_text()
    first_heading = next(line for line in log.splitlines() if line.startswith("## "))
    assert first_heading == "## 2026-11-29" and "Filed back [Why does the Sable Accord pay Teodor Vask]" in log
    conn = connection(str(db))
    page_id = "campaign/syntheses/why-does-the-sable-accord-pay-teodor-vask"
    assert conn.execute("select type from concepts where id = ?", [page_id]).fetchone()[0] == "Concept"
    findings = {r["name"]: r["rows"] for r in run_lint(conn)}
    assert not [name for name, rows in findings.items() if any(page_id in map(str, row) for row in rows)]
    assert findings["log_out_of_order"] == []
    assert page.exists()


def test_the_same_question_then_finds_the_page(campaign):
    bundle, db = campaign
    file_back(db, bundle, QUESTION, ANSWER, "okf-test-scripted", ["campaign/people/teodor-vask"], now=NOW)
    result = context_for(db, QUESTION)
    assert result["confident"]
    assert result["nodes"][0]["id"] == "campaign/syntheses/why-does-the-sable-accord-pay-teodor-vask"


def test_an_existing_page_is_never_overwritten(campaign):
    bundle, db = campaign
    page = file_back(db, bundle, QUESTION, ANSWER, "m", [], now=NOW)
    before, log = page.read_bytes(), (bundle / "log.md").read_bytes()
    with pytest.raises(FileBackError, match="refusing to overwrite"):
        file_back(db, bundle, QUESTION + "  ", "a different answer", "m", [], now=NOW)
    assert page.read_bytes() == before and (bundle / "log.md").read_bytes() == log


@pytest.mark.parametrize("title, name", [
    ("../../etc/passwd", "etc-passwd.md"),
    ("index", "index-answer.md"),
    ("Log", "log-answer.md"),
    ("???", "answer.md"),
    ("Ünïcödé & spaces / slashes", "ünïcödé-spaces-slashes.md"),
])
def test_file_names_are_slugged_safely(campaign, title, name):
    bundle, db = campaign
    page = file_back(db, bundle, "q", "An answer long enough to be a description.", "m", [], title=title,
                     now=NOW, rebuild=False)
    assert page == bundle / "syntheses" / name


def test_the_bundle_must_be_one_the_database_was_built_from(campaign, tmp_path):
    _, db = campaign
    other = tmp_path / "elsewhere"
    other.mkdir()
    with pytest.raises(FileBackError, match="not built from a bundle named 'elsewhere'"):
        file_back(db, other, QUESTION, ANSWER, "m", [])
    assert not (other / "syntheses").exists()


def test_filing_back_refreshes_the_derived_files_it_finds(campaign):
    from datasette_okf.derived import write_derived

    bundle, db = campaign
    write_derived(db, ["campaign"])  # the user opted in to in-bundle copies once
    file_back(db, bundle, "Who keeps the Old Lighthouse lit?", "The Lantern Keepers do "
              "[campaign/organisations/lantern-keepers].", "m", ["campaign/organisations/lantern-keepers"], now=NOW)
    for keywords in (bundle / "wiki-trigger-keywords.txt", db.with_name("campaign.wiki-trigger-keywords.txt")):
        assert "Who keeps the Old Lighthouse lit" in keywords.read_text().splitlines()
    description = yaml.safe_load(
        (bundle / "syntheses" / "who-keeps-the-old-lighthouse-lit.md").read_text().split("---\n")[1])["description"]
    assert description == "The Lantern Keepers do."
