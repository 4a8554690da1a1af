"""Many writers, crashed writers, and the writer lock."""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from conftest import T0_DT, clean_env, shelf_lines

from memdir.archive_format import lifecycle
from memdir.archive_format.errors import ExitStatus, LockedError
from memdir.archive_format.memdir import Memdir, init
from memdir.archive_format.verify import verify

PROCESSES = 8
TEACHES = 200


def _teacher(
    root: str, worker: int, count: int, start: multiprocessing.synchronize.Barrier
) -> None:
    memdir = Memdir.open(Path(root))
    start.wait()
    for n in range(count):
        lifecycle.teach(memdir, f"worker {worker} memory {n}", T0_DT)


@pytest.fixture
def md_in_memory(tmp_path: Path) -> Iterator[Memdir]:
    """A memdir on tmpfs when there is one: this test is about the lock and O_APPEND, and on a
    busy disk 1,600 fsyncs alone can take most of a minute."""
    shm = Path("/dev/shm")
    if not (shm.is_dir() and os.access(shm, os.W_OK)):
        yield init(tmp_path / "memory", T0_DT)[0]
        return
    base = Path(tempfile.mkdtemp(prefix="memdir-test-", dir=shm))
    try:
        yield init(base / "memory", T0_DT)[0]
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_concurrent_library_writers_lose_nothing(md_in_memory: Memdir) -> None:
    md = md_in_memory
    context = multiprocessing.get_context("fork")
    start = context.Barrier(PROCESSES)
    workers = [
        context.Process(target=_teacher, args=(str(md.root), worker, TEACHES, start))
        for worker in range(PROCESSES)
    ]
    for process in workers:
        process.start()
    for process in workers:
        process.join(120)
        assert process.exitcode == 0
    raw = md.memory_shelf.read_bytes()
    assert raw.endswith(b"\n")
    lines = [json.loads(line) for line in raw.split(b"\n")[:-1]]  # no torn or glued line
    assert len(lines) == PROCESSES * TEACHES
    texts = {line["text"] for line in lines}
    expected = {f"worker {w} memory {n}" for w in range(PROCESSES) for n in range(TEACHES)}
    assert texts == expected
    assert len({line["id"] for line in lines}) == len(lines)
    report = verify(md)
    assert report.clean, report.problems
    assert report.lines == PROCESSES * TEACHES
    assert not md.quarantine_dir.exists()


def test_threads_of_one_process_take_turns_at_the_writer_lock(md_in_memory: Memdir) -> None:
    """`memdir serve` writes from several threads: the writer lock makes them take turns as it
    makes processes, and the id cache gives each thread its own connection."""
    md, threads, count = md_in_memory, 6, 40
    start = threading.Barrier(threads)

    def teach(worker: int) -> None:
        start.wait()
        for n in range(count):
            lifecycle.teach(md, f"thread {worker} memory {n}", T0_DT)

    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(teach, range(threads)))
    texts = [line["text"] for line in shelf_lines(md) if line.get("kind") == "memory"]
    assert sorted(texts) == sorted(f"thread {w} memory {n}" for w in range(threads)
                                   for n in range(count))  # fmt: skip
    report = verify(md)
    assert report.clean, report.problems


def test_a_thread_waits_for_another_threads_lock_and_times_out_as_a_process_would(
    md: Memdir,
) -> None:
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with md.lock():
            held.set()
            release.wait(30)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert held.wait(30)
        with pytest.raises(LockedError, match=f"locked by pid {os.getpid()}"), md.lock(0.2):
            pass
    finally:
        release.set()
        holder.join(30)
    with md.lock(0.2), md.lock(0):  # free again, and still re-entrant within a thread
        pass


def test_concurrent_cli_writers_lose_nothing(cli, md: Memdir) -> None:
    """The same through the console script: 4 processes at a time, 5 teaches each."""

    def teach_batch(worker: int) -> list[str]:
        ids = []
        for n in range(5):
            done = cli("--dir", str(md.root), "teach", f"cli {worker}/{n}")
            assert done.code == 0, done
            ids.append(done.out.strip())
        return ids

    with ThreadPoolExecutor(4) as pool:
        ids = [memory_id for batch in pool.map(teach_batch, range(4)) for memory_id in batch]
    lines = shelf_lines(md)
    assert len(lines) == 20
    assert sorted(line["id"] for line in lines) == sorted(ids)
    assert {line["text"] for line in lines} == {f"cli {w}/{n}" for w in range(4) for n in range(5)}
    assert cli("--dir", str(md.root), "verify").code == 0


# A writer that appends one huge line slowly, without the lock, until it is killed.
SLOW_WRITER = """
import os, sys, time
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND)
os.write(fd, b'{"kind":"memory","id":"m-')
print("started", flush=True)
while True:
    os.write(fd, b"0123456789abcdef" * 64)
    time.sleep(0.001)
"""


