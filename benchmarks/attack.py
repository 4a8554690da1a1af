"""The attack campaign of issue 19: everything a hostile or unlucky world does to a memdir.

Each attack runs the real `memdir` executable and checks three things: no traceback (nor an
"internal error": a bug caught by the last-resort boundary) reaches the user, no acknowledged
record is lost, and no file outside the memdir changes. Kinds of attack: random line mutations
under every read command, damaged cache files, bad arguments, concurrent writers with an
indexer and forget, SIGKILLed writers, a full disk (a file-size rlimit), a read-only memdir
(a real read-only bind mount in a private mount namespace when run as root, where chmod stops
nothing), symbolic links, tampered exports, a sleep SIGKILLed before each of its writes
(`verify` must pass at once, and the next sleep finish the work), and slow clients of
`memdir serve` (more than its slots, a lone surrogate, SIGTERM while they hang on).

An escape is an attack the safeguards should have stopped and did not, short of a traceback or
a lost record: a command that hung, a verify that fails after a crash, a read-only memdir that
does not answer, a service a client could hold.

Usage:
  python -m benchmarks.attack [--seed 19] [--mutations 80] [--workdir /tmp/memdir-attack]
      [--only crash,read-only,slow-client]
Prints per kind, then: attacks N, survived S, records lost L, tracebacks T, escapes E. The
result goes to benchmarks/results/attack.json (a run of some kinds only, --only, to
attack-only.json; --result elsewhere).
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
from typing import Any

from benchmarks.common import RESULTS, Result

MEMDIR = str(Path(sys.executable).with_name("memdir"))
NOW = "2026-06-01T12:00:00Z"
KILLER = Path(__file__).with_name("killer.py")  # a sleep killed before its Nth write
READS = [
    ["list"], ["stats"], ["verify"], ["wake"], ["boot"], ["search", "coffee"],
    ["recall", "coffee", "--no-record"], ["index"], ["ring"], ["journal", "read"],
    ["similar", "tea"], ["annotate"], ["dream", "--dry-run"],
]  # fmt: skip


class Campaign:
    def __init__(self, workdir: Path, seed: int) -> None:
        self.workdir = workdir
        self.rng = random.Random(seed)
        self.attacks = self.survived = self.lost = self.tracebacks = self.escapes = 0
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
        self.escapes += bool(not ok and not traced and not lost)
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
        """The reads of a memdir nobody may write, as a mounted backup: each answers (search and
        recall included), a write fails in one line, and nothing changes."""
        root = self.copy()
        before = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}
        reads = (["search", "coffee"], ["recall", "coffee", "--no-record"], ["recall", "coffee"],
                 ["list"], ["wake"], ["verify"], ["similar", "tea"], ["context", "coffee"])  # fmt: skip
        for args in [*reads, ["teach", "x"]]:
            done = self.run_read_only(root, list(args))
            answered = done.returncode == 0 or args[0] == "teach"
            self.record("read-only", args[0] + (" (no record)" if "--no-record" in args else ""),
                        [done] if answered else [done, _failed([done])])  # fmt: skip
        changed = [p for p, data in before.items() if not p.exists() or p.read_bytes() != data]
        self.record("read-only", "nothing written", [] if not changed else [_failed([])])

    def run_read_only(self, root: Path, args: list[str]) -> subprocess.CompletedProcess[str]:
        """One command on `root` read-only: bind-mounted read-only in a private mount namespace
        as root (the mount dies with the process), by file modes otherwise."""
        if os.getuid() == 0 and shutil.which("unshare"):
            view = self.workdir / "read-only-view"
            view.mkdir(exist_ok=True)
            script = (
                'mount --bind "$1" "$2" && mount -o remount,bind,ro "$2" && shift 2 && exec "$@"'
            )
            command = ["unshare", "-m", "sh", "-c", script, "sh", str(root), str(view), MEMDIR,
                       "--dir", str(view), *args]  # fmt: skip
            environment = {**os.environ, "MEMDIR_NOW": NOW, "MEMDIR_NO_SERVICE": "1"}
            try:
                return subprocess.run(command, capture_output=True, text=True, env=environment,
                                      timeout=120)  # fmt: skip
            except subprocess.TimeoutExpired:
                return subprocess.CompletedProcess(command, 124, "", "timed out")
        paths = [root, *root.rglob("*")]
        for path in paths:
            path.chmod(path.stat().st_mode & ~0o222)
        try:
            return self.run(root, *args)
        finally:
            for path in paths:
                path.chmod(path.stat().st_mode | 0o200)

    def crashes(self, limit: int = 12) -> None:
        """A sleep SIGKILLed before its Nth canonical write (a shelf append or an atomic
        rename), for an even spread of N: verify passes at once, the next sleep succeeds and
        verify passes again, and no record is lost."""
        base = self.copy("crash-base")
        for minute, text in enumerate(("we talked about the cello", "and about my cat Pixel")):
            at = f"2026-05-20T10:0{minute}:00Z"
            self.run(base, "journal", "add", "--role", "user", "--session", "c1", text,
                     env={"MEMDIR_NOW": at})  # fmt: skip
        self.run(base, "infer", "the user may want a reminder", "--ttl", "1d",
                 env={"MEMDIR_NOW": "2026-05-20T10:00:00Z"})  # fmt: skip
        probe = self.workdir / "crash-probe"  # how many writes a whole sleep makes here
        shutil.rmtree(probe, ignore_errors=True)
        shutil.copytree(base, probe, symlinks=True)
        counted = self._killed_sleep(probe, 0)
        writes = int(counted.stdout.split()[-1]) if counted.returncode == 0 else 0
        points = sorted({max(1, round(1 + i * (writes - 1) / max(1, limit - 1)))
                         for i in range(limit)}) if writes else []  # fmt: skip
        for point in points:
            root = self.workdir / "crashed"
            shutil.rmtree(root, ignore_errors=True)
            shutil.copytree(base, root, symlinks=True)
            before = self.ids(root)
            died = self._killed_sleep(root, point)
            checked = self.run(root, "verify")
            again = self.run(root, "sleep")
            after = self.run(root, "verify")
            runs = [died, checked, again, after]
            held = died.returncode == -9 and all(r.returncode == 0 for r in runs[1:])
            self.record("crash", f"sleep killed at write {point}/{writes}",
                        runs if held else [*runs, _failed(runs)], len(before - self.ids(root)))  # fmt: skip

    def _killed_sleep(self, root: Path, point: int) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, str(KILLER), str(root), str(point), NOW]
        environment = {**os.environ, "MEMDIR_NOW": NOW, "MEMDIR_NO_SERVICE": "1"}
        try:
            done = subprocess.run(command, capture_output=True, text=True, env=environment,
                                  timeout=300)  # fmt: skip
        except subprocess.TimeoutExpired:
            return subprocess.CompletedProcess(command, 124, "", "timed out")
        if done.returncode == -9:  # the kill was the point: its stderr is not the user's
            done.stderr = ""
        return done

    def slow_clients(self) -> None:
        """`memdir serve` against clients that hold on: more slow ones than slots (a real
        command must still be answered promptly), lone surrogates in a request, and SIGTERM
        while slow clients hang on (it must stop within seconds)."""
        root = self.copy("served")
        log = self.workdir / "serve.log"
        log.unlink(missing_ok=True)
        server = subprocess.Popen([MEMDIR, "--dir", str(root), "serve", "--no-watch", "--log", str(log)],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                  env={k: v for k, v in os.environ.items() if k != "MEMDIR_NOW"})  # fmt: skip
        sock = root / ".memdir" / "serve.sock"
        deadline = time.monotonic() + 60
        while "serving " not in (log.read_text() if log.exists() else ""):
            if time.monotonic() > deadline or server.poll() is not None:
                self.record("slow client", "service start", [_failed([])])
                server.kill()
                return
            time.sleep(0.05)
        try:
            expected = self.run(root, "search", "coffee", env={"MEMDIR_NO_SERVICE": "1"}).stdout
            slow = _trickling(sock, 40)
            began = time.monotonic()
            # a client that would wait 30 s for a held service: it must be told "busy" at once
            done = self.run(root, "search", "coffee",
                            env={"MEMDIR_NO_SERVICE": "", "MEMDIR_SERVICE_TIMEOUT": "30"})  # fmt: skip
            took = time.monotonic() - began
            prompt = done.returncode == 0 and done.stdout == expected and took < 10
            self.record("slow client", f"40 slow clients, a real search ({took:.1f} s)",
                        [done] if prompt else [done, _failed([done])])  # fmt: skip
            for client in slow:
                client.wait(timeout=60)
            for payload in (b'{"v": 1, "command": "search", "args": ["x", "-"], "stdin": "\\ud800"}\n',
                            b'{"v": 1, "command": "search", "args": ["\\udcff"]}\n'):  # fmt: skip
                answer = _exchange(sock, payload)
                answered = answer is not None and "error" in answer
                probe = subprocess.CompletedProcess([], 0, "", "")
                self.record("slow client", f"lone surrogate {payload[:40]!r}",
                            [probe] if answered else [_failed([probe])])  # fmt: skip
            hanging = _trickling(sock, 8)
            stopping = time.monotonic()
            server.send_signal(signal.SIGTERM)
            try:
                server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
            took = time.monotonic() - stopping
            stopped = server.returncode == 0 and took < 5
            logged = log.read_text()
            run = subprocess.CompletedProcess([], 0, "", logged if "Traceback" in logged else "")
            self.record("slow client", f"SIGTERM with 8 slow clients ({took:.1f} s)",
                        [run] if stopped else [run, _failed([run])])  # fmt: skip
            for client in hanging:
                client.kill()
                client.wait()
        finally:
            if server.poll() is None:
                server.kill()
                server.wait()

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


# a client that connects, then sends one byte every 0.3 s for up to 30 s (never a whole line)
TRICKLE = """
import socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
print("connected", flush=True)
end, piece = time.monotonic() + 30, b'{"v": 1'
while time.monotonic() < end:
    try:
        s.sendall(piece)
        s.settimeout(0.3)
        if s.recv(65536) == b"":
            break
    except TimeoutError:
        pass
    except OSError:
        break
    piece = b" "
