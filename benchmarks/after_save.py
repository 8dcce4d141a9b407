"""The first question after each save under `build --watch --serve`, alternating two checkouts' code.

    python benchmarks/after_save.py OLD_CHECKOUT NEW_CHECKOUT VAULT [--runs 3] [--edits 3] [--wait 3]

Each checkout gets its own copy of VAULT and its own database (built once, then incrementally). Each run starts
`datasette okf build COPY -o lore.db --watch --serve` with the checkout first on PYTHONPATH (its Datasette inherits
it), waits until every vector is in, then `--edits` times: appends a sentence to a well-linked note, waits until the
rebuild and that sentence's vector are in the file (read with plain SQL over HTTP, which makes nothing of ours),
waits `--wait` seconds more (a person typing the question), and times one new question about the sentence over HTTP,
then the next new question (what any new question costs in that server, in the same minute).
A rebuild is a new state of the file: what a process makes once per build (title, category and date indexes, the
vectors) is paid by that question unless the server made it when the build landed (web.Follower). Whether each
answer holds the sentence is printed too. The machines here are shared: compare within one run.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from live_vault import ask, sql, wait_for
from replicas import free_port


def saves(checkout: str, copy: Path, db: Path, edits: int, wait: float, run: int, log: Path) -> list[tuple[float, float, bool]]:
    """One run of the watch on `checkout`'s code, per save: ms of the first question, of the next new one, and
    whether the first's context holds the saved sentence."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [checkout, os.environ.get("PYTHONPATH")]))}
    port = free_port()
    base = f"http://127.0.0.1:{port}/"
    with log.open("a") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "datasette", "okf", "build", str(copy), "-o", str(db), "--watch", "--serve",
             "--port", str(port)], env=env, cwd=tempfile.gettempdir(), stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True)
        try:
            wait_for(lambda: ask(base, "Who is in this vault?")["vectors"] == "used", every=1.0)
            notes = sql(base, db.stem, "select path from concepts where not is_index and not is_stub"
                                       " order by degree desc limit :n", n=str(edits))
            taken = []
            for e, note in enumerate(notes):
                word = f"Quillmere{run}x{e}"
                with open(copy / note["path"], "a", encoding="utf-8") as file:
                    file.write(f"\n\nIts keeper calls the brass lantern {word}.\n")
                wait_for(lambda word=word: sql(
                    base, db.stem, "select count(*) as n from chunks join chunk_floats using (id) where text like :w",
                    w=f"%{word}%")[0]["n"] > 0 and not sql(base, db.stem, "select 1 from meta where key = 'vectors_pending'"))
                time.sleep(wait)
                started = time.perf_counter()
                answer = ask(base, f"What does its keeper call the brass lantern {word}?")
                first = (time.perf_counter() - started) * 1000
                started = time.perf_counter()  # the next new question, the same-run baseline
                ask(base, f"Who keeps the brass lantern called {word}?")
                taken.append((first, (time.perf_counter() - started) * 1000, word in answer["context"]))
            return taken
        finally:
            os.killpg(process.pid, signal.SIGTERM)  # the watch and the Datasette it started
            process.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("checkouts", nargs=2)
    parser.add_argument("vault", type=Path)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--edits", type=int, default=3)
    parser.add_argument("--wait", type=float, default=3.0)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="after-save-"))
    results: dict[str, list[tuple[float, float, bool]]] = {c: [] for c in args.checkouts}
    for run in range(args.runs):
        for n, checkout in enumerate(args.checkouts):
            copy = work / f"vault{n}"
            if not copy.exists():
                shutil.copytree(args.vault, copy)
            results[checkout] += saves(checkout, copy, work / f"lore{n}.db", args.edits, args.wait, run,
                                       work / f"watch{n}.log")
    for checkout, taken in results.items():
        first, second = [t[0] for t in taken], [t[1] for t in taken]
        print(f"{checkout}: first question after a save, median {statistics.median(first):.1f} ms (min "
              f"{min(first):.1f}, max {max(first):.1f}; the saved sentence in {sum(t[2] for t in taken)} of "
              f"{len(taken)} contexts); the next new question {statistics.median(second):.1f} ms; every one "
              f"{[(round(a, 1), round(b, 1)) for a, b, _ in taken]}")
    print(f"logs in {work}")


if __name__ == "__main__":
    main()
