"""`memdir ui` in a real browser: Debian's chromium driven by Playwright (never a downloaded
browser). Decisions made by clicking are in `memdir log` as the CLI records them; the
explained recall's bars carry `recall --explain --json`'s numbers; sealed text is masked; and
every view lays out at 1280×800 and 390×844 with no block overlapping another or cut off
(bounding boxes compared in the page, not pixels). Slow: `make test-slow`."""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import clean_env, memdir_cli
from ui_server import NOW_TEXT, UiServer, serving

pytestmark = pytest.mark.slow

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]  # fmt: skip
SIZES = {"desktop": (1280, 800), "phone": (390, 844)}
SHOT = os.environ.get("MEMDIR_UI_SCREENSHOT")  # where to save the explain view (docs/)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not Path(CHROMIUM).exists() or shutil.which("chromium") is None:
        if os.environ.get("CI"):
            pytest.fail(f"no {CHROMIUM}: .ci/run installs Debian's chromium")
        pytest.skip(f"no {CHROMIUM} (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        if os.environ.get("CI"):
            raise
        pytest.skip("no playwright (make setup installs it: the dev extra)")
    with sync_playwright() as driver:
        launched = driver.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def site(tmp_path: Path) -> Iterator[tuple[UiServer, dict[str, str]]]:
    with serving(tmp_path) as served:
        yield served


@pytest.fixture
def page(browser: Any, site: tuple[UiServer, dict[str, str]]) -> Any:
    """A desktop-sized page signed in to the served memdir."""
    return signed_in(browser, site[0])


def signed_in(browser: Any, server: UiServer, size: tuple[int, int] = SIZES["desktop"]) -> Any:
    """A page signed in through the one-time link (it lands on the review)."""
    width, height = size
    page = browser.new_page(viewport={"width": width, "height": height})
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("requestfailed", lambda request: errors.append(f"failed: {request.url}"))
    page.errors = errors
    page.goto(server.link)
    settle(page)
    return page


def settle(page: Any, timeout: float = 30) -> None:
    """Wait until the router has drawn a view (the page's CSP allows no eval, so poll)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if page.evaluate("document.body.dataset.ready || ''"):
            return
        time.sleep(0.05)
    raise AssertionError("the view was never drawn")


def visit(page: Any, fragment: str) -> None:
    page.evaluate("document.body.dataset.ready = ''")
    page.evaluate(f"""(() => {{
        if (location.hash === {json.dumps(fragment)}) window.dispatchEvent(new HashChangeEvent('hashchange'));
        else location.hash = {json.dumps(fragment)};
    }})()""")
    settle(page)


def _log(server: UiServer, memory_id: str) -> dict[str, Any]:
    done = memdir_cli("--dir", str(server.root), "log", memory_id, "--json", now=NOW_TEXT)
    assert done.code == 0, done
    return json.loads(done.out)


def test_confirm_and_reject_by_clicking(page: Any, site: tuple[UiServer, dict[str, str]]) -> None:
    server, ids = site
    card = page.locator(f".review-item[data-id='{ids['guess']}']")
    card.locator("input").fill("yes, mornings are best")
    page.evaluate("document.body.dataset.ready = ''")
    card.locator("button[data-action=confirm]").click()
    settle(page)
    card = page.locator(f".review-item[data-id='{ids['wrong']}']")
    card.locator("input").fill("I never said that")
    page.evaluate("document.body.dataset.ready = ''")
    card.locator("button[data-action=reject]").click()
    settle(page)
    assert page.locator(".review-item").count() == 0
    confirmed, rejected = _log(server, ids["guess"]), _log(server, ids["wrong"])
    assert confirmed["status"] == "durable" and rejected["status"] == "rejected"
    steps = {step["what"]: step for step in confirmed["history"] + rejected["history"]}
    assert steps["confirm"]["detail"] == "by user: yes, mornings are best"
    assert steps["reject"]["detail"] == "by user: I never said that"
    assert steps["confirm"]["at"] == steps["reject"]["at"] == NOW_TEXT
    assert page.errors == []


def test_explained_recall_bars_carry_the_cli_numbers(
    page: Any, site: tuple[UiServer, dict[str, str]]
) -> None:
    server, _ = site
    visit(page, "#/recall?q=coffee+black")
    shown = page.evaluate(
        """() => [...document.querySelectorAll('.result')].map((card) => ({
            id: card.dataset.id,
            bars: [...card.querySelectorAll('.fill')].map((bar) => ({
                name: bar.dataset.component, value: Number(bar.dataset.value),
                weight: bar.dataset.weight === undefined ? null : Number(bar.dataset.weight),
                width: bar.style.width}))}))"""
    )
    done = memdir_cli("--dir", str(server.root), "recall", "coffee black", "--explain", "--json",
                      now=NOW_TEXT, env=clean_env())  # fmt: skip
    assert done.code == 0, done
    cli = json.loads(done.out)
    assert [row["id"] for row in shown] == [row["id"] for row in cli["results"]]
    verdict = page.locator("#verdict .badge").inner_text()
    assert verdict == cli["verdict"]
    from memdir.archive_format.memdir import Memdir
    from memdir.cli.explain import ScoreWeights

    weights = ScoreWeights.of(Memdir.open(server.root), cli["profile"]).weights
    for row, expected in zip(shown, cli["results"], strict=True):
        bars = {bar["name"]: bar for bar in row["bars"]}
        weighted = {name for name, weight in weights.items() if weight}
        assert set(bars) == weighted | {"decay"}, row["id"]
        for name, bar in bars.items():
            assert bar["value"] == expected["components"][name], (row["id"], name)
            if name != "decay":
                assert bar["weight"] == weights[name]
            shown_width = float(bar["width"].rstrip("%"))
            assert abs(shown_width - min(1.0, max(0.0, bar["value"])) * 100) < 1e-6, name
    stages = page.evaluate("[...document.querySelectorAll('.stage')].map((s) => s.dataset.stage)")
    assert stages == [stage["name"] for stage in cli["stages"]]
    block = page.locator("#context-block").inner_text()
    context = memdir_cli("--dir", str(server.root), "context", "coffee black", "--no-record",
                         now=NOW_TEXT)  # fmt: skip
    assert context.code == 0
    if context.out.strip():  # what the per-prompt hook would be handed, word for word
        assert block.strip() == context.out.strip()
    else:
        assert block.startswith("(nothing")
    if SHOT:
        page.screenshot(path=SHOT, full_page=False)
    assert page.errors == []


def test_a_memory_page_masks_sealed_text(page: Any, site: tuple[UiServer, dict[str, str]]) -> None:
    _, ids = site
    visit(page, f"#/memory/{ids['sealed']}")
    assert page.locator("#memory-text .text").inner_text() == "[sealed]"
    assert "qksealedword" not in page.content()
    visit(page, f"#/memory/{ids['coffee']}")
    assert page.locator("#memory-text .text").inner_text() == "I take my coffee black"
    assert page.locator("#decay-curve polyline.past").count() == 1
    assert page.locator("#history tr").count() >= 2  # created, and the link to it


# what the layout check measures in the page: every block of the view and its children
LAYOUT = """() => {
  const problems = [];
  const width = document.documentElement.clientWidth;
  if (document.documentElement.scrollWidth > width + 1)
    problems.push(`the page scrolls sideways: ${document.documentElement.scrollWidth} > ${width}`);
  const blocks = [document.querySelector('header'), ...document.querySelector('main').children];
  const boxes = blocks.map((block) => [block, block.getBoundingClientRect()]);
  const name = (node) => `${node.tagName.toLowerCase()}${node.id ? '#' + node.id : ''}.${node.className}`;
  boxes.forEach(([block, box], index) => {
    if (box.left < -1 || box.right > width + 1) problems.push(`${name(block)} is cut off: ${box.left}..${box.right}`);
    for (const [other, next] of boxes.slice(index + 1)) {
      const overlap = Math.min(box.bottom, next.bottom) - Math.max(box.top, next.top);
      const across = Math.min(box.right, next.right) - Math.max(box.left, next.left);
      if (overlap > 1 && across > 1 && box.height && next.height)
        problems.push(`${name(block)} overlaps ${name(other)}`);
    }
  });
  for (const card of document.querySelectorAll('main .card, main .stage, main svg')) {
    const outer = card.getBoundingClientRect();
    for (const inner of card.querySelectorAll(':scope > *')) {
      const box = inner.getBoundingClientRect();
      if (!box.width) continue;
      if (box.right > outer.right + 1 || box.left < outer.left - 1)
        problems.push(`${name(inner)} sticks out of ${name(card)}: ${box.left}..${box.right} ` +
                      `in ${outer.left}..${outer.right}`);
    }
  }
  return {problems, blocks: blocks.length};
}"""


def test_every_view_lays_out_at_both_sizes(
    page: Any, site: tuple[UiServer, dict[str, str]], tmp_path: Path
) -> None:
    _, ids = site
    fragments = {
        "review": "#/review",
        "recall": "#/recall?q=coffee+black",
        "memory": f"#/memory/{ids['coffee']}",
        "timeline": "#/timeline",
        "links": f"#/links/{ids['coffee']}",
        "health": "#/health",
    }
    for label, (width, height) in SIZES.items():
        page.set_viewport_size({"width": width, "height": height})
        for view, fragment in fragments.items():
            visit(page, fragment)
            assert page.evaluate("document.body.dataset.view") == view
            page.screenshot(path=str(tmp_path / f"{view}-{label}.png"))
            found = page.evaluate(LAYOUT)
            assert found["blocks"] >= 2, (view, label)
            assert found["problems"] == [], (view, label)
        assert page.errors == [], label
