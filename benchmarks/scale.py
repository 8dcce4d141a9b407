"""Build and query costs from 1k to 100k concepts, with same-run baselines.

    python benchmarks/scale.py --sizes 1000,10000 [--work build/scale] [--questions 30] [--queries-only]

For each size: generate a synthetic bundle (benchmarks/synthetic.py), build it
without vectors, with vectors (the real default model at 1k; at 10k and more the
fast hash model of benchmarks/hash_model.py, labelled "hash"), rebuild with no
change and with one edited file, then measure context_for in-process (per stage)
and over HTTP from a Datasette on 127.0.0.1, next to bare FTS5 and bare vec0
queries on the same file. Query embeddings always come from the real default
model: on a hash-built file the benchmark's copy is relabelled for timing only
(the vectors do not mean anything there, the costs are the same).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import socket
import sqlite3
import statistics
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from baselines import NEAREST_CHUNKS_SQL
from synthetic import generate

import datasette_okf
from datasette_okf.embed import DEFAULT_MODEL, embed_query
from datasette_okf.retrieve import connection, context_for

# The builds and the Datasette this script starts run the datasette_okf it imported: timing another checkout's code
# (a worktree on sys.path) timed the installed package's in every child process until stop 35.
SAME_CODE = {**os.environ, "PYTHONPATH": os.pathsep.join(
    [str(Path(datasette_okf.__file__).resolve().parent.parent), *filter(None, [os.environ.get("PYTHONPATH")])])}


def machine() -> str:
    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{os.cpu_count()} cores, {model}, {platform.machine()}, CPython {platform.python_version()}"


def run(args: list[str]) -> tuple[float, float]:
    """Wall seconds and peak RSS (MB) of a child process."""
    started = time.perf_counter()
    process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=SAME_CODE)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    if status != 0:
        raise RuntimeError(f"{args} failed: {process.stderr.read().decode()[-2000:]}")
    return wall, usage.ru_maxrss / 1024


def percentiles(values: list[float]) -> str:
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return f"{statistics.median(values):.1f} / {p95:.1f}"


def questions(db: Path, count: int) -> list[str]:
    """Questions naming a concept, questions paraphrasing one, and some off-topic ones."""
    conn = sqlite3.connect(db)
    rows = conn.execute("select title, description from concepts where not is_index order by id").fetchall()
    conn.close()
    step = max(1, len(rows) // count)
    picked = rows[::step][:count]
    out = []
    for i, (title, description) in enumerate(picked):
        out.append(f"Who or what is {title}?" if i % 3 == 0 else
                   f"Which note says {' '.join((description or '').split()[:5])}?" if i % 3 == 1 else
                   f"How is {title} connected to the others?")
    return out


def query_latency(db: Path, asked: list[str]) -> dict[str, str]:
    conn = connection(str(db))
    context_for(conn, "warm up")
    stages: dict[str, list[float]] = {"seeds": [], "walk": [], "budget": [], "total": []}
    cold, knn, fts = [], [], []
    for question in asked:
        embed_query.cache_clear()
        started = time.perf_counter()
        context_for(conn, question)
        cold.append((time.perf_counter() - started) * 1000)
        result = context_for(conn, question)
        for stage, times in stages.items():
            times.append(result["timings_ms"].get(stage, 0.0))
        started = time.perf_counter()
        conn.execute(NEAREST_CHUNKS_SQL, {"q": question, "k": 10}).fetchall()
        knn.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        conn.execute("select rowid from concepts_fts where concepts_fts match okf_fts_query(?) order by rank limit 10",
                     [question]).fetchall()
        fts.append((time.perf_counter() - started) * 1000)
    out = {f"context_for {name} (warm)": percentiles(values) for name, values in stages.items()}
    out["context_for total (cold: embeds)"] = percentiles(cold)
    out["baseline: bare vec0 KNN k=10"] = percentiles(knn)
    out["baseline: bare FTS5 BM25 limit 10"] = percentiles(fts)
    return out


DEFAULT_BUILD = ("import sys; from datasette_okf.store import build; "
                 "build([sys.argv[1]], sys.argv[2], embedding_cache=False)")


def serve(db: Path, env: dict[str, str] | None = None, cwd: str | None = None) -> tuple[subprocess.Popen, int]:
    """`datasette serve DB` on a free 127.0.0.1 port, once it accepts connections: (process, port). `env`: the
    child's environment (default SAME_CODE); `cwd`: its folder (`-m` puts it first on sys.path)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    process = subprocess.Popen([sys.executable, "-m", "datasette", "serve", str(db), "-h", "127.0.0.1", "-p", str(port)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env or SAME_CODE, cwd=cwd)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return process, port
        except OSError:
            time.sleep(0.2)
    process.kill()
    raise SystemExit("datasette did not start")


def http_latency(db: Path, asked: list[str]) -> tuple[dict[str, str], float]:
    process, port = serve(db)
    try:
        base = f"http://127.0.0.1:{port}/-/context_for.json?"
        urllib.request.urlopen(base + urllib.parse.urlencode({"q": "warm up"}), timeout=120).read()
        times: dict[str, list[float]] = {"new": [], "repeated": []}
        for question in asked:
            for kind_times in times.values():  # a new question is embedded; a repeated one hits the query cache
                started = time.perf_counter()
                body = urllib.request.urlopen(base + urllib.parse.urlencode({"q": question}), timeout=120).read()
                kind_times.append((time.perf_counter() - started) * 1000)
            json.loads(body)
        status = Path(f"/proc/{process.pid}/status").read_text()
        peak = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM")) / 1024
        return {kind: percentiles(values) for kind, values in times.items()}, peak
    finally:
        process.terminate()
        process.wait(timeout=30)


