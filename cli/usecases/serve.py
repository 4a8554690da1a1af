"""The resident service: one process per memdir that keeps the models loaded and answers the
read commands (`recall`, `search`, `similar`, `context`, `wake`) over a Unix socket.

Each request runs the very CLI command it names (cli/main.py) inside this process, with its
stdout and stderr captured, so an answer is what the in-process path prints, decided by the
same use cases and the same policy code; only the cold start (imports, the embedding model, opening the indexes and
building recall's scoring table) is paid once. Each worker thread keeps one open index
(indexers/storage.resident_index), reopened when another connection wrote to its catalog, so
an update or rebuild made by another process is followed on the next request.

Commands that only read — `search`, `similar`, and `recall`/`context` with `--no-record`
(context without `--journal`) — run side by side on `READERS` threads under the read side of
a read-write lock; everything else (what records, journals or writes wake.md, what reads
stdin or runs as the assistant, and the index keeper's updates) runs alone, on one writer
thread whose open index its own writes keep warm. A reader that finds the index behind the
shelves does not update it beside the others: it raises storage.WriterNeeded, and the command
runs again on the writer thread (its first output discarded; a read-only command has done
nothing else). The writer lock (archive_format/lock.py) also serialises writes across threads.

Safety: the socket is created with mode 0600 under `.memdir/`, and each connection's peer uid
(SO_PEERCRED) must be this process's own; a request line is at most `MAX_REQUEST` bytes and
must arrive within `READ_TIMEOUT`; anything malformed gets a one-line error answer. SIGTERM
and SIGINT stop accepting, let the running command finish, and remove the socket.

One service per memdir: `.memdir/serve.pid` is flocked for its lifetime. Unless told not to,
it also keeps the indexes fresh (the watch daemon's loop, cli/usecases/watch.py) in a thread,
when no separate `memdir watch` does.
"""

from __future__ import annotations

import io
import json
import logging
import os
import signal
import socket
import struct
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, suppress
from pathlib import Path
from types import FrameType
from typing import Any

from memdir.archive_format.errors import ExitStatus, LockedError
from memdir.archive_format.lock import InstanceLock
from memdir.archive_format.memdir import Memdir
from memdir.cli.actor import ACTORS, Actor, caller_actor, peer_environ, serving_as

from ..service import MAX_REQUEST, PROTOCOL, SERVED, address, exchange, socket_path
from .watch import Watcher, WatchLock

log = logging.getLogger("memdir")

PID_FILE = "serve.pid"
USER = Actor("user", "the command line")
READ_TIMEOUT = 5.0  # seconds for a client to send its request line
MAX_CONNECTIONS = 32  # handled at once; the next client waits in the listen queue
STOP_WAIT = 30.0  # seconds SIGTERM waits for the command that is running
READERS = 2  # threads answering read-only commands side by side (a 2-core machine)
NEVER_RECORD = ("search", "similar")
RECORD_UNLESS_TOLD = ("recall", "context")  # read-only with --no-record


class ServeLock(InstanceLock):
    """`.memdir/serve.pid`: held by the one running service of a memdir."""

    def __init__(self, memdir: Memdir) -> None:
        super().__init__(memdir.cache_dir / PID_FILE, "memdir serve", memdir.root,
                         "one service per memdir; `memdir serve --status` shows it")  # fmt: skip


class Capture(io.TextIOBase):
    """sys.stdout or sys.stderr, redirected per thread: a request's thread writes into its own
    buffer, every other thread to the stream it replaced."""

    def __init__(self, fallback: Any) -> None:
        self.fallback = fallback
        self._local = threading.local()

    def _target(self) -> Any:
        return getattr(self._local, "buffer", None) or self.fallback

    @contextmanager
    def captured(self) -> Iterator[io.StringIO]:
        buffer = io.StringIO()
        self._local.buffer = buffer
        try:
            yield buffer
        finally:
            self._local.buffer = None

    def write(self, text: str) -> int:  # type: ignore[override]
        return int(self._target().write(text))

    def flush(self) -> None:
        self._target().flush()

    def isatty(self) -> bool:
        return getattr(self._local, "buffer", None) is None and bool(self.fallback.isatty())

    def fileno(self) -> int:
        if getattr(self._local, "buffer", None) is not None:
            raise io.UnsupportedOperation("a captured stream has no file descriptor")
        return int(self.fallback.fileno())

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return "utf-8"

    @property
    def errors(self) -> str:  # type: ignore[override]
        return "strict"

    def writable(self) -> bool:
        return True


