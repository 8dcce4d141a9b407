"""What is made from one build of a file is made once for every connection of the process, and made again after
the next build: Datasette reads from several threads, each with its own connection."""

from __future__ import annotations

import json

from datasette_okf.per_build import PerBuild
from datasette_okf.retrieve import connection
from datasette_okf.sqlfunctions import TITLE_INDEXES
from datasette_okf.store import build

from .conftest import write_bundle


def _names(conn, text: str) -> list[str]:
    return [row["id"] for row in json.loads(conn.execute("select okf_title_names(?)", [text]).fetchone()[0])]


def test_connections_to_one_build_share_its_title_index_and_a_rebuild_makes_a_new_one(tmp_path):
    """At 100k notes a title index is 70 MB and 1.3 s to make: one per reading thread took Datasette's peak RSS to
    the edge of its 500 MB target. An open connection still sees the next build's titles."""
    bundle = write_bundle(tmp_path / "b", {"Maren Holt.md": "# Maren Holt\nCaptain of the Gull.\n"})
    db = tmp_path / "b.db"
    build([bundle], db, embed=False)
    first, second = connection(str(db)), connection(str(db))
    assert _names(first, "Where is Maren Holt?") == _names(second, "Who is Maren Holt?") == ["b/Maren Holt"]
    assert [build for build in TITLE_INDEXES.made if build[0] == str(db)] != []  # what okf_title_names read
    assert TITLE_INDEXES.get(first) is TITLE_INDEXES.get(second)
    before = TITLE_INDEXES.get(first)
    (bundle / "Port Vell.md").write_text("# Port Vell\nA fishing town.\n")
    build([bundle], db, embed=False)
    assert _names(second, "Is Maren Holt in Port Vell?") == ["b/Maren Holt", "b/Port Vell"]
    assert TITLE_INDEXES.get(first) is TITLE_INDEXES.get(second) is not before


def test_what_was_made_while_a_build_committed_is_not_shared(tmp_path):
    """Made from a read that a build overtook, it may hold either state: the caller gets it, no other connection."""
    states = iter([("f", "1"), ("f", "2"), ("f", "2"), ("f", "2"), ("f", "2")])
    made: list[str] = []
    cache = PerBuild(lambda conn: next(states), lambda conn: made.append("made") or len(made))
    assert cache.get(None) == 1  # the state changed while making: not kept
    assert cache.get(None) == 2 and cache.get(None) == 2 and len(made) == 2  # kept from the second on
