"""The derived index on PostgreSQL next to the local one: index build time and warm recall
p50/p95 on the same generated memdir, in the same run.

Two copies of benchmarks/bench_index.py's generated memdir (in --workdir) are indexed, one
with the local files, one on the PostgreSQL server at --dsn (index.backend: postgres), with the
same embedder, --builds times each from nothing (a fresh copy, the schema dropped), the two
taking turns and alternating which goes first; the build columns are medians over them. Then
the same queries are recalled in-process on the last build of each, in --rounds rounds that
alternate which index goes first (ten warm-up queries each first), and p50/p95 are over every
round's recalls. Beside wall time each row gives CPU time, of the build and per recall: this
process's, plus, for PostgreSQL, the whole server's (read from /proc: the server must run on
this host and serve nothing else meanwhile), which a loaded host disturbs less than wall time. The
embedder is MiniLM unless `--embedder hashing` (no model cost: what is left is the backends'
own cost). `--embedding-cache FILE` embeds the memories' texts into FILE before either build
(or finds them there from an earlier run), so neither build pays model time (say so when
quoting it); a recall's query is still embedded by the model on both sides.
Each row gives the 1-minute load average before and after it (the host may be shared). The
postgres schema is dropped at the end.
Usage: python -m benchmarks.bench_postgres --dsn 'host=/tmp/pg user=postgres' [--sizes 10000]
       [--builds 3] [--rounds 3] [--embedder hashing] [--embedding-cache FILE]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import statistics
import time
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from benchmarks.bench_index import generated, sentence
from benchmarks.common import as_figures, machine, started, table
from memdir.archive_format.memdir import Memdir, set_local_settings
from memdir.indexers.index import MemoryIndex

NOW = datetime(2027, 1, 1, tzinfo=timezone.utc)
BACKENDS = ("local", "postgres")


def copy_with(source: Path, target: Path, index: dict[str, Any]) -> Memdir:
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(source, target, ignore=shutil.ignore_patterns(".memdir"))
    set_local_settings(target, {f"index.{key}": value for key, value in index.items()})
    return Memdir.open(target)


class CachedEmbedder:
    """The real embedder, with the memories' vectors kept in a file (`path`, numpy's .npz):
    `fill` embeds a memdir's memory texts once (before any build is timed, and only those not
    in the file from an earlier run), and a build then reads them from here on either side.
    Any other text (a recall's query) goes to the model each time, as it would in use."""

    def __init__(self, inner: Any, path: Path) -> None:
        import numpy as np

        self.inner = inner
        self.model_id, self.dim, self.kind = inner.model_id, inner.dim, inner.kind
        self.path = path
        self.rows: dict[str, Any] = {}
        if path.exists():
            stored = np.load(path)
            if str(stored["model"]) == inner.model_id:
                self.rows = dict(zip(stored["keys"].tolist(), stored["vectors"], strict=True))

    @staticmethod
    def key(text: str) -> str:
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def fill(self, source: Path) -> tuple[int, float]:
        """Embed the memory texts of the memdir at `source` not kept yet, and save the file;
        how many, and the seconds it took."""
        import numpy as np

        texts = []
        for shelf in Memdir.open(source).shelves():
            for line in shelf.read_text(encoding="utf-8").splitlines():
                record = json.loads(line) if line.strip() else {}
                if record.get("kind") == "memory" and self.key(record["text"]) not in self.rows:
                    texts.append(record["text"])
        texts = list(dict.fromkeys(texts))
        began = time.perf_counter()
        for start in range(0, len(texts), 1000):
            batch = texts[start : start + 1000]
            vectors = np.asarray(self.inner.embed(batch), dtype=np.float32)
            self.rows.update(zip(map(self.key, batch), vectors, strict=True))
        if texts:
            keys = list(self.rows)
            np.savez(self.path, model=np.asarray(self.model_id), keys=np.asarray(keys),
                     vectors=np.stack([self.rows[k] for k in keys]))  # fmt: skip
        return len(texts), time.perf_counter() - began

    def embed(self, texts: Sequence[str]) -> Any:
        import numpy as np

        keys = [self.key(text) for text in texts]
        if all(key in self.rows for key in keys):
            return np.stack([self.rows[key] for key in keys]).astype(np.float32)
        return self.inner.embed(texts)


def cpu_seconds(pid: int | None = None, children: bool = False) -> float:
    """User and system CPU seconds of this process, or of process `pid` (from /proc); with
    `children`, also those of its ended children it waited for."""
    if pid is None:
        times = os.times()
        return times.user + times.system
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = int(fields[11]) + int(fields[12])
    if children:
        ticks += int(fields[13]) + int(fields[14])
    return ticks / os.sysconf("SC_CLK_TCK")


def server_cpu(index: MemoryIndex) -> float:
    """CPU seconds of the whole PostgreSQL server a postgres index is on (0 for local): its
    postmaster with every ended child (parallel build workers among them) and every live one.
    The server must run on this host and serve nothing else meanwhile."""
    database = getattr(index.parts, "db", None)
    if database is None:
        return 0.0
    fields = Path(f"/proc/{database.backend_pid()}/stat").read_text().rsplit(")", 1)[1].split()
    postmaster = int(fields[1])  # the backend's parent
    total = cpu_seconds(postmaster, children=True)
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(stat[1]) == postmaster:
                total += cpu_seconds(int(entry.name))
    return total


def drop(index: MemoryIndex, copy: Path) -> None:
    """Remove a built index (its schema on the server too) and its memdir's copy."""
    index.parts.drop()
    index.close()
    shutil.rmtree(copy, ignore_errors=True)


def runs(values: list[float]) -> str:
    """Each build's figure beside the median, when there were several."""
    return f" ({', '.join(f'{value:.1f}' for value in values)})" if len(values) > 1 else ""


def timed_round(index: MemoryIndex, queries: list[str]) -> tuple[list[float], float]:
    """One timed recall per query (k=10) after ten warm-up ones: the times in ms, and the CPU
    seconds per recall of this process and (PostgreSQL) its server process."""
    from memdir.indexers.recall import RecallOptions, recall

    for query in queries[:10]:
        recall(index, query + " (warm-up)", NOW)
    cpu = cpu_seconds() + server_cpu(index)
    samples = []
    for query in queries:
        began = time.perf_counter()
        recall(index, query, NOW, RecallOptions(k=10))
        samples.append((time.perf_counter() - began) * 1000)
    spent = cpu_seconds() + server_cpu(index) - cpu
    return samples, spent / len(queries)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dsn", required=True)
    parser.add_argument("--sizes", default="10000")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--builds", type=int, default=1)
    parser.add_argument("--embedder", choices=("minilm", "hashing"), default="minilm")
    parser.add_argument("--embedding-cache", type=Path, default=None)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/memdir-bench"))
    args, result = started(parser, "postgres")
    result.parameters.pop("dsn")  # where the server was, perhaps with a password
    from memdir.indexers.embedding import load_embedder

    embedder, _ = load_embedder(None, args.embedder)
    if args.embedding_cache is not None:
        embedder = CachedEmbedder(embedder, args.embedding_cache)
    rng = random.Random(11)
    queries = [" ".join(sentence(rng).split()[:8]) + "?" for _ in range(args.queries)]
    rows = []
    for size in (int(s) for s in args.sizes.split(",")):
        source = generated(args.workdir, size)
        if isinstance(embedder, CachedEmbedder):
            count, seconds = embedder.fill(source)
            print(f"{size:,}: {count} memory texts embedded into {args.embedding_cache} in"
                  f" {seconds:.0f} s (before either build; both read them from there)")  # fmt: skip
        opened: dict[str, Any] = {backend: {"builds": [], "build cpus": [], "loads": []}
                                  for backend in BACKENDS}  # fmt: skip
        for build in range(args.builds):  # alternating which goes first
            for backend in BACKENDS if build % 2 == 0 else BACKENDS[::-1]:
                found = opened[backend]
                if "index" in found:  # the previous build's: gone, so this one starts empty
                    drop(found["index"], args.workdir / f"pg-bench-{backend}-{size}")
                index = {"backend": backend} if backend == "local" else {"backend": backend,
                                                                         "dsn": args.dsn}  # fmt: skip
                memdir = copy_with(source, args.workdir / f"pg-bench-{backend}-{size}", index)
                load = os.getloadavg()[0]
                found["index"] = MemoryIndex(memdir, embedder=embedder)
                began, cpu = time.perf_counter(), cpu_seconds() + server_cpu(found["index"])
                found["index"].update()
                found["builds"].append(time.perf_counter() - began)
                found["build cpus"].append(cpu_seconds() + server_cpu(found["index"]) - cpu)
                found["loads"] += [load, os.getloadavg()[0]]
                print(f"{size:,} {backend}: built in {found['builds'][-1]:.1f} s"
                      f" (CPU {found['build cpus'][-1]:.1f} s, load {load:.1f})", flush=True)  # fmt: skip
        for backend in BACKENDS:
            found = opened[backend]
            found["build"] = statistics.median(found["builds"])
            found["build cpu"] = statistics.median(found["build cpus"])
            found["samples"], found["cpu"] = [], []
        for turn in range(args.rounds):  # alternating which goes first
            for backend in BACKENDS if turn % 2 == 0 else BACKENDS[::-1]:
                found = opened[backend]
                samples, cpu = timed_round(found["index"], queries)
                found["samples"] += samples
                found["cpu"].append(cpu)
                found["loads"].append(os.getloadavg()[0])
        for backend in BACKENDS:
            found = opened[backend]
            samples = sorted(found["samples"])
            found["p50"] = statistics.median(samples)
            found["p95"] = samples[int(len(samples) * 0.95) - 1]
            found["mode"] = "exact" if found["index"].scoring_table() is not None else "pool"
            found["bytes"] = found["index"].size_bytes()
        local = opened["local"]
        for backend in BACKENDS:
            found = opened[backend]
            ratio = "" if backend == "local" else (
                f"{found['build'] / local['build']:.1f}×"
                f" · {found['build cpu'] / local['build cpu']:.1f}×"
                f" · {found['p50'] / local['p50']:.1f}×"
                f" · {statistics.median(found['cpu']) / statistics.median(local['cpu']):.1f}×"
            )  # fmt: skip
            rows.append([
                f"{size:,}", backend, embedder.model_id, found["mode"],
                f"{found['build']:.1f} s" + runs(found["builds"]),
                f"{found['build cpu']:.1f} s" + runs(found["build cpus"]),
                f"{found['p50']:.1f} ms", f"{found['p95']:.1f} ms",
                f"{statistics.median(found['cpu']) * 1000:.1f} ms",
                f"{found['bytes'] / 1e6:.0f} MB",
                f"{min(found['loads']):.1f}–{max(found['loads']):.1f}", ratio,
            ])  # fmt: skip
            print(rows[-1], flush=True)
        for backend in BACKENDS:
            drop(opened[backend]["index"], args.workdir / f"pg-bench-{backend}-{size}")
    print(f"machine: {machine()}; {datetime.now(timezone.utc):%Y-%m-%d}")
    headers = ["memories", "index", "embedder", "scope", "build", "build CPU", "warm p50",
               "warm p95", "CPU per recall", "size", "load (1 min, min–max)",
               "postgres ÷ local (build · build CPU · p50 · CPU per recall)"]  # fmt: skip
    print(table(headers, rows))
    result.save(as_figures(["memories, index", *headers[2:]],
                           [[f"{row[0]}, {row[1]}", *row[2:]] for row in rows]))  # fmt: skip


if __name__ == "__main__":
    main()
