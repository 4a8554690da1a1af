"""`memdir watch` as a real daemon process: freshness, bursts, rewrites, one instance, SIGTERM.

Nothing here runs `memdir index` or calls `MemoryIndex.update()`: the tests only read the index
the daemon maintains (Tantivy + catalog), polling until it shows the change.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import MEMDIR_BIN, T0, clean_env, configure, launched

from memdir.archive_format import shelf
from memdir.archive_format.memdir import Memdir
from memdir.archive_format.records import encode_line, new_memory
from memdir.indexers.index import MemoryIndex

READY = "waiting for changes"


class Daemon:
    """A `memdir watch` process with its stderr in a file."""

    def __init__(self, memdir: Memdir, log: Path, *args: str) -> None:
        self.log = log
        self.stderr = open(log, "ab")  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(
            [str(MEMDIR_BIN), "--dir", str(memdir.root), "watch", *args],
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            env=clean_env(MEMDIR_NOW=T0),
        )

    def text(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace") if self.log.exists() else ""

    def wait_for(self, needle: str, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while needle not in self.text():
            assert self.process.poll() is None, f"daemon exited early:\n{self.text()}"
            assert time.monotonic() < deadline, f"no {needle!r} in the log:\n{self.text()}"
            time.sleep(0.02)

    def stop(self) -> tuple[int, bytes]:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        # a clean stop may itself wait 5 s for the observer and 5 s for the signal relay
        # (usecases/watch.py): the deadline is for a daemon that hangs, not a speed limit
        out, _ = self.process.communicate(timeout=30)
        self.stderr.close()
        return self.process.returncode, out

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)
        self.stderr.close()


@pytest.fixture
def daemon(hashed: Memdir, tmp_path: Path) -> Iterator[Callable[..., Daemon]]:
    def start(n: int, *args: str, memdir: Memdir = hashed, ready: bool = True) -> Daemon:
        running = Daemon(memdir, tmp_path / f"watch{n}.err", *args)
        if ready:
            running.wait_for(READY)
        return running

    yield from launched(start)


def searchable(memdir: Memdir, query: str, k: int = 10) -> set[str] | None:
    """Texts the daemon's full-text index returns (read-only: no update); None while a rebuild
    has the Tantivy files half-written (a reader racing a rebuild sees them corrupt)."""
    index = MemoryIndex(memdir)
    try:
        return {hit.text for hit in index.search(query, k=k)}
    except ValueError:
        return None
    finally:
        index.close()


def poll(check: Callable[[], bool], timeout: float) -> float:
    """Seconds until `check()` held; fails the test after `timeout`."""
    started = time.monotonic()
    while not check():
        assert time.monotonic() - started < timeout, "timed out"
        time.sleep(0.01)
    return time.monotonic() - started


def memory_line(text: str) -> bytes:
    memory = new_memory(
        created=T0, text=text, source="observation", author="tool", store="episodic"
    )
    return encode_line(memory.to_line())


def test_a_memory_taught_by_another_process_is_searchable_within_2s(
    hashed: Memdir, daemon: Callable[..., Daemon]
) -> None:
    running = daemon()
    taught = "My sister Anouk lives in Ghent"
    done = subprocess.run(
        [str(MEMDIR_BIN), "--dir", str(hashed.root), "teach", taught],
        env=clean_env(MEMDIR_NOW=T0),
        capture_output=True,
    )
    assert done.returncode == 0, done.stderr
    latency = poll(
        lambda: "My sister Anouk lives in Ghent" in (searchable(hashed, "Anouk") or ()), 2.0
    )
    assert latency < 2.0
    code, out = running.stop()
    assert code == 0 and out == b""
    assert "indexed 1 memories" in running.text()


def test_a_burst_of_thousands_of_appends_is_indexed_whole(
    hashed: Memdir, daemon: Callable[..., Daemon], tmp_path: Path
) -> None:
    running = daemon()
    count = 3000
    # Another process appends line by line, one write() each, under the writer lock (no fsync:
    # the disk's flush time is not what this test is about). It gets the lines in a file.
    burst = tmp_path / "burst.jsonl"
    burst.write_bytes(
        b"".join(memory_line(f"burst line {number} token{number}x") for number in range(count))
    )
    writer = """
import os, sys
from pathlib import Path
from memdir.archive_format.memdir import Memdir
md = Memdir.open(Path(sys.argv[1]))
fd = os.open(md.memory_shelf, os.O_WRONLY | os.O_APPEND)
for line in Path(sys.argv[2]).read_bytes().splitlines(keepends=True):
    with md.lock():
        os.write(fd, line)
