"""`memdir ui`'s HTTP API through a real server process and a real HTTP client: every
operation, the health endpoints and metrics, the token, cookie, CSRF, Origin and Host guards,
the body limit, rate limits, JSON errors for bad requests, and the decisions it records — the
same lines `memdir confirm`, `reject` and `link` write (docs/HTTP.md)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import T0_DT, clean_env, memdir_cli
from ui_server import NOW_TEXT, UiServer, build, serving

from memdir.archive_format.memdir import Memdir, init

SVG_NAMESPACE = "http://www.w3.org/2000/svg"  # a name for createElementNS, never fetched


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[UiServer, dict[str, str]]]:
    with serving(tmp_path_factory.mktemp("ui")) as served:
        yield served


def test_every_read_operation_answers(served: tuple[UiServer, dict[str, str]]) -> None:
    server, ids = served
    review = server.get("/api/review").json()
    assert {row["id"] for row in review["queue"]} == {ids["guess"], ids["wrong"]}
    assert all(row["history"][0]["what"] == "created" for row in review["queue"])
    [pair] = review["contradictions"]
    assert {side["id"] for side in pair["sides"]} == {ids["coffee"], ids["nocoffee"]}
    found = server.get("/api/recall?q=coffee+black").json()
    assert found["recall"]["results"][0]["id"] == ids["coffee"]
    assert [stage["name"] for stage in found["recall"]["stages"]][:3] == [
        "query analysis", "candidate pool", "filters"]  # fmt: skip
    assert set(found["weights"]["components"]) >= {"semantic", "bm25"}
    assert "markdown" in found["context"]
    block = server.get("/api/context?q=how+do+I+take+my+coffee").json()
    assert block["verdict"] in ("GROUNDED", "LOW_CONFIDENCE", "NO_DATA")
    listed = server.get("/api/memories").json()
    assert ids["coffee"] in {row["id"] for row in listed["memories"]}
    one = server.get(f"/api/memories/{ids['coffee'][:8]}").json()
    assert one["memory"]["id"] == ids["coffee"] and one["decay"]["curve"]["points"]
    assert one["links"]["in"][0]["from"] == ids["nocoffee"]
    links = server.get(f"/api/memories/{ids['coffee']}/links?depth=1").json()
    assert {node["id"] for node in links["memories"]} == {ids["coffee"], ids["nocoffee"]}
    timeline = server.get("/api/timeline").json()
    [day] = timeline["days"]
    assert day["counts"]["taught"] == 4 and day["counts"]["inferred"] == 2
    assert day["sessions"][0]["turns"] == 2
    inferred = server.get("/api/timeline?status=provisional").json()
    assert {e["id"] for d in inferred["days"] for e in d["memories"]} == {
        ids["guess"],
        ids["wrong"],
    }
    assert server.get("/api/journal").json()["turns"][0]["text"] == "Let us plan the garden"
    assert server.get("/api/people").json() == {"people": {}}
    health = server.get("/api/health").json()
    assert health["verify"]["clean"] is True and health["sizes"]["shelves"] > 0
    assert {check["name"] for check in health["doctor"]} >= {"embedder", "memdir"}


def test_sealed_text_is_masked_on_the_memory_view(served: tuple[UiServer, dict[str, str]]) -> None:
    server, ids = served
    answer = server.get(f"/api/memories/{ids['sealed']}")
    assert answer.status == 200
    assert b"qksealedword" not in answer.body
    assert answer.json()["memory"]["text"] == "[sealed]"
    for path in ("/api/timeline", "/api/memories", "/api/recall?q=sealed+note", "/api/review"):
        assert b"qksealedword" not in server.get(path).body, path


def test_health_ready_and_metrics(served: tuple[UiServer, dict[str, str]]) -> None:
    server, _ = served
    assert server.get("/health", token=False).json() == {"status": "ok"}
    assert server.get("/ready", token=False).json() == {"ready": True}
    assert server.get("/metrics", token=False).status == 401
    server.get("/api/people")
    metrics = server.get("/metrics")
    assert metrics.headers["content-type"].startswith("text/plain; version=0.0.4")
    text = metrics.body.decode()
    counted = re.search(r'memdir_ui_requests_total\{method="GET",route="/api/people",'
                        r'status="200"\} (\d+)', text)  # fmt: skip
    assert counted and int(counted.group(1)) >= 1
    assert 'memdir_ui_request_seconds_bucket{method="GET",route="/api/people",le="+Inf"}' in text
    assert re.search(r'memdir_bytes\{folder="shelves"\} [1-9]', text)
    assert "memdir_last_sleep_timestamp_seconds 0" in text
    for line in text.splitlines():  # the exposition format: comments, or name{labels} value
        assert line.startswith("#") or re.match(r"^[a-z_]+(\{.*\})? [0-9.e+-]+$", line), line


def test_no_token_no_answer(served: tuple[UiServer, dict[str, str]]) -> None:
    server, ids = served
    for method, path in (("GET", "/api/review"), ("GET", f"/api/memories/{ids['coffee']}"),
                         ("POST", f"/api/memories/{ids['guess']}/confirm")):  # fmt: skip
        answer = server.request(method, path, token=False)
        assert answer.status == 401, path
        assert answer.json()["error"] and answer.json()["hint"]
        assert answer.headers["www-authenticate"].startswith("Bearer")
    wrong = server.get("/api/review", headers={"Authorization": "Bearer not-the-token"})
    assert wrong.status == 401
    # the page's shell holds no data and needs no token; its assets are all local
    page = server.get("/", token=False)
    assert page.status == 200 and b"/app.js" in page.body
    assert "default-src 'none'" in page.headers["content-security-policy"]
    for asset in ("/", "/app.js", "/app.css"):
        body = server.get(asset, token=False).body.decode().replace(SVG_NAMESPACE, "")
        assert not re.findall(r"(?:https?:)?//[a-z0-9-]+\.[a-z0-9.-]+", body), asset


def _signed_in(server: UiServer) -> dict[str, str]:
    """The cookies the one-time link sets (opened through a TLS proxy: Secure ones)."""
    answer = server.get(f"/login?once={server.once}", token=False,
                        headers={"X-Forwarded-Proto": "https"})  # fmt: skip
    assert answer.status == 303 and answer.headers["location"] == "/#/review"
    jar = {}
    for cookie in answer.cookies:
        name, _, rest = cookie.partition("=")
        jar[name] = rest.split(";")[0]
        assert "SameSite=Strict" in cookie and "Secure" in cookie
    assert any(c.startswith("memdir_session=") and "HttpOnly" in c for c in answer.cookies)
    return jar


def test_the_one_time_link_and_the_write_guards(tmp_path: Path) -> None:
    ids = build(tmp_path / "memory")
    server = UiServer(tmp_path / "memory", tmp_path / "ui.log", now=NOW_TEXT)
    try:
        jar = _signed_in(server)
        assert server.get(f"/login?once={server.once}", token=False).status == 401  # once
        cookie = "; ".join(f"{name}={value}" for name, value in jar.items())
        mine = server.base
        assert server.get("/api/review", token=False, headers={"Cookie": cookie}).status == 200
        path = f"/api/memories/{ids['guess']}/confirm"
        tries = {
            "no CSRF header": {"Cookie": cookie, "Origin": mine},
            "a wrong CSRF header": {"Cookie": cookie, "Origin": mine, "X-CSRF-Token": "x" * 64},
            "no Origin": {"Cookie": cookie, "X-CSRF-Token": jar["memdir_csrf"]},
            "another site's Origin": {
                "Cookie": cookie,
                "Origin": "https://evil.example",
                "X-CSRF-Token": jar["memdir_csrf"],
            },  # fmt: skip
        }
        for label, headers in tries.items():
            answer = server.post(path, {"reason": "yes"}, token=False, headers=headers)
            assert answer.status == 403, label
            assert answer.json()["hint"], label
        # the bearer token from another site's page is refused too; no CORS header ever
        evil = server.post(path, {}, headers={"Origin": "https://evil.example"})
        assert evil.status == 403 and "access-control-allow-origin" not in evil.headers
        rebound = server.get("/api/review", headers={"Host": "evil.example:80"})
        assert rebound.status == 403  # DNS rebinding: not this server's name
        log = memdir_cli("--dir", str(server.root), "log", ids["guess"], "--json", now=NOW_TEXT)
        assert json.loads(log.out)["status"] == "provisional"  # nothing got through
        good = {"Cookie": cookie, "Origin": mine, "X-CSRF-Token": jar["memdir_csrf"]}
        done = server.post(path, {"reason": "yes, mornings"}, token=False, headers=good)
        assert done.status == 200, done.body
        assert done.json()["status"] == "durable"
    finally:
        assert server.stop() == 0, server.text()


def test_a_body_over_one_mebibyte_is_refused(served: tuple[UiServer, dict[str, str]]) -> None:
    server, ids = served
    big = b'{"reason": "' + b"x" * (1 << 20) + b'"}'
    answer = server.request("POST", f"/api/memories/{ids['wrong']}/reject", raw=big,
                            headers={"Content-Type": "application/json"})  # fmt: skip
    assert answer.status == 413
    assert answer.json()["error"].startswith("the body is over")


def test_rate_limits_answer_429_with_retry_after(tmp_path: Path) -> None:
    build(tmp_path / "memory")
    server = UiServer(tmp_path / "memory", tmp_path / "ui.log", "--rate", "3", now=NOW_TEXT)
    try:
        statuses = [server.get("/api/people").status for _ in range(4)]
        assert statuses == [200, 200, 200, 429]
        limited = server.get("/api/people")
        assert limited.status == 429 and int(limited.headers["retry-after"]) >= 1
    finally:
        assert server.stop() == 0, server.text()


def test_bad_requests_get_json_errors(served: tuple[UiServer, dict[str, str]]) -> None:
    server, ids = served
    cases = {
        ("GET", "/api/nothing-here", None): 404,
        ("GET", "/api/memories/m-ffffffffffff", None): 404,
        ("GET", "/api/memories/m-", None): 409,  # an ambiguous prefix
        ("GET", "/api/recall", None): 400,  # no query
        ("GET", "/api/recall?q=coffee&k=zero", None): 400,
        ("GET", "/api/recall?q=coffee&now=yesterday-ish", None): 400,
        ("GET", "/api/timeline?status=happy", None): 400,
        ("GET", f"/api/memories/{ids['coffee']}/links?depth=9", None): 400,
        ("GET", "/api/journal?all=maybe", None): 400,
        ("DELETE", "/api/review", None): 405,
        ("POST", f"/api/memories/{ids['wrong']}/reject", "{}"): 400,  # no reason
        ("POST", f"/api/memories/{ids['wrong']}/reject", "not json"): 400,
        ("POST", f"/api/memories/{ids['wrong']}/reject", "[1, 2]"): 400,
        ("POST", f"/api/memories/{ids['wrong']}/reject", '{"reason": 5}'): 400,
        ("POST", f"/api/memories/{ids['wrong']}/link", '{"type": "compatible"}'): 400,
    }
    for (method, path, body), status in cases.items():
        answer = server.request(method, path, raw=body.encode() if body else None)
        assert answer.status == status, (method, path, body, answer.body)
        data = answer.json()
        assert data["error"] and "hint" in data and data["request_id"], (path, data)
    assert "Traceback" not in server.text()


def test_every_response_and_log_line_has_a_request_id(
    served: tuple[UiServer, dict[str, str]],
) -> None:
    server, _ = served
    mine = server.get("/api/people", headers={"X-Request-Id": "trace-42"})
    assert mine.headers["x-request-id"] == "trace-42"
    made = server.get("/nowhere")
    assert re.fullmatch(r"[0-9a-f]{16}", made.headers["x-request-id"])
    assert made.json()["request_id"] == made.headers["x-request-id"]
    from ui_server import wait_for

    wait_for(lambda: f"rid={made.headers['x-request-id']} GET /nowhere 404" in server.text())
    assert "rid=trace-42 GET /api/people 200" in server.text()
    served_lines = [line for line in server.text().splitlines() if " GET " in line]
    assert served_lines and all("rid=" in line for line in served_lines)


def _histories(root: Path, ids: list[str]) -> list[Any]:
    found = []
    for memory_id in ids:
        done = memdir_cli("--dir", str(root), "log", memory_id, "--json", now=NOW_TEXT)
        assert done.code == 0, done
        found.append(json.loads(done.out))
    return found


def _events(root: Path) -> list[dict[str, Any]]:
    lines = []
    for path in sorted((root / "shelves").glob("*.jsonl")):
        for line in path.read_text().splitlines():
            data = json.loads(line)
            if data.get("kind") == "event":  # each event's nonce (and so its id) is its own
                lines.append({k: v for k, v in data.items() if k not in ("id", "nonce")})
    return lines


def test_decisions_are_the_lines_the_cli_writes(tmp_path: Path) -> None:
    """Confirm, reject and a `compatible` link made through the API are, in `memdir log` and
    in the shelves, exactly what `memdir confirm`, `reject` and `link` record."""
    import shutil

    by_cli, by_page = tmp_path / "cli", tmp_path / "page"
    ids = build(by_cli)
    shutil.copytree(by_cli, by_page)  # the same memdir twice (its id and every line)
    env = clean_env(MEMDIR_NOW=NOW_TEXT)
    for args in (("confirm", ids["guess"], "--evidence", "yes, mornings are best"),
                 ("reject", ids["wrong"], "--reason", "I never said that"),
                 ("link", ids["nocoffee"], ids["coffee"], "--type", "compatible")):  # fmt: skip
        done = memdir_cli("--dir", str(by_cli), *args, env=env, now=NOW_TEXT)
        assert done.code == 0, done
    server = UiServer(by_page, tmp_path / "ui.log", now=NOW_TEXT)
    try:
        for path, body in (
            (f"/api/memories/{ids['guess']}/confirm", {"reason": "yes, mornings are best"}),
            (f"/api/memories/{ids['wrong']}/reject", {"reason": "I never said that"}),
            (f"/api/memories/{ids['nocoffee']}/link", {"to": ids["coffee"], "type": "compatible"}),
        ):
            answer = server.post(path, body)
            assert answer.status == 200, answer.body
        after = server.get("/api/review").json()
        assert after["queue"] == [] and after["contradictions"] == []
    finally:
        assert server.stop() == 0, server.text()
    chosen = [ids["guess"], ids["wrong"], ids["coffee"], ids["nocoffee"]]
    assert _histories(by_page, chosen) == _histories(by_cli, chosen)
    assert _events(by_page) == _events(by_cli)
    steps = {
        step["what"]: step["detail"] for step in _histories(by_page, [ids["wrong"]])[0]["history"]
    }
    assert steps["reject"] == "by user: I never said that"


@pytest.mark.parametrize("marker", [{"MEMDIR_ACTOR": "assistant"}, {"CLAUDECODE": "1"}])
def test_the_assistant_cannot_start_the_users_page(tmp_path: Path, marker: dict[str, str]) -> None:
    """The page acts as the user; run as the assistant it refuses to start (and makes no token)."""
    memdir, _ = init(tmp_path / "memory", T0_DT)
    done = memdir_cli("--dir", str(memdir.root), "ui", "--port", "0", env=clean_env(**marker))
    assert done.code == 8, done  # a LifecycleError, as a guarded write refused
    assert "acts as the user" in done.err and "Traceback" not in done.err
    assert not (memdir.root / ".memdir" / "ui-token").exists()


def test_show_and_rotate_token(md: Memdir) -> None:
    first = memdir_cli("--dir", str(md.root), "ui", "--show-token")
    assert first.code == 0 and len(first.out.strip()) > 30
    assert (md.root / ".memdir" / "ui-token").stat().st_mode & 0o777 == 0o600
    rotated = memdir_cli("--dir", str(md.root), "ui", "--rotate-token")
    assert rotated.code == 0 and rotated.out.strip() != first.out.strip()


def test_the_kept_fold_is_the_fold_at_every_moment(tmp_path: Path) -> None:
    """The server keeps the folded archive between requests: whatever moment is asked for
    and whatever was written meanwhile, it is what `load_view` folds then (an inference
    expiring between two requests, a memory taught later, a decision appended)."""
    from datetime import timedelta

    from memdir.api import open as open_memdir
    from memdir.archive_format.lifecycle import load_view
    from memdir.cli.web.views import snapshot

    ids = build(tmp_path / "memory")
    me = open_memdir(tmp_path / "memory", actor="user")
    start = T0_DT + timedelta(hours=3)

    def same(moment: Any) -> None:
        kept = snapshot(me.archive, moment).view
        fresh = load_view(me.archive, moment)
        assert {s.id: s.status for s in kept} == {s.id: s.status for s in fresh}, moment
        assert kept.now == moment

    for moment in (start, start + timedelta(minutes=1), start + timedelta(days=6, hours=23),
                   start + timedelta(days=8), start - timedelta(hours=2, minutes=57),
                   start - timedelta(days=1)):  # fmt: skip
        same(moment)  # the inferences expire after 7 days; before T0 nothing was there
    assert (
        snapshot(me.archive, start + timedelta(days=8)).view.states[ids["guess"]].status
        == "expired"
    )
    me.reject(ids["wrong"], reason="no", now=start)
    same(start)
    assert snapshot(me.archive, start).view.states[ids["wrong"]].status == "rejected"
    later = me.teach("I learnt to sail", now=start + timedelta(hours=1)).id
    same(start)
    same(start + timedelta(hours=2))
    assert later in snapshot(me.archive, start + timedelta(hours=2)).view.states
    assert later not in snapshot(me.archive, start).view.states
