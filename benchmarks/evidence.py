"""Is the answer in what the LLM reads? Note recall counts a note as found even when the context shows the wrong
section of it; this counts the words that answer.

    python benchmarks/evidence.py [--shared ../shared] [--work build/golden] [--sets thellade,13th-age,okf-samples,hotpotqa,...]
                                  [--modes hybrid,vector:10,keyword:10]

- thellade, 13th-age, okf-samples and the check sets: each answerable golden question's `answers`, the notes' own
  words that answer it ('There are nine exits. Only two are visible'; the quotes of three words or more of its
  `why` that a chunk of the database holds); one is found when `context_for`'s context holds it, markup and
  spacing evened out (`evaluate.evened`, as `datasette okf evaluate` counts them).
- hotpotqa, hotpotqa-mentions: the question's answer string (yes/no answers left out), found when the context holds it.
- thellade, 13th-age, also: benchmarks/golden/later-sections.json, 30 questions each written from a section other
  than the first of a long note (the note's best section must be chosen, not its first or its nearest in cosine);
  the quote is found when the required note's own block of the context holds it.

Reads the databases `benchmarks/golden_sets.py` built in --work (run that first). musique-mini is never read.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from golden_sets import ROOT, golden, vault_of

from datasette_okf.evaluate import evened, parse_mode
from datasette_okf.retrieve import context_for


def golden_answers(questions: list[dict]) -> list[tuple[dict, list[str]]]:
    """(question, its answers evened out), for the questions that have any."""
    return [(q, [evened(a) for a in q["answers"]]) for q in questions if q.get("answers")]


def answer_evidence(corpus: Path) -> list[tuple[dict, list[str]]]:
    questions = json.loads((corpus / "questions.json").read_text())
    return [(q, [evened(q["answer"])]) for q in questions if evened(q["answer"]) not in ("yes", "no")]


def later_sections(name: str) -> list[dict]:
    return [q for q in json.loads((ROOT / "benchmarks" / "golden" / "later-sections.json").read_text())
            if q["set"] == name]


def note_block(result: dict, path: str) -> str:
    """The required note's own block of the context ("### Title (id)" to the next note), or "" if it did not come."""
    node = next((n for n in result["nodes"] if n["path"] == path), None)
    if node is None:
        return ""
    header = f"### {node['title']} ({node['id']})"
    after = result["context"].split(header, 1)
    return after[1].split("\n### ", 1)[0] if len(after) == 2 else ""


def found_in_notes(db: Path, questions: list[dict], mode: str) -> tuple[int, list[str]]:
    """How many later-section quotes the required note's block holds, and the ids of those it does not."""
    name, options = parse_mode(mode)
    missing = [q["id"] for q in questions
               if evened(q["quote"]) not in evened(note_block(context_for(db, q["question"], mode=name, **options),
                                                          q["required"][0]))]
    return len(questions) - len(missing), missing


def found(db: Path, evidence: list[tuple[dict, list[str]]], mode: str) -> tuple[int, int, list[str]]:
    """How many pieces of evidence the contexts hold, of how many, and the ids of questions missing some."""
    name, options = parse_mode(mode)
    hits = total = 0
    missing = []
    for question, pieces in evidence:
        context = evened(context_for(db, question["question"], mode=name, **options)["context"])
        held = sum(piece in context for piece in pieces)
        hits, total = hits + held, total + len(pieces)
        if held < len(pieces):
            missing.append(question["id"])
    return hits, total, missing


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--shared", default=str(ROOT.parent / "shared"))
    parser.add_argument("--work", default="build/golden")
    parser.add_argument("--sets", default="thellade,13th-age,okf-samples,hotpotqa,hotpotqa-mentions,thellade-check,"
                                          "13th-age-check,thellade-check2,13th-age-check2,thellade-check3,13th-age-check3,"
                                          "thellade-check4,13th-age-check4,thellade-check5,13th-age-check5,"
                                          "thellade-check6,13th-age-check6,thellade-check7,13th-age-check7,"
                                          "thellade-check8,13th-age-check8")
    parser.add_argument("--modes", default="hybrid,vector:10,keyword:10")
    args = parser.parse_args()
    for name in args.sets.split(","):
        db = Path(args.work) / f"{vault_of(name)}.db"  # a check set asks its vault's database
        if name.startswith("hotpotqa"):
            evidence = answer_evidence(Path(args.shared) / "corpora" / "hotpotqa-mini")
        else:
            evidence = golden_answers(golden(f"check/{name}" if "-check" in name else name))
        for mode in args.modes.split(","):
            hits, total, missing = found(db, evidence, mode)
            listed = " ".join(missing) if len(missing) <= 15 else f"{len(missing)} questions"
            print(f"{name:17} {mode:11} {hits:4} of {total:4}  {hits / total:.3f}  missing some: {listed}")
        sections = later_sections(name)
        for mode in args.modes.split(",") if sections else []:
            hits, missing = found_in_notes(db, sections, mode)
            print(f"{name + ' later':17} {mode:11} {hits:4} of {len(sections):4}  {hits / len(sections):.3f}  "
                  f"missing: {' '.join(missing)}")


if __name__ == "__main__":
    main()
