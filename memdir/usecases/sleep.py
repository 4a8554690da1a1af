"""Sleep: the nightly maintenance run for cron — one locked, idempotent pass.

1. expire: an `expire` event for every inference past its TTL;
2. dream: consolidate closed groups of journal turns (memdir/usecases/dream.py); then use
   feedback: which delivered memories the assistant's replies used (memdir/usecases/healer.py);
3. index: bring the derived indexes up to date (the new summaries included);
4. decay bookkeeping: fidelity of every live memory at *now* (reported, never stored: decay is
   a closed form of timestamps, so it does not matter how often sleep runs);
5. relink: typed links between memories close in meaning — `resonates` when their affects
   resonate, `contradiction-candidate` when one negates or opposes the other;
6. documents: refresh documents/boot.md and write documents/wake.md;
7. a journal entry about the run (only when it changed something) and state/sleep.yaml.

The maintenance lock (.memdir/sleep.lock) keeps a second sleep or dream out for the whole run;
each write also takes the writer lock, so teach, journal add and recall keep working meanwhile.
Running it twice in a row, or twice at once, writes the changes once.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from memdir.archive_format import journal
from memdir.archive_format.clock import format_time, parse_time
from memdir.archive_format.decay import intensity
from memdir.archive_format.fold import SUPERSEDED_BY, ArchiveView, MemoryState
from memdir.archive_format.lifecycle import add_links, expire, load_view
from memdir.archive_format.memdir import Memdir
from memdir.archive_format.state import read_yaml, write_yaml
from memdir.indexers.distill import CHANGE_COSINE, SUPERSEDE_COSINE
from memdir.indexers.text import RESTATEMENT_NEGATION
from memdir.usecases import documents
from memdir.usecases.dream import DreamReport, dream, maintenance_lock, words
from memdir.usecases.healer import HealReport, heal
from memdir.words import counted

if TYPE_CHECKING:
    from memdir.indexers.index import MemoryIndex

NEIGHBOURS = 5
RELINK_LIMIT = 5000  # fresh memories compared per run (the newest)
RELINK_COLUMNS = 16384  # memories compared with them at a time (relink's working memory)
RESONANCE_COSINE = 0.55  # MiniLM cosine: clearly about the same thing
RESONANCE_AFFECT = 0.6
# 0.3 let a single NRC lexicon hit ("gardening": joy, arousal 0.3) count as feeling: 40 neutral
# fillers got 135 links in one night (benchmarks/bench_relink.py)
MIN_INTENSITY = 0.4
ELABORATES_COSINE = 0.45
ELABORATION_KEPT = 0.5  # share of the older memory's content words the newer one repeats
ELABORATION_WORDS = 3  # content words the newer one adds
LINKS_PER_NIGHT = 2  # new `resonates` links one memory may gain in one sleep, closest first
CONTRADICTION_COSINE = 0.6
FADED = 0.3


@dataclass
class SleepReport:
    now: datetime
    dry_run: bool
    expired: list[str] = field(default_factory=list)
    dream: DreamReport = field(default_factory=DreamReport)
    use: HealReport = field(default_factory=HealReport)
    decay: dict[str, Any] = field(default_factory=dict)
    links: list[dict[str, str]] = field(default_factory=list)
    boot: str | None = None
    wake_tokens: int | None = None
    entry: str | None = None
    seconds: float = 0.0

    @property
    def changed(self) -> bool:
        return bool(self.expired or self.dream.changed or self.links or self.use.used)

    def to_dict(self) -> dict[str, Any]:
        return {
            "now": format_time(self.now),
            "dry_run": self.dry_run,
            "changed": self.changed,
            "expired": self.expired,
            "dream": self.dream.to_dict(),
            "use": self.use.to_dict(),
            "decay": self.decay,
            "links": self.links,
            "boot": self.boot,
            "wake_tokens": self.wake_tokens,
            "entry": self.entry,
            "seconds": round(self.seconds, 3),
        }


def _due_to_expire(view: ArchiveView) -> list[str]:
    """What `expire` would record (for --dry-run)."""
    return [
        state.id
        for state in view
        if state.status == "expired" and not any(e.op == "expire" for e in state.events)
    ]


WEAKEST_SURFACE = "sleep --json"  # visibility.SURFACES' row for decay.weakest


def decay_summary(
    memdir: Memdir, index: MemoryIndex, view: ArchiveView, now: datetime
) -> dict[str, Any]:
    """Fidelity of every live memory at `now`: how many there are, the mean, the faded ones."""
    from memdir.indexers.decay import memory_fidelity, reactivations_of

    settings = memdir.settings.decay
    live = [state for state in view.live() if state.memory is not None]
    catalogued = index.catalog.memories_by_id(state.id for state in live)
    affects = index.affects_of(list(catalogued.values()))
    times = index.rehearsals()
    partial = reactivations_of(index.catalog, catalogued, settings.reactivation)
    scored = []
    for state in live:
        assert state.memory is not None
        line = state.memory.to_line()
        value = memory_fidelity(line, affects.get(state.id), times, now, settings,
                                partial.get(state.id, ())).value  # fmt: skip
        text = state.text_on(WEAKEST_SURFACE)  # private and sealed text stays in (masked)
        if text is not None:
            scored.append((value, state.id, text))
    scored.sort()
    mean = sum(value for value, _, _ in scored) / len(scored) if scored else None
    return {
        "memories": len(scored),
        "mean_fidelity": round(mean, 4) if mean is not None else None,
        "faded": sum(1 for value, _, _ in scored if value < FADED),
        "weakest": [
            {"id": memory_id, "fidelity": round(value, 4), "text": documents.short_text(text, 80)}
            for value, memory_id, text in scored[:3]
        ],
    }


def _opposed(a_text: str, b_text: str, a: dict[str, Any], b: dict[str, Any]) -> bool:
    """One says no where the other does not, or their valences clearly disagree."""
    if bool(RESTATEMENT_NEGATION.search(a_text)) != bool(RESTATEMENT_NEGATION.search(b_text)):
        return True
    va, vb = float(a.get("valence") or 0.0), float(b.get("valence") or 0.0)
    return va * vb < 0 and min(abs(va), abs(vb)) >= MIN_INTENSITY


def relink(
    index: MemoryIndex, view: ArchiveView, since: datetime | None
) -> list[tuple[str, str, str]]:
    """New typed links (from, to, type) between live memories written since `since` (all of
    them when None; at most RELINK_LIMIT, newest first) and their nearest live neighbours.
    Pairs already linked, and pairs sharing a supersede key, are skipped. An automatic
    supersede is a `superseded-by` link from the older memory to the newer."""
    import numpy as np

    live = {state.id: state for state in view.live() if state.memory is not None}
    catalogued = index.catalog.memories_by_id(live)
    everyone = list(catalogued.values())
    matrix, cached = index.vector_matrix([memory.iid for memory in everyone])
    ids = [memory.id for memory, has in zip(everyone, cached.tolist(), strict=True) if has]
    if len(ids) < 2:
        return []
    if not cached.all():
        matrix = matrix[cached]
    matrix /= np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
    fresh = [row for row, memory_id in enumerate(ids)
             if since is None or parse_time(live[memory_id].created) > since]  # fmt: skip
    fresh = sorted(fresh, key=lambda row: live[ids[row]].created)[-RELINK_LIMIT:]
    linked = {frozenset((state.id, link["to"])) for state in view for link in state.links}
    pairs: list[tuple[float, MemoryState, MemoryState]] = []
    neighbours = min(NEIGHBOURS, len(ids) - 1)
    for begin in range(0, len(fresh), 512):
        rows = fresh[begin : begin + 512]
        cosines, nearest = _nearest(matrix, np.asarray(rows), neighbours)
        for position, row in enumerate(rows):
            for cosine, other in zip(cosines[position].tolist(), nearest[position].tolist(),
                                     strict=True):  # fmt: skip
                newer, older = sorted((live[ids[row]], live[ids[other]]),
                                      key=lambda state: (state.created, state.id), reverse=True)  # fmt: skip
                pairs.append((cosine, newer, older))
    # type labels only for the pairs close enough to be a supersede
    floor = min(SUPERSEDE_COSINE, CHANGE_COSINE)
    close = {state.id for cosine, *both in pairs if cosine >= floor for state in both}
    labels = _labels(index, [catalogued[memory_id] for memory_id in close])
    paired = {state.id for _, *both in pairs for state in both}  # (not every live memory)
    affects = index.affects_of([catalogued[memory_id] for memory_id in paired])
    proposed: list[tuple[float, str, str, str]] = []
    for cosine, newer, older in pairs:
        kind = _link_kind(newer, older, cosine, affects, linked, labels)
        if kind is None:
            continue
        linked.add(frozenset((newer.id, older.id)))
        if kind == SUPERSEDED_BY:
            proposed.append((cosine, older.id, newer.id, kind))
        else:
            proposed.append((cosine, newer.id, older.id, kind))
    # the closest pairs first; a memory gains at most LINKS_PER_NIGHT `resonates` or
    # `elaborates` links per run (either end); contradiction candidates are all kept, and a
    # memory gets one `superseded-by` link
    found: list[tuple[str, str, str]] = []
    gained: dict[str, int] = {}
    superseded: set[str] = set()  # one successor per memory: the closest restatement
    for _, one, other, kind in sorted(proposed, key=lambda p: (-p[0], p[1], p[2])):
        if kind == SUPERSEDED_BY:
            if one not in superseded:
                superseded.add(one)
                found.append((one, other, kind))
            continue
        if kind == "contradiction-candidate":
            found.append((one, other, kind))
            continue
        if max(gained.get(one, 0), gained.get(other, 0)) >= LINKS_PER_NIGHT:
            continue
        gained[one] = gained.get(one, 0) + 1
        gained[other] = gained.get(other, 0) + 1
        found.append((one, other, kind))
    return found


def _nearest(matrix: Any, rows: Any, count: int, columns: int = 0) -> tuple[Any, Any]:
    """The `count` rows of `matrix` closest to each of `rows` by inner product (not itself): their
    cosines and row numbers (unordered). Compared a slice of RELINK_COLUMNS rows at a time, so
    the products stay small whatever the archive's size (a million memories: a few hundred MB,
    not the 8 GB of every product of 512 rows at once); `columns` sets another slice."""
    import numpy as np

    columns = columns or RELINK_COLUMNS
    best = np.full((len(rows), count), -np.inf, dtype=np.float32)
    where = np.zeros((len(rows), count), dtype=np.int64)
    queries = matrix[rows]  # (a copy: taken once, not per slice)
    for start in range(0, len(matrix), columns):
        similarity = queries @ matrix[start : start + columns].T
        own = (rows >= start) & (rows < start + similarity.shape[1])
        similarity[np.nonzero(own)[0], rows[own] - start] = -np.inf  # not oneself
        take = min(count, similarity.shape[1])
        top = np.argpartition(-similarity, take - 1, axis=1)[:, :take]
        scores = np.concatenate([best, np.take_along_axis(similarity, top, axis=1)], axis=1)
        places = np.concatenate([where, top + start], axis=1)
        keep = np.argpartition(-scores, count - 1, axis=1)[:, :count]
        best = np.take_along_axis(scores, keep, axis=1)
        where = np.take_along_axis(places, keep, axis=1)
    return best, where


def _labels(index: MemoryIndex, memories: list[Any]) -> dict[str, str | None]:
    """Each memory's effective type label: what the user gave, else the distilled one."""
    from memdir.indexers.distill import effective

    distilled = index.distilled_of(memories)
    labels: dict[str, str | None] = {}
    for memory in memories:
        given = effective(memory.line, distilled.get(memory.line["id"]))
        kind, subtype = given["type"], given["subtype"]
        labels[memory.line["id"]] = f"{kind}:{subtype}" if kind and subtype else kind
    return labels


