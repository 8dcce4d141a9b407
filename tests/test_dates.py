"""A date the question writes names the notes dated then (dates.py, docs/design.md §2.9)."""

from __future__ import annotations

import json

import pytest

from datasette_okf.dates import (
    DATED_MOST,
    Calendar,
    date_fields,
    dated_notes,
    is_date_field,
    learn_calendar,
    named_dates,
    notes_dated,
    parse_date,
)
from datasette_okf.retrieve import connection, context_for

from .conftest import write_bundle

FANTASY = ["01 Dawnmarch 212 PR", "20 Emberwake -12 PR", "04 Sunreach 1 PR"]


def test_the_calendar_is_read_from_the_bundles_own_dates():
    """Month words stand between two numbers in a date; an era ends three dates or more. English months are known."""
    calendar = learn_calendar(FANTASY + ["2024-03-05"])
    assert {"dawnmarch", "emberwake", "sunreach"} <= set(calendar.months) and calendar.months["march"] == 3
    assert calendar.eras == {"pr"}
    assert learn_calendar(FANTASY[:2]).eras == set()  # two dates are not yet a calendar's habit


def test_a_date_field_is_read_in_the_forms_vaults_write():
    calendar = learn_calendar(FANTASY)
    assert parse_date("01 Emberwake -12 PR", calendar) == (-12, "emberwake", 1)
    assert parse_date("-0012.04.01 PR", calendar) == (-12, 4, 1)
    assert parse_date("2024-03-05", calendar) == (2024, 3, 5)
    assert parse_date("March 5, 2024", calendar) == (2024, 3, 5)  # a day, then the year
    assert parse_date("Dawnmarch 212", calendar) == (212, "dawnmarch", None)
    assert parse_date("[[-12]]", calendar) == parse_date("[[Years/-12|-12]]", calendar) == (-12, None, None)
    assert parse_date("09 Dawnmarch", calendar) is None  # no year: no date to index
    assert parse_date("soon", calendar) is None


def test_only_fields_that_say_when_it_happened_are_dates():
    fields = date_fields({"startdate": "01 Dawnmarch 212 PR", "yearofoccurrence": ["[[212]]"], "created": "2025-01-01",
                          "lastrecapdate": "2025-02-02", "updated": "2025-03-03", "location": "Boba",
                          "in_game_start": "04 Dawnmarch 212 PR 10:00", "level": "5"})
    assert fields == [("startdate", "01 Dawnmarch 212 PR"), ("yearofoccurrence", "[[212]]"),
                      ("in_game_start", "04 Dawnmarch 212 PR 10:00")]


def test_a_field_is_a_date_by_its_key_or_by_how_its_value_is_written_never_bookkeeping():
    """Thellade dates its factions `founded: 24 Stardrift 93 PR` and its sessions `in_game_start: 04 Dawnmarch 212PR
    09:23`: neither key says date, their values do. A level or a count is no date, and when the file was written
    or checked says nothing of when what it tells happened."""
    assert is_date_field("founded", "24 Stardrift 93 PR") and is_date_field("in_game_start", "04 Dawnmarch 212PR 09:23")
    assert is_date_field("first_seen", "2026-03-14") and is_date_field("signed", "March 5, 2024")
    assert is_date_field("startdate", "-1 PR") and is_date_field("yearnumeric", "212")  # the key says so
    assert not is_date_field("level", "5") and not is_date_field("location", "Boba")
    assert not is_date_field("enddate", "") and not is_date_field("startdate", "TBD")
    assert not is_date_field("updated", "2025-03-03") and not is_date_field("lastrecapdate", "01 Dawnmarch 212 PR")


def test_a_question_names_a_date_with_the_calendars_era_or_month_never_a_bare_number():
    calendar = learn_calendar(FANTASY)
    assert named_dates("From the rifts in -62 PR through -12 PR to -1 PR?", calendar) == [
        (-62, None, None), (-12, None, None), (-1, None, None)]
    assert named_dates("What did Group 4 do in session 10 at level 8?", calendar) == []
    assert named_dates("What happened in early Dawnmarch 212?", calendar) == [(212, "dawnmarch", None)]
    # a day without its year takes the year said beside it
    assert named_dates("Between 03 Dawnmarch 212 PR and 09 Dawnmarch?", calendar) == [
        (212, "dawnmarch", 3), (212, "dawnmarch", 9)]
    assert named_dates("By 8 Dawnmarch?", calendar) == []
    assert named_dates("The meeting on 2024-03-05, and what changed in 1994?", Calendar()) == [
        (2024, 3, 5), (1994, None, None)]


