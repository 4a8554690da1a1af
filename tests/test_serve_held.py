"""`memdir serve` cannot be held: slow clients, many connections, SIGTERM while clients hang
on, and requests that are valid JSON but not text — each against a real running service."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import T0_DT, Server, clean_env, memdir_cli, memdir_main

from memdir.archive_format import lifecycle
from memdir.archive_format.memdir import Memdir
from memdir.cli.serve import (
    MAX_CONNECTIONS,
    PER_PEER,
    REQUEST_DEADLINE,
    encode_reply,
)
from memdir.cli.service import PROTOCOL, address

# A client in its own process (its own peer pid): connects, sends the start of a request, then
# one more byte every `pace` seconds for `lasting` seconds, and prints what it was answered.
TRICKLE = """
import socket, sys, time
path, pace, lasting = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
s = socket.socket(socket.AF_UNIX)
s.connect(path)
s.settimeout(lasting + 10)
print("connected", flush=True)
end = time.monotonic() + lasting
data, piece = b"", b'{"v": 1'
try:
    while time.monotonic() < end:
        try:
            s.sendall(piece)
        except BrokenPipeError:  # answered and closed already: read what was said
            pass
        piece = b" "
        s.settimeout(pace)
        try:
            chunk = s.recv(65536)
        except TimeoutError:
            continue
        if not chunk:
            break
        data += chunk
        if data.endswith(b"\\n"):
            break
except OSError:
    pass
