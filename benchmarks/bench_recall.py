"""Recall speed: warm in-process p50/p95 and cold `memdir recall` wall time, per archive size.

Reuses the memdirs that benchmarks/bench_index.py generates and indexes (in --workdir), so run
that first. Usage: python benchmarks/bench_recall.py [--sizes 10000,100000] [--queries 100]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from archive_format.memdir import Memdir  # noqa: E402
from benchmarks.bench_index import build, sentence  # noqa: E402
from benchmarks.common import machine, memdir_command, table, wall_time  # noqa: E402
from indexers.index import MemoryIndex  # noqa: E402
from indexers.recall import RecallOptions, recall  # noqa: E402

NOW = datetime(2027, 1, 1, tzinfo=timezone.utc)


def warm(root: Path, queries: list[str]) -> dict[str, float]:
    """In-process recall over an up-to-date index: ten warm-up queries (page cache, the
    model's first run), then the timed ones."""
    index = MemoryIndex(Memdir.open(root))
    if index.needs_update():
        index.update()
    for query in queries[:10]:
        recall(index, query + " (warm-up)", NOW)
    samples = []
    for query in queries:
        began = time.perf_counter()
        recall(index, query, NOW, RecallOptions(k=10))
        samples.append((time.perf_counter() - began) * 1000)
    samples.sort()
    mode = "exact" if index.scoring_table() is not None else "pool"
    index.close()
    return {
        "p50": statistics.median(samples),
        "p95": samples[int(len(samples) * 0.95) - 1],
        "mode": mode,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/memdir-bench"))
    args = parser.parse_args()
    from indexers.embedding import load_embedder

    embedder, _ = load_embedder()
    rng = random.Random(11)
    queries = [" ".join(sentence(rng).split()[:8]) + "?" for _ in range(args.queries)]
    rows = []
    for size in (int(s) for s in args.sizes.split(",")):
        root = build(args.workdir, size, embedder)
        speed = warm(root, queries)
        env = {"MEMDIR_NOW": (NOW - timedelta(seconds=1)).isoformat()}
        command = [*memdir_command(), "--dir", str(root)]
        cold = wall_time([*command, "recall", queries[1], "--no-record"], args.runs, env)
        help_time = wall_time([*memdir_command(), "--help"], args.runs)
        rows.append([
            f"{size:,}", speed["mode"], f"{speed['p50']:.1f} ms", f"{speed['p95']:.1f} ms",
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


if __name__ == "__main__":
    main()
