"""The resident service: one process per memdir that keeps the models loaded and answers the
read commands (`recall`, `search`, `similar`, `context`, `wake`) over a Unix socket.

The service is an adapter over the library, like the command line: a request's arguments are
parsed by the command's own declared options (the click command of the lazy command tree,
`make_context`) into the command's parameter dataclass, and the command module's answer function
(`SERVED` in cli/commands/recall.py, index.py, continuity.py) — the very function the command
runs — calls the use case and renders its result as text, which the service sends back. An
error is the one line and exit status the command line ends with (cli/main.py: `failure`);
the log lines a request causes go to its answer's stderr, as they would to the command's.
So an answer is what the in-process path prints, decided by the same use cases and the same
policy code; only the cold start (imports, the embedding model, opening the indexes and
building recall's scoring table) is paid once. Each worker thread keeps one open index
(indexers/storage.resident_index), reopened when another connection wrote to its catalog, so
an update or rebuild made by another process is followed on the next request; the open indexes
read the vector files through one shared mapping each (indexers/vectors.shared_map).

Commands that only read — `search`, `similar`, and `recall`/`context` with `--no-record`
(context without `--journal`) — run side by side on `READERS` threads under the read side of
a read-write lock; everything else (what records, journals or writes wake.md, and the index
keeper's updates) runs alone, on one writer
thread whose open index its own writes keep warm. A reader that finds the index behind the
shelves does not update it beside the others: it raises storage.WriterNeeded, and the command
runs again on the writer thread (a read-only command has done nothing else). The writer lock
(archive_format/lock.py) also serialises writes across threads.

Safety: the socket is created with mode 0600 under `.memdir/`, and each connection's peer uid
(SO_PEERCRED) must be this process's own; a request line is at most `MAX_REQUEST` bytes and
the whole of it must arrive within `REQUEST_DEADLINE` (a client that trickles a byte at a
time is cut off there, not after each read), the whole answer must be taken within
`SEND_DEADLINE`; anything malformed (a lone surrogate included) gets a one-line error answer.
Nobody can hold the service: one client process (the peer pid) has at most `PER_PEER`
connections at once and all together `MAX_CONNECTIONS`; a connection past either limit is
answered "busy" at once (the client then runs the command in-process) instead of waiting for a
slot. SIGTERM and SIGINT stop accepting, cut off the clients still sending or receiving, let
the running command finish (at most `STOP_WAIT` in all), and remove the socket.

One service per memdir: `.memdir/serve.pid` is flocked for its lifetime. Unless told not to,
it also keeps the indexes fresh (the watch daemon's loop, memdir/usecases/watch.py) in a thread,
when no separate `memdir watch` does.
"""

from __future__ import annotations

import functools
import io
import json
import logging
import os
import socket
import struct
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memdir.actor import ACTORS, Actor, caller_actor, peer_environ, serving_as
from memdir.archive_format.errors import ExitStatus, LockedError
from memdir.archive_format.lock import InstanceLock
from memdir.archive_format.memdir import Memdir
from memdir.usecases.watch import Watcher, WatchLock, stopped_by_signals
from memdir.words import counted

from .service import MAX_REQUEST, PROTOCOL, SERVED, address, exchange, socket_path

if TYPE_CHECKING:
    from .context import Invocation, Served

log = logging.getLogger("memdir")

PID_FILE = "serve.pid"
REQUEST_DEADLINE = 5.0  # seconds for a client to send its whole request line
SEND_DEADLINE = 5.0  # seconds for a client to take its whole answer
MAX_CONNECTIONS = 32  # handled at once; the next client is answered "busy"
PER_PEER = 8  # connections one client process may hold at once (the client uses one)
STOP_WAIT = 30.0  # seconds SIGTERM waits, in all, for the commands that are running
# threads answering read-only commands side by side: one per core this process may run on, at
# least two, at most eight (each keeps an open index; the files' mappings are shared: vectors.py)
READERS = max(2, min(8, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                     else os.cpu_count() or 2))  # fmt: skip
NEVER_RECORD = ("search", "similar")
RECORD_UNLESS_TOLD = ("recall", "context")  # read-only with --no-record


class ServeLock(InstanceLock):
    """`.memdir/serve.pid`: held by the one running service of a memdir."""

    def __init__(self, memdir: Memdir) -> None:
        super().__init__(memdir.cache_dir / PID_FILE, "memdir serve", memdir.root,
                         "one service per memdir; `memdir serve --status` shows it")  # fmt: skip


