"""Chunk vectors shared by every database a user builds, keyed by (model id, SHA-256 of the embedded text).

A database keeps the vector of every chunk whose text did not change, but a second database built from the
same notes (the vault, then the bundle `datasette okf convert` made of it) started from nothing: three
minutes of MiniLM on two cores for the Thellade vault. So every vector a build computes also goes into one
SQLite file in the user's cache folder, and a build asks it before asking the model, as llm's collections
skip content whose hash they already hold.

The file holds one table, `vectors(model, digest, vector)`: the model id as the database's `meta` names it,
the SHA-256 hex digest of exactly the text that was embedded (`chunks.embedding_text`), and the vector as
sqlite-vec stores it (float32 bytes, little-endian on every platform this runs on). No note text is kept.
It is in write-ahead-log mode with a short busy timeout, so builds of different databases share it; each
batch is committed at once, so a build that is interrupted keeps what it had embedded for the next one.

The cache is an optimisation, never a reason for a build to fail: a file that cannot be created, opened,
read or written (a read-only folder, a corrupt file, another program's database) is reported once, as a
warning naming the file and the problem, and the build goes on without it. A vector whose length is not
the model's dimension is never returned.
"""

from __future__ import annotations

import logging
import os
import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path

ENVIRONMENT = "DATASETTE_OKF_CACHE"  # the cache file, overriding the default location
BUSY_TIMEOUT = 2.0  # seconds to wait for another build's write before giving the cache up for this build
LOOKUP_BATCH = 500  # digests per query, well under SQLite's limit on host parameters

log = logging.getLogger(__name__)


def default_path() -> Path:
    """`$DATASETTE_OKF_CACHE`, else `$XDG_CACHE_HOME/datasette-okf/vectors.db`, else `~/.cache/datasette-okf/vectors.db`."""
    explicit = os.environ.get(ENVIRONMENT)
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".cache"  # a relative one is invalid
    return base / "datasette-okf" / "vectors.db"


class VectorCache:
    """One open cache file. Never raises: the first failure is logged once and turns the cache off."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self.problem: str | None = None  # why the cache was given up, if it was
        self.conn: sqlite3.Connection | None = None
        try:
            self.conn = self._open()
        except (sqlite3.Error, OSError) as error:
            self._give_up(error)

    def _open(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if not self.path.exists():  # vectors of private notes: readable by their owner only (-wal, -shm follow)
            os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT, 0o600))
        conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT, isolation_level=None)
        try:
            conn.execute("pragma journal_mode = wal")
            conn.execute("pragma synchronous = normal")  # a lost last batch after a power cut costs a re-embed
            conn.execute(  # a rowid table: 1.5 KB rows overflow WITHOUT ROWID's pages (4.7 KB a vector, not 2.2)
                "create table if not exists vectors (model text not null, digest text not null,"
                " vector blob not null, primary key (model, digest))"
            )
        except BaseException:
            conn.close()
            raise
        return conn

    @property
    def usable(self) -> bool:
        return self.conn is not None

    def lookup(self, model: str, dimensions: int, digests: Sequence[str]) -> dict[str, bytes]:
        """{digest: vector} for those of `digests` the cache holds for `model` at `dimensions` float32 values."""
        found: dict[str, bytes] = {}
        unique = list(dict.fromkeys(digests))
        try:
            for start in range(0, len(unique), LOOKUP_BATCH):
                if self.conn is None:
                    break
                part = unique[start : start + LOOKUP_BATCH]
                found.update(self.conn.execute(
                    "select digest, vector from vectors where model = ? and typeof(vector) = 'blob'"
                    f" and length(vector) = ? and digest in ({', '.join('?' * len(part))})",
                    [model, 4 * dimensions, *part],
                ))
        except sqlite3.Error as error:
            self._give_up(error)
        return found

    def store(self, model: str, vectors: Iterable[tuple[str, bytes]]) -> None:
        """Keep (digest, vector) pairs of `model`, committed at once; a newer vector replaces an older one."""
        if self.conn is None:
            return
        rows = [(model, digest, vector) for digest, vector in vectors]
        try:
            self.conn.execute("begin immediate")
            try:
                self.conn.executemany("insert or replace into vectors (model, digest, vector) values (?, ?, ?)", rows)
                self.conn.execute("commit")
            except BaseException:
                self.conn.execute("rollback")
                raise
        except sqlite3.Error as error:
            self._give_up(error)

    def close(self) -> None:
        if self.conn is not None:
            try:
                self.conn.close()
            except sqlite3.Error:
                pass
            self.conn = None

    def _give_up(self, error: BaseException) -> None:
        if self.problem is None:
            self.problem = f"{self.path}: {error}"
            log.warning("Warning: embedding cache %s not used (%s); building without it", self.path, error)
        self.close()


def open_cache(setting: Path | str | bool) -> VectorCache | None:
    """The cache a build asked for: True for the default file, a path for that file, False for none."""
    if setting is False:
        return None
    return VectorCache(default_path() if setting is True else setting)