def reads_only(command: str, args: list[str], stdin: str | None, assistant: bool) -> bool:
    """Whether this request only reads (it may run beside others): no stdin, not run as the
    assistant (both change process-wide state for the command), and a command that writes
    nothing. (A misjudged writer is still safe — the writer lock serialises writes, and an
    index update raises WriterNeeded — only slower.)"""
    if stdin is not None or assistant or "-" in args or "--" in args:
        return False
    if command in NEVER_RECORD:
        return True
    journals = any(arg == "--journal" or arg.startswith("--journal=") for arg in args)
    return command in RECORD_UNLESS_TOLD and "--no-record" in args and not journals


class ReadWriteLock:
    """Many readers at once, or one writer; a waiting writer goes before new readers."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._readers = 0
        self._writing = False
        self._writers_waiting = 0

    @contextmanager
    def shared(self) -> Iterator[None]:
        with self._changed:
            self._changed.wait_for(lambda: not self._writing and not self._writers_waiting)
            self._readers += 1
        try:
            yield
        finally:
            with self._changed:
                self._readers -= 1
                self._changed.notify_all()

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        with self._changed:
            self._writers_waiting += 1
            self._changed.wait_for(lambda: not self._writing and not self._readers)
            self._writers_waiting -= 1
            self._writing = True
        try:
            yield
        finally:
            with self._changed:
                self._writing = False
                self._changed.notify_all()


def refusal(message: str, status: ExitStatus = ExitStatus.BAD_INPUT) -> dict[str, Any]:
    return {"v": PROTOCOL, "status": int(status), "error": message}


def resident_kib() -> int | None:
    """This process's resident memory (VmRSS), in KiB; None off Linux."""
    with suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return None


class _IndexKeeper(Watcher):
    """The watch daemon's loop, each step taken alone (the write side of the service's lock).
    (Its index is its own: when it writes, the commands' open indexes see the catalog change
    and reopen.)"""

    def __init__(self, memdir: Memdir, gate: ReadWriteLock) -> None:
        super().__init__(memdir)
        self._gate = gate

    def update(self) -> Any:
        with self._gate.exclusive():
            return super().update()

    def _needs_update(self) -> bool:
        with self._gate.exclusive():
            return super()._needs_update()