def _index(notes: dict[str, dict]) -> object:
    return dated_notes((note, json.dumps(frontmatter), note) for note, frontmatter in notes.items())


def test_a_date_names_the_few_notes_that_meet_it_most_closely():
    """A year of many events is a category, not a name (DATED_MOST); the day among them is a name. A festival held
    every year is no one year's event, and a note dated only by its year does not meet a day the question names."""
    events = {f"event {n}": {"startdate": f"{n + 1:02d} Dawnmarch 212 PR"} for n in range(DATED_MOST + 1)}
    index = _index({**events,
                    "incursions": {"startdate": "01 Emberwake -12 PR", "yearnumeric": -12},
                    "festival": {"yearofoccurrence": ["[[-62]]", "[[-12]]", "[[-1]]", "[[212]]"]},
                    "bloom": {"yearofoccurrence": "[[213]]"},
                    "pact": {"startdate": "15 Sunreach -31 PR"}})
    assert notes_dated("What happened in 212 PR?", index) == []  # DATED_MOST + 1 events
    assert notes_dated("What happened on 02 Dawnmarch 212 PR?", index) == [("event 1", 3)]
    assert notes_dated("How did things go from -12 PR on?", index) == [("incursions", 1)]  # not the festival
    assert notes_dated("What happened on 03 Emberwake -31 PR?", index) == []  # the pact was in Sunreach
    assert notes_dated("And on 05 Dawnmarch 213 PR?", index) == []  # bloom says only its year
    assert [note for note, _ in notes_dated("From 02 Dawnmarch 212 PR to -12 PR", index)] == ["event 1", "incursions"]


def test_a_field_dated_only_by_how_it_is_written_names_its_notes_by_the_day():
    """Thellade's sessions keep their in-game day only in `in_game_start: 04 Dawnmarch 212 PR 10:00`, and "Group 3 had
    two sessions on the same in-game day, 04 Dawnmarch 212 PR…" (Thellade-check10's thl26) found neither. Each date
    field now names its notes on its own: two events by `startdate` and three sessions by `in_game_start` that day,
    not five notes of one kind, over DATED_MOST. A field dated only by its value's shape names them by the day alone
    (a month of sessions is a stretch of the campaign), and its times teach the calendar nothing ("212 PR 10:00"
    would make the era a month word)."""
    events = {f"event {n}": {"startdate": f"{n:02d} Dawnmarch 212 PR"} for n in (1, 4)}
    sessions = {f"session {n}": {"in_game_start": f"04 Dawnmarch 212 PR {hour}:00"} for n, hour in ((9, 9), (10, 13))}
    others = {"session 16": {"in_game_start": "04 Dawnmarch 212 PR 10:00"}, "pact": {"startdate": "15 Sunreach -31 PR"}}
    index = _index({**events, **sessions, **others})
    assert index.calendar.eras == {"pr"} and "pr" not in index.calendar.months
    day = {note for note, _ in notes_dated("What happened on 04 Dawnmarch 212 PR?", index)}
    assert day == {"event 4", "session 9", "session 10", "session 16"}
    assert {note for note, _ in notes_dated("What happened in Dawnmarch 212 PR?", index)} == set(events)
    crowded = _index({**events, **sessions, **others, "session 17": {"in_game_start": "04 Dawnmarch 212 PR 18:00"}})
    assert [note for note, _ in notes_dated("What happened on 04 Dawnmarch 212 PR?", crowded)] == ["event 4"]


