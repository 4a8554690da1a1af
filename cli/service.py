"""The client of `memdir serve`: send a read command to the running service, print its answer.

`memdir recall/search/similar/context/wake` ask the service of their memdir first (when one
runs, and when stdout is not a terminal) and print exactly what it answers; when there is no
service, or it does not answer within `$MEMDIR_SERVICE_TIMEOUT` seconds (default
`ANSWER_TIMEOUT`), they run in-process as before. This module runs before the CLI is imported,
so it uses the standard library only: the whole point is a process that starts in a few tens
of milliseconds.

A request the client gave up on may still be running in the service. So that it is not
recorded twice (a recall line, a `context --journal` turn), the client pins the clock: without
a `--now` or $MEMDIR_NOW it sends its own time, and runs the fallback at that same time. Both
runs then make the same lines with the same content ids, and the second is not appended (the
journal skips a turn it holds; lifecycle.record_recall a recall line at the shelf's end).

The protocol (docs/MCP.md "The resident service"): one JSON line each way over the Unix socket
`.memdir/serve.sock`.

    request  {"v": 1, "root": "/abs/memdir", "command": "recall", "args": ["coffee", "--json"],
              "now": "2026-12-01T10:00:00Z" | null, "stdin": "…" (when an argument is "-")}
    answer   {"v": 1, "status": 0, "stdout": "…", "stderr": "…"}
    refusal  {"v": 1, "status": 8, "error": "malformed request: …"}

AF_UNIX addresses hold at most 107 bytes; a socket whose path is longer is reached by its name
relative to its directory (both ends chdir there for the bind or the connect).
"""

from __future__ import annotations

import io
import json
import os
import socket
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

PROTOCOL = 1
SERVED = ("recall", "search", "similar", "context", "wake")
SOCKET_NAME = "serve.sock"
MAX_REQUEST = 1 << 20  # bytes of one request line
CONNECT_TIMEOUT = 0.5  # seconds
ANSWER_TIMEOUT = 3.0  # seconds; then the command runs in-process
TIMEOUT_ENV = "MEMDIR_SERVICE_TIMEOUT"  # seconds, overriding ANSWER_TIMEOUT
MAX_TIMEOUT = 3600.0
NOW_ENV = "MEMDIR_NOW"
MAX_ADDRESS = 107  # bytes in sun_path, less its terminating NUL
DISABLE_ENV = "MEMDIR_NO_SERVICE"  # set (non-empty): never ask the service


def answer_timeout(environ: Mapping[str, str]) -> float:
    """How long the client waits for the service's answer: $MEMDIR_SERVICE_TIMEOUT seconds
    (above 0, at most an hour), else ANSWER_TIMEOUT; a value that is not one says so on stderr
    and the default applies."""
    given = environ.get(TIMEOUT_ENV, "").strip()
    if not given:
        return ANSWER_TIMEOUT
    try:
        seconds = float(given)
    except ValueError:
        seconds = -1.0
    if 0 < seconds <= MAX_TIMEOUT:
        return seconds
    sys.stderr.write(f"memdir: warning: ${TIMEOUT_ENV}={given!r} is not a number of seconds "
                     f"between 0 and {MAX_TIMEOUT:g}; waiting {ANSWER_TIMEOUT:g} s\n")  # fmt: skip
    return ANSWER_TIMEOUT


def socket_path(cache_dir: Path) -> Path:
    return cache_dir / SOCKET_NAME


@contextmanager
def address(path: Path) -> Iterator[str]:
    """The address to bind or connect to: the path, or (past 107 bytes) its name relative to
    its directory, with the working directory there for the duration."""
    if len(os.fsencode(str(path))) <= MAX_ADDRESS:
        yield str(path)
        return
    before = os.getcwd()
    os.chdir(path.parent)
    try:
        yield path.name
    finally:
        os.chdir(before)


