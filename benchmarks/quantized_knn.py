"""Binary-quantised KNN with a float re-rank, against exact float KNN, on a built database's vectors.

    python benchmarks/quantized_knn.py DB [--queries 50] [--candidates 10,20,40]

Builds a temporary vec0 `bit[D]` table from the file's chunk vectors
(vec_quantize_binary), takes the top k x m by Hamming distance, re-ranks those by
exact cosine, and reports recall@10 against exact KNN and the latency of both.
Queries are chunk vectors of the file itself, perturbed (so they are realistic
points of the distribution, not random noise).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import sqlite_utils

from datasette_okf.sqlfunctions import load_sqlite_vec


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("db")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--candidates", default="10,20,40")
    args = parser.parse_args()
    db = sqlite_utils.Database(memory=True)
    load_sqlite_vec(db.conn)
    db.execute("attach database ? as src", [args.db])
    dims = int(db.execute("select value from src.meta where key = 'embedding_dimensions'").fetchone()[0])
    rows = db.execute("select rowid, embedding from src.chunk_vectors").fetchall()
    ids = np.array([r[0] for r in rows])
    matrix = np.vstack([np.frombuffer(r[1], dtype=np.float32) for r in rows])
    db.execute(f"create virtual table exact using vec0(embedding float[{dims}] distance_metric=cosine)")
    db.execute(f"create virtual table bits using vec0(embedding bit[{dims}])")
    with db.conn:
        db.conn.executemany("insert into exact(rowid, embedding) values (?, ?)", zip(ids.tolist(), (m.tobytes() for m in matrix)))
        db.conn.executemany("insert into bits(rowid, embedding) values (?, vec_quantize_binary(?))",
                            zip(ids.tolist(), (m.tobytes() for m in matrix)))
    rng = np.random.default_rng(1)
    picks = matrix[rng.integers(0, len(matrix), args.queries)]
    queries = picks + 0.3 * rng.standard_normal(picks.shape).astype(np.float32) / np.sqrt(dims)
    queries = (queries / np.linalg.norm(queries, axis=1, keepdims=True)).astype(np.float32)
    position = {int(i): n for n, i in enumerate(ids)}
    print(f"{args.db}: {len(ids):,} vectors x {dims}")
    exact_times, truth = [], []
    for q in queries:
        started = time.perf_counter()
        found = db.execute("select rowid from exact where embedding match ? and k = 10", [q.tobytes()]).fetchall()
        exact_times.append(time.perf_counter() - started)
        truth.append({r[0] for r in found})
    print(f"exact float KNN k=10: p50 {statistics.median(exact_times) * 1000:.2f} ms")
    for m in [int(x) for x in args.candidates.split(",")]:
        times, recalls = [], []
        for q, expected in zip(queries, truth):
            started = time.perf_counter()
            candidates = [r[0] for r in db.execute(
                "select rowid from bits where embedding match vec_quantize_binary(?) and k = ?", [q.tobytes(), 10 * m])]
            vectors = matrix[[position[c] for c in candidates]]
            best = np.argsort(-(vectors @ q))[:10]
            top = {candidates[i] for i in best}
            times.append(time.perf_counter() - started)
            recalls.append(len(top & expected) / 10)
        print(f"binary KNN top {10 * m} + float re-rank: p50 {statistics.median(times) * 1000:.2f} ms, "
              f"recall@10 {statistics.mean(recalls):.3f}")


if __name__ == "__main__":
    main()
