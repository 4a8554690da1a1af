"""One writer at a time per memdir: an flock on .memdir/lock, with a timeout and the holder's pid.

flock is released by the kernel when a process dies, so a crashed writer never leaves a stale
lock behind. The lock is re-entrant within a thread so use cases can nest; the threads of one
process (`memdir serve` answers requests on several) take turns through a per-path RLock in
front of the flock, which the process holds for the one thread inside.
"""

from __future__ import annotations

import fcntl
import os
import threading
import time
from pathlib import Path
from typing import Any

from .errors import LockedError
from .paths import open_fd

LOCK_TIMEOUT_ENV = "MEMDIR_LOCK_TIMEOUT"
DEFAULT_TIMEOUT = 10.0

_held: dict[str, tuple[int, int]] = {}  # path -> (fd, depth) of the thread inside
_turns: dict[str, threading.RLock] = {}  # path -> the threads' turn at it
_turns_guard = threading.Lock()


def _default_timeout() -> float:
    try:
        return float(os.environ.get(LOCK_TIMEOUT_ENV, DEFAULT_TIMEOUT))
    except ValueError:
        return DEFAULT_TIMEOUT


def _holder(path: Path) -> str:
    try:
        pid = path.read_text(encoding="ascii").strip()
    except OSError:
        pid = ""
    return f"pid {pid}" if pid else "another process"


class WriterLock:
    """Context manager holding the memdir's writer lock: the lock and nothing else (what a
    writer owes on taking it is archive_format/tombstones.py's `writing`)."""

    def __init__(self, path: Path, timeout: float | None = None) -> None:
        self.path = path
        self.timeout = _default_timeout() if timeout is None else timeout
        self.outermost = False  # once entered: whether this took the lock (not a nested hold)

    def _busy(self) -> LockedError:
        return LockedError(
            f"the memdir is locked by {_holder(self.path)} ({self.path})",
            hint=f"wait for it to finish, or raise ${LOCK_TIMEOUT_ENV} (seconds)",
        )

    def __enter__(self) -> WriterLock:
        key = str(self.path)
        deadline = time.monotonic() + self.timeout
        with _turns_guard:
            turn = _turns.setdefault(key, threading.RLock())
        waited = turn.acquire(timeout=self.timeout) if self.timeout > 0 else turn.acquire(False)
        if not waited:
            raise self._busy()  # another thread of this process holds it
        if key in _held:  # this thread, nested
            fd, depth = _held[key]
            _held[key] = (fd, depth + 1)
            self.outermost = False
            return self
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = open_fd(self.path, os.O_RDWR | os.O_CREAT)
        except BaseException:
            turn.release()
            raise
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    os.close(fd)
                    turn.release()
                    raise self._busy() from None
                time.sleep(0.005)
        # Overwrite, then cut to length: truncating to zero first makes ext4 flush the file
        # when it is closed (its replace-by-truncate heuristic), a few ms on every write.
        pid = f"{os.getpid()}\n".encode("ascii")
        os.pwrite(fd, pid, 0)
        os.ftruncate(fd, len(pid))
        _held[key] = (fd, 1)
        self.outermost = True
        return self

    def __exit__(self, *exc_info: Any) -> None:
        key = str(self.path)
        fd, depth = _held[key]
        try:
            if depth > 1:
                _held[key] = (fd, depth - 1)
                return
            del _held[key]
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
        finally:
            _turns[key].release()


class InstanceLock(WriterLock):
    """A pid file under `.memdir/` held by the one running process of a kind (the watch
    daemon, the service): a second one is refused at once, naming the holder."""

    def __init__(self, path: Path, what: str, root: Path, hint: str) -> None:
        super().__init__(path, timeout=0)
        self.what, self.root, self.hint = what, root, hint  # hint may name the pid as {pid}

    def __enter__(self) -> WriterLock:
        try:
            return super().__enter__()
        except LockedError as error:
            holder = error.message.removeprefix("the memdir is locked by ").split(" (")[0]
            raise LockedError(
                f"{self.what} is already running for {self.root} ({holder})",
                hint=self.hint.format(pid=holder.removeprefix("pid ")),
            ) from None
