"""The resident service: cold `memdir recall` and the per-prompt hook with and without
`memdir serve`, next to `python -c pass` and `memdir --help` in the same run; the service's
resident memory; 8 concurrent clients × 100 requests (latency p50/p95, throughput).

Reuses the indexed memdirs of benchmarks/bench_index.py (built once per size in --workdir, then
copied), so the first run at a size pays the full embedding. Cold figures are medians of
--runs fresh processes after one warm-up; stdout is a pipe, as for a hook.
Usage: python -m benchmarks.bench_serve [--sizes 10000] [--runs 7] [--clients 8 --requests 100]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from benchmarks.bench_index import build, sentence
from benchmarks.bench_recall import NOW
from benchmarks.common import as_figures, machine, memdir_command, started, table, wall_time
from memdir.archive_format.memdir import Memdir
from memdir.cli.service import PROTOCOL, exchange, socket_path

HOOK = Path(__file__).parents[1] / "examples" / "claude-code-hooks" / "memdir-user-prompt.py"


def start_service(
    root: Path, log: Path, memdir: list[str] | None = None
) -> subprocess.Popen[bytes]:
    """`memdir serve` for `root` (with `memdir`, another executable), once it serves."""
    process = subprocess.Popen(
        [*(memdir or memdir_command()), "--dir", str(root), "serve", "--no-watch", "--log",
         str(log)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while not (log.exists() and "serving " in log.read_text()):
        if process.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"memdir serve did not start:\n{log.read_text()}")
        time.sleep(0.05)
    return process


def hook_time(root: Path, prompts: list[str], runs: int, env: dict[str, str]) -> float:
    """Median wall time of the prompt hook (journal + context) as a client would run it; each
    run a different prompt (the same prompt at the same --now would be the same journal turn and
    recall line, which are written once)."""
    merged = {**os.environ, **env, "MEMDIR": str(root), "MEMDIR_BIN": memdir_command()[0]}
    samples = []
    for run in range(runs + 1):
        event = json.dumps({"session_id": "bench", "prompt": prompts[run % len(prompts)]})
        began = time.perf_counter()
        # this interpreter, as `python -c pass` is timed (a `python3` found on PATH may be a
        # launcher: pyenv's shim is a bash script costing ~150 ms), with -S as the recipes
        done = subprocess.run([sys.executable, "-S", str(HOOK)], input=event.encode(), env=merged,
                              capture_output=True, check=True)  # fmt: skip
        if run:  # the first is a warm-up
            samples.append(time.perf_counter() - began)
        assert done.returncode == 0
    return statistics.median(samples)


def clients_at(
    path: Path, clients: int, requests: int, request: Callable[[int, int], dict[str, Any]]
) -> tuple[list[float], int, float]:
    """`clients` threads, each sending `requests` requests (`request(client, turn)`) to the
    service's socket: every latency in seconds, sorted; how many were not answered with status
    0; the wall time of the whole run."""
    latencies: list[float] = []
    failures = [0]
    lock = threading.Lock()

    def client(number: int) -> None:
        mine = []
        for turn in range(requests):
            began = time.perf_counter()
            answer = exchange(path, request(number, turn), timeout=120)
            mine.append(time.perf_counter() - began)
            if answer is None or answer["status"] != 0:
                with lock:
                    failures[0] += 1
        with lock:
            latencies.extend(mine)

    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    began = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sorted(latencies), failures[0], time.perf_counter() - began


def concurrent(root: Path, queries: list[str], clients: int, requests: int) -> dict[str, float]:
    """`clients` threads each sending `requests` recalls (--no-record) to the service."""
    now = (NOW - timedelta(seconds=1)).isoformat()
    choosers = [random.Random(number) for number in range(clients)]

    def request(number: int, turn: int) -> dict[str, Any]:
        return {"v": PROTOCOL, "root": str(root), "command": "recall", "now": now,
                "args": [choosers[number].choice(queries), "--no-record", "--json"]}  # fmt: skip

    path = socket_path(Memdir.open(root).cache_dir)
    latencies, failures, elapsed = clients_at(path, clients, requests, request)
    return {
        "p50_ms": statistics.median(latencies) * 1000,
        "p95_ms": latencies[int(len(latencies) * 0.95) - 1] * 1000,
        "per_second": len(latencies) / elapsed,
        "failures": failures,
    }


def measure(built: Path, workdir: Path, args: argparse.Namespace, queries: list[str]) -> dict:
    scratch = workdir / f"serve-{built.name}"
    shutil.rmtree(scratch, ignore_errors=True)
    shutil.copytree(built, scratch)
    env = {"MEMDIR_NOW": (NOW - timedelta(seconds=1)).isoformat()}
    recall = [*memdir_command(), "--dir", str(scratch), "recall", queries[1], "--no-record"]
    out: dict[str, Any] = {"size": Memdir.open(scratch).memory_shelf.read_bytes().count(b"\n")}
    out["pass"] = wall_time([sys.executable, "-c", "pass"], args.runs)
    out["help"] = wall_time([*memdir_command(), "--help"], args.runs)
    out["recall_in_process"] = wall_time(recall, args.runs, {**env, "MEMDIR_NO_SERVICE": "1"})
    out["hook_in_process"] = hook_time(scratch, queries[2:], args.runs,
                                       {**env, "MEMDIR_NO_SERVICE": "1"})  # fmt: skip
    service = start_service(scratch, workdir / f"serve-{built.name}.log")
    try:
        out["recall_served"] = wall_time(recall, args.runs, env)
        out["hook_served"] = hook_time(scratch, queries[2:][::-1], args.runs, env)
        out["pass_after"] = wall_time([sys.executable, "-c", "pass"], args.runs)
        out["load"] = concurrent(scratch, queries, args.clients, args.requests)
        status = exchange(socket_path(Memdir.open(scratch).cache_dir),
                          {"v": PROTOCOL, "command": "status"})  # fmt: skip
        assert status is not None
        out["rss_kib"] = json.loads(status["stdout"])["rss_kib"]
    finally:
        service.send_signal(signal.SIGTERM)
        service.wait(timeout=60)
    return out


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="10000")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--requests", type=int, default=100)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/memdir-bench"))
    args, record = started(parser, "serve")
    from memdir.indexers.embedding import load_embedder

    embedder, _ = load_embedder()
    rng = random.Random(11)
    queries = [" ".join(sentence(rng).split()[:8]) + "?" for _ in range(50)]
    rows, loads = [], []
    for size in (int(s) for s in args.sizes.split(",")):
        result = measure(build(args.workdir, size, embedder), args.workdir, args, queries)
        rows.append([
            f"{result['size']:,}", f"{ms(result['pass'])} / {ms(result['pass_after'])}",
            ms(result["help"]), ms(result["recall_in_process"]), f"**{ms(result['recall_served'])}**",
            ms(result["hook_in_process"]), f"**{ms(result['hook_served'])}**",
            f"{result['rss_kib'] / 1024:.0f} MiB",
        ])  # fmt: skip
        load = result["load"]
        loads.append([
            f"{result['size']:,}", f"{args.clients} × {args.requests}", f"{load['p50_ms']:.1f} ms",
            f"{load['p95_ms']:.1f} ms", f"{load['per_second']:.0f}/s", load["failures"],
        ])  # fmt: skip
    print(f"machine: {machine()}; {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC; "
          f"median of {args.runs} cold processes")  # fmt: skip
    cold = ["memories", "`python -c pass` (before / after)", "`memdir --help`",
            "cold recall, in-process", "cold recall, served", "hook, in-process", "hook, served",
            "service RSS"]  # fmt: skip
    served = ["memories", "clients × requests", "p50", "p95", "throughput", "failed"]
    print(table(cold, rows))
    print()
    print(table(served, loads))
    record.save({**{f"cold, {k}": v for k, v in as_figures(cold, rows).items()},
              **{f"{k} served to concurrent clients": v
                 for k, v in as_figures(served, loads).items()}})  # fmt: skip


if __name__ == "__main__":
    main()
