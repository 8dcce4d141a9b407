"""What a process makes from one build of a file, and what it costs: the title index, the 1-bit codes, a scan.

    python benchmarks/per_build.py DB [--queries 30]

In one fresh process: the title index (seconds, RSS it adds), the chunks' 1-bit codes (seconds, RSS they add and
the peak while loading), then the median Hamming scan over random query vectors. Datasette pays the first two once
per build of a file (`per_build.PerBuild`), the scan once per question. Run it for another checkout's code with that
checkout first on sys.path (e.g. PYTHONPATH=../worktree), alternating, on one file.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

import numpy as np

import datasette_okf
from datasette_okf import hamming, sqlfunctions
from datasette_okf.retrieve import connection


def memory() -> tuple[float, float]:
    """(RSS, peak RSS) of this process in MB."""
    status = Path(f"/proc/{os.getpid()}/status").read_text().splitlines()
    field = {line.split(":")[0]: int(line.split()[1]) / 1024 for line in status if line.startswith(("VmRSS", "VmHWM"))}
    return field["VmRSS"], field["VmHWM"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("db")
    parser.add_argument("--queries", type=int, default=30)
    args = parser.parse_args()
    conn = connection(args.db)
    chunks = conn.execute("select count(*) from chunks").fetchone()[0]
    print(f"{args.db}: {chunks:,} chunks, datasette_okf from {os.path.dirname(datasette_okf.__file__)}")

    rss, _ = memory()
    started = time.perf_counter()
    index = sqlfunctions.title_index(conn)
    print(f"title index: {time.perf_counter() - started:.2f} s, +{memory()[0] - rss:.0f} MB")

    rss, peak = memory()
    started = time.perf_counter()
    ids, _ = hamming.codes_for(conn)
    after, after_peak = memory()
    print(f"1-bit codes of {len(ids):,} chunks: {time.perf_counter() - started:.2f} s, +{after - rss:.0f} MB, "
          f"peak +{max(after_peak - max(peak, rss), 0):.0f} MB over what the process had")

    width = hamming.vector_bytes(conn, "per_build.py") // 4
    queries = [np.random.default_rng(n).standard_normal(width).astype(np.float32).tobytes()
               for n in range(args.queries)]
    times = []
    for query in queries:
        started = time.perf_counter()
        hamming.hamming_candidates(conn, query, 200)
        times.append((time.perf_counter() - started) * 1000)
    print(f"Hamming scan, 200 candidates: p50 {statistics.median(times):.2f} ms")
    del index


if __name__ == "__main__":
    main()
