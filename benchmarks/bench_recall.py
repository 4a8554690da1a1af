"""Recall speed: warm in-process p50/p95 and cold `memdir recall` wall time, per archive size.

Reuses the memdirs that benchmarks/bench_index.py generates and indexes (in --workdir), so run
that first. With --history N, also measures a copy of the largest memdir after N recall records
of 10 memories each (decay's rehearsals), next to the time to load the whole rehearsal cache.
The result goes to benchmarks/results/recall.json (--result elsewhere).
Usage: python -m benchmarks.bench_recall [--sizes 10000,100000] [--queries 100] [--history N]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from benchmarks.bench_index import build, sentence
from benchmarks.common import (
    machine,
    memdir_command,
    started,
    table,
    timed_recalls,
    wall_time,
)
from memdir.archive_format import lifecycle, shelf
from memdir.archive_format.memdir import Memdir
from memdir.archive_format.records import encode_line
from memdir.indexers.index import MemoryIndex

NOW = datetime(2027, 1, 1, tzinfo=timezone.utc)


def warm(root: Path, queries: list[str]) -> dict[str, Any]:
    """In-process recall over an up-to-date index: ten warm-up queries (page cache, the
    model's first run), then the timed ones."""
    index = MemoryIndex(Memdir.open(root))
    if index.needs_update():
        index.update()
    found = timed_recalls(index, queries, NOW)
    index.close()
    return found


def with_history(root: Path, records: int) -> tuple[Path, float]:
    """A copy of `root` with `records` recall lines of 10 random memories each (made once),
    indexed; and how long reading every memory's rehearsal times from the index takes (median
    of 5)."""
    import shutil

    copy = root.with_name(f"{root.name}-history-{records}")
    if not (copy / ".history-complete").exists():
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(root, copy)
        memdir = Memdir.open(copy)
        index = MemoryIndex(memdir)
        ids = [memory.id for memory in index.catalog.all_memories()]
        rng = random.Random(5)
        start = NOW - timedelta(days=365)
        lines = [
            encode_line(lifecycle.recall_line(
                rng.sample(ids, 10), start + timedelta(minutes=number * 20)
            ))
            for number in range(records)
        ]  # fmt: skip
        shelf.append(memdir.recall_shelf, lines, memdir.quarantine_dir)
        index.update()
        index.close()
        (copy / ".history-complete").write_text("")
    index = MemoryIndex(Memdir.open(copy))
    samples = []
    for _ in range(5):
        began = time.perf_counter()
        index.rehearsals()
        samples.append(time.perf_counter() - began)
    index.close()
    return copy, statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/memdir-bench"))
    parser.add_argument("--history", type=int, default=0, help="recall records (0: none)")
    args, result = started(parser, "recall")
    from memdir.indexers.embedding import load_embedder

    embedder, _ = load_embedder()
    rng = random.Random(11)
    queries = [" ".join(sentence(rng).split()[:8]) + "?" for _ in range(args.queries)]
    rows = []
    figures: dict[str, dict[str, Any]] = {}
    roots = [(f"{size:,}", build(args.workdir, size, embedder)) for size in
             (int(s) for s in args.sizes.split(","))]  # fmt: skip
    notes = []
    if args.history:
        label, largest = roots[-1]
        copy, load = with_history(largest, args.history)
        figures["rehearsal times of every memory (what sleep reads)"] = {"ms": load * 1000}
        roots.append((f"{label} + {args.history:,} recall records", copy))
        notes.append(
            f"reading every memory's rehearsal times from that copy's index (what `sleep` "
            f"reads; recall reads only its candidates'): {load * 1000:.0f} ms"
        )
    for label, root in roots:
        speed = warm(root, queries)
        env = {"MEMDIR_NOW": (NOW - timedelta(seconds=1)).isoformat()}
        command = [*memdir_command(), "--dir", str(root)]
        cold = wall_time([*command, "recall", queries[1], "--no-record"], args.runs, env)
        help_time = wall_time([*memdir_command(), "--help"], args.runs)
        figures[f"{label} memories"] = {
            "scope": speed["mode"], "warm p50 ms": speed["p50"], "warm p95 ms": speed["p95"],
            "cold `memdir recall` ms": cold * 1000, "`memdir --help` ms": help_time * 1000,
        }  # fmt: skip
        rows.append([
            label, speed["mode"], f"{speed['p50']:.1f} ms", f"{speed['p95']:.1f} ms",
            f"{cold * 1000:.0f} ms", f"{help_time * 1000:.0f} ms",
        ])  # fmt: skip
    print(f"machine: {machine()}; {datetime.now(timezone.utc):%Y-%m-%d}")
    print(
        table(
            [
                "memories",
                "scope",
                "warm p50",
                "warm p95",
                "cold `memdir recall`",
                "`memdir --help`",
            ],
            rows,
        )
    )
    for note in notes:
        print(note)
    result.save(figures)


if __name__ == "__main__":
    main()
