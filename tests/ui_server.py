"""A real `memdir ui` process on an ephemeral loopback port, and a small HTTP client for it
(the standard library's http.client: what a script using the documented API would do)."""

from __future__ import annotations

import http.client
import json
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from conftest import MEMDIR_BIN, T0_DT, clean_env, configure

from memdir.archive_format import journal, lifecycle
from memdir.archive_format.clock import format_time
from memdir.archive_format.memdir import init

NOW_TEXT = format_time(T0_DT + timedelta(hours=3))


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes
    cookies: list[str]

    def json(self) -> Any:
        return json.loads(self.body)


class UiServer:
    """`memdir --dir ROOT ui --port 0 ARGS…` with MEMDIR_NOW = `now`; its stderr in a file."""

    def __init__(self, root: Path, log: Path, *args: str, now: str | None = None,
                 env: dict[str, str] | None = None) -> None:  # fmt: skip
        environment = env if env is not None else clean_env()
        if now is not None:
            environment = {**environment, "MEMDIR_NOW": now}
        self.root, self.log = root, log
        self.process = subprocess.Popen(
            [str(MEMDIR_BIN), "--dir", str(root), "ui", "--port", "0", *args],
            stdout=subprocess.PIPE, stderr=log.open("wb"), env=environment,
        )  # fmt: skip
        assert self.process.stdout is not None
        line = self.process.stdout.readline().decode().strip()
        assert line.startswith("http://"), f"no link: {line!r}\n{self.text()}"
        self.link = line
        parts = urlsplit(line)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 0
        self.base = f"http://{self.host}:{self.port}"
        self.token = (root / ".memdir" / "ui-token").read_text().strip()
        self.once = line.split("once=", 1)[1]

    def text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def request(self, method: str, path: str, body: Any = None, *, token: bool = True,
                headers: dict[str, str] | None = None, raw: bytes | None = None) -> Answer:  # fmt: skip
        sent = dict(headers or {})
        if token and "Authorization" not in sent:
            sent["Authorization"] = f"Bearer {self.token}"
        data = raw
        if body is not None:
            data = json.dumps(body).encode()
            sent.setdefault("Content-Type", "application/json")
        connection = http.client.HTTPConnection(self.host, self.port, timeout=60)
        try:
            connection.request(method, path, body=data, headers=sent)
            response = connection.getresponse()
            content = response.read()
            found = {name.lower(): value for name, value in response.getheaders()}
            cookies = [
                value for name, value in response.getheaders() if name.lower() == "set-cookie"
            ]
            return Answer(response.status, found, content, cookies)
        finally:
            connection.close()

    def get(self, path: str, **options: Any) -> Answer:
        return self.request("GET", path, **options)

    def post(self, path: str, body: Any = None, **options: Any) -> Answer:
        return self.request("POST", path, body, **options)

    def stop(self) -> int:
        self.process.terminate()
        try:
            return self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.wait(timeout=5)


def wait_for(check: Any, timeout: float = 10) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if check():
            return
        time.sleep(0.05)
    raise AssertionError("timed out")


def build(root: Path) -> dict[str, str]:
    """A small memdir written at fixed times (so two builds are the same files): teachings, two
    inferences to decide, a contradiction, a sealed memory, a journal session."""
    memdir, _ = init(root, T0_DT)
    memdir = configure(memdir, embedder={"kind": "hashing"})
    at = T0_DT
    ids: dict[str, str] = {}

    def step() -> Any:
        nonlocal at
        at += timedelta(minutes=1)
        return at

    ids["coffee"] = lifecycle.teach(memdir, "I take my coffee black", step(), key="coffee").id
    ids["tea"] = lifecycle.teach(memdir, "I drink green tea in the afternoon", step()).id
    ids["guess"] = lifecycle.infer(memdir, "Sam prefers morning meetings", step(),
                                   timedelta(days=7)).id  # fmt: skip
    ids["wrong"] = lifecycle.infer(
        memdir, "Sam takes sugar in coffee", step(), timedelta(days=7)
    ).id
    ids["sealed"] = lifecycle.teach(memdir, "the sealed qksealedword note", step(),
                                    visibility="sealed").id  # fmt: skip
    ids["nocoffee"] = lifecycle.teach(memdir, "I never drink coffee after noon", step()).id
    lifecycle.link(memdir, ids["nocoffee"], ids["coffee"], "contradicts", step(), actor="user")
    turns = [journal.new_turn(step(), role, "s1", text, "cli")
             for role, text in (("user", "Let us plan the garden"), ("assistant", "Sure."))]  # fmt: skip
    journal.add_turns(memdir, turns)
    return ids


@contextmanager
def serving(tmp: Path) -> Iterator[tuple[UiServer, dict[str, str]]]:
    """`memdir ui` over the memdir `build` makes in `tmp`, with the ids it names; at the end the
    server must stop cleanly and its log hold no traceback."""
    ids = build(tmp / "memory")
    server = UiServer(tmp / "memory", tmp / "ui.log", now=NOW_TEXT)
    try:
        yield server, ids
    finally:
        assert server.stop() == 0, server.text()
        assert "Traceback" not in server.text()
