"""context_for latency on a built database, next to plain KNN and BM25 queries in the same run.

    python benchmarks/context_latency.py build/thellade.db [QUESTIONS.txt]

Each question runs once cold (its embedding computed) and twice warm (cached);
the baselines are the bare vec0 KNN (k=10) and FTS5 BM25 (limit 10) statements
on the same connection. Medians and 95th percentiles in milliseconds.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

from baselines import NEAREST_CHUNKS_SQL  # the script's folder is on sys.path

from datasette_okf.embed import embed_query
from datasette_okf.retrieve import connection, context_for

THELLADE = [
    "Who leads the Phoenix Assembly?",
    "What is the Whispervault Archive and who runs it?",
    "Which organization is Tyren Zorath part of?",
    "Where is the Obsidian Hall?",
    "What happened in the session where memory burns?",
    "Who are the allies of the Sable Accord?",
    "What do the people of Kanda worship?",
    "Which deity rules over the dead?",
    "What are the laws of the Phoenix Assembly?",
    "Who is Thalia Ashglow?",
    "What creatures live in the Outcast Isles?",
    "Which faction sabotaged the Emberlight Assembly Wing?",
    "What is the calendar of Thellade?",
    "Who is the Midnight Covenant's leader?",
    "What is a good tavern in Silverspire Terrace?",
    "How do I bake sourdough bread?",
]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main(db: Path, questions: list[str]) -> None:
    conn = connection(str(db))
    model = conn.execute("select value from meta where key = 'embedding_model'").fetchone()[0]
    context_for(conn, "warm up the model and the title index")
    cold, warm, knn, bm25 = [], [], [], []
    for question in questions:
        embed_query.cache_clear()
        started = time.perf_counter()
        context_for(conn, question)
        cold.append((time.perf_counter() - started) * 1000)
        for _ in range(2):
            started = time.perf_counter()
            context_for(conn, question)
            warm.append((time.perf_counter() - started) * 1000)
            embed_query(model, question)  # cached: the KNN baseline times SQL only
            started = time.perf_counter()
            conn.execute(NEAREST_CHUNKS_SQL, {"q": question, "k": 10}).fetchall()
            knn.append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            conn.execute(
                "select rowid from concepts_fts where concepts_fts match okf_fts_query(?) order by rank limit 10",
                [question],
            ).fetchall()
            bm25.append((time.perf_counter() - started) * 1000)
    concepts = conn.execute("select count(*) from concepts").fetchone()[0]
    chunks = conn.execute("select count(*) from chunks").fetchone()[0]
    print(f"{db}: {concepts} concepts, {chunks} chunks, model {model}, {len(questions)} questions")
    for name, values in (("context_for, cold (embeds the question)", cold), ("context_for, warm", warm),
                         ("baseline: vec0 KNN k=10 (cached vector)", knn), ("baseline: FTS5 BM25 limit 10", bm25)):
        print(f"{name:42} p50 {statistics.median(values):7.1f} ms   p95 {percentile(values, 0.95):7.1f} ms")


if __name__ == "__main__":
    path = Path(sys.argv[1])
    qs = Path(sys.argv[2]).read_text().splitlines() if len(sys.argv) > 2 else THELLADE
    main(path, [q for q in qs if q.strip()])
