"""`memdir context` before and after a change, in the same minutes: cold (no service) and
served, on a prompt memory answers and on prompts it does not (which, since issue 26's third
round, ask the journal), with a journal of --turns turns; and cold `memdir journal search` for
a rare and a common word (issue 26).

The memdir holds LoCoMo conv-26's 419 turns as memories (as `memdir bench locomo` builds it)
and a journal of --turns turns made of conv-26's sentences in other sessions (an imported
history: the words a prompt may share with it are real conversation words). Each side — two
`memdir` executables, --before and --after (e.g. main's venv and a branch's) — gets its own
copy and its own service; rounds alternate the sides command by command, so load on a shared
host falls on both alike. Figures: medians over --runs rounds after one warm-up, and the CPU
time (user + system) of the client process and, served, of the service answering it (from
/proc, in clock ticks), which load disturbs less than wall time.
Usage: python -m benchmarks.bench_context --before /work/main/.venv/bin/memdir
       [--after .venv/bin/memdir] [--turns 20000] [--runs 9] [--workdir /tmp/memdir-bench]
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import signal
import statistics
import subprocess
import time
from datetime import timedelta
from pathlib import Path

from benchmarks.bench_cold import LOCOMO, SAMPLE
from benchmarks.bench_serve import start_service
from benchmarks.common import load_average, machine, started, table
from memdir.archive_format import journal
from memdir.archive_format.memdir import Memdir
from memdir.cli.bench.locomo import build_memdir, load_samples

GROUNDED = "When did Caroline go to the LGBTQ support group?"
SEARCHED = {"a rare word": "sunrise", "a common word": "really"}  # `memdir journal search`
QUIET = ["Can you write me a short poem about the sea?",
         "What is a good name for a new painting of a sunset?",
         "How do I fix a flat bicycle tyre?"]  # fmt: skip


def built(workdir: Path, turns: int) -> tuple[Path, str]:
    """conv-26 as memories and a journal of `turns` turns of its sentences (made once, then
    kept); the memdir and the time to ask at (a day after its last session)."""
    (sample,) = [s for s in load_samples(LOCOMO) if s.sample_id == SAMPLE]
    now = max(turn.created for turn in sample.turns) + timedelta(days=1)
    root = workdir / f"context-{SAMPLE}-{turns}"
    marker = root / ".bench-complete"
    if not marker.exists():
        shutil.rmtree(root, ignore_errors=True)
        build_memdir(sample, root)
        rng = random.Random(26)
        said = [turn.text.split(":", 1)[1].strip() for turn in sample.turns]
        start = min(turn.created for turn in sample.turns) - timedelta(days=400)
        made = [journal.new_turn(start + timedelta(minutes=n), "user" if n % 2 else "assistant",
                                 f"import-{n // 40}", rng.choice(said), "import:bench")
                for n in range(turns)]  # fmt: skip
        journal.add_turns(Memdir.open(root), made)
        marker.write_text("built\n")
    return root, now.isoformat()


def service_cpu(process: subprocess.Popen[bytes] | None) -> float:
    """The CPU seconds (user + system) a running service has used so far; 0 without one."""
    if process is None:
        return 0.0
    fields = Path(f"/proc/{process.pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def timed(command: list[str], env: dict[str, str],
          service: subprocess.Popen[bytes] | None = None) -> tuple[float, float, str]:  # fmt: skip
    """Wall seconds, CPU seconds (user + system of the child, and of the service that answered
    it) and stdout of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    served = service_cpu(service)
    began = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, check=True, text=True)
    wall = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu + service_cpu(service) - served, done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True, help="the memdir executable before")
    parser.add_argument("--after", default=str(Path(".venv/bin/memdir").resolve()))
    parser.add_argument("--turns", type=int, default=20000)
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/memdir-bench"))
    args, record = started(parser, "context")
    source, now = built(args.workdir, args.turns)
    sides = {"before": args.before, "after": args.after}
    copies = {}
    for side, memdir in sides.items():
        copies[side] = args.workdir / f"context-{side}"
        shutil.rmtree(copies[side], ignore_errors=True)
        shutil.copytree(source, copies[side])
        subprocess.run([memdir, "--dir", str(copies[side]), "index"], check=True,
                       capture_output=True)  # fmt: skip
    env = {**os.environ, "MEMDIR_NOW": now}
    prompts = {"grounded": [GROUNDED], "no memory answers": QUIET}
    samples: dict[tuple[str, str, str], list[tuple[float, float]]] = {}
    shown: dict[tuple[str, tuple[str, ...]], str] = {}
    loads = [load_average()[0]]
    services = {}
    try:
        for mode in ("cold", "served"):
            if mode == "served":
                for side, memdir in sides.items():
                    log = args.workdir / f"context-{side}.log"
                    log.unlink(missing_ok=True)
                    services[side] = start_service(copies[side], log, [memdir])
            extra = {"MEMDIR_NO_SERVICE": "1"} if mode == "cold" else {}
            asks = {kind: [("context", prompt, "--no-record") for prompt in asked]
                    for kind, asked in prompts.items()}  # fmt: skip
            if mode == "cold":  # (the service does not serve `journal search`)
                asks |= {f"journal search, {kind}": [("journal", "search", word, "--k", "10")]
                         for kind, word in SEARCHED.items()}  # fmt: skip
            for run in range(args.runs + 1):
                for kind, commands in asks.items():
                    for side, memdir in sides.items():
                        asked = commands[run % len(commands)]
                        command = [memdir, "--dir", str(copies[side]), *asked]
                        wall, cpu, out = timed(command, {**env, **extra}, services.get(side))
                        shown[(side, asked)] = out
                        if run:  # the first round warms up
                            samples.setdefault((mode, kind, side), []).append((wall, cpu))
        loads.append(load_average()[0])
    finally:
        for process in services.values():
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=60)
    rows = []
    for mode, kind in dict.fromkeys((mode, kind) for mode, kind, _ in samples):
        cells = [mode, kind]
        for side in sides:
            got = samples[(mode, kind, side)]
            wall = statistics.median(w for w, _ in got) * 1000
            cpu = statistics.median(c for _, c in got) * 1000
            cells.append(f"{wall:.0f} ms (CPU {cpu:.0f} ms)")
        rows.append(cells)
    journalled = {asked[1]: "From the journal" in out for (side, asked), out in shown.items()
                  if side == "after" and asked[0] == "context"}  # fmt: skip
    print(f"machine: {machine()}; journal of {args.turns:,} turns; median of {args.runs} "
          f"rounds; load average {loads[0]:.1f} → {loads[-1]:.1f}")  # fmt: skip
    headers = ["mode", "prompt", "before", "after"]
    print(f"before: {args.before}; after: {args.after}")
    print(table(headers, rows))
    print("the after side's block carried journal turns for:",
          [prompt for prompt, carried in journalled.items() if carried] or "no prompt")  # fmt: skip
    record.save({f"{row[0]}, {row[1]}": dict(zip(headers[2:], row[2:], strict=True))
                 for row in rows}, {"load": loads, "journal turns shown": journalled})  # fmt: skip


if __name__ == "__main__":
    main()
