"""The HTTP adapter of `memdir ui`: the page, its JSON API (docs/HTTP.md), and the guards.

- Who may ask: a bearer token (`.memdir/ui-token`, 0600, made on first use) in
  `Authorization: Bearer …`, or the session cookie a one-time link sets (`/login?once=…`:
  HttpOnly, SameSite=Strict). The file is read on each request, so rotating it logs out at once.
- Writes (POST) with the cookie need the double-submit CSRF header (`X-CSRF-Token`, the value
  of the `memdir_csrf` cookie) and an Origin of this server; any request whose Origin is
  another site's is refused (403), and there is no CORS. The Host must be this server's
  (loopback names, or `--allow-host`): a DNS-rebinding page cannot reach it.
- Each client (its address) gets `rate` requests a minute (429 with Retry-After past that); a
  body over 1 MiB is refused (413, as the resident service's MAX_REQUEST).
- Every response carries `X-Request-Id`, and every log line names it; `/metrics` is the
  Prometheus text format.

Handlers run one at a time on a worker thread (a local page for one user; the writer lock
and the index see one request at a time). Errors are JSON with a message and a hint.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import hashlib
import hmac
import json
import logging
import math
import re
import secrets
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from memdir.api import Memdir as Handle
from memdir.archive_format import clock
from memdir.archive_format.errors import (
    AmbiguousIdError,
    BadInputError,
    LifecycleError,
    LockedError,
    MemdirError,
    NotFoundError,
)
from memdir.cli.service import MAX_REQUEST

from . import views

log = logging.getLogger("memdir.ui")
TOKEN_NAME = "ui-token"
SESSION_COOKIE = "memdir_session"
CSRF_COOKIE = "memdir_csrf"
CSRF_HEADER = "x-csrf-token"
ONCE_SECONDS = 600  # a one-time link works once, within ten minutes
DEFAULT_RATE = 600  # requests a minute per client
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
STATIC = Path(__file__).with_name("static")
ASSETS = {"/": ("index.html", "text/html; charset=utf-8"),
          "/app.js": ("app.js", "text/javascript; charset=utf-8"),
          "/app.css": ("app.css", "text/css; charset=utf-8")}  # fmt: skip
# no script, style, image or connection from anywhere but this server
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")  # fmt: skip
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)
CHALLENGE = {"www-authenticate": 'Bearer realm="memdir"'}
REQUEST_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
STATUS_OF = {NotFoundError: 404, AmbiguousIdError: 409, BadInputError: 400,
             LifecycleError: 409, LockedError: 503}  # fmt: skip


# the token -----------------------------------------------------------------------------------
def token_path(handle: Handle) -> Path:
    return handle.archive.cache_dir / TOKEN_NAME


def ensure_token(handle: Handle, rotate: bool = False) -> tuple[str, bool]:
    """The page's token (the MCP token's mechanism, in its own file), made when missing."""
    from memdir.usecases.mcp_token import ensure_token_at

    return ensure_token_at(token_path(handle), rotate)


def _derived(token: str, purpose: str) -> str:
    return hmac.new(token.encode(), purpose.encode(), hashlib.sha256).hexdigest()


# the guards' state -------------------------------------------------------------------------
@dataclass
class Limiter:
    """A token bucket per client: `rate` requests a minute, bursts up to `rate`."""

    rate: int
    buckets: dict[str, tuple[float, float]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def take(self, client: str) -> float:
        """0 when the request may go ahead, else the seconds until it may."""
        now = time.monotonic()
        per_second = self.rate / 60.0
        with self.lock:
            level, then = self.buckets.get(client, (float(self.rate), now))
            level = min(float(self.rate), level + (now - then) * per_second)
            if level >= 1.0:
                self.buckets[client] = (level - 1.0, now)
                return 0.0
            self.buckets[client] = (level, now)
            return (1.0 - level) / per_second


@dataclass
class Metrics:
    """Counters and latency histograms per route, for `/metrics`."""

    requests: dict[tuple[str, str, int], int] = field(default_factory=dict)
    latency: dict[tuple[str, str], list[float]] = field(default_factory=dict)  # bucket counts
    sums: dict[tuple[str, str], float] = field(default_factory=dict)
    limited: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def observe(self, method: str, route: str, status: int, seconds: float) -> None:
        with self.lock:
            key = (method, route, status)
            self.requests[key] = self.requests.get(key, 0) + 1
            counts = self.latency.setdefault((method, route), [0.0] * (len(BUCKETS) + 1))
            for index, bound in enumerate(BUCKETS):
                if seconds <= bound:
                    counts[index] += 1
            counts[-1] += 1
            self.sums[(method, route)] = self.sums.get((method, route), 0.0) + seconds


@dataclass
class Settings:
    """What one `memdir ui` serves with."""

    port: int
    rate: int = DEFAULT_RATE
    hosts: tuple[str, ...] = ()  # Host names besides loopback (a reverse proxy's)
    origins: tuple[str, ...] = ()  # extra Origins allowed to write (https://memdir.example)
    now: str | None = None  # a fixed clock (--now, $MEMDIR_NOW)


class Failure(Exception):
    """An HTTP error answered as JSON."""

    def __init__(self, status: int, message: str, hint: str = "",
                 headers: dict[str, str] | None = None) -> None:  # fmt: skip
        super().__init__(message)
        self.status, self.message, self.hint = status, message, hint
        self.headers = headers or {}


# the application -----------------------------------------------------------------------------
Handler = Callable[["Request"], Any]


@dataclass
class Request:
    """What a handler sees of one request."""

    method: str
    path: str
    query: dict[str, str]
    body: dict[str, Any]
    params: dict[str, str]
    now: datetime
    secure: bool = False  # it came through a TLS proxy


@dataclass
class Route:
    method: str
    pattern: str  # /api/memories/{id}
    handler: Handler
    write: bool = False
    public: bool = False  # no token needed (the page's shell, /health, /ready, /login)

    def match(self, method: str, path: str) -> dict[str, str] | None:
        if method != self.method and not (method == "HEAD" and self.method == "GET"):
            return None
        regex = "^" + re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", self.pattern) + "$"
        found = re.match(regex, path)
        return found.groupdict() if found else None


class App:
    """The ASGI application of `memdir ui`."""

    def __init__(self, handle: Handle, settings: Settings) -> None:
        self.handle, self.settings = handle, settings
        self.limiter = Limiter(settings.rate)
        self.metrics = Metrics()
        self.once: dict[str, float] = {}
        # one worker thread: requests take turns on the memdir, and its open index stays warm
        # there (indexers/storage.resident_index keeps one per thread)
        self.work = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="memdir-ui")
        self.started = time.time()
        self.routes = routes(self)

    # the one-time link
    def one_time_link(self, base: str) -> str:
        code = secrets.token_urlsafe(24)
        self.once[code] = time.monotonic() + ONCE_SECONDS
        return f"{base}/login?once={code}"

    def token(self) -> str | None:
        from memdir.usecases.mcp_token import read_token

        return read_token(token_path(self.handle))

    def moment(self) -> datetime:
        return clock.now(self.settings.now)

    # ASGI
    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "http":
            return
        began = time.perf_counter()
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        given = headers.get("x-request-id", "")
        rid = given if REQUEST_ID.match(given) else uuid.uuid4().hex[:16]
        method, path = scope["method"], scope["path"]
        route_name = "unmatched"
        try:
            route, params = self.route(method, path)
            route_name = route.pattern
            status, body, extra = await self.handle_request(scope, receive, headers, route,
                                                            params)  # fmt: skip
        except Failure as failure:
            status, extra = failure.status, failure.headers
            body = _json({"error": failure.message, "hint": failure.hint, "request_id": rid})
        except MemdirError as error:
            status, extra = STATUS_OF.get(type(error), 500), {}
            body = _json({"error": error.message, "hint": error.hint or "", "request_id": rid})
        except Exception:  # the one boundary: logged with its id, answered without a traceback
            log.exception("rid=%s %s %s failed", rid, method, path)
            status, extra = 500, {}
            body = _json({"error": "internal error", "hint": f"the server's log names request "
                          f"{rid}", "request_id": rid})  # fmt: skip
        content = extra.pop("content-type", "application/json")
        out = [(b"content-type", content.encode()), (b"x-request-id", rid.encode()),
               (b"cache-control", b"no-store"), (b"x-content-type-options", b"nosniff"),
               (b"referrer-policy", b"no-referrer"), (b"x-frame-options", b"DENY"),
               (b"content-security-policy", CSP.encode()),
               (b"content-length", str(len(body)).encode())]  # fmt: skip
        out += [(name.encode(), value.encode()) for name, value in extra.items()
                if name != "set-cookie"]  # fmt: skip
        out += [(b"set-cookie", cookie.encode()) for cookie in extra.get("set-cookie", "").split("\n")
                if cookie]  # fmt: skip
        await send({"type": "http.response.start", "status": status, "headers": out})
        await send({"type": "http.response.body", "body": b"" if method == "HEAD" else body})
        seconds = time.perf_counter() - began
        self.metrics.observe(method, route_name, status, seconds)
        if status == 429:
            self.metrics.limited += 1
        log.info("rid=%s %s %s %d %.1fms", rid, method, path, status, seconds * 1000)

    def route(self, method: str, path: str) -> tuple[Route, dict[str, str]]:
        allowed = []
        for route in self.routes:
            params = route.match(method, path)
            if params is not None:
                return route, params
            if route.match(route.method, path) is not None:
                allowed.append(route.method)
        if allowed:
            raise Failure(405, f"{method} is not how {path} is used",
                          f"use {', '.join(sorted(set(allowed)))}", {"allow": ", ".join(allowed)})  # fmt: skip
        raise Failure(404, f"no such page or API: {path}", "docs/HTTP.md lists the API")

    async def handle_request(self, scope: dict[str, Any], receive: Any, headers: dict[str, str],
                             route: Route, params: dict[str, str]) -> tuple[int, bytes, dict[str, str]]:  # fmt: skip
        self.check_host(headers)
        client = (scope.get("client") or ("?", 0))[0]
        wait = self.limiter.take(client)
        if wait > 0:
            raise Failure(429, "too many requests from this client",
                          f"wait {math.ceil(wait)} s (at most {self.settings.rate} a minute)",
                          {"retry-after": str(math.ceil(wait))})  # fmt: skip
        origin = headers.get("origin")
        if origin is not None and origin not in self.origins(headers):
            raise Failure(403, f"requests from {origin} are refused",
                          "the page is served to itself only (no CORS)")  # fmt: skip
        by_cookie = False
        if not route.public:
            by_cookie = self.authenticate(headers)
        body = await read_body(receive, headers)
        if route.write or scope["method"] not in ("GET", "HEAD"):
            if by_cookie:
                self.check_csrf(headers, origin)
        data: dict[str, Any] = {}
        if body:
            try:
                data = json.loads(body)
            except (ValueError, UnicodeDecodeError) as error:
                raise Failure(400, f"the body is not JSON: {error}",
                              'send a JSON object, e.g. {"reason": "…"}') from None  # fmt: skip
            if not isinstance(data, dict):
                raise Failure(400, "the body must be a JSON object", 'e.g. {"reason": "…"}')
        query = {k.decode(): v for k, v in _query(scope.get("query_string", b"")).items()}
        secure = headers.get("x-forwarded-proto", "").lower() == "https"
        request = Request(scope["method"], scope["path"], query, data, params, self.moment(),
                          secure)  # fmt: skip
        loop = asyncio.get_running_loop()
        if route.public or route.pattern == "/metrics":  # answered even while a recall runs
            result = route.handler(request)
        else:
            result = await loop.run_in_executor(self.work, route.handler, request)
        if isinstance(result, tuple):
            return result
        return 200, _json(result), {}

    def check_host(self, headers: dict[str, str]) -> None:
        host = headers.get("host", "")
        name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
        if name not in (*LOOPBACK_NAMES, *self.settings.hosts):
            raise Failure(403, f"Host {host!r} is not this server's",
                          "behind a reverse proxy, start memdir ui with --allow-host NAME")  # fmt: skip

    def origins(self, headers: dict[str, str]) -> set[str]:
        host = headers.get("host", "")
        return {f"http://{host}", f"https://{host}", *self.settings.origins}

    def authenticate(self, headers: dict[str, str]) -> bool:
        """Whether the request came with the token (False) or the session cookie (True);
        401 without either."""
        token = self.token()
        if token is None:
            raise Failure(401, "no token is set up", "restart memdir ui")
        scheme, _, given = headers.get("authorization", "").partition(" ")
        if scheme.lower() == "bearer" and given:
            if hmac.compare_digest(given.strip().encode(), token.encode()):
                return False
            raise Failure(401, "the bearer token is not this memdir's",
                          "memdir ui --show-token prints it", CHALLENGE)  # fmt: skip
        session = _cookies(headers).get(SESSION_COOKIE)
        if session and hmac.compare_digest(session.encode(), _derived(token, "session").encode()):
            return True
        raise Failure(401, "sign in first", "open the one-time link memdir ui printed, or send "
                      "Authorization: Bearer TOKEN", CHALLENGE)  # fmt: skip

    def check_csrf(self, headers: dict[str, str], origin: str | None) -> None:
        token = self.token() or ""
        if origin is None:
            raise Failure(403, "a write from the page must say its Origin",
                          "browsers send it; scripts use the bearer token")  # fmt: skip
        given = headers.get(CSRF_HEADER, "")
        cookie = _cookies(headers).get(CSRF_COOKIE, "")
        expected = _derived(token, "csrf")
        if not (given and hmac.compare_digest(given.encode(), cookie.encode())
                and hmac.compare_digest(given.encode(), expected.encode())):  # fmt: skip
            raise Failure(403, "the CSRF token is missing or wrong",
                          f"send the {CSRF_COOKIE} cookie's value in X-CSRF-Token")  # fmt: skip

    def login(self, request: Request) -> tuple[int, bytes, dict[str, str]]:
        code = request.query.get("once", "")
        # behind a TLS proxy (X-Forwarded-Proto: https) the cookies are sent over TLS only
        secure = "; Secure" if request.secure else ""
        expires = self.once.pop(code, None)
        token = self.token()
        if expires is None or expires < time.monotonic() or token is None:
            raise Failure(401, "this sign-in link was used or has expired",
                          "restart memdir ui for a new one")  # fmt: skip
        cookies = "\n".join((
            f"{SESSION_COOKIE}={_derived(token, 'session')}; Path=/; HttpOnly; SameSite=Strict{secure}",
            f"{CSRF_COOKIE}={_derived(token, 'csrf')}; Path=/; SameSite=Strict{secure}",
        ))  # fmt: skip
        return 303, b"", {"location": "/#/review", "set-cookie": cookies,
                          "content-type": "text/plain"}  # fmt: skip

    def asset(self, request: Request) -> tuple[int, bytes, dict[str, str]]:
        name, kind = ASSETS[request.path]
        return 200, (STATIC / name).read_bytes(), {"content-type": kind}


async def read_body(receive: Any, headers: dict[str, str]) -> bytes:
    """The request's body, refused past MAX_REQUEST bytes (by its length or as it arrives)."""
    length = headers.get("content-length")
    if length is not None:
        if not length.isdigit():
            raise Failure(400, "Content-Length is not a number", "")
        if int(length) > MAX_REQUEST:
            raise Failure(413, f"the body is over {MAX_REQUEST} bytes", "send less")
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_REQUEST:
            raise Failure(413, f"the body is over {MAX_REQUEST} bytes", "send less")
        chunks.append(chunk)
        if not message.get("more_body"):
            break
    return b"".join(chunks)


