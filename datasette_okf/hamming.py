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

import threading
from collections import OrderedDict
from typing import Any

import numpy as np

_CODES: OrderedDict[tuple, tuple[np.ndarray, np.ndarray]] = OrderedDict()
_LOCK = threading.Lock()
KEEP = 4  # database states kept in memory (one per file in practice)


def _state(conn: Any) -> tuple:
    path = conn.execute("select file from pragma_database_list where name = 'main'").fetchone()[0]
    built = conn.execute("select value from meta where key = 'built_at'").fetchone()
    top = conn.execute("select coalesce(max(id), 0) from chunk_floats").fetchone()[0]
    return (path or id(conn), built[0] if built else None, top)


def _words(packed: np.ndarray) -> np.ndarray:
    """Packed bits (rows x bytes) as 64-bit words, zero-padded: XOR of padding is 0."""
    pad = -packed.shape[1] % 8
    if pad:
        packed = np.pad(packed, ((0, 0), (0, pad)))
    return np.ascontiguousarray(packed).view(np.uint64)


def _load(conn: Any) -> tuple[np.ndarray, np.ndarray]:
    rows = conn.execute("select rowid, embedding from chunk_bits").fetchall()
    if not rows:
        return np.zeros(0, dtype=np.int64), np.zeros((1, 0), dtype=np.uint64)
    ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    packed = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.uint8).reshape(len(rows), -1)
    # one row per 64-bit word, one column per chunk: each XOR/popcount pass reads contiguous memory
    return ids, np.ascontiguousarray(_words(packed).T)


def codes_for(conn: Any) -> tuple[np.ndarray, np.ndarray]:
    """(chunk ids, sign bits as words x chunks) of the database `conn` reads."""
    state = _state(conn)
    with _LOCK:
        if state in _CODES:
            _CODES.move_to_end(state)
            return _CODES[state]
    loaded = _load(conn)
    if _state(conn) == state:  # no build committed while we read: safe to share
        with _LOCK:
            _CODES[state] = loaded
            while len(_CODES) > KEEP:
                _CODES.popitem(last=False)
    return loaded


def vector_bytes(conn: Any) -> int:
    """The size of the database's float32 vectors: 4 × its `embedding_dimensions`."""
    row = conn.execute("select value from meta where key = 'embedding_dimensions'").fetchone()
    if not row or not int(row[0]):
        raise ValueError("okf_hamming_candidates: this database has no vectors")
    return 4 * int(row[0])


def hamming_candidates(conn: Any, query: bytes, count: int) -> list[int]:
    """Ids of the `count` chunks whose sign bits differ least from those of the float32 `query`.

    A query of another width would be compared bit for bit with codes it does not match, and
    answer with arbitrary ids: it is refused."""
    width = vector_bytes(conn)
    if not isinstance(query, bytes) or len(query) != width:
        what = f"a blob of {len(query):,} bytes" if isinstance(query, bytes) else type(query).__name__
        raise ValueError(f"okf_hamming_candidates: the vector must be a float32 blob of {width:,} bytes, not {what}")
    ids, codes = codes_for(conn)
    if not len(ids) or count <= 0:
        return []
    # the bit order of sqlite-vec's vec_quantize_binary(): dimension i is bit i % 8 of byte i // 8
    bits = _words(np.packbits(np.frombuffer(query, dtype=np.float32) > 0, bitorder="little")[None, :])[0]
    distances = np.bitwise_count(codes ^ bits[:, None]).sum(axis=0, dtype=np.int32)
    count = min(count, len(ids))
    nearest = np.argpartition(distances, count - 1)[:count]
    nearest = nearest[np.lexsort((ids[nearest], distances[nearest]))]
    return ids[nearest].tolist()
