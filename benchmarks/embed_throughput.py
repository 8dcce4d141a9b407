"""Where the default model's embedding time goes: tokenising, ONNX, pooling, SQLite (issue 20 item 4).

    python benchmarks/embed_throughput.py DB [--every N]

DB is a built database (its chunks' texts are embedded again, as a build embeds them: title, description,
heading and text, shortest first, batches of the model's batch size). Every N-th chunk is used (default 3).
The SQLite column times inserting the vectors into the three vector tables of an in-memory copy of the schema.
"""

from __future__ import annotations

import argparse
import sqlite3 as stdlib_sqlite3
import time

from sqlite_utils.utils import sqlite3

from datasette_okf.chunks import embedding_text
from datasette_okf.embed import OKFMiniLM, minilm
from datasette_okf.schema import load_sqlite_vec


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("db")
    parser.add_argument("--every", type=int, default=3)
    args = parser.parse_args()
    source = stdlib_sqlite3.connect(f"file:{args.db}?mode=ro", uri=True)
    texts = [embedding_text(*row) for row in source.execute(
        "select concepts.title, concepts.description, chunks.heading, chunks.text from chunks"
        " join concepts on concepts.id = chunks.concept_id order by chunks.id")][:: args.every]
    texts.sort(key=len)
    encoder = minilm()
    np = encoder.np
    sink = sqlite3.connect(":memory:")
    load_sqlite_vec(sink)
    sink.execute("create virtual table v using vec0(embedding float[384] distance_metric=cosine)")
    sink.execute("create virtual table b using vec0(embedding bit[384])")
    sink.execute("create table f (id integer primary key, embedding blob)")
    times = dict.fromkeys(("tokenise", "onnx", "pool", "sqlite"), 0.0)
    tokens = 0
    started = time.perf_counter()
    size = OKFMiniLM.batch_size
    for start in range(0, len(texts), size):
        batch = texts[start : start + size]
        t0 = time.perf_counter()
        encodings = encoder.tokenizer.encode_batch(batch)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        types = np.array([e.type_ids for e in encodings], dtype=np.int64)
        tokens += int(mask.sum())
        t1 = time.perf_counter()
        hidden = encoder.session.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": types})[0]
        t2 = time.perf_counter()
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        vectors = (pooled / np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)).astype(np.float32)
        t3 = time.perf_counter()
        pairs = [(start + i + 1, row.tobytes()) for i, row in enumerate(vectors)]
        with sink:
            sink.executemany("insert into v(rowid, embedding) values (?, ?)", pairs)
            sink.executemany("insert into b(rowid, embedding) values (?, vec_quantize_binary(?))", pairs)
            sink.executemany("insert into f(id, embedding) values (?, ?)", pairs)
        t4 = time.perf_counter()
        for name, seconds in zip(times, (t1 - t0, t2 - t1, t3 - t2, t4 - t3)):
            times[name] += seconds
    total = time.perf_counter() - started
    print(f"{len(texts):,} chunks ({tokens:,} tokens, {tokens / len(texts):.0f} per chunk) in {total:.1f} s: "
          f"{len(texts) / total:.1f} chunks/s, {tokens / total:,.0f} tokens/s")
    for name, seconds in times.items():
        print(f"  {name:9} {seconds:6.2f} s  {seconds / total:6.1%}")


if __name__ == "__main__":
    main()
