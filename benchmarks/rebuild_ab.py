"""One-edit and no-change rebuilds of one bundle, alternating two checkouts' code on the same database.

    python benchmarks/rebuild_ab.py OLD_CHECKOUT NEW_CHECKOUT BUNDLE DB [--runs 5] [--no-embed]

Each run appends a line to the first note of BUNDLE (sorted by path), waits past the scan's racy window
(bundle.RACY_NS), then times `build()` in a new process for each checkout: once after the edit, once with
nothing changed. Medians and every run are printed. The machines here are shared: compare within one run.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("checkouts", nargs=2)
    parser.add_argument("bundle")
    parser.add_argument("db")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--no-embed", action="store_true")
    args = parser.parse_args()
    note = min(Path(args.bundle).rglob("*.md"))
    times: dict[str, dict[str, list[float]]] = {c: {"one edit": [], "no change": []} for c in args.checkouts}
    for _ in range(args.runs):
        for checkout in args.checkouts:
            note.write_text(note.read_text() + f"\nA line about the ferry {time.time()}.\n")
            time.sleep(2.2)
            code = (f"import sys; sys.path.insert(0, {checkout!r}); from datasette_okf.store import build; "
                    f"build([{args.bundle!r}], {args.db!r}, embed={not args.no_embed}, embedding_cache=False)")
            for kind in ("one edit", "no change"):
                started = time.perf_counter()
                subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, cwd="/tmp")
                times[checkout][kind].append(time.perf_counter() - started)
    for checkout, kinds in times.items():
        print(checkout, {kind: f"{statistics.median(v):.2f} s ({', '.join(f'{x:.2f}' for x in v)})"
                         for kind, v in kinds.items()})


if __name__ == "__main__":
    main()