def _query(raw: bytes) -> dict[bytes, str]:
    from urllib.parse import parse_qsl

    return {k.encode(): v for k, v in parse_qsl(raw.decode("latin-1"), keep_blank_values=True)}


def _cookies(headers: dict[str, str]) -> dict[str, str]:
    found = {}
    for part in headers.get("cookie", "").split(";"):
        name, _, value = part.strip().partition("=")
        if name:
            found[name] = value
    return found


def _json(data: Any) -> bytes:
    return json.dumps(data, ensure_ascii=False, default=str).encode("utf-8")


def _flag(request: Request, name: str) -> bool:
    value = request.query.get(name, "").lower()
    if value in ("", "0", "false", "no"):
        return False
    if value in ("1", "true", "yes"):
        return True
    raise BadInputError(f"{name} must be true or false, not {value!r}", hint=f"{name}=true")


def _number(request: Request, name: str, default: int, low: int, high: int) -> int:
    value = request.query.get(name)
    if value in (None, ""):
        return default
    if not value.lstrip("-").isdigit() or not low <= int(value) <= high:
        raise BadInputError(f"{name} must be a whole number {low} to {high}, not {value!r}",
                            hint=f"e.g. {name}={default}")  # fmt: skip
    return int(value)


def _moment(request: Request) -> datetime:
    given = request.query.get("now")
    return clock.parse_time(given, "now") if given else request.now