print(data.decode().strip() or "nothing", flush=True)
"""


@pytest.fixture
def stocked(hashed: Memdir) -> Memdir:
    lifecycle.teach(hashed, "Sam takes his coffee black, no sugar", T0_DT)
    lifecycle.teach(hashed, "Sam's coffee grinder is a Comandante", T0_DT)
    memdir_main("--dir", str(hashed.root), "index")
    return hashed


def trickling(path: Path, count: int, pace: float = 0.3, lasting: float = 30.0) -> list:
    """`count` slow clients, each its own process, all connected when this returns."""
    # Unbuffered: readline then takes exactly the "connected" line, and an answer the client
    # printed right after it (a "busy" comes at once) is left in the pipe for communicate(),
    # which reads the pipe itself (a buffered reader could have taken it too, and lost it).
    clients = [
        subprocess.Popen([sys.executable, "-c", TRICKLE, str(path), str(pace), str(lasting)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0)
        for _ in range(count)
    ]  # fmt: skip
    for client in clients:
        assert client.stdout is not None
        assert client.stdout.readline().strip() == b"connected", client.stderr
    return clients


def answers(clients: list) -> list[str]:
    done = [client.communicate(timeout=60) for client in clients]
    return [(out.decode().splitlines() or [f"no answer: {err.decode()}"])[-1] for out, err in done]


def raw(path: Path, payload: bytes, timeout: float = 10) -> bytes:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        with address(path) as where:
            sock.connect(where)
        sock.sendall(payload)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    return data


def test_more_slow_clients_than_slots_do_not_hold_the_service(
    stocked: Memdir, server: Callable[..., Server]
) -> None:
    running = server(stocked, "--no-watch")
    root = str(stocked.root)
    expected = memdir_main("--dir", root, "search", "coffee").out
    began = time.monotonic()
    slow = trickling(running.socket, MAX_CONNECTIONS + 1)
    # every slot is taken by a client that keeps sending: a real command is not held — it is
    # told "busy" at once and runs in-process, with the same answer
    # (the client would wait 60 s for a held service; the tricklers hold on for 30 s)
    started = time.monotonic()
    done = memdir_cli("--dir", root, "search", "coffee", env=clean_env(MEMDIR_SERVICE_TIMEOUT="60"))
    assert (done.code, done.out) == (0, expected)
    assert time.monotonic() - started < 20, "it waited for a slot"
    # the deadline is for the whole request, not per read: every trickler is cut off with an
    # error answer once it has had REQUEST_DEADLINE, though it never stopped sending
    got = answers(slow)
    assert time.monotonic() - began < 3 * REQUEST_DEADLINE + 10
    assert not [line for line in got if not line.startswith("{")], got
    refused = [json.loads(line) for line in got]
    assert all(answer["v"] == PROTOCOL and answer["status"] != 0 for answer in refused), got
    late = [a for a in refused if f"did not arrive within {REQUEST_DEADLINE:g} s" in a["error"]]
    busy = [a for a in refused if a["error"].startswith("busy")]
    # (under load the first tricklers may reach their deadline before the last one connects,
    # freeing a slot: then fewer are turned away, but none is left hanging)
    assert len(late) + len(busy) == MAX_CONNECTIONS + 1 and len(late) >= MAX_CONNECTIONS // 2, got
    # and then the service answers again
    again = memdir_cli("--dir", root, "search", "coffee")
    assert again.out == expected
    status = running.status()
    assert status["requests"] >= 1
    assert "Traceback" not in running.text()


def test_one_client_process_holds_at_most_its_share_of_slots(
    stocked: Memdir, server: Callable[..., Server]
) -> None:
    """Connections from one process beyond PER_PEER are answered "busy" at once, so one
    process cannot take the slots other clients need: a real command is still served."""
    running = server(stocked, "--no-watch")
    held = []
    for _ in range(MAX_CONNECTIONS + 4):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(10)
        with address(running.socket) as where:
            sock.connect(where)
        sock.sendall(b'{"v": 1')
        held.append(sock)
    try:
        turned_away = []
        for sock in held[PER_PEER:]:
            answer = json.loads(sock.recv(65536))
            turned_away.append(answer["error"].startswith("busy") and answer["status"] == 7)
        assert all(turned_away) and len(turned_away) == MAX_CONNECTIONS + 4 - PER_PEER
        done = memdir_cli("--dir", str(stocked.root), "search", "coffee")
        assert done.code == 0 and "Sam takes his [coffee] black" in done.out
        # (asked from another process: this one is the peer that holds its share)
        assert running.status(process=True)["requests"] == 1, "served, not run in-process"
    finally:
        for sock in held:
            sock.close()


def test_sigterm_ends_slow_clients_within_a_bounded_time(
    stocked: Memdir, server: Callable[..., Server]
) -> None:
    running = server(stocked, "--no-watch")
    slow = trickling(running.socket, 8, pace=0.2, lasting=60)
    stopping = time.monotonic()
    assert running.stop() == 0
    took = time.monotonic() - stopping
    assert took < 3, f"SIGTERM waited {took:.1f} s for slow clients"
    assert not running.socket.exists()
    for client in slow:  # each was cut off (not left hanging until its own end)
        assert client.wait(timeout=10) == 0
    assert "Traceback" not in running.text()


@pytest.mark.parametrize(
    "request_line",
    [
        '{"v": 1, "command": "search", "args": ["coffee", "-"], "stdin": "\\ud800 beans"}',
        '{"v": 1, "command": "context", "args": ["-", "--no-record"], "stdin": "\\udfff"}',
        '{"v": 1, "command": "search", "args": ["\\udcff"]}',
        '{"v": 1, "command": "search", "args": ["coffee"], "now": "\\ud83d"}',
        '{"v": 1, "command": "search", "args": ["coffee"], "\\ud800": 1}',
    ],
)
def test_a_lone_surrogate_is_answered_with_an_error_and_the_service_goes_on(
    stocked: Memdir, server: Callable[..., Server], request_line: str
) -> None:
    running = server(stocked, "--no-watch")
    answer = json.loads(raw(running.socket, request_line.encode() + b"\n"))
    assert answer["v"] == PROTOCOL and answer["status"] == 8
    assert "lone surrogate" in answer["error"]
    good = {"v": 1, "root": str(stocked.root), "command": "search", "args": ["coffee"]}
    answered = json.loads(raw(running.socket, (json.dumps(good) + "\n").encode()))
    assert answered["status"] == 0 and "Sam takes his [coffee] black" in answered["stdout"]
    assert "Traceback" not in running.text() and "failed on" not in running.text()


def test_an_answer_holding_a_lone_surrogate_is_sent_escaped_as_text() -> None:
    line = encode_reply({"v": 1, "status": 0, "stdout": "bad \ud800 line\n", "stderr": ""})
    decoded = json.loads(line.decode("utf-8"))  # valid UTF-8, one line
    assert decoded["stdout"] == "bad \\ud800 line\n" and line.count(b"\n") == 1
    fine = encode_reply({"v": 1, "status": 0, "stdout": "café ☕\n", "stderr": ""})
    assert json.loads(fine)["stdout"] == "café ☕\n"
