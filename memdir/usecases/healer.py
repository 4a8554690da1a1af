"""Use feedback, the healer (ANIMA's "did the model use the memories it was given?"): after the
assistant replies, which of the memories the per-prompt block delivered did the reply use?

A delivery is a `recall` line with `via: context` (memdir/usecases/prompt.py records one each
time `memdir context` shows a block). `heal` pairs each assistant turn of the journal with the
delivery just before it (at most PAIR_MINUTES earlier, and after the previous assistant turn)
and measures each delivered memory against the reply (`use_share`: the share of the memory's
content words the reply holds, names and numbers counting double); a memory at or above
USED_SHARE was used. A used memory is rehearsed — a `recall` line with `via: use` at the
reply's time, which decay counts like any recall — and the index keeps, per memory, how often
it was delivered and how often used: recall's `use` component (weight 0 in every profile:
off until measured to help, docs/RECALL.md). The threshold was chosen on
tests/fixtures/use-labelled.jsonl (benchmarks/use_accuracy.py; docs/CONTINUITY.md)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from memdir.archive_format import journal, lifecycle
from memdir.archive_format.clock import format_time, parse_time
from memdir.archive_format.memdir import Memdir
from memdir.archive_format.state import read_yaml, write_yaml
from memdir.archive_format.tombstones import writing
from memdir.usecases.quote_guard import STEM, content_words

PAIR_MINUTES = 30  # a reply pairs with a delivery at most this long before it
USED_SHARE = 0.5  # the share of a memory's weighted content words a reply must hold
SPECIFIC = 2.0  # weight of a name or number among a memory's content words
STATE = "heal.yaml"  # state/: the last assistant turn the healer looked at
_SPECIFIC = re.compile(r"(?<![.!?]\s)(?<!^)\b([A-Z][\w'’-]+|\d[\d.,:]*)")


def _specific(text: str) -> set[str]:
    """The stems of a text's names (capitalised, not opening a sentence) and numbers."""
    return {content[:STEM] for word in _SPECIFIC.findall(text)
            for content in content_words(word)} | {w for w in re.findall(r"\d[\d.,:]*", text)}  # fmt: skip


def use_share(memory: str, reply: str) -> float:
    """The weighted share of `memory`'s content words that `reply` holds (0..1)."""
    words = content_words(memory) | set(re.findall(r"\d[\d.,:]*", memory))
    if not words:
        return 0.0
    special = _specific(memory)
    said = content_words(reply) | set(re.findall(r"\d[\d.,:]*", reply))
    weight = {word: SPECIFIC if word in special else 1.0 for word in words}
    return sum(w for word, w in weight.items() if word in said) / sum(weight.values())


def used(memory: str, reply: str) -> bool:
    return use_share(memory, reply) >= USED_SHARE


@dataclass
class HealReport:
    replies: int = 0  # assistant turns looked at
    paired: int = 0  # of them, replies that followed a delivery
    delivered: int = 0  # memories delivered to those replies
    used: int = 0  # of them, used
    pairs: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"replies": self.replies, "paired": self.paired, "delivered": self.delivered,
                "used": self.used, "pairs": self.pairs}  # fmt: skip


def _deliveries(lines: list[dict[str, Any]], since: datetime,
                until: datetime) -> list[tuple[datetime, list[str]]]:  # fmt: skip
    """The per-prompt block's deliveries (recall lines via context) in [since, until]."""
    found = []
    for line in lines:
        at = parse_time(line["at"])
        if line["via"] == "context" and since <= at <= until:
            found.append((at, list(line["memories"])))
    return sorted(found, key=lambda pair: pair[0])


def heal(memdir: Memdir, now: datetime, dry_run: bool = False) -> HealReport:
    """Look at the assistant turns journalled since the last run (up to `now`): pair each with
    the delivery before it, record which memories it used (a rehearsal each)."""
    state_path = memdir.state_dir / STATE
    last = (read_yaml(state_path, {}) or {}).get("last")
    start = parse_time(str(last)) if last else None
    book = journal.read_journal(memdir, until=now,
                                since=start - timedelta(minutes=PAIR_MINUTES) if start else None)  # fmt: skip
    turns = [t for t in book.turns if t.moment <= now]
    replies = [t for t in turns if t.role == "assistant" and (start is None or t.moment > start)]
    report = HealReport(replies=len(replies))
    if not replies:
        return report
    window = timedelta(minutes=PAIR_MINUTES)
    from memdir.indexers import uses

    lines = uses.via_lines(memdir)  # read once: the deliveries, and the counts after
    deliveries = _deliveries(lines, replies[0].moment - window, replies[-1].moment)
    # only the delivered memories are folded (through the id cache), not the whole archive
    view = lifecycle.view_of(memdir, {m for _, ids in deliveries for m in ids}, now)
    new = {turn.id for turn in replies}
    rehearsed: list[list[str]] = []  # the memories of each `via: use` line this run writes
    previous: dict[str, datetime] = {}  # session -> its last assistant turn so far
    for turn in turns:
        if turn.role != "assistant":
            continue
        after = max(turn.moment - window, previous.get(turn.session, turn.moment - window))
        previous[turn.session] = turn.moment
        if turn.id not in new:
            continue
        before = [d for d in deliveries if after < d[0] <= turn.moment]
        if not before:
            continue
        _, delivered = before[-1]
        texts = {}
        for memory_id in delivered:
            state = view.states.get(memory_id)
            text = state.text_on("context") if state is not None else None
            if text is not None:
                texts[memory_id] = text
        reply = turn.text_on("dream")  # the reply's own words, as sleep's dream may read them
        if reply is None or not texts:
            continue
        chosen = [memory_id for memory_id, text in texts.items() if used(text, reply)]
        report.paired += 1
        report.delivered += len(texts)
        report.used += len(chosen)
        report.pairs.append({"turn": turn.id, "at": turn.at, "delivered": list(texts),
                             "used": chosen})  # fmt: skip
        if chosen and not dry_run:
            rehearsed.append(chosen)
            lifecycle.record_recall(memdir, chosen, turn.moment, "memdir",
                                    f"used in a reply ({len(chosen)})", via="use")  # fmt: skip
    if not dry_run:
        with writing(memdir):
            write_yaml(state_path, {"last": format_time(replies[-1].moment)})
        uses.refresh(memdir, lines + [{"via": "use", "memories": m} for m in rehearsed])
    return report