class Capture(io.TextIOBase):
    """sys.stderr, redirected per thread: a request's thread writes (its log lines, a warning)
    into its own buffer, every other thread to the stream it replaced."""

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


def reads_only(command: str, args: list[str]) -> bool:
    """Whether this request only reads (it may run beside others): a command that writes
    nothing. Its stdin and its actor are the request's own (`Call`, `serving_as` is per
    thread), so neither keeps it off a reader thread. After a `--`, "--no-record" is a query,
    not the option. (A misjudged writer is still safe — the writer lock serialises writes,
    and an index update raises WriterNeeded — only slower.)"""
    if "--" in args:
        return False
    if command in NEVER_RECORD:
        return True
    journals = any(arg == "--journal" or arg.startswith("--journal=") for arg in args)
    return command in RECORD_UNLESS_TOLD and "--no-record" in args and not journals


@dataclass(frozen=True)
class Call:
    """One request for a served command: its arguments, the caller's clock (None: the
    service's), the text of a '-' argument, and the actor the caller's environment makes it."""

    command: str
    args: list[str]
    now: str | None
    stdin: str
    actor: Actor


def parsed(command: str, args: list[str]) -> tuple[Served[Any], dict[str, Any]]:
    """A served command's answer and its parameters' values from the request's arguments, as
    the command line parses them: by the command's own click options (a usage error is
    click's, as `memdir COMMAND ARGS` raises it)."""
    from memdir.cli.main import COMMAND_MODULES, _command

    root = _command()
    context = root.make_context("memdir", [command])
    found = root.get_command(context, command)
    assert found is not None, command  # a served command is in the tree (tests/test_serve.py)
    values = found.make_context(command, list(args), parent=context).params
    module = sys.modules[f"memdir.cli.commands.{COMMAND_MODULES[command]}"]
    served: Served[Any] = module.SERVED[command]
    return served, values


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