def bench(size: int, work: Path, count: int) -> list[tuple[str, str]]:
    bundle = work / f"synthetic-{size}"
    generate(size, bundle)
    rows: list[tuple[str, str]] = []
    # the shared vector cache would time cache hits, and fill ~/.cache with synthetic vectors: off
    cli = [sys.executable, "-m", "datasette", "okf", "build", str(bundle), "--no-embedding-cache"]
    plain = work / f"plain-{size}.db"
    plain.unlink(missing_ok=True)
    wall, rss = run(cli + ["-o", str(plain), "--no-embed"])
    conn = sqlite3.connect(plain)
    concepts, chunks = (conn.execute("select count(*) from concepts where not is_index").fetchone()[0],
                        conn.execute("select count(*) from chunks").fetchone()[0])
    conn.close()
    rows.append(("concepts / chunks", f"{concepts:,} / {chunks:,}"))
    rows.append(("build, no vectors", f"{wall:.1f} s ({concepts / wall:,.0f} concepts/s), peak RSS {rss:.0f} MB"))
    full = work / f"full-{size}.db"
    full.unlink(missing_ok=True)
    hashed = size > 1000
    if hashed:
        wall, rss = run([sys.executable, str(HERE / "hash_model.py"), str(bundle), str(full)])
        label = "hash model"
    else:
        wall, rss = run(cli + ["-o", str(full)])
        label = "default model"
    rows.append((f"build with vectors ({label})", f"{wall:.1f} s ({chunks / wall:,.0f} chunks/s), peak RSS {rss:.0f} MB"))
    rebuild = [sys.executable, str(HERE / "hash_model.py"), str(bundle), str(full)] if hashed else cli + ["-o", str(full)]
    wall, _ = run(rebuild)
    rows.append(("rebuild, nothing changed", f"{wall:.2f} s"))
    edited = min((bundle / "people").glob("*.md"))
    edited.write_text(edited.read_text() + "\n## Update\n\nA new paragraph about the harbour and its tolls.\n")
    wall, _ = run(rebuild)
    rows.append(("rebuild, one file edited", f"{wall:.2f} s"))
    edited.write_text(edited.read_text() + "\nAnother line.\n")
    wall, _ = run(cli + ["-o", str(plain), "--no-embed"])
    rows.append(("same edit, file without vectors (no model loaded)", f"{wall:.2f} s"))
    rows.append(("database size", f"{full.stat().st_size / 1e6:,.0f} MB"))
    timed = full
    if hashed:
        timed = work / f"timing-{size}.db"
        shutil.copyfile(full, timed)
        conn = sqlite3.connect(timed)
        conn.execute("update meta set value = ? where key = 'embedding_model'", [DEFAULT_MODEL])
        # the chunks too, or a rebuild of the copy (benchmarks/load.py --rebuild) re-embeds all of them
        conn.execute("update chunks set embedded_with = ?", [DEFAULT_MODEL])
        conn.commit()
        conn.close()
        # The hash model is an llm plugin: every build that embeds looks it up in llm's registry, which imports
        # llm's OpenAI plugin (0.7-0.8 s). The default model skips the registry and loads its ONNX session instead
        # (0.35 s): the same one-file edit, as a user of the default model pays for it, on the relabelled copy.
        default_rebuild = [sys.executable, "-c", DEFAULT_BUILD, str(bundle), str(timed)]
        run(default_rebuild)  # settles the copy: the gate calibrated with the default model
        edited.write_text(edited.read_text() + "\nA third line, about the ferry.\n")
        wall, _ = run(default_rebuild)
        rows.append(("same edit, default model (the relabelled copy)", f"{wall:.2f} s"))
    asked = questions(timed, count)
    for name, value in query_latency(timed, asked).items():
        rows.append((name + " p50 / p95 ms", value))
    return rows + serve_rows(timed, asked)


def serve_rows(timed: Path, asked: list[str]) -> list[tuple[str, str]]:
    latency, peak = http_latency(timed, asked)
    return [(f"HTTP /-/context_for.json, {kind} question, p50 / p95 ms", value) for kind, value in latency.items()] + [
        ("Datasette peak RSS", f"{peak:.0f} MB")]


def query_rows(size: int, work: Path, count: int) -> list[tuple[str, str]]:
    """Query costs only, on the file an earlier full run left (--queries-only)."""
    timed = work / (f"timing-{size}.db" if size > 1000 else f"full-{size}.db")
    if not timed.exists():
        raise SystemExit(f"{timed} not found: run without --queries-only first")
    asked = questions(timed, count)
    rows = [(name + " p50 / p95 ms", value) for name, value in query_latency(timed, asked).items()]
    return rows + serve_rows(timed, asked)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--work", default="build/scale")
    parser.add_argument("--questions", type=int, default=30)
    parser.add_argument("--queries-only", action="store_true",
                        help="skip generating and building; time questions on the files of an earlier run")
    args = parser.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    print(f"machine: {machine()}\n")
    for size in [int(s) for s in args.sizes.split(",")]:
        rows = query_rows(size, work, args.questions) if args.queries_only else bench(size, work, args.questions)
        print(f"### {size:,} concepts\n\n| measure | result |\n|---|---|")
        for name, value in rows:
            print(f"| {name} | {value} |")
        print(flush=True)


if __name__ == "__main__":
    main()