"""


def _trickling(sock: Path, count: int) -> list[subprocess.Popen[str]]:
    """`count` TRICKLE clients of the service at `sock`, each connected when this returns."""
    clients = [subprocess.Popen([sys.executable, "-c", TRICKLE, str(sock)], text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
               for _ in range(count)]  # fmt: skip
    for client in clients:
        assert client.stdout is not None
        client.stdout.readline()  # "connected"
    return clients


def _exchange(path: Path, payload: bytes) -> dict | None:
    """The service's raw answer to one raw request (an error answer too); None without one."""
    import socket

    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(10)
            sock.connect(str(path))
            sock.sendall(payload)
            answer = json.loads(sock.makefile("rb").read())
    except (OSError, ValueError):
        return None
    return answer if isinstance(answer, dict) else None


def _failed(runs: list[subprocess.CompletedProcess[str]]) -> subprocess.CompletedProcess[str]:
    """A run standing for a failed expectation (counted as a traceback-free failure)."""
    detail = " | ".join(r.stderr.strip().splitlines()[-1] for r in runs if r.stderr.strip())
    return subprocess.CompletedProcess([], 124, "", f"expectation failed: {detail[:200]}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=19)
    parser.add_argument("--mutations", type=int, default=80)
    parser.add_argument("--workdir", default="/tmp/memdir-attack")
    parser.add_argument("--only", default="", help="comma-separated kinds to run (default all)")
    parser.add_argument("--result", type=Path, help="write the result here")
    args = parser.parse_args()
    name = "attack-only" if args.only else "attack"
    result = Result(name, vars(args), args.result or RESULTS / f"{name}.json")
    workdir = Path(args.workdir)
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    campaign = Campaign(workdir, args.seed)
    campaign.outside.write_bytes(b"precious outside file\n")
    started = time.monotonic()
    steps = {
        "mutation": lambda: campaign.mutations(args.mutations), "cache": campaign.caches,
        "argument": campaign.arguments, "concurrency": campaign.concurrency,
        "kill": lambda: campaign.kills(15), "full-disk": campaign.full_disk,
        "read-only": campaign.read_only, "symlink": campaign.symlinks,
        "export": lambda: campaign.exports(30), "crash": campaign.crashes,
        "slow-client": campaign.slow_clients,
    }  # fmt: skip
    chosen = [name.strip() for name in args.only.split(",") if name.strip()] or list(steps)
    for name in chosen:
        steps[name]()
    for kind, (total, ok) in campaign.kinds.items():
        print(f"{kind:16} {ok}/{total} survived")
    for failure in campaign.failures:
        print(f"FAILED {failure}")
    root_note = " (root: read-only by a bind mount, not chmod)" if os.getuid() == 0 else ""
    print(f"elapsed {time.monotonic() - started:.0f} s; running as uid {os.getuid()}{root_note}")
    print(
        f"attacks {campaign.attacks}, survived {campaign.survived}, "
        f"records lost {campaign.lost}, tracebacks {campaign.tracebacks}, "
        f"escapes {campaign.escapes}"
    )
    figures: dict[str, dict[str, Any]] = {
        kind: {"attacks": total, "survived": ok} for kind, (total, ok) in campaign.kinds.items()
    }
    figures["all"] = {"attacks": campaign.attacks, "survived": campaign.survived,
                      "records lost": campaign.lost, "tracebacks": campaign.tracebacks,
                      "escapes": campaign.escapes,
                      "seconds": round(time.monotonic() - started)}  # fmt: skip
    result.parameters["uid"] = os.getuid()
    result.save(figures, {"failures": campaign.failures})


if __name__ == "__main__":
    main()
