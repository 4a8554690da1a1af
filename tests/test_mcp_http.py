"""`memdir mcp --http` end to end: the SDK's own streamable-HTTP client with the bearer token,
refusals without it (or with a rotated one), the body size limit, no wildcard CORS, loopback."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from conftest import MEMDIR_BIN, clean_env, memdir_cli, memdir_main

from memdir.archive_format import lifecycle
from memdir.archive_format.memdir import Memdir
from memdir.cli.mcp_server import MAX_HTTP_BODY
from memdir.usecases.mcp_token import token_path

from conftest import T0_DT  # isort: skip


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def http_server(hashed: Memdir, tmp_path: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    lifecycle.teach(hashed, "Sam takes his coffee black, no sugar", T0_DT)
    port = free_port()
    log = open(tmp_path / "mcp.err", "wb")  # noqa: SIM115 - closed below
    process = subprocess.Popen(
        [str(MEMDIR_BIN), "--dir", str(hashed.root), "mcp", "--http", str(port)],
        stdout=subprocess.DEVNULL, stderr=log, env=clean_env(),
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}/mcp"
    deadline = time.monotonic() + 60
    while True:
        assert process.poll() is None, (tmp_path / "mcp.err").read_text()
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                break
        except OSError:
            assert time.monotonic() < deadline, (tmp_path / "mcp.err").read_text()
            time.sleep(0.05)
    yield url, process
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
    log.close()


def call_tools(url: str, token: str | None) -> dict[str, Any]:
    """Through the SDK's own streamable-HTTP client: the tool names and a recall."""
    from mcp import Client
    from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client

    headers = {"Authorization": f"Bearer {token}"} if token else {}

    async def scenario() -> dict[str, Any]:
        http = create_mcp_http_client(headers=headers)
        async with http, Client(streamable_http_client(url, http_client=http),
                                read_timeout_seconds=60) as client:  # fmt: skip
            tools = await client.list_tools()
            result = await client.call_tool("recall", {"query": "coffee"})
            return {"tools": {tool.name for tool in tools.tools},
                    "recall": dict(result.structured_content or {})}  # fmt: skip

    return anyio.run(scenario)


def test_the_sdk_client_with_the_token_recalls_and_without_it_is_refused(
    hashed: Memdir, http_server: tuple[str, subprocess.Popen[bytes]]
) -> None:
    url, _ = http_server
    path = token_path(hashed)
    assert path.stat().st_mode & 0o777 == 0o600
    token = path.read_text().strip()
    assert len(token) >= 40
    seen = call_tools(url, token)
    assert {"recall", "teach", "wake"} <= seen["tools"]
    texts = [row["text"] for row in seen["recall"]["results"]]
    assert "Sam takes his coffee black, no sugar" in texts
    with pytest.raises(Exception):  # noqa: B017 - the SDK wraps the 401 in its own error
        call_tools(url, None)
    for header in (None, "Bearer wrong", f"Basic {token}", token):
        answer = httpx2.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                             headers={"Authorization": header} if header else {})  # fmt: skip
        assert answer.status_code == 401, header
        assert answer.headers["www-authenticate"].startswith("Bearer")


def test_rotating_the_token_refuses_the_old_one_at_once(
    hashed: Memdir, http_server: tuple[str, subprocess.Popen[bytes]]
) -> None:
    url, _ = http_server
    old = token_path(hashed).read_text().strip()
    shown = memdir_cli("--dir", str(hashed.root), "mcp", "--show-token")
    assert shown.out.strip() == old
    rotated = memdir_cli("--dir", str(hashed.root), "mcp", "--rotate-token")
    new = rotated.out.strip()
    assert rotated.code == 0 and new != old and token_path(hashed).read_text().strip() == new
    assert token_path(hashed).stat().st_mode & 0o777 == 0o600
    assert "Sam takes" in json.dumps(call_tools(url, new)["recall"])
    refused = httpx2.post(url, json={}, headers={"Authorization": f"Bearer {old}"})
    assert refused.status_code == 401


def test_size_limit_no_wildcard_cors_and_foreign_origins_refused(
    hashed: Memdir, http_server: tuple[str, subprocess.Popen[bytes]]
) -> None:
    url, _ = http_server
    auth = {"Authorization": f"Bearer {token_path(hashed).read_text().strip()}",
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json"}  # fmt: skip
    big = (
        b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"pad": "'
        + b"x" * (MAX_HTTP_BODY + 100)
        + b'"}}'
    )
    assert httpx2.post(url, content=big, headers=auth).status_code == 413
    preflight = httpx2.request("OPTIONS", url, headers={**auth, "Origin": "http://evil.example",
                               "Access-Control-Request-Method": "POST"})  # fmt: skip
    assert "access-control-allow-origin" not in preflight.headers
    foreign = httpx2.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                          headers={**auth, "Origin": "http://evil.example"})  # fmt: skip
    assert foreign.status_code == 403
    assert "access-control-allow-origin" not in foreign.headers


def test_a_bad_address_is_one_line_and_the_default_host_is_loopback(hashed: Memdir) -> None:
    from memdir.cli.commands.mcp import parse_address

    assert parse_address("8765") == ("127.0.0.1", 8765)
    assert parse_address("[::1]:8765") == ("::1", 8765)
    for n, bad in enumerate(("http", "0", "99999", ":80")):
        ask = memdir_cli if n == 0 else memdir_main  # the exit code of a real process once
        done = ask("--dir", str(hashed.root), "mcp", "--http", bad)
        assert done.code == 8 and "is not [HOST:]PORT" in done.err and "Traceback" not in done.err


def test_a_wrong_token_is_invalid_token_not_a_missing_one(
    hashed: Memdir, http_server: tuple[str, subprocess.Popen[bytes]]
) -> None:
    # RFC 6750 §3.1 (the MCP authorization spec's bearer rules): no credentials, a bare
    # challenge; a wrong bearer token, error="invalid_token"; no resource_metadata, so a client
    # does not go looking for an OAuth server
    url, _ = http_server
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    missing = httpx2.post(url, json=ping)
    assert missing.status_code == 401
    assert "error=" not in missing.headers["www-authenticate"]
    assert "required" in missing.json()["error"]
    wrong = httpx2.post(url, json=ping, headers={"Authorization": "Bearer not-the-token"})
    assert wrong.status_code == 401
    challenge = wrong.headers["www-authenticate"]
    assert challenge.startswith("Bearer ") and 'error="invalid_token"' in challenge
    assert "resource_metadata" not in challenge
    assert wrong.json()["error"] == "invalid_token"
    assert "--show-token" in wrong.json()["error_description"]
    base = url.removesuffix("/mcp")
    for path in (
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-authorization-server",
    ):
        assert httpx2.get(base + path).status_code == 404
