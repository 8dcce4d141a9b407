"""context_for on the example campaign, with the real default model."""

import json
from dataclasses import replace

import pytest
from click.testing import CliRunner
from datasette.cli import cli

from datasette_okf import context_for
from datasette_okf.evaluate import evaluate, load_golden
from datasette_okf.options import MODES, ContextOptions
from datasette_okf.retrieve import TITLE_SQL, WALK_EXTRA, WALK_FLOOR, WALK_SHARE, classify_intent, connection

from .conftest import ROOT, write_bundle

GOLDEN = ROOT / "examples" / "campaign.golden.json"
BERT = "Who does the shopkeeper Bert sent the party to in session 3 secretly work for, and since when?"  # golden q09


def ids(result):
    return [n["id"].removeprefix("campaign/") for n in result["nodes"]]


def test_json_contract(campaign_db):
    result = context_for(campaign_db, "Who leads the harbour council?")
    assert set(result) == {"question", "mode", "intent", "confident", "reason", "seeds", "nodes", "nearest", "facts",
                           "context", "sql", "params", "timings_ms", "vectors"}
    assert result["nearest"] == []  # confident: nothing to list instead
    assert set(result["seeds"][0]) >= {"id", "path", "title", "ranks", "rrf"}
    assert set(result["seeds"][0]["ranks"]) == {"title", "fts", "vector", "dated"}
    assert set(result["nodes"][0]) == {"id", "bundle", "path", "title", "score", "via", "why", "trust", "stale",
                                       "superseded_by", "cut"}
    assert result["nodes"][0]["path"].endswith(".md")
    assert result["timings_ms"]["total"] > 0 and set(result["sql"]) == set(result["params"]) >= {"seeds", "walk", "facts"}


def test_why_says_where_each_note_came_from_as_data(campaign_mentions_db):
    result = context_for(campaign_mentions_db, BERT)
    seeds = {s["id"]: s for s in result["seeds"]}
    for node in result["nodes"]:
        why = node["why"]
        if why["kind"] == "seed":
            assert why["ranks"] == seeds[node["id"]]["ranks"] and node["via"].startswith("seed: ")
        elif why["kind"] == "hop":
            assert why["hop"] in (1, 2) and why["edge_kind"] in {"link", "wikilink", "mention", "relation", "property",
                                                                  "sequence"}
            assert why["seed"] in seeds and 0 < why["similarity"] < 1
            assert node["via"] == f"hop {why['hop']} via {why['from']} ({why['predicate']})"
        else:
            assert why["kind"] == "series" and why["role"] in ("gap", "end") and node["via"].startswith("series: ")
    assert {"seed", "hop"} <= {n["why"]["kind"] for n in result["nodes"]}


def test_each_stage_reruns_with_its_own_params_and_gives_its_rows_again(campaign_mentions_db):
    """What the page's "open in the SQL editor" links do: the statement and the parameters it ran with."""
    result = context_for(campaign_mentions_db, BERT)
    conn = connection(campaign_mentions_db)

    def rerun(stage):
        cursor = conn.execute(result["sql"][stage], result["params"][stage])
        columns = [c[0] for c in cursor.description]
        return [dict(zip(columns, row)) for row in cursor.fetchall()]

    fused = [row["id"] for row in rerun("seeds")]
    first_round = [s["resolved_from"] or s["id"] for s in result["seeds"] if not s["bridged_from"]]
    assert first_round == fused[: len(first_round)]
    second_round = [row["id"] for row in rerun("bridge")]
    assert [s["id"] for s in result["seeds"] if s["bridged_from"]] == second_round
    walked = [json.loads(row["arrival"])["id"] for row in rerun("walk")]
    hops = [n["id"] for n in result["nodes"] if n["why"]["kind"] == "hop"]
    assert hops and [i for i in walked if i in hops] == sorted(hops, key=walked.index)
    facts = {(row["src"], row["predicate"], row["dst"]) for row in rerun("facts")}
    assert result["facts"] and {(f["subject_id"], f["predicate"], f["object_id"]) for f in result["facts"]} <= facts


def test_title_hit_seeds_first_and_relations_render_as_facts(campaign_db):
    result = context_for(campaign_db, "What is Nessa Thorne's crew?")
    assert result["confident"] and ids(result)[0] == "people/nessa-thorne"
    assert result["seeds"][0]["ranks"]["title"] == 1
    assert "- Nessa Thorne member_of The Black Gulls, as of 1339-06-21 (trust: human-reviewed, source: s4)" in result["context"]


def test_out_of_bundle_question_gets_no_confident_match(campaign_db):
    result = context_for(campaign_db, "How do I descale an espresso machine?")
    assert not result["confident"] and result["nodes"] == []
    assert result["context"].startswith("No confident match in this bundle")


def test_superseded_concepts_resolve_to_the_current_one(campaign_db):
    now = context_for(campaign_db, "What is the harbour toll per ship?")
    assert "organisations/harbour-charter-v3" in ids(now)
    assert not {"organisations/harbour-charter-v1", "organisations/harbour-charter-v2"} & {s["id"].removeprefix("campaign/") for s in now["seeds"]}
    then = context_for(campaign_db, "What was the harbour toll under the original charter?")
    assert then["intent"] == "HISTORICAL"
    assert "organisations/harbour-charter-v1" in ids(then)


def test_stale_content_is_flagged_never_presented_as_current(campaign_db):
    result = context_for(campaign_db, "What is the watch rotation at the harbour?", today="2026-11-29")
    stale = [n for n in result["nodes"] if n["id"].endswith("watch-rotation")]
    assert stale and stale[0]["stale"]
    assert "STALE since 2026-01-01T00:00:00Z: may no longer be true" in result["context"]


def test_budget_bounds_the_context(campaign_db):
    from datasette_okf.render import estimate_tokens

    for budget in (300, 800, 2000):
        result = context_for(campaign_db, "Tell me about the Black Gulls and their rivals", budget=budget)
        assert estimate_tokens(result["context"]) <= budget


def test_the_walk_returns_no_table_of_contents(tmp_path):
    """A table of contents links to everything and answers nothing: 13th Age's 13th-Age-Index was walked into a fifth
    of its sets' contexts, 200 tokens each, and no golden question needs it. The walk statement passes over a note
    with TOC_LINKS links or more whose text is TOC_SHARE of its own (the lists may still find it)."""
    from datasette_okf.retrieve import TOC_LINKS
    from datasette_okf.store import build

    from .conftest import write_bundle

    rules = {f"Rules/Sword Damage Dice {n}.md": f"Rule {n} is about something else.\n" for n in range(TOC_LINKS)}
    root = write_bundle(tmp_path / "vault", {
        **rules,
        "Rules/Fighter.md": "The fighter swings a sword in every battle. See [[Index]] and [[Weapons]].\n",
        "Rules/Index.md": "\n".join(f"- [[Sword Damage Dice {n}]]" for n in range(TOC_LINKS)) + "\n",
        "Rules/Weapons.md": "Each weapon attack deals one die of damage per level.\n",
    })
    build([root], tmp_path / "v.db", embed=False)
    result = context_for(tmp_path / "v.db", "How many damage dice does a Fighter roll with a sword?")

    def walked_from_the_fighter(**changed):  # the walk statement, run from the one seed
        params = {**result["params"]["walk"], "seeds": json.dumps(["vault/Rules/Fighter"]),
                  "seed_strengths": json.dumps({"vault/Rules/Fighter": 1.0}), "offered": "[]", "cap": 3, **changed}
        return [json.loads(row[0])["id"] for row in connection(tmp_path / "v.db").execute(result["sql"]["walk"], params)]

    assert "vault/Rules/Weapons" in walked_from_the_fighter()
    assert "vault/Rules/Index" not in walked_from_the_fighter()
    assert walked_from_the_fighter(toc_links=TOC_LINKS + 1)[0] == "vault/Rules/Index"  # one link short: walked first
    assert "vault/Rules/Index" in walked_from_the_fighter(toc_share=0.9)  # links, but their text not most of it


def test_the_walk_adds_notes_the_seeds_missed_and_is_capped(campaign_mentions_db):
    """The golden set's q09: Teodor Vask is only a nickname in session 3; Bert's note links to him, and his note
    says whom he works for, and since when."""
    result = context_for(campaign_mentions_db, BERT)
    walked = [n for n in result["nodes"] if n["why"]["kind"] == "hop"]
    assert result["params"]["walk"]["cap"] == len(result["seeds"]) + WALK_EXTRA  # capped: the seeds, and two more
    ran = connection(campaign_mentions_db).execute(result["sql"]["walk"], result["params"]["walk"]).fetchall()
    assert 0 < len(walked) <= len(ran) == len(result["seeds"]) + WALK_EXTRA  # the cap, of the 100 notes scored
    assert "campaign/people/teodor-vask" not in [s["id"] for s in result["seeds"]]
    assert "campaign/people/teodor-vask" in [n["id"] for n in walked]  # the Tinker: only a nickname in session 3


def test_the_lists_next_notes_take_the_slots_a_walk_without_links_left(tmp_path):
    """hotpotqa-mini's paragraphs link nothing: the walk added no note and its contexts held 5.4 notes of a budget
    they did not fill. The fused lists' next notes now take the walk's slots, below every note offered, until the
    context offers FILL_TO notes; where the walk fills its slots, none come (docs/design.md §5.10)."""
    from datasette_okf.retrieve import FILL_TO
    from datasette_okf.store import build

    capes = ["Alder", "Birch", "Cedar", "Dogwood", "Elm", "Fir", "Gorse", "Hazel", "Ivy", "Juniper", "Larch", "Maple",
             "Oak", "Pine"]  # no numbers: numbered names would make a series, whose `next` links the walk follows
    root = write_bundle(tmp_path / "paragraphs", {
        f"{cape} Light.md": f"{cape} Light stands on a granite cape{' and its keeper logs the storms' * (n % 3)}.\n"
        for n, cape in enumerate(capes)})
    build([root], tmp_path / "p.db", embed=False)
    result = context_for(tmp_path / "p.db", "Which granite cape lighthouse keeper logs storms?")
    kinds = [n["why"]["kind"] for n in result["nodes"]]
    assert "hop" not in kinds and len(result["nodes"]) == FILL_TO
    nexts = [n for n in result["nodes"] if n["why"]["kind"] == "next"]
    assert kinds == ["seed"] * (FILL_TO - len(nexts)) + ["next"] * len(nexts) and nexts
    assert all(n["via"].startswith("next in the lists: fts") for n in nexts)
    ranked = [row[0] for row in connection(tmp_path / "p.db").execute(result["sql"]["seeds"], result["params"]["seeds"])]
    assert [n["id"] for n in result["nodes"]] == ranked[:FILL_TO]  # the lists' order, and nothing else
    assert max(n["score"] for n in nexts) < min(n["score"] for n in result["nodes"] if n["why"]["kind"] == "seed")
    assert all(n["why"]["kind"] != "next" for n in context_for(tmp_path / "p.db", "Which granite cape lighthouse?",
                                                               mode="keyword")["nodes"])  # the modes with k notes


def test_the_vector_lists_first_notes_linked_with_a_note_offered_come_after_the_seeds(tmp_path):
    """A question that describes a rule in other words than its note ("the weak, disposable kind that come in
    crowds": 13th Age's Mooks) has it from the vector list alone, and the fusion puts it below notes two lists found
    halfway down: never offered. A link with a note already offered is a second vote: it comes after the seeds, in
    the vector list's order. One the vector list ranks fifth, one linked with nothing offered, and one already
    offered do not (docs/design.md §5.11)."""
    from datasette_okf.retrieve import LINKED_GUESS_RANK, Node, Seed, linked_guesses, open_query
    from datasette_okf.store import build

    root = write_bundle(tmp_path / "rules", {
        "Combat.md": "How a fight runs. See [[Damage]].\n",
        "Damage.md": "Hit points go down.\n",
        "Mooks.md": "Feeble monsters in mobs. Excess damage carries to the next one.\n",  # links nothing
        "Swarms.md": "Many small monsters as one. See [[Combat]].\n",
        "Minions.md": "Like [[Damage]], but smaller.\n",
        "Fumbles.md": "A natural 1. See [[Damage]].\n",
        "Lore.md": "Old stories.\n",
        "Rules Index.md": "[[Mooks]] and [[Combat]] rules.\n",
    })
    build([root], tmp_path / "r.db")  # with vectors: a database without has no vector list to guess from
    query = open_query(tmp_path / "r.db", "Which enemies are the weak, disposable kind that come in crowds?",
                       replace(ContextOptions(), mode="hybrid"))
    row = {"title_rank": None, "fts_rank": None}
    fused = [{**row, "id": "rules/Combat", "fts_rank": 1, "vector_rank": 6, "rrf": 0.032},
             {**row, "id": "rules/Mooks", "vector_rank": 1, "rrf": 0.016},  # linked from the index, not offered
             {**row, "id": "rules/Lore", "vector_rank": 2, "rrf": 0.016},  # linked with nothing
             {**row, "id": "rules/Swarms", "vector_rank": 3, "rrf": 0.016},  # links to Combat, a seed
             {**row, "id": "rules/Damage", "vector_rank": 4, "rrf": 0.016},  # offered already
             {**row, "id": "rules/Fumbles", "vector_rank": LINKED_GUESS_RANK + 1, "rrf": 0.015}]
    query.know([r["id"] for r in fused] + ["rules/Rules Index"])
    seeds = [Seed("rules/Combat", "Combat.md", "Combat", {"title": None, "fts": 1, "vector": 6}, 0.032)]
    offered = [Node(query.concepts["rules/Combat"], 0.032, {"kind": "seed", "ranks": seeds[0].ranks}),
               Node(query.concepts["rules/Rules Index"], 0.016, {"kind": "hop", "hop": 1, "from": "rules/Combat",
                                                                  "predicate": "links_to"}),
               Node(query.concepts["rules/Damage"], 0.008, {"kind": "hop", "hop": 1, "from": "rules/Combat",
                                                             "predicate": "links_to"})]
    guesses = linked_guesses(query, fused, seeds, offered)
    assert [(g.id, g.why["linked_with"]) for g in guesses] == [("rules/Mooks", "rules/Rules Index"),
                                                                ("rules/Swarms", "rules/Combat")]
    assert 0.032 > guesses[0].score > guesses[1].score > 0.016  # below every seed, above the walk's first
    assert guesses[0].via == "linked guess: vector, linked with rules/Rules Index"
    assert [r["id"] for r in query.run("linked", query.sql["linked"], query.params["linked"])] == [
        "rules/Mooks", "rules/Swarms"]  # the stage's statement, rerun from what the response shows


def test_a_superseded_linked_guess_stands_for_the_note_that_replaced_it_unless_the_question_asks_about_the_past(
        tmp_path):
    """The vector list ranked the example's first harbour charter for "How many silver marks make up one gold mark?",
    and it came as a linked guess, linked with the second: a superseded note, which a seed never is. A guess now
    follows the chain as a seed does; asked about the past, the old note itself."""
    from datasette_okf.retrieve import Node, Seed, linked_guesses, open_query
    from datasette_okf.store import build

    root = write_bundle(tmp_path / "rules", {
        "Combat.md": "How a fight runs. See [[Mooks]], and [[Old Mooks]] as they were.\n",
        "Old Mooks.md": "---\ntype: Rule\nstatus: superseded\nsuperseded_by: /Mooks.md\n---\nFeeble monsters.\n",
        "Mooks.md": "Feeble monsters in mobs. Excess damage carries over.\n",
    })
    build([root], tmp_path / "r.db")
    fused = [{"id": "rules/Combat", "title_rank": None, "fts_rank": 1, "vector_rank": 3, "rrf": 0.032},
             {"id": "rules/Old Mooks", "title_rank": None, "fts_rank": None, "vector_rank": 1, "rrf": 0.016}]
    seed = Seed("rules/Combat", "Combat.md", "Combat", {"title": None, "fts": 1, "vector": 3}, 0.032)

    def guessed(question, historical):
        query = open_query(tmp_path / "r.db", question, replace(ContextOptions(), historical=historical))
        query.know(["rules/Combat"])
        return linked_guesses(query, fused, [seed], [Node(query.concepts["rules/Combat"], 0.032, {"kind": "seed"})])

    [now] = guessed("Which enemies are weak?", historical=False)
    assert now.id == "rules/Mooks" and now.why["resolved_from"] == "rules/Old Mooks"
    assert now.why["linked_with"] == "rules/Combat" and "(resolved from superseded rules/Old Mooks)" in now.via
    [then] = guessed("Which enemies were weak before?", historical=True)
    assert then.id == "rules/Old Mooks" and then.why["resolved_from"] is None


def test_the_walk_prefers_the_link_in_the_seeds_section_most_like_the_question(tmp_path):
    """A seed points at what the question needs from the section that answers it: of two neighbours alike in every
    other way, the one linked from the seed's section on weaknesses comes first for a question about a weakness
    (13th-Age-check's tac22: Other Damage Types links to Vulnerable there). Without that, the other came first."""
    from datasette_okf.retrieve import Seed, open_query, walk
    from datasette_okf.store import build

    root = write_bundle(tmp_path / "rules", {
        "Damage Types.md": "---\ntype: Rule\ndescription: Kinds of damage.\n---\n"  # not inferred from a section
                           "## Weak to an energy\nA monster weak to fire takes a worse hit from fire spells: see "
                           "[[Alpha Rule]].\n\n## History\nScholars in the old library wrote these tables down long "
                           "ago: see [[Beta Rule]].\n",
        "Alpha Rule.md": "A condition a creature can have.\n",
        "Beta Rule.md": "A condition a creature can have.\n",
    })
    build([root], tmp_path / "r.db")
    query = open_query(tmp_path / "r.db", "A monster is weak to fire and I hit it with a fire spell. What happens?",
                       replace(ContextOptions(), mode="hybrid"))
    query.know(["rules/Damage Types"])
    seed = Seed("rules/Damage Types", "Damage Types.md", "Damage Types", {"title": None, "fts": 1, "vector": 1}, 0.03)
    assert [w.id for w in walk(query, [seed], [], cap=2)] == ["rules/Alpha Rule", "rules/Beta Rule"]


def test_the_walk_reads_every_link_a_seed_has_to_a_note_for_the_question_s_predicate(tmp_path):
    """Thellade-check5's thg11 ("One of the Infernal Covenant's rivals is an order in Boba…"): the Sunfire Heralds is
    the Covenant's `rivals` and Boba's `organization`; its best path came through Boba, so the walk read only
    "organization" against the question, and the Covenant's other rivals, whose one link says "rivals", came
    first. Now the predicate term takes the best of every link a seed has to the note."""
    from datasette_okf.retrieve import Seed, open_query, walk
    from datasette_okf.store import build

    order = "An order that keeps old lore and holds festivals.\n"
    root = write_bundle(tmp_path / "world", {
        "Covenant.md": "---\ntype: Faction\nrivals: ['[[Heralds]]', '[[Wardens]]']\n---\nA secret cult.\n",
        "Town.md": "---\ntype: Place\norganization: ['[[Heralds]]']\n---\nA harbour town. The [[Heralds]] meet here.\n",
        "Heralds.md": order,
        "Wardens.md": order,
    })
    build([root], tmp_path / "w.db")
    query = open_query(tmp_path / "w.db", "Which of the Covenant's rivals keeps old lore?",
                       replace(ContextOptions(), mode="hybrid"))
    query.know(["world/Covenant", "world/Town"])
    seeds = [Seed("world/Covenant", "Covenant.md", "Covenant", {"title": 1, "fts": 1, "vector": 1}, 0.05),
             Seed("world/Town", "Town.md", "Town", {"title": None, "fts": 2, "vector": 2}, 0.02)]
    walked = walk(query, seeds, [], cap=1)
    assert [(w.id, w.seed, w.predicate) for w in walked] == [("world/Heralds", "world/Covenant", "rivals")]