class Service:
    """The service of one memdir; `run()` serves until `stop()` (or SIGTERM/SIGINT)."""

    def __init__(self, memdir: Memdir, allowed_uid: int | None = None) -> None:
        self.memdir = memdir
        self.path = socket_path(memdir.cache_dir)
        self.allowed_uid = os.getuid() if allowed_uid is None else allowed_uid
        self.started = time.time()
        self.requests = 0
        self.refused = 0
        self.abandoned = 0  # answers whose client had gone (gave up waiting) before they came
        self._counting = threading.Lock()
        self._gate = ReadWriteLock()
        self._stop = threading.Event()
        self._slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        self._threads: set[threading.Thread] = set()
        # the commands that write run here, one at a time, so this thread's open index stays
        # warm across them; read-only ones on the readers (see the module doc)
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memdir-writer")
        self._readers = ThreadPoolExecutor(max_workers=READERS, thread_name_prefix="memdir-reader")
        self._stdout = Capture(sys.stdout)
        self._stderr = Capture(sys.stderr)

    def stop(self) -> None:
        self._stop.set()

    # answering ------------------------------------------------------------------------------
    def answer(self, line: bytes, peer_pid: int | None = None) -> dict[str, Any]:
        """The answer to one request line (already within the size limit) from the process
        `peer_pid` (SO_PEERCRED): who asks is read from that process's environment."""
        try:
            request = json.loads(line)
        except ValueError:
            return refusal("malformed request: not a JSON line")
        if not isinstance(request, dict):
            return refusal("malformed request: expected a JSON object")
        if request.get("v") != PROTOCOL:
            return refusal(
                f"unsupported protocol version {request.get('v')!r} (this service speaks "
                f"{PROTOCOL})"
            )
        command = request.get("command")
        if command == "status":
            return {"v": PROTOCOL, "status": 0, "stdout": json.dumps(self.status()) + "\n",
                    "stderr": ""}  # fmt: skip
        if command not in SERVED:
            return refusal(f"unknown command {command!r} (served: {', '.join(SERVED)}, status)")
        args, now = request.get("args", []), request.get("now")
        if not isinstance(args, list) or not all(isinstance(arg, str) for arg in args):
            return refusal("malformed request: args must be a list of strings")
        if now is not None and not isinstance(now, str):
            return refusal("malformed request: now must be a string or null")
        stdin = request.get("stdin")
        if stdin is not None and not isinstance(stdin, str):
            return refusal("malformed request: stdin must be a string or null")
        root = request.get("root")
        if root is not None and Path(str(root)) != self.memdir.root:
            return refusal(f"this service serves {self.memdir.root}, not {root}")
        claimed = request.get("actor", "user")
        if claimed not in ACTORS:
            return refusal(f"malformed request: actor must be one of {', '.join(ACTORS)}")
        # the caller's own environment decides, not the field it writes (cli/actor.py)
        actor = caller_actor(peer_environ(peer_pid) if peer_pid else None, claimed)
        argv = ["--dir", str(self.memdir.root), *(["--now", now] if now else []), command, *args]
        if reads_only(command, args, stdin, actor.assistant):
            answer = self._readers.submit(self.read_command, argv, actor)
        else:
            answer = self._writer.submit(self.run_command, argv, stdin or "", actor)
        return {"v": PROTOCOL, **answer.result()}

    def read_command(self, argv: list[str], actor: Actor = USER) -> dict[str, Any]:
        """Run a read-only command line beside others; alone, on the writer thread, when it
        finds the index must be updated first (WriterNeeded)."""
        from memdir.indexers.storage import WriterNeeded, shared_read

        try:
            with self._gate.shared(), shared_read(), serving_as(actor):
                return self._run(argv)
        except WriterNeeded:
            return self._writer.submit(self.run_command, argv, "", actor).result()

    def run_command(self, argv: list[str], stdin: str = "", actor: Actor = USER) -> dict[str, Any]:
        """Run one CLI command line here, alone, as `memdir ARGV` would: its status and output.
        It runs as the caller's actor (cli/actor.py, derived in `answer`), whoever started the
        service: a service started from an agent's shell still takes a hook's user prompt."""
        with self._gate.exclusive():
            # nothing else runs, so the process's stdin can be the request's
            before, sys.stdin = sys.stdin, io.TextIOWrapper(io.BytesIO(stdin.encode("utf-8")))
            try:
                with serving_as(actor):
                    return self._run(argv)
            finally:
                sys.stdin = before

    def _run(self, argv: list[str]) -> dict[str, Any]:
        from memdir.cli.main import main

        with self._stdout.captured() as out, self._stderr.captured() as err:
            try:
                status = main(argv)
            except Exception:  # the CLI's boundary let something through: say so, keep serving
                log.exception("request failed: %s", argv)
                err.write("memdir: error: the service failed on this request (see its log)\n")
                status = int(ExitStatus.FAILED)
        with self._counting:
            self.requests += 1
        return {"status": status, "stdout": out.getvalue(), "stderr": err.getvalue()}

    def status(self) -> dict[str, Any]:
        return {
            "pid": os.getpid(), "root": str(self.memdir.root), "socket": str(self.path),
            "protocol": PROTOCOL, "uptime_s": round(time.time() - self.started, 1),
            "requests": self.requests, "refused": self.refused, "abandoned": self.abandoned,
            "rss_kib": resident_kib(), "readers": READERS,
        }  # fmt: skip

    # connections ----------------------------------------------------------------------------
    def _peer_pid(self, conn: socket.socket) -> int:
        size = struct.calcsize("3i")
        pid, _uid, _gid = struct.unpack(
            "3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, size)
        )
        return int(pid)

    def _peer_uid(self, conn: socket.socket) -> int:
        size = struct.calcsize("3i")
        _pid, uid, _gid = struct.unpack(
            "3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, size)
        )
        return int(uid)

    def _read_line(self, conn: socket.socket) -> bytes | dict[str, Any]:
        conn.settimeout(READ_TIMEOUT)
        data = b""
        while b"\n" not in data:
            chunk = conn.recv(1 << 16)
            if not chunk:
                break
            data += chunk
            if len(data) > MAX_REQUEST:
                return refusal(f"request too large (more than {MAX_REQUEST} bytes)")
        line = data.split(b"\n", 1)[0]
        if len(line) > MAX_REQUEST:
            return refusal(f"request too large (more than {MAX_REQUEST} bytes)")
        return line

    def handle(self, conn: socket.socket) -> None:
        try:
            with conn:
                if self._peer_uid(conn) != self.allowed_uid:
                    self.refused += 1
                    log.warning("refused a connection from another user")
                    reply = refusal("refused: this service answers only its own user",
                                    ExitStatus.FAILED)  # fmt: skip
                else:
                    got = self._read_line(conn)
                    reply = got if isinstance(got, dict) else self.answer(got, self._peer_pid(conn))
                conn.settimeout(READ_TIMEOUT)
                try:
                    conn.sendall((json.dumps(reply, ensure_ascii=False) + "\n").encode("utf-8"))
                except (BrokenPipeError, ConnectionResetError):
                    with self._counting:
                        self.abandoned += 1
                    raise
        except OSError as error:  # the client went away or was too slow: nothing to answer
            log.info("dropped a connection: %s", error)
        finally:
            self._slots.release()

    def _bind(self) -> socket.socket:
        if self.path.exists() or self.path.is_symlink():
            self.path.unlink()  # a stale socket: the serve lock says no service owns it
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        previous = os.umask(0o177)  # created 0600: no window in which others could connect
        try:
            with address(self.path) as where:
                listener.bind(where)
        finally:
            os.umask(previous)
        os.chmod(self.path, 0o600)
        listener.listen(64)
        listener.settimeout(0.2)  # how often the accept loop looks at the stop flag
        return listener

    def run(self, keep_fresh: bool = True) -> None:
        """Serve until stopped. The caller holds the ServeLock."""
        from memdir.indexers.storage import keep_models_resident

        keep_models_resident()
        self._stdout.fallback, self._stderr.fallback = sys.stdout, sys.stderr
        sys.stdout, sys.stderr = self._stdout, self._stderr  # type: ignore[assignment]
        for handler in logging.getLogger("memdir").handlers:
            if type(handler) is logging.StreamHandler:
                handler.setStream(self._stderr)
        os.environ.pop("MEMDIR_NOW", None)  # each request brings its own clock
        listener = self._bind()  # first: a long socket path is bound from its directory (chdir)
        keeper = self._start_keeper() if keep_fresh else None
        log.info("serving %s on %s (pid %d)", self.memdir.root, self.path, os.getpid())
        try:
            self._accept(listener)
        finally:
            listener.close()
            with suppress(FileNotFoundError):
                self.path.unlink()
            for thread in list(self._threads):
                thread.join(STOP_WAIT)
            if keeper is not None:
                keeper[0].stop()
                keeper[1].join(STOP_WAIT)
            self._readers.shutdown(wait=True)
            self._writer.shutdown(wait=True)
            sys.stdout, sys.stderr = self._stdout.fallback, self._stderr.fallback
            log.info("stopped serving %s after %d request(s)", self.memdir.root, self.requests)

    def _accept(self, listener: socket.socket) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError as error:
                log.warning("accept failed: %s", error)
                continue
            self._slots.acquire()
            thread = threading.Thread(target=self.handle, args=(conn,), daemon=True)
            self._threads = {alive for alive in self._threads if alive.is_alive()} | {thread}
            thread.start()

    def _start_keeper(self) -> tuple[_IndexKeeper, threading.Thread] | None:
        """The index keeper in a thread, holding the watch lock; None when `memdir watch`
        already runs for this memdir (it keeps the indexes fresh then)."""
        keeper = _IndexKeeper(self.memdir, self._gate)
        lock = WatchLock(self.memdir)
        decided, holding = threading.Event(), threading.Event()

        def keep() -> None:  # the watch lock is taken and given back on this thread
            try:
                lock.__enter__()
                holding.set()
            except LockedError:
                log.info("memdir watch is running for this memdir; it keeps the indexes fresh")
                return
            finally:
                decided.set()
            try:
                keeper.run()
            except Exception:
                log.exception("the index keeper stopped; requests still bring the index up to date")
            finally:
                lock.__exit__(None, None, None)

        thread = threading.Thread(target=keep, name="memdir-index-keeper", daemon=True)
        thread.start()
        decided.wait()
        return (keeper, thread) if holding.is_set() else None


def serve(memdir: Memdir, keep_fresh: bool = True, allowed_uid: int | None = None) -> int:
    """Run the service in the foreground until SIGTERM/SIGINT; returns how many requests it
    answered."""
    service = Service(memdir, allowed_uid)

    def on_signal(number: int, frame: FrameType | None) -> None:
        log.info("received %s, stopping", signal.Signals(number).name)
        service.stop()

    with ServeLock(memdir):
        previous = {
            number: signal.signal(number, on_signal) for number in (signal.SIGTERM, signal.SIGINT)
        }
        try:
            service.run(keep_fresh)
        finally:
            for number, handler in previous.items():
                signal.signal(number, handler)
    return service.requests


def status(memdir: Memdir) -> dict[str, Any] | None:
    """What the running service says of itself, or None when none answers."""
    path = socket_path(memdir.cache_dir)
    if not path.exists():
        return None
    answer = exchange(path, {"v": PROTOCOL, "command": "status"}, timeout=2.0)
    if answer is None:
        return None
    try:
        data = json.loads(answer["stdout"])
    except ValueError:
        return None
    return data if isinstance(data, dict) else None
