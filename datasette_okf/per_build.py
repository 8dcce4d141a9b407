"""What a process makes from one build of a database file, made once and shared by all its connections.

Datasette reads from several threads, each with its own connection; what is derived from the file (the 1-bit
codes of its chunks, the index of its titles) is the same for all of them until the next build, and at 100k notes
it is tens of megabytes and a second or more to make.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar

T = TypeVar("T")


def build_of(conn: Any) -> tuple[str, str] | None:
    """The file and its `built_at` stamp (each build that changes anything writes a new one), or None for a
    database in memory or without the stamp."""
    path = conn.execute("select file from pragma_database_list where name = 'main'").fetchone()[0]
    try:
        built = conn.execute("select value from meta where key = 'built_at'").fetchone()
    except Exception:  # noqa: BLE001 - no meta table: not a built database
        return None
    return (path, built[0]) if path and built else None


class PerBuild(Generic[T]):
    """`make(conn)` once per state of a file (`state(conn)`; None: not shared), the last `keep` states kept. A thread
    asking for a state another is making waits for it: two copies at once (a server preparing a file as it starts,
    and its first question) took a 10k-note Datasette's peak RSS from 350 to 540 MB."""

    def __init__(self, state: Callable[[Any], Hashable | None], make: Callable[[Any], T], keep: int = 4) -> None:
        self.state, self.make, self.keep = state, make, keep
        self.made: OrderedDict[Hashable, T] = OrderedDict()
        self.making: dict[Hashable, threading.Lock] = {}  # a lock per state being made
        self.lock = threading.Lock()

    def get(self, conn: Any) -> T:
        state = self.state(conn)
        if state is None:
            return self.make(conn)
        with self.lock:
            if state in self.made:
                self.made.move_to_end(state)
                return self.made[state]
            making = self.making.setdefault(state, threading.Lock())
        with making:
            try:
                with self.lock:  # made while we waited
                    if state in self.made:
                        self.made.move_to_end(state)
                        return self.made[state]
                made = self.make(conn)
                if self.state(conn) == state:  # no build committed while we read: safe to share
                    with self.lock:
                        self.made[state] = made
                        while len(self.made) > self.keep:
                            self.made.popitem(last=False)
            finally:  # made, shared or not, or failed: the next to ask does not wait on this lock
                with self.lock:
                    self.making.pop(state, None)
        return made
