"""The derived index on PostgreSQL next to the local one: index build time and warm recall
p50/p95 on the same generated memdir, in the same run.

Two copies of benchmarks/bench_index.py's generated memdir (in --workdir) are indexed, one
with the local files, one on the PostgreSQL server at --dsn (index.backend: postgres), with the
same embedder; then the same queries are recalled in-process on each (ten warm-up queries
first). The embedder is MiniLM unless `--embedder hashing` (no model cost: what is left is the
backends' own cost). Each row gives the 1-minute load average before and after it (the host
may be shared). The postgres schema is dropped at the end.
Usage: python -m benchmarks.bench_postgres --dsn 'host=/tmp/pg user=postgres' [--sizes 10000]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from benchmarks.bench_index import generated, sentence
from benchmarks.common import as_figures, machine, started, table, timed_recalls
from memdir.archive_format.memdir import Memdir, set_local_settings
from memdir.indexers.index import MemoryIndex

NOW = datetime(2027, 1, 1, tzinfo=timezone.utc)


def copy_with(source: Path, target: Path, index: dict[str, Any]) -> Memdir:
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(source, target, ignore=shutil.ignore_patterns(".memdir"))
    set_local_settings(target, {f"index.{key}": value for key, value in index.items()})
    return Memdir.open(target)


def measure(memdir: Memdir, embedder: Any, queries: list[str]) -> dict[str, Any]:
    index = MemoryIndex(memdir, embedder=embedder)
    began = time.perf_counter()
    index.update()
    build = time.perf_counter() - began
    found = {
        "build": build,
        **timed_recalls(index, queries, NOW),
        "bytes": index.size_bytes(),
    }
    index.parts.drop()
    index.close()
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dsn", required=True)
    parser.add_argument("--sizes", default="10000")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--embedder", choices=("minilm", "hashing"), default="minilm")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/memdir-bench"))
    args, result = started(parser, "postgres")
    result.parameters.pop("dsn")  # where the server was, perhaps with a password
    from memdir.indexers.embedding import load_embedder

    embedder, _ = load_embedder(None, args.embedder)
    rng = random.Random(11)
    queries = [" ".join(sentence(rng).split()[:8]) + "?" for _ in range(args.queries)]
    rows = []
    for size in (int(s) for s in args.sizes.split(",")):
        source = generated(args.workdir, size)
        for backend, index in (
            ("local", {"backend": "local"}),
            ("postgres", {"backend": "postgres", "dsn": args.dsn}),
        ):
            memdir = copy_with(source, args.workdir / f"pg-bench-{backend}-{size}", index)
            load = os.getloadavg()[0]
            found = measure(memdir, embedder, queries)
            shutil.rmtree(memdir.root, ignore_errors=True)
            rows.append([
                f"{size:,}", backend, embedder.model_id, found["mode"], f"{found['build']:.1f} s",
                f"{found['p50']:.1f} ms", f"{found['p95']:.1f} ms",
                f"{found['bytes'] / 1e6:.0f} MB", f"{load:.1f}–{os.getloadavg()[0]:.1f}",
            ])  # fmt: skip
            print(rows[-1], flush=True)
    print(f"machine: {machine()}; {datetime.now(timezone.utc):%Y-%m-%d}")
    headers = ["memories", "index", "embedder", "scope", "build", "warm p50", "warm p95", "size",
               "load (1 min, before–after)"]  # fmt: skip
    print(table(headers, rows))
    result.save(as_figures(["memories, index", *headers[2:]],
                           [[f"{row[0]}, {row[1]}", *row[2:]] for row in rows]))  # fmt: skip


if __name__ == "__main__":
    main()
