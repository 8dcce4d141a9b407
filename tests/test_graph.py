"""The bounded, damped walk: both directions, hubs passed through, capped, ties by vector rank."""

import json

import pytest
import sqlite_utils

from datasette_okf.graph import WalkOptions, graph_expand
from datasette_okf.store import build

from .conftest import write_bundle

T = "---\ntype: T\n{extra}---\n{body}\n"


@pytest.fixture
def conn(tmp_path):
    root = write_bundle(
        tmp_path / "g",
        {
            "index.md": "* [a](a.md)\n* [b](b.md)\n* [c](c.md)\n* [far](far.md)\n",
            "a.md": T.format(extra="verified: {by: human:x}\n", body="[b](b.md)"),
            "b.md": T.format(extra="", body="[c](c.md)"),
            "c.md": T.format(extra="", body="end"),
            "visitor.md": T.format(extra="", body="Visited [a](a.md)."),
            "far.md": T.format(extra="", body="alone"),
            "old.md": T.format(extra="superseded_by: /a.md\n", body="[a](a.md)"),
            "twin1.md": T.format(extra="", body="[b](b.md)"),
            "twin2.md": T.format(extra="", body="[b](b.md)"),
        },
    )
    build([root], tmp_path / "g.db", embed=False)
    return sqlite_utils.Database(tmp_path / "g.db").conn


def ids(result):
    return [(r["id"].removeprefix("g/"), r["hop"]) for r in result]


def test_walks_both_directions_and_two_hops(conn):
    found = ids(graph_expand(conn, ["g/a"], WalkOptions()))
    assert ("b", 1) in found and ("visitor", 1) in found  # visitor links to a: walked backwards
    assert ("c", 2) in found


def test_a_typed_edge_is_the_one_a_note_says_it_came_by(tmp_path):
    """Bragan Holt's frontmatter says `organization: [[The Red Runners]]` and the faction's prose links back to him:
    The Red Runners came by `organization`, not by the plain link that weighs 0.01 more."""
    root = write_bundle(tmp_path / "v", {
        "Bragan Holt.md": "---\norganization: \"[[The Red Runners]]\"\n---\nA captain.\n",
        "The Red Runners.md": "A syndicate. Its captains include [[Bragan Holt]].\n",
    })
    build([root], tmp_path / "v.db", embed=False)
    conn = sqlite_utils.Database(tmp_path / "v.db").conn
    (reached,) = graph_expand(conn, ["v/Bragan Holt"], WalkOptions(hops=1, intent="ENTITY"))
    assert (reached["id"], reached["predicate"], reached["kind"]) == ("v/The Red Runners", "organization", "property")


def test_index_hubs_are_walked_through_but_not_returned(conn):
    found = ids(graph_expand(conn, ["g/a"], WalkOptions()))
    assert all(node != "index" for node, _ in found)
    assert ("far", 2) in found  # reachable only through the index


def test_hop_limit_and_cap(conn):
    assert all(hop == 1 for _, hop in ids(graph_expand(conn, ["g/a"], WalkOptions(hops=1))))
    assert len(graph_expand(conn, ["g/a"], WalkOptions(cap=2))) == 2


def test_superseded_nodes_are_down_weighted_not_dropped(conn):
    result = {r["id"]: r for r in graph_expand(conn, ["g/a"], WalkOptions(hops=1))}
    # old reaches a by a link (weight 1.0) and by superseded_by (0.5); degree 2, unverified (0.6)
    assert result["g/old"]["score"] == pytest.approx((1.0 + 0.5) * 0.6 * 0.6 * 0.15 / 2 ** 0.5)
    assert result["g/visitor"]["score"] == pytest.approx(1.0 * 0.6 * 0.6 / 1 ** 0.5)


def test_ties_break_on_vector_rank_then_id(conn):
    order = [r["id"] for r in graph_expand(conn, ["g/b"], WalkOptions(hops=1)) if r["id"].startswith("g/twin")]
    assert order == ["g/twin1", "g/twin2"]
    order = [r["id"] for r in graph_expand(conn, ["g/b"], WalkOptions(hops=1, tie_ranks={"g/twin2": 1, "g/twin1": 7}))
             if r["id"].startswith("g/twin")]
    assert order == ["g/twin2", "g/twin1"]


def test_degree_damping_and_trust(conn):
    result = {r["id"]: r for r in graph_expand(conn, ["g/b"], WalkOptions(hops=1))}
    # degree counts edges: a has 5 (to b; from visitor, index, and old twice); c has 2 (from b, index)
    assert result["g/a"]["score"] == pytest.approx(0.6 * 1.0 / 5 ** 0.5)  # human-reviewed: trust 1.0
    assert result["g/c"]["score"] == pytest.approx(0.6 * 0.6 / 2 ** 0.5)  # unverified: trust 0.6


