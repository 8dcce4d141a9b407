"""What one question across several databases costs (/-/context_for.json?db=*), against asking each alone.

    python benchmarks/across.py DB [DB ...] [--repeat 5]

Datasette's in-process client, every database attached; each question asked of each database alone and of all of
them at once (db=*), medians in milliseconds over --repeat rounds after one warm-up round (query vectors cached,
as on a running server). The databases are queried concurrently on Datasette's SQL thread pool (3 threads by
default), so db=* costs about the slowest database's time, not the sum, while cores are free.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
import urllib.parse
from pathlib import Path

from datasette.app import Datasette

QUESTIONS = ["Who is Vaust Hadrinel?", "Who does the Tinker work for?", "Who is Nessa Thorne?",
             "What happened at the Drowned Steps?", "Where is Blackwater Crossing?", "How does the tide affect trade?"]


async def timed(ds: Datasette, question: str, db: str) -> float:
    started = time.perf_counter()
    response = await ds.client.get("/-/context_for.json?" + urllib.parse.urlencode({"q": question, "db": db}))
    assert response.status_code == 200, response.text
    return (time.perf_counter() - started) * 1000


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("databases", nargs="+", type=Path)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    ds = Datasette([str(p) for p in args.databases])
    names = [p.stem for p in args.databases]
    times: dict[str, list[float]] = {name: [] for name in [*names, "*"]}
    for round_ in range(args.repeat + 1):
        for question in QUESTIONS:
            for name in [*names, "*"]:
                ms = await timed(ds, question, name)
                if round_:
                    times[name].append(ms)
    singles = {name: statistics.median(times[name]) for name in names}
    print(f"{len(QUESTIONS)} questions x {args.repeat} rounds, medians:")
    for name, ms in singles.items():
        print(f"  {name:20} alone   {ms:7.1f} ms")
    print(f"  sum of the {len(names)} alone  {sum(singles.values()):7.1f} ms; slowest alone {max(singles.values()):.1f} ms")
    print(f"  db=* (all at once)      {statistics.median(times['*']):7.1f} ms")


if __name__ == "__main__":
    asyncio.run(main())
