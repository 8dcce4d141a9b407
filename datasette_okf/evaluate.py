"""Golden sets: run context_for in several modes side by side and report recall, hits, size, rejection, and
whether the answer's words reached the context."""

from __future__ import annotations

import functools
import json
import re
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

from .options import MODES, BadOption
from .render import estimate_tokens, found_by
from .retrieve import connection, context_for, nearest_notes
from .schema import read_meta
from .sqlfunctions import SAYS_SOMETHING

TIERS = ("lookup", "synthesis", "temporal", "out")
RECALL_AT = 5  # recall in the context's first notes too: how multi-hop retrieval is compared with dense top-5


def parse_mode(spec: str) -> tuple[str, dict[str, Any]]:
    """`hybrid`, `vector:10`, `keyword:5`, `graph-walk` -> (mode, options); BadOption for what is not one."""
    mode, _, k = spec.partition(":")
    if mode not in MODES:
        raise BadOption("modes", f"{spec!r}: a mode is one of {', '.join(MODES)}, optionally with :k (vector:10)")
    if k and not k.isdigit():
        raise BadOption("modes", f"{spec!r}: k after the colon must be a whole number (vector:10)")
    return mode, ({"k": int(k)} if k else {})


def load_golden(path: Path | str) -> list[dict[str, Any]]:
    """The questions of a golden set; ValueError naming the file and what is wrong with it."""
    try:
        questions = json.loads(Path(path).read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"{path}: not a JSON golden set ({error})") from None
    if not isinstance(questions, list):
        raise ValueError(f"{path}: a golden set is a JSON list of questions, not a {type(questions).__name__}")
    for n, q in enumerate(questions, 1):
        if not isinstance(q, dict) or not isinstance(q.get("question"), str):
            raise ValueError(f"{path}: question {n} must be an object with a \"question\" string")
        if q.get("tier") not in TIERS:
            raise ValueError(f"{path}: question {q.get('id', n)!r}: tier must be one of {', '.join(TIERS)}")
        if not isinstance(q.get("required", []), list):
            raise ValueError(f"{path}: question {q.get('id', n)!r}: required must be a list of notes")
        answers = q.get("answers", [])
        if not isinstance(answers, list) or not all(isinstance(a, str) and a.strip() for a in answers):
            raise ValueError(f"{path}: question {q.get('id', n)!r}: answers must be a list of the notes' words")
    return questions


# A link as the context shows it (chunks.py renders the note's links so): `[[target|label]]` and `[label](path)` by
# their label, `[[folder/Note#section]]` by the note's name. An answer quoted from a note's file with its links in it
# could never be found otherwise: 28 of Thellade-check7's 42 unshown answers at stop 46 were so written, or as a
# frontmatter line ("founded: 24 Stardrift 93 PR", a fact line "… founded 24 Stardrift 93 PR" in the context).
_LINKS = [(re.compile(r"\[\[([^\]|]*)\|([^\]]*)\]\]"), r"\2"),
          (re.compile(r"\[\[(?:[^\]|#]*/)?([^\]|#/]*)(?:#[^\]|]*)?\]\]"), r"\1"),
          (re.compile(r"(?<!!)\[([^\]]*)\]\([^)\s]*\)"), r"\1")]


_TAG = re.compile(r"</?[a-zA-Z][^<>]*>")


def evened(text: str) -> str:
    """Markup and spacing evened out, lower case: an answer written from a note and the context compare as words
    (`**Time:** 04 Dawnmarch` in the note, "time 04 dawnmarch" in the golden set; `[[Dornal Syle]]`, "Dornal
    Syle"). Colons and quotation marks go too: a frontmatter line (`worship: "[[Malrik]]"`) is a fact line in the
    context; and HTML tags."""
    for link, shown in _LINKS:
        text = link.sub(shown, text)
    text = _TAG.sub("", text)  # "8<sup>th</sup> level" is "8th level" as read
    return re.sub(r"\s+", " ", re.sub(r"[*_`|>#:!\"“”\[\]]+", " ", text)).strip().casefold()


def _matches(required: str, node: dict[str, Any]) -> bool:
    """A required entry is a bundle-relative .md path or a concept id."""
    return required in (node["path"], node["id"]) or node["id"].endswith("/" + required.removesuffix(".md"))


NEVER_OFFERED_SQL = f"""select is_index, is_stub and not {SAYS_SOMETHING} from concepts
where path = :required or id = :required or id like '%/' || :stem or id = :stem"""


def _never_offered(conn: Any, required: str) -> str | None:
    """Why no mode can bring a required note, when that is so: it is not in the database, or retrieval never
    offers it (an unfilled template without frontmatter links, an index node). A golden set's author can then fix the
    note or the set. A template with links is offered when the question names it (docs/design.md §2.6)."""
    rows = conn.execute(NEVER_OFFERED_SQL, {"required": required, "stem": required.removesuffix(".md")}).fetchall()
    if not rows:
        return "no such note in this database"
    if all(is_stub for _, is_stub in rows):
        return "an unfilled template (is_stub) without frontmatter links: never a seed nor a walked note"
    if all(is_index for is_index, _ in rows):
        return "an index node: never a seed nor a walked note"
    return None