def test_a_writer_killed_mid_line_loses_only_its_own_line(cli, md: Memdir) -> None:
    kept = [lifecycle.teach(md, f"earlier memory {n}", T0_DT).id for n in range(3)]
    before = md.memory_shelf.read_bytes()
    writer = subprocess.Popen(
        [sys.executable, "-c", SLOW_WRITER, str(md.memory_shelf)], stdout=subprocess.PIPE
    )
    assert writer.stdout is not None and writer.stdout.readline() == b"started\n"
    time.sleep(0.1)
    writer.send_signal(signal.SIGKILL)
    assert writer.wait(10) == -signal.SIGKILL
    torn = md.memory_shelf.read_bytes()[len(before) :]
    assert len(torn) > 1024 and b"\n" not in torn, "the crash left a torn last line"
    assert md.memory_shelf.read_bytes()[: len(before)] == before

    # readers ignore the torn tail; verify reports it
    listed = cli("--dir", str(md.root), "list", "--json")
    assert listed.code == 0, listed
    assert sorted(item["id"] for item in json.loads(listed.out)) == sorted(kept)
    dirty = cli("--dir", str(md.root), "verify")
    assert dirty.code == ExitStatus.PROBLEMS and "torn" in dirty.out, dirty

    done = cli("--dir", str(md.root), "teach", "written after the crash")
    assert done.code == 0, done
    assert "torn" in done.err and "quarantine" in done.err, "the quarantine is reported"
    [quarantined] = list(md.quarantine_dir.iterdir())
    assert quarantined.name.startswith("memories.jsonl.") and quarantined.name.endswith(".torn")
    assert quarantined.read_bytes() == torn, "torn bytes are kept, not dropped"

    after = md.memory_shelf.read_bytes()
    assert after.startswith(before)
    new_line = json.loads(after[len(before) :])
    assert new_line["text"] == "written after the crash" and new_line["id"] == done.out.strip()
    assert {line["id"] for line in shelf_lines(md)} == {*kept, new_line["id"]}

    checked = cli("--dir", str(md.root), "verify", "--json")
    assert checked.code == 0, checked
    report = json.loads(checked.out)
    assert report["clean"] is True and report["problems"] == []
    assert any("quarantine" in note for note in report["notes"]), "the quarantine is only a note"


def test_a_torn_event_line_does_not_corrupt_the_next_event(cli, md: Memdir) -> None:
    guess = lifecycle.infer(md, "a guess", T0_DT).id
    with open(md.event_shelf, "ab") as handle:
        handle.write(b'{"kind":"event","id":"e-12')  # a crashed writer's partial line
    done = cli("--dir", str(md.root), "confirm", guess)
    assert done.code == 0, done
    [event] = [line for line in shelf_lines(md) if line["kind"] == "event"]
    assert (event["op"], event["target"]) == ("confirm", guess)
    assert [path.read_bytes() for path in md.quarantine_dir.iterdir()] == [
        b'{"kind":"event","id":"e-12'
    ]
    assert cli("--dir", str(md.root), "verify").code == 0


HOLDER = """
import sys, time
from pathlib import Path
from memdir.archive_format.memdir import Memdir, init
with Memdir.open(Path(sys.argv[1])).lock():
    print("locked", flush=True)
    sys.stdin.readline()
"""


def hold_lock(md: Memdir) -> subprocess.Popen[bytes]:
    """Another process holding the writer lock until its stdin closes; returns once it holds it."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(md.root)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        cwd=Path(__file__).parent.parent,
    )
    assert holder.stdout is not None and holder.stdout.readline() == b"locked\n"
    return holder


def test_a_second_writer_is_told_who_holds_the_lock(cli, md: Memdir) -> None:
    holder = hold_lock(md)
    try:
        env = clean_env(MEMDIR_LOCK_TIMEOUT="0.3")
        started = time.monotonic()
        done = cli("--dir", str(md.root), "teach", "blocked", env=env)
        waited = time.monotonic() - started
        assert done.code == ExitStatus.LOCKED, done
        assert f"locked by pid {holder.pid}" in done.err
        assert "Traceback" not in done.err
        assert waited >= 0.3
        assert md.memory_shelf.read_bytes() == b""
        # readers do not need the lock
        assert cli("--dir", str(md.root), "list", env=env).code == 0
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(10)
    done = cli(
        "--dir", str(md.root), "teach", "unblocked", env=clean_env(MEMDIR_LOCK_TIMEOUT="0.3")
    )
    assert done.code == 0, done


def test_a_killed_lock_holder_leaves_no_stale_lock(cli, md: Memdir) -> None:
    holder = hold_lock(md)
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait(10)
    done = cli(
        "--dir",
        str(md.root),
        "teach",
        "after the holder died",
        env=clean_env(MEMDIR_LOCK_TIMEOUT="0.3"),
    )
    assert done.code == 0, done
    assert [line["text"] for line in shelf_lines(md)] == ["after the holder died"]


def test_quarantine_keeps_earlier_memories_verbatim(md: Memdir) -> None:
    """Library path: append after a torn line keeps every earlier byte."""
    lifecycle.teach(md, "one", T0_DT)
    before = md.memory_shelf.read_bytes()
    with open(md.memory_shelf, "ab") as handle:
        handle.write(b'{"kind":"memory","text":"half')
    lifecycle.teach(md, "two", T0_DT)
    raw = md.memory_shelf.read_bytes()
    assert raw.startswith(before)
    assert [json.loads(line)["text"] for line in raw.splitlines()] == ["one", "two"]
    assert [path.read_bytes() for path in md.quarantine_dir.iterdir()] == [
        b'{"kind":"memory","text":"half'
    ]
