"""One question across several databases (across.py): fused by rank, one budget, each note naming its database."""

import asyncio
import shutil

import pytest
from click.testing import CliRunner
from datasette.app import Datasette
from datasette.cli import cli

from datasette_okf.across import fuse, labelled
from datasette_okf.render import context_text, estimate_tokens
from datasette_okf.retrieve import MAX_NOTES, NOTES_SHARE
from datasette_okf.store import build

from .conftest import VAULT


def answer(names, confident=True, reason="titled", more=0):
    """A database's answer and its blocks: each note as chosen, then `more` chunks its last quarter added."""
    nodes = [{"id": n, "title": n.upper(), "score": 1.0 / (i + 1)} for i, n in enumerate(names)]
    facts = [{"subject_id": names[0], "text": f"{names[0]} knows things"}] if names else []
    return ({"confident": confident, "reason": reason, "vectors": "used", "intent": "WHO", "seeds": [],
             "nodes": nodes, "facts": facts, "timings_ms": {"total": 1.0}},
            [[f"### {n.upper()} ({n})\nwhy: seed\n" + "word " * 40] + [f"#### {n} more {m}\n" + "more " * 40
                                                                       for m in range(more)] for n in names])


def test_first_notes_of_every_database_come_before_any_second_note():
    fused = fuse("q", [("a", *answer(["a1", "a2"])), ("b", *answer(["b1", "b2"]))], budget=2000)
    assert [(n["db"], n["id"]) for n in fused["nodes"]] == [("a", "a1"), ("b", "b1"), ("a", "a2"), ("b", "b2")]
    assert "### A1 (a1) [db: a]" in fused["context"] and "### B1 (b1) [db: b]" in fused["context"]
    assert {f["db"] for f in fused["facts"]} == {"a", "b"}


def test_a_fact_comes_with_the_note_it_counts_in():
    """A link to a template ("Varis whichparty Campaign Group 6") is about the template, not its subject: it counts in,
    and comes with, the template's note (`with_id`); an answer without `with_id` (an older server) by its subject."""
    a, blocks = answer(["party", "varis-page"])
    a["facts"] = [{"subject_id": "varis", "with_id": "party", "text": "- Varis whichparty Party"}]
    fused = fuse("q", [("a", a, blocks)], budget=2000)
    assert [f["text"] for f in fused["facts"]] == ["- Varis whichparty Party"]
    b, blocks = answer(["party"])
    assert fuse("q", [("b", b, blocks)], budget=2000)["facts"][0]["subject_id"] == "party"


def test_one_budget_is_shared_and_unconfident_databases_add_nothing():
    a = answer(["a1", "a2"])
    first = estimate_tokens(labelled(a[1][0][0], "a")) + estimate_tokens(a[0]["facts"][0]["text"]) + 1
    budget = int((estimate_tokens(context_text("q", ["-"], ["-"])) + first + 5) / NOTES_SHARE)  # the first note only
    fused = fuse("q", [("a", *a), ("b", *answer(["b1"], confident=False, reason="far"))], budget=budget)
    assert [n["id"] for n in fused["nodes"]] == ["a1"]  # the second note no longer fits
    assert fused["confident"] and fused["per_database"]["b"]["confident"] is False
    nothing = fuse("q", [("a", *answer(["a1"], confident=False, reason="far")),
                         ("b", *answer([], confident=False, reason="none"))], budget=2000)
    assert not nothing["confident"] and nothing["nodes"] == []
    assert "a: far" in nothing["reason"] and "b: none" in nothing["reason"]
    confident = fuse("q", [("a", *a), ("b", *answer(["b1"], confident=False, reason="far"))], budget=2000)
    assert confident["nearest"] == []  # confident: nothing to list instead


def test_a_refusal_across_databases_lists_each_databases_nearest_notes_naming_it():
    """Each database's `nearest` (its seeds, or the members of the series its question names), its own first; an
    answer without `nearest` (an older server) by its seeds."""
    a, blocks = answer([], confident=False, reason="far")
    a["nearest"] = [{"id": "s5", "title": "Session 5", "path": "s5.md", "why": "a member of the series"}]
    b, _ = answer([], confident=False, reason="none")
    b["seeds"] = [{"id": "b1", "title": "B1", "path": "b1.md", "ranks": {}}]
    fused = fuse("q", [("a", a, blocks), ("b", b, [])], budget=2000)
    assert [(n["db"], n["id"]) for n in fused["nearest"]] == [("a", "s5"), ("b", "b1")]


