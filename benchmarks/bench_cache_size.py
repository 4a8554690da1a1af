"""Where the bytes of `.memdir/` go: each file of the index, and each table and index of the
SQLite catalog, against the shelves, per archive size.

The memdir is benchmarks/bench_index.py's generated one (in --workdir), indexed in a copy with
the chosen embedder: the hashing embedder by default (the same 384 float32 dimensions as MiniLM,
so the same bytes, without minutes of embedding at 100k).
Usage: python -m benchmarks.bench_cache_size [--sizes 10000,100000] [--embedder hashing|minilm]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import time
from pathlib import Path
from typing import Any

from benchmarks.bench_index import generated, load, size_of
from benchmarks.common import machine, table
from memdir.archive_format.memdir import Memdir
from memdir.indexers.index import MemoryIndex


def indexed(workdir: Path, size: int, embedder: Any) -> tuple[Memdir, float]:
    """A fresh copy of the generated memdir, indexed; and the build's seconds."""
    target = workdir / f"sized-{embedder.kind}-{size}"
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(generated(workdir, size), target, ignore=shutil.ignore_patterns(".memdir"))
    memdir = Memdir.open(target)
    index = MemoryIndex(memdir, embedder=embedder)
    began = time.perf_counter()
    index.update()
    seconds = time.perf_counter() - began
    index.close()
    return memdir, seconds


def files(cache: Path) -> dict[str, int]:
    """Bytes per file of the cache, a full-text index directory counted as one."""
    found: dict[str, int] = {}
    for path in sorted(cache.rglob("*")):
        if not path.is_file():
            continue
        name = str(path.relative_to(cache))
        for kind in ("tantivy", "sessions"):
            if name.startswith(f"index/{kind}-"):
                name = "/".join(name.split("/")[:2]) + "/"
        found[name] = found.get(name, 0) + path.stat().st_size
    return found


def tables(catalog: Path) -> dict[str, int]:
    """Bytes per table and index of a SQLite file (the dbstat virtual table)."""
    connection = sqlite3.connect(f"file:{catalog}?mode=ro", uri=True)
    try:
        rows = connection.execute(
            "SELECT name, SUM(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC"
        ).fetchall()
    finally:
        connection.close()
    return {str(name): int(total) for name, total in rows}


def mb(count: int) -> str:
    return f"{count / 1e6:,.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--embedder", choices=("hashing", "minilm"), default="hashing")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/memdir-bench"))
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--keep", action="store_true", help="keep the indexed copies")
    args = parser.parse_args()
    from memdir.indexers.embedding import load_embedder

    embedder, _ = load_embedder(None, args.embedder)
    results = []
    for size in (int(text) for text in args.sizes.split(",")):
        before = load()
        memdir, seconds = indexed(args.workdir, size, embedder)
        cache = memdir.cache_dir
        results.append({
            "size": size, "embedder": embedder.model_id, "build_s": seconds,
            "load": f"{before} → {load()}", "shelves": size_of(memdir.shelves_dir),
            "cache": size_of(cache), "files": files(cache),
            "tables": tables(cache / "index" / "catalog.sqlite"),
        })  # fmt: skip
        if not args.keep:
            shutil.rmtree(memdir.root, ignore_errors=True)
    print(f"machine: {machine()}; embedder {embedder.model_id}")
    for r in results:
        print(
            f"\n{r['size']:,} memories: shelves {mb(r['shelves'])} MB, .memdir {mb(r['cache'])} MB"
            f" = {r['cache'] / r['shelves']:.1f}× (build {r['build_s']:.1f} s, load {r['load']})"
        )
        print(table(["file", "MB"], [[name, mb(b)] for name, b in r["files"].items()]))
        print(table(["catalog table or index", "MB"], [[n, mb(b)] for n, b in r["tables"].items()]))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
