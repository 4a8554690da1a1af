"""What each view of `memdir ui` shows, gathered from the use cases (JSON-ready dicts).

Every view reads through its policy row (archive_format/visibility.py): `ui review` is the
review's, `ui recall` recall's (with the per-prompt block, context's), `ui memory` show's (and
log's, decay's), `ui links` the links row, `ui timeline` its own (masked like `list`), and
`ui health` shows no record's text. The writes are `memdir.api` methods of a user handle, so
a decision made on the page is the line `memdir confirm`/`reject`/`link` would append.
"""

from __future__ import annotations

import bisect
import re
import threading
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from memdir.api import Memdir as Handle
from memdir.archive_format import clock
from memdir.archive_format.errors import BadInputError, LifecycleError, MemdirError
from memdir.archive_format.fold import STATUSES, ArchiveView, MemoryState

TIMELINE_DAYS = 7  # days with something in them, newest first
PER_DAY = 50  # entries of one day shown (the day's counts count them all)
CURVE_POINTS = 80
LINK_TYPES_DECIDING = ("compatible",)


# the folded archive, kept between requests ---------------------------------------------------
@dataclass
class Snapshot:
    """The shelves as read once, and their fold at `now`: reused while no shelf changed and no
    line's time (created, at, expires) lies between `now` and the moment asked for — the fold
    compares only those with the clock, so it would come out the same."""

    signature: tuple[tuple[str, int, int, int], ...]
    lines: list[dict[str, Any]]
    moments: list[float]
    now: datetime
    view: ArchiveView
    rehearsals: dict[str, list[float]]

    def holds(self, signature: tuple[tuple[str, int, int, int], ...], now: datetime) -> bool:
        if signature != self.signature:
            return False
        return bisect.bisect_right(self.moments, now.timestamp()) == bisect.bisect_right(
            self.moments, self.now.timestamp()
        )


_snapshots: dict[Path, Snapshot] = {}
_snapshot_lock = threading.Lock()


def _signature(archive: Any) -> tuple[tuple[str, int, int, int], ...]:
    found = []
    for path in archive.shelves():
        try:
            stat = path.stat()
        except OSError:
            continue
        found.append((path.name, stat.st_size, stat.st_mtime_ns, stat.st_ino))
    return tuple(found)


def snapshot(archive: Any, now: datetime) -> Snapshot:
    """The archive folded at `now` (what `load_view` returns), read again only when needed."""
    from memdir.archive_format.decay import rehearsal_times
    from memdir.archive_format.fold import fold
    from memdir.archive_format.lifecycle import read_lines

    signature = _signature(archive)
    with _snapshot_lock:
        kept = _snapshots.get(archive.root)
        if kept is not None and kept.holds(signature, now):
            if kept.now != now:
                kept = Snapshot(kept.signature, kept.lines, kept.moments, now,
                                ArchiveView(kept.view.states, now, kept.view.ignored),
                                kept.rehearsals)  # fmt: skip
            return kept
    lines = list(read_lines(archive))
    found = {_epoch(value) for line in lines for name in ("created", "at", "expires", "forgotten")
             if isinstance(value := line.get(name), str)}  # fmt: skip
    moments = sorted(moment for moment in found if moment is not None)
    made = Snapshot(signature, lines, moments, now, fold(lines, now), rehearsal_times(lines))
    with _snapshot_lock:
        _snapshots[archive.root] = made
    return made


def _epoch(text: str) -> float | None:
    try:
        return clock.parse_time(text).timestamp()
    except (ValueError, MemdirError):
        return None


def folded(me: Handle, now: datetime) -> ArchiveView:
    return snapshot(me.archive, now).view


