"""A server's first questions, alternating two checkouts' code on the same database.

    python benchmarks/first_question.py OLD_CHECKOUT NEW_CHECKOUT DB [--runs 3] [--wait 5] [--questions 3]

Each run starts `datasette serve DB` with each checkout first on PYTHONPATH, waits until it answers, then `--wait`
seconds more (a person opening the page and typing), and times its first `--questions` new questions over HTTP
(`/-/context_for.json`, one at a time; benchmarks/scale.py's questions). What a process makes once per build (the
title, category and date indexes, the model's session, the vectors) is paid by the first question unless the
server made it as it started (retrieve.prepare). Medians by question and every run are printed, with the hooks
each checkout's plugin has (`startup` or not: which code answered). The machines here are shared: compare within
one run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

from scale import questions, serve


def serve_checkout(checkout: str, db: str) -> tuple[subprocess.Popen, int]:
    """`datasette serve DB` running `checkout`'s datasette_okf (first on PYTHONPATH, started outside any checkout)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [checkout, os.environ.get("PYTHONPATH")]))}
    return serve(Path(db), env=env, cwd=tempfile.gettempdir())


def get(port: str | int, path: str) -> bytes:
    return urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=120).read()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("checkouts", nargs=2)
    parser.add_argument("db")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--wait", type=float, default=5.0)
    parser.add_argument("--questions", type=int, default=3)
    args = parser.parse_args()
    name = Path(args.db).stem
    asked = questions(Path(args.db), 30)[: args.questions]
    times: dict[str, list[list[float]]] = {c: [] for c in args.checkouts}
    hooks: dict[str, list[str]] = {}
    for _ in range(args.runs):
        for checkout in args.checkouts:
            process, port = serve_checkout(checkout, args.db)
            try:
                plugins = json.loads(get(port, "/-/plugins.json"))
                hooks[checkout] = next(p["hooks"] for p in plugins if p["name"] == "datasette-okf")
                time.sleep(args.wait)
                run = []
                for question in asked:
                    started = time.perf_counter()
                    get(port, "/-/context_for.json?" + urllib.parse.urlencode({"db": name, "q": question}))
                    run.append((time.perf_counter() - started) * 1000)
                times[checkout].append(run)
            finally:
                process.terminate()
                process.wait()
    for checkout, runs in times.items():
        medians = [round(statistics.median(run[i] for run in runs), 1) for i in range(len(asked))]
        print(f"{checkout}: startup hook {'startup' in hooks[checkout]}; questions 1..{len(asked)} median ms {medians}; "
              f"runs {[[round(t, 1) for t in run] for run in runs]}")


if __name__ == "__main__":
    main()
