"""One question across several OKF databases: each answers on its own, their notes share one budget.

Knowledge often lives in several files (a campaign vault and a rules compendium; one bundle per team, each with
its own permissions), and one corpus that outgrows a file is split by bundle. Each database runs context_for as
usual (its own seeds, gate, calibration and walk); `fuse` then ranks every confident database's notes by
reciprocal rank fusion over their rank in their own answer (RRF, k = 60: the first note of each database comes
before any second note; ties go to the higher own score, then to the database listed first) and packs their
rendered blocks into the one budget's first three quarters in that order, at most `MAX_NOTES`; the first that did
not fit whole comes cut to the room left, as in one database. The last quarter then takes the chunks each
database's own last quarter added to its notes, a note's next in turn, in the same order (retrieve.NOTES_SHARE).
Each note and fact says which database it came from.
Databases the caller may not see are never passed in (web.py asks Datasette's permissions first).
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from .embed import EmbeddingError
from .options import ContextOptions
from .render import add_in_turns, context_text, cut_to_fit, estimate_tokens, no_confident_match
from .retrieve import CUT_ROOM, MAX_NOTES, NOTES_SHARE, context_and_blocks, nearest_notes
from .schema import OutdatedDatabase

RRF_K = 60


def labelled(block: str, database: str) -> str:
    """A note's block with its database named in its heading line: `### Title (id) [db: name]`."""
    head, newline, rest = block.partition("\n")
    return f"{head} [db: {database}]{newline}{rest}"


def fuse(question: str, answers: list[tuple[str, dict[str, Any], list[list[str]]]], budget: int) -> dict[str, Any]:
    """context_for's JSON for `question` over several databases' answers: [(database, answer, blocks)], where
    `blocks` are the rendered blocks of `answer["nodes"]` in pieces (retrieve.context_and_blocks)."""
    confident = [(name, answer, blocks) for name, answer, blocks in answers if answer["confident"]]
    ranked = sorted(
        ((1 / (RRF_K + rank), node.get("score") or 0.0, order, name, node, block)
         for order, (name, answer, blocks) in enumerate(confident)
         for rank, (node, block) in enumerate(zip(answer["nodes"], blocks), start=1)),
        key=lambda item: (-item[0], -item[1], item[2]),
    )
    facts = [(name, fact) for name, answer, _ in confident for fact in answer["facts"]]
    used = estimate_tokens(context_text(question, ["-"], ["-"]))
    for_notes = int(budget * NOTES_SHARE)
    nodes, picked_blocks, kept_facts, more = [], [], [], []

    def take(rrf: float, name: str, node: dict[str, Any], block: list[str], own: list[dict[str, Any]]) -> None:
        nodes.append({**node, "db": name, "rrf": round(rrf, 6)})
        picked_blocks.append(block[:1])
        more.append(block[1:])
        kept_facts.extend({**fact, "db": name} for fact in own)  # in the order of their notes

    cut = None  # the first note that did not fit whole comes cut, as in one database (retrieve.fill_budget)
    for rrf, _, _, name, node, block in ranked:
        if len(nodes) >= MAX_NOTES:  # as in one database
            break
        own = [fact for db, fact in facts if db == name and fact.get("with_id", fact.get("subject_id")) == node["id"]]
        block = [labelled(block[0], name), *block[1:]]
        facts_cost = sum(estimate_tokens(f["text"]) + 1 for f in own)
        if used + estimate_tokens(block[0]) + facts_cost > for_notes:
            cut = cut or (rrf, name, node, block[0], own, facts_cost)
            continue
        used += estimate_tokens(block[0]) + facts_cost
        take(rrf, name, node, block, own)
    if cut and len(nodes) < MAX_NOTES:
        rrf, name, node, block, own, facts_cost = cut
        lines = block.split("\n")
        head, body = "\n".join(lines[:2]), "\n".join(lines[2:])  # its title and why lines, then what it says
        start = cut_to_fit(head, body, for_notes - used - facts_cost, CUT_ROOM)
        if start is not None:
            take(rrf, name, {**node, "cut": True}, [f"{head}\n{start}"], own)
    add_in_turns(picked_blocks, more, used, budget)  # the last quarter: each note's next added chunk, in turn
    per_database = {name: {key: answer.get(key) for key in ("confident", "reason", "vectors", "intent")}
                    | {"notes": len(answer["nodes"]), "ms": answer["timings_ms"].get("total")}
                    for name, answer, _ in answers}
    if confident:
        reason = "; ".join(f"{name}: {answer['reason']}" for name, answer, _ in confident)
        text = context_text(question, [f["text"] for f in kept_facts], ["\n".join(block) for block in picked_blocks])
    else:
        reason = "no database has a confident match (" + "; ".join(
            f"{name}: {answer['reason']}" for name, answer, _ in answers) + ")"
        text = no_confident_match(question, reason)
    return {
        "question": question,
        "databases": [name for name, _, _ in answers],
        "confident": bool(confident),
        "reason": reason,
        "seeds": [{**seed, "db": name} for name, answer, _ in answers for seed in answer["seeds"]],
        "nodes": nodes,
        "nearest": [] if confident else [{**note, "db": name} for name, answer, _ in answers
                                         for note in nearest_notes(answer)],
        "facts": kept_facts,
        "context": text,
        "per_database": per_database,
    }


def unanswered(reason: str) -> dict[str, Any]:
    """A database's place in the answer when it could not answer (an outdated file, a failing model)."""
    return {"confident": False, "reason": reason, "vectors": None, "intent": None, "seeds": [], "nodes": [],
            "facts": [], "timings_ms": {}}


def answer_one(conn: Any, question: str, options: ContextOptions) -> tuple[dict[str, Any], list[list[str]]]:
    try:
        return context_and_blocks(conn, question, options)
    except (OutdatedDatabase, EmbeddingError) as error:
        return unanswered(f"not answered: {error}"), []


async def ask_databases(datasette: Any, names: list[str], question: str, options: ContextOptions) -> dict[str, Any]:
    """`question` on each of `names` (Datasette databases the actor may view: the caller checks), concurrently on
    Datasette's SQL thread pool, fused into one answer within `options.budget`."""
    started = time.perf_counter()

    async def one(name: str) -> tuple[str, dict[str, Any], list[list[str]]]:
        answer, blocks = await datasette.get_database(name).execute_fn(
            lambda conn: answer_one(conn, question, options))
        return name, answer, blocks

    fused = fuse(question, list(await asyncio.gather(*(one(name) for name in names))), options.budget)
    fused["timings_ms"] = {"total": round((time.perf_counter() - started) * 1000, 2)}
    return fused


def ask_files(paths: list[str | Path], question: str, options: ContextOptions) -> dict[str, Any]:
    """The same over database files (the CLIs), one after another, each named by its file's stem."""
    return ask_each([(Path(path).stem, str(path)) for path in paths], question, options)


def ask_each(databases: list[tuple[str, Any]], question: str, options: ContextOptions) -> dict[str, Any]:
    """The same over [(name, a database path or connection)], one after another."""
    started = time.perf_counter()
    answers = []
    for name, db in databases:
        answer, blocks = answer_one(db, question, options)
        answers.append((name, answer, blocks))
    fused = fuse(question, answers, options.budget)
    fused["timings_ms"] = {"total": round((time.perf_counter() - started) * 1000, 2)}
    return fused