def test_the_first_note_that_does_not_fit_whole_comes_cut_as_in_one_database():
    from datasette_okf.render import CUT_MARK

    a = answer(["a1", "a2"])
    first = estimate_tokens(labelled(a[1][0][0], "a")) + estimate_tokens(a[0]["facts"][0]["text"]) + 1
    skeleton = estimate_tokens(context_text("q", ["-"], ["-"]))
    budget = int((skeleton + first + 50) / NOTES_SHARE)  # notes: the second note's lines and a few words
    fused = fuse("q", [("a", *a)], budget=budget)
    assert [(n["id"], n.get("cut", False)) for n in fused["nodes"]] == [("a1", False), ("a2", True)]
    assert fused["context"].endswith(CUT_MARK) and "### A2 (a2) [db: a]" in fused["context"]
    assert estimate_tokens(fused["context"]) <= budget


def test_the_last_quarter_takes_each_notes_added_chunks_in_turn_and_notes_stop_at_max_notes():
    """Each database's last quarter added chunks to its notes; fused, notes are chosen within three quarters of the
    one budget (as in one database), and the last quarter takes every note's first added chunk before any second."""
    fused = fuse("q", [("a", *answer(["a1", "a2"], more=2)), ("b", *answer(["b1"], more=2))], budget=320)
    assert [n["id"] for n in fused["nodes"]] == ["a1", "b1", "a2"]
    added = [line.split()[1:] for line in fused["context"].split("\n") if line.startswith("#### ")]
    assert added == [["a1", "more", "0"], ["b1", "more", "0"]]  # no note's second before every note's first
    assert estimate_tokens(fused["context"]) <= 320
    many = fuse("q", [("a", *answer([f"a{i}" for i in range(8)])), ("b", *answer([f"b{i}" for i in range(8)]))],
                budget=20000)
    assert len(many["nodes"]) == MAX_NOTES


@pytest.fixture
def databases(campaign_db, tmp_path):
    vault = tmp_path / "myvault.db"
    build([VAULT], vault)
    secret = tmp_path / "secret.db"
    shutil.copyfile(campaign_db, secret)
    return campaign_db, vault, secret


def get(ds, path, actor=None):
    async def go():
        cookies = {"ds_actor": ds.sign({"a": actor}, "actor")} if actor else {}
        return await ds.client.get(path, cookies=cookies)

    return asyncio.run(go())


def test_db_star_asks_every_database_the_actor_may_view(databases):
    campaign, vault, secret = databases
    ds = Datasette([str(campaign), str(vault), str(secret)],
                   metadata={"databases": {"secret": {"allow": {"id": "gm"}}}})
    tinker = get(ds, "/-/context_for.json?db=*&q=Who+does+the+Tinker+work+for%3F").json()
    assert tinker["databases"] == ["campaign", "myvault"]  # the private one is not asked
    assert "secret" not in tinker["per_database"]
    assert tinker["confident"] and tinker["nodes"][0] == {**tinker["nodes"][0], "db": "campaign",
                                                           "title": "Teodor Vask"}
    assert tinker["per_database"]["myvault"]["confident"] is False
    marrek = get(ds, "/-/context_for.json?db=*&q=Who+is+Marrek+Tindall%3F").json()
    assert (marrek["nodes"][0]["db"], marrek["nodes"][0]["title"]) == ("myvault", "Marrek Tindall")
    assert "[db: myvault]" in marrek["context"] and "[db: campaign]" in marrek["context"]  # its Marrek Sallow
    as_gm = get(ds, "/-/context_for.json?db=*&q=Who+does+the+Tinker+work+for%3F", actor={"id": "gm"}).json()
    assert as_gm["databases"] == ["campaign", "myvault", "secret"]
    assert {n["db"] for n in as_gm["nodes"]} >= {"campaign", "secret"}


def test_the_cli_asks_several_files(databases):
    campaign, vault, _ = databases
    result = CliRunner().invoke(cli, ["okf", "context", str(campaign), str(vault), "Who is Marrek Tindall?"])
    assert result.exit_code == 0, result.output
    assert "### Marrek Tindall (vault/People/Marrek Tindall) [db: myvault]" in result.output


def test_the_question_page_asks_all_databases(databases):
    campaign, vault, secret = databases
    ds = Datasette([str(campaign), str(vault), str(secret)],
                   metadata={"databases": {"secret": {"allow": {"id": "gm"}}}})
    form = get(ds, "/-/context_for").text
    assert '<option value="*"' in form
    page = get(ds, "/-/context_for?db=*&q=Who+is+Marrek+Tindall%3F")
    assert page.status_code == 200
    html = page.text
    assert 'href="/myvault/concepts/vault%2FPeople%2FMarrek%20Tindall">Marrek Tindall</a>' in html
    assert '<span class="okf-badge okf-db">myvault</span>' in html and "secret" not in html
    table = html[html.index('id="okf-per-database"'):html.index("</table>")]
    assert "<td>campaign</td>" in table and "<td>myvault</td>" in table