# The sections of the notes a context holds and of the notes a question requires, and each frontmatter field as one
# more ("founded: 24 Stardrift 93 PR": the context shows fields as facts of the note it is most about only).
SECTIONS_OF_SQL = """with notes as (
  select id, title, frontmatter from concepts
  where id in (select value from json_each(:ids))
    or exists (select 1 from json_each(:required) as required  -- as _matches reads a required entry
               where concepts.path = required.value || '.md' or concepts.id = required.value
                 or concepts.id like '%/' || required.value)
)
select notes.id, notes.title, chunks.heading, chunks.text from notes join chunks on chunks.concept_id = notes.id
union all
select notes.id, notes.title, 'frontmatter: ' || field.key,
  field.key || ': ' || case when field.type = 'array'
                            then (select group_concat(item.value, ', ') from json_each(field.value) as item)
                            else field.value end
from notes join json_each(coalesce(notes.frontmatter, '{}')) as field"""


def where_answers_are(conn: Any, answers: list[str], shown: list[str], required: list[str]) -> list[dict[str, Any]]:
    """For each answer the context lacks, the section (or frontmatter field) that holds it: in a note the context
    holds (the budget or the section choice left it out: more budget, or better sections, would show it) or in a
    required note it lacks (retrieval missed the note). None when no one section holds the words whole (they span
    two). A golden set's author and a tuner then know which stage to look at."""
    stems = [entry.removesuffix(".md") for entry in required]
    rows = conn.execute(SECTIONS_OF_SQL, {"ids": json.dumps(shown), "required": json.dumps(stems)}).fetchall()
    order = {concept_id: n for n, concept_id in enumerate(shown)}
    rows.sort(key=lambda row: order.get(row[0], len(order)))  # a note the context holds first
    texts = [evened(row[3] or "") for row in rows]  # once a section, however many answers are looked for
    places = []
    for answer in answers:
        words = evened(answer)
        found = next((row for row, text in zip(rows, texts) if words in text), None)
        places.append({"answer": answer, "note": found and found[0], "title": found and found[1],
                       "section": found and found[2], "in_context": bool(found) and found[0] in order})
    return places


def evaluate(db: Any, golden: list[dict[str, Any]], modes: list[str], **options: Any) -> dict[str, Any]:
    """Per mode and tier: recall, hit@1, mean notes and tokens in context, rejection rates, latency, and the share of
    a question's `answers` (the notes' own words that answer it) the context holds: note recall counts a note whose
    answering section the context does not show."""
    conn = connection(db)
    never_offered = functools.cache(lambda required: _never_offered(conn, required))  # the same in every mode
    report: dict[str, Any] = {"modes": {}, "questions": len(golden),
                              "calibration": json.loads(read_meta(conn).get("gate") or "null")}
    for spec in modes:
        mode, extra = parse_mode(spec)
        per_tier: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for q in golden:
            result = context_for(conn, q["question"], mode=mode, **{**options, **extra})
            nodes = result["nodes"]
            required = q.get("required", [])
            found = [r for r in required if any(_matches(r, n) for n in nodes)]
            missed = [r for r in required if r not in found]
            first = nodes[:RECALL_AT]
            answers = q.get("answers", [])
            context = evened(result["context"]) if result["confident"] else ""
            unshown = [a for a in answers if evened(a) not in context]
            where = where_answers_are(conn, unshown, [n["id"] for n in nodes], required) if unshown else []
            per_tier[q["tier"]].append({
                "id": q["id"],
                "recall": len(found) / len(required) if required else None,
                "recall_at_5": (sum(any(_matches(r, n) for n in first) for r in required) / len(required)
                                if required else None),
                "hit1": bool(nodes) and any(_matches(r, nodes[0]) for r in required),
                "notes": len(nodes),
                "tokens": estimate_tokens(result["context"]) if result["confident"] else 0,
                "answers": 1 - len(unshown) / len(answers) if answers else None,
                "answers_unshown": unshown,
                "answers_where": where,
                "rejected": not result["confident"],
                "ms": result["timings_ms"]["total"],
                "missed": missed,
                "missed_why": {r: why for r in missed if (why := never_offered(r))},
                "tier": q["tier"],
                "question": q["question"],
                "got": [{"id": n["id"], "via": n["via"]} for n in nodes],
                "reason": result["reason"],
                "nearest": [{"id": n["id"], "why": n.get("why") or found_by(n.get("ranks") or {})}
                            for n in ([] if result["confident"] else nearest_notes(result))],
            })
        report["modes"][spec] = {tier: _summary(tier, rows) for tier, rows in per_tier.items()}
        report["modes"][spec]["all"] = _summary("all", [r for rows in per_tier.values() for r in rows])
        report["modes"][spec]["per_question"] = {r["id"]: r for rows in per_tier.values() for r in rows}
    return report


