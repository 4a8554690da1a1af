"""`memdir ui`: each view's API answer and its page render, served locally (target ≤ 300 ms).

On a copy of the examples memdir and on the 10,000-memory memdir of benchmarks/bench_index.py
(built once in --workdir with the default embedder, then copied). A real `memdir ui` process on
loopback; the API is timed with http.client and the bearer token (median of --runs after one
warm-up), the page in Debian's chromium through Playwright: from setting the view's address
to the view drawn (its API call and the DOM), median of --runs; without /usr/bin/chromium the
API alone. Not run in CI. The result goes to benchmarks/results/ui.json (--result elsewhere).
Usage: python -m benchmarks.bench_ui [--sizes examples,10000] [--runs 7] [--workdir /tmp/memdir-bench]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import shutil
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

from benchmarks.bench_recall import NOW
from benchmarks.common import machine, memdir_command, started, table
from memdir.archive_format.clock import format_time

EXAMPLES = Path(__file__).parents[1] / "examples" / "memdir"
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]  # fmt: skip
TARGET_MS = 300


class Served:
    """A `memdir ui` process on a free port, read through its API with the token."""

    def __init__(self, root: Path, now: str) -> None:
        self.process = subprocess.Popen(
            [*memdir_command(), "--dir", str(root), "ui", "--port", "0"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            env={**os.environ, "MEMDIR_NOW": now},
        )  # fmt: skip
        assert self.process.stdout is not None
        self.link = self.process.stdout.readline().decode().strip()
        parts = urlsplit(self.link)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 0
        self.token = (root / ".memdir" / "ui-token").read_text().strip()

    def get(self, path: str) -> Any:
        connection = http.client.HTTPConnection(self.host, self.port, timeout=600)
        try:
            connection.request("GET", path, headers={"Authorization": f"Bearer {self.token}"})
            response = connection.getresponse()
            body = response.read()
            if response.status != 200:
                raise SystemExit(f"{path}: {response.status} {body[:300]!r}")
            return json.loads(body)
        finally:
            connection.close()

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)


def median_ms(action: Any, runs: int) -> float:
    action()  # warm-up: the index opened, the model loaded, the page cache warm
    samples = []
    for _ in range(runs):
        began = time.perf_counter()
        action()
        samples.append((time.perf_counter() - began) * 1000)
    return statistics.median(samples)


def views_of(served: Served, query: str) -> dict[str, tuple[str, str]]:
    """Each view: its API route and the page's address of it."""
    chosen = served.get("/api/memories?k=50")["memories"]
    linked = next((row for row in chosen if row.get("links")), chosen[0])
    memory = quote(linked["id"])
    asked = quote(query)
    return {
        "review": ("/api/review", "#/review"),
        "recall": (f"/api/recall?q={asked}", f"#/recall?q={asked}"),
        "memory": (f"/api/memories/{memory}", f"#/memory/{memory}"),
        "timeline": ("/api/timeline", "#/timeline"),
        "links": (f"/api/memories/{memory}/links", f"#/links/{memory}"),
        "health": ("/api/health", "#/health"),
    }


def page_times(served: Served, views: dict[str, tuple[str, str]], runs: int) -> dict[str, float]:
    from playwright.sync_api import sync_playwright

    found: dict[str, float] = {}
    with sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        page.goto(served.link)
        drawn(page)
        for name, (_, fragment) in views.items():

            def show(fragment: str = fragment) -> None:
                page.evaluate("document.body.dataset.ready = ''")
                page.evaluate(f"""(() => {{ if (location.hash === {json.dumps(fragment)})
                    window.dispatchEvent(new HashChangeEvent('hashchange'));
                    else location.hash = {json.dumps(fragment)}; }})()""")  # fmt: skip
                drawn(page)

            found[name] = median_ms(show, runs)
        browser.close()
    return found


def drawn(page: Any, timeout: float = 600) -> None:
    end = time.monotonic() + timeout
    while not page.evaluate("document.body.dataset.ready || ''"):
        if time.monotonic() > end:
            raise SystemExit("the page never drew the view")
        time.sleep(0.002)


def measure(label: str, root: Path, query: str, now: str, runs: int) -> dict[str, Any]:
    served = Served(root, now)
    try:
        views = views_of(served, query)
        api = {name: median_ms(lambda path=path: served.get(path), runs)
               for name, (path, _) in views.items()}  # fmt: skip
        page = page_times(served, views, runs) if Path(CHROMIUM).exists() else {}
    finally:
        served.stop()
    return {"memdir": label, "api_ms": api, "page_ms": page}


def prepared(workdir: Path, size: str) -> tuple[Path, str, str]:
    """A fresh copy of the memdir to serve, a query for it, and its `now`."""
    target = workdir / f"ui-{size}"
    shutil.rmtree(target, ignore_errors=True)
    if size == "examples":
        shutil.copytree(EXAMPLES, target, ignore=shutil.ignore_patterns(".memdir"))
        return target, "how do I take my coffee?", "2026-12-02T12:00:00Z"
    from benchmarks.bench_index import build
    from memdir.indexers.embedding import load_embedder

    embedder, _ = load_embedder()
    built = build(workdir, int(size), embedder)
    shutil.copytree(built, target)
    return target, "what did we decide about the garden project", format_time(NOW)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="examples,10000")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/memdir-bench"))
    args, result = started(parser, "ui")
    args.workdir.mkdir(parents=True, exist_ok=True)
    results = []
    for size in args.sizes.split(","):
        root, query, now = prepared(args.workdir, size)
        results.append(measure(size, root, query, now, args.runs))
    print(f"machine: {machine()}; {time.strftime('%Y-%m-%d')}; commit {result.commit}; "
          f"median of {args.runs} runs after one warm-up")  # fmt: skip
    rows = []
    figures: dict[str, dict[str, Any]] = {}
    for measured in results:
        for name, api in measured["api_ms"].items():
            page = measured["page_ms"].get(name)
            within = "yes" if max(api, page or 0.0) <= TARGET_MS else "no"
            figures[f"{measured['memdir']}: {name}"] = {
                "API ms": api, "page ms": page if page else "—", f"≤ {TARGET_MS} ms": within
            }  # fmt: skip
            rows.append((measured["memdir"], name, f"{api:.1f}", f"{page:.1f}" if page else "—",
                         within))  # fmt: skip
    print(table(["memdir", "view", "API ms", "page ms", f"≤ {TARGET_MS} ms"], rows))
    result.parameters["browser"] = CHROMIUM if Path(CHROMIUM).exists() else "none (API only)"
    result.save(figures)


if __name__ == "__main__":
    main()
