"""Fact lines and prose blocks for the LLM: compact, trust-aware, never presenting stale as current."""

from __future__ import annotations

from itertools import zip_longest
from typing import Any


def estimate_tokens(text: str) -> int:
    """About four characters a token for English prose; good enough to budget with."""
    return (len(text) + 3) // 4


def warnings(node: dict[str, Any], titles: dict[str, str]) -> list[str]:
    notes = []
    if node.get("stale"):
        notes.append(f"STALE since {node['stale_after']}: may no longer be true")
    if node.get("superseded_by"):
        successor = titles.get(node["superseded_by"], node["superseded_by"])
        notes.append(f"SUPERSEDED by {successor} ({node['superseded_by']})")
    if node.get("status") in ("deprecated", "draft"):
        notes.append(node["status"].upper())
    return notes


def found_by(ranks: dict[str, int | None]) -> str:
    """Which lists found a note, and where: "found by keyword #2, vector #1" (a refusal's nearest notes)."""
    names = {"title": "title", "fts": "keyword", "vector": "vector", "dated": "date"}
    found = [f"{names.get(name, name)} #{rank}" for name, rank in ranks.items() if rank]
    return "found by " + ", ".join(found) if found else "found by no list"


def fact_line(fact: dict[str, Any]) -> str:
    """`- Nessa Thorne member_of Black Gulls, as of 2026-03-01 (trust: human-reviewed, source: s4)`"""
    line = f"- {fact['subject']} {fact['predicate']} {fact['object']}"
    if fact.get("date"):
        line += f", as of {fact['date']}"
    extra = [f"trust: {fact['trust']}"]
    if fact.get("source"):
        extra.append(f"source: {fact['source']}")
    if fact.get("superseded_by"):
        extra.append(f"superseded by {fact['superseded_by']}")
    if fact.get("stale"):
        extra.append(f"stale since {fact['stale_after']}")
    return f"{line} ({', '.join(extra)})"


def node_header(node: dict[str, Any], titles: dict[str, str]) -> str:
    flags = warnings(node, titles)
    head = f"### {node['title']} ({node['id']})\nwhy: {node['via']}; trust: {node['trust']}"
    if flags:
        head += "; " + "; ".join(flags)
    if node.get("description"):
        head += f"\n{node['description']}"
    if node.get("also_known_as"):  # an unfilled template's aliases: "Who is Black-Hand?" says why it is here
        head += f"\nalso known as: {'; '.join(node['also_known_as'])}"
    return head


def chunk_block(chunk: dict[str, Any]) -> str:
    text = chunk["text"].strip()
    return f"#### {chunk['heading']}\n{text}" if chunk.get("heading") else text


CUT_MARK = " [… cut to fit the budget]"


def cut_block(block: str, tokens: int) -> str:
    """The start of `block` in at most `tokens` (estimated), ending at a line or a sentence when one ends in its
    second half, marked as cut so the LLM knows the note goes on."""
    limit = tokens * 4 - len(CUT_MARK)
    if len(block) <= limit:
        return block
    head = block[:limit]
    ends = [head.rfind("\n"), head.rfind(". ") + 1, head.rfind(" ")]
    end = next((at for at in ends if at > limit // 2), limit)
    return head[:end].rstrip() + CUT_MARK


def add_in_turns(blocks: list[list[str]], queues: list[list[str | None]], used: int, budget: int) -> int:
    """Each block's next piece from its queue (None: none this turn), every block's first before any block's
    second, while each fits in `budget`; the tokens used come back. One database's seeds and several databases'
    notes take their added chunks so (retrieve.fill_budget, across.fuse)."""
    for turn in zip_longest(*queues):
        for block, piece in zip(blocks, turn):
            if piece and used + estimate_tokens(piece) + 1 <= budget:
                used += estimate_tokens(piece) + 1
                block.append(piece)
    return used


def cut_to_fit(head: str, body: str, room: int, least: int) -> str | None:
    """`body` cut to what `room` tokens leave after `head` (a note's header), or None when fewer than `least` are
    left: the rule for the first note that did not fit whole, in one database and across several."""
    left = room - estimate_tokens(head + "\n")
    return cut_block(body, left) if body and left >= least else None


def no_confident_match(question: str, reason: str) -> str:
    return (
        f"No confident match in this bundle for: {question}\n"
        f"({reason}.) Say that the bundle does not cover this rather than guessing."
    )


def context_text(question: str, facts: list[str], blocks: list[str]) -> str:
    parts = [f"# Context for: {question}"]
    if facts:
        parts.append("## Facts\n" + "\n".join(facts))
    if blocks:
        parts.append("## Notes\n" + "\n\n".join(blocks))
    return "\n\n".join(parts)