# review ------------------------------------------------------------------------------------
def review(me: Handle, now: datetime) -> dict[str, Any]:
    """`memdir review --json`, each memory in it with its history (`memdir log`'s steps)."""
    from memdir.usecases.inspection import history
    from memdir.usecases.review import review as gather

    view = folded(me, now)
    data = gather(me.archive, now, view).to_dict()
    cache: dict[str, list[dict[str, Any]]] = {}

    def with_history(side: dict[str, Any]) -> dict[str, Any]:
        memory_id = side["id"]
        if memory_id not in cache:
            state = view.states[memory_id]
            cache[memory_id] = history(state, view.incoming(memory_id))
        return {**side, "history": cache[memory_id]}

    data["queue"] = [with_history(row) for row in data["queue"]]
    data["stale_hard_facts"] = [with_history(row) for row in data["stale_hard_facts"]]
    data["unvouched_teachings"] = [with_history(row) for row in data["unvouched_teachings"]]
    for row in data["contradictions"]:
        row["sides"] = [with_history(side) for side in row["sides"]]
    for row in data["automatic_supersedes"]:
        row["old"], row["new"] = with_history(row["old"]), with_history(row["new"])
    return data


def decide(me: Handle, memory_id: str, action: str, body: dict[str, Any],
           now: datetime) -> dict[str, Any]:  # fmt: skip
    """The user's decision on one memory: confirm (with evidence), reject (with a reason),
    or a link to another memory (`compatible`: both hold; also sleep's supersede undone)."""
    reason = _text(body, "reason")
    if action == "confirm":
        done = me.confirm(memory_id, evidence=reason or None, now=now)
        return {**done.to_dict(), "action": "confirm"}
    if action == "reject":
        if not reason:
            raise BadInputError("a rejection needs a reason", hint='send {"reason": "…"}')
        done = me.reject(memory_id, reason=reason, now=now)
        return {**done.to_dict(), "action": "reject"}
    if action == "link":
        to = _text(body, "to")
        kind = _text(body, "type") or "related"
        if not to:
            raise BadInputError("a link needs the memory it points to", hint='send {"to": "m-…"}')
        event = me.link(memory_id, to, link_type=kind, now=now)
        return {"id": event.target, "event": event.id, "to": event.to, "type": event.link_type,
                "done": True, "action": "link"}  # fmt: skip
    raise BadInputError(f"no decision {action!r}", hint="confirm, reject or link")


def _text(body: dict[str, Any], name: str) -> str:
    value = body.get(name)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise BadInputError(f"{name} must be a string", hint=f'send {{"{name}": "…"}}')
    return value.strip()


# recall ------------------------------------------------------------------------------------
def recall(me: Handle, query: str, now: datetime, *, k: int = 10, profile: str | None = None,
           include_private: bool = False, include_expired: bool = False) -> dict[str, Any]:  # fmt: skip
    """`memdir recall QUERY --explain --json` (never recorded: a debugger that writes would
    change what it explains), the profile's weights, and the memories `memdir context` would
    carry (its journal turns are the context view's)."""
    from memdir.cli.explain import ScoreWeights

    found = me.recall(query, k=k, profile=profile, include_private=include_private,
                      include_expired=include_expired, record=False, now=now)  # fmt: skip
    weights = ScoreWeights.of(me.archive, found.profile)
    block = me.context(query, record=False, now=now, journal=False)
    return {
        "recall": found.to_dict(explain=True),
        "weights": {
            "components": dict(weights.weights),
            "scale": weights.scale,
            "decay_strength": weights.strength,
        },  # fmt: skip
        "context": {**block.to_dict(), "markdown": block.markdown()},
    }


def context(me: Handle, prompt: str, now: datetime, budget: int | None = None) -> dict[str, Any]:
    """`memdir context PROMPT --json --no-record`, with its markdown."""
    block = me.context(prompt, budget=budget, record=False, now=now)
    return {**block.to_dict(), "markdown": block.markdown()}


