"""Load: 32 concurrent clients on /-/context_for.json for 60 s, with a same-run baseline.

    python benchmarks/load.py DB [--clients 32] [--seconds 60] [--questions 50]
                              [--rebuild BUNDLE [--rebuild-model MODEL]]

Starts `datasette serve DB` on 127.0.0.1 and, in this process, N client threads
that each keep one HTTP connection and ask questions (made from the file's own
titles and descriptions, as benchmarks/scale.py does) back to back. Reports
requests/s, p50/p95/p99 and errors, first for a trivial `select 1` through
Datasette's JSON API (the floor: what the server and these clients cost) and then
for context_for. With --rebuild, a background loop keeps editing one note of
BUNDLE (a writable copy: it appends to a file) and running `datasette okf build`
into DB while the clients ask, and the counts of rebuilds are reported.
The clients run on the same 2 cores as the server: the figures are a floor.
"""

from __future__ import annotations

import argparse
import http.client
import json
import statistics
import subprocess
import sys
import threading
import time
import urllib.parse
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from scale import machine, questions, serve

from datasette_okf.web import MAX_QUESTION


def drive(port: int, paths: list[str], clients: int, seconds: float) -> dict[str, float]:
    """`clients` threads asking `paths` round robin for `seconds`: latency percentiles and errors."""
    latencies: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()
    stop = time.monotonic() + seconds

    def client(offset: int) -> None:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        n = offset
        while time.monotonic() < stop:
            path = paths[n % len(paths)]
            n += 1
            started = time.perf_counter()
            try:
                connection.request("GET", path)
                response = connection.getresponse()
                body = response.read()
                ok = response.status == 200 and json.loads(body) is not None
                problem = None if ok else f"HTTP {response.status}: {body[:120]!r}"
            except Exception as error:  # noqa: BLE001 - every failure counts
                problem = repr(error)
                connection.close()
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            elapsed = (time.perf_counter() - started) * 1000
            with lock:
                if problem:
                    errors.append(problem)
                else:
                    latencies.append(elapsed)
        connection.close()

    threads = [threading.Thread(target=client, args=(i * 7,)) for i in range(clients)]
    began = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.monotonic() - began
    ordered = sorted(latencies) or [float("nan")]

    def pct(p: float) -> float:
        return ordered[min(len(ordered) - 1, round(p * (len(ordered) - 1)))]

    return {"requests": len(latencies), "per_second": len(latencies) / wall, "p50": statistics.median(ordered),
            "p95": pct(0.95), "p99": pct(0.99), "errors": len(errors), "first_error": errors[0] if errors else ""}


def rebuild_loop(bundle: Path, db: Path, model: str | None, stop: threading.Event, counts: dict) -> None:
    note = min(p for p in bundle.rglob("*.md") if p.name not in ("index.md", "log.md"))
    command = [sys.executable, "-m", "datasette", "okf", "build", str(bundle), "-o", str(db), "--no-embedding-cache"]
    if model == "hash":
        command = [sys.executable, str(HERE / "hash_model.py"), str(bundle), str(db)]
    elif model:
        command += ["-m", model]
    n = 0
    while not stop.is_set():
        n += 1
        note.write_text(note.read_text() + f"\n\nEdited under load, pass {n}.\n")
        result = subprocess.run(command, capture_output=True)
        counts["rebuilds" if result.returncode == 0 else "failed"] += 1
        if result.returncode:
            counts["error"] = result.stderr.decode()[-500:]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("db", type=Path)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--questions", type=int, default=50)
    parser.add_argument("--rebuild", type=Path, help="a writable copy of the bundle DB was built from")
    parser.add_argument("--rebuild-model", help="'hash' for benchmarks/hash_model.py, or an embedding model id")
    args = parser.parse_args()
    db_name = args.db.stem
    asked = [q[:MAX_QUESTION] for q in questions(args.db, args.questions)]
    paths = [f"/-/context_for.json?{urllib.parse.urlencode({'q': q})}" for q in asked]
    floor = [f"/{db_name}.json?sql=select+1"]
    process, port = serve(args.db)
    try:
        drive(port, paths, 2, 5)  # warm: every question embedded once, connections prepared
        print(f"machine: {machine()}\n{args.db}: {args.clients} clients, {args.seconds:g} s each\n")
        print("| run | requests/s | p50 ms | p95 ms | p99 ms | p99 / p50 | errors |\n|---|---|---|---|---|---|---|")
        runs = [("baseline: `select 1` through Datasette", floor, None), ("/-/context_for.json", paths, None)]
        if args.rebuild:
            runs.append(("/-/context_for.json while rebuilding", paths, args.rebuild))
        for label, targets, bundle in runs:
            stop, counts = threading.Event(), {"rebuilds": 0, "failed": 0}
            loop = None
            if bundle:
                loop = threading.Thread(target=rebuild_loop, args=(bundle, args.db, args.rebuild_model, stop, counts))
                loop.start()
            r = drive(port, targets, args.clients, args.seconds)
            stop.set()
            if loop:
                loop.join()
                label += f" ({counts['rebuilds']} rebuilds, {counts['failed']} failed)"
            print(f"| {label} | {r['per_second']:.1f} | {r['p50']:.1f} | {r['p95']:.1f} | {r['p99']:.1f} | "
                  f"{r['p99'] / r['p50']:.1f} | {r['errors']} |", flush=True)
            if r["errors"]:
                print(f"first error: {r['first_error']}")
            if counts.get("error"):
                print(f"rebuild error: {counts['error']}")
    finally:
        process.terminate()
        process.wait(timeout=30)


if __name__ == "__main__":
    main()