def _same_statement(
    newer: MemoryState, older: MemoryState, cosine: float, labels: dict[str, str | None]
) -> bool:
    """Whether `newer` restates what `older` says about the same subject (automatic supersede:
    docs/CONTINUITY.md): the same supersedable type, subject and personas, close in meaning,
    and no supersede key on either (the user's key decides those)."""
    from memdir.indexers.distill import replaces

    assert newer.memory is not None and older.memory is not None
    if newer.memory.key or older.memory.key:
        return False
    if newer.memory.store == older.memory.store == "episodic":
        return False  # episodes pile up: two conversations on two days are both what was said
    if set(newer.memory.personas) != set(older.memory.personas):
        return False
    return replaces(older.memory.text, labels.get(older.id), newer.memory.text,
                    labels.get(newer.id), cosine)  # fmt: skip


def _link_kind(
    newer: MemoryState,
    older: MemoryState,
    cosine: float,
    affects: dict[str, dict[str, Any]],
    linked: set[frozenset[str]],
    labels: dict[str, str | None],
) -> str | None:
    """The link type for a close pair of live memories, or None."""
    assert newer.memory is not None and older.memory is not None
    if frozenset((newer.id, older.id)) in linked:
        return None  # linked already: by a dream (summary and promotion), the user or us
    if newer.memory.key and newer.memory.key == older.memory.key:
        return None  # supersede handles these
    if _same_statement(newer, older, cosine, labels):
        both_taught = newer.memory.source == older.memory.source == "teaching"
        return SUPERSEDED_BY if both_taught else "contradiction-candidate"
    a, b = affects.get(newer.id, {}), affects.get(older.id, {})
    if cosine >= CONTRADICTION_COSINE and _opposed(newer.memory.text, older.memory.text, a, b):
        return "contradiction-candidate"
    return affinity(newer.memory.text, older.memory.text, cosine, a, b)


