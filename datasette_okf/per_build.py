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


class PerBuild(Generic[T]):
    """`make(conn)` once per state of a file (`state(conn)`; None: not shared), the last `keep` states kept."""

    def __init__(self, state: Callable[[Any], Hashable | None], make: Callable[[Any], T], keep: int = 4) -> None:
        self.state, self.make, self.keep = state, make, keep
        self.made: OrderedDict[Hashable, T] = OrderedDict()
        self.lock = threading.Lock()

    def get(self, conn: Any) -> T:
        state = self.state(conn)
        if state is None:
            return self.make(conn)
        with self.lock:
            if state in self.made:
                self.made.move_to_end(state)
                return self.made[state]
        made = self.make(conn)
        if self.state(conn) == state:  # no build committed while we read: safe to share
            with self.lock:
                self.made[state] = made
                while len(self.made) > self.keep:
                    self.made.popitem(last=False)
        return made
