"""After a git pull: what the first write and the first index update cost when a shelf was
written anew by git (a new inode, the old bytes first, the other clone's lines after them).

    .venv/bin/python -m benchmarks.bench_pull [SIZE ...] [--runs N] [--forgotten F] [--no-index]

For each size (default 100,000 memories; memdirs as benchmarks/bench_archive.py makes them,
the hashing embedder): build the id cache and the index, forget F memories (default 0), then N
times: write the memory shelf anew with 10 pulled memories appended, as git does, and rewrite
git's index (the memdir is a repository holding one small tracked file: after a merge,
checkout or pull, the tombstones are re-applied over every shelf whole), and time the first
write (`add_memories` of one memory: the tombstones and the id cache catch up) and the index
update after it (not with --no-index). Prints medians in ms as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from benchmarks.bench_archive import START, STEP, copied, generated
from benchmarks.common import machine, started
from memdir.archive_format import lifecycle
from memdir.archive_format.clock import format_time
from memdir.archive_format.records import encode_line, new_memory

WORKDIR = Path(tempfile.gettempdir()) / "memdir-bench"


def pull(path: Path, lines: list[bytes]) -> None:
    """What git does: a new file with the old bytes and the pulled lines, renamed over."""
    fresh = path.with_name(path.name + ".pulled")
    with open(path, "rb") as old, open(fresh, "wb") as new:
        while chunk := old.read(1 << 22):
            new.write(chunk)
        new.write(b"".join(lines))
    os.replace(fresh, path)


def git_wrote_its_index(root: Path, run: int) -> None:
    """What a merge, checkout or pull leaves: git's index written anew."""
    (root / "pulled-by-git.txt").write_text(f"pull {run}\n")
    subprocess.run(["git", "-C", str(root), "add", "pulled-by-git.txt"], check=True)


def measure(size: int, runs: int, forgotten: int, with_index: bool) -> dict[str, float]:
    from memdir.indexers.embedding import HashingEmbedder
    from memdir.indexers.index import MemoryIndex
    from memdir.usecases.forgetting import forget_memory

    memdir = copied(generated(WORKDIR, size), WORKDIR / f"pull-{size}")
    subprocess.run(["git", "init", "-q", str(memdir.root)], check=True)
    now = START + size * STEP
    warm = new_memory(created=format_time(now), text="warm", source="observation",
                      author="assistant", store="episodic")  # fmt: skip
    lifecycle.add_memories(memdir, [warm])  # builds the id cache
    for number in range(forgotten):
        forget_memory(memdir, lifecycle.teach(memdir, f"to forget {number}", now).id, now)
    index = MemoryIndex(memdir, embedder=HashingEmbedder()) if with_index else None
    if index is not None:
        index.update()
    writes, updates = [], []
    for run in range(runs):
        pulled = [encode_line(new_memory(created=format_time(now), text=f"pulled {run} {n}",
                                         source="observation", author="assistant",
                                         store="episodic").to_line()) for n in range(10)]  # fmt: skip
        pull(memdir.memory_shelf, pulled)
        git_wrote_its_index(memdir.root, run)
        began = time.perf_counter()
        lifecycle.add_memories(memdir, [new_memory(created=format_time(now), text=f"mine {run}",
                                                   source="observation", author="assistant",
                                                   store="episodic")])  # fmt: skip
        writes.append(time.perf_counter() - began)
        if index is None:
            continue
        began = time.perf_counter()
        report = index.update()
        updates.append(time.perf_counter() - began)
        print(f"  size {size} run {run}: rebuilt={report.rebuilt} ({report.reason or 'appended'})")
    found = {"first write after a pull (ms)": statistics.median(writes) * 1000}
    if index is not None:
        index.close()
        found["index update after a pull (ms)"] = statistics.median(updates) * 1000
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sizes", nargs="*", type=int, default=[100_000])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--forgotten", type=int, default=0, help="memories forgotten before")
    parser.add_argument("--no-index", action="store_true", help="time the first write only")
    args, result = started(parser, "pull")
    print(machine())
    found = {
        f"{size:,} memories": measure(size, args.runs, args.forgotten, not args.no_index)
        for size in args.sizes
    }
    print(json.dumps(found, indent=2))
    result.save(found)


if __name__ == "__main__":
    main()
