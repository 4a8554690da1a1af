"""The attack campaign of issue 19: everything a hostile or unlucky world does to a memdir.

Each attack runs the real `memdir` executable and checks three things: no traceback (nor an
"internal error": a bug caught by the last-resort boundary) reaches the user, no acknowledged
record is lost, and no file outside the memdir changes. Kinds of attack: random line mutations
under every read command, damaged cache files, bad arguments, concurrent writers with an
indexer and forget, SIGKILLed writers, a full disk (a file-size rlimit), a read-only memdir,
symbolic links, and tampered exports.

Usage:
  python -m benchmarks.attack [--seed 19] [--mutations 80] [--workdir /tmp/memdir-attack]
Prints per kind, then: attacks N, survived S, records lost L, tracebacks T.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import resource
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

MEMDIR = str(Path(sys.executable).with_name("memdir"))
NOW = "2026-06-01T12:00:00Z"
READS = [
    ["list"], ["stats"], ["verify"], ["wake"], ["boot"], ["search", "coffee"],
    ["recall", "coffee", "--no-record"], ["index"], ["ring"], ["journal", "read"],
    ["similar", "tea"], ["annotate"], ["dream", "--dry-run"],
]  # fmt: skip


class Campaign:
    def __init__(self, workdir: Path, seed: int) -> None:
        self.workdir = workdir
        self.rng = random.Random(seed)
        self.attacks = self.survived = self.lost = self.tracebacks = 0
        self.kinds: dict[str, list[int]] = {}
        self.failures: list[str] = []
        self.outside = workdir / "outside.txt"

    # running ----------------------------------------------------------------------------------
    def run(self, root: Path | None, *args: str, env: dict[str, str] | None = None,
            preexec: Callable[[], None] | None = None,
            timeout: float = 120) -> subprocess.CompletedProcess[str]:  # fmt: skip
        command = [MEMDIR, *(["--dir", str(root)] if root else []), *args]
        environment = {**os.environ, "MEMDIR_NOW": NOW, "MEMDIR_LOCK_TIMEOUT": "30", **(env or {})}
        try:
            return subprocess.run(command, capture_output=True, text=True, env=environment,
                                  preexec_fn=preexec, timeout=timeout)  # fmt: skip
        except subprocess.TimeoutExpired:
            return subprocess.CompletedProcess(command, 124, "", "timed out")

    def record(self, kind: str, label: str, runs: list[subprocess.CompletedProcess[str]],
               lost: int = 0) -> None:  # fmt: skip
        outside_ok = self.outside.read_bytes() == b"precious outside file\n"
        traced = [r for r in runs if "Traceback" in r.stderr or "internal error" in r.stderr]
        hung = [r for r in runs if r.returncode == 124]
        ok = not traced and not lost and outside_ok and not hung
        self.attacks += 1
        self.survived += ok
        self.lost += lost
        self.tracebacks += len(traced)
        tally = self.kinds.setdefault(kind, [0, 0])
        tally[0] += 1
        tally[1] += ok
        if not ok:
            why = (traced or hung or [None])[0]
            detail = why.stderr.strip().splitlines()[-1][:160] if why and why.stderr.strip() else ""
            self.failures.append(f"{kind} {label}: lost {lost}, outside ok {outside_ok}: {detail}")
            self.outside.write_bytes(b"precious outside file\n")

    # the memdir under attack ----------------------------------------------------------------
    def base(self) -> Path:
        root = self.workdir / "base"
        if root.exists():
            return root
        self.run(None, "init", str(root))
        config = root / "memdir.yaml"
        config.write_text(config.read_text().replace("kind: auto", "kind: hashing"))
        for text in ("I take my coffee black", "my sister lives in Lisbon", "tea after lunch"):
            self.run(root, "teach", text)
        guess = self.run(root, "infer", "the user likes jazz").stdout.strip()
        self.run(root, "confirm", guess)
        gone = self.run(root, "teach", "to be forgotten").stdout.strip()
        self.run(root, "forget", gone)
        self.run(root, "journal", "add", "--role", "user", "--session", "s1", "hello there")
        self.run(root, "recall", "coffee")
        self.run(root, "index")
        return root

    def copy(self, name: str = "victim") -> Path:
        target = self.workdir / name
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(self.base(), target, symlinks=True)
        return target

    def ids(self, root: Path) -> set[str]:
        found = set()
        for path in (root / "shelves").glob("*.jsonl"):
            for raw in path.read_bytes().splitlines():
                try:
                    line = json.loads(raw)
                except (ValueError, RecursionError):
                    continue
                if isinstance(line, dict) and line.get("kind") in ("memory", "tombstone"):
                    found.add(str(line.get("id")))
        return found

    # attacks ------------------------------------------------------------------------------------
    def mutations(self, count: int) -> None:
        values = [None, True, 12345, -1, 1e308, "", "x", [], ["a"], {"a": 1}, "\ud800",
                  "9999-12-31T23:59:59Z", 2**200, "m-../../etc/passwd"]  # fmt: skip
        for number in range(count):
            root = self.copy()
            files = [p for p in [*(root / "shelves").glob("*.jsonl"),
                                 *(root / "journal").glob("*.jsonl")] if p.stat().st_size]  # fmt: skip
            path = self.rng.choice(files)
            lines = path.read_bytes().splitlines()
            at = self.rng.randrange(len(lines))
            raw, how = lines[at], self.rng.randrange(6)
            if how <= 1:
                line = json.loads(raw)
                field = self.rng.choice(sorted(line))
                if how == 0:
                    line[field] = self.rng.choice(values)
                else:
                    del line[field]
                raw = json.dumps(line).encode()
            elif how == 2:
                spot = self.rng.randrange(len(raw))
                raw = (
                    raw[:spot] + bytes([raw[spot] ^ (1 << self.rng.randrange(8))]) + raw[spot + 1 :]
                )
            elif how == 3:
                depth = self.rng.choice([50, 5000])
                raw = raw[:-1] + b',"meta":' + b"[" * depth + b"]" * depth + b"}"
            elif how == 4:
                raw = raw.replace(
                    b'"user"', self.rng.choice([b"NaN", b'"\\ud800"', b"1e999", b"-0"])
                )
            else:
                raw = raw[: self.rng.randrange(1, len(raw))]
            lines[at] = raw.replace(b"\n", b" ")
            path.write_bytes(b"\n".join(lines) + b"\n")
            before = self.ids(root)
            runs = [self.run(root, *self.rng.choice(READS)) for _ in range(2)]
            taught = self.run(root, "teach", f"written after mutation {number}")
            runs.append(taught)
            lost = len(before - self.ids(root))
            if taught.returncode == 0 and taught.stdout.strip() not in self.ids(root):
                lost += 1
            self.record("mutation", f"{path.name}:{at + 1} how {how}", runs, lost)

    def caches(self) -> None:
        root = self.copy()
        names = sorted(str(p.relative_to(root)) for p in (root / ".memdir").rglob("*")
                       if p.is_file() and not p.name.endswith("lock"))  # fmt: skip
        for name in names:
            for how in ("random", "half", "empty", "delete", "drop"):
                if how == "drop" and not name.endswith(".sqlite"):
                    continue
                root = self.copy()
                path = root / name
                if how == "random":
                    path.write_bytes(os.urandom(4096))
                elif how == "half":
                    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
                elif how == "empty":
                    path.write_bytes(b"")
                elif how == "delete":
                    path.unlink()
                else:
                    with sqlite3.connect(path) as db:
                        table = db.execute(
                            "SELECT name FROM sqlite_master WHERE type='table'"
                        ).fetchone()
                        db.execute(f"DROP TABLE {table[0]}")
                runs = [self.run(root, *args) for args in (["recall", "coffee", "--no-record"],
                        ["index", "--rebuild"], ["teach", "after damage"])]  # fmt: skip
                healed = all(r.returncode == 0 for r in runs)
                self.record("cache", f"{name} {how}", runs if healed else [*runs, _failed(runs)])

    def arguments(self) -> None:
        root = self.copy()
        some = sorted(self.ids(root))[0]
        cases = [
            ["infer", "a", "--ttl", "99999999999d"], ["--now", "9999-12-31T23:59:59Z", "infer", "a"],
            ["--now", "0001-01-01", "recall", "x"], ["--now", "not a time", "list"],
            ["link", some, "t-../../etc/passwd"], ["link", some, "m-ffffffffffffffff"],
            ["show", "\udcff"], ["teach", "\udce9"], ["teach", ""], ["recall", ""],
            ["recall", "x" * 100000, "--no-record"], ["list", "--limit", "-1"],
            ["infer", "a", "--ttl", "-5d"], ["export", "--out", "/dev/null"],
            ["export", "--out", str(root / "shelves" / "x.tar.gz")], ["restore", "/etc/hostname", "/tmp/x"],
            ["decay", "zzz"], ["forget", "m-"], ["recall", "x", "--profile", "nope"],
            ["--now", "2026-13-45", "wake"], ["import", "/nonexistent", "--format", "jsonl"],
        ]  # fmt: skip
        for args in cases:
            self.record("argument", " ".join(args)[:60], [self.run(root, *args)])

    def concurrency(self) -> None:
        root = self.copy()
        procs = [subprocess.Popen(
            [sys.executable, "-c", WRITER, MEMDIR, str(root), str(worker), "15"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={**os.environ, "MEMDIR_NOW": NOW, "MEMDIR_LOCK_TIMEOUT": "60"},
        ) for worker in range(6)]  # fmt: skip
        indexer = [self.run(root, "index") for _ in range(3)]
        acknowledged: set[str] = set()
        errors = []
        for proc in procs:
            out, err = proc.communicate(timeout=600)
            acknowledged |= {line for line in out.split() if line.startswith("m-")}
            errors.append(subprocess.CompletedProcess([], proc.returncode, out, err))
        kept = self.ids(root)
        self.record("concurrency", "6 writers x 15 + index", [*indexer, *errors],
                    len(acknowledged - kept))  # fmt: skip
        for round_ in range(10):  # index while forget compacts
            victim = sorted(self.ids(root) - {i for i in kept if not i.startswith("m-")})[round_]
            indexing = subprocess.Popen([MEMDIR, "--dir", str(root), "index"], stderr=subprocess.PIPE,
                                        text=True, env={**os.environ, "MEMDIR_NOW": NOW})  # fmt: skip
            forgot = self.run(root, "forget", victim)
            _, err = indexing.communicate(timeout=300)
            bad = subprocess.CompletedProcess([], indexing.returncode, "", err)
            self.record(
                "compaction race",
                f"round {round_}",
                [forgot, bad] + ([] if indexing.returncode == 0 else [_failed([bad])]),
            )

    def kills(self, count: int) -> None:
        root = self.copy()
        for number in range(count):
            proc = subprocess.Popen([MEMDIR, "--dir", str(root), "teach", f"killed write {number}"],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                    env={**os.environ, "MEMDIR_NOW": NOW})  # fmt: skip
            time.sleep(self.rng.uniform(0.0, 0.4))
            proc.send_signal(signal.SIGKILL)
            out, _ = proc.communicate()
            acknowledged = {line for line in out.split() if line.startswith("m-")}
            after = [self.run(root, "teach", f"after kill {number}"), self.run(root, "list")]
            self.record("kill", f"teach {number}", after, len(acknowledged - self.ids(root)))
        checked = self.run(root, "verify", "--fix")
        self.record("kill", "verify --fix", [checked])

    def full_disk(self) -> None:
        for args in (["teach", "y" * 5000], ["index", "--rebuild"], ["recall", "coffee"],
                     ["journal", "add", "--role", "user", "--session", "s", "z" * 5000],
                     ["export", "--out", str(self.workdir / "full.tar.gz")], ["sleep"]):  # fmt: skip
            root = self.copy()
            before = self.ids(root)
            sizes = {p: p.stat().st_size for p in root.rglob("*") if p.is_file()}
            limit = max(sizes.values()) + 64

            def cap(limit: int = limit) -> None:
                resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

            done = self.run(root, *args, preexec=cap)
            named = done.returncode == 0 or "/" in done.stderr or "memdir: error" in done.stderr
            self.record("full disk", args[0], [done] if named else [done, _failed([done])],
                        len(before - self.ids(root)))  # fmt: skip

    def read_only(self) -> None:
        root = self.copy()
        for path in [root, *root.rglob("*")]:
            path.chmod(path.stat().st_mode & ~0o222)
        try:
            for args in (["search", "coffee"], ["recall", "coffee", "--no-record"], ["list"],
                         ["teach", "x"], ["wake"], ["verify"]):  # fmt: skip
                self.record("read-only", args[0], [self.run(root, *args)])
        finally:
            for path in [root, *root.rglob("*")]:
                path.chmod(path.stat().st_mode | 0o200)

    def symlinks(self) -> None:
        for where in ("shelves/extra.jsonl", "shelves/memories.jsonl", ".memdir/lock",
                      "journal/turns.jsonl", "state/ring.yaml", ".memdir/idcache.sqlite"):  # fmt: skip
            root = self.copy()
            link = root / where
            link.parent.mkdir(parents=True, exist_ok=True)
            link.unlink(missing_ok=True)
            link.symlink_to(self.outside)
            runs = [self.run(root, *args) for args in (["teach", "through a link"], ["list"],
                    ["index"], ["journal", "add", "--role", "user", "--session", "s", "hi"])]  # fmt: skip
            self.record("symlink", where, runs)

    def exports(self, count: int) -> None:
        root = self.copy()
        archive = self.workdir / "export.tar.gz"
        self.run(root, "export", "--out", str(archive))
        pristine = archive.read_bytes()
        truth = {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
                 for p in (root / "shelves").glob("*.jsonl")}  # fmt: skip
        for number in range(count):
            data = bytearray(pristine)
            for _ in range(self.rng.randint(1, 3)):
                data[self.rng.randrange(len(data))] ^= 1 << self.rng.randrange(8)
            archive.write_bytes(bytes(data))
            target = self.workdir / "restored"
            shutil.rmtree(target, ignore_errors=True)
            done = self.run(None, "restore", str(archive), str(target))
            altered = target.exists() and any(
                hashlib.sha256((target / name).read_bytes()).hexdigest() != digest
                for name, digest in truth.items() if (target / name).exists()
            )  # fmt: skip
            leftovers = [p for p in self.workdir.iterdir() if p.name.startswith(".restored")]
            runs = [done] if not altered and not leftovers else [done, _failed([done])]
            self.record("export tamper", f"flip {number}", runs)
        fifo = self.workdir / "fifo"
        fifo.unlink(missing_ok=True)
        os.mkfifo(fifo)
        done = self.run(root, "export", "--out", str(fifo))
        self.record("export tamper", "fifo target", [done] if fifo.is_fifo() else [_failed([done])])
        fifo.unlink()


WRITER = """
import subprocess, sys
memdir, root, worker, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
for n in range(count):
    done = subprocess.run([memdir, "--dir", root, "teach", f"writer {worker} fact {n}"],
                          capture_output=True, text=True)
    if done.returncode == 0:
        print(done.stdout.strip(), flush=True)
    else:
        sys.stderr.write(done.stderr)