def test_a_linked_guess_is_walked_as_a_seed_is(tmp_path):
    """A linked guess stands where a seed would, and its rule's note is often the one it links to: 13th Age's
    Fumbles came as a guess for "I rolled a natural 1 firing my bow at an orc trading blows with our fighter…", and
    Shooting into Melee, the rule the question needs, is its link. The guesses get as many walked notes as there
    are guesses, going round them as the walk's slots go round the seeds: a neighbour most like the question first,
    none offered already, each placed as a walked note is (its guess's score, halved for each better one)."""
    from datasette_okf.retrieve import Node, open_query, walk_from_guesses
    from datasette_okf.store import build

    root = write_bundle(tmp_path / "rules", {
        "Fumbles.md": "A natural 1 on an attack. See [[Shooting into Melee]], [[Crits]], [[Stories]] and [[Damage]].\n",
        "Shooting into Melee.md": "When you fire a ranged attack with a bow at an enemy engaged in melee with your "
                                  "ally and roll a natural 1, the arrow hits your ally instead.\n",
        "Crits.md": "A natural 20 doubles the damage of a hit.\n",
        "Stories.md": "Tales of old heroes.\n",
        "Damage.md": "Hit points go down when a weapon hits.\n",
        "Lore.md": "Old stories. See [[Damage]].\n",
    })
    build([root], tmp_path / "r.db")
    query = open_query(tmp_path / "r.db", "I roll a natural 1 firing my bow at an orc fighting my friend in "
                       "melee. What happens to my friend?", replace(ContextOptions(), mode="hybrid"))
    query.know(["rules/Fumbles", "rules/Damage", "rules/Lore"])
    ranks = {"title": None, "fts": None, "vector": 2}
    guesses = [Node(query.concepts["rules/Fumbles"], 0.02, {"kind": "linked", "ranks": ranks,
                                                            "linked_with": "rules/Damage"}),
               Node(query.concepts["rules/Lore"], 0.018, {"kind": "linked", "ranks": ranks,
                                                         "linked_with": "rules/Damage"})]  # links Damage only
    offered = [Node(query.concepts["rules/Damage"], 0.03, {"kind": "seed", "ranks": ranks}), *guesses]
    walked = walk_from_guesses(query, [], guesses, offered)
    assert [w.id for w in walked] == ["rules/Shooting into Melee", "rules/Crits"]  # two guesses, two slots
    assert [w.score for w in walked] == [round(0.02 * WALK_SHARE, 6), round(0.02 * WALK_SHARE**2, 6)]
    assert walked[0].why["kind"] == "hop" and walked[0].why["from"] == "rules/Fumbles"
    assert walked[0].via.startswith("hop 1 via rules/Fumbles")
    rerun = query.run("linked_walk", query.sql["linked_walk"], query.params["linked_walk"])
    assert [json.loads(r["arrival"])["id"] for r in rerun] == [w.id for w in walked]


def test_a_walked_note_says_it_came_by_the_seed_whose_slot_it_took(campaign_db):
    """The walk's slots go round the seeds; the why line names the one that placed the note. In the Thellade vault
    The Silver Chain, placed by The Red Runners (its allies), said "via The Emberheart Traders (rivals)", a seed the
    budget then left out; in the example, 32 of the 109 notes walked for q01-q28 named another seed than their own."""
    walked = [n["why"] for q in load_golden(GOLDEN)
              for n in context_for(campaign_db, q["question"])["nodes"] if n["why"]["kind"] == "hop"]
    assert len(walked) > 50 and all(why["from"] == why["seed"] for why in walked)


def test_the_walk_passes_over_a_note_no_chunk_of_which_is_about_the_question(campaign_db):
    """The golden set's q23 (when session 5 was written up): session 5 links to the gull harpy, whose nearest chunk
    is at 0.04; the walk statement run without its floor still returns it."""
    question = "How soon after it was played was session 5 first written up, and when was that write-up later redone?"
    result = context_for(campaign_db, question)
    walked = [n for n in result["nodes"] if n["why"]["kind"] == "hop"]
    assert walked and all(n["why"]["similarity"] >= WALK_FLOOR for n in walked)
    assert "campaign/monsters/gull-harpy" not in [n["id"] for n in result["nodes"]]
    params = {**result["params"]["walk"], "floor": -1}
    unfloored = {json.loads(row[0])["id"]: row[2] for row in
                 connection(campaign_db).execute(result["sql"]["walk"], params)}
    assert unfloored["campaign/monsters/gull-harpy"] < WALK_FLOOR


def test_a_walked_note_is_not_near_the_question_for_repeating_a_seed(tmp_path):
    """13th Age's General Feats list holds the Ritual Casting feat word for word, and took the feat's walk slot from
    Rituals, the rules the feat points to. A chunk that repeats a seed's (case aside) lends its note no similarity."""
    from datasette_okf.store import build

    files = {
        "General Feats.md": "# General Feats\n\nFeats any character can take, once each.\n\n## Toughness\n\n"
                            "You gain extra hit points.\n\n## Ritual Casting\n\nYou can cast any spell you know as a "
                            "ritual, outside combat.\n",
        "Ritual Casting.md": "# Ritual Casting\n\nYou can cast any Spell you know as a ritual, outside combat.\n\n"
                             "## See also\n\nThe [[Rituals]] rules; one of the [[General Feats]].\n",
        "Rituals.md": "# Rituals\n\nCasting takes ten minutes and a skill check, and the spell stays expended until the "
                      "next full heal-up.\n",
    }
    build([write_bundle(tmp_path / "vault", files)], tmp_path / "v.db")
    question = "What does casting a spell as a ritual outside combat involve?"
    result = context_for(tmp_path / "v.db", question, max_seeds=1)
    assert [s["title"] for s in result["seeds"]] == ["Ritual Casting"]
    assert [n["title"] for n in result["nodes"] if n["why"]["kind"] != "next"] == ["Ritual Casting", "Rituals"]
    conn = connection(tmp_path / "v.db")
    walked = {json.loads(row[0])["id"]: row[2] for row in
              conn.execute(result["sql"]["walk"], {**result["params"]["walk"], "floor": -1, "cap": 10})}
    chunks = dict(conn.execute("select heading, 1 - vec_distance_cosine(chunk_floats.embedding, okf_embed(?))"
                               " from chunks join chunk_floats on chunk_floats.id = chunks.id"
                               " where concept_id = 'vault/General Feats'", [question]).fetchall())
    assert walked["vault/General Feats"] == pytest.approx(max(chunks["General Feats"], chunks["Toughness"]))
    assert walked["vault/General Feats"] < chunks["Ritual Casting"]  # the repeated section, not counted


@pytest.mark.parametrize("mode", MODES)
def test_modes_share_one_shape(campaign_db, mode):
    result = context_for(campaign_db, "Where does the brine hag live?", mode=mode, k=5)
    assert result["mode"] == mode and result["confident"]
    assert set(result) >= {"seeds", "nodes", "facts", "context", "sql"}
    if mode != "hybrid":
        assert all(set(s["ranks"]) <= {"fts", "vector"} for s in result["seeds"])


@pytest.mark.parametrize("question", ['"', "NEAR(harbour toll)", "toll* AND -ship", "harbour OR", "col:val ^x", "(("])
def test_question_text_never_breaks_full_text_syntax(campaign_db, question):
    context_for(campaign_db, question)


def test_intents():
    assert classify_intent("Why did Dagna burn the Salted Eel?") == "WHY"
    assert classify_intent("When did the charter change hands?") == "HISTORICAL"
    assert classify_intent("When was the third charter ratified?") == "WHEN"
    assert classify_intent("Who is the Tinker?") == "ENTITY"
    assert classify_intent("Tell me about gulls") == "GENERAL"


@pytest.mark.parametrize("question", [
    "When was the third charter ratified?", "When in the battle does she have to use the invocation?",
    "When during my turn do I take the poison?", "Who started the Hollow Saints, when, and what drove them?",
    "Which came first, and when?", "When's the Festival of the Lantern Tide?", "How long did the siege last?", "In what year was Boba founded?",
    "How does the pacing work up to gaining a level — when do we fully heal?", "Do you know when Kanda was founded?",
])
def test_when_asks_when_as_a_question_word(question):
    assert classify_intent(question) == "WHEN"


@pytest.mark.parametrize("question, intent", [
    ("What happened when Group 3 rioted in Boba, and who was hurt?", "ENTITY"),
    ("When my wizard takes damage, what save does she make?", "GENERAL"),
    ("What else happens when it's hit by them?", "ENTITY"),
    ("The party paid 8 silver marks when they arrived. What would the ship pay now?", "GENERAL"),
    ("What happens when a monster is staggered?", "ENTITY"),  # a question word opened the clause: stop 56
    ("How much damage does my ranger deal when the escalation die is at 3?", "GENERAL"),
])
def test_when_that_says_on_what_occasion_asks_no_date(question, intent):
    """Such a question got every offered note's dates as facts: a riot's question, the founding dates of Boba's
    factions."""
    assert classify_intent(question) == intent


def test_hybrid_beats_plain_vector_search_on_synthesis_and_rejects_out_of_bundle(campaign_db):
    report = evaluate(campaign_db, load_golden(GOLDEN), ["hybrid", "vector:10"])
    hybrid, vector = report["modes"]["hybrid"], report["modes"]["vector:10"]
    assert hybrid["synthesis"]["recall"] > vector["synthesis"]["recall"]
    assert hybrid["synthesis"]["tokens"] <= ContextOptions().budget
    assert hybrid["out"]["rejection_rate"] >= 0.6
    assert hybrid["lookup"]["recall"] >= 0.75


def test_the_all_row_counts_rejections_of_out_of_bundle_questions_apart_from_false_rejections(campaign_db):
    golden = [q for q in load_golden(GOLDEN) if q["tier"] in ("lookup", "out")]
    tiers = evaluate(campaign_db, golden, ["hybrid"])["modes"]["hybrid"]
    assert tiers["all"]["rejection_rate"] == tiers["out"]["rejection_rate"] > 0
    assert tiers["all"]["false_rejection_rate"] == tiers["lookup"]["false_rejection_rate"]
    assert "false_rejection_rate" not in tiers["out"] and "rejection_rate" not in tiers["lookup"]
    for row in evaluate(campaign_db, load_golden(GOLDEN), ["vector:10"])["modes"]["vector:10"]["per_question"].values():
        if row["recall"] is not None:  # recall@5 reads the first five notes only: at most the whole context's
            assert row["recall_at_5"] <= row["recall"]