# one memory --------------------------------------------------------------------------------
def memory(me: Handle, given: str, now: datetime) -> dict[str, Any]:
    """`memdir show`, `log` and `decay` of one memory as the `ui memory` row shows it, with
    its links out and in and its decay curve."""
    from memdir.usecases.inspection import history

    view = folded(me, now)
    state = view.resolve(given)
    shown = state.shown_on("ui memory") or {}
    incoming = view.incoming(state.id)
    data: dict[str, Any] = {
        "memory": {**shown, "incoming_links": incoming},
        "log": {
            "id": state.id,
            "status": state.status,
            "text": state.text_on("ui memory"),
            "history": history(state, incoming),
        },  # fmt: skip
        "links": {"out": state.links, "in": incoming},
        "decay": None,
    }
    if state.memory is not None:
        data["decay"] = decay(me, view, state, now)
    return data


def decay(me: Handle, view: ArchiveView, state: MemoryState, now: datetime) -> dict[str, Any]:
    """`memdir decay ID --json`, and the curve: fidelity from creation to the last forecast
    horizon, with the rehearsals that lifted it (each point is the closed form at that moment,
    seeing only the rehearsals before it)."""
    from memdir.archive_format import decay as closed_form
    from memdir.indexers.decay import describe

    assert state.memory is not None
    settings = me.archive.settings.decay
    neighbours = closed_form.linked_memories(view, state, settings.reactivation)
    line = state.memory.to_line()
    rehearsals = snapshot(me.archive, now).rehearsals
    data = describe(me.archive, line, now, neighbours, rehearsals)
    data.update(text=state.text_on("ui memory"), status=state.status,
                visibility=state.memory.visibility)  # fmt: skip
    times = rehearsals.get(state.id, [])
    created = clock.parse_time(state.created)
    horizon = clock.parse_duration(closed_form.FORECAST[-2])  # 90 days ahead
    end = now + horizon
    span = max((end - created).total_seconds(), 1.0)
    points = []
    for step in range(CURVE_POINTS + 1):
        moment = created + timedelta(seconds=span * step / CURVE_POINTS)
        value = closed_form.fidelity(created, times, moment, line.get("store", "episodic"),
                                     data["intensity"], settings).value  # fmt: skip
        points.append({"at": clock.format_time(moment), "fidelity": round(value, 4),
                       "future": moment > now})  # fmt: skip
    data["curve"] = {
        "points": points,
        "rehearsals": [
            clock.format_time(closed_form.EPOCH + timedelta(seconds=t))
            for t in times
            if t <= now.timestamp()
        ],  # fmt: skip
        "now": clock.format_time(now),
    }
    return data


def links(me: Handle, given: str, now: datetime, depth: int = 2) -> dict[str, Any]:
    """`memdir links ID --depth N --json`."""
    from memdir.usecases.links import neighbourhood

    return neighbourhood(me.archive, given, now, depth, folded(me, now))