def test_graph_expand_as_sql(conn):
    from datasette_okf.sqlfunctions import prepare_connection

    prepare_connection(conn)
    rows = conn.execute(
        "select json_extract(value, '$.id') from json_each(graph_expand(?, 1, ?))",
        [json.dumps(["g/a"]), json.dumps({"cap": 1})],
    ).fetchall()
    assert len(rows) == 1


def test_the_edge_budget_expands_the_strongest_nodes_first(tmp_path):
    """A seed next to a small note and a 60-link hub: with room for 20 edges only the small note is
    expanded, so the hub's many neighbours are never read (a hub-heavy walk stays bounded)."""
    files = {
        "seed.md": T.format(extra="", body="[small](small.md) [hub](hub.md)"),
        "small.md": T.format(extra="", body="[behind-small](behind-small.md)"),
        "behind-small.md": T.format(extra="", body="end"),
        "hub.md": T.format(extra="", body=" ".join(f"[n{i}](n{i}.md)" for i in range(60))),
    }
    files.update({f"n{i}.md": T.format(extra="", body=f"leaf {i}") for i in range(60)})  # one word in 60 notes: a template
    build([write_bundle(tmp_path / "g", files)], tmp_path / "g.db", embed=False)
    conn = sqlite_utils.Database(tmp_path / "g.db").conn
    roomy = ids(graph_expand(conn, ["g/seed"], WalkOptions()))
    assert ("behind-small", 2) in roomy and ("n0", 2) in roomy
    tight = ids(graph_expand(conn, ["g/seed"], WalkOptions(edge_budget=20)))
    assert ("behind-small", 2) in tight
    assert not any(node.startswith("n") for node, _ in tight)


@pytest.mark.parametrize("seeds, hops, options, message", [
    ("not json", 1, "{}", "seeds must be a JSON array"),
    ('{"a": 1}', 1, "{}", "seeds must be a JSON array"),
    ('[1, 2]', 1, "{}", "seeds must be a JSON array"),
    (json.dumps([f"g/{i}" for i in range(101)]), 1, "{}", "at most 100"),
    ('["g/a"]', 99, "{}", "hops must be between 0 and 3"),
    ('["g/a"]', "two", "{}", "hops must be a number"),
    ('["g/a"]', 1, "[1, 2]", "options must be a JSON object"),
    ('["g/a"]', 1, "{not json", "options must be a JSON object"),
    ('["g/a"]', 1, '{"beam": 1e9}', "beam must be between"),
    ('["g/a"]', 1, '{"edge_budget": -5}', "edge_budget must be between"),
    ('["g/a"]', 1, '{"cap": "all"}', "cap must be a number"),
    ('["g/a"]', 1, '{"intent": 7}', "intent must be a JSON string"),
])
def test_graph_expand_rejects_bad_arguments_with_a_message(conn, seeds, hops, options, message):
    """Anyone with the SQL editor can call graph_expand: bad input is an error naming the problem,
    and the hard caps keep any walk bounded."""
    from datasette_okf.graph import walk_arguments
    from datasette_okf.sqlfunctions import prepare_connection

    with pytest.raises(ValueError, match=message):
        walk_arguments(seeds, hops, options)
    prepare_connection(conn)
    with pytest.raises(Exception, match="user-defined function raised exception"):
        conn.execute("select graph_expand(?, ?, ?)", [seeds, hops, options]).fetchall()


def test_graph_expand_errors_are_400_in_datasette(tmp_path, conn):
    import asyncio

    from datasette.app import Datasette

    db_path = conn.execute("pragma database_list").fetchone()[2]
    ds = Datasette([db_path])

    async def sql(query):
        return await ds.client.get("/g.json", params={"sql": query})

    bad = asyncio.run(sql("select graph_expand('not json')"))
    assert bad.status_code == 400
    good = asyncio.run(sql("""select json_array_length(graph_expand('["g/a"]', 2, '{"cap": 3}')) as n"""))
    assert good.status_code == 200 and good.json()["rows"][0][0] == 3


def test_each_note_says_which_seeds_reach_it_strongest_path_first(conn):
    """reached_from: the walk's slots go round the seeds (retrieve.WALK_SQL), so each note names every seed with a
    path to it, the strongest first."""
    found = {r["id"].removeprefix("g/"): r["reached_from"] for r in graph_expand(conn, ["g/a", "g/c"], WalkOptions())}
    assert found["b"][0] in ("g/a", "g/c") and set(found["b"]) == {"g/a", "g/c"}  # a links to b, b links to c
    assert found["visitor"] == ["g/a"]  # one hop from a; three from c, past the walk's two
    linked = {r["id"].removeprefix("g/"): r["from_seeds"] for r in graph_expand(conn, ["g/a", "g/c"], WalkOptions())}
    assert set(linked["b"]) == {"g/a", "g/c"} and linked["b"]["g/a"][:2] == ["links_to", "link"]  # a -> b, b -> c
    assert linked["visitor"] == {"g/a": ["links_to", "link", None]} and linked["twin1"] == {}  # twin1: through b
