"""The watch daemon: keep a memdir's indexes fresh while other processes write to it.

An inotify observer (watchdog) reports changes under `shelves/` and `journal/`; the daemon
waits for a quiet moment (debounce) and calls `MemoryIndex.update()`, which reads only what was
appended since its checkpoints and detects a rewritten shelf (forget, `git checkout`, `git
pull`) by itself. A burst of thousands of appends may arrive as a handful of events, so the
update always reads the whole tail, and a long burst is indexed at least every `max_delay`
seconds rather than starved. A slow poll catches anything inotify dropped (queue overflow).

One daemon per memdir: `.memdir/watch.pid` is flocked for the daemon's lifetime (the kernel
releases it when the process dies, so a crash leaves no stale lock). SIGTERM and SIGINT stop
it cleanly between updates. It logs to stderr or a file, never to stdout.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from memdir.archive_format.errors import MemdirError
from memdir.archive_format.lock import InstanceLock
from memdir.archive_format.memdir import Memdir
from memdir.archive_format.settings import WatchSettings
from memdir.words import counted

if TYPE_CHECKING:
    from memdir.indexers.affect import Annotator
    from memdir.indexers.embedding import Embedder
    from memdir.indexers.updater import UpdateReport

log = logging.getLogger("memdir")

PID_FILE = "watch.pid"
WATCHED = ("shelves", "journal")


class WatchLock(InstanceLock):
    """`.memdir/watch.pid`: held by the one running daemon of a memdir."""

    def __init__(self, memdir: Memdir) -> None:
        super().__init__(memdir.cache_dir / PID_FILE, "memdir watch", memdir.root,
                         "stop it first (kill {pid}); one daemon per memdir")  # fmt: skip


class _Changes:
    """What the observer thread tells the main loop: something changed, and when."""

    def __init__(self) -> None:
        self.wake = threading.Event()
        self._lock = threading.Lock()
        self.first: float | None = None  # monotonic time of the oldest unhandled change
        self.last: float = 0.0
        self.count = 0
        self.rewatch = False  # a watched directory itself was replaced

    def mark(self, rewatch: bool = False) -> None:
        now = time.monotonic()
        with self._lock:
            if self.first is None:
                self.first = now
            self.last = now
            self.count += 1
            self.rewatch = self.rewatch or rewatch
        self.wake.set()

    def take(self) -> tuple[int, bool]:
        """Reset, returning how many changes were pending and whether to re-watch."""
        with self._lock:
            count, rewatch = self.count, self.rewatch
            self.first, self.count, self.rewatch = None, 0, False
        return count, rewatch

    def due(self, settings: WatchSettings) -> float | None:
        """Seconds until the pending changes should be indexed (0: now; None: nothing pending)."""
        with self._lock:
            if self.first is None:
                return None
            now = time.monotonic()
            quiet = self.last + settings.debounce - now
            capped = self.first + settings.max_delay - now
            return max(0.0, min(quiet, capped))


class Watcher:
    """The daemon for one memdir; `run()` blocks until `stop()` (or a signal)."""

    def __init__(self, memdir: Memdir, settings: WatchSettings | None = None) -> None:
        self.memdir = memdir
        self.settings = settings or memdir.settings.watch
        self.changes = _Changes()
        self._stop = threading.Event()
        self._embedder: Embedder | None = None
        self._annotator: Annotator | None = None
        self.updates = 0

    def stop(self) -> None:
        self._stop.set()
        self.changes.wake.set()

    # the observer ---------------------------------------------------------------------------
    def _handler(self) -> Any:
        from watchdog.events import FileSystemEvent, FileSystemEventHandler

        changes = self.changes
        root = self.memdir.root
        watched = {str(root / name) for name in WATCHED}

        class Handler(FileSystemEventHandler):
            def on_any_event(self, event: FileSystemEvent) -> None:
                paths = [str(event.src_path), str(event.dest_path or "")]
                if event.is_directory and any(path in watched for path in paths):
                    changes.mark(rewatch=True)
                    return
                if any(_relevant(Path(path), root) for path in paths if path):
                    changes.mark()

        return Handler()

    def _schedule(self, observer: Any, handler: Any) -> None:
        from watchdog.events import (
            DirCreatedEvent,
            DirDeletedEvent,
            DirMovedEvent,
            FileClosedEvent,
            FileCreatedEvent,
            FileDeletedEvent,
            FileModifiedEvent,
            FileMovedEvent,
        )

        # Opens and reads are not changes; without this filter the daemon's own reads of the
        # shelves would wake it up again.
        changes = [FileModifiedEvent, FileClosedEvent, FileCreatedEvent, FileDeletedEvent,
                   FileMovedEvent, DirCreatedEvent, DirDeletedEvent, DirMovedEvent]  # fmt: skip
        observer.unschedule_all()
        observer.schedule(handler, str(self.memdir.root), recursive=False, event_filter=changes)
        for name in WATCHED:
            directory = self.memdir.root / name
            if directory.is_dir():
                observer.schedule(handler, str(directory), recursive=True, event_filter=changes)

    # indexing -------------------------------------------------------------------------------
    def update(self) -> UpdateReport | None:
        """One incremental update; failures are logged and retried, never fatal."""
        from memdir.indexers.index import MemoryIndex

        # A fresh index object each time: another process may have rebuilt the files under
        # it. The embedding model and annotator are loaded once and kept.
        index = MemoryIndex(self.memdir, embedder=self._embedder, annotator=self._annotator)
        started = time.perf_counter()
        try:
            report = index.update()
            self._embedder, self._annotator = index.embedder, index.annotator
        except MemdirError as error:
            log.error("index update failed: %s", error.message)
            if error.hint:
                log.error("  hint: %s", error.hint)
            return None
        except Exception:
            log.exception("index update failed")
            return None
        finally:
            index.close()
        self.updates += 1
        milliseconds = (time.perf_counter() - started) * 1000
        if report.rebuilt:
            log.info("rebuilt the index (%s) in %.0f ms", report.reason, milliseconds)
        elif report.memories or report.events:
            log.info(
                "indexed %d memories, %d events in %.0f ms",
                report.memories,
                report.events,
                milliseconds,
            )
        for warning in report.warnings:
            log.warning(warning)
        return report

    def _needs_update(self) -> bool:
        from memdir.indexers.index import MemoryIndex

        index = MemoryIndex(self.memdir, embedder=self._embedder, annotator=self._annotator)
        try:
            return index.needs_update()
        finally:
            index.close()

    def run(self) -> None:
        """Watch until stopped. The caller holds the WatchLock."""
        from memdir.archive_format.extras import require

        require("watch", "watching the memdir")
        from watchdog.observers import Observer

        settings = self.settings
        observer = Observer()
        handler = self._handler()
        self._schedule(observer, handler)
        observer.start()
        log.info("watching %s (pid file %s)", self.memdir.root, self.memdir.cache_dir / PID_FILE)
        try:
            ok = self.update() is not None  # catch up with what changed while nobody watched
            log.info("up to date; waiting for changes" if ok else "will retry")
            next_poll = time.monotonic() + (settings.poll if ok else settings.retry)
            while not self._stop.is_set():
                self.changes.wake.clear()
                due = self.changes.due(settings)
                until_poll = next_poll - time.monotonic()
                timeout = until_poll if due is None else min(due, until_poll)
                if timeout > 0:
                    self.changes.wake.wait(timeout)
                    continue
                count, rewatch = self.changes.take()
                if rewatch:
                    log.info("a watched directory was replaced; watching it anew")
                    self._schedule(observer, handler)
                ok = self.update() is not None if count or self._needs_update() else True
                next_poll = time.monotonic() + (settings.poll if ok else settings.retry)
        finally:
            observer.stop()
            observer.join(timeout=5)
            log.info(
                "stopped watching %s after %s", self.memdir.root, counted(self.updates, "update")
            )


def _relevant(path: Path, root: Path) -> bool:
    """A change to a shelf or journal file (temporary files of atomic writes aside)."""
    try:
        parts = path.relative_to(root).parts
    except ValueError:
        return False
    if not parts or parts[0] not in WATCHED:
        return False
    return len(parts) > 1 and not parts[-1].startswith(".")


@contextmanager
def stopped_by_signals(stop: Callable[[], None], logger: logging.Logger = log) -> Iterator[None]:
    """Inside it, SIGTERM and SIGINT log (to `logger`) and call `stop`: how a foreground
    process (this daemon, the resident service, the web page's server) ends cleanly. The
    previous handlers come back on leaving.

    The handler itself only writes the signal's number to a pipe; a thread reads it, logs and
    calls `stop`. A handler runs between two bytecodes of the main thread, which may be holding
    the very lock `stop` takes (an Event's condition, logging's handler lock): calling `stop`
    there can deadlock the process, which then ignores SIGTERM for good."""
    reader, writer = os.pipe()

    def on_signal(number: int, frame: FrameType | None) -> None:
        os.write(writer, bytes([number]))

    def relay() -> None:
        while (received := os.read(reader, 1)) not in (b"", b"\0"):
            number = received[0]
            logger.info("received %s, stopping", signal.Signals(number).name)
            stop()

    relaying = threading.Thread(target=relay, name="memdir-signals", daemon=True)
    relaying.start()
    previous = {
        number: signal.signal(number, on_signal) for number in (signal.SIGTERM, signal.SIGINT)
    }
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        os.write(writer, b"\0")  # ends the relay
        relaying.join(timeout=5)
        os.close(reader)
        os.close(writer)


def watch(memdir: Memdir, settings: WatchSettings | None = None) -> int:
    """Run the daemon in the foreground until SIGTERM/SIGINT; returns how many updates ran."""
    watcher = Watcher(memdir, settings)
    with WatchLock(memdir), stopped_by_signals(watcher.stop):
        watcher.run()
    return watcher.updates