"""
    started = time.monotonic()
    subprocess.run([sys.executable, "-c", writer, str(hashed.root), str(burst)], check=True,
                   env=clean_env(), timeout=60)  # fmt: skip
    wrote = time.monotonic() - started

    def caught_up() -> bool:
        index = MemoryIndex(hashed)
        try:
            return index.bookkeeping.counts()["searchable"] == count and not index.needs_update()
        finally:
            index.close()

    poll(caught_up, 20.0)
    assert searchable(hashed, "token0x") == {"burst line 0 token0x"}
    assert searchable(hashed, f"token{count - 1}x") == {f"burst line {count - 1} token{count - 1}x"}
    code, _ = running.stop()
    assert code == 0
    updates = running.text().count("indexed ")
    assert 1 <= updates < count / 10, f"{updates} updates for {count} appends in {wrote:.1f} s"


def test_a_shelf_rewritten_by_rename_is_reindexed(
    hashed: Memdir, daemon: Callable[..., Daemon]
) -> None:
    with hashed.lock():
        shelf.append(
            hashed.memory_shelf,
            [memory_line("the old roof leaks"), memory_line("the blue bicycle")],
            hashed.quarantine_dir,
        )
    running = daemon()
    assert searchable(hashed, "roof") == {"the old roof leaks"}
    # What `git checkout` does: a new file with other content renamed over the shelf.
    replacement = hashed.shelves_dir / ".memories.jsonl.checkout"
    replacement.write_bytes(memory_line("the blue bicycle") + memory_line("a new slate roof"))
    os.replace(replacement, hashed.memory_shelf)
    poll(lambda: searchable(hashed, "roof") == {"a new slate roof"}, 5.0)
    assert searchable(hashed, "bicycle") == {"the blue bicycle"}
    running.stop()
    assert "rewritten" in running.text()


def test_a_second_daemon_is_refused_and_sigterm_is_clean(
    hashed: Memdir, daemon: Callable[..., Daemon], tmp_path: Path
) -> None:
    log = tmp_path / "watch.log"
    first = daemon("--log", str(log), ready=False)
    poll(lambda: log.exists() and READY in log.read_text(), 30.0)
    second = subprocess.run(
        [str(MEMDIR_BIN), "--dir", str(hashed.root), "watch"],
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert second.returncode == 7
    assert second.stdout == ""
    assert f"already running for {hashed.root} (pid {first.process.pid})" in second.stderr
    code, out = first.stop()
    assert (code, out) == (0, b"")
    assert first.text() == ""  # --log: nothing on stderr either
    assert "received SIGTERM, stopping" in log.read_text()
    # The lock went with the process: a new daemon starts.
    again = daemon()
    assert again.stop()[0] == 0


def test_watch_keeps_an_index_on_postgres_fresh(
    hashed: Memdir, daemon: Callable[..., Daemon], postgres_dsn: str
) -> None:
    """`watch` runs unchanged on the PostgreSQL backend (docs/SCALE.md)."""
    remote = configure(hashed, index={"backend": "postgres", "dsn": postgres_dsn})
    running = daemon(memdir=remote)
    done = subprocess.run(
        [str(MEMDIR_BIN), "--dir", str(remote.root), "teach", "Our kayak is red"],
        env=clean_env(MEMDIR_NOW=T0),
        capture_output=True,
    )
    assert done.returncode == 0, done.stderr
    poll(lambda: "Our kayak is red" in (searchable(remote, "kayak") or ()), 10.0)
    assert not list((remote.cache_dir / "index").glob("tantivy-*"))
    code, _ = running.stop()
    assert code == 0


def test_a_signal_that_arrives_while_the_main_thread_holds_the_stop_lock_still_stops() -> None:
    """A signal handler runs between two bytecodes of the main thread. If it called `stop`
    there and `stop` needed a lock the main thread held at that moment (an Event's condition,
    logging's lock), the process would hang and ignore SIGTERM; the relay thread avoids it."""
    script = """
import os, signal, threading
from memdir.usecases.watch import stopped_by_signals
held, stopped = threading.Lock(), threading.Event()
def stop():
    with held:
        stopped.set()
with stopped_by_signals(stop):
    with held:
        os.kill(os.getpid(), signal.SIGTERM)
        sum(range(100000))  # the handler runs here, while `held` is held
    assert stopped.wait(5)
print("stopped")
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=20,
        env=clean_env(),
    )  # fmt: skip
    assert (done.returncode, done.stdout) == (0, "stopped\n"), done.stderr
