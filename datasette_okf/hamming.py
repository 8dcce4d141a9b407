"""Vector candidates by Hamming distance over 1-bit codes held in memory.

For large collections the vector seeds are found in two steps: the chunks
whose sign bits are nearest the question's (Hamming distance), then an exact
cosine re-rank of those in SQL. sqlite-vec can do the first step over its
`chunk_bits` vec0 table, but its scan costs ~11 ms at 40k chunks on a 2-core
machine (top-k bookkeeping, not the distance, dominates); the same codes as a
numpy array answer in about a millisecond (benchmarks/quantized_knn.py).

The codes are read once per state of a database file and shared by every
connection of the process. The state is the file, its `built_at` stamp (each
build that changes anything writes a new one) and its largest chunk id.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .per_build import PerBuild, build_of


def chunk_state(conn: Any) -> tuple:
    """The build, and its largest chunk id: a build still embedding commits vectors under one stamp."""
    top = conn.execute("select coalesce(max(id), 0) from chunk_floats").fetchone()[0]
    return (build_of(conn) or id(conn), top)


def _words(packed: np.ndarray) -> np.ndarray:
    """Packed bits (rows x bytes) as 64-bit words, zero-padded: XOR of padding is 0."""
    pad = -packed.shape[1] % 8
    if pad:
        packed = np.pad(packed, ((0, 0), (0, pad)))
    return np.ascontiguousarray(packed).view(np.uint64)


LOAD_BATCH = 8192  # rows read at a time into arrays made once (400,280 rows as tuples first: peak +135 MB, now +53;
# benchmarks/per_build.py at 100k notes)


def read_blobs(conn: Any, sql: str, count: int, dtype: Any) -> tuple[np.ndarray, np.ndarray | None]:
    """The (id, blob) rows of `sql`, at most `count`: their ids, and each blob as a row of `dtype` values (None when
    there is no row), read LOAD_BATCH rows at a time into arrays made once."""
    cursor = conn.execute(sql)
    ids, values, filled = np.zeros(count, dtype=np.int64), None, 0
    while filled < count and (rows := cursor.fetchmany(min(LOAD_BATCH, count - filled))):
        if values is None:
            values = np.zeros((count, len(rows[0][1]) // np.dtype(dtype).itemsize), dtype=dtype)
        ids[filled:filled + len(rows)] = [r[0] for r in rows]
        values[filled:filled + len(rows)] = np.frombuffer(b"".join(r[1] for r in rows), dtype=dtype).reshape(
            len(rows), -1)
        filled += len(rows)
    return ids[:filled], None if values is None else values[:filled]


def _load(conn: Any) -> tuple[np.ndarray, np.ndarray]:
    count = conn.execute("select count(*) from chunks").fetchone()[0]  # at most one code a chunk; counted fast
    ids, packed = read_blobs(conn, "select rowid, embedding from chunk_bits", count, np.uint8)
    if packed is None:
        return ids, np.zeros((1, 0), dtype=np.uint64)
    # one row per 64-bit word, one column per chunk: each XOR/popcount pass reads contiguous memory (codes a build
    # added while we read may be left out; codes_for then does not share them, the state having changed)
    return ids, np.ascontiguousarray(_words(packed).T)


_CODES = PerBuild(chunk_state, _load)


def codes_for(conn: Any) -> tuple[np.ndarray, np.ndarray]:
    """(chunk ids, sign bits as words x chunks) of the database `conn` reads."""
    return _CODES.get(conn)


def vector_bytes(conn: Any, function: str) -> int:
    """The size of the database's float32 vectors: 4 × its `embedding_dimensions` (else an error naming `function`)."""
    row = conn.execute("select value from meta where key = 'embedding_dimensions'").fetchone()
    if not row or not int(row[0]):
        raise ValueError(f"{function}: this database has no vectors")
    return 4 * int(row[0])


def checked_query(conn: Any, query: Any, function: str) -> np.ndarray:
    """`query` as float32 values, if it is a blob as wide as the database's vectors: a query of another width would
    be compared with vectors it does not match, and answered with arbitrary ids."""
    width = vector_bytes(conn, function)
    if not isinstance(query, bytes) or len(query) != width:
        what = f"a blob of {len(query):,} bytes" if isinstance(query, bytes) else type(query).__name__
        raise ValueError(f"{function}: the vector must be a float32 blob of {width:,} bytes, not {what}")
    return np.frombuffer(query, dtype=np.float32)


def hamming_candidates(conn: Any, query: bytes, count: int) -> list[int]:
    """Ids of the `count` chunks whose sign bits differ least from those of the float32 `query` (of the database's
    width: checked_query)."""
    values = checked_query(conn, query, "okf_hamming_candidates")
    ids, codes = codes_for(conn)
    if not len(ids) or count <= 0:
        return []
    # the bit order of sqlite-vec's vec_quantize_binary(): dimension i is bit i % 8 of byte i // 8
    bits = _words(np.packbits(values > 0, bitorder="little")[None, :])[0]
    # a word at a time: one XOR of every code at once was a 19 MB temporary a question at 100k notes (400,280 chunks),
    # which the allocator kept, and slower (p50 4.7-5.1 against 3.5-3.7 ms, benchmarks/per_build.py)
    distances = np.zeros(codes.shape[1], dtype=np.int32)
    for word, bit in zip(codes, bits):
        distances += np.bitwise_count(word ^ bit)
    count = min(count, len(ids))
    nearest = np.argpartition(distances, count - 1)[:count]
    nearest = nearest[np.lexsort((ids[nearest], distances[nearest]))]
    return ids[nearest].tolist()