def test_of_notes_dated_alike_those_of_a_category_the_question_names_come_first(tmp_path):
    """"Group 3 had two sessions on the same in-game day, 04 Dawnmarch 212 PR…" (Thellade-check10's thl26): that day
    dates Group 3's sessions 9 and 10 and Group 4's sixth, and Group 4's ranked above Group 3's tenth. Notes dated
    alike now come in the order of how many categories the question names they are of (the tag Group3), then of
    their ids (without vectors)."""
    from datasette_okf.store import build

    def session(group: int, number: int, start: str) -> str:
        return f"---\ntags: [Group{group}]\nin_game_start: {start}\n---\nThe party of group {group} met.\n"

    files = {"Sessions/A - Group 4 session 6.md": session(4, 6, "04 Dawnmarch 212 PR 10:00"),
             "Sessions/B - Group 3 session 9.md": session(3, 9, "04 Dawnmarch 212 PR 09:23"),
             "Sessions/C - Group 3 session 10.md": session(3, 10, "04 Dawnmarch 212 PR 13:46")}
    files.update({f"Events/Event {n}.md": f"---\nstartdate: 0{n} Dawnmarch 212 PR\n---\nSomething.\n" for n in (1, 2, 3)})
    build([write_bundle(tmp_path / "vault", files)], tmp_path / "v.db", embed=False)
    result = context_for(tmp_path / "v.db", "What did Group 3 go through on 04 Dawnmarch 212 PR?")
    cursor = connection(tmp_path / "v.db").execute(result["sql"]["seeds"], result["params"]["seeds"])
    rows = [dict(zip([column[0] for column in cursor.description], row)) for row in cursor]
    dated = sorted((row["dated_rank"], row["id"].rsplit("/", 1)[1]) for row in rows if row["dated_rank"])
    assert [name for _, name in dated] == ["B - Group 3 session 9", "C - Group 3 session 10", "A - Group 4 session 6"]


def test_a_question_that_names_years_finds_the_events_dated_then_which_it_never_names(tmp_path):
    """The Rising's three events answer "how did it escalate, from -62 PR through -12 PR to -1 PR?"; no title and
    no word of theirs is in the question. They come as seeds from the `dated` list, whose statement the response
    shows and reruns; a question without a number runs it on nothing."""
    from datasette_okf.store import build

    notes = {"First Rifts": ("Tears in the sky over the isles.", "01 Harvestshade -62 PR"),
             "Deep Incursions": ("Daemons spread beneath the mountains.", "01 Emberwake -12 PR"),
             "Grand Ward": ("The wardens seal the last gate.", "01 Dawnmarch -1 PR"),
             "Harbour Fair": ("Merchants meet at the quay.", "05 Sunreach 212 PR")}
    files = {f"events/{title}.md": f"---\ntype: Event\nstartdate: {date}\n---\n{text}\n"
             for title, (text, date) in notes.items()}
    files["lore/The Rising.md"] = "---\ntype: Era\n---\nThe Rising was an age of daemons and escalation.\n"
    root = write_bundle(tmp_path / "world", files)
    build([root], tmp_path / "w.db", embed=False)
    question = "How did the Rising escalate, from -62 PR, through -12 PR, to the end in -1 PR?"
    result = context_for(tmp_path / "w.db", question)
    seeds = {node["title"]: node for node in result["nodes"] if node["why"]["kind"] == "seed"}
    assert {"First Rifts", "Deep Incursions", "Grand Ward"} <= set(seeds) and "Harbour Fair" not in seeds
    assert seeds["Deep Incursions"]["why"]["ranks"]["dated"] and "dated" in seeds["Deep Incursions"]["via"]
    rows = connection(tmp_path / "w.db").execute(result["sql"]["seeds"], result["params"]["seeds"]).fetchall()
    assert {"world/events/First Rifts", "world/events/Grand Ward"} <= {row[0] for row in rows}
    undated = context_for(tmp_path / "w.db", "How did the Rising escalate?")
    assert not any(node["why"].get("ranks", {}).get("dated") for node in undated["nodes"])


def test_a_question_that_names_a_date_a_note_is_dated_at_is_answered_in_every_mode(campaign_db):
    """ "What happened on 13 March 1347?" shares no word with Session 3, whose `in_world_date` is 1347-03-13, and its
    nearest chunk is far from it: the gate refused it. A date notes are dated at is evidence, as a title is, in every
    mode; hybrid's dated list puts the session first."""
    for question in ("What happened on 13 March 1347?", "What did we play on 2026-04-11?"):
        for mode in ("hybrid", "vector", "keyword"):
            result = context_for(campaign_db, question, mode=mode)
            assert result["confident"] and result["reason"] == "the question names a date notes are dated at", mode
        assert context_for(campaign_db, question)["nodes"][0]["id"] == "campaign/sessions/session-03"
    assert not context_for(campaign_db, "What happened on 13 March 1512?")["confident"]  # no note is dated then


