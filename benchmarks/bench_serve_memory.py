"""The resident service's memory under load: `memdir serve` on bench_index's generated memdir
(built once per size in --workdir, then copied), `--clients` threads each sending `--requests`
recalls, half of them read-only (`--no-record`: the reader threads) and half recorded (the
writer thread), so every worker thread holds its open index; then the service's RSS (what
`serve --status` reports), and from /proc its PSS and anonymous memory, and the files whose
pages it holds most.

Usage: python -m benchmarks.bench_serve_memory [--sizes 100000] [--clients 8 --requests 30]
Run it once per side with another commit's code first on PYTHONPATH for a before/after pair.
(One client process holds at most PER_PEER connections, so some requests of 8 threads may be
answered "busy": they are counted, not retried.)
"""

from __future__ import annotations

import argparse
import collections
import json
import random
import shutil
import signal
import statistics
from datetime import timedelta
from pathlib import Path
from typing import Any

from benchmarks.bench_index import build, sentence
from benchmarks.bench_serve import NOW, clients_at, start_service
from memdir.archive_format.memdir import Memdir
from memdir.cli.service import PROTOCOL, exchange, socket_path


def proc_memory(pid: int) -> dict[str, Any]:
    """RSS, PSS and anonymous MiB (smaps_rollup), and the six mappings holding most pages."""
    rollup = {}
    for line in open(f"/proc/{pid}/smaps_rollup", encoding="utf-8"):
        parts = line.split()
        if len(parts) >= 3 and parts[-1] == "kB":
            rollup[parts[0].rstrip(":")] = int(parts[1]) // 1024
    per: collections.Counter[str] = collections.Counter()
    name = "[anon]"
    for line in open(f"/proc/{pid}/smaps", encoding="utf-8"):
        parts = line.split()
        if parts and "-" in parts[0] and not parts[0].endswith(":"):
            name = Path(parts[5]).name if len(parts) > 5 else "[anon]"
        elif parts and parts[0] == "Rss:":
            per[name] += int(parts[1]) // 1024
    return {"rss_mib": rollup["Rss"], "pss_mib": rollup["Pss"],
            "anonymous_mib": rollup["Anonymous"], "largest": per.most_common(6)}  # fmt: skip


def measure(built: Path, workdir: Path, clients: int, requests: int) -> dict[str, Any]:
    scratch = workdir / f"memory-{built.name}"
    shutil.rmtree(scratch, ignore_errors=True)
    shutil.copytree(built, scratch)
    rng = random.Random(11)
    queries = [" ".join(sentence(rng).split()[:8]) + "?" for _ in range(50)]
    log = workdir / f"memory-{built.name}.log"
    log.unlink(missing_ok=True)
    service = start_service(scratch, log)
    path = socket_path(Memdir.open(scratch).cache_dir)
    choosers = [random.Random(number) for number in range(clients)]

    def request(number: int, turn: int) -> dict[str, Any]:
        args = [choosers[number].choice(queries), "--json"] + (
            ["--no-record"] if number % 2 else []
        )
        now = (NOW + timedelta(seconds=number * 1000 + turn)).isoformat()
        return {"v": PROTOCOL, "root": str(scratch), "command": "recall", "args": args, "now": now}

    try:
        latencies, unanswered, elapsed = clients_at(path, clients, requests, request)
        answer = exchange(path, {"v": PROTOCOL, "command": "status"})
        assert answer is not None, log.read_text()
        status = json.loads(answer["stdout"])
        return {"size": built.name, "clients": clients, "requests": clients * requests,
                "p50_ms": round(statistics.median(latencies) * 1000, 1),
                "per_second": round(len(latencies) / elapsed, 1), "unanswered": unanswered,
                "busy": status["busy"], "readers": status["readers"],
                "status_rss_mib": status["rss_kib"] // 1024,
                **proc_memory(service.pid)}  # fmt: skip
    finally:
        service.send_signal(signal.SIGTERM)
        service.wait(timeout=60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("--sizes", default="100000")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--requests", type=int, default=30)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/memdir-bench"))
    args = parser.parse_args()
    from memdir.indexers.embedding import load_embedder

    embedder, _ = load_embedder()
    for size in (int(s) for s in args.sizes.split(",")):
        built = build(args.workdir, size, embedder)
        print(json.dumps(measure(built, args.workdir, args.clients, args.requests)))


if __name__ == "__main__":
    main()
