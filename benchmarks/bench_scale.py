"""One large memdir end to end: the index build, warm and cold recall, recall through the
service, sleep, and sync with a second clone, on the local backend or on PostgreSQL.

The memdir is benchmarks/bench_index.py's generated one (made once in --workdir; a million
chat-length memories take a few minutes to write), copied, with `settings.embedder.kind` set
in its memdir.yaml so that every command run on it (recall, serve, sleep, sync) embeds with the
same model. The default is the hashing embedder: MiniLM embeds about 200 texts a second on two
free cores, so a million memories would take most of two hours of both (`--embedder minilm`).
With --dsn the index lives in that PostgreSQL database (memdir.local.yaml `index.backend:
postgres`); its schema is dropped at the end.

- build: one in-process update from nothing (embedding, affect and the rest apart); the size of
  `.memdir/` (and of the database schema) against the shelves';
- warm recall: in-process, k = 10, after ten warm-up queries; p50/p95, and the query's
  embedding alone (p50) beside it;
- cold recall: `memdir recall QUESTION --no-record` in a fresh process without the service,
  then with `memdir serve` running (the client asks it), medians of --runs;
- sleep: `memdir sleep`, the first run and the next;
- sync: the memdir committed and pushed to a bare repository by `memdir sync`; a clone of it
  indexed (with --dsn in a second database on the same server); then --rounds times 50 new
  memories on each side and `memdir sync` on the first, then on the clone, each timed
  (commit, pull with merge, index update, push).

Usage: python -m benchmarks.bench_scale [--size 1000000] [--embedder hashing|minilm]
       [--dsn DSN [--build-megabytes 1024]] [--runs 5] [--queries 100] [--rounds 3]
       [--skip sync,sleep] [--reuse]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import yaml

from benchmarks import common
from benchmarks.bench_index import generated, memories, sentence, size_of, timed_update
from benchmarks.bench_serve import start_service
from memdir.archive_format import lifecycle
from memdir.archive_format.location import CONFIG_NAME
from memdir.archive_format.memdir import Memdir, set_local_settings
from memdir.archive_format.settings import IndexSettings

NOW = datetime(2027, 1, 1, tzinfo=timezone.utc)
IDENTITY = {"GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.invalid",
            "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.invalid"}  # fmt: skip


def prepared(
    workdir: Path, size: int, embedder: str, dsn: str | None, build_megabytes: int, reuse: bool
) -> Memdir:
    """A copy of the generated memdir whose settings embed with `embedder` (and keep the index
    in the database at `dsn`, its HNSW build given up to `build_megabytes`); with `reuse`, the
    copy an earlier run left, as it left it."""
    target = workdir / f"scale-{embedder}-{size}{'-pg' if dsn else ''}"
    if reuse and target.is_dir():
        return Memdir.open(target)
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(generated(workdir, size), target, ignore=shutil.ignore_patterns(".memdir"))
    (target / ".bench-complete").unlink(missing_ok=True)
    config = yaml.safe_load((target / CONFIG_NAME).read_text())
    config.setdefault("settings", {})["embedder"] = {"kind": embedder}
    (target / CONFIG_NAME).write_text(yaml.safe_dump(config, sort_keys=False))
    if dsn:
        set_local_settings(target, {"index.backend": "postgres", "index.dsn": dsn,
                                    "index.build_megabytes": build_megabytes})  # fmt: skip
    return Memdir.open(target)


def run(*command: str, cwd: Path, env: dict[str, str] | None = None) -> float:
    """Seconds a command took (it must succeed)."""
    began = time.perf_counter()
    subprocess.run(command, cwd=cwd, env={**os.environ, **IDENTITY, **(env or {})},
                   check=True, capture_output=True)  # fmt: skip
    return time.perf_counter() - began


def warm(memdir: Memdir, queries: list[str]) -> dict[str, Any]:
    """Warm in-process recall, and the query embedding alone on the same queries."""
    from memdir.indexers.blas import single_thread
    from memdir.indexers.index import MemoryIndex

    index = MemoryIndex(memdir)
    found = common.timed_recalls(index, queries, NOW)
    samples = []
    with single_thread():
        for query in queries:
            began = time.perf_counter()
            index.embedder.embed([query])
            samples.append((time.perf_counter() - began) * 1000)
    found["embedding p50"] = statistics.median(samples)
    index.close()
    return found


def cold(memdir: Memdir, queries: list[str], runs: int) -> dict[str, float]:
    """`memdir recall` in fresh processes, without and then with the service."""
    env = {"MEMDIR_NOW": (NOW - timedelta(seconds=1)).isoformat()}
    command = [*common.memdir_command(), "--dir", str(memdir.root)]
    recall = [*command, "recall", queries[1], "--no-record"]
    found = {
        "without the service": common.wall_time(recall, runs, {**env, "MEMDIR_NO_SERVICE": "1"})
    }
    log = memdir.root.parent / f"{memdir.root.name}-serve.log"
    log.unlink(missing_ok=True)
    service = start_service(memdir.root, log)
    try:
        found["served"] = common.wall_time(recall, runs, env)
    finally:
        service.send_signal(signal.SIGTERM)
        service.wait(timeout=120)
    found["`memdir --help`"] = common.wall_time([*common.memdir_command(), "--help"], runs)
    return {name: seconds * 1000 for name, seconds in found.items()}


def sleep(memdir: Memdir) -> dict[str, float]:
    """`memdir sleep` twice, a day apart (the second finds less to do)."""
    command = [*common.memdir_command(), "--dir", str(memdir.root)]
    return {
        f"run {n + 1}": run(*command, "--now", (NOW + timedelta(days=n)).isoformat(), "sleep",
                            cwd=memdir.root) * 1000
        for n in range(2)
    }  # fmt: skip


def sync(memdir: Memdir, rounds: int, dsn: str | None) -> dict[str, float]:
    """`memdir sync` with a bare hub and a clone, in seconds; with `dsn` the clone's index is
    on the same server too, in a database of its own (the clone has the memdir's id, which
    names the schema)."""
    binary = common.memdir_command()[0]
    base, root = memdir.root.parent, memdir.root
    hub, clone = base / f"{root.name}-hub.git", base / f"{root.name}-clone"
    for path in (hub, clone, root / ".git"):  # a reused memdir's repository too
        shutil.rmtree(path, ignore_errors=True)
    run("git", "init", "-q", "--bare", "-b", "main", str(hub), cwd=base)
    run("git", "init", "-q", "-b", "main", cwd=root)
    run("git", "remote", "add", "origin", str(hub), cwd=root)
    found = {"first sync (commit, push)": run(binary, "sync", cwd=root)}
    run("git", "clone", "-q", str(hub), str(clone), cwd=base)
    if dsn:
        local = {f"index.{key}": value for key, value in vars(memdir.settings.index).items()}
        set_local_settings(clone, {**local, "index.dsn": second_database(dsn)})
    found["the clone's first `memdir index`"] = run(binary, "index", cwd=clone)
    rng = random.Random(rounds)
    samples: dict[Path, list[float]] = {root: [], clone: []}
    for number in range(rounds):
        for where in (root, clone):
            lifecycle.add_memories(Memdir.open(where),
                                   memories(50, 10_000_000 + 100 * number, rng))  # fmt: skip
        for where in (root, clone):
            samples[where].append(run(binary, "sync", cwd=where))
    for name, where in (("the memdir", root), ("the clone", clone)):
        found[f"sync of {name}, 50 + 50 new (median)"] = statistics.median(samples[where])
        found[f"… of {name}, slowest"] = max(samples[where])
    if dsn:
        drop(Memdir.open(clone))
    shutil.rmtree(clone, ignore_errors=True)
    shutil.rmtree(hub, ignore_errors=True)
    return found


def second_database(dsn: str) -> str:
    """The connection string of a database beside `dsn`'s (made if missing), for a clone."""
    import psycopg
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    params = conninfo_to_dict(dsn)
    name = f"{params.get('dbname') or 'postgres'}_clone"
    with psycopg.connect(dsn, autocommit=True) as connection:
        if not connection.execute(
            "SELECT 1 FROM pg_database WHERE datname = %s", (name,)
        ).fetchone():
            connection.execute(f'CREATE DATABASE "{name}"')
    return make_conninfo(dsn, dbname=name)