def split_globals(args: list[str]) -> tuple[str | None, str | None, str, list[str]] | None:
    """(--dir, --now, command, its arguments) from a command line, or None when it holds a
    global option this client does not forward (--debug, --help, --version, a typo)."""
    chosen: dict[str, str | None] = {"--dir": None, "--now": None}
    position = 0
    while position < len(args):
        arg = args[position]
        name, equals, value = arg.partition("=")
        if arg in ("--dir", "-C", "--now"):
            if position + 1 >= len(args):
                return None
            chosen["--dir" if arg == "-C" else arg] = args[position + 1]
            position += 2
        elif equals and name in chosen:
            chosen[name] = value
            position += 1
        elif arg.startswith("-C") and len(arg) > 2:
            chosen["--dir"] = arg[2:]
            position += 1
        elif arg.startswith("-"):
            return None
        else:
            return chosen["--dir"], chosen["--now"], arg, args[position + 1 :]
    return None


def request_for(args: list[str]) -> tuple[Path, dict[str, object]] | None:
    """The socket and the request for this command line, or None when it is not one for the
    service: another command, help, stdin input, a terminal on stdout, no memdir."""
    if os.environ.get(DISABLE_ENV):
        return None
    split = split_globals(args)
    if split is None:
        return None
    explicit, now, command, rest = split
    if command not in SERVED or {"-h", "--help"} & set(rest):
        return None
    if sys.stdout.isatty():  # rich lays a terminal out by its size and colours: in-process
        return None
    from memdir.archive_format.errors import MemdirError
    from memdir.archive_format.location import CACHE_NAME, find_root

    try:
        root = find_root(explicit)
    except MemdirError:
        return None  # the in-process path says what is wrong
    path = socket_path(root / CACHE_NAME)
    if not path.exists():
        return None
    from memdir.actor import actor_from

    try:
        actor = actor_from(os.environ)
    except MemdirError:
        return None  # a bad MEMDIR_ACTOR: the in-process path says so
    # the clock is pinned for the service and for a fallback alike (see the module doc)
    pinned = now or os.environ.get(NOW_ENV) or datetime.now(timezone.utc).isoformat()
    request = {"v": PROTOCOL, "root": str(root), "command": command, "args": rest,
               "now": pinned, "actor": actor.name}  # fmt: skip
    if "-" in rest:  # the text comes from stdin: send it along, or keep it for the CLI
        data = sys.stdin.buffer.read()
        sys.stdin = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8")
        try:
            request["stdin"] = data.decode("utf-8")
        except UnicodeDecodeError:
            return None  # the CLI says what is wrong with it
        if len(data) > MAX_REQUEST // 2:
            return None
    return path, request


def exchange(
    path: Path, request: dict[str, object], timeout: float = ANSWER_TIMEOUT
) -> dict | None:
    """Send one request, read one answer; None when the service cannot be reached, is too slow,
    or answers with something that is not an answer."""
    line = (json.dumps(request, ensure_ascii=False) + "\n").encode("utf-8")
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(CONNECT_TIMEOUT)
            with address(path) as where:
                sock.connect(where)
            sock.settimeout(timeout)
            sock.sendall(line)
            chunks = []
            while chunk := sock.recv(1 << 16):
                chunks.append(chunk)
        answer = json.loads(b"".join(chunks))
    except (OSError, ValueError):
        return None
    if not isinstance(answer, dict) or answer.get("v") != PROTOCOL or "error" in answer:
        return None
    if not isinstance(answer.get("stdout"), str) or not isinstance(answer.get("status"), int):
        return None
    return answer


def forward(args: list[str]) -> int | None:
    """Run this command line on the memdir's service: its exit status, after printing what the
    service printed; None when it should run in-process instead."""
    found = request_for(args)
    if found is None:
        return None
    path, request = found
    answer = exchange(path, request, answer_timeout(os.environ))
    if answer is None:
        os.environ[NOW_ENV] = str(request["now"])  # the fallback runs at the same time
        return None
    try:
        sys.stdout.write(answer["stdout"])
        sys.stdout.flush()
    except BrokenPipeError:
        return 0
    sys.stderr.write(str(answer.get("stderr") or ""))
    return int(answer["status"])