@dataclass(frozen=True)
class Thresholds:
    """Where relink draws its lines (chosen on tests/fixtures/relink-pairs.jsonl by
    benchmarks/bench_relink.py; docs/CONTINUITY.md has the sweep)."""

    resonance_cosine: float = RESONANCE_COSINE
    min_intensity: float = MIN_INTENSITY
    resonance_affect: float = RESONANCE_AFFECT
    elaborates_cosine: float = ELABORATES_COSINE


def affinity(newer: str, older: str, cosine: float, newer_affect: dict[str, Any],
             older_affect: dict[str, Any], limits: Thresholds = Thresholds()) -> str | None:  # fmt: skip
    """`resonates` (close in meaning, both felt, the feelings alike), `elaborates` (close in
    meaning, the newer keeps most of the older's content words and adds ELABORATION_WORDS of
    its own) or None, for a pair that is neither a supersede nor a contradiction."""
    from memdir.indexers.affect import Affect, resonance

    if (
        cosine >= limits.resonance_cosine
        and min(intensity(newer_affect), intensity(older_affect)) >= limits.min_intensity
        and resonance(Affect.from_dict(newer_affect), Affect.from_dict(older_affect))
        >= limits.resonance_affect
    ):
        return "resonates"
    if cosine >= limits.elaborates_cosine:
        mine, theirs = words(newer), words(older)
        kept = len(mine & theirs) / len(theirs) if theirs else 0.0
        if kept >= ELABORATION_KEPT and len(mine - theirs) >= ELABORATION_WORDS:
            return "elaborates"
    return None


