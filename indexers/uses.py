"""What the healer learned, as recall reads it: per memory, how often the per-prompt block
delivered it and how often a reply used it (`recall` lines with `via: context` and `via: use`,
memdir/usecases/healer.py). Derived, in `.memdir/uses.json`: counted again from the recalls
shelf each time the healer runs (a rebuilt cache has none until then, and recall's `use`
component is then 0 for every memory)."""

from __future__ import annotations

import json
from typing import Any

from memdir.archive_format import shelf
from memdir.archive_format.atomic import write_bytes
from memdir.archive_format.memdir import Memdir

USES_FILE = "uses.json"


def via_lines(memdir: Memdir) -> list[dict[str, Any]]:
    """Every recall line of the shelf that says what surfaced it (`via`: context or use)."""
    return [item.data for item in shelf.read_all(memdir.recall_shelf)
            if item.data and item.data.get("kind") == "recall"
            and item.data.get("via") in ("context", "use")]  # fmt: skip


def count(lines: list[dict[str, Any]]) -> dict[str, list[int]]:
    """memory id → [deliveries, uses], from recall lines with a `via`."""
    counts: dict[str, list[int]] = {}
    for line in lines:
        slot = 0 if line["via"] == "context" else 1
        for memory_id in line["memories"]:
            counts.setdefault(memory_id, [0, 0])[slot] += 1
    return counts


def refresh(memdir: Memdir, lines: list[dict[str, Any]] | None = None) -> dict[str, list[int]]:
    """Count again (from `lines` when the caller has read them) and write `.memdir/uses.json`
    (a cache: no fsync)."""
    counts = count(via_lines(memdir) if lines is None else lines)
    memdir.cache_dir.mkdir(parents=True, exist_ok=True)
    data = json.dumps(counts, sort_keys=True, separators=(",", ":")).encode()
    write_bytes(memdir.cache_dir / USES_FILE, [data], durable=False)
    return counts


def read(memdir: Memdir) -> dict[str, list[int]]:
    """The counts the healer last wrote ({} when it has not run, or the file is unreadable)."""
    try:
        data = json.loads((memdir.cache_dir / USES_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def component(counts: dict[str, list[int]], memory_id: str) -> float:
    """Recall's `use` component: (used + 1) / (delivered + 2) − 1/2 — 0 for a memory never
    delivered, below 0 for one delivered and not used, above 0 for one used."""
    delivered, used = (counts.get(memory_id) or [0, 0])[:2]
    return (used + 1) / (delivered + 2) - 0.5