def test_a_daily_note_is_dated_by_its_name(tmp_path):
    """An Obsidian daily note is named by its date and says it nowhere else; a name of numbers never matches by title
    (docs/design.md §2.1). Its name dates it: "What did I write on 2024-03-05?" and "…on March 5, 2024?" find it."""
    from datasette_okf.store import build

    days = {"2024-03-04": "Groceries and a walk.", "2024-03-05": "Met Ana about the roof; the quote is too high.",
            "2024-03-06": "Rain all day.", "2024-03-05 Standup": "Sprint review moved to Friday."}
    root = write_bundle(tmp_path / "journal", {f"Daily/{name}.md": f"{text}\n" for name, text in days.items()})
    build([root], tmp_path / "j.db", embed=False)
    for question in ("What did I write on 2024-03-05?", "What happened on March 5, 2024?"):
        result = context_for(tmp_path / "j.db", question)
        assert result["confident"], question
        assert {n["title"] for n in result["nodes"][:2]} == {"2024-03-05", "2024-03-05 Standup"}, question
        assert all(n["why"]["ranks"]["dated"] for n in result["nodes"][:2])


def test_a_question_that_asks_when_gets_the_dates_of_every_note_offered(campaign_db):
    """A note's dates sit in its frontmatter, and the context showed fields only for the note the question is most
    about, so "which came first?" had the notes and not their dates (Thellade-check7's thi26: three factions'
    `founded`, all three notes in the context, one date shown). A question that asks when now gets each offered
    note's date fields as fact lines, counted in that note's budget; others do not pay for them."""
    when = context_for(campaign_db, "When did the party strike its bargain with the brine hag, in the world's calendar?")
    assert when["intent"] == "WHEN"
    assert "campaign/sessions/session-05" in [n["id"] for n in when["nodes"]]
    assert "- Session 5 - Kestrel Point in_world_date 1347-03-18 (trust: machine-confirmed)" in when["context"]
    facts = [f for f in when["facts"] if f["subject_id"] == "campaign/sessions/session-05"]
    assert {f["predicate"] for f in facts} == {"in_world_date", "session_date"}  # not session_number, not generated
    other = context_for(campaign_db, "What did the party give the brine hag for mending the lens?")
    assert "campaign/sessions/session-05" in [n["id"] for n in other["nodes"]]
    assert "in_world_date" not in other["context"]


@pytest.mark.parametrize("question", [
    "Which happened earlier in the world's calendar, the bargain with the brine hag or the fire at the Salted Eel?",
    "How many days passed between the bargain with the brine hag and the fire at the Salted Eel?",
])
def test_a_question_that_compares_times_gets_the_dates_of_every_note_offered(campaign_db, question):
    """Thellade-check7's thi31, written blind: "Which starts earlier that day, …?" had both sessions in its context
    and neither's `in_game_start`: it says no "when" (its intent is HISTORICAL, for "earlier", or GENERAL). A
    question that compares or measures times gets the dates as a WHEN question does, and keeps its intent."""
    from datasette_okf.retrieve import asks_dates, classify_intent

    assert classify_intent(question) != "WHEN" and asks_dates(question, classify_intent(question))
    result = context_for(campaign_db, question)
    assert "campaign/sessions/session-05" in [n["id"] for n in result["nodes"]]
    assert "- Session 5 - Kestrel Point in_world_date 1347-03-18 (trust: machine-confirmed)" in result["context"]
    assert "- Session 3 - Smoke over the Stacks in_world_date 1347-03-13 (trust: machine-confirmed)" in result["context"]


@pytest.mark.parametrize("question, asks", [
    ("Which is older, the Kingdom of Kanda or the Dawnbringers of Lunara?", True),
    ("Group 6's session 8 and Group 1's session 8: which begins first in the game calendar?", True),
    ("How much in-game time passed before their eighth session began?", True),
    ("Which faction was founded first?", True),
    ("What did the party give the brine hag for mending the lens?", False),
    ("Who leads the Lumina Guardians, and where is their fortress?", False),
])
def test_which_questions_compare_times(question, asks):
    from datasette_okf.retrieve import asks_dates, classify_intent

    assert asks_dates(question, classify_intent(question)) is asks