# the timeline ------------------------------------------------------------------------------
def timeline(me: Handle, now: datetime, *, person: str | None = None, type_: str | None = None,
             status: str | None = None, days: int = TIMELINE_DAYS) -> dict[str, Any]:  # fmt: skip
    """Memories and journal sessions by day, newest first: what was taught, inferred,
    observed, summarised, confirmed, rejected, expired, superseded and forgotten. `person`
    keeps the memories whose shown text names them (their name or an alias), `type_` a type
    (`FACT` or `FACT:preference`), `status` a current status."""
    from memdir.archive_format.people import names_by_person
    from memdir.usecases.journal import read_turns

    if status and status not in STATUSES:
        raise BadInputError(f"unknown status {status!r}", hint=f"one of {', '.join(STATUSES)}")
    if not 1 <= days <= 3660:
        raise BadInputError(f"days must be 1 to 3660, not {days}", hint="e.g. days=14")
    pattern = None
    if person:
        names = names_by_person(me.archive).get(person) or [person]
        pattern = re.compile(r"\b(" + "|".join(re.escape(name) for name in names) + r")\b", re.I)
    view = folded(me, now)
    entries: list[dict[str, Any]] = []
    for state in view:
        text = state.text_on("ui timeline", STATUSES)
        if text is None or not _kept(state, text, pattern, type_, status):
            continue
        entries += _happenings(state, text)
    sessions: dict[tuple[str, str], dict[str, Any]] = {}
    if not (person or type_ or status):
        for turn in read_turns(me.archive, now):
            day, session = str(turn["at"])[:10], str(turn.get("session") or "")
            row = sessions.setdefault((day, session), {"session": session, "turns": 0,
                                                       "roles": Counter(), "first": turn["at"],
                                                       "last": turn["at"]})  # fmt: skip
            row["turns"] += 1
            row["roles"][turn.get("role") or "?"] += 1
            row["last"] = turn["at"]
    by_day: dict[str, dict[str, Any]] = {}
    for entry in entries:
        by_day.setdefault(entry["at"][:10], {"memories": [], "sessions": []})["memories"].append(
            entry
        )
    for (day, _), row in sessions.items():
        row["roles"] = dict(row["roles"])
        by_day.setdefault(day, {"memories": [], "sessions": []})["sessions"].append(row)
    chosen = sorted(by_day, reverse=True)[:days]
    out = []
    for day in chosen:
        group = by_day[day]
        group["memories"].sort(key=lambda entry: (entry["at"], entry["id"]))
        counts = Counter(entry["what"] for entry in group["memories"])
        left_out = max(0, len(group["memories"]) - PER_DAY)
        group["memories"] = group["memories"][:PER_DAY]
        out.append({"day": day, "counts": dict(counts), "left_out": left_out, **group})
    return {"now": clock.format_time(now), "filters": {"person": person, "type": type_,
            "status": status}, "people": sorted(names_by_person(me.archive)), "days": out,
            "more": len(by_day) > len(chosen)}  # fmt: skip


def _kept(state: MemoryState, text: str, pattern: re.Pattern[str] | None, type_: str | None,
          status: str | None) -> bool:  # fmt: skip
    memory = state.memory
    if status and state.status != status:
        return False
    if type_ and (memory is None or type_ not in (memory.type_label, memory.type)):
        return False
    # a masked memory's text is not searched: a match would tell what it says
    shown_whole = memory is not None and text == memory.text
    return not (pattern and not (shown_whole and pattern.search(text)))


WRITTEN = {"teaching": "taught", "inference": "inferred", "observation": "observed",
           "derived": "summarised"}  # fmt: skip
HAPPENED = {"confirm": "confirmed", "reject": "rejected", "expire": "expired",
            "forget": "forgotten"}  # fmt: skip


def _happenings(state: MemoryState, text: str) -> list[dict[str, Any]]:
    """What happened to one memory, each on its day."""
    memory = state.memory
    base = {"id": state.id, "text": text, "status": state.status,
            "type": memory.type_label if memory else None,
            "visibility": memory.visibility if memory else "normal"}  # fmt: skip
    source = memory.source if memory else None
    author = memory.author if memory else None
    rows = [{**base, "at": state.created, "what": WRITTEN.get(source or "", "written"),
             "by": author}]  # fmt: skip
    for event in state.events:
        if event.op in HAPPENED:
            rows.append({**base, "at": event.at, "what": HAPPENED[event.op], "by": event.actor,
                         "reason": event.reason or event.evidence})  # fmt: skip
    if state.status == "expired" and memory is not None and memory.expires:
        if not any(row["what"] == "expired" for row in rows):
            rows.append({**base, "at": memory.expires, "what": "expired", "by": "ttl"})
    if state.forgotten_at and not any(row["what"] == "forgotten" for row in rows):
        rows.append({**base, "at": state.forgotten_at, "what": "forgotten", "by": None})
    if state.superseded_by:
        rows.append({**base, "at": _superseded_at(state), "what": "superseded",
                     "by": state.superseded_by})  # fmt: skip
    return rows


def _superseded_at(state: MemoryState) -> str:
    for event in state.events:
        if event.op == "link" and event.link_type == "superseded-by":
            return event.at
    return state.created


# people and the journal --------------------------------------------------------------------
def people(me: Handle) -> dict[str, Any]:
    """`memdir people list --json`."""
    from memdir.archive_format.people import read_people

    return {"people": read_people(me.archive)}