def test_cli_context_and_evaluate(campaign_db):
    runner = CliRunner()
    result = runner.invoke(cli, ["okf", "context", str(campaign_db), "Where does the brine hag live?", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["confident"] is True
    result = runner.invoke(cli, ["okf", "context", str(campaign_db), "Where does the brine hag live?"])
    assert result.output.startswith("# Context for: Where does the brine hag live?")
    result = runner.invoke(cli, ["okf", "evaluate", str(campaign_db), str(GOLDEN), "--modes", "hybrid,keyword:5", "--format", "markdown"])
    assert result.exit_code == 0, result.output
    assert "| hybrid | synthesis | 10 |" in result.output and "| keyword:5 | out | 5 |" in result.output


def test_a_database_of_another_format_is_a_clear_error(campaign_db, tmp_path):
    import shutil
    import sqlite3

    from datasette_okf.schema import OutdatedDatabase

    old = tmp_path / "old.db"
    shutil.copyfile(campaign_db, old)
    conn = sqlite3.connect(old)
    conn.execute("update meta set value = '1' where key = 'format_version'")
    conn.commit()
    conn.close()
    with pytest.raises(OutdatedDatabase, match="rebuild it with datasette okf build"):
        context_for(old, "Who is the Tinker?")
    result = CliRunner().invoke(cli, ["okf", "context", str(old), "Who is the Tinker?"])
    assert result.exit_code == 1 and "has format 1" in result.output


def test_a_mistyped_database_path_is_a_clear_error_and_leaves_no_file_behind(tmp_path):
    """sqlite creates the file it is asked to open: `context_for("campain.db", …)` from a script, or a benchmark
    given `--help` for its database, left an empty database under that name (one was committed by mistake)."""
    missing = tmp_path / "campain.db"
    with pytest.raises(FileNotFoundError, match="no such database file: .*campain.db"):
        context_for(missing, "Who is the Tinker?")
    with pytest.raises(FileNotFoundError):
        context_for(str(missing), "Who is the Tinker?")
    assert list(tmp_path.iterdir()) == []


def test_binary_candidates_with_float_rerank_find_the_same_notes(campaign_db):
    """Large collections search 1-bit codes and re-rank exactly; forced here on the small example."""
    golden = load_golden(GOLDEN)
    exact = evaluate(campaign_db, golden, ["hybrid"])["modes"]["hybrid"]
    quantised = evaluate(campaign_db, golden, ["hybrid"], binary_from=0)["modes"]["hybrid"]
    assert abs(quantised["all"]["recall"] - exact["all"]["recall"]) <= 0.05
    result = context_for(campaign_db, "Where does the brine hag live?", binary_from=0)
    assert "okf_hamming_candidates" in result["sql"]["seeds"] and result["confident"]
    assert result["nodes"][0]["id"] == "campaign/monsters/brine-hag"


@pytest.mark.parametrize("failure", ["raises", "hangs"])
def test_a_failing_embedding_model_degrades_to_title_and_keyword_seeds(tmp_path, test_models, monkeypatch, failure):
    """The model a database was built with is down or hanging: the question is still answered from
    titles and BM25 within the deadline, the JSON says vectors were unavailable, nothing is written."""
    import threading
    import time

    from datasette_okf.store import build

    from .conftest import EXAMPLES

    db = tmp_path / "campaign.db"
    build([EXAMPLES], db, model="okf-test-hash-8")
    before = db.read_bytes()
    model = test_models["okf-test-hash-8"]
    never = threading.Event()

    def broken(items):
        if failure == "hangs":
            never.wait(60)
        raise ConnectionError("connection refused by the embedding server")

    monkeypatch.setattr(model, "embed_batch", broken)
    monkeypatch.setenv("OKF_MODEL_DEADLINE", "1")
    started = time.monotonic()
    result = context_for(db, "Who is Teodor Vask, the tinker?")
    assert time.monotonic() - started < 5
    assert result["vectors"].startswith("unavailable:")
    assert ("no answer within 1" in result["vectors"]) if failure == "hangs" else ("refused" in result["vectors"])
    assert result["confident"] and result["nodes"][0]["id"] == "campaign/people/teodor-vask"
    assert "vector" not in result["sql"]["seeds"].split("lists as")[0]
    assert set(result["seeds"][0]["ranks"]) == {"title", "fts", "dated"}  # the lists that ran, not the mode's
    in_vector_mode = context_for(db, "Who is Teodor Vask, the tinker?", mode="vector")
    assert all(node["via"] != "seed: " for node in in_vector_mode["nodes"])  # each names the list that found it
    if failure == "raises":  # the API and the page say so too, with a 200
        import asyncio

        from datasette.app import Datasette

        ds = Datasette([str(db)])
        params = {"q": "Who is Teodor Vask, the tinker?"}
        data = asyncio.run(ds.client.get("/-/context_for.json", params=params))
        assert data.status_code == 200 and data.json()["vectors"].startswith("unavailable: ")
        page = asyncio.run(ds.client.get("/-/context_for", params=params))
        assert page.status_code == 200 and "Vector search was unavailable" in page.text
    never.set()
    assert db.read_bytes() == before


def test_vectors_are_reported_as_used_or_absent(campaign_db, tmp_path):
    from datasette_okf.store import build

    from .conftest import EXAMPLES

    assert context_for(campaign_db, "Who is the tinker?")["vectors"] == "used"
    plain = tmp_path / "plain.db"
    build([EXAMPLES], plain, embed=False)
    result = context_for(plain, "Who is Teodor Vask?", mode="vector")
    assert result["vectors"] == "none in this database" and result["confident"]


def test_a_question_over_the_limit_is_a_clear_error_not_a_sql_failure(campaign_db):
    """The SQL functions refuse text over 2,000 characters; context_for says so first, naming the limit."""
    with pytest.raises(ValueError, match="the question is 2,001 characters; at most 2,000"):
        context_for(str(campaign_db), "x" * 2001)
    assert context_for(str(campaign_db), "Who is the Tinker? " + "x" * 1980)["question"]


def test_a_series_is_filled_in_between_the_sessions_found_and_extended_when_the_question_asks_how_it_went(campaign_db):
    """Sessions 2 and 4 found: session 3 comes too (docs/design.md §5.9); "how did … unfold" adds the next one."""
    from datasette_okf.retrieve import SERIES_SQL, SERIES_UNNAMED_SQL

    conn = connection(campaign_db)
    found = json.dumps(["campaign/sessions/session-02", "campaign/sessions/session-04"])
    rows = conn.execute(SERIES_SQL, {"nodes": found, "max_gap": 4, "ends": 0, "named": "[]", "others": "{}", "reach": 20}).fetchall()
    assert rows == [("campaign/sessions/session-03", "campaign/sessions/session-02", "campaign/sessions/session-04", "gap",
                     None)]
    rows = conn.execute(SERIES_SQL, {"nodes": found, "max_gap": 4, "ends": 1, "named": "[]", "others": "{}", "reach": 20}).fetchall()
    assert {(row[0], row[3]) for row in rows} == {("campaign/sessions/session-03", "gap"),
                                                   ("campaign/sessions/session-01", "end"),
                                                   ("campaign/sessions/session-05", "end")}
    after = context_for(campaign_db, "How did things unfold after the smoke over the stacks?")
    nodes = {n["id"].removeprefix("campaign/sessions/"): n for n in after["nodes"]}
    # the session after the one it found, right after it: an end, or a gap when the walk brought session 5
    assert nodes["session-04"]["why"].get("role") in ("end", "gap") and nodes["session-04"]["why"]["after"]
    assert nodes["session-04"]["score"] == round(nodes["session-03"]["score"] * 0.99, 6)
    assert after["params"]["series"]["ends"] == 1 and "series" in after["sql"]
    plain = context_for(campaign_db, "What does the smoke over the stacks smell of?")
    assert plain["params"]["series"]["ends"] == 0  # not a question about what came next
    assert plain["sql"]["series"] == SERIES_UNNAMED_SQL  # names no session by number: the statement without that part
    rows = conn.execute(SERIES_UNNAMED_SQL, {"nodes": found, "max_gap": 4, "ends": 1}).fetchall()
    assert rows == conn.execute(SERIES_SQL, {"nodes": found, "max_gap": 4, "ends": 1, "named": "[]", "others": "{}",
                                             "reach": 20}).fetchall()
    assert "end" not in {n["why"].get("role") for n in plain["nodes"]}


def test_a_question_about_how_a_stretch_went_takes_the_next_session_right_after_the_one_found(campaign_db):
    """"How did … unfold / play out across …": a series' note comes just after its neighbour in the budget's order,
    not at half of it with the walked notes (Thellade: "across sessions 6 to 8" found 6, and 7 fell off the
    budget behind two weaker seeds)."""
    def order(question):
        result = context_for(campaign_db, question)
        score = {n["id"]: n["score"] for n in result["nodes"]}
        return [(score[n["id"]], score[n["why"]["after"] or n["why"]["before"]]) for n in result["nodes"]
                if n["why"]["kind"] == "series" and n["why"]["role"] in ("end", "gap")]

    from datasette_okf.retrieve import SERIES_SQL, Node, _in_order

    found = json.dumps(["campaign/sessions/session-02", "campaign/sessions/session-03"])
    rows = connection(campaign_db).execute(SERIES_SQL, {"nodes": found, "max_gap": 4, "ends": 1, "named": "[]", "others": "{}", "reach": 20}).fetchall()
    assert {row[:4] for row in rows if row[3] == "adjacent"} == {
        ("campaign/sessions/session-03", "campaign/sessions/session-02", None, "adjacent"),
        ("campaign/sessions/session-02", None, "campaign/sessions/session-03", "adjacent")}
    # session 6 a seed, 7 walked from it, 8 walked from elsewhere at a quarter: 7 and 8 follow 6, in order
    chain = [Node({"id": f"s{n}"}, score, {"kind": "hop"}) for n, score in ((6, 0.03), (7, 0.008), (8, 0.004))]
    _in_order(chain, [("s6", "s7"), ("s7", "s6"), ("s7", "s8"), ("s8", "s7")])
    assert [n.score for n in chain] == [0.03, 0.0297, 0.029403]

    unfolding = order("How did things unfold after the smoke over the stacks?")
    assert unfolding and all(mine == round(neighbour * 0.99, 6) for mine, neighbour in unfolding)
    # one moment: the walked notes' share. Session 4, the series' end (or the walk's, as session 3's second
    # neighbour: the same place), stands at half of session 3, not just under it as a stretch's member would
    after = {n["id"]: n for n in context_for(campaign_db, "What happened next, after the smoke over the stacks?")["nodes"]}
    four, three = after["campaign/sessions/session-04"], after["campaign/sessions/session-03"]
    assert four["why"]["kind"] in ("hop", "series") and four["score"] == round(three["score"] * 0.5, 6)


def test_the_end_of_a_stretch_follows_the_member_it_continues_where_that_member_now_stands(tmp_path):
    """"How did Group 2 fare from their arrival at the Hollow Flame to the end of their time with Elandor?" (the
    Thellade vault): session 6 a seed, 7 walked at half a seed's score and lifted to follow 6; session 8, the end,
    came at 7's score before the lift, twelfth, and the budget's note cap left it out. Sessions found next to each
    other now settle first, and the end follows 7 where it stands."""
    from datasette_okf.store import build

    said = {2: "The smoke rose over the stacks; the smoke stayed.", 3: "Smoke again."}
    files = {f"Sessions/Session {n:02d}.md": f"{said.get(n, 'They slept at the inn.')}\n" for n in range(1, 6)}
    build([write_bundle(tmp_path / "vault", files)], tmp_path / "v.db", embed=False)
    result = context_for(tmp_path / "v.db", "How did the smoke over the stacks unfold?", mode="keyword", k=2)
    score = {n["title"]: n["score"] for n in result["nodes"]}
    assert score["Session 03"] == round(score["Session 02"] * 0.99, 6)  # lifted to follow session 2
    assert score["Session 04"] == round(score["Session 03"] * 0.99, 6)  # and the end follows it as it now stands


def test_a_session_the_question_names_by_number_comes_from_the_series_it_found(tmp_path):
    """"In Group 3's session 9 …": the vault's titles say "When Memory Burns", its file names "Campaign 3 - Session
    09 - …", and the question's words found session 10. Session 9 comes right after the strongest note found, named
    by the question (Thellade: it was the missing half of a linked-note question); another campaign's session 9
    does not, even when a stronger note of that campaign was found."""
    from datasette_okf.retrieve import SERIES_SQL, _best_named, open_query
    from datasette_okf.store import build
    from datasette_okf.titles import numbered

    from .conftest import write_bundle

    titles = {8: "Bonds Forged in Silence", 9: "When Memory Burns", 10: "Glyphs and Chains", 11: "Ashes Again"}
    files = {f"Sessions/Campaign {c}/Campaign {c} - Session {n:02d} - {t}.md":
             f"---\ntitle: {t}\n---\n{'Group 3 broke the glyph chains.' if (c, n) == (3, 10) else 'Everyone slept at the old inn.'}\n"
             for c in (3, 4) for n, t in titles.items()}
    build([write_bundle(tmp_path / "vault", files)], tmp_path / "v.db", embed=False)
    result = context_for(tmp_path / "v.db", "In Group 3's session 9, who broke the glyph chains?", mode="keyword")
    score = {n["id"]: n["score"] for n in result["nodes"]}
    found, named = "vault/Sessions/Campaign 3/Campaign 3 - Session 10 - Glyphs and Chains", \
        "vault/Sessions/Campaign 3/Campaign 3 - Session 09 - When Memory Burns"
    named_id = named
    assert score[named] == round(max(score[node_id] for node_id in score if "Session 0" not in node_id) * 0.99, 6)
    assert next(n["via"] for n in result["nodes"] if n["id"] == named) == f"series: named by the question, in the series of {found}"
    assert not any("Campaign 4 - Session 09" in node_id for node_id in score)
    assert json.loads(result["params"]["series"]["named"]) == [["group", 3], ["session", 9]]
    ninth = context_for(tmp_path / "v.db", "In Group 3's ninth session, who broke the glyph chains?", mode="keyword")
    assert named in [n["id"] for n in ninth["nodes"]]  # an ordinal names it as well
    assert result["sql"]["series"] == SERIES_SQL
    def named(found_ids, pairs, reach=20):
        params = {**result["params"]["series"], "nodes": json.dumps(found_ids), "named": json.dumps(pairs),
                  "reach": reach}
        rows = connection(tmp_path / "v.db").execute(SERIES_SQL, params).fetchall()
        return sorted((row[0].rsplit("/", 1)[1][:23], row[1].rsplit("/", 1)[1][:23]) for row in rows if row[3] == "named")

    c3s10, c4s11 = found, "vault/Sessions/Campaign 4/Campaign 4 - Session 11 - Ashes Again"
    assert named([c3s10], []) == []  # nothing named, nothing looked up
    # each series found answers "session 9" (series() keeps the one of the strongest note found)
    assert named([c3s10, c4s11], [["session", 9]]) == [("Campaign 3 - Session 09", "Campaign 3 - Session 10"),
                                                        ("Campaign 4 - Session 09", "Campaign 4 - Session 11")]
    assert named([c3s10, c4s11], [["session", 10]]) == []  # a note found answers it: no other group's session 10
    assert named([c3s10], [["session", 8]], reach=1) == []  # two notes away: past the reach
    assert named([c3s10], [["session", 8]], reach=2) == [("Campaign 3 - Session 08", "Campaign 3 - Session 10")]
    c3s9, c4s9 = named_id, named_id.replace("Campaign 3", "Campaign 4")
    rows = [{"pair": '["session", 9]', "after": c3s10, "id": c3s9}, {"pair": '["session", 9]', "after": c4s11, "id": c4s9}]

    def best(question):
        query = open_query(tmp_path / "v.db", question, ContextOptions())
        query.know([c3s9, c4s9])
        return _best_named(rows, '["session", 9]', {c3s10: 0.01, c4s11: 0.03}, query, numbered(question))["id"]

    # the file name that carries the question's other number wins ("Group 3": "Campaign 3 - Session 09 - …"), even
    # in the series of the weaker note found; without one, the series of the strongest note found
    assert best("In Group 3's session 9, who broke the glyph chains?") == c3s9
    assert best("Who slept at the old inn in session 9?") == c4s9


def test_another_groups_session_of_that_number_does_not_answer_the_session_the_question_names(tmp_path):
    """"At the murder site in session 7, Group 1 found a burned note … what does session 8 reveal?" (Thellade, a
    question written after the tuning): Group 3's session 8 shares the question's words and was found, and it had
    counted as "session 8", so Group 1's session 8, next to the session 7 found, was never looked up. A found note
    answers "session 8" only when its file name carries the question's other number too (Campaign 1 - …)."""
    from datasette_okf.store import build

    text = {(1, 6): "Rain on the road.", (1, 7): "At the murder site Group 1 found a burned note.",
            (1, 8): "Duskfall was the name of a ship.", (3, 7): "Rain on the market.",
            (3, 8): "What does the burned note reveal? Nobody at the murder site could say."}
    files = {f"Sessions/Campaign {c}/Campaign {c} - Session {n:02d} - Part {n}.md": f"---\ntitle: Part {c}{n}\n---\n{t}\n"
             for (c, n), t in text.items()}
    build([write_bundle(tmp_path / "vault", files)], tmp_path / "v.db", embed=False)
    question = "At the murder site in session 7, Group 1 found a burned note. What does session 8 reveal?"
    result = context_for(tmp_path / "v.db", question, mode="keyword")
    nodes = {n["title"]: n for n in result["nodes"]}
    assert {"Part 17", "Part 38"} <= set(nodes)  # found by their words
    assert nodes["Part 18"]["via"] == ("series: named by the question, in the series of "
                                       "vault/Sessions/Campaign 1/Campaign 1 - Session 07 - Part 7")
    assert json.loads(result["params"]["series"]["others"]) == {"session": [1], "group": [7, 8]}
    # one number only: whose session 8 it is, nothing says; the session 8 found answers it
    alone = context_for(tmp_path / "v.db", "At the murder site, a burned note was found. What does session 8 reveal?",
                        mode="keyword")
    assert "Part 18" not in {n["title"] for n in alone["nodes"]}


def test_a_session_found_anywhere_that_the_question_names_with_both_its_numbers_comes_right_after_the_best_note(tmp_path):
    """"When Group 6 made port in session 8, an audience with the High Chancellor was prepared…" (a Thellade check
    question): the walk brought Campaign 6's session 8 from an encounter note, last, and the budget cut it for two
    other groups' session 8, which shared more of the question's words. Named with both its numbers, it now comes
    right after the strongest note; with one number only nothing says whose session 8 it is."""
    from datasette_okf.store import build

    text = {(6, 8): "Port at last.", (3, 8): "An audience with the High Chancellor was prepared at port.",
            (2, 8): "The High Chancellor prepared an audience; the party could win favour at the port."}
    files = {f"Sessions/Campaign {c}/Campaign {c} - Session {n:02d} - Part {n}.md": f"---\ntitle: Part {c}{n}\n---\n{t}\n"
             for (c, n), t in text.items()}
    files["Chancellor.md"] = "---\ntitle: High Chancellor\n---\nRules the port. Prepared an audience for the party.\n"
    build([write_bundle(tmp_path / "vault", files)], tmp_path / "v.db", embed=False)
    question = "When Group 6 made port in session 8, an audience with the High Chancellor was prepared. What could the party win?"
    nodes = context_for(tmp_path / "v.db", question, mode="keyword")["nodes"]
    assert [n["title"] for n in nodes][:2] == [nodes[0]["title"], "Part 68"]
    assert nodes[1]["score"] == round(nodes[0]["score"] * 0.99, 6)
    alone = context_for(tmp_path / "v.db", question.replace("Group 6 made port", "the party made port"), mode="keyword")
    assert [n["title"] for n in alone["nodes"]].index("Part 68") > 1


def test_a_session_the_question_names_with_whose_it_is_comes_from_anywhere_in_the_bundle(tmp_path):
    """"Group 6's session 8 and Group 1's session 8: which begins first?" (Thellade-check7's thi32): the words found
    Campaign 6's session 8 and nothing of Campaign 1, so the series stage, which looks near the notes found, never
    looked for Group 1's; and Group 4's two session notes are too few to make a series (thi31). A member named with
    whose it is comes from anywhere in the bundle, right after the strongest note found; another group's session
    of that number does not."""
    from datasette_okf.retrieve import NUMBERED_SQL
    from datasette_okf.store import build

    text = {(6, 7): "Rain.", (6, 8): "Group 6 saw the storm begin at dawn on the docks.", (1, 7): "Ash.", (1, 8): "Secrets in ash.",
            (1, 9): "Smoke.", (4, 5): "A hollow tide.", (4, 6): "Whispers at the crown.", (3, 6): "Group 3 saw the riot begin at dawn."}
    files = {f"Sessions/Campaign {c}/Campaign {c} - Session {n:02d} - Part {c}{n}.md": f"---\ntitle: Part {c}{n}\n---\n{t}\n"
             for (c, n), t in text.items()}
    build([write_bundle(tmp_path / "vault", files)], tmp_path / "v.db", embed=False)
    result = context_for(tmp_path / "v.db", "In Group 6's session 8 and Group 1's session 8, which saw the storm begin at dawn?",
                         mode="keyword")
    assert [n["title"] for n in result["nodes"]][:2] == ["Part 68", "Part 18"]  # found; then the one named
    named = result["nodes"][1]
    assert named["via"] == "named by the question: session 8 (with 1 in its name)"
    assert named["score"] == round(result["nodes"][0]["score"] * 0.99, 6)
    assert result["sql"]["numbered"] == NUMBERED_SQL
    assert json.loads(result["params"]["numbered"]["names"]) == [["session", 8, 6], ["session", 8, 1]]

    asked = context_for(tmp_path / "v.db", "Which saw the riot begin at dawn: Group 3's riot session or Group 4's sixth session?",
                        mode="keyword")
    nodes = {n["title"]: n for n in asked["nodes"]}
    assert nodes["Part 46"]["via"] == "named by the question: session 6 (with 4 in its name)"  # no series: two notes
    assert [n["title"] for n in asked["nodes"]][:2] == ["Part 36", "Part 46"]  # the riot, found; then the one named
    assert "Part 36" not in [n["title"] for n in asked["nodes"] if n["via"].startswith("named")]  # Group 3's is not
    unnamed = context_for(tmp_path / "v.db", "Which group saw the storm begin at dawn in session 8?", mode="keyword")
    assert not any(n["via"].startswith("named") for n in unnamed["nodes"])  # whose session 8, nothing says


def test_a_session_the_question_names_that_the_walk_brought_follows_its_neighbour(tmp_path):
    """"What happened in Group 2's session 7?" (Thellade): the question's words found session 6, and the walk
    brought session 7 over its `next` edge at half session 6's score, behind four weaker seeds. The question names
    it: it now follows session 6; the other campaign's session 7 stays where it was."""
    from datasette_okf.store import build

    text = {(2, 6): "What happened: Group 2 fought the cultists in the hollow flame.", (2, 7): "Gods marked them.",
            (2, 8): "They sailed home.", (3, 6): "Group 3 met.", (3, 7): "Rain fell on the market.",
            (3, 8): "What happened at the market."}
    files = {f"Sessions/Campaign {c}/Campaign {c} - Session {n:02d} - Part {n}.md": f"---\ntitle: Part {c}{n}\n---\n{t}\n"
             for (c, n), t in text.items()}
    build([write_bundle(tmp_path / "vault", files)], tmp_path / "v.db", embed=False)
    result = context_for(tmp_path / "v.db", "What happened in Group 2's session 7?")
    nodes = {n["title"]: n for n in result["nodes"]}
    assert nodes["Part 27"]["via"].startswith("hop 1 via vault/Sessions/Campaign 2/Campaign 2 - Session 06")
    assert nodes["Part 27"]["score"] == round(nodes["Part 26"]["score"] * 0.99, 6)
    assert [n["title"] for n in result["nodes"]][:2] == ["Part 26", "Part 27"]
    assert "Part 37" not in nodes or nodes["Part 37"]["score"] < nodes["Part 38"]["score"] * 0.99


def test_a_question_about_a_session_its_series_does_not_have_is_refused(tmp_path):
    """"What happened to Campaign Group 6 during their session 9 in Kanda?" (Thellade, out of the bundle): Campaign
    6's sessions are 6 to 8. The question's other number picks the series; a session it lacks is like a name no
    note mentions. Campaign 3's session 9 says nothing of Group 6."""
    from datasette_okf.retrieve import SERIES_MEMBERS_SQL, nearest_notes
    from datasette_okf.store import build

    files = {f"Sessions/Campaign {c}/Campaign {c} - Session {n:02d} - Part {n}.md":
             f"# Part {c}{n}\nGroup {c} sailed to Kanda and fought at the docks in session {n}.\n"
             for c, last in ((6, 8), (3, 9)) for n in range(6, last + 1)}
    files["Kanda.md"] = "---\norganization: \"[[Harbour Guard]]\"\n---\n"  # a template the question names: no vouching
    files["Harbour Guard.md"] = "Keeps the docks of Kanda.\n"
    build([write_bundle(tmp_path / "vault", files)], tmp_path / "v.db", embed=False)
    refused = context_for(tmp_path / "v.db", "What happened to Campaign Group 6 during their session 9 in Kanda?")
    assert not refused["confident"] and refused["nodes"] == []
    assert refused["reason"] == "the question names session 9, and its series has session 6, 7, 8 only"
    assert [n["title"][-6:] for n in nearest_notes(refused)] == ["Part 8", "Part 7", "Part 6"]  # nearest 9 first
    assert refused["sql"]["members"] == SERIES_MEMBERS_SQL
    assert context_for(tmp_path / "v.db", "What happened to Group 3 during their session 9 in Kanda?")["confident"]
    assert context_for(tmp_path / "v.db", "What happened to Group 6 during their session 8 in Kanda?")["confident"]
    # no other number to say whose session: one some series has is not refused for it, one none has is (stop 58)
    assert context_for(tmp_path / "v.db", "What happened at the docks in session 9 in Kanda?")["confident"]
    one_number = context_for(tmp_path / "v.db", "What happened at the docks in session 12 in Kanda?")
    assert one_number["reason"] == ("the question names session 12, and no series of the bundle has it; "
                                    "they have session 6, 7, 8, 9 only")
    # a question that names members the series has is about it, the one it lacks among them for the LLM to say
    assert context_for(tmp_path / "v.db", "What happened to Group 6 in sessions 7 to 9 in Kanda?")["confident"]
    refused = context_for(tmp_path / "v.db", "What happened to Group 6 in sessions 9 and 10 in Kanda?")
    assert refused["reason"] == "the question names session 9 and 10, and its series has session 6, 7, 8 only"
    # an ordinal with no word of its own names a member too (Thellade-check9's thk28: refused for its fifth session)
    assert context_for(tmp_path / "v.db", "How long did Group 6 rest between the end of their fifth session and "
                                          "the start of their sixth in Kanda?")["confident"]


def test_a_number_the_bundle_s_only_series_lacks_is_refused_without_another_number(tmp_path):
    """"What happened in session 9?" of the example's sessions 1 to 5 was answered with sessions 5 and 3: with one
    number only, nothing said whose series it is. A bundle with one series numbered by the word has no doubt; with
    two series ("session 6" of Thellade's campaigns) the number alone picks none, and the question is refused only
    when neither has it ("What happened in session 3?" on Thellade, whose session notes start at 5, was answered
    with three sessions 6)."""
    from datasette_okf.retrieve import SOLE_SERIES_SQL, nearest_notes
    from datasette_okf.store import build

    sessions = {f"sessions/session-{n:02d}.md": f"# Session {n}\nWhat happened: the crew sailed on in session {n}.\n"
                for n in range(1, 6)}
    build([write_bundle(tmp_path / "one", sessions)], tmp_path / "one.db", embed=False)
    refused = context_for(tmp_path / "one.db", "What happened in session 9?")
    assert not refused["confident"]
    assert refused["reason"] == "the question names session 9, and its series has session 1, 2, 3, 4, 5 only"
    assert refused["sql"]["sole_series"] == SOLE_SERIES_SQL
    assert [n["title"] for n in nearest_notes(refused)] == ["session-05", "session-04", "session-03"]  # nearest 9
    assert context_for(tmp_path / "one.db", "What happened in session 4?")["confident"]
    assert context_for(tmp_path / "one.db", "What happened in sessions 4 to 7?")["confident"]  # it has 4 and 5

    later = {f"b/sessions/session-{n:02d}.md": f"# Session {n}\nWhat happened: the crew came home in session {n}.\n"
             for n in range(6, 9)}
    two = {**{f"a/{path}": text for path, text in sessions.items()}, **later}
    build([write_bundle(tmp_path / "two", two)], tmp_path / "two.db", embed=False)
    assert context_for(tmp_path / "two.db", "What happened in session 7?")["confident"]  # whose series: unsaid
    assert context_for(tmp_path / "two.db", "What happened in session 2?")["confident"]
    neither = context_for(tmp_path / "two.db", "What happened in session 9?")
    assert not neither["confident"] and neither["reason"] == (
        "the question names session 9, and no series of the bundle has it; they have session 1, 2, 3, 4, 5, 6, 7, 8 only")
    assert nearest_notes(neither)[0]["title"] == "session-08"


def test_a_session_missing_from_the_notes_holding_the_group_the_question_names_is_refused(tmp_path):
    """"What happened in Group 4's third session?" on the Thellade vault: Group 4 has two session notes, "Campaign 4 -
    Session 05 - …" and "Campaign 4 -Session 06 - …" (too few for a series), each with `group: Group 4`, and the
    lists found other groups' sessions; it was answered with Group 2's sixth session. The notes holding the value the
    question says are the group's too."""
    from datasette_okf.retrieve import nearest_notes
    from datasette_okf.store import build

    files = {f"Sessions/Campaign {c}/Campaign {c} - Session {n:02d} - Part {c}{n}.md":
             f"---\ngroup: Group {c}\n---\n# Part {c}{n}\nWhat happened in session {n}: the group fought.\n"
             for c, numbers in ((2, (3, 6, 7)), (3, (3, 8, 9))) for n in numbers}
    files.update({f"Sessions/Campaign 4/Campaign 4 - Session {n:02d} - Part 4{n}.md":
                  f"---\ngroup: Group 4\n---\n# Part 4{n}\nThey rested at the lighthouse.\n" for n in (5, 6)})
    build([write_bundle(tmp_path / "vault", files)], tmp_path / "v.db", embed=False)
    refused = context_for(tmp_path / "v.db", "What happened in Group 4's third session?")
    assert not refused["confident"] and refused["nodes"] == []
    assert refused["reason"] == "the question names session 3, and its series has session 5, 6 only"
    # the nearest notes a refusal lists are Group 4's own, not the other groups' third sessions the lists found
    assert "Part 23" in {n["title"][-7:] for n in refused["seeds"][:3]}  # among the lists' best: Group 2's third
    assert [n["title"][-7:] for n in nearest_notes(refused)] == ["Part 45", "Part 46"]
    assert nearest_notes(refused)[0]["why"] == "a series member nearest the one asked"
    assert context_for(tmp_path / "v.db", "What happened in Group 4's fifth session?")["confident"]
    assert context_for(tmp_path / "v.db", "What happened in Group 2's third session?")["confident"]


def test_the_last_or_first_member_of_a_series_the_question_asks_for_comes_right_after_the_best_note(tmp_path):
    """"What happened in the last session of Campaign 6?" (Thellade): the notes found were sessions 6 and 7 of
    several campaigns, and session 8, Campaign 6's last, was not among them. The found member whose file name
    carries the question's other number leads along the series to the end the question asks for."""
    from datasette_okf.retrieve import SERIES_END_SQL
    from datasette_okf.store import build

    files = {f"Sessions/Campaign {c}/Campaign {c} - Session {n:02d} - Part {n}.md":
             f"What happened: Group {c} sailed on in session {n} of the campaign.\n"
             for c, last in ((6, 8), (3, 10)) for n in range(6, last + 1)}
    build([write_bundle(tmp_path / "vault", files)], tmp_path / "v.db", embed=False)

    def asked(question):
        result = context_for(tmp_path / "v.db", question, max_seeds=2, hops=0)
        return result, {n["title"]: n for n in result["nodes"]}

    last, nodes = asked("What happened in the last session of Campaign 6?")
    assert nodes["Campaign 6 - Session 08 - Part 8"]["via"].startswith(
        "series: the last, as the question asks, in the series of ")
    assert last["sql"]["series_end"] == SERIES_END_SQL
    assert "Campaign 3 - Session 10 - Part 10" not in nodes  # not the last of the other campaign's sessions
    first, nodes = asked("What happened in Group 3's first session?")
    assert [n["title"] for n in first["nodes"]].index("Campaign 3 - Session 06 - Part 6") <= 1
    other, _ = asked("When did Group 6 last sail, the last time they sailed?")
    assert "series_end" not in other["sql"]  # no note is numbered by "time"


def test_the_notes_between_a_member_the_question_names_and_a_member_found_come_right_after_the_found_one(tmp_path):
    """"Group 3's tenth session opens on the afternoon of 4 Dawnmarch. Which temporary bonuses the party picked up in
    the two sessions before…" (Thellade-check5's thg34): the words found session 8, the question named 10, and 9,
    between them, came at half session 8's score (walked, or an end of the stretch found), behind the budget. The
    series statement runs again with the member asked for among the notes found: 9 is their gap, and follows 8."""
    from datasette_okf.store import build

    said = {8: "In this session Group 3 picked up two temporary bonuses at the shrine."}
    files = {f"Sessions/Campaign 3/Campaign 3 - Session {n:02d} - Part {n}.md": f"{said.get(n, 'They slept.')}\n"
             for n in range(5, 11)}
    files.update({f"Shrines/Shrine {n}.md": f"A shrine whose priests hand out temporary bonuses to the party ({n}).\n"
                  for n in range(4)})
    build([write_bundle(tmp_path / "vault", files)], tmp_path / "v.db", embed=False)
    result = context_for(tmp_path / "v.db", "Which temporary bonuses did Group 3 pick up in the two sessions before "
                                            "their tenth session?")
    titles = [n["title"] for n in result["nodes"]]
    nodes = {n["title"]: n for n in result["nodes"]}
    session = "Campaign 3 - Session {:02d} - Part {}".format
    assert nodes[session(10, 10)]["via"].startswith("series: named by the question")
    assert nodes[session(9, 9)]["via"].startswith("series: after vault/Sessions/Campaign 3/Campaign 3 - Session 08")
    assert nodes[session(9, 9)]["score"] == round(nodes[session(8, 8)]["score"] * 0.99, 6)
    assert titles.index(session(9, 9)) < titles.index("Shrine 3")  # before the other notes found
    assert "series_asked" in result["sql"]
    assert nodes[session(7, 7)]["score"] == round(nodes[session(8, 8)]["score"] * 0.5, 6)  # not between: no lift


def test_a_campaign_two_sessions_in_is_a_series_the_question_can_name_a_session_of(tmp_path):
    """Thellade's Group 4 has two session notes, "Campaign 4 - Session 05 - …" and "Campaign 4 -Session 06 - …":
    "Group 4 was ambushed at the inn in session 5 … when session 6 opened?" (Thellade-check11's thm31) got Group 3's
    session 6, the only series numbering a session 6, and the LLM read another party's evening."""
    from datasette_okf.store import build

    def note(title: str, text: str) -> str:
        return f"---\ntitle: {title}\n---\n{text}\n"

    files = {f"Sessions/Campaign 3/Campaign 3 - Session {n:02d} - Part {n}.md": note(f"Tides {n}", "Group 3 sailed on.")
             for n in range(5, 9)}
    files["Sessions/Campaign 4/Campaign 4 - Session 05 - Ash.md"] = note(
        "Ash in the Hollow Tide", "Group 4 was ambushed at the Gilded Hound Inn.")
    files["Sessions/Campaign 4/Campaign 4 -Session 06 - Whispers.md"] = note("Whispers", "A herald stood in the smoke.")
    build([write_bundle(tmp_path / "vault", files)], tmp_path / "v.db", embed=False)
    result = context_for(tmp_path / "v.db", "Group 4 was ambushed at the Gilded Hound Inn in session 5. What "
                         "confronted them when session 6 opened?", mode="keyword")
    via = {n["title"]: n["via"] for n in result["nodes"]}
    assert next(iter(via)) == "Ash in the Hollow Tide"
    assert via["Whispers"].startswith("series: named by the question")
    assert "Tides 6" not in via


def test_a_question_that_numbers_its_group_gets_no_ends_of_another_groups_series(tmp_path, monkeypatch):
    """"How did Group 4 get from their meeting at the Gilded Hound Inn to facing Herald Elandor's judgement?"
    (Thellade-check3): the walk brought Campaign 2's session 7 (Elandor's ally), the series stage added its sessions
    6 and 8 for a question about how things went, and Group 4's session 6 no longer fitted the budget. A question
    that numbers whose series it asks about gets the ends of that series only (titles.of_another)."""
    from datasette_okf import retrieve
    from datasette_okf.store import build

    said = {(2, 3): "the judgement of the herald", (4, 2): "the meeting at the inn", (4, 3): "the judgement came"}
    files = {f"Sessions/Campaign {c}/Campaign {c} - Session {n:02d} - Part {n}.md":
             f"Group {c}, session {n}: {said.get((c, n), 'they slept')}.\n" for c in (2, 4) for n in range(1, 6)}
    build([write_bundle(tmp_path / "vault", files)], tmp_path / "v.db", embed=False)
    question = "How did Group 4 get from the meeting at the inn to the judgement of the herald?"

    def series_notes():
        result = context_for(tmp_path / "v.db", question, max_seeds=3, hops=0)
        return {n["title"] for n in result["nodes"] if n["why"]["kind"] == "series"}

    assert series_notes() == {"Campaign 4 - Session 01 - Part 1", "Campaign 4 - Session 04 - Part 4"}
    monkeypatch.setattr(retrieve, "of_another", lambda name, neighbour, pairs: False)  # before: Campaign 2's ends too
    assert series_notes() == {"Campaign 4 - Session 01 - Part 1", "Campaign 4 - Session 04 - Part 4",
                              "Campaign 2 - Session 02 - Part 2", "Campaign 2 - Session 04 - Part 4"}


def test_the_frontmatter_links_of_the_note_asked_about_reach_the_llm_as_facts(tmp_path):
    """A vault keeps what an NPC belongs to in frontmatter ("organization: [[The Sable Accord]]"), which the note's
    text need not say: the first note's first PROPERTY_FACTS links come as fact lines; other notes' do not (all of
    them cost Thellade's temporal tier 0.949 -> 0.808 within the budget)."""
    from datasette_okf.retrieve import PROPERTY_FACTS
    from datasette_okf.store import build

    from .conftest import VAULT

    build([VAULT], tmp_path / "v.db", embed=False)
    result = context_for(tmp_path / "v.db", "What does Dagna Forsythe want?", mode="keyword")
    assert result["nodes"][0]["title"] == "Dagna Forsythe"
    lines = [f["text"] for f in result["facts"]]
    for line in ("- Dagna Forsythe organization The Sable Accord", "- Dagna Forsythe organization Black Gulls",
                 "- Dagna Forsythe location Port Vell"):
        assert any(text.startswith(line + " (trust:") for text in lines), line
        assert line in result["context"]
    top = result["nodes"][0]["id"]
    assert all(f["subject_id"] == top for f in result["facts"]) and len(result["facts"]) <= PROPERTY_FACTS
    assert result["params"]["facts"]["property_facts"] == PROPERTY_FACTS


def test_each_frontmatter_key_gets_its_first_link_in_before_any_key_gets_a_second(tmp_path):
    """Thellade's Blackwake Corsairs write `hq`, then 20 `location` links, then `head: [[Varros Darin]]`: the first
    six links were `hq` and five locations, and "Who leads the Blackwake Corsairs?" never read its head."""
    from datasette_okf.retrieve import PROPERTY_FACTS
    from datasette_okf.store import build

    from .conftest import write_bundle

    places = "".join(f"  - \"[[Isle {n}]]\"\n" for n in range(8))
    root = write_bundle(tmp_path / "vault", {
        "Blackwake Corsairs.md": f"---\nhq: \"[[Veilcutter's Refuge]]\"\nlocation:\n{places}head: \"[[Varros Darin]]\"\n"
                                 "steward: \"[[Veyra Torell]]\"\n---\nA smuggling fleet of the outer isles.\n",
        **{f"Isle {n}.md": f"An isle, number {n}.\n" for n in range(8)},
        "Veilcutter's Refuge.md": "A hidden cove.\n", "Varros Darin.md": "The Phantom Admiral.\n",
        "Veyra Torell.md": "Keeps the books.\n",
    })
    build([root], tmp_path / "v.db", embed=False)
    result = context_for(tmp_path / "v.db", "Who leads the Blackwake Corsairs?")
    lines = [f["text"].split(" (trust:")[0] for f in result["facts"]]
    assert lines == ["- Blackwake Corsairs hq Veilcutter's Refuge", "- Blackwake Corsairs location Isle 0",
                     "- Blackwake Corsairs location Isle 1", "- Blackwake Corsairs location Isle 2",
                     "- Blackwake Corsairs head Varros Darin", "- Blackwake Corsairs steward Veyra Torell"]
    assert len(lines) == PROPERTY_FACTS  # the keys' first links, then the second and third of `location`


def test_an_unfilled_templates_links_the_question_asks_for_come_through_the_first_notes_link_to_it(tmp_path):
    """Thellade's High Chancellor has `religion: [[The Pactbound Flame]]`, and The Pactbound Flame is an unfilled
    template whose frontmatter `worship` names Asmodeus and Aevaris: all the vault says of it, and no chunk of it
    can be found. "Which deities are worshipped by the faith …?" reads them as facts after his, and lists the
    template as a note right after his, reached by his `religion` link, so that the LLM can cite where those lines
    come from; a question that does not ask for `worship` does neither."""
    from datasette_okf.store import build

    from .conftest import write_bundle

    root = write_bundle(tmp_path / "vault", {
        "Cedric Thalor.md": "---\nreligion: \"[[The Pactbound Flame]]\"\n---\nThe High Chancellor of Kanda, "
                            "keeper of the sealed manifests.\n",
        "The Pactbound Flame.md": "---\nworship:\n  - \"[[Asmodeus]]\"\nhead: \"[[Cedric Thalor]]\"\n---\n"
                                  "# The Pactbound Flame\n\n## Overview\n",
        "Asmodeus.md": "---\ntype: Deity\n---\nThe lord of contracts.\n",
        "Seralyne Vireth.md": "---\nreligion: \"[[The Pactbound Flame]]\"\n---\n# Seralyne Vireth\n",
    })
    build([root], tmp_path / "v.db", embed=False)
    asked = context_for(tmp_path / "v.db", "Which deities are worshipped by the faith Cedric Thalor belongs to?")
    lines = [f["text"].split(" (trust:")[0] for f in asked["facts"]]
    assert lines == ["- Cedric Thalor religion The Pactbound Flame", "- The Pactbound Flame worship Asmodeus"]
    assert "- The Pactbound Flame worship Asmodeus (trust: unverified)" in asked["context"]
    assert [(n["id"], n["via"]) for n in asked["nodes"][:2]] == [
        ("vault/Cedric Thalor", "seed: title+fts"), ("vault/The Pactbound Flame", "hop 1 via vault/Cedric Thalor (religion)")]
    assert "### The Pactbound Flame (vault/The Pactbound Flame)" in asked["context"]
    plain = context_for(tmp_path / "v.db", "What faith does Cedric Thalor follow?")
    assert [f["text"].split(" (trust:")[0] for f in plain["facts"]] == ["- Cedric Thalor religion The Pactbound Flame"]
    assert "vault/The Pactbound Flame" not in [n["id"] for n in plain["nodes"]]
    named = context_for(tmp_path / "v.db", "Who belongs to The Pactbound Flame?")  # the template offered by name:
    assert "- Seralyne Vireth religion The Pactbound Flame" in named["context"]  # links to it are no read-through
    assert "vault/Seralyne Vireth" not in [n["id"] for n in named["nodes"]]


def test_a_template_read_through_comes_after_the_note_that_links_to_it_and_a_hub_is_not_read(tmp_path, monkeypatch):
    """The link a template is read through may be another template's, not the first note's: "Which organization is
    Tyren Zorath part of?" offered the template Zorath, whose `parentregion` is The Outcast Isles; listing it looked
    for the first note's link and raised KeyError. And The Outcast Isles is a hub (552 links): 38 lines "The Outcast
    Isles organization …" came as facts. A hub template's links are everything, and are not read."""
    from datasette_okf.graph import WalkOptions
    from datasette_okf.retrieve import Node, find_facts, open_query, templates_read_through
    from datasette_okf.store import build

    root = write_bundle(tmp_path / "vault", {
        "Cedric Thalor.md": "---\nreligion: \"[[The Pactbound Flame]]\"\n---\nThe High Chancellor of Kanda.\n",
        "The Pactbound Flame.md": "---\nworship:\n  - \"[[Asmodeus]]\"\n---\n# The Pactbound Flame\n",
        "Asmodeus.md": "---\ntype: Deity\n---\nThe lord of contracts.\n",
        "Seralyne Vireth.md": "---\nreligion: \"[[The Pactbound Flame]]\"\n---\n# Seralyne Vireth\n",
    })
    build([root], tmp_path / "v.db", embed=False)
    query = open_query(tmp_path / "v.db", "Whom does the faith of Seralyne Vireth worship?", ContextOptions())
    query.know(["vault/Asmodeus", "vault/Seralyne Vireth"])
    seed = {"kind": "seed", "ranks": {"title": 1}}
    nodes = [Node(query.concepts["vault/Asmodeus"], 0.05, seed), Node(query.concepts["vault/Seralyne Vireth"], 0.03, seed)]
    facts = find_facts(query, nodes, run=True)
    assert "- The Pactbound Flame worship Asmodeus" in [f["text"].split(" (trust:")[0] for f in facts]
    [listed] = templates_read_through(query, nodes, facts)
    assert (listed.id, listed.score, listed.via) == ("vault/The Pactbound Flame", round(0.03 * WALK_SHARE, 6),
                                                     "hop 1 via vault/Seralyne Vireth (religion)")
    monkeypatch.setattr(WalkOptions, "hub_degree", 3)  # Cedric, Seralyne and Asmodeus: a hub of this bundle
    facts = find_facts(query, nodes, run=True)
    assert not any(f["subject"] == "The Pactbound Flame" for f in facts)
    assert templates_read_through(query, nodes, facts) == []


def test_a_notes_sources_are_cited_not_listed_as_facts_about_it(campaign_db):
    """OKF `sources` say where a note comes from (§5.1): "The Brine Hag sources.resource Session 5 - Kestrel Point"
    took a fact line in the example's own transcript, while the relation it backs already cites it (source: s5)."""
    result = context_for(campaign_db, "Where does Mother Brackwater live?")
    assert result["nodes"][0]["id"] == "campaign/monsters/brine-hag"
    assert "sources.resource" not in result["context"] and not any(
        f["predicate"].startswith("sources") for f in result["facts"])
    assert "- The Brine Hag lairs_in The Sump (trust: unverified, source: s5)" in result["context"]


def test_the_log_answers_history_questions_with_its_dated_entry(campaign_db):
    """log.md is a note of its own (type Log), one chunk a dated entry: 'when was it deprecated?' finds the entry."""
    result = context_for(campaign_db, "On what date was Orrin Kell retired and merged into someone else, per the log?")
    assert "campaign/log" in [n["id"] for n in result["nodes"]]
    assert "#### 2026-03-29\n* **Update**: Wrote up Session 2." in result["context"]  # the entry, under its date
    assert "Deprecation**: Retired Orrin Kell; merged into Teodor Vask." in result["context"]  # links as their text


def _walked(db, question: str, options: ContextOptions):
    """A question's first stages, as context_for runs them: (query, fused lists, seeds, the walk's arrivals)."""
    from datasette_okf.retrieve import find_seeds, open_query, pick_seeds, walk

    query = open_query(db, question, options)
    fused = find_seeds(query)
    seeds = pick_seeds(query, fused)
    return query, fused, seeds, walk(query, seeds, fused)


def test_a_note_several_seeds_chunks_name_goes_to_the_seed_where_it_stands_highest(tmp_path):
    """13th-Age-check7's tai29: the void dragon's and the huge black dragon's stat blocks both say "escalation die".
    From the first, whose linked neighbours come first, the rule stood behind them all and lost the budget's last
    place by 0.00003; from the second, with nothing walked, it is that seed's first arrival."""
    from datasette_okf.retrieve import mentioned
    from datasette_okf.store import build

    files = {
        "Monsters/Skin Devil.md": "A [[Devil]] that wears stolen skins.\n\nThe skin devil heals 5 hit points at the start "
                                  "of each of its turns. While the skin devil is staggered, it stops healing.\n",
        "Monsters/Flesh Devil.md": "A devil of raw flesh.\n\nThe flesh devil heals 5 hit points at the start of each of its "
                                   "turns. While the flesh devil is staggered, it stops healing.\n",
        "Monsters/Devil.md": "Devils come from the hells and bargain for souls.\n",
        "Rules/Staggered.md": "A creature is staggered when its hit points fall to half its maximum or lower.\n",
    }
    build([write_bundle(tmp_path / "vault", files)], tmp_path / "v.db")
    question = "We're fighting a skin devil and a flesh devil. When do they stop healing, as their hit points fall?"
    query, fused, seeds, walked = _walked(tmp_path / "v.db", question, ContextOptions(max_seeds=2))
    assert sorted(s.id for s in seeds) == ["vault/Monsters/Flesh Devil", "vault/Monsters/Skin Devil"]
    assert [(w.id, w.seed) for w in walked] == [("vault/Monsters/Devil", "vault/Monsters/Skin Devil")]
    [arrival] = mentioned(query, seeds, fused, walked)
    chunks = json.loads(query.params["mentioned"]["chunks"])
    assert all("staggered" in chunk for _, chunk, _ in chunks)  # both seeds' chunks name it
    assert (arrival.id, arrival.via, arrival.nth) == ("vault/Rules/Staggered", "vault/Monsters/Flesh Devil", 1)


def test_a_note_the_top_seeds_chunk_names_without_a_link_is_walked_to_as_a_mention(tmp_path, monkeypatch):
    """13th-Age-check7's tai28: the skin devil's stat block says "while the skin devil is staggered", never
    [[Staggered]], and no list ranked the rule. The note the top seed's nearest chunk names by title, nearest the
    question, comes as the walk's arrival by mention (hop 1, after the seed's linked neighbours), when its best chunk
    is at least MENTION_FLOOR similar to the question (the real default model here)."""
    from datasette_okf import retrieve
    from datasette_okf.retrieve import MENTION_FLOOR, find_seeds, mentioned, open_query, pick_seeds, walk
    from datasette_okf.store import build

    files = {
        "Monsters/Skin Devil.md": "A [[Devil]] that wears stolen skins.\n\nThe skin devil heals 5 hit points at the start "
                                  "of each of its turns. While the skin devil is staggered, it stops healing.\n",
        "Monsters/Devil.md": "Devils come from the hells and bargain for souls. A devil's recoveries are spent in the hells.\n",
        "Rules/Staggered.md": "A creature is staggered when its hit points fall to half its maximum or lower.\n",
        "Rules/Recoveries.md": "Recoveries heal characters between fights.\n",
    }
    build([write_bundle(tmp_path / "vault", files)], tmp_path / "v.db")
    question = "We're fighting a skin devil. What changes once we knock it down to half its hit points?"
    query, fused, seeds, walked = _walked(tmp_path / "v.db", question, ContextOptions(max_seeds=1))
    assert [s.id for s in seeds] == ["vault/Monsters/Skin Devil"]
    assert [w.id for w in walked] == ["vault/Monsters/Devil"]  # its link
    [arrival] = mentioned(query, seeds, fused, walked)
    assert (arrival.id, arrival.via, arrival.kind, arrival.predicate, arrival.hop, arrival.nth) == (
        "vault/Rules/Staggered", "vault/Monsters/Skin Devil", "mention", "mentions", 1, 2)  # after the link
    assert arrival.similarity >= MENTION_FLOOR
    assert query.sql["mentioned"] == retrieve.MENTIONED_SQL
    [[seed, chunk, bundle]] = json.loads(query.params["mentioned"]["chunks"])  # the whole chunk, the seed's bundle
    assert (seed, bundle) == ("vault/Monsters/Skin Devil", "vault") and chunk.startswith("A Devil that wears")
    assert all(a.id != "vault/Rules/Staggered" for a in mentioned(query, seeds, fused, [*walked, arrival]))  # not again
    monkeypatch.setattr(retrieve, "MENTION_FLOOR", 0.99)
    assert mentioned(query, seeds, fused, walked) == []  # not similar enough to the question
    monkeypatch.undo()
    # hybrid reads its first seeds' chunks (MENTION_SEEDS), one name each, in one statement; graph-walk its first
    asked = question + " And how do devils heal?"
    two = open_query(tmp_path / "v.db", asked, ContextOptions(max_seeds=2))
    fused = find_seeds(two)
    seeds = pick_seeds(two, fused)
    assert [s.id for s in seeds] == ["vault/Monsters/Skin Devil", "vault/Monsters/Devil"]
    assert [(a.id, a.via) for a in mentioned(two, seeds, fused, walk(two, seeds, fused))] == [
        ("vault/Rules/Staggered", "vault/Monsters/Skin Devil"), ("vault/Rules/Recoveries", "vault/Monsters/Devil")]
    assert [seed for seed, _, _ in json.loads(two.params["mentioned"]["chunks"])] == [s.id for s in seeds]
    one = open_query(tmp_path / "v.db", asked, ContextOptions(mode="graph-walk"))
    fused = find_seeds(one)
    seeds = pick_seeds(one, fused)
    mentioned(one, seeds, fused, [])
    assert len(seeds) > 1 and len(json.loads(one.params["mentioned"]["chunks"])) == 1  # one seed's chunk read
    result = context_for(tmp_path / "v.db", question, max_seeds=1, mode="graph-walk")
    assert "mentioned" in result["sql"]
    assert {n["via"] for n in result["nodes"] if n["why"].get("predicate") == "mentions"} <= {
        "hop 1 via vault/Monsters/Skin Devil (mentions)"}


def test_a_second_round_through_the_top_seeds_best_chunk_adds_what_the_question_only_implies(campaign_db):
    """The bridge round (docs/design.md §2.8): the notes the question plus the top seed's best chunk names, that the
    first round missed, join below its seeds, and say so."""
    result = context_for(campaign_db, BERT)
    bridged = [s for s in result["seeds"] if s["bridged_from"]]
    assert bridged and all(s["bridged_from"] == result["seeds"][0]["id"] for s in bridged)
    params = result["params"]["bridge"]
    assert params["bridge"].startswith(BERT + "\n") and params["question"] == BERT  # the question, then the chunk
    assert "okf_embed(:bridge)" not in result["sql"]["bridge"]  # by names, ordered by the question's own vector
    rows = connection(campaign_db).execute(result["sql"]["bridge"], params).fetchall()
    assert [row[0] for row in rows] == [s["id"] for s in bridged]
    assert [row[2] for row in rows] == sorted((row[2] for row in rows), reverse=True)  # nearest the question first
    assert not {s["id"] for s in bridged} & set(json.loads(params["known"]))  # none the first round found
    first_round = [s for s in result["seeds"] if not s["bridged_from"]]
    assert first_round[0]["ranks"]["title"]  # the question names Bert: what his note names comes right after it
    scores = [first_round[0]["rrf"], *(s["rrf"] for s in bridged), first_round[1]["rrf"]]
    assert scores == sorted(scores, reverse=True) and len(set(scores)) == len(scores)
    assert [n["id"] for n in result["nodes"]][1] == bridged[0]["id"]
    strengths = json.loads(result["params"]["walk"]["seed_strengths"])  # its neighbours stay a second-round lead's,
    assert all(strengths[s["id"]] < WALK_SHARE * min(f["rrf"] for f in first_round) for s in bridged)  # 2 steps out
    assert all(strengths[f["id"]] == f["rrf"] for f in first_round)
    unnamed = context_for(campaign_db, "Who secretly pays off the harbour sergeants?")  # names no note
    below = [s for s in unnamed["seeds"] if s["bridged_from"]]
    assert below and not unnamed["seeds"][0]["ranks"]["title"]
    assert max(s["rrf"] for s in below) < min(s["rrf"] for s in unnamed["seeds"] if not s["bridged_from"])
    nodes = {n["id"]: n for n in result["nodes"]}
    assert any("(second round, through" in nodes[s["id"]]["via"] for s in bridged if s["id"] in nodes)
    keyword = context_for(campaign_db, BERT, mode="keyword")
    assert "bridge" not in keyword["sql"]  # the second round is hybrid's


def test_second_round_notes_come_after_every_note_the_question_names(campaign_db):
    """A question naming two notes is about both: what the first one's chunk names (the Old Lighthouse's neighbours)
    comes after the second named note, not between them."""
    result = context_for(campaign_db, "Who works at the Old Lighthouse with Dagna Forsythe?")
    first_round = [s for s in result["seeds"] if not s["bridged_from"]]
    bridged = [s for s in result["seeds"] if s["bridged_from"]]
    assert bridged and [bool(s["ranks"]["title"]) for s in first_round[:3]] == [True, True, False]
    scores = [first_round[1]["rrf"], *(s["rrf"] for s in bridged), first_round[2]["rrf"]]
    assert scores == sorted(scores, reverse=True) and len(set(scores)) == len(scores)
    assert [n["id"] for n in result["nodes"]][:2] == [s["id"] for s in first_round[:2]]


def test_the_second_round_reads_the_names_once_not_once_a_note(tmp_path, monkeypatch):
    """Without vectors the planner read every note of the bundle first and asked okf_title_names once a note: 25 ms
    a question on the Thellade vault. The bridge statement now asks once."""
    from datasette_okf import titles
    from datasette_okf.store import build

    files = {f"People/Sailor {n}.md": f"# Sailor {n}\nSailor {n} crews the Gull out of Port Vell.\n" for n in range(40)}
    files["Ships/Gull.md"] = "# Gull\nThe Gull is a fishing boat. Its captain is [[Maren Holt]].\n"
    files["People/Maren Holt.md"] = "# Maren Holt\nCaptain of the Gull, born in Kestrel Point.\n"
    build([write_bundle(tmp_path / "port", files)], tmp_path / "port.db", embed=False)
    finds = []
    find = titles.TitleIndex.find
    monkeypatch.setattr(titles.TitleIndex, "find", lambda self, text, *a, **k: finds.append(text) or find(self, text, *a, **k))
    result = context_for(tmp_path / "port.db", "Where was the captain of the Gull fishing boat born?")
    assert "bridge" in result["sql"]
    assert sum(text.startswith(result["question"] + "\n") for text in finds) == 1  # the bridge text, read once


def test_the_second_round_reads_no_date_field(tmp_path):
    """Thellade's session notes open on "**Time:** 04 Dawnmarch, 212 PR": read as a bridge, the date named the
    calendar's month note Dawnmarch, a second-round seed in the place of the faction the question was after (th35).
    A `Date:`/`Time:` field says when, not who; the rest of the chunk is read as before."""
    from datasette_okf.store import build

    from .conftest import write_bundle

    root = write_bundle(tmp_path / "vault", {
        "Sessions/Session 05.md": "**Time:** 04 Dawnmarch, 212 PR\n**Location:** Sanctum of the Dawnsplit Crown\n\n"
                                  "The party rested beneath the stained glass while the Veilbound Circle watched.\n",
        "Calendar/Dawnmarch.md": "The first month of spring.\n",
        "Factions/Veilbound Circle.md": "A circle of binders sworn to the old seals.\n",
    })
    build([root], tmp_path / "v.db", embed=False)
    result = context_for(tmp_path / "v.db", "Where did the party rest beneath the stained glass?")
    assert result["seeds"][0]["id"] == "vault/Sessions/Session 05"
    bridge = result["params"]["bridge"]["bridge"]
    assert "Dawnmarch" not in bridge and "Sanctum of the Dawnsplit Crown" in bridge
    bridged = [s["id"] for s in result["seeds"] if s["bridged_from"]]
    assert "vault/Factions/Veilbound Circle" in bridged and "vault/Calendar/Dawnmarch" not in bridged


def test_the_second_round_reads_the_bridge_chunks_line_closest_to_the_question(tmp_path):
    """A stat block opens with 80-odd words of layout, size and level; the line that names what the question asks
    next ("When the escalation die reaches 6…", 13th Age ta40) came after the 60 words the second round read."""
    from datasette_okf.retrieve import BRIDGE_WORDS, bridge_words
    from datasette_okf.store import build

    from .conftest import write_bundle

    layout = "\n".join(f"field{n}: value {n} of the layout" for n in range(20))
    root = write_bundle(tmp_path / "vault", {
        "Bestiary/Chaos Glorp.md": f"```statblock\n{layout}\n- name: Spontaneous chaos\n  desc: When the escalation "
                                   "die reaches 6, the chaos glorp rolls a normal save and turns into a beast.\n```\n",
        "Rules/Escalation Die.md": "The escalation die starts at 1 in the second round and goes up by 1 each round.\n",
    })
    build([root], tmp_path / "v.db", embed=False)
    question = "When can a chaos glorp first roll to turn into something bigger?"
    result = context_for(tmp_path / "v.db", question)
    assert result["seeds"][0]["id"] == "vault/Bestiary/Chaos Glorp"
    read = result["params"]["bridge"]["bridge"]
    assert read.endswith("When the escalation die reaches 6, the chaos glorp rolls a normal save and turns into a beast.")
    assert "vault/Rules/Escalation Die" in [s["id"] for s in result["seeds"] if s["bridged_from"]]
    short = "The glorp rolls a save.\nIts oozespasm hurts."  # the closest line already read: read once
    assert bridge_words("What does the glorp roll?", short) == " ".join(short.split())
    long = " ".join(["word"] * 100)
    assert bridge_words("What does the glorp roll?", long) == " ".join(["word"] * BRIDGE_WORDS)


def test_the_second_round_names_notes_of_the_bridge_chunks_own_bundle(tmp_path):
    """OKF §2: a bundle is self-contained, so a name in its note is its own. With four catalogs in one database,
    a Bitcoin block's "miner fee revenue" named Acme's metric "Revenue", and the LLM was handed Acme's revenue
    policy for a question on joining blocks to transactions."""
    from datasette_okf.store import build

    from .conftest import write_bundle

    chain = write_bundle(tmp_path / "chain", {
        "tables/blocks.md": "---\ntype: Table\ntitle: Blocks\n---\nEach block pays the miner fee revenue through "
                            "its coinbase, recorded with the transactions it holds.\n",
        "tables/transactions.md": "---\ntype: Table\ntitle: Transactions\n---\nOne row per payment.\n",
    })
    shop = write_bundle(tmp_path / "shop", {
        "metrics/revenue.md": "---\ntype: Metric\ntitle: Revenue\n---\nRecognized sales of delivered orders.\n",
    })
    build([chain, shop], tmp_path / "two.db", embed=False)
    result = context_for(tmp_path / "two.db", "How does each block pay its miner?")
    assert result["seeds"][0]["id"] == "chain/tables/blocks"
    assert "revenue" in result["params"]["bridge"]["bridge"]  # the chunk says the word…
    bridged = [s["id"] for s in result["seeds"] if s["bridged_from"]]
    assert bridged == ["chain/tables/transactions"]  # …but only its own bundle's names are read


def test_the_gate_weighs_the_same_evidence_in_every_mode(campaign_db):
    """A question is confident or not whatever the mode: what a mode's lists did not look at, the gate looks up."""
    for question in ("Who does the Tinker work for?", "How do I descale an espresso machine?",
                     "Roughly how many people live in the harbour city of the campaign?"):
        verdicts = {mode: context_for(campaign_db, question, mode=mode)["confident"] for mode in MODES}
        assert len(set(verdicts.values())) == 1, (question, verdicts)


def test_a_hedged_question_about_the_setting_is_answered_in_every_mode(campaign_db):
    """The example's q06, refused before in every mode: "roughly" counted as a word Port Vell lacks."""
    for mode in MODES:
        result = context_for(campaign_db, "Roughly how many people live in the city where the campaign is set?", mode=mode)
        assert result["confident"] and "covers 60%" in result["reason"], mode
        assert "campaign/places/port-vell" in [n["id"] for n in result["nodes"]], mode


def test_a_name_no_note_mentions_is_rejected_in_every_mode_unless_a_title_is_named(campaign_db):
    """Out-of-bundle questions share the bundle's words ("monsters", "harbour") but name something it does not
    know; a capitalised title the question names still vouches for it (a typo, another spelling elsewhere)."""
    for mode in MODES:
        rejected = context_for(campaign_db, "Which monsters haunt the harbour of Waterdeep?", mode=mode)
        assert not rejected["confident"] and rejected["nodes"] == []
        assert rejected["reason"] == "the question names Waterdeep, which no note mentions"
        assert "names" in rejected["sql"]
        named = context_for(campaign_db, "Has Nessa Thorne ever sailed to Waterdeep?", mode=mode)
        assert named["confident"] and "people/nessa-thorne" in ids(named)
        first = context_for(campaign_db, "Nessa Thorne sailed to Waterdeep once, didn't she?", mode=mode)
        assert first["confident"] and "people/nessa-thorne" in ids(first)  # a name may start the question
    assert context_for(campaign_db, "Which monsters haunt the harbour?")["confident"]  # the bundle's own words


def test_a_title_is_named_without_its_qualifier_and_vouches_only_when_written_as_a_name(tmp_path):
    """hotpotqa-mini refused "Are both magazines, the Woman's Viewpoint and Pick Me Up, British publications?" (no
    title named: its notes end in "(magazine)"). Matching the name without the brackets must not let "the Stack
    Overflow posts tables" vouch for an unknown "Snowflake": "posts" is not written as a name."""
    from datasette_okf.store import build

    from .conftest import write_bundle

    root = write_bundle(tmp_path / "wiki", {
        "Woman's Viewpoint (magazine).md": "---\ntype: Magazine\n---\nA British women's magazine of the 1920s.\n",
        "Pick Me Up (magazine).md": "---\ntype: Magazine\n---\nA British weekly humour magazine.\n",
        "Stack Overflow Posts (Deprecated).md": "---\ntype: Table\n---\nOne row per post; use the split tables.\n",
    })
    build([root], tmp_path / "wiki.db", embed=False)
    both = context_for(tmp_path / "wiki.db", "Are both magazines, the Woman's Viewpoint and Pick Me Up, British publications?",
                       mode="keyword")
    assert both["confident"] and both["reason"] == "the question names a concept's title or alias"
    assert {"wiki/Woman's Viewpoint (magazine)", "wiki/Pick Me Up (magazine)"} <= set(ids(both))
    other = context_for(tmp_path / "wiki.db", "What Snowflake warehouse size suits the Stack Overflow posts tables?",
                        mode="keyword")
    assert not other["confident"] and other["reason"] == "the question names Snowflake, which no note mentions"
    typo = context_for(tmp_path / "wiki.db", "Which rows of Stack Overflow Posts did Snowfake keep?", mode="keyword")
    assert typo["confident"] and "wiki/Stack Overflow Posts (Deprecated)" in ids(typo)


def test_the_gate_uses_the_bundles_own_calibration(campaign_db):
    """The build calibrates the vector threshold on off-topic questions (calibrate.py); the gate uses it unless
    the caller sets one."""
    from datasette_okf.calibrate import BOUNDS, METHOD
    from datasette_okf.schema import read_meta

    conn = connection(campaign_db)
    gate = json.loads(read_meta(conn)["gate"])
    assert gate["method"] == METHOD and BOUNDS[0] <= gate["vector_threshold"] <= BOUNDS[1]
    assert gate["off_topic"]["p95"] <= gate["vector_threshold"] and gate["chunks"] > 100
    # 0.03 above the nearest off-topic question (0.05 until stop 44 refused Thellade questions at 0.43-0.44, §3.1)
    assert gate["vector_threshold"] == round(gate["off_topic"]["max"] + 0.03, 4)
    rejected = context_for(conn, "How do I descale an espresso machine?")
    assert f"below {gate['vector_threshold']:.2f}" in rejected["reason"]
    assert "below 0.90" in context_for(conn, "How do I descale an espresso machine?", vector_threshold=0.9)["reason"]


def test_a_note_two_hops_out_never_outranks_the_note_it_is_reached_through(campaign_db):
    """Paths, not points: a hop-2 note scores at most its parent's score in the walk statement."""
    result = context_for(campaign_db, BERT, hops=2)
    conn = connection(campaign_db)
    rows = conn.execute(result["sql"]["walk"].replace("limit :cap", "limit 1000"), result["params"]["walk"]).fetchall()
    score = {json.loads(arrival)["id"]: value for arrival, _, _, value, _ in rows}
    hop2 = [json.loads(arrival) for arrival, *_ in rows if json.loads(arrival)["hop"] == 2]
    assert hop2 and all(score[a["id"]] <= score[a["via"]] for a in hop2 if a["via"] in score)


def test_the_budget_packs_the_section_nearest_the_question_not_the_first(tmp_path):
    """Before: a note found without its own KNN hit (here by keyword) was packed in reading order, so a tight
    budget got its "Description" and not the "Overview" holding the answer."""
    from datasette_okf.store import build

    from .conftest import write_bundle

    looks = " ".join(["A tall woman in a grey salt-stained coat, a silver whistle on a cord, boots patched twice."] * 6)
    root = write_bundle(tmp_path / "port", {
        "Harbour Master.md": f"---\ntype: Person\n---\n## Description\n{looks}\n\n## Overview\n"
                             "She collects the mooring tax from every ship at dawn and keeps the ledger of debts.\n",
        "Docks.md": "---\ntype: Place\n---\nThe docks, where the [Harbour Master](Harbour%20Master.md) works.\n",
    })
    build([root], tmp_path / "port.db")  # the real default model
    for mode in ("keyword", "hybrid"):
        result = context_for(tmp_path / "port.db", "Who collects the mooring tax from ships at dawn?", mode=mode, budget=200)
        assert "She collects the mooring tax" in result["context"], mode
        assert "#### Description" not in result["context"], mode  # the first section did not fit as well


def _two_notes_for_a_tight_budget(tmp_path):
    """A short note that answers, and a long one whose first sentence matters and whose end cannot fit."""
    from datasette_okf.store import build

    from .conftest import write_bundle

    filler = " ".join(["Each entry lists the ship, the berth and the coin paid, in a small cramped hand."] * 6)
    root = write_bundle(tmp_path / "port", {
        "Harbour Master.md": "---\ntype: Person\n---\nShe collects the mooring tax from every ship at dawn.\n",
        "Tax Ledger.md": "---\ntype: Item\n---\nThe mooring tax ledger is kept in the customs house.\n"
                         f"{filler}\nThe last page is torn out.\n",
    })
    build([root], tmp_path / "port.db", embed=False)
    return tmp_path / "port.db"


def test_the_first_note_that_does_not_fit_whole_comes_cut_within_the_budget(tmp_path):
    """Before: a note that did not fit whole was left out even with 80 tokens to spare, so the context never said it
    existed (Thellade's th35 in vector:10: the note naming the Order of Silent Echos)."""
    from datasette_okf.render import CUT_MARK, estimate_tokens

    db = _two_notes_for_a_tight_budget(tmp_path)
    question = "Who collects the mooring tax at dawn, and where is its ledger kept?"
    whole = context_for(db, question, mode="keyword", budget=2000)
    assert ids(whole)[:2] == ["port/Harbour Master", "port/Tax Ledger"] and CUT_MARK not in whole["context"]
    tight = context_for(db, question, mode="keyword", budget=160)
    assert ids(tight) == ["port/Harbour Master", "port/Tax Ledger"]
    assert [n["cut"] for n in tight["nodes"]] == [False, True]
    assert "The mooring tax ledger is kept in the customs house." in tight["context"]
    assert tight["context"].endswith(CUT_MARK) and "The last page is torn out." not in tight["context"]
    assert estimate_tokens(tight["context"]) <= 160
    tighter = context_for(db, question, mode="keyword", budget=100)  # under CUT_ROOM tokens left for it: not cut
    assert ids(tighter) == ["port/Harbour Master"] and CUT_MARK not in tighter["context"]


def test_the_first_walked_note_that_does_not_fit_in_the_notes_share_comes_whole_from_the_rest(tmp_path):
    """Before: a seed's link the walk ranked high came cut, or not at all, when the notes' share was spent, and small
    notes below it took its room (13th-Age-check6's tah16: the Bearded Devil's "devil abilities" table, 9th of the
    notes, lost to a 31-token note and a 13-token one). The first walked note that does not fit there is set aside
    and comes whole from the last quarter of the budget (a seed that does not fit still comes cut: the test above)."""
    from datasette_okf.render import CUT_MARK, estimate_tokens
    from datasette_okf.store import build

    from .conftest import write_bundle

    duties = " ".join(["She walks the quay with a lantern and counts the hulls against the harbour roll."] * 14)
    rules = " ".join(["Every captain signs for the berth and pays before the tide turns, in coin or in kind."] * 14)
    rows = " ".join(["Each line names the ship, the berth, the cargo and the coin paid, in a cramped hand."] * 4)
    root = write_bundle(tmp_path / "port", {
        "Harbour Master.md": f"---\ntype: Person\n---\n## At dawn\nAt dawn the Harbour Master opens the harbour. "
                             f"{duties}\n\n## Dues\nDues go in the [Customs Book](Customs%20Book.md). {rules}\n",
        "Customs Book.md": f"---\ntype: Item\n---\nKept in the customs house. {rows}\nThe last page is torn out.\n",
    })
    build([root], tmp_path / "port.db", embed=False)
    question = "What does the Harbour Master do at dawn?"
    result = context_for(tmp_path / "port.db", question, mode="hybrid", budget=550)  # the notes' share: 412
    assert [(n["title"], n["via"].split(" ")[0]) for n in result["nodes"]] == [
        ("Harbour Master", "seed:"), ("Customs Book", "hop")]
    assert "The last page is torn out." in result["context"] and CUT_MARK not in result["context"]
    assert estimate_tokens(result["context"]) <= 550


def test_the_first_notes_section_holding_what_the_question_asks_is_what_the_llm_reads(tmp_path, monkeypatch):
    """On a database built from the Thellade vault, "Which cleric was entrusted with the infant Kothar?" handed the
    LLM Kothar's prophecy, nearer the question in cosine, and not the section naming the cleric. The first note's
    best section is now chosen with the question's words too, its own name's left out (every section is Kothar's)."""
    from datasette_okf import retrieve
    from datasette_okf.store import build

    heritage = ("Kothar is an Aasimar Nephilim, god-touched by the sun god Aurion at birth. He was entrusted to the "
                "dwarven cleric Mirik Brightgaze, whose prophetic visions foretold: \"The tyrant's name will be "
                "unspoken, his mirror shall rise in flame.\" His divine essence is restorative, meant to reignite "
                "the broken path of the lizardfolk and their drowned sun temples.")
    prophecy = ("Kothar is not only a redeemer: he is a living trial sent to undo the sins of his ancestor. The tyrant "
                "still lingers in stasis beneath the mangrove crypts, and the boy who bears the mirror of his name "
                "will either redeem the bloodline or finish its ruin.")
    files = {"Kothar.md": f"---\ntype: Person\n---\n# Kothar\n\n## Prophecy and Arc\n{prophecy}\n\n"
                          f"## Divine Heritage\n{heritage}\n"}
    files.update({f"Sailor {n}.md": f"# Sailor {n}\nSailor {n} crews a fishing boat out of the harbour.\n"
                  for n in range(3)})
    build([write_bundle(tmp_path / "heroes", files)], tmp_path / "heroes.db")  # the real default model
    question = "Who was Kothar entrusted to as a baby?"
    for mode in ("hybrid", "vector", "keyword"):
        result = context_for(tmp_path / "heroes.db", question, mode=mode, budget=200)  # notes within 150
        assert result["nodes"][0]["title"] == "Kothar" and "Mirik Brightgaze" in result["context"], mode
        assert result["params"]["sections"]["asked"] == "entrusted baby"
    monkeypatch.setattr(retrieve, "COVERAGE_WEIGHT", 0.0)  # by cosine alone: the prophecy
    assert "Mirik Brightgaze" not in context_for(tmp_path / "heroes.db", question, budget=200)["context"]


def test_a_lists_clear_leader_takes_a_seed_place_the_fusion_gave_to_title_matches(tmp_path):
    """13th Age, a question written after the tuning: BM25's first note for "…the briar elves' rooted thorn-vine
    mooks…" was the Barbed Vines stat block, 42 % ahead of the second, yet reciprocal rank fusion (ranks, not scores)
    put it 16th, behind six notes the question names by title. A list's first note that far ahead of its second
    takes the last seed place; one only a little ahead does not."""
    from datasette_okf.retrieve import LEAD_BM25, _fusion_sql
    from datasette_okf.store import build

    from .conftest import write_bundle

    files = {f"Rules/{name}.md": f"# {name}\nThe {name.lower()} rule, see the rulebook.\n"
             for name in ("Escalation Die", "Briar Elves", "Mooks", "Wizard", "Melee", "Nearby")}
    files["Bestiary/Barbed Vines.md"] = ("# Barbed Vines\nRooted thorn-vine mooks of the briar elves. The thorn-vine "
                                         "lashes a nearby wizard; rooted, it never moves into melee.\n")
    build([write_bundle(tmp_path / "srd", files)], tmp_path / "srd.db", embed=False)
    question = "With the escalation die at 2, can the briar elves' rooted thorn-vine mooks hit our wizard nearby but not in melee?"
    result = context_for(tmp_path / "srd.db", question)
    seeds = [s["title"] for s in result["seeds"] if not s["bridged_from"]]  # the first round's
    assert len(seeds) == 5 and seeds[-1] == "Barbed Vines"
    vines = next(n for n in result["nodes"] if n["title"] == "Barbed Vines")
    assert vines["via"] == "seed: fts, its list's clear first"  # why a note with so low a score is a seed
    lists = ("title", "fts", "dated")  # without vectors
    assert result["sql"]["seeds"] == _fusion_sql(lists, {}, vectors=False) and result["params"]["seeds"]["seats"] == 5
    rows = connection(tmp_path / "srd.db").execute(result["sql"]["seeds"], result["params"]["seeds"]).fetchall()
    leader = next(row for row in rows if row[0].endswith("Barbed Vines"))
    assert leader[1:4] == (None, 1, None) and leader[-2:] == (1, 1)  # BM25's first, no title: by rank it came sixth
    assert sorted(row[4] for row in rows)[-6] > leader[4]
    # a second note nearly as good: no clear leader, and the fusion's order stands
    files["Bestiary/Thorn Lasher.md"] = files["Bestiary/Barbed Vines.md"].replace("Barbed Vines", "Thorn Lasher")
    build([write_bundle(tmp_path / "srd", files)], tmp_path / "srd.db", embed=False)
    assert LEAD_BM25 > 1.0
    again = context_for(tmp_path / "srd.db", question)["seeds"]
    assert {"Barbed Vines", "Thorn Lasher"}.isdisjoint(s["title"] for s in again if not s["bridged_from"])


def test_the_vector_lists_first_note_leads_when_it_is_clearly_nearer_than_the_second():
    """The vector list's leader, as the seeds statement reads it: "an unseen foe" was 0.52 near 13th Age's
    Invisibility rule and 0.47 near the next note (a lead of 0.05); a lead under LEAD_SIMILARITY is none."""
    import sqlite3

    from datasette_okf.retrieve import LEAD_SIMILARITY, LEADERS

    def leader(first, second):
        conn = sqlite3.connect(":memory:")
        conn.execute("create table vector (id, rank, similarity)")
        conn.executemany("insert into vector values (?, ?, ?)", [("a", 1, first), ("b", 2, second)])
        return conn.execute(LEADERS["vector"], {"lead_similarity": LEAD_SIMILARITY}).fetchall()

    assert leader(0.52, 0.467) == [("a",)]
    assert leader(0.615, 0.588) == []  # Thellade's th35: a lead of 0.027, and its first note was not needed


def test_the_budgets_last_quarter_gives_every_seed_its_next_section_in_turn(tmp_path):
    """The last quarter of the budget shows more of the seeds: each seed's second section before any seed's third.
    One seed after another gave a long note its every section and the next seed none (Thellade-check, stop 37:
    7 fewer answer quotes of 343 that way)."""
    from datasette_okf.store import build

    from .conftest import write_bundle

    def ledger(name):
        return "---\ntype: Record\n---\n" + "".join(
            f"## {part}\nThe {name} harbour tax ledger, {part.lower()} page: entries of ships and coin.\n"
            for part in ("One", "Two", "Three"))

    build([write_bundle(tmp_path / "port", {"Alpha.md": ledger("Alpha"), "Beta.md": ledger("Beta")})],
          tmp_path / "port.db", embed=False)
    result = context_for(tmp_path / "port.db", "Where is the harbour tax ledger kept?", budget=135)
    assert [n["title"] for n in result["nodes"]] == ["Alpha", "Beta"]
    shown = [f"{name} {page}" for name in ("Alpha", "Beta") for page in ("one", "two", "three")
             if f"The {name} harbour tax ledger, {page} page" in result["context"]]
    assert shown == ["Alpha one", "Alpha two", "Beta one", "Beta two"]  # not Alpha's third before Beta's second


def test_the_note_two_lists_agree_on_comes_with_its_two_nearest_sections(tmp_path, monkeypatch):
    """Thellade's th01: the Mooring Flagon was the first note, found by keyword and vector, but the LLM read only its
    services table; "There are nine exits. Only two are visible." was its second section, and every other note's
    best section came before it. A note only one list found is a guess: it gets one section, like the rest, while
    notes are chosen; its next comes only in the budget's last quarter, after every note (NOTES_SHARE)."""
    from datasette_okf import retrieve
    from datasette_okf.store import build

    from .conftest import write_bundle

    filler = " ".join(["Sailors drink there after the tide turns, and the floor is sticky with spilled ale."] * 3)
    cellar = " ".join(["The cellar floods at spring tide and the back stair creaks under any weight."] * 3)
    files = {f"Taverns/Tavern {n}.md": f"# Tavern {n}\nAle and a fixer for hire at Tavern {n}. {filler}\n"
             for n in range(12)}
    files["Taverns/Mooring Flagon.md"] = ("# Mooring Flagon\n## Services\nAle, a rough cot and a fixer for hire at the "
                                          "Mooring Flagon tavern.\n## Notes\nThere are nine exits. Only two are "
                                          f"visible. {cellar}\n")
    build([write_bundle(tmp_path / "port", files)], tmp_path / "port.db", embed=False)
    named = context_for(tmp_path / "port.db", "How many exits does the Mooring Flagon tavern have?", budget=400)
    assert named["nodes"][0]["title"] == "Mooring Flagon" and named["nodes"][0]["via"] == "seed: title+fts"
    flagon = named["context"].split("### Mooring Flagon")[1].split("\n### ")[0]
    assert flagon.index("#### Services") < flagon.index("There are nine exits.")  # nearest first, then the next
    assert len(named["nodes"]) > 2  # …and still room for other notes
    guessed = context_for(tmp_path / "port.db", "Where can I get a rough cot and a fixer?", budget=400)
    assert guessed["nodes"][0]["title"] == "Mooring Flagon" and guessed["nodes"][0]["via"] == "seed: fts"
    flagon = guessed["context"].split("### Mooring Flagon")[1].split("\n### ")[0]
    assert flagon.index("#### Services") < flagon.index("There are nine exits.")  # in the last quarter
    monkeypatch.setattr(retrieve, "NOTES_SHARE", 1.0)  # the whole budget to notes: the guess gets one section
    assert "nine exits" not in context_for(tmp_path / "port.db", "Where can I get a rough cot and a fixer?",
                                           budget=400)["context"]


def test_an_unfilled_template_the_question_is_about_comes_first_with_its_links_as_facts(tmp_path):
    """Most of Thellade's NPCs are unfilled templates whose frontmatter links are all the vault says of them
    (docs/design.md §2.6): "Which organization does Bragan Holt work for?" was refused ("no title named"), though
    his `organization` names The Red Runners. Named by the question, and mentioned by no note found with text of
    its own, he now comes first, his links as facts, and the walk reaches the organization's note."""
    from datasette_okf.store import build

    from .conftest import write_bundle

    root = write_bundle(tmp_path / "vault", {
        "NPCs/Bragan Holt.md": "---\naliases:\n  - Captain Bragan 'Two-Tooth' Holt\norganization:\n"
                               "  - \"[[The Red Runners]]\"\n"
                               "location:\n  - \"[[The Ember Wharf]]\"\n---\n",
        "NPCs/Brenni Holt.md": "A cheerful halfling assistant at Thimble & Thread, devoted to her work.\n",
        "Factions/The Red Runners.md": "A militarized syndicate of smugglers and thieves out of Jambito.\n",
        "Places/The Ember Wharf.md": "The busiest wharf of Mangagoy.\n",
    })
    build([root], tmp_path / "v.db", embed=False)
    result = context_for(tmp_path / "v.db", "Which organization does Bragan Holt work for?")
    assert result["confident"] and result["reason"] == "the question names a concept's title or alias"
    ids = [n["id"] for n in result["nodes"]]
    assert ids[0] == "vault/NPCs/Bragan Holt" and result["nodes"][0]["via"] == "seed: title"
    assert "- Bragan Holt organization The Red Runners (trust: unverified)" in result["context"]
    assert "vault/Factions/The Red Runners" in ids  # walked from him: its text is what the LLM reads next
    nickname = context_for(tmp_path / "v.db", "Who is Two-Tooth?")  # his alias's nickname in quotes names him
    assert nickname["confident"] and nickname["nodes"][0]["id"] == "vault/NPCs/Bragan Holt"
    assert "\nalso known as: Captain Bragan 'Two-Tooth' Holt\n" in nickname["context"]  # why he is Two-Tooth
    # keyword mode has no title list: he is named (the gate answers), but no seed, as before
    keyword = context_for(tmp_path / "v.db", "Which organization does Bragan Holt work for?", mode="keyword")
    assert keyword["confident"] and "vault/NPCs/Bragan Holt" not in [n["id"] for n in keyword["nodes"]]


def test_every_stage_gives_the_same_rows_with_its_parameters_as_datasette_passes_them(tmp_path):
    """The question page opens each stage's statement in Datasette's SQL editor with the parameters it ran with, and
    Datasette passes every parameter as text. A comparison with a number then holds for any text ('6' is greater
    than every integer in SQLite): the editor listed every frontmatter link of the first note, not PROPERTY_FACTS,
    and a series' reach was unbounded. Each number is cast where it is compared."""
    from datasette_okf.retrieve import _rows, connection
    from datasette_okf.store import build

    from .conftest import write_bundle

    places = "".join(f"  - \"[[Isle {n}]]\"\n" for n in range(8))
    files = {
        "Blackwake Corsairs.md": f"---\nhq: \"[[Isle 0]]\"\nlocation:\n{places}---\nA smuggling fleet of the outer "
                                 "isles, seen in session 9.\n",
        **{f"Isle {n}.md": f"An isle, number {n}.\n" for n in range(8)},
        **{f"Sessions/Session {n:02d}.md": f"# Session {n}\nThe party sailed on in session {n}.\n" for n in range(1, 19)},
    }
    build([write_bundle(tmp_path / "vault", files)], tmp_path / "v.db", embed=False)
    conn = connection(tmp_path / "v.db")
    result = context_for(conn, "How did the Blackwake Corsairs' story unfold from session 9 to session 11?")
    assert {"facts", "series", "walk"} <= set(result["sql"])
    for stage, sql in result["sql"].items():
        params = result["params"][stage]
        as_text = {key: value if isinstance(value, str) else str(value) for key, value in params.items()}
        assert _rows(conn, sql, as_text) == _rows(conn, sql, params), stage


def test_a_frontmatter_value_whose_key_the_question_names_is_a_fact(tmp_path):
    """Thellade writes much in frontmatter values that are no link: `favored_weapon: Longsword, Warhammer`,
    `population: 25,000`, `founded: 17 Stardrift -0285 PR`. The first note's (and a template's) come as facts when
    the question names the key (docs/design.md §6); a value the question already says ("group: Group 4") does not,
    nor does a key it does not name."""
    from datasette_okf.store import build

    from .conftest import write_bundle

    root = write_bundle(tmp_path / "vault", {
        "Deities/Valdros.md": "---\nfavored_weapon: Longsword, Warhammer\nskills:\n  - Intimidation\n  - \"[[Diplomacy]]\"\n"
                              "  - Athletics\npronounced: VAL-drohs\n---\nValdros, the Oathblade, god of justice and oaths.\n",
        "Diplomacy.md": "The art of talking.\n",
        "Places/Kanda.md": "---\npopulation: 25,000\nlocation: \"[[Kanda Isles]]\"\n---\n",
        "Places/Kanda Isles.md": "An island chain.\n",
        "Sessions/Session 7.md": "---\ngroup: Group 4\n---\nGroup 4 ambushed the Gilded Hound and lost the ledger.\n",
        "Metrics/Revenue.md": "---\ntype: Metric\nverified:\n  - by: human:jsmith@acme\n    at: 2026-07-01\n"
                              "generated:\n  by: reference_agent\n---\nRecognized revenue for a period.\n",
    })
    build([root], tmp_path / "v.db", embed=False)
    weapon = context_for(tmp_path / "v.db", "What is Valdros's favored weapon?")
    assert "- Valdros favored_weapon Longsword, Warhammer (trust: unverified)" in weapon["context"]
    assert "pronounced" not in weapon["context"]  # a key the question does not name
    skills = context_for(tmp_path / "v.db", "Which skills does Valdros teach?")
    assert "- Valdros skills Intimidation, Athletics (trust: unverified)" in skills["context"]  # the link is an edge
    kanda = context_for(tmp_path / "v.db", "What is the population of Kanda?")
    assert kanda["nodes"][0]["id"] == "vault/Places/Kanda" and "- Kanda population 25,000" in kanda["context"]
    verified = context_for(tmp_path / "v.db", "Who verified the Revenue metric, and which agent generated it?")
    assert "- Revenue verified by human:jsmith@acme at 2026-07-01 (trust:" in verified["context"]  # OKF §5.2 records
    assert "- Revenue generated by reference_agent (trust:" in verified["context"]
    session = context_for(tmp_path / "v.db", "What did Group 4 lose after the ambush at the Gilded Hound?")
    assert session["nodes"][0]["id"] == "vault/Sessions/Session 7" and "group Group 4" not in session["context"]


def test_the_notes_linking_to_a_template_the_question_is_about_come_as_its_facts(tmp_path):
    """Thellade's party dashboards are blank pages: "Campaign Group 6" lists its characters by a Dataview query over
    their `whichparty: [[Campaign Group 6]]`. Those links are all the vault says of the party; asked who is in it,
    the LLM reads them, each counted in the dashboard's budget."""
    from datasette_okf.retrieve import LINKED_FACTS
    from datasette_okf.store import build

    from .conftest import write_bundle

    members = [f"Hero {n}" for n in range(LINKED_FACTS + 2)]
    root = write_bundle(tmp_path / "vault", {
        "Parties/Campaign Group 6.md": "---\nwhichparty: \"[[Campaign Group 6]]\"\n---\n",
        **{f"Characters/{name}.md": f"---\nwhichparty: \"[[Campaign Group 6]]\"\n---\n{name} fights with an axe.\n"
           for name in members},
        "Sessions/Session 1.md": "The heroes sailed to Kanda.\n",
    })
    build([root], tmp_path / "v.db", embed=False)
    result = context_for(tmp_path / "v.db", "Who are the characters in Campaign Group 6?")
    assert result["confident"] and result["nodes"][0]["id"] == "vault/Parties/Campaign Group 6"
    linked = [f for f in result["facts"] if f["object_id"] == "vault/Parties/Campaign Group 6"]
    assert [f["text"].split(" (trust:")[0] for f in linked][:2] == ["- Hero 0 whichparty Campaign Group 6",
                                                                   "- Hero 1 whichparty Campaign Group 6"]
    assert len(linked) == LINKED_FACTS and all(f["with_id"] == "vault/Parties/Campaign Group 6" for f in linked)
    assert "whichparty Campaign Group 6" not in context_for(tmp_path / "v.db", "Where did the heroes sail?")["context"]


def red_runners(root):
    """A faction, three people and two places linking to it (Ana Vel twice), and a session note."""
    return write_bundle(root, {
        "Factions/The Red Runners.md": "---\ntype: Organization\n---\nThe Red Runners are a syndicate of smugglers "
                                       "and thieves who run contraband through Jambito.\n",
        **{f"People/{name}.md": "---\ntype: Person\norganization: \"[[The Red Runners]]\"\n---\n"
           for name in ["Corvin Dane", "Zhen Ashun"]},
        "People/Ana Vel.md": "---\ntype: Person\norganization: \"[[The Red Runners]]\"\n"  # two links, one line
                             "patron: \"[[The Red Runners]]\"\n---\n",
        **{f"Havens/{name}.md": "---\ntype: Place\norganization: \"[[The Red Runners]]\"\n---\n"
           for name in ["Sunken Temple", "The Walled Den"]},
        "Sessions/Session 1.md": "The heroes sailed to Kanda and met a fence.\n",
    })


def test_a_list_question_reads_the_notes_linking_to_the_one_it_names_the_types_it_asks_for_first(tmp_path,
                                                                                                 monkeypatch):
    """Thellade's sixteen Red Runners are unfilled templates whose `organization: [[The Red Runners]]` is all they
    say: never offered as notes, they reached no context. Asked who the members are, the LLM now reads their links,
    the people's only (places link to the faction the same way, and come first by id), one line a person; asked
    which places, the places'; asked something else of the faction, neither (docs/design.md §6). Sixteen are more
    than a set the context lists as notes (CATEGORY_MOST, here 1: the next test has a set of three)."""
    from datasette_okf import retrieve
    from datasette_okf.store import build

    monkeypatch.setattr(retrieve, "CATEGORY_MOST", 1)

    people, havens = ["Ana Vel", "Corvin Dane", "Zhen Ashun"], ["Sunken Temple", "The Walled Den"]
    build([red_runners(tmp_path / "vault")], tmp_path / "v.db", embed=False)
    faction = "vault/Factions/The Red Runners"

    def linking(question: str) -> list[str]:
        result = context_for(tmp_path / "v.db", question)
        assert result["confident"] and result["nodes"][0]["id"] == faction
        facts = [f for f in result["facts"] if f["object_id"] == faction]
        assert all(f["with_id"] == faction and f["text"] in result["context"] for f in facts)
        return [f["subject"] for f in facts]

    assert linking("Who are the members of The Red Runners?") == people
    assert linking("Which places do The Red Runners hold?") == havens
    assert linking("Where do The Red Runners smuggle their contraband?") == []


def test_a_list_question_gets_a_few_notes_linking_to_the_one_it_names_as_notes_right_after_it(tmp_path):
    """"Which characters belong to the Gilded Hammer Union?": four of its five members are written notes whose
    `organization` links the Union, and they reached the context only as fact lines. Two to CATEGORY_MOST notes of
    the types a list question asks for that link to the note it is about now come as notes too, right after it;
    the places do not, asked who (docs/design.md §5.13)."""
    from datasette_okf.store import build

    build([red_runners(tmp_path / "vault")], tmp_path / "v.db", embed=False)
    for question, members in [("Who are the members of The Red Runners?", ["Ana Vel", "Corvin Dane", "Zhen Ashun"]),
                              ("Which places do The Red Runners hold?", ["Sunken Temple", "The Walled Den"])]:
        nodes = context_for(tmp_path / "v.db", question)["nodes"]
        assert nodes[0]["title"] == "The Red Runners"
        assert [n["title"] for n in nodes[1:len(members) + 1]] == members
        assert all(n["via"].endswith(": The Red Runners") for n in nodes[1:len(members) + 1])
    asked_else = context_for(tmp_path / "v.db", "Where do The Red Runners smuggle their contraband?")
    assert "linking" not in asked_else["sql"]  # no list asked


def test_a_linking_note_is_of_the_kind_asked_for_by_its_type_or_by_a_tag(tmp_path):
    """Thellade's year notes are typed Lore by their folder and tagged Year: "Which years fall in the Post Rising
    era?" asks for the six of its fifteen years whose `era` links the era's note (the fifteen are too many a set)."""
    from datasette_okf.store import build

    years = {f"Calendar/{n}.md": "---\ntype: Lore\ntags: [Year]\nera: \"[[Post Rising]]\"\n---\n" if n in (1, 13, 204)
             else "---\ntype: Lore\ntags: [Year]\nera: \"[[The Rising]]\"\n---\n" for n in [1, 13, 204, *range(2, 12)]}
    root = write_bundle(tmp_path / "vault", {
        "Eras/Post Rising.md": "---\ntype: Era\n---\nThe era after the Rising, counted from the Ward.\n", **years,
        "Calendar/Notes.md": "---\ntype: Lore\nera: \"[[Post Rising]]\"\n---\nHow the calendar counts.\n"})
    build([root], tmp_path / "v.db", embed=False)
    nodes = context_for(tmp_path / "v.db", "Which years fall in the Post Rising era?")["nodes"]
    assert nodes[0]["title"] == "Post Rising"
    assert [n["title"] for n in nodes[1:4]] == ["1", "13", "204"]  # not the Notes, which is no year


def test_a_nested_tag_names_the_kind_by_its_last_part(tmp_path):
    """Thellade tags a subregion `#Location/Subregion` and a settlement `#Location/Settlement`; both link their region
    (`parentregion`). "What subregions make up the Obsidian Crestlands?" asks for the subregions alone (thellade-sets2's
    tht08: none came, every subregion of the vault, 53, being too many a set)."""
    from datasette_okf.store import build

    def place(tag: str) -> str:
        return f"---\ntags: [Location, Location/{tag}]\nparentregion: \"[[The Obsidian Crestlands]]\"\n---\nA {tag.lower()}.\n"

    root = write_bundle(tmp_path / "vault", {
        "Regions/The Obsidian Crestlands.md": "---\ntags: [Location/Region]\n---\nA dark highland region.\n",
        **{f"Subregions/{name}.md": place("Subregion") for name in ("Spectral Depths", "The Blacktop Rim", "The Rimshade Edge")},
        **{f"Settlements/{name}.md": place("Settlement") for name in ("Faynor", "Mapelin")},
        **{f"Subregions/Elsewhere/Fen {n}.md": "---\ntags: [Location/Subregion]\n---\nA fen far away.\n" for n in range(9)}})
    build([root], tmp_path / "v.db", embed=False)
    nodes = context_for(tmp_path / "v.db", "What subregions make up the Obsidian Crestlands?")["nodes"]
    assert nodes[0]["title"] == "The Obsidian Crestlands"
    assert [n["title"] for n in nodes[1:4]] == ["Spectral Depths", "The Blacktop Rim", "The Rimshade Edge"]
    assert all("category: parentregion: The Obsidian Crestlands" in n["via"] for n in nodes[1:4])
    settled = context_for(tmp_path / "v.db", "Which settlements lie in the Obsidian Crestlands?")["nodes"]
    assert [n["title"] for n in settled[1:3]] == ["Faynor", "Mapelin"]


def test_a_set_a_section_of_a_note_found_lists_comes_as_a_category_does(tmp_path):
    """13th Age's Chaos Mage lists its spells by group under headings, as embeds: "Which chaos mage spells belong to
    the Light of the High Ones group?" asks for that section's links (13th-Age-sets' tas15, -sets2's tat10: none came;
    no tag, folder or property says a spell's group). A heading of one word is not read so ("Gear")."""
    from datasette_okf.store import build

    spells = {"Blood of Warriors": ["Castigation", "Fiery Claw", "War Drums"],
              "Light of the High Ones": ["Silver Arrows", "Coronation", "Bolt and Thunder"]}
    body = "# Chaos Mage\n\nA caster of random magic.\n\n## Gear\n\n![[Staff]]\n![[Robe]]\n\n## Iconic Spells\n\n" + "".join(
        f"### {group}\n\nThe spells of {group}:\n" + "".join(f"![[{name}]]\n" for name in names) + "\n"
        for group, names in spells.items())
    root = write_bundle(tmp_path / "vault", {
        "Classes/Chaos Mage.md": body, "Gear/Staff.md": "A staff.\n", "Gear/Robe.md": "A robe.\n",
        **{f"Spells/{name}.md": f"{name} is a chaos mage spell.\n" for names in spells.values() for name in names},
        **{f"Spells/Wizard Spell {n}.md": "A wizard's spell.\n" for n in range(4)}})  # the folder: too many a set
    build([root], tmp_path / "v.db", embed=False)
    for group, names in spells.items():
        result = context_for(tmp_path / "v.db", f"Which chaos mage spells belong to the {group} group?")
        listed = [n["title"] for n in result["nodes"] if n["via"].endswith(f"category: section {group}")]
        assert sorted(listed) == sorted(names), group
    gear = context_for(tmp_path / "v.db", "Which chaos mage items are gear?")
    assert not [n for n in gear["nodes"] if "category: section" in n["via"]]


def test_a_list_question_is_about_the_longer_name_it_says_not_the_one_inside_it(tmp_path):
    """"Which NPCs can be found at the Mangagoy Healing Sanctuary?" names the city Mangagoy only inside the
    sanctuary's name, yet on the Thellade vault the city was the strongest note found (title, keyword and vector
    lists), and its people too many a set: the sanctuary's people, whose `location` links it, never came
    (thellade-sets2's tht10). The set stage now reads the sanctuary's."""
    from datasette_okf.retrieve import categories, find_seeds, offer, open_query, pick_seeds
    from datasette_okf.store import build

    def person(where: str, n: int) -> str:
        return f"---\ntype: Person\ntags: [NPC]\nlocation: \"[[{where}]]\"\n---\nA resident, number {n}.\n"

    healers = ["Eldara Nightbloom", "Gokas Stillbranch", "Rilan Frostblade"]
    root = write_bundle(tmp_path / "vault", {
        "Mangagoy.md": "---\ntype: Settlement\n---\nA port city.\n",
        "Mangagoy Healing Sanctuary.md": "---\ntype: Place\nlocation: \"[[Mangagoy]]\"\n---\nA quiet hospice.\n",
        **{f"People/Citizen {n}.md": person("Mangagoy", n) for n in range(12)},
        **{f"People/{name}.md": person("Mangagoy Healing Sanctuary", n) for n, name in enumerate(healers)}})
    build([root], tmp_path / "v.db", embed=False)
    query = open_query(tmp_path / "v.db", "Which NPCs can be found at the Mangagoy Healing Sanctuary?", ContextOptions())
    nodes = offer(query, pick_seeds(query, find_seeds(query)), [])
    city = next(n for n in nodes if n.concept["title"] == "Mangagoy")
    city.score = max(n.score for n in nodes) + 0.01  # the strongest, as the vault's three lists made it
    assert [n.concept["title"] for n in categories(query, nodes)] == healers
    assert query.params["linking"]["first"] == "vault/Mangagoy Healing Sanctuary"


def test_an_unfilled_template_the_notes_found_already_mention_comes_below_them(tmp_path):
    """Thellade's city of Kanda is a template with frontmatter links. "How many exits does the tavern on Kanda's
    docks have?" is about the tavern, whose note mentions Kanda: Kanda taking the first place (and with it the first
    note's facts and best section) cost lookup and linked-note recall when it was measured (docs/design.md §2.6).
    Dropped, a template named in passing took what its links say with it ("Hans Dane has a friend in Mangagoy…",
    Thellade-check6): it comes below every note the lists found."""
    from datasette_okf.store import build

    from .conftest import write_bundle

    root = write_bundle(tmp_path / "vault", {
        "Kanda.md": "---\norganization:\n  - \"[[Harbour Guard]]\"\nlocation:\n  - \"[[Outcast Isles]]\"\n---\n",
        "Mooring Flagon.md": "An unmarked tavern on Kanda's docks. It has nine exits, only two of them visible.\n",
        "Harbour Guard.md": "Keeps the docks.\n",
        "Outcast Isles.md": "A chain of islands.\n",
    })
    build([root], tmp_path / "v.db", embed=False)
    result = context_for(tmp_path / "v.db", "How many exits does the tavern on Kanda's docks have?")
    assert result["confident"] and result["nodes"][0]["id"] == "vault/Mooring Flagon"
    seeds = {s["id"]: s["rrf"] for s in result["seeds"]}
    assert seeds["vault/Kanda"] < min(score for seed, score in seeds.items() if seed != "vault/Kanda")
    assert [n["id"] for n in result["nodes"]].index("vault/Kanda") == len(seeds) - 1
    kanda = next(n for n in result["nodes"] if n["id"] == "vault/Kanda")
    assert kanda["via"] == "seed: title, a template named in passing, below the notes found"
    # asked about Kanda itself, its name and links hold most of the question: it keeps its place
    about = context_for(tmp_path / "v.db", "Which organization holds Kanda?")
    assert about["nodes"][0]["id"] == "vault/Kanda" and "- Kanda organization Harbour Guard" in about["context"]


def test_a_hub_template_named_in_passing_is_left_out(tmp_path):
    """The Outcast Isles, a template 552 Thellade notes link to, named in passing: reading its links for the walk and
    the facts cost the question 27 ms, and the walk never returns such a hub either (WalkOptions.hub_degree)."""
    from datasette_okf.graph import WalkOptions
    from datasette_okf.store import build

    from .conftest import write_bundle

    files = {f"Places/Cove {n}.md": f"---\nlocation: \"[[Kanda]]\"\n---\nA cove on the shore, number {n}.\n"
             for n in range(WalkOptions.hub_degree)}
    files["Kanda.md"] = "---\norganization:\n  - \"[[Harbour Guard]]\"\n---\n"
    files["Mooring Flagon.md"] = "An unmarked tavern on Kanda's docks. It has nine exits, only two of them visible.\n"
    files["Harbour Guard.md"] = "Keeps the docks.\n"
    build([write_bundle(tmp_path / "vault", files)], tmp_path / "v.db", embed=False)
    result = context_for(tmp_path / "v.db", "How many exits does the tavern on Kanda's docks have?")
    assert result["nodes"][0]["id"] == "vault/Mooring Flagon"
    assert "vault/Kanda" not in [s["id"] for s in result["seeds"]]


def test_an_unfilled_template_is_never_a_seed(tmp_path):
    from datasette_okf.store import build

    build([ROOT / "tests" / "fixtures" / "plugins"], tmp_path / "p.db", embed=False)
    result = context_for(tmp_path / "p.db", "What is Eastport, the settlement, like?", mode="keyword")
    assert "plugins/01 World/06 Settlements/Eastport" not in [n["id"] for n in result["nodes"]]
    titled = context_for(tmp_path / "p.db", "What is Ambassadors Row like?", mode="keyword")
    assert titled["nodes"][0]["id"] == "plugins/01 World/06 Settlements/Ambassadors Row"  # a written note still is


def test_a_template_text_is_never_what_the_context_shows_of_a_note(tmp_path):
    """495 Thellade places share "Introduction / A script for the GM to read when the party arrive…" word for word;
    the LLM read it as a shop's best chunk."""
    from datasette_okf.store import build

    intro = "## Introduction\nA script for the GM to read when the party arrive to this location for the first time.\n"
    files = {f"Shops/Stall {n}.md": f"# Stall {n}\n\n{intro}\n## Wares\nStall {n} sells lamp oil.\n" for n in range(19)}
    files["Shops/Alchemical Remedies.md"] = ("---\ndescription: A small kiosk selling healing potions.\n---\n"
                                            f"# Alchemical Remedies\n\n{intro}\n## Wares\nHealing draughts, 50 gold a "
                                            "flask, brewed by a retired army medic who swears by marsh mint.\n")
    vault = write_bundle(tmp_path / "vault", files)
    build([vault], tmp_path / "v.db", embed=False)
    result = context_for(tmp_path / "v.db", "Where can I buy healing potions?", mode="keyword")
    assert result["nodes"][0]["title"] == "Alchemical Remedies"
    assert "A small kiosk selling healing potions." in result["context"] and "50 gold a flask" in result["context"]
    assert "A script for the GM" not in result["context"]
    oil = context_for(tmp_path / "v.db", "Which stall sells lamp oil?", mode="keyword")
    assert "sells lamp oil" in oil["context"] and "A script for the GM" not in oil["context"]
    assert "template_texts" in oil["sql"]["sections"]  # the rule is in the statement a user can run


def test_a_chunk_of_a_templates_lines_comes_after_one_as_near_of_the_notes_own(tmp_path, campaign_db):
    """Thellade's session 7 had its prep checklist 0.005 nearer "What happened in Group 2's session 7?" than its
    transcript: a template's lines now count TEMPLATE_PENALTY farther, and without vectors break a tie."""
    from datasette_okf.retrieve import TEMPLATE_PENALTY
    from datasette_okf.store import build

    session = ("---\ndescription: A night of play.\n---\n# Session {n}\n\n## Prep\n- [x] Docks scene sketched\n"
               "- [x] Last notes reviewed\n\n## Recap\nAt the docks the party {did}.\n")
    deeds = ["fought smugglers", "met the harbour master", "lost the ledger", "found the map"]
    vault = write_bundle(tmp_path / "vault", {f"Session {n}.md": session.format(n=n, did=d) for n, d in enumerate(deeds)})
    build([vault], tmp_path / "v.db", embed=False)
    result = context_for(tmp_path / "v.db", "What happened at the docks in Session 2?", mode="keyword")
    block = result["context"][result["context"].index("### Session 2"):]
    assert block.index("#### Recap") < block.index("#### Prep")  # both cover "docks": the note's own first
    with_vectors = context_for(campaign_db, "Who runs the harbour?")
    assert "template_penalty" in with_vectors["sql"]["sections"]
    assert with_vectors["params"]["sections"]["template_penalty"] == TEMPLATE_PENALTY
    assert 0 < TEMPLATE_PENALTY < 0.05  # a nudge among near chunks, never a reason to hide one


def test_a_link_to_a_heading_arrives_at_that_section_even_under_a_parent_heading(tmp_path):
    from datasette_okf.store import build

    vault = write_bundle(tmp_path / "vault", {
        "Harbour.md": "# Harbour\nThe harbour master keeps a ledger of every ship; see [[Dock Office#Secrets|what the clerks hide]].\n",
        "Dock Office.md": ("# Dock Office\n## Overview\nA squat building by the quay, where tariffs are paid.\n"
                           "### Secrets\nThe clerk forges tariffs for the Black Gulls.\n## Staff\nThree clerks.\n"),
    })
    build([vault], tmp_path / "v.db", embed=False)
    result = context_for(tmp_path / "v.db", "What does the harbour master keep?")
    walked = next(n for n in result["nodes"] if n["title"] == "Dock Office")
    assert walked["via"].startswith("hop 1 via vault/Harbour")
    block = result["context"][result["context"].index("### Dock Office"):]
    assert "#### Overview > Secrets\nThe clerk forges tariffs" in block and "#### Overview\n" not in block


def test_a_description_taken_from_the_body_is_not_said_twice(tmp_path):
    from datasette_okf.store import build

    from .conftest import write_bundle

    root = write_bundle(tmp_path / "v", {"Mira.md": "Mira runs the night ferry across the harbour.\n\nShe owes the Gulls.\n"})
    build([root], tmp_path / "v.db", embed=False)
    context = context_for(tmp_path / "v.db", "Who runs the night ferry?", mode="keyword")["context"]
    assert context.count("Mira runs the night ferry across the harbour.") == 1  # before: header and chunk


def test_a_question_in_the_words_of_a_frontmatter_value_finds_its_note_and_shows_the_value(tmp_path):
    """"Cleans her armor only with ash and holy oil" is in Ygra Brambleward's `mannerisms`, not in her text: BM25 read
    the body only, and the question came back refused. The full-text index has a `properties` column now (weight 1,
    as the body), and the budget a section of them."""
    from datasette_okf.schema import FTS_COLUMNS
    from datasette_okf.store import build

    files = {
        "NPCs/Ygra Brambleward.md": "---\nmannerisms:\n  - Cleans her armor only with ash and holy oil\n"
                                   "party1relation: Unmet\nfears: [Failing her temple]\n---\n"
                                   "A paladin of the Silent Shields.\n",
        "NPCs/Holin Barsh.md": "---\nmannerisms: Hums while he works the bellows\n---\nA smith of Mangagoy.\n",
    }
    build([write_bundle(tmp_path / "vault", files)], tmp_path / "v.db", embed=False)
    result = context_for(tmp_path / "v.db", "Who cleans her armor with ash and holy oil?", mode="keyword")
    assert result["confident"] and result["nodes"][0]["title"] == "Ygra Brambleward"
    assert FTS_COLUMNS[-1] == "properties" and "1.0, 1.0)" in result["sql"]["seeds"]
    # and the LLM reads the value that answers, under its key: the note's values come as a section of their own when
    # they hold more of the question's words than its title and text (not for a question its text answers)
    assert "#### Properties\nmannerisms: Cleans her armor only with ash and holy oil" in result["context"]
    # only the values that hold a question word, or whose key does: her template's filler is not shown
    assert "Unmet" not in result["context"] and "Failing her temple" not in result["context"]
    feared = context_for(tmp_path / "v.db", "Who cleans her armor with ash and holy oil, and what does she fear?",
                         mode="keyword")
    assert "fears: Failing her temple" in feared["context"] and "Unmet" not in feared["context"]
    smith = context_for(tmp_path / "v.db", "Which smith of Mangagoy is a paladin?", mode="keyword")
    assert smith["nodes"][0]["title"] == "Holin Barsh" and "#### Properties" not in smith["context"]


def test_with_vectors_too_the_values_that_answer_come_as_a_section(tmp_path, test_models):
    """The sections statement with vectors (SECTIONS_SQL) reads the same section as the one without."""
    from datasette_okf.store import build

    files = {"NPCs/Ygra Brambleward.md": "---\nmannerisms: [Cleans her armor only with ash and holy oil]\n---\n"
                                         "A paladin of the Silent Shields.\n"}
    build([write_bundle(tmp_path / "vault", files)], tmp_path / "v.db", model="okf-test-hash-8")
    result = context_for(tmp_path / "v.db", "Who cleans her armor with ash and holy oil?")
    assert result["vectors"] == "used" and result["nodes"][0]["title"] == "Ygra Brambleward"
    assert "#### Properties\nmannerisms: Cleans her armor only with ash and holy oil" in result["context"]


def test_the_gate_reads_the_best_keyword_matches_not_only_the_first(tmp_path):
    """Before: only the top BM25 match's coverage counted. A note weighting three of the question's words in its
    title ranks first and covers half of it; the note that says all of it ranks second. Thellade: an inferred
    description lifted a faction note above the session that names the order, and the question was rejected."""
    from datasette_okf.store import build

    from .conftest import write_bundle

    files = {f"crew{i}.md": f"---\ntype: Person\ntitle: Sailor {i}\n---\nThe captain keeps to the harbour.\n" for i in range(6)}
    files["accounts.md"] = "---\ntype: Record\ntitle: Mooring Ledger Debts\ndescription: Mooring debts in the ledger.\n---\nMooring ledger debts.\n"
    files["orla.md"] = "---\ntype: Person\ntitle: Orla\n---\nThe captain keeps the harbour ledger of mooring debts in her cabin.\n"
    build([write_bundle(tmp_path / "port", files)], tmp_path / "p.db", embed=False)
    result = context_for(tmp_path / "p.db", "Which captain keeps the harbour ledger of mooring debts?", mode="keyword")
    assert result["nodes"][0]["id"] == "port/accounts"  # the top keyword match, covering 3 of 6 words
    assert result["confident"] and "covers 100%" in result["reason"]


def test_a_name_a_third_of_the_notes_use_is_a_word_of_the_bundle_not_a_title_match(tmp_path):
    """The 13th Age SRD has a note called "Damage", and 77 % of its notes say "damage": "if I roll more damage against
    one of them" named it, and two such title seeds held the places of Mooks, the rule the question meant. A name
    that common matches no title; its note still comes by its words, and a rarer name still matches. In a bundle
    too small to tell (the hero of a 48-note campaign is in most notes) every name matches."""
    from datasette_okf.store import build

    from .conftest import write_bundle

    monsters = {f"Monster {n}.md": f"---\ntype: Monster\n---\nIts bite deals {n}d6 damage.\n" for n in range(60)}
    root = write_bundle(tmp_path / "srd", {
        "Damage.md": "---\ntype: Rule\n---\nDamage lowers hit points; a creature at 0 hit points drops.\n",
        "Mooks.md": "---\ntype: Rule\n---\nDamage beyond a mook's hit points kills the next mook in the mob.\n",
        "Escalation Die.md": "---\ntype: Rule\n---\nFrom the second round the escalation die adds to attacks.\n",
        **monsters,
    })
    build([root], tmp_path / "srd.db", embed=False)
    conn = connection(str(tmp_path / "srd.db"))
    question = "If I roll more damage against the mooks than one has hit points, where does the rest go?"
    named = json.loads(conn.execute("select okf_title_names(?)", [question]).fetchone()[0])
    assert named == [{"id": "srd/Damage", "name": "damage"}, {"id": "srd/Mooks", "name": "mooks"}]
    assert [conn.execute("select okf_common_name(?)", [n["name"]]).fetchone()[0] for n in named] == [1, 0]
    assert [row[0] for row in conn.execute(TITLE_SQL, {"question": question})] == ["srd/Mooks"]
    assert [row[0] for row in conn.execute(TITLE_SQL, {"question": "the escalation die"})] == \
        ["srd/Escalation Die"]  # one note of 63 uses it: a name
    seeds = {s["id"]: s["ranks"] for s in context_for(tmp_path / "srd.db", question)["seeds"]}  # no vectors
    assert seeds["srd/Mooks"]["title"] == 1 and not seeds.get("srd/Damage", {}).get("title")
    asked = context_for(tmp_path / "srd.db", "What does damage do?")
    assert asked["confident"] and ids(asked)[0] == "srd/Damage"  # by its words: the title column weighs most
    # a question that is mostly the common word is about its note ("How do saves work?" had the vault's README first)
    assert [row[0] for row in conn.execute(TITLE_SQL, {"question": "How does damage work?"})] == ["srd/Damage"]
    about = {s["id"]: s["ranks"] for s in context_for(tmp_path / "srd.db", "How does damage work?")["seeds"]}
    assert about["srd/Damage"]["title"] == 1
    small = write_bundle(tmp_path / "small", {"Damage.md": "---\ntype: Rule\n---\nDamage lowers hit points.\n",
                                              "Ogre.md": "---\ntype: Monster\n---\nIts bite deals damage.\n"})
    build([small], tmp_path / "small.db", embed=False)
    titled = connection(str(tmp_path / "small.db")).execute(TITLE_SQL, {"question": "more damage"}).fetchall()
    assert [row[0] for row in titled] == ["small/Damage"]


def _offered(name: str, score: float, kind: str = "hop", similarity: float | None = None):
    """A note as the budget is offered it: a seed, or a note walked to from one."""
    from datasette_okf.retrieve import Node

    why = {"kind": "seed", "ranks": {"fts": 1}, "resolved_from": None} if kind == "seed" else {
        "kind": "hop", "hop": 1, "from": "seed 0", "predicate": "links_to", "edge_kind": "link", "similarity": similarity}
    return Node({"id": name, "title": name, "trust": "unverified", "bundle": "b", "path": f"{name}.md"}, score, why)


def test_a_note_the_graph_added_at_under_a_tenth_of_the_best_score_is_left_out():
    """Walked notes, the lists' tail and linked guesses at under FAINT_SHARE of the best note's score (the best
    seed's fourth walked neighbour) were packed into 338 of the development contexts and none was needed. A seed, a
    category's member or a series' member is kept however low it stands."""
    from datasette_okf.retrieve import FAINT_SHARE, without_faint

    nodes = [_offered("best seed", 1.0, "seed"), _offered("weak seed", 0.05, "seed"), _offered("first link", 0.5),
             _offered("third link", 0.125), _offered("fourth link", 0.0625), _offered("next", 0.099),
             _offered("guess", 0.09), _offered("member", 0.01), _offered("session", 0.01)]
    nodes[5].why, nodes[6].why = {"kind": "next"}, {"kind": "linked"}
    nodes[7].why, nodes[8].why = {"kind": "category", "named": []}, {"kind": "series", "role": "between"}
    assert [n.id for n in without_faint(nodes, FAINT_SHARE)] == [
        "best seed", "weak seed", "first link", "third link", "member", "session"]
    assert without_faint(nodes, 0.0) == nodes


def test_hybrid_leaves_out_the_faint_notes_graph_walk_keeps_them(campaign_db, monkeypatch):
    """On the example's golden questions: some hybrid context would hold a note under a tenth of the best; none
    does, and every other note it would hold is still there. Graph-walk, whose notes past its seeds are all walked,
    keeps them (leaving them out lost 9 needed notes over the development sets)."""
    from datasette_okf import retrieve

    def contexts(mode="hybrid"):
        return {q["id"]: context_for(campaign_db, q["question"], mode=mode)["nodes"] for q in load_golden(GOLDEN)}

    def faint(nodes):
        best = max((n["score"] for n in nodes), default=0)
        return [n["id"] for n in nodes if n["why"]["kind"] in retrieve.FAINT_KINDS
                and n["score"] < retrieve.FAINT_SHARE * best]

    kept = contexts()
    assert any(faint(nodes) for nodes in contexts("graph-walk").values())
    monkeypatch.setitem(retrieve.MODE_RULES, "hybrid", replace(retrieve.MODE_RULES["hybrid"], faint_share=0))
    unfloored = contexts()
    assert any(faint(nodes) for nodes in unfloored.values())
    assert not any(faint(nodes) for nodes in kept.values())
    for qid, nodes in unfloored.items():
        assert {n["id"] for n in nodes} - set(faint(nodes)) <= {n["id"] for n in kept[qid]}


def test_a_context_that_sets_a_walked_note_aside_holds_one_note_fewer_than_the_most():
    """The set-aside note is never the 11th: a context that takes one holds at most MAX_NOTES - 1 notes, so the mean
    stays near ten. Eight seeds fill most of the notes' share, a walked note too long for the rest of it follows,
    then small walked notes enough to fill any count."""
    from datasette_okf.retrieve import MAX_NOTES, fill_budget

    seeds = [_offered(f"seed {n}", 1 - n / 100, "seed") for n in range(8)]
    nodes = seeds + [_offered("long walked", 0.5)] + [_offered(f"small {n}", 0.4 - n / 100) for n in range(6)]
    chunks = {n.id: [{"text": f"{n.id} says one short thing.", "heading": None}] for n in nodes}
    for seed in seeds:
        chunks[seed.id] = [{"text": f"{seed.id} says a longer thing. " + "More of it. " * 10, "heading": None}]
    chunks["long walked"] = [{"text": "The long walked note. " + "It goes on. " * 40, "heading": None}]
    picked = fill_budget("Which note?", nodes, chunks, [], 700)[0]  # notes within 525
    assert [n.id for n in picked][8:] == ["long walked", "small 0"] and not picked[8].cut  # whole, at its place
    assert len(picked) == MAX_NOTES - 1
    assert len(fill_budget("Which note?", nodes, chunks, [], 3000)[0]) == MAX_NOTES  # room for all: nothing aside


def test_the_last_quarter_shows_the_walked_notes_further_sections_in_turn_with_the_seeds():
    """Thellade-check5's thg12 ("The Sable Accord lists as a rival an academic body in Kanda… Who led that body…?"):
    the walked Rift Scholars Collective is the note the question is about, and its leader was in its second section,
    which only the seeds' further sections were given. Walked notes now take theirs in turn with the seeds; a series'
    member or the lists' next note does not (every note picked lost answer quotes in vector:10 and keyword:10)."""
    from datasette_okf.retrieve import fill_budget

    seed, walked, member = _offered("Sable Accord", 0.9, "seed"), _offered("Rift Scholars", 0.45), _offered("S7", 0.4)
    member.why = {"kind": "series", "role": "gap", "after": "S6", "before": "S8"}
    chunks = {node.id: [{"text": f"{node.id}, part {n}: " + "more words. " * 8, "heading": f"Part {n}"}
                        for n in (1, 2, 3)] for node in (seed, walked, member)}
    picked, blocks, _ = fill_budget("Who led the rival body?", [seed, walked, member], chunks, [], 3000)
    context = "\n".join("\n".join(block) for block in blocks)
    assert [n.id for n in picked] == ["Sable Accord", "Rift Scholars", "S7"]
    assert "Rift Scholars, part 2" in context and "Rift Scholars, part 3" in context
    assert "Sable Accord, part 2" in context and "S7, part 1" in context and "S7, part 2" not in context


def test_a_template_named_in_passing_that_does_not_fit_comes_from_the_last_quarter():
    """Thellade-check9's thk25 ("Lysara Dawnstar, the archivist who runs the tower…, belongs to an order… What oath
    do its members take?"): her note is an unfilled template, placed below the notes found; her block (its frontmatter
    links as facts, 168 tokens) missed the notes' share by 30 and, as a seed, came cut or not at all, while smaller
    walked notes took the rest. She has no further sections for the last quarter to show: she is set aside as a
    walked note is, and comes whole at her place."""
    from datasette_okf.retrieve import fill_budget

    seeds = [_offered(f"seed {n}", 1 - n / 100, "seed") for n in range(6)]
    template = _offered("Lysara", 0.3, "seed")
    template.why["in_passing"] = True
    nodes = seeds + [template, _offered("small walked", 0.2)]
    chunks = {seed.id: [{"text": f"{seed.id} says a longer thing. " + "More of it. " * 18, "heading": None}]
              for seed in seeds}
    chunks["small walked"] = [{"text": "A short walked note.", "heading": None}]
    facts = [{"with_id": "Lysara", "text": f"- Lysara organization The Sunfire Heralds {n} (trust: unverified)"}
             for n in range(6)]
    picked = fill_budget("What oath do they take?", nodes, chunks, facts, 700)[0]  # notes within 525
    assert "Lysara" in [n.id for n in picked] and not next(n for n in picked if n.id == "Lysara").cut
    assert [n.id for n in picked].index("Lysara") == 6  # at her place, before the walked note below her


def test_a_context_shows_each_chunk_text_once_and_the_note_repeating_it_shows_its_next_chunk():
    """A feat list holds a feat's text word for word, under another heading; two notes share a checklist. What the
    context shows already is passed over: the list shows its next section, and the seeds' further sections, taken in
    turns, do not bring the checklist a second time."""
    from datasette_okf.retrieve import fill_budget

    feat, feats, session = (_offered("Toughness", 0.9, "seed"), _offered("General Feats", 0.8, "seed"),
                            _offered("Session 2", 0.7, "seed"))
    tiers = "Adventurer Tier: you get additional hit points equal to half your baseline."
    checklist = "- [x] Last session notes reviewed\n- [x] Maps ready"
    chunks = {"Toughness": [{"text": tiers, "heading": "Toughness"}, {"text": checklist, "heading": "Prep"}],
              "General Feats": [{"text": tiers, "heading": "General Feats > Toughness"},
                                {"text": "Strong Recovery: reroll one of the recovery dice.", "heading": "Recovery"}],
              "Session 2": [{"text": "The party reached the harbour.", "heading": "Recap"},
                            {"text": checklist, "heading": "Prep"}]}
    picked, blocks, _ = fill_budget("How much does Toughness give?", [feat, feats, session], chunks, [], 3000)
    context = "\n".join("\n".join(block) for block in blocks)
    assert [n.id for n in picked] == ["Toughness", "General Feats", "Session 2"]
    assert context.count(tiers) == 1 and "General Feats > Toughness" not in context
    assert "Strong Recovery" in "\n".join(blocks[1])
    assert context.count("Last session notes reviewed") == 1 and "harbour" in context


def test_at_equal_score_the_walked_note_nearer_the_question_is_packed_first():
    """Walked scores are a seed's fused score halved per better note walked from it, so they tie exactly across seeds
    (1/61 halved once is 2/61 halved twice): 13th-Age-check6's tah25 had the Demon note, the weak seed Glabrezou's
    first link (similarity 0.243), tied with the Barbarian, the strong seed Staggered's second (0.183), and the
    Barbarian took the budget's last place. At equal score, the note nearer the question goes first."""
    from datasette_okf.retrieve import packing_order

    far, near = _offered("Barbarian", 0.0082, similarity=0.183), _offered("Demon", 0.0082, similarity=0.243)
    assert [n.id for n in packing_order([far, near])] == ["Demon", "Barbarian"]
    assert [n.id for n in packing_order([near, far])] == ["Demon", "Barbarian"]


def test_a_set_too_large_to_offer_as_notes_comes_as_fact_lines_naming_its_notes(tmp_path, monkeypatch):
    """"Who are the deities?" on Thellade: 23 notes of type Deity, more than a context offers as notes (CATEGORY_MOST),
    and no note lists them all: the context named none of them. Up to CATEGORY_LIST_MOST come as fact lines, `X
    category Deity`, in the budget of the strongest note; a larger set says too little about which, and none come."""
    from datasette_okf import retrieve
    from datasette_okf.store import build

    gods = ["Aurion", "Eldath", "Isfyrra", "Lunara", "Malrik", "Morvina", "Nimara", "Thyros", "Urrogg", "Velessa"]
    files = {f"Deities/{god}.md": f"---\ntype: Deity\ntags: [Deity]\n---\n{god} is worshipped in the isles.\n"
             for god in gods}
    files["Religions.md"] = "The deities of the isles are many, melee deities and sea deities, worshipped at sea.\n"
    files["Tactics/Charge.md"] = "---\ntags: [Melee]\n---\nA melee charge.\n"
    build([write_bundle(tmp_path / "vault", files)], tmp_path / "v.db", embed=False)
    result = context_for(tmp_path / "v.db", "Who are the deities?")
    listed = [f for f in result["facts"] if f["predicate"] == "category"]
    assert [f["subject"] for f in listed] == gods
    assert listed[0]["text"] == "- Aurion category Deity (trust: unverified)"
    assert all(f"- {god} category Deity" in result["context"] for god in gods)
    assert not any(n["via"].startswith("category") for n in result["nodes"])  # no note offered for the set
    assert {f["with_id"] for f in listed} == {max(result["nodes"], key=lambda n: n["score"])["id"]}
    for part in ["Which deities are worshipped at sea?",  # a part of them: their notes say which
                 "Which deities are melee deities?"]:  # a category none of them holds: a narrower set, not them all
        answered = context_for(tmp_path / "v.db", part)
        assert answered["confident"] and not [f for f in answered["facts"] if f["predicate"] == "category"], part
    monkeypatch.setattr(retrieve, "CATEGORY_LIST_MOST", 9)
    assert not [f for f in context_for(tmp_path / "v.db", "Who are the deities?")["facts"]
                if f["predicate"] == "category"]


def test_the_thirty_two_player_characters_of_a_campaign_vault_are_listed_and_fifty_one_are_not(tmp_path):
    """"Who are the player characters?" on Thellade: 32 notes tagged Player and Character, over the 30 a listing
    took until stop 58, and the context was a smuggling fleet's note and its members. Up to 50 are listed now (about
    600 tokens of the 3,000); a set larger than that says too little about which, and none come."""
    from datasette_okf.store import build

    def party(size: int) -> dict[str, str]:
        heroes = {f"Characters/Hero {n:02d}.md": f"---\ntags: [Player, Character]\n---\nHero {n:02d} sails with the party.\n"
                  for n in range(size)}
        crew = {f"Crew/Sailor {n}.md": f"---\ntype: Person\norganization: \"[[Fleet]]\"\n---\nSailor {n} crews the fleet.\n"
                for n in range(3)}
        return {**heroes, **crew, "Fleet.md": "The player characters met the smugglers' fleet at sea.\n"}

    for size, listed in ((32, 32), (51, 0)):
        build([write_bundle(tmp_path / f"v{size}", party(size))], tmp_path / f"v{size}.db", embed=False)
        result = context_for(tmp_path / f"v{size}.db", "Who are the player characters?")
        lines = [f["subject"] for f in result["facts"] if f["predicate"] == "category"]
        assert len(lines) == listed, size
        assert all(f"- Hero {n:02d} category Player, Character" in result["context"] for n in range(listed))
        # the fleet, the first note, is linked from its crew: with the set listed, who its people are is not asked
        assert result["nodes"][0]["title"] == "Fleet", size
        assert not listed or "organization Fleet" not in result["context"]


def test_a_question_asking_which_of_the_categories_it_names_gets_the_notes_holding_them_right_after_the_top_note(
        tmp_path, monkeypatch):
    """"Who are the player characters in Group 6?" named no title; Thellade's six characters are tagged Character,
    Player and Group6, and their notes say nothing of the party, so no list found them. Now the notes holding the
    named categories, tags (or a tag nested below one) and folders, come right after the strongest note; a question
    that asks no list, or a set too large to list, brings none (docs/design.md §5.13)."""
    from datasette_okf import retrieve
    from datasette_okf.store import build

    def character(tags: str, text: str) -> str:
        return f"---\ntype: Person\ntags: [{tags}]\n---\n{text}\n"

    root = write_bundle(tmp_path / "vault", {
        "Characters/Ann.md": character("Character, Player, Group1", "Ann is a sailor from the harbour."),
        "Characters/Bo.md": character("Character, Player, Group1", "Bo keeps bees."),
        "Characters/Cy.md": character("Character, Player, Group2", "Cy plays the lute."),
        "Characters/Dee.md": character("Character, NPC, Group1", "Dee runs the inn."),
        **{f"Sessions/Session {n}.md": f"---\ntags: [Group1, SessionNote]\n---\nThe player characters of Group 1 "
                                      f"met in the harbour inn and sailed north for {n} days.\n" for n in range(1, 9)},
        "Bestiary/Kobolds/Tunnel Kobold.md": "---\ntags: [Role/Mook]\n---\nA kobold of the deep tunnels.\n",
        "Bestiary/Kobolds/Kobold Hero.md": "---\ntags: [Role/Leader]\n---\nA kobold who leads.\n",
        "Bestiary/Kobolds/Kobold Runt.md": "---\ntags: [Role/Mook]\n---\nA small kobold.\n",
        "Bestiary/Goblins/Goblin Grunt.md": "---\ntags: [Role/Mook]\n---\nA goblin.\n",
        "Rules/Mooks.md": "Mooks are weak monsters of the bestiary that fight in mobs: kobolds, goblins.\n",
        "Lieutenants/Azael.md": "A demon prince of the pit.\n",
        "Lieutenants/Goriath.md": "A demon general of the pit.\n",
        **{f"Realms/{name}.md": f"---\ngovernmenttype: {kind}\n---\nA realm of the isles.\n"
           for name, kind in [("Kanda", "Monarchy"), ("Tidecairn", "Monarchy"), ("Boba", "Council")]},
    })
    build([root], tmp_path / "v.db", embed=False)

    def members(question: str) -> list[str]:
        result = context_for(tmp_path / "v.db", question)
        if "categories" not in result["sql"]:  # the statement ran only for a question asking who or which
            return []
        rows = connection(tmp_path / "v.db").execute(result["sql"]["categories"],
                                                     result["params"]["categories"]).fetchall()
        found = [n["title"] for n in result["nodes"] if n["id"] in {row[0] for row in rows}]
        start = 0 if not found or result["nodes"][0]["title"] in found else 1  # right after the top note, or all
        assert [n["title"] for n in result["nodes"][start:start + len(found)]] == found
        assert all("category: " in n["via"] for n in result["nodes"] if n["title"] in found)  # a seed's line too
        return found

    assert members("Who are the player characters in Group 1?") == ["Ann", "Bo"]
    nodes = context_for(tmp_path / "v.db", "Who are the player characters in Group 1?")["nodes"]
    assert nodes[1]["via"] == "category: Player, Character, Group1"  # no list found Ann: the statement did
    assert members("Which kobolds are mooks?") == ["Kobold Runt", "Tunnel Kobold"]  # a folder and a nested tag
    assert members("Who are the lieutenants?") == ["Azael", "Goriath"]  # a folder alone, in a list question
    assert members("Which realms are governed as monarchies?") == ["Kanda", "Tidecairn"]  # a frontmatter value
    assert members("What did the player characters of Group 1 do in the harbour?") == []  # no list asked
    # a lone category of more notes than a set lists (Group1: 3 people, 8 sessions), narrowed to the kind a list
    # question asks for: "who", people by their type ("Who is in Group 3?" on Thellade: its seven of 30 notes)
    assert members("Who is in Group 1?") == ["Ann", "Bo", "Dee"]
    monkeypatch.setattr(retrieve, "CATEGORY_KINDS_MOST", 10)
    monkeypatch.setattr(retrieve, "CATEGORY_LIST_MOST", 10)
    assert members("Who is in Group 1?") == []  # a category too large to narrow or list is not read
    monkeypatch.setattr(retrieve, "CATEGORY_MOST", 1)
    assert members("Who are the player characters in Group 1?") == []  # more than the context lists as notes
    monkeypatch.setattr(retrieve, "CATEGORY_LIST_MOST", 1)
    assert members("Who are the lieutenants?") == []  # more than fact lines list: none
