"""Reading the fold as `memdir list` and `memdir log` do, for every surface (the CLI, the page):
the memories a filter selects, newest first, and one memory's story in time order."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime

from memdir.archive_format import clock
from memdir.archive_format.errors import BadInputError
from memdir.archive_format.fold import LIVE_STATUSES, STATUSES, ArchiveView, MemoryState


def statuses(given: Iterable[str] | None) -> set[str]:
    """The statuses a list asks for: the live ones when none is given; `all` is every one."""
    wanted: set[str] = set(given or LIVE_STATUSES)
    if "all" in wanted:
        wanted = set(STATUSES)
    unknown = wanted - set(STATUSES)
    if unknown:
        raise BadInputError(
            f"unknown status {sorted(unknown)[0]!r}",
            hint=f"use one of {', '.join(STATUSES)}, all",
        )
    return wanted


def listed(
    view: ArchiveView,
    wanted: set[str],
    source: str | None = None,
    type_: str | None = None,
    persona: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
) -> list[MemoryState]:
    """The memories of `view` in the `wanted` statuses that the filters keep and a list may
    show (visibility), newest first."""
    chosen = [
        state
        for state in view
        if _matches(state, wanted, source, type_, persona, since, until)
        and state.text_on("list", wanted) is not None
    ]
    chosen.sort(key=lambda state: (clock.parse_time(state.created), state.id), reverse=True)
    return chosen


def _matches(state: MemoryState, statuses: set[str], source: str | None, type_: str | None,
             persona: str | None, since: datetime | None, until: datetime | None) -> bool:  # fmt: skip
    memory = state.memory
    if state.status not in statuses:
        return False
    if memory is None:
        return not (source or type_ or persona)
    if source and memory.source != source:
        return False
    if type_ and memory.type_label != type_ and memory.type != type_:
        return False
    if persona and memory.personas and persona not in memory.personas:
        return False
    created = clock.parse_time(state.created)
    if since and created < since:
        return False
    return not (until and created > until)


def history(
    state: MemoryState, incoming: Sequence[dict[str, str]] = ()
) -> list[dict[str, str | None]]:
    """A memory's whole story in time order: written, events, links to it from other memories
    (`incoming`, ArchiveView.incoming) and derived transitions."""
    steps: list[dict[str, str | None]] = []
    memory = state.memory
    written = f"{memory.source} by {memory.author}" if memory else "written (text forgotten)"
    evidence = memory.meta.get("evidence") if memory is not None and memory.meta else None
    if evidence:  # a guarded teaching's quote, a derived memory's source turns
        written += f"; {evidence}"
    steps.append({"at": state.created, "what": "created", "detail": written})
    if memory is not None and memory.expires and state.status in ("provisional", "expired"):
        steps.append(
            {"at": memory.expires, "what": "ttl-ends", "detail": "expires unless confirmed"}
        )
    for event in state.events:
        detail = (
            event.reason
            or event.evidence
            or (f"{event.link_type} → {event.to}" if event.to else None)
        )
        steps.append(
            {
                "at": event.at,
                "what": event.op,
                "detail": f"by {event.actor}" + (f": {detail}" if detail else ""),
            }
        )
    for link in incoming:
        steps.append(
            {"at": link["at"], "what": "linked-from", "detail": f"{link['type']} ← {link['from']}"}
        )
    if state.superseded_by:
        steps.append({"at": None, "what": "superseded", "detail": f"by {state.superseded_by}"})
    steps.sort(
        key=lambda step: (
            clock.parse_time(step["at"]) if step["at"] else clock.parse_time("8999-12-31")
        )
    )
    return steps