def _summary(tier: str, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """One tier's figures; `all` reports both rates, each over its own questions (an out-of-bundle question
    rejected is no false rejection)."""
    answered = [r for r in rows if r["recall"] is not None]
    out = [r for r in rows if r["tier"] == "out"]
    answerable = [r for r in rows if r["tier"] != "out"]
    rates = {}
    if out:
        rates["rejection_rate"] = _mean([float(r["rejected"]) for r in out])
    if answerable:
        rates["false_rejection_rate"] = _mean([float(r["rejected"]) for r in answerable])
    return {
        "n": len(rows),
        "recall": _mean([r["recall"] for r in answered]),
        "recall_at_5": _mean([r["recall_at_5"] for r in answered]),
        "hit1": _mean([float(r["hit1"]) for r in answered]),
        "notes": _mean([r["notes"] for r in rows]),
        "tokens": _mean([r["tokens"] for r in rows]),
        "answers": _mean([r["answers"] for r in rows if r.get("answers") is not None]),
        **rates,
        "p50_ms": round(statistics.median([r["ms"] for r in rows]), 1) if rows else None,
    }


def _mean(values: list[float]) -> float | None:
    return round(sum(values) / len(values), 3) if values else None


def misses(report: dict[str, Any]) -> str:
    """Every miss, mode by mode: a required note not in the context (with the notes that came instead, and why
    each came), an answer's words not in it, a question wrongly rejected, or an out-of-bundle question answered."""
    lines = []
    for spec, tiers in report["modes"].items():
        wrong = [r for r in tiers["per_question"].values()
                 if r["missed"] or r.get("answers_unshown") or (r["tier"] == "out") != r["rejected"]]
        lines.append(f"## {spec}: {len(wrong)} of {len(tiers['per_question'])} questions missed")
        places = [place for r in wrong for place in r.get("answers_where", [])]
        if places:
            held = sum(place["in_context"] for place in places)
            lacked = sum(bool(place["note"]) and not place["in_context"] for place in places)
            lines.append(f"Answers not shown: {len(places)}; {held} in a note the context holds (its section not "
                         f"shown: budget or section choice), {lacked} in a note it lacks (retrieval), "
                         f"{len(places) - held - lacked} in no one section")
        for r in wrong:
            lines.append(f"\n{r['id']} ({r['tier']}): {r['question']}")
            if r["rejected"]:
                lines.append(f"  rejected: {r['reason']}")
                lines.extend(f"  nearest: {n['id']} — {n['why']}" for n in r.get("nearest", []))
            elif r["tier"] == "out":
                lines.append(f"  answered, though the bundle does not hold the answer ({r['reason']})")
            for path in r["missed"]:
                why = r.get("missed_why", {}).get(path)
                lines.append(f"  missed: {path}" + (f" — {why}" if why else ""))
            for place in r.get("answers_where", []):
                lines.append(f"  answer not in the context: {place['answer']!r}{_where(place)}")
            for node in r["got"]:
                lines.append(f"  got: {node['id']} — {node['via']}")
        lines.append("")
    return "\n".join(lines)


def _where(place: dict[str, Any]) -> str:
    """Where the answer's words are, for a miss line."""
    if not place["note"]:
        return " — no one section of the notes shown or required holds these words whole"
    section = f"section {place['section']!r} of " if place["section"] else ""
    if place["in_context"]:
        return f" — in {section}{place['title']}, a note the context holds: that section was not shown"
    return f" — in {section}{place['title']}, a note the context lacks"


def as_table(report: dict[str, Any], markdown: bool = False) -> str:
    header = ["mode", "tier", "n", "recall", "recall@5", "hit@1", "notes", "tokens", "answers shown", "out rejected",
              "answerable rejected", "p50 ms"]
    lines = []
    for spec, tiers in report["modes"].items():
        for tier in (*TIERS, "all"):
            if tier not in tiers:
                continue
            s = tiers[tier]
            cells = [spec, tier, s["n"], s["recall"], s["recall_at_5"], s["hit1"], s["notes"], s["tokens"],
                     s.get("answers"), s.get("rejection_rate"), s.get("false_rejection_rate"), s["p50_ms"]]
            lines.append(["" if c is None else str(c) for c in cells])
    if markdown:
        out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        out += ["| " + " | ".join(row) + " |" for row in lines]
        return "\n".join(out)
    widths = [max(len(h), *(len(r[i]) for r in lines)) for i, h in enumerate(header)]
    fmt = "  ".join(f"{{:{w}}}" for w in widths)
    return "\n".join([fmt.format(*header)] + [fmt.format(*r) for r in lines])
