"""The first question after each save under `build --watch --serve`, alternating two checkouts' code.

    python benchmarks/after_save.py OLD_CHECKOUT NEW_CHECKOUT VAULT [--runs 3] [--edits 3] [--wait 3]

Each checkout gets its own copy of VAULT and its own database (built once, then incrementally). Each run starts
`datasette okf build COPY -o lore.db --watch --serve` with the checkout first on PYTHONPATH (its Datasette inherits
it), waits until every vector is in, then `--edits` times: appends a sentence to a well-linked note, waits until the
rebuild and that sentence's vector are in the file (read with plain SQL over HTTP, which makes nothing of ours),
waits `--wait` seconds more (a person typing the question), and times one new question about the sentence over HTTP.
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


def saves(checkout: str, copy: Path, db: Path, edits: int, wait: float, run: int, log: Path) -> list[tuple[float, bool]]:
    """One run of the watch on `checkout`'s code: (ms, whether the context holds the saved sentence) per save."""
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
                taken.append(((time.perf_counter() - started) * 1000, word in answer["context"]))
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
    results: dict[str, list[tuple[float, bool]]] = {c: [] for c in args.checkouts}
    for run in range(args.runs):
        for n, checkout in enumerate(args.checkouts):
            copy = work / f"vault{n}"
            if not copy.exists():
                shutil.copytree(args.vault, copy)
            results[checkout] += saves(checkout, copy, work / f"lore{n}.db", args.edits, args.wait, run,
                                       work / f"watch{n}.log")
    for checkout, taken in results.items():
        ms = [t for t, _ in taken]
        print(f"{checkout}: first question after a save, median {statistics.median(ms):.1f} ms (min {min(ms):.1f}, "
              f"max {max(ms):.1f}; the saved sentence in {sum(f for _, f in taken)} of {len(taken)} contexts); "
              f"every one {[round(t, 1) for t in ms]}")
    print(f"logs in {work}")


if __name__ == "__main__":
    main()
