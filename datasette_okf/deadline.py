"""Calls that must not hang the caller: run in a daemon thread, given up after a deadline.

Some clients have no overall timeout: llm plugins ask their servers with no read
timeout, and urllib's timeout is per socket operation, so a server that drips a
byte every few seconds holds it forever. The stuck thread is a daemon and dies
with the process.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


class DeadlineExceeded(TimeoutError):
    """The call had not finished when its deadline passed."""


def call_with_deadline(call: Callable[[], T], seconds: float, name: str = "okf-deadline-call") -> T:
    """`call()`'s result or exception; DeadlineExceeded if it has not finished within `seconds`."""
    result: dict[str, Any] = {}

    def run() -> None:
        try:
            result["value"] = call()
        except BaseException as error:  # noqa: BLE001 - handed to the caller below, whatever it is
            result["error"] = error

    worker = threading.Thread(target=run, name=name, daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        raise DeadlineExceeded(f"no answer within {seconds:g} s")
    if "error" in result:
        raise result["error"]
    return result["value"]