def journal(me: Handle, now: datetime, session: str | None, everything: bool) -> dict[str, Any]:
    """`memdir journal read --json` (`--all` with `everything`)."""
    return {"turns": me.journal_read(session=session, everything=everything, now=now)}


def memories(me: Handle, now: datetime, status: str | None, k: int) -> dict[str, Any]:
    """`memdir list --json` (newest first, at most k): the live memories, or one status."""
    from memdir.usecases.inspection import listed, statuses

    wanted = statuses([status] if status else None)
    chosen = listed(folded(me, now), wanted)
    return {"memories": [s.shown_on("list", wanted) for s in chosen[:k]], "total": len(chosen)}


# health ------------------------------------------------------------------------------------
def health(me: Handle, now: datetime) -> dict[str, Any]:
    """doctor's checks, verify's findings, the index's status, the last sleep and the sizes:
    counts and reports, no record's text (verify's messages name files, lines and ids)."""
    from memdir.archive_format.state import read_yaml
    from memdir.archive_format.verify import verify
    from memdir.usecases.doctor import diagnose

    archive = me.archive
    checks = [check.to_dict() for check in diagnose(archive)]
    files = _files(archive.root)
    kept = _verified.get(archive.root)
    if (
        kept is None or kept[0] != files
    ):  # verify reads only the files: the same files, the same report
        kept = (files, verify(archive))
        _verified[archive.root] = kept
    report = kept[1]
    slept = read_yaml(archive.state_dir / "sleep.yaml", {}) or {}
    return {
        "now": clock.format_time(now),
        "doctor": checks,
        "verify": {
            "clean": report.clean,
            "problems": report.problems,
            "warnings": report.warnings,
            "lines": report.lines,
        },  # fmt: skip
        "index": index_status(me),
        "last_sleep": slept or None,
        "sizes": sizes(archive.root),
    }


_verified: dict[Path, tuple[tuple[tuple[str, int, int], ...], Any]] = {}


def _files(root: Path) -> tuple[tuple[str, int, int], ...]:
    """Every file verify reads (the memdir's files, git's HEAD and index), by size and time."""
    found = []
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root).parts
        if relative[0] == ".memdir" or (
            relative[0] == ".git" and relative[1:] not in (("HEAD",), ("index",))
        ):
            continue
        try:
            stat = path.stat()
        except OSError:
            continue
        found.append((str(path), stat.st_size, stat.st_mtime_ns))
    return tuple(found)


def index_status(me: Handle) -> dict[str, Any] | None:
    """`memdir index --status --json`, or None while there is no index."""
    from memdir.archive_format.errors import MemdirError

    if not (me.archive.cache_dir / "index").is_dir():
        return None
    from memdir.indexers.index import MemoryIndex
    from memdir.indexers.storage import describe_backend

    try:
        index = MemoryIndex(me.archive)
        try:
            return {"backend": describe_backend(me.archive), **index.status()}
        finally:
            index.close()
    except MemdirError as error:
        return {"error": error.message}


def sizes(root: Path) -> dict[str, int]:
    """Bytes under the memdir's folders (the canonical ones and the .memdir/ cache)."""
    found: dict[str, int] = {}
    for name in ("shelves", "journal", "state", "documents", ".memdir"):
        folder = root / name
        total = 0
        if folder.is_dir():
            for path in folder.rglob("*"):
                try:
                    if path.is_file():
                        total += path.stat().st_size
                except OSError:
                    continue
        found[name] = total
    return found


def refuse_assistant(me: Handle) -> None:
    """The page is the user's surface: run as the assistant, it does not start."""
    if me.actor.assistant:
        raise LifecycleError(
            f"memdir ui acts as the user, and memdir runs as the assistant here "
            f"({me.actor.reason})",
            hint="the user starts `memdir ui` from their own shell; an assistant reads "
            "through `memdir mcp` or the commands",
        )
