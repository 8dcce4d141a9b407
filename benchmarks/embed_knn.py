"""Embedding throughput of the default model, and KNN latency: vec0 next to numpy brute force.

    python benchmarks/embed_knn.py [BUNDLE]

Throughput is measured on the real chunks of BUNDLE (default: examples/campaign),
batched and length-sorted as the build does. KNN runs on the same random unit
vectors in a vec0 table (cosine) and in a numpy matrix, at 10k and 100k rows,
50 queries each, k = 10; the numbers are medians.
"""

from __future__ import annotations

import platform
import resource
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import sqlite_utils

from datasette_okf.bundle import parse_bundle, scan_bundle
from datasette_okf.chunks import embedding_text, split_into_chunks
from datasette_okf.embed import minilm
from datasette_okf.sqlfunctions import load_sqlite_vec

ROOT = Path(__file__).resolve().parent.parent


def chunk_texts(bundle: Path) -> list[str]:
    texts = []
    for concept in parse_bundle(scan_bundle(bundle)).concepts:
        for chunk in split_into_chunks(concept.body):
            texts.append(embedding_text(concept.title, concept.description, chunk.heading, chunk.text))
    return sorted(texts, key=len)


def throughput(texts: list[str], batch: int = 16) -> float:
    encoder = minilm()
    encoder.encode(texts[:2])  # warm up
    started = time.perf_counter()
    for i in range(0, len(texts), batch):
        encoder.encode(texts[i : i + batch])
    return len(texts) / (time.perf_counter() - started)


def knn(rows: int, dims: int = 384, queries: int = 50, k: int = 10) -> tuple[float, float]:
    rng = np.random.default_rng(0)
    matrix = rng.standard_normal((rows, dims)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    probes = matrix[rng.integers(0, rows, queries)] + 0.05 * rng.standard_normal((queries, dims)).astype(np.float32)
    probes /= np.linalg.norm(probes, axis=1, keepdims=True)

    db = sqlite_utils.Database(memory=True)
    load_sqlite_vec(db.conn)
    db.execute(f"create virtual table v using vec0(embedding float[{dims}] distance_metric=cosine)")
    with db.conn:
        db.conn.executemany("insert into v(rowid, embedding) values (?, ?)", ((i, matrix[i].tobytes()) for i in range(rows)))
    vec_times, numpy_times = [], []
    for probe in probes:
        started = time.perf_counter()
        found = db.execute("select rowid from v where embedding match ? and k = ?", [probe.tobytes(), k]).fetchall()
        vec_times.append(time.perf_counter() - started)
        started = time.perf_counter()
        scores = matrix @ probe
        top = np.argpartition(-scores, k)[:k]
        top = top[np.argsort(-scores[top])]
        numpy_times.append(time.perf_counter() - started)
        assert [r[0] for r in found] == top.tolist()  # the same answer, or the comparison means nothing
    return statistics.median(vec_times) * 1000, statistics.median(numpy_times) * 1000


def main(bundle: Path) -> None:
    print(f"machine: {platform.machine()}, {platform.processor() or 'cpu'}, CPython {platform.python_version()}")
    texts = chunk_texts(bundle)
    rate = throughput(texts)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"default model: {len(texts)} chunks of {bundle.name}: {rate:.1f} chunks/s (batch 16, peak RSS {peak:.0f} MB)")
    started = time.perf_counter()
    for _ in range(20):
        minilm().encode(["who runs the harbour council?"])
    print(f"one query embedding: {(time.perf_counter() - started) / 20 * 1000:.1f} ms")
    for rows in (10_000, 100_000):
        vec_ms, numpy_ms = knn(rows)
        print(f"KNN k=10 over {rows:,} x 384: vec0 {vec_ms:.2f} ms, numpy brute force {numpy_ms:.2f} ms (median of 50)")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "examples" / "campaign")
