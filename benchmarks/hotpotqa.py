"""context_for on hotpotqa-mini (the development set), with and without --link-mentions.

    python benchmarks/hotpotqa.py [--shared ../shared] [--work build/hotpotqa]

Builds ../shared/corpora/hotpotqa-mini/notes twice (the second build reuses the
first file's vectors), converts questions.json into a golden set (every question
needs its two supporting notes: tier synthesis), and prints the evaluate table
for each database. musique-mini is the held-out test set: this script never
touches it.
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from pathlib import Path

from datasette_okf.evaluate import as_table, evaluate
from datasette_okf.store import build

MODES = ["hybrid", "vector:5", "vector:10", "vector:15", "graph-walk", "keyword:10"]


def golden(questions: list[dict]) -> list[dict]:
    return [
        {"id": q["id"], "tier": "synthesis", "question": q["question"],
         "required": [p.removeprefix("notes/") for p in q["supporting_notes"]], "type": q["type"]}
        for q in questions
    ]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--shared", default=str(Path(__file__).resolve().parents[2] / "shared"))
    parser.add_argument("--work", default="build/hotpotqa")
    args = parser.parse_args()
    corpus = Path(args.shared) / "corpora" / "hotpotqa-mini"
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    questions = golden(json.loads((corpus / "questions.json").read_text()))
    (work / "golden.json").write_text(json.dumps(questions, indent=1))

    plain, mentions = work / "plain.db", work / "mentions.db"
    started = time.perf_counter()
    report = build([corpus / "notes"], plain)
    print(f"built {plain}: {report.bundles[0].concepts} notes, {report.bundles[0].chunks} chunks in {time.perf_counter() - started:.0f}s")
    shutil.copyfile(plain, mentions)
    started = time.perf_counter()
    report = build([corpus / "notes"], mentions, link_mentions=True)
    edges = report.bundles[0].edges_by_kind
    print(f"built {mentions}: {edges.get('mention', 0)} mention edges in {time.perf_counter() - started:.0f}s")

    for name, db in (("without mentions", plain), ("with --link-mentions", mentions)):
        result = evaluate(str(db), questions, MODES)
        print(f"\n### {name}\n")
        print(as_table(result, markdown=True))
        for kind in ("bridge", "comparison"):
            ids = {q["id"] for q in questions if q["type"] == kind}
            for mode in ("hybrid", "vector:10"):
                rows = [r for qid, r in result["modes"][mode]["per_question"].items() if qid in ids]
                recall = sum(r["recall"] for r in rows) / len(rows)
                print(f"- {kind} ({len(rows)}): {mode} recall {recall:.3f}")
        (work / f"report-{db.stem}.json").write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
