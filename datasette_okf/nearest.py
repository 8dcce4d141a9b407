"""The exact nearest chunks to a vector, by cosine distance over the float vectors held in memory.

The vector list asked sqlite-vec's `chunk_vectors` (vec0) for its nearest chunks: a scan of every vector in
scalar float32 code, 1.6-2.0 ms a question over the Thellade vault's 2,305 chunks on a 2-core machine, a tenth of
the whole context_for. The same vectors as one numpy matrix (`chunk_floats`, read once per state of the file and
shared by every connection, as hamming.py's codes) answer in 0.14 ms (0.34 ms with the json_each that reads
them), with the same chunks in the same order (tests/test_nearest.py). From ContextOptions.binary_from chunks
(30 MB of float32 at 384 dimensions) the vector list takes its candidates from 1-bit codes instead (hamming.py).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .hamming import checked_query, chunk_state, read_blobs
from .per_build import PerBuild


def _load(conn: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    count = conn.execute("select count(*) from chunk_floats").fetchone()[0]
    ids, vectors = read_blobs(conn, "select id, embedding from chunk_floats", count, np.float32)
    if vectors is None:
        return ids, np.zeros((0, 0), dtype=np.float32), np.zeros(0)
    return ids, vectors, np.linalg.norm(vectors, axis=1).astype(np.float64)


_VECTORS = PerBuild(chunk_state, _load)


def nearest_chunks(conn: Any, query: bytes, count: int) -> list[tuple[int, float]]:
    """The `count` chunks nearest the float32 `query` (of the database's width), nearest first, as (chunk id, cosine
    distance): sqlite-vec's `distance_metric=cosine`. A chunk or query vector of length 0 is at distance 1."""
    values = checked_query(conn, query, "okf_nearest_chunks")
    ids, vectors, norms = _VECTORS.get(conn)
    count = min(count, len(ids))
    if count <= 0:
        return []
    lengths = norms * float(np.linalg.norm(values))
    with np.errstate(divide="ignore", invalid="ignore"):
        distances = np.where(lengths > 0, 1.0 - np.einsum("ij,j->i", vectors, values).astype(np.float64) / lengths, 1.0)
    nearest = np.argpartition(distances, count - 1)[:count]
    nearest = nearest[np.lexsort((ids[nearest], distances[nearest]))]  # equal distances: the older chunk first
    return list(zip(ids[nearest].tolist(), distances[nearest].tolist()))
