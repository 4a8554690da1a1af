"""Which results sit next to each other in their conversation (docs/MCP.md, the context block).

A result's `beside` is the pair (the memory just before it, the memory just after it) in its
session's time order, as iids (-1: none, or no session). They come from the memory table's
`near` (its same-session neighbours within ±2, in session order), so finding them reads no
memory text: one look-up of the results' records. The per-prompt block joins results that sit
side by side into one entry (memdir/usecases/prompt.py); recall's ranking does not use it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .interface import RecallIndex
    from .result import Candidate


def mark_beside(index: RecallIndex, results: list[Candidate]) -> None:
    """Set each result's `beside` (see the module doc)."""
    import numpy as np

    if not results:
        return
    iids = np.asarray([c.memory.iid for c in results], dtype=np.int64)
    records = index.memory_table.get(iids)
    near = records["near"]
    valid = near >= 0
    if not valid.any():
        return
    theirs = index.memory_table.get(np.where(valid, near, 0).reshape(-1)).reshape(near.shape)
    mine = records["created"][:, None]
    # session order is time, then iid (catalog.session_rows)
    before = valid & ((theirs["created"] < mine)
                      | ((theirs["created"] == mine) & (near < iids[:, None])))  # fmt: skip
    after = valid & ~before
    for row, candidate in enumerate(results):
        earlier = near[row][before[row]]
        later = near[row][after[row]]
        candidate.beside = (int(earlier[-1]) if len(earlier) else -1,
                            int(later[0]) if len(later) else -1)  # fmt: skip