def holds_lone_surrogate(value: object) -> bool:
    """Whether a decoded request holds a lone surrogate anywhere ("\\ud800" is valid JSON but
    no text: it cannot be encoded for the command's stdin or written to a file)."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return True
        return False
    if isinstance(value, list):
        return any(holds_lone_surrogate(item) for item in value)
    if isinstance(value, dict):
        return any(holds_lone_surrogate(k) or holds_lone_surrogate(v) for k, v in value.items())
    return False


def encode_reply(reply: dict[str, Any]) -> bytes:
    """One answer line as UTF-8. Output that holds a lone surrogate (a damaged line printed
    back) is sent as Python's stderr would print it, backslash-escaped, never as a surrogate."""
    try:
        return (json.dumps(reply, ensure_ascii=False) + "\n").encode("utf-8")
    except UnicodeEncodeError:
        escaped = {
            key: value.encode("utf-8", "backslashreplace").decode("utf-8")
            if isinstance(value, str) else value
            for key, value in reply.items()
        }  # fmt: skip
        return (json.dumps(escaped, ensure_ascii=False) + "\n").encode("utf-8")


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
        # connections being handled, by peer pid; and those waiting on their client (cut off
        # by stop()) — both under one lock, which also orders a cut-off before a close
        self._connections = threading.Lock()
        self._peers: dict[int, int] = {}
        self._talking: set[socket.socket] = set()
        self.busy = 0  # connections answered "busy" (a limit reached)
        self._threads: set[threading.Thread] = set()
        # the commands that write run here, one at a time, so this thread's open index stays
        # warm across them; read-only ones on the readers (see the module doc)
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memdir-writer")
        self._readers = ThreadPoolExecutor(max_workers=READERS, thread_name_prefix="memdir-reader")
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
        if holds_lone_surrogate(request):
            return refusal("malformed request: text holds a lone surrogate (not UTF-8 text)")
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
        if {"-h", "--help"} & set(args):
            return refusal(f"help is not served: run `memdir {command} --help`")
        # the caller's own environment decides, not the field it writes (memdir/actor.py)
        actor = caller_actor(peer_environ(peer_pid) if peer_pid else None, claimed)
        call = Call(command, args, now, stdin or "", actor)
        if reads_only(command, args):
            answer = self._readers.submit(self.read_command, call)
        else:
            answer = self._writer.submit(self.run_command, call)
        return {"v": PROTOCOL, **answer.result()}

    def read_command(self, call: Call) -> dict[str, Any]:
        """Answer a read-only request beside others; alone, on the writer thread, when it
        finds the index must be updated first (WriterNeeded)."""
        from memdir.indexers.storage import WriterNeeded, shared_read

        try:
            with self._gate.shared(), shared_read(), serving_as(call.actor):
                return self._run(call)
        except WriterNeeded:
            return self._writer.submit(self.run_command, call).result()

    def run_command(self, call: Call) -> dict[str, Any]:
        """Answer one request here, alone, as `memdir COMMAND ARGS` would: its status and
        output. It runs as the caller's actor (memdir/actor.py, derived in `answer`), whoever
        started the service: a service started from an agent's shell still takes a hook's user
        prompt."""
        with self._gate.exclusive(), serving_as(call.actor):
            return self._run(call)

    def _run(self, call: Call) -> dict[str, Any]:
        """The command's answer function over the request's parameters, in an invocation made
        from the request; an error as the command line ends with it."""
        from memdir.archive_format.errors import MemdirError
        from memdir.cli.main import failure
        from memdir.cli.render import emit

        out, bug = io.StringIO(), None
        with self._stderr.captured() as err:
            try:
                served, values = parsed(call.command, call.args)
                emit(served.run(self._invocation(call), values), out, err)
                status = int(ExitStatus.OK)
            except Exception as error:
                status, text = failure(error)
                err.write(text)
                if status == ExitStatus.FAILED and not isinstance(error, MemdirError):
                    bug = error
        if bug is not None:  # to the service's log, not to the client (the capture has ended)
            log.error("request failed: %s %s", call.command, call.args, exc_info=bug)
        with self._counting:
            self.requests += 1
        return {"status": status, "stdout": out.getvalue(), "stderr": err.getvalue()}

    def _invocation(self, call: Call) -> Invocation:
        """What a command answering this request runs in: the served memdir (opened anew, as
        a command opens it: its settings may have changed), the caller's actor and clock,
        the request's stdin, and output laid out for a pipe (the client's stdout is one)."""
        from memdir.cli.context import Invocation, opened
        from memdir.cli.layout import width

        memdir = functools.cache(lambda: opened(str(self.memdir.root)))
        return Invocation(memdir, lambda: call.actor, call.now, width(terminal=False),
                          lambda: call.stdin)  # fmt: skip

    def status(self) -> dict[str, Any]:
        return {
            "pid": os.getpid(), "root": str(self.memdir.root), "socket": str(self.path),
            "protocol": PROTOCOL, "uptime_s": round(time.time() - self.started, 1),
            "requests": self.requests, "refused": self.refused, "abandoned": self.abandoned,
            "busy": self.busy, "rss_kib": resident_kib(), "readers": READERS,
        }  # fmt: skip

    # connections ----------------------------------------------------------------------------
    def _peer(self, conn: socket.socket) -> tuple[int, int]:
        """(pid, uid) of the connected process (SO_PEERCRED)."""
        size = struct.calcsize("3i")
        pid, uid, _gid = struct.unpack(
            "3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, size)
        )
        return int(pid), int(uid)

    def _read_line(self, conn: socket.socket) -> bytes | dict[str, Any]:
        """The request line, or the refusal to send: too large, or not all there by the
        deadline (one deadline for the whole line, however slowly it trickles in)."""
        deadline = time.monotonic() + REQUEST_DEADLINE
        data = b""
        while b"\n" not in data:
            left = deadline - time.monotonic()
            if left <= 0:
                return refusal(f"the request did not arrive within {REQUEST_DEADLINE:g} s")
            conn.settimeout(left)
            try:
                chunk = conn.recv(1 << 16)
            except TimeoutError:
                return refusal(f"the request did not arrive within {REQUEST_DEADLINE:g} s")
            if not chunk:
                break
            data += chunk
            if len(data) > MAX_REQUEST:
                return refusal(f"request too large (more than {MAX_REQUEST} bytes)")
        line = data.split(b"\n", 1)[0]
        if len(line) > MAX_REQUEST:
            return refusal(f"request too large (more than {MAX_REQUEST} bytes)")
        return line

    @contextmanager
    def _talking_to(self, conn: socket.socket, answering: bool = False) -> Iterator[None]:
        """While the service waits on this client (its request, its taking the answer): stop()
        may cut it off. Once stopping, no request is read any more; an answer still goes out
        (within SEND_DEADLINE) to the client whose command has run."""
        with self._connections:
            if self._stop.is_set() and not answering:
                raise ConnectionAbortedError("the service is stopping")
            self._talking.add(conn)
        try:
            yield
        finally:
            with self._connections:
                self._talking.discard(conn)

    def _reply_to(self, conn: socket.socket, pid: int, uid: int) -> dict[str, Any]:
        """The answer for this connection; never raises but for the connection itself (an
        unexpected failure is one logged line and an error answer, not a dead thread)."""
        if uid != self.allowed_uid:
            with self._counting:
                self.refused += 1
            log.warning("refused a connection from another user")
            return refusal("refused: this service answers only its own user", ExitStatus.FAILED)
        with self._talking_to(conn):
            got = self._read_line(conn)
        if isinstance(got, dict):
            return got
        try:
            return self.answer(got, pid)
        except Exception as error:  # a bug: the client still gets an answer, the thread lives
            log.error("the service failed on a request: %s: %s", type(error).__name__, error)
            log.debug("the failure in full", exc_info=True)
            return refusal("the service failed on this request (see its log)", ExitStatus.FAILED)

    def handle(self, conn: socket.socket, pid: int, uid: int) -> None:
        try:
            with conn:
                reply = self._reply_to(conn, pid, uid)
                with self._talking_to(conn, answering=True):
                    conn.settimeout(SEND_DEADLINE)  # sendall's timeout is for the whole answer
                    try:
                        conn.sendall(encode_reply(reply))
                    except (BrokenPipeError, ConnectionResetError):
                        with self._counting:
                            self.abandoned += 1
                        raise
        except OSError as error:  # the client went away, was too slow, or the service stops
            log.info("dropped a connection: %s", error)
        finally:
            with self._connections:
                self._peers[pid] -= 1
                if not self._peers[pid]:
                    del self._peers[pid]

    def _admit(self, pid: int) -> bool:
        """Take a slot for this peer: False when it, or the service, has no slot left."""
        with self._connections:
            if sum(self._peers.values()) >= MAX_CONNECTIONS or self._peers.get(pid, 0) >= PER_PEER:
                return False
            self._peers[pid] = self._peers.get(pid, 0) + 1
            return True

    def _turn_away(self, conn: socket.socket) -> None:
        """Answer "busy" without waiting for the client (a small line fits the socket's
        buffer; if it does not, the client gets nothing and falls back all the same)."""
        with self._counting:
            self.busy += 1
        with conn, suppress(OSError):
            conn.setblocking(False)
            conn.send(encode_reply(refusal("busy: too many connections; run it in-process",
                                           ExitStatus.LOCKED)))  # fmt: skip

    def _cut_off_clients(self) -> None:
        """End every connection that waits on its client (stop): a slow client does not hold
        the service's exit."""
        with self._connections:
            for conn in self._talking:
                with suppress(OSError):
                    conn.shutdown(socket.SHUT_RDWR)

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
        self._stderr.fallback = sys.stderr
        sys.stderr = self._stderr  # type: ignore[assignment]
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
            with self._connections:
                self._stop.set()  # no connection starts waiting on its client after this
            self._cut_off_clients()
            deadline = time.monotonic() + STOP_WAIT  # one bound for everything still running
            if keeper is not None:
                keeper[0].stop()
            for thread in [*self._threads, *([keeper[1]] if keeper else [])]:
                thread.join(max(0.0, deadline - time.monotonic()))
            self._readers.shutdown(wait=True)
            self._writer.shutdown(wait=True)
            sys.stderr = self._stderr.fallback
            log.info(
                "stopped serving %s after %s", self.memdir.root, counted(self.requests, "request")
            )

    def _accept(self, listener: socket.socket) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError as error:
                log.warning("accept failed: %s", error)
                continue
            try:
                pid, uid = self._peer(conn)
            except OSError as error:
                log.info("dropped a connection: %s", error)
                conn.close()
                continue
            if not self._admit(pid):
                self._turn_away(conn)
                continue
            thread = threading.Thread(target=self.handle, args=(conn, pid, uid), daemon=True)
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
    with ServeLock(memdir), stopped_by_signals(service.stop):
        service.run(keep_fresh)
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
