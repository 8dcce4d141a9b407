"""Every development golden set, every mode, side by side: the numbers retrieval changes are judged on.

    python benchmarks/golden_sets.py [--shared ../shared] [--work build/golden] [--sets examples,thellade,...]
                                     [--modes hybrid,vector:10,...] [--by-question] [--save report.json]

Builds each set's bundle into --work (incrementally: a second run only re-reads what changed, and keeps the
vectors), then runs `datasette_okf.evaluate` on it. The sets:

- examples, examples-mentions: examples/campaign.golden.json (written with the example bundle), built without
  and with --link-mentions
- thellade, 13th-age: benchmarks/golden/*.json, over the real vaults in ../shared/corpora
- okf-samples: benchmarks/golden/okf-samples.json, over four of Google's OKF sample bundles built into one database
  (acme_retail, crypto_bitcoin, ga4, stackoverflow), with adversarial questions that share their vocabulary
- hotpotqa, hotpotqa-mentions: hotpotqa-mini's questions (two supporting notes each), built without and with
  --link-mentions
- thellade-check, 13th-age-check: benchmarks/golden/check/*.json, 32 more questions on each real vault, written at
  issue 17's stop 36 by sessions that saw only the notes (never the retriever's results), on the same databases as
  thellade and 13th-age; their first run measured how far the tuning on the other sets carries to new questions
- thellade-check2, 13th-age-check2: 24 more each, written the same way at the end of stop 36, after its changes;
  never looked at question by question
- thellade-check3, 13th-age-check3: 40 more each (8-10 lookup, 16 linked note, 8-10 temporal, 6 out), written the
  same way at the start of stop 38; their first run, on stop 37's code and on stop 38's first change, read as totals
- thellade-check4, 13th-age-check4: 40 more each (8-10 lookup, 16 linked note, 8-10 temporal, 6 out), written the
  same way at stop 40, when nothing in retrieval changed: their first run is where stop 39's code stands on questions
  no change was made for
- thellade-check5, 13th-age-check5: 40 more each (9 lookup, 16 linked note, 9 temporal, 6 out), written the same way
  at stop 41 and run once on its code before any question was read
- thellade-check6, 13th-age-check6: 40 more each (9 lookup, 16 linked note, 9 temporal, 6 out), written the same way
  at stop 42 and run once on its first code before any question was read
- thellade-check7, 13th-age-check7: 40 more each, the same tiers, written the same way at stop 43 and run once on
  stop 42's final code before any question was read
- thellade-check8, 13th-age-check8: 40 more each, the same tiers, written the same way at stop 44 and run once on
  that stop's code of the moment (73c1065) before any question was read
- 13th-age-check10: 40 more (8 lookup, 16 linked note, 10 temporal, 6 out), written the same way at stop 56 by a
  session that saw only the vault, and run once on that stop's code (and stop 55's) before any question was read
- thellade-check10, thellade-check11: 40 each (8 lookup, 16 linked note, 10 temporal, 6 out), written the same way
  by two sessions at stop 56, delivered after it closed, and run once at stop 57 on stop 56's final code (and stop
  55's) before any question was read
- thellade-sets, 13th-age-sets: 20 each (16 synthesis questions asking for a set of 2-8 notes, all of them required,
  defined in the vault by tags, by folder or by a link or property, about a third each; 4 out-of-bundle sets in the
  vault's words), written the same way at stop 49 and run on stop 48's code before any question was read

musique-mini is the held-out test set: this script never touches it.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import time
from pathlib import Path

from datasette_okf.evaluate import as_table, evaluate, misses
from datasette_okf.store import build

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
MODES = "hybrid,vector:5,vector:10,vector:15,keyword:10,graph-walk"
VAULTS = {"thellade": "thellade-campaign-vault", "13th-age": "13th-age-srd-vault"}  # set name -> ../shared/corpora
CHECK_ROUNDS = ("", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11")  # benchmarks/golden/check/<vault>-check<round>.json
SET_ROUNDS = ("", "2")  # benchmarks/golden/check/<vault>-sets<round>.json: questions asking for a set of notes


def hotpotqa_golden(corpus: Path) -> list[dict]:
    return [{"id": q["id"], "tier": "synthesis", "question": q["question"],
             "required": [p.removeprefix("notes/") for p in q["supporting_notes"]]}
            for q in json.loads((corpus / "questions.json").read_text())]


def sets(shared: Path) -> dict[str, tuple[list[Path], list[dict], dict]]:
    """name -> (bundle folders, golden questions, build options)."""
    corpora = shared / "corpora"
    hotpotqa = hotpotqa_golden(corpora / "hotpotqa-mini")
    examples = json.loads((ROOT / "examples" / "campaign.golden.json").read_text())
    okf_samples = [corpora / "okf-samples" / name for name in ("acme_retail", "crypto_bitcoin", "ga4", "stackoverflow")]
    return {
        "examples": ([ROOT / "examples" / "campaign"], examples, {}),
        "examples-mentions": ([ROOT / "examples" / "campaign"], examples, {"link_mentions": True}),
        "thellade": ([corpora / "thellade-campaign-vault" / "vault"], golden("thellade"), {}),
        "13th-age": ([corpora / "13th-age-srd-vault" / "vault"], golden("13th-age"), {}),
        "okf-samples": (okf_samples, golden("okf-samples"), {}),
        "hotpotqa": ([corpora / "hotpotqa-mini" / "notes"], hotpotqa, {}),
        "hotpotqa-mentions": ([corpora / "hotpotqa-mini" / "notes"], hotpotqa, {"link_mentions": True}),
        **{f"{vault}-check{round_}": ([corpora / folder / "vault"], golden(f"check/{vault}-check{round_}"), {})
           for round_ in CHECK_ROUNDS for vault, folder in VAULTS.items()
           if (HERE / "golden" / "check" / f"{vault}-check{round_}.json").exists()},
        **{f"{vault}-sets{round_}": ([corpora / folder / "vault"], golden(f"check/{vault}-sets{round_}"), {})
           for round_ in SET_ROUNDS for vault, folder in VAULTS.items()
           if (HERE / "golden" / "check" / f"{vault}-sets{round_}.json").exists()},
    }


def vault_of(name: str) -> str:
    """The set whose database a set reads: "thellade-check2" and "thellade-sets2" ask "thellade"."""
    return re.sub(r"-(check|sets)\d*$", "", name)


def golden(name: str) -> list[dict]:
    return json.loads((HERE / "golden" / f"{name}.json").read_text())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--shared", default=str(ROOT.parent / "shared"))
    parser.add_argument("--work", default="build/golden")
    parser.add_argument("--sets", default="examples,examples-mentions,thellade,13th-age,okf-samples,hotpotqa,hotpotqa-mentions,thellade-check,"
                        "13th-age-check,thellade-check2,13th-age-check2,thellade-check3,13th-age-check3")
    parser.add_argument("--modes", default=MODES)
    parser.add_argument("--by-question", action="store_true")
    parser.add_argument("--save", help="write the whole report as JSON here")
    parser.add_argument("--no-build", action="store_true", help="evaluate the databases already in --work as they are")
    args = parser.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    available = sets(Path(args.shared))
    modes = [m for m in args.modes.split(",") if m]
    reports = {}
    for name in args.sets.split(","):
        folders, questions, options = available[name]
        db = work / f"{vault_of(name)}.db"  # a check set asks the database its vault is built into
        plain = work / f"{name.removesuffix('-mentions')}.db"
        if options.get("link_mentions") and not db.exists() and plain.exists():
            shutil.copyfile(plain, db)  # the same notes: reuse their vectors
        started = time.perf_counter()
        if not args.no_build:
            build(folders, db, **options)
        print(f"\n### {name} ({len(questions)} questions; built in {time.perf_counter() - started:.0f} s)\n", flush=True)
        reports[name] = evaluate(str(db), questions, modes)
        print(as_table(reports[name], markdown=True))
        if args.by_question:
            print("\n" + misses(reports[name]))
    if args.save:
        Path(args.save).write_text(json.dumps(reports, indent=1))


if __name__ == "__main__":
    main()