"""


def _failed(runs: list[subprocess.CompletedProcess[str]]) -> subprocess.CompletedProcess[str]:
    """A run standing for a failed expectation (counted as a traceback-free failure)."""
    detail = " | ".join(r.stderr.strip().splitlines()[-1] for r in runs if r.stderr.strip())
    return subprocess.CompletedProcess([], 124, "", f"expectation failed: {detail[:200]}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=19)
    parser.add_argument("--mutations", type=int, default=80)
    parser.add_argument("--workdir", default="/tmp/memdir-attack")
    args = parser.parse_args()
    workdir = Path(args.workdir)
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    campaign = Campaign(workdir, args.seed)
    campaign.outside.write_bytes(b"precious outside file\n")
    started = time.monotonic()
    for step in (lambda: campaign.mutations(args.mutations), campaign.caches, campaign.arguments,
                 campaign.concurrency, lambda: campaign.kills(15), campaign.full_disk,
                 campaign.read_only, campaign.symlinks, lambda: campaign.exports(30)):  # fmt: skip
        step()
    for kind, (total, ok) in campaign.kinds.items():
        print(f"{kind:16} {ok}/{total} survived")
    for failure in campaign.failures:
        print(f"FAILED {failure}")
    root_note = " (root: chmod does not stop root's writes)" if os.getuid() == 0 else ""
    print(f"elapsed {time.monotonic() - started:.0f} s; running as uid {os.getuid()}{root_note}")
    print(
        f"attacks {campaign.attacks}, survived {campaign.survived}, "
        f"records lost {campaign.lost}, tracebacks {campaign.tracebacks}"
    )


if __name__ == "__main__":
    main()
