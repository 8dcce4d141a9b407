"""notes.py: what every surface that reads one note (the llm toolbox, the MCP tools) shares."""

import sqlite3

import pytest

from datasette_okf import notes

IDS = ["campaign/people/teodor-vask", "campaign/people/mira-vell", "campaign/notes/100%_done", "campaign/notes/c\\d"]


@pytest.fixture
def conn():
    conn = sqlite3.connect(":memory:")
    conn.execute("create table concepts (id text primary key)")
    conn.executemany("insert into concepts values (?)", [[i] for i in IDS])
    return conn


@pytest.mark.parametrize("concept_id", [*IDS, "é/ü", "x" * 4096])
def test_check_id_accepts_any_id_a_note_can_have(concept_id):
    assert notes.check_id(concept_id) == concept_id


@pytest.mark.parametrize("concept_id, message", [
    ("x" * 60_000, ("id is 60,000 characters; concept ids are at most 4,096 characters, "
                   "as context_for returns them, e.g. campaign/people/mira-vell")),
    ("mira\0vell", ("id contains a NUL character, which no concept id has; "
                   "pass one as context_for returns them, e.g. campaign/people/mira-vell")),
    ("", "id is empty; pass a concept id as context_for returns them, e.g. campaign/people/mira-vell"),
    (" \n", "id is empty; pass a concept id as context_for returns them, e.g. campaign/people/mira-vell"),
])
def test_check_id_says_what_to_pass_instead(concept_id, message):
    with pytest.raises(notes.BadConceptId) as raised:
        notes.check_id(concept_id)
    assert str(raised.value) == message


def test_similar_ids_share_the_last_part_of_the_id(conn):
    assert notes.similar_ids(conn, "teodor") == ["campaign/people/teodor-vask"]
    assert notes.similar_ids(conn, "campaign/places/VELL/") == ["campaign/people/mira-vell"]


@pytest.mark.parametrize("text, like", [
    ("%", ["campaign/notes/100%_done"]),  # literally: LIKE would take % and _ for wildcards and suggest every id
    ("_", ["campaign/notes/100%_done"]),
    ("\\", ["campaign/notes/c\\d"]),
    ("x" * 60_000, []),  # LIKE refuses patterns over 50,000 bytes ("LIKE or GLOB pattern too complex")
    ("mira\0vell", []),
    ("", []),
    ("/", []),
])
def test_similar_ids_is_safe_for_any_text(conn, text, like):
    assert notes.similar_ids(conn, text) == like
