"""The shipped example bundle and the Obsidian vault fixture, built end to end."""

import json

import pytest
import sqlite_utils

from datasette_okf.schema import IS_LOG
from datasette_okf.store import build

from .conftest import VAULT


@pytest.fixture(scope="module")
def campaign(campaign_db):
    return sqlite_utils.Database(campaign_db)


@pytest.fixture(scope="module")
def vault(tmp_path_factory):
    db_path = tmp_path_factory.mktemp("db") / "vault.db"
    build([VAULT], db_path, embed=False)
    return sqlite_utils.Database(db_path)


def one(db, sql, params=()):
    return db.execute(sql, params).fetchone()[0]


def test_campaign_builds_clean_with_one_dead_and_one_ambiguous_link(campaign):
    assert one(campaign, f"select count(*) from concepts where not is_index and not {IS_LOG}") == 40
    assert one(campaign, "select type from concepts where path = 'log.md'") == "Log"  # the log, a note of its own
    assert one(campaign, "select count(*) from concepts where is_index") == 7
    assert one(campaign, "select count(*) from build_issues") == 0
    issues = campaign.execute("select file, line, target, problem, candidates from link_issues order by problem").fetchall()
    assert issues == [
        ("sessions/session-02.md", 18, "Marrek", "ambiguous",
         json.dumps(["people/marrek-the-elder.md", "people/marrek-the-younger.md"])),
        ("people/ilse-moor.md", 11, "/places/ashen-abbey.md", "dead", "[]"),
    ]


def test_campaign_links_code_anchors_and_files(campaign):
    anchored = campaign.execute(
        "select src, dst, anchor from edges where anchor is not null order by src"
    ).fetchall()
    assert ("campaign/sessions/session-02", "campaign/places/Old Lighthouse", "the-lamp-room") in anchored
    assert ("campaign/people/marrek-the-elder", "campaign/places/harbour", "the-drowned-steps") in anchored
    # the fenced example in house-rules links Nessa: that is not an edge
    assert one(campaign, "select count(*) from edges where src = 'campaign/references/house-rules' and dst = 'campaign/people/nessa-thorne'") == 0
    assert one(campaign, "select count(*) from edges where dst is null and object_literal = 'references/harbour-map.txt'") == 2
    folders = campaign.execute("select dst from edges where src = 'campaign/index' order by dst").fetchall()
    assert ("campaign/people/index",) in folders and ("campaign/monsters/index",) in folders
    assert one(campaign, "select count(*) from edges where src = 'campaign/sessions/session-03' and dst = 'campaign/organisations/sable-accord'") == 1


def test_campaign_relations_supersession_trust_and_lifecycle(campaign):
    assert one(campaign, "select count(*) from edges where kind = 'relation'") == 15
    assert campaign.execute(
        "select dst, date, source_id from edges where src = 'campaign/people/nessa-thorne' and predicate = 'member_of'"
    ).fetchall() == [("campaign/organisations/black-gulls", "1339-06-21", "s4")]
    assert one(campaign, "select object_literal from edges where predicate = 'born_on'") == "1321-05-02"
    assert one(campaign, "select dst from edges where predicate = 'maintains'") == "campaign/places/Old Lighthouse"
    chain = dict(campaign.execute("select id, superseded_by from concepts where id like '%harbour-charter%'").fetchall())
    assert chain == {
        "campaign/organisations/harbour-charter-v1": "campaign/organisations/harbour-charter-v2",
        "campaign/organisations/harbour-charter-v2": "campaign/organisations/harbour-charter-v3",
        "campaign/organisations/harbour-charter-v3": None,
    }
    tiers = dict(campaign.execute(f"select trust_tier, count(*) from concepts where not is_index and not {IS_LOG}"
                                  " group by 1").fetchall())
    assert tiers == {"human-reviewed": 8, "machine-confirmed": 5, "unverified": 27}
    assert one(campaign, "select stale_after from concepts where id = 'campaign/references/watch-rotation'") == "2026-01-01T00:00:00Z"
    assert one(campaign, "select status from concepts where id = 'campaign/people/orrin-kell'") == "deprecated"
    eel = json.loads(one(campaign, "select frontmatter from concepts where id = 'campaign/places/salted-eel'"))
    assert (eel["open"], eel["country"], eel["first_seen"]) == ("no", "NO", "2026-03-14")
    tide = campaign.execute("select generated_at, sources from concepts where id = 'campaign/references/tide-tables'").fetchone()
    assert tide[0] == "2026-05-28T22:53:05+00:00" and len(json.loads(tide[1])) >= 1


def test_campaign_log_entries(campaign):
    dates = [r[0] for r in campaign.execute("select distinct date from log_entries order by id")]
    assert len(dates) == 9 and dates == sorted(dates, reverse=True)


def test_vault_wikilinks_properties_and_embeds(vault):
    assert one(vault, "select count(*) from concepts") == 12  # .obsidian/ is ignored
    nessa = "vault/People/Nessa Thorne"
    assert vault.execute(
        "select predicate, dst from edges where src = ? and kind = 'property' order by predicate", [nessa]
    ).fetchall() == [("location", "vault/Places/Port Vell"), ("organization", "vault/Factions/Black Gulls")]
    # by alias, by shown text, by wrong case, by folder path, with an anchor
    assert one(vault, "select count(*) from edges where src = 'vault/Factions/Black Gulls' and dst = ?", [nessa]) == 1
    assert one(vault, "select dst from edges where src = 'vault/Factions/The Sable Accord' and dst like '%Port Vell'") == "vault/Places/Port Vell"
    session = vault.execute("select dst, kind, anchor from edges where src = 'vault/Sessions/Session 1' order by kind, dst").fetchall()
    assert ("vault/Places/Port Vell", "embed", None) in session
    assert ("vault/Places/Port Vell", "wikilink", "Districts") in session
    assert ("vault/People/Marrek Tindall", "wikilink", None) in session
    assert one(vault, "select count(*) from edges where src = 'vault/Scratchpad' and dst = 'vault/Places/Docks/Fish Market'") == 1
    problems = vault.execute("select target, kind, problem from link_issues order by target").fetchall()
    assert problems == [
        ("Captain Orlo", "wikilink", "dead"),
        ("Gullwrack Rookery", "property", "dead"),
        ("Marrek Tindall", "wikilink", "ambiguous"),
        ("harbour.png", "embed", "missing-file"),
        ("map.pdf", "wikilink", "missing-file"),
    ]


def test_vault_titles_come_from_file_names(vault):
    assert one(vault, "select title from concepts where id = 'vault/Places/Docks/Fish Market'") == "Fish Market"
    tags = json.loads(one(vault, "select tags from concepts where id = 'vault/People/Nessa Thorne'"))
    assert all(not t.startswith("#") for t in tags)
