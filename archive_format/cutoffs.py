"""Age cut-offs: a memory of a type, subtype or temporal class with a cut-off
(`recall.cutoffs` in memdir.yaml: emotion 48 h, date and financial 168 h, ephemeral 24 h) is
past it once it is older than that, and is then neither recalled nor put into wake or boot
(docs/RECALL.md section 3). One rule for recall and the documents, so they never disagree."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta


def past_cutoff(labels: Iterable[str | None], created: datetime, now: datetime,
                cutoffs: Mapping[str, timedelta]) -> str | None:  # fmt: skip
    """The label whose cut-off a memory created at `created` is past at `now`, or None.
    `labels` are its type, subtype and temporal class (any may be None)."""
    for label in labels:
        cutoff = cutoffs.get(str(label).lower()) if label else None
        if cutoff is not None and now - created > cutoff:
            return str(label)
    return None
