"""File locks a build relies on: one build per output at a time, and "is this file open elsewhere?".

Two builds into one output must not interleave: each would read the file, build
on what it read, and the last to finish would silently drop the other's bundle
(or die on "database is locked"). `build_lock` takes an exclusive `flock` on
`DB.lock` beside the output before anything reads the output; a second build
waits for the first and then builds on what it wrote. The holder deletes the
lock file before releasing it, and a build that gets the lock checks that its
file is still the one at that path (else it locks the new one), so no lock
file is left behind and no two builds ever hold "the" lock at once.

`held_open` answers whether any process has a database open through SQLite's
write-ahead log: every such connection holds a shared lock on byte 128 of the
`-shm` file (SQLite's "dead man switch"), so a query for a conflicting write
lock tells, without opening the database (which would create a missing file).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import struct
import time
from collections.abc import Callable, Iterator
from pathlib import Path

LOCK_SUFFIX = ".lock"
_DMS_BYTE = 128  # UNIX_SHM_DMS in SQLite's os_unix.c
_FLOCK = "hhqqi4x"  # struct flock on Linux x86_64/aarch64: type, whence, start, len, pid


class LockTimeout(Exception):
    """Another build held the output's lock for longer than we were willing to wait."""


def lock_path(output: Path) -> Path:
    return output.with_name(output.name + LOCK_SUFFIX)


@contextlib.contextmanager
def build_lock(output: Path, timeout: float, on_wait: Callable[[str], None] = lambda message: None) -> Iterator[None]:
    """Hold the exclusive build lock of `output` for the block; wait up to `timeout` seconds for it."""
    path = lock_path(output)
    deadline = time.monotonic() + timeout
    waited = False
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        if not _try_lock(fd):
            holder = _read_holder(path)
            if not waited:
                on_wait(f"waiting for another build of {output}{f' (pid {holder})' if holder else ''} to finish "
                        f"(at most {timeout:g} s, --lock-timeout)")
                waited = True
            while not _try_lock(fd):
                if time.monotonic() >= deadline:
                    os.close(fd)
                    raise LockTimeout(
                        f"another build of {output}{f' (pid {holder})' if holder else ''} held its lock "
                        f"({path}) for more than {timeout:g} s; gave up (raise --lock-timeout to wait longer)"
                    )
                time.sleep(0.05)
        if _same_file(fd, path):
            break
        os.close(fd)  # the holder removed the lock file as it finished: lock the next one
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        path.unlink(missing_ok=True)  # while still holding it: a waiter then finds its file gone and retries
        os.close(fd)


def _same_file(fd: int, path: Path) -> bool:
    try:
        return os.path.samestat(os.fstat(fd), os.stat(path))
    except FileNotFoundError:
        return False


def _try_lock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False


def _read_holder(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return ""


def held_open(database: Path) -> bool:
    """Whether some process (this one included) has `database` open in write-ahead-log mode."""
    shm = Path(f"{database}-shm")
    try:
        fd = os.open(shm, os.O_RDWR)
    except FileNotFoundError:
        return False
    except PermissionError:  # cannot even look: assume it is in use
        return True
    try:
        if hasattr(fcntl, "F_OFD_GETLK"):  # Linux: ask without taking anything
            probe = struct.pack(_FLOCK, fcntl.F_WRLCK, os.SEEK_SET, _DMS_BYTE, 1, 0)
            return struct.unpack(_FLOCK, fcntl.fcntl(fd, fcntl.F_OFD_GETLK, probe))[0] != fcntl.F_UNLCK
        try:  # elsewhere: take and drop a lock (never call this with the database open in this process)
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, _DMS_BYTE)
        except OSError:
            return True
        fcntl.lockf(fd, fcntl.LOCK_UN, 1, _DMS_BYTE)
        return False
    finally:
        os.close(fd)