def _required(request: Request, name: str) -> str:
    value = request.query.get(name, "").strip()
    if not value:
        raise BadInputError(f"{name} is empty", hint=f"e.g. ?{name}=coffee")
    return value


# the routes ----------------------------------------------------------------------------------
def routes(app: App) -> list[Route]:
    me = app.handle

    def review(r: Request) -> Any:
        return views.review(me, r.now)

    def decision(action: str) -> Handler:
        return lambda r: views.decide(me, r.params["id"], action, r.body, r.now)

    def recall(r: Request) -> Any:
        return views.recall(me, _required(r, "q"), _moment(r), k=_number(r, "k", 10, 1, 100),
                            profile=r.query.get("profile") or None,
                            include_private=_flag(r, "include_private"),
                            include_expired=_flag(r, "include_expired"))  # fmt: skip

    def context(r: Request) -> Any:
        budget = _number(r, "budget", 0, 0, 100000) or None
        return views.context(me, _required(r, "q"), _moment(r), budget)

    def memories(r: Request) -> Any:
        return views.memories(me, r.now, r.query.get("status") or None,
                              _number(r, "k", 100, 1, 10000))  # fmt: skip

    def memory(r: Request) -> Any:
        return views.memory(me, r.params["id"], r.now)

    def links(r: Request) -> Any:
        return views.links(me, r.params["id"], r.now, _number(r, "depth", 2, 1, 5))

    def timeline(r: Request) -> Any:
        q = r.query
        return views.timeline(me, r.now, person=q.get("person") or None,
                              type_=q.get("type") or None, status=q.get("status") or None,
                              days=_number(r, "days", views.TIMELINE_DAYS, 1, 3660))  # fmt: skip

    def journal(r: Request) -> Any:
        return views.journal(me, r.now, r.query.get("session") or None, _flag(r, "all"))

    def people(r: Request) -> Any:
        return views.people(me)

    def health(r: Request) -> Any:
        return views.health(me, r.now)

    def alive(r: Request) -> Any:
        return {"status": "ok"}

    def ready(r: Request) -> Any:
        ok = (me.root / "memdir.yaml").is_file() and app.token() is not None
        return (200 if ok else 503, _json({"ready": ok}), {})

    def metrics(r: Request) -> Any:
        return 200, prometheus(app).encode(), {"content-type": "text/plain; version=0.0.4"}

    table = [
        Route("GET", "/api/review", review),
        Route("POST", "/api/memories/{id}/confirm", decision("confirm"), write=True),
        Route("POST", "/api/memories/{id}/reject", decision("reject"), write=True),
        Route("POST", "/api/memories/{id}/link", decision("link"), write=True),
        Route("GET", "/api/recall", recall),
        Route("GET", "/api/context", context),
        Route("GET", "/api/memories", memories),
        Route("GET", "/api/memories/{id}", memory),
        Route("GET", "/api/memories/{id}/links", links),
        Route("GET", "/api/timeline", timeline),
        Route("GET", "/api/journal", journal),
        Route("GET", "/api/people", people),
        Route("GET", "/api/health", health),
        Route("GET", "/health", alive, public=True),
        Route("GET", "/ready", ready, public=True),
        Route("GET", "/metrics", metrics),
        Route("GET", "/login", app.login, public=True),
    ]
    table += [Route("GET", path, app.asset, public=True) for path in ASSETS]
    return table


