"""The whole build command after one edit and with nothing changed: `datasette okf build` (Datasette's command line,
which loads every installed Datasette plugin first) against `datasette-okf build` (this package's own), alternating.

    python benchmarks/build_command.py BUNDLE DB [--runs 5] [--no-embed]

Each run, for each command: appends a line to the first note of BUNDLE (sorted by path), waits past the scan's racy
window (bundle.RACY_NS), times the command, then times it again with nothing changed. Medians and every run are
printed. Both commands run the same installed code; the machines here are shared: compare within one run.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import time
from pathlib import Path

COMMANDS = {"datasette okf build": ["datasette", "okf", "build"], "datasette-okf build": ["datasette-okf", "build"]}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("bundle")
    parser.add_argument("db")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--no-embed", action="store_true")
    args = parser.parse_args()
    note = min(Path(args.bundle).rglob("*.md"))
    times: dict[str, dict[str, list[float]]] = {name: {"one edit": [], "no change": []} for name in COMMANDS}
    for run in range(args.runs):
        for name in (list(COMMANDS) if run % 2 == 0 else list(reversed(COMMANDS))):
            command = [shutil.which(COMMANDS[name][0]), *COMMANDS[name][1:], args.bundle, "-o", args.db,
                       *(["--no-embed"] if args.no_embed else [])]
            note.write_text(note.read_text() + f"\nA line about the ferry {time.time()}.\n")
            time.sleep(2.2)
            for kind in ("one edit", "no change"):
                started = time.perf_counter()
                subprocess.run(command, check=True, capture_output=True, cwd="/tmp")
                times[name][kind].append(time.perf_counter() - started)
    for name, kinds in times.items():
        print(f"{name}: " + "; ".join(f"{kind} median {statistics.median(t):.2f} s ({', '.join(f'{x:.2f}' for x in t)})"
                                      for kind, t in kinds.items()))


if __name__ == "__main__":
    main()