def schema_bytes(memdir: Memdir) -> int:
    """The index's bytes where it lives (`.memdir/`, or the schema and the memory table)."""
    from memdir.indexers.index import MemoryIndex

    index = MemoryIndex(memdir)
    try:
        return index.size_bytes()
    finally:
        index.close()


def drop(memdir: Memdir) -> None:
    from memdir.indexers.index import MemoryIndex

    index = MemoryIndex(memdir)
    index.parts.drop()
    index.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=1_000_000)
    parser.add_argument("--embedder", choices=("hashing", "minilm"), default="hashing")
    parser.add_argument("--dsn", help="keep the index in this PostgreSQL database")
    parser.add_argument(
        "--build-megabytes",
        type=int,
        default=IndexSettings.build_megabytes,
        help="with --dsn: the most memory the HNSW build asks of the server (index.build_megabytes)",
    )
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--skip",
        default="",
        help="steps to leave out: build, warm, cold, sleep, sync (a comma between them)",
    )
    parser.add_argument(
        "--reuse",
        action="store_true",
        help="the memdir an earlier run prepared (and indexed: --skip build)",
    )
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/memdir-bench"))
    # a run on PostgreSQL is recorded apart from the local one
    args, result = common.started(parser, "scale-postgres" if "--dsn" in sys.argv else "scale")
    from memdir.indexers.embedding import load_embedder

    skip = set(filter(None, args.skip.split(",")))
    rng = random.Random(11)
    queries = [" ".join(sentence(rng).split()[:8]) + "?" for _ in range(args.queries)]
    memdir = prepared(
        args.workdir, args.size, args.embedder, args.dsn, args.build_megabytes, args.reuse
    )
    figures: dict[str, dict[str, Any]] = {}

    def step(name: str, values: dict[str, Any]) -> None:
        figures[name] = {
            **values,
            "load": " → ".join(str(v[0]) for v in (before, common.load_average())),
        }
        print(f"{name}: {values}", file=sys.stderr, flush=True)

    before = common.load_average()
    if "build" not in skip:
        embedder, _ = load_embedder(None, args.embedder)
        build = timed_update(memdir, embedder)
        index_bytes = schema_bytes(memdir)
        shelves = size_of(memdir.shelves_dir)
        step("build", {"total s": build["total"], "embedding s": build["embed"],
                       "affect s": build["affect"], "rest s": build["rest"],
                       "index MB": index_bytes / 1e6, "shelves MB": shelves / 1e6,
                       "index ÷ shelves": index_bytes / shelves})  # fmt: skip
    if "warm" not in skip:
        before = common.load_average()
        found = warm(memdir, queries)
        step("warm recall", {"p50 ms": found["p50"], "p95 ms": found["p95"],
                             "scope": found["mode"], "embedding p50 ms": found["embedding p50"]})  # fmt: skip
    if "cold" not in skip:
        before = common.load_average()
        step("cold recall", cold(memdir, queries, args.runs))
    if "sleep" not in skip:
        before = common.load_average()
        step("sleep (ms)", sleep(memdir))
    if "sync" not in skip:
        before = common.load_average()
        step("sync (s)", sync(memdir, args.rounds, args.dsn))
    if args.dsn:
        drop(memdir)
    print(f"machine: {common.machine()}; {args.size:,} memories, {args.embedder} embedder, "
          f"{'PostgreSQL' if args.dsn else 'local'} index")  # fmt: skip
    for name, values in figures.items():
        print(f"\n{name}")
        print(common.table(["measure", "value"], [[k, f"{v:,.1f}" if isinstance(v, float) else v]
                                           for k, v in values.items()]))  # fmt: skip
    result.save(figures)


if __name__ == "__main__":
    main()