def prometheus(app: App) -> str:
    """The Prometheus text exposition: requests, latencies, limits, sizes, the last sleep."""
    from memdir.archive_format.state import read_yaml

    lines = ["# HELP memdir_ui_requests_total Requests answered, by method, route and status.",
             "# TYPE memdir_ui_requests_total counter"]  # fmt: skip
    metrics = app.metrics
    with metrics.lock:
        requests = dict(metrics.requests)
        latency = {key: list(values) for key, values in metrics.latency.items()}
        sums = dict(metrics.sums)
        limited = metrics.limited
    for (method, route, status), count in sorted(requests.items()):
        lines.append(f'memdir_ui_requests_total{{method="{method}",route="{route}",'
                     f'status="{status}"}} {count}')  # fmt: skip
    lines += ["# HELP memdir_ui_request_seconds Time to answer, by method and route.",
              "# TYPE memdir_ui_request_seconds histogram"]  # fmt: skip
    for (method, route), counts in sorted(latency.items()):
        labels = f'method="{method}",route="{route}"'
        for bound, seen in zip((*map(str, BUCKETS), "+Inf"), counts, strict=True):
            lines.append(f'memdir_ui_request_seconds_bucket{{{labels},le="{bound}"}} {seen:g}')
        lines.append(f"memdir_ui_request_seconds_sum{{{labels}}} {sums[(method, route)]:.6f}")
        lines.append(f"memdir_ui_request_seconds_count{{{labels}}} {counts[-1]:g}")
    lines += ["# HELP memdir_ui_rate_limited_total Requests refused with 429.",
              "# TYPE memdir_ui_rate_limited_total counter", f"memdir_ui_rate_limited_total {limited}",
              "# HELP memdir_bytes Bytes under each folder of the memdir (.memdir is the index cache).",
              "# TYPE memdir_bytes gauge"]  # fmt: skip
    for name, size in views.sizes(app.handle.root).items():
        lines.append(f'memdir_bytes{{folder="{name}"}} {size}')
    index = app.handle.archive.cache_dir / "index"
    held = sum(p.stat().st_size for p in index.rglob("*") if p.is_file()) if index.is_dir() else 0
    lines += ["# HELP memdir_index_bytes Bytes of the derived index.",
              "# TYPE memdir_index_bytes gauge", f"memdir_index_bytes {held}"]  # fmt: skip
    slept = read_yaml(app.handle.archive.state_dir / "sleep.yaml", {}) or {}
    lines += ["# HELP memdir_last_sleep_timestamp_seconds When sleep last ran (0: never).",
              "# TYPE memdir_last_sleep_timestamp_seconds gauge"]  # fmt: skip
    last = slept.get("last_run")
    when = clock.parse_time(last).timestamp() if last else 0
    lines.append(f"memdir_last_sleep_timestamp_seconds {when:.0f}")
    lines += ["# HELP memdir_last_sleep What the last sleep did, by what it counted.",
              "# TYPE memdir_last_sleep gauge"]  # fmt: skip
    for name, value in sorted((slept.get("summary") or {}).items()):
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            lines.append(f'memdir_last_sleep{{what="{name}"}} {value}')
    lines += ["# HELP memdir_ui_uptime_seconds Seconds since the page's server started.",
              "# TYPE memdir_ui_uptime_seconds gauge",
              f"memdir_ui_uptime_seconds {time.time() - app.started:.0f}"]  # fmt: skip
    return "\n".join(lines) + "\n"


def serve(app: App, sock: Any) -> None:
    """Serve on the bound socket until SIGTERM or Ctrl-C, then exit 0 (uvicorn's own handlers
    would raise the signal again once it has stopped)."""
    import uvicorn

    from memdir.indexers.storage import keep_models_resident
    from memdir.usecases.watch import stopped_by_signals

    keep_models_resident()  # the model and the open index stay loaded between requests

    class Server(uvicorn.Server):
        def capture_signals(self) -> Any:
            return stopped_by_signals(self.stop, log)

        def stop(self) -> None:
            self.should_exit = True

    config = uvicorn.Config(app, log_level="warning", lifespan="on", access_log=False,
                            timeout_graceful_shutdown=2)  # fmt: skip
    Server(config).run(sockets=[sock])
