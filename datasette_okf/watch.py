"""`datasette okf build --watch`: the database follows the bundle folders while you edit them.

watchfiles (Rust `notify`, debounced; the watcher uvicorn uses) reports changes on a thread of its own; this
module's loop does one thing at a time in the build's own process, so it never writes concurrently with itself:

1. changes waiting -> an incremental rebuild (text, links, FTS; unchanged files are not parsed again), pruned:
   a deleted or renamed file's concept leaves the database, so the file always matches the folder;
2. else chunks without vectors -> embed one batch, chunks written since the watch began first (an edited note
   before the backlog, in batches of EDIT_BATCH so its first chunks are served sooner), then the shortest, commit
   it (Datasette reads it at once: write-ahead log);
3. else wait for the next change.

A rebuild and a batch each hold the build lock for a second or two; Datasette's readers never wait on it (WAL).
Editors' temporary files, `.obsidian/` churn and the build's own outputs are not changes (`is_change`).
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import watchfiles

from .store import BuildError, BuildReport, build_outputs, embed_pending, last_chunk_id

# Editors' and sync tools' temporary files: atomic saves write one of these and rename it over the note.
TEMPORARY_SUFFIXES = (".tmp", ".temp", ".swp", ".swx", ".swo", ".crswap", ".part", ".crdownload", "~", ".bak")
TEMPORARY_NAMES = {"4913", ".DS_Store", "Thumbs.db"}  # 4913: vim's probe that a folder is writable
DEBOUNCE_MS = 300  # changes closer together than this are one rebuild
STEP_MS = 50
PROGRESS_EVERY = 10.0  # seconds between embedding progress lines
EMBED_BATCH = 64  # chunks per committed batch: about a second of the default model on 2 cores (a change waits
#                  for the batch under way, so not more)
EDIT_BATCH = 8  # the chunks a rebuild just wrote go in smaller batches: an edited chunk is served a batch sooner


def is_change(path: str, outputs: set[Path]) -> bool:
    """Whether a changed path can change the database: not in a hidden folder, not a temporary file, not ours."""
    parts = Path(path).parts
    name = parts[-1] if parts else ""
    if any(part.startswith(".") for part in parts[:-1]):  # .obsidian/, .git/, .trash/: scan_bundle skips them too
        return False
    if name in TEMPORARY_NAMES or name.endswith(TEMPORARY_SUFFIXES) or name.startswith((".#", "~$", ".~")):
        return False
    if name.startswith(".") and not name.lower().endswith(".md"):
        return False
    return Path(path) not in outputs


@dataclass
class Watcher:
    """The loop of `build --watch`; `rebuild()` is the incremental build, `say` prints one line."""

    roots: list[Path]
    output: Path
    rebuild: Callable[[], BuildReport]
    say: Callable[[str], None]
    model: Any = None  # the embedding model, when vectors are wanted
    model_id: str | None = None
    embedding_cache: Path | str | bool = True
    pending: int = 0  # chunks without a vector
    backlog_until: int = -1  # chunks up to this id were written before the watch began
    fresh: int = 0  # chunks the last rebuilds added to what waits for a vector
    said_at: float = 0.0  # when embedding progress was last printed

    def run(self, stop: threading.Event | None = None) -> None:
        """Watch until `stop` is set (or Ctrl-C, which the caller catches)."""
        stop = stop or threading.Event()
        self.backlog_until = last_chunk_id(self.output)
        changes: queue.Queue[set[tuple[watchfiles.Change, str]]] = queue.Queue()
        thread = threading.Thread(target=self._watch, args=(changes, stop), daemon=True, name="okf-watch")
        thread.start()
        try:
            while not stop.is_set():
                batch = _drain(changes, block=not self.pending, timeout=0.2)
                if batch:
                    self._rebuild(batch)
                elif self.pending and self.model is not None:
                    self._embed()
        finally:
            stop.set()
            thread.join(timeout=2)

    def _watch(self, changes: queue.Queue, stop: threading.Event) -> None:
        outputs = {p.resolve() for p in build_outputs(self.output)}
        for found in watchfiles.watch(
            *self.roots, watch_filter=lambda _, path: is_change(path, outputs), debounce=DEBOUNCE_MS, step=STEP_MS,
            stop_event=stop, raise_interrupt=False,
        ):
            changes.put(found)

    def _rebuild(self, found: set[tuple[watchfiles.Change, str]]) -> None:
        started = time.perf_counter()
        try:
            report = self.rebuild()
        except BuildError as error:  # a folder emptied or the disk full: say so and keep watching
            self.say(f"{_clock()} {describe(found, self.roots)}: not rebuilt: {error}")
            return
        self.fresh += max(0, report.vectors_pending - self.pending)
        self.pending = report.vectors_pending
        changed = sum(b.changed for b in report.bundles)
        pruned = sum(b.pruned for b in report.bundles)
        vectors = f"; {self.pending:,} chunks to embed" if self.pending else ""
        self.say(f"{_clock()} {describe(found, self.roots)}: rebuilt in {time.perf_counter() - started:.2f}s "
                 f"({changed} concepts written, {pruned} removed{vectors})")

    def _embed(self) -> None:
        before = self.pending
        started = time.perf_counter()
        try:
            batch = EDIT_BATCH if self.fresh > 0 else EMBED_BATCH
            self.pending = embed_pending(self.output, self.model, self.model_id, batch,
                                         embedding_cache=self.embedding_cache, first_above=self.backlog_until)
            self.fresh = max(0, self.fresh - batch)
        except BuildError as error:
            self.say(f"{_clock()} vectors not written: {error}")
            self.pending = 0
            return
        now = time.perf_counter()
        if not self.pending:
            self.say(f"{_clock()} vectors complete")
        elif now - self.said_at >= PROGRESS_EVERY:
            rate = (before - self.pending) / (now - started)
            self.say(f"{_clock()} vectors: {self.pending:,} chunks to go ({rate:.0f} chunks/s)")
            self.said_at = now


def _drain(changes: queue.Queue, block: bool, timeout: float) -> set:
    """Every change waiting (waiting up to `timeout` for one when `block`)."""
    found: set = set()
    try:
        found |= changes.get(timeout=timeout) if block else changes.get_nowait()
        while True:
            found |= changes.get_nowait()
    except queue.Empty:
        return found


def describe(found: Iterable[tuple[watchfiles.Change, str]], roots: list[Path]) -> str:
    """`3 changes: modified People/Nessa.md, deleted Old.md, …` with paths relative to their bundle."""
    items = sorted({(change.name, _relative(path, roots)) for change, path in found}, key=lambda i: i[1])
    shown = ", ".join(f"{kind} {path}" for kind, path in items[:3]) + (", …" if len(items) > 3 else "")
    return f"{len(items)} change{'s' if len(items) != 1 else ''}: {shown}"


def _relative(path: str, roots: list[Path]) -> str:
    for root in roots:
        try:
            return str(Path(path).resolve().relative_to(root.resolve()))
        except ValueError:
            continue
    return path


def _clock() -> str:
    return time.strftime("%H:%M:%S")
