"""The console ring: the last 30 things that were live (taught, confirmed, recalled).

Kept in state/ring.yaml, replaced atomically; the oldest entry falls out when a new one comes.
It is rewritten by every recorded recall, so a push skips the directory fsync (atomic.py):
after a power cut the ring may be one push behind — what it lists is in the shelves, which are
synced. Dropping or scrubbing entries is synced in full (their text must not return).
The ring is this machine's working memory: git-ignored, never merged (docs/FORMAT.md "Sync");
a forget that arrives through a merge drops its entries (archive_format/tombstones.py).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from . import visibility
from .clock import format_time
from .memdir import Memdir
from .state import read_yaml, write_yaml

RING_SIZE = 30


def ring_path(memdir: Memdir) -> Any:
    return memdir.state_dir / "ring.yaml"


def read_ring(memdir: Memdir) -> list[dict[str, Any]]:
    """The ring's entries, oldest first."""
    data = read_yaml(ring_path(memdir), {}) or {}
    slots = data.get("slots") if isinstance(data, dict) else None
    return [slot for slot in slots or [] if isinstance(slot, dict)]


def push(memdir: Memdir, now: datetime, what: str, memory_id: str, text: str,
         visible: str = "normal", size: int = RING_SIZE) -> None:  # fmt: skip
    """Add an entry (caller holds the writer lock); the oldest ones beyond `size` are dropped.

    The ring stores only what it may show (visibility.py): a private memory's entry is kept
    with its text masked, a sealed one is not kept at all."""
    shown = visibility.present("ring", text, "durable", visible)
    if shown is None:
        return
    slots = read_ring(memdir)
    slots.append({"at": format_time(now), "what": what, "id": memory_id, "text": _short(shown)})
    write_yaml(ring_path(memdir), {"size": size, "slots": slots[-size:]}, sync_directory=False)


def drop(memdir: Memdir, memory_id: str) -> None:
    """Remove a memory's entries (caller holds the writer lock): `forget` leaves no text here."""
    data = read_yaml(ring_path(memdir), {}) or {}
    slots = read_ring(memdir)
    kept = [slot for slot in slots if slot.get("id") != memory_id]
    if len(kept) != len(slots):
        size = data.get("size", RING_SIZE) if isinstance(data, dict) else RING_SIZE
        # fully synced: after a power cut the forgotten text must not come back
        write_yaml(ring_path(memdir), {"size": size, "slots": kept})


def replace_slots(memdir: Memdir, slots: list[dict[str, Any]]) -> None:
    """Write the ring with these entries, oldest first (caller holds the writer lock); synced
    in full, like `drop` (it scrubs what the ring may not show)."""
    data = read_yaml(ring_path(memdir), {}) or {}
    size = data.get("size", RING_SIZE) if isinstance(data, dict) else RING_SIZE
    write_yaml(ring_path(memdir), {"size": size, "slots": slots[-size:]})


def _short(text: str, width: int = 120) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"