def sleep(memdir: Memdir, now: datetime, dry_run: bool = False) -> SleepReport:
    """One maintenance run at `now`; with `dry_run` nothing canonical is written."""
    from memdir.usecases.recall import fresh_index

    began = time.perf_counter()
    report = SleepReport(now, dry_run)
    state_path = memdir.state_dir / "sleep.yaml"
    with maintenance_lock(memdir):
        previous = read_yaml(state_path, {}) or {}
        since = parse_time(previous["last_run"]) if previous.get("last_run") else None
        if since is not None and since > now:
            since = None  # replaying the past (--now): look at everything
        if dry_run:
            report.expired = _due_to_expire(load_view(memdir, now))
        else:
            report.expired = expire(memdir, now)
        report.dream = dream(memdir, now, dry_run=dry_run)
        report.use = heal(memdir, now, dry_run=dry_run)
        index = fresh_index(memdir)
        try:
            view = load_view(memdir, now)
            report.decay = decay_summary(memdir, index, view, now)
            links = relink(index, view, since)
        finally:
            index.close()
        report.links = [{"from": a, "to": b, "type": kind} for a, b, kind in links]
        if not dry_run:
            if links:
                add_links(memdir, links, now)
            documents.scrub_ring(memdir, now)
            briefing = documents.gather(memdir, now)
            report.boot = str(
                documents.refresh_boot(memdir, now, briefing).relative_to(memdir.root)
            )
            report.wake_tokens = documents.write_wake(memdir, now, None, briefing).tokens
            if report.changed:
                entry = journal.write_entry(memdir, _entry_text(report), now, "memdir", "sleep")
                report.entry = str(entry.path.relative_to(memdir.root))
            report.seconds = time.perf_counter() - began
            write_yaml(state_path, {"last_run": format_time(now), "summary": _counts(report)})
    report.seconds = time.perf_counter() - began
    return report


def _counts(report: SleepReport) -> dict[str, Any]:
    dreamt = report.dream.to_dict()
    return {
        "expired": len(report.expired),
        "summaries": len(report.dream.written),
        "summarised_turns": dreamt["summarised_turns"],
        "withheld_turns": dreamt["withheld_turns"],
        "links": len(report.links),
        "used": report.use.used,
        "mean_fidelity": report.decay.get("mean_fidelity"),
        "seconds": round(report.seconds, 3),
    }


def _entry_text(report: SleepReport) -> str:
    counts = _counts(report)
    lines = [f"Sleep at {format_time(report.now)}."]
    if report.expired:
        lines.append(f"- {counted(len(report.expired), 'inference')} expired unconfirmed: "
                     + ", ".join(report.expired))  # fmt: skip
    if report.dream.changed:
        lines.append(
            f"- dreamt {counted(counts['summaries'], 'memory')} from "
            f"{counted(counts['summarised_turns'], 'turn')}"
            f" ({counts['withheld_turns']} private, sealed or secret turns withheld)"
        )
    if report.use.paired:
        lines.append(f"- replies used {report.use.used} of the {report.use.delivered} memories "
                     f"delivered to {counted(report.use.paired, 'reply', 'replies')}")  # fmt: skip
    if report.links:
        kinds = sorted({link["type"] for link in report.links})
        lines.append(f"- linked {counted(len(report.links), 'pair')}: {', '.join(kinds)}")
    decay = report.decay
    if decay.get("memories"):
        lines.append(f"- fidelity: mean {decay['mean_fidelity']}, {decay['faded']} of "
                     f"{counted(decay['memories'], 'memory')} below {FADED}")  # fmt: skip
    return "\n".join(lines)
