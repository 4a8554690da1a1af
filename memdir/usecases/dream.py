"""Dream: consolidate the raw journal into derived memories, with backlinks both ways.

1. Turns no dream has handled yet are grouped: by explicit topic; otherwise per session, a new
   group starting after a gap of more than `gap` (45 min), or of more than `quick_gap` (10 min)
   when the turn shares less than `min_overlap` (8 %) of its words with the group so far.
2. Only closed groups are consolidated (the last turn is at least `gap` old), so a conversation
   in progress is not cut in two.
3. Each group's normal, non-secret turns are summarised (extractively, or by the configured
   command) into a `derived` `episodic` memory that links to them (`summarises`); private
   and sealed turns are counted (`withheld`) and never summarised; secret turns stay out of
   dreams altogether (they never leave this machine, and a digest is committed). A group with at
   least two summarisable turns and a topic signal (an explicit topic, or a word that recurs
   across turns) is also promoted: a `derived` `semantic` memory about the topic.
4. A `digest` line in the journal records the group: the turn → summary backlink, and what
   makes a second run over the same journal add nothing.
"""

from __future__ import annotations

import logging
import math
import re
import shlex
import subprocess
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from memdir.archive_format import journal
from memdir.archive_format.clock import format_time
from memdir.archive_format.errors import BadInputError
from memdir.archive_format.journal import Digest, Turn
from memdir.archive_format.lifecycle import add_memories, load_view
from memdir.archive_format.lock import WriterLock
from memdir.archive_format.memdir import Memdir
from memdir.archive_format.records import Memory, new_memory
from memdir.archive_format.settings import DreamSettings
from memdir.archive_format.tombstones import writing
from memdir.archive_format.visibility import summary_visibility
from memdir.indexers.text import CONVERSATION_STOP_WORDS
from memdir.usecases.provenance import normalise, own_words

log = logging.getLogger("memdir")

MAX_SENTENCES = 3
MAX_SENTENCE_CHARS = 200
SUMMARY_LINK = journal.SUMMARY_LINK
PROMOTED_LINK = "promoted-from"
ROLE_LABELS = {"user": "User", "assistant": "Assistant", "tool": "Tool"}

# Common words that recur in any conversation without being what it is about.
GENERIC = frozenset(
    """about after again almost already always another anything around away back before best
    better big came come comes day days does done easy enough even evening feel feeling feels
    felt fine first give glad going good great hard help here hope keep kind last less little
    long look looks love lot lots maybe mean might more morning most much need next nice night
    okay once people perfect plan pretty quite really right seems since someone something
    soon sorry sound sounds start still stuff sure take tell than thing things think time
    times tonight tried try trying use used very want wanted week weeks well went will wish
    work worked year years""".split()
)
_WORD = re.compile(r"[a-z0-9][a-z0-9'’-]*[a-z0-9]|[a-z0-9]")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def maintenance_lock(memdir: Memdir, timeout: float | None = None) -> WriterLock:
    """One dream or sleep at a time (held for the whole run; writes also take the writer lock)."""
    return WriterLock(memdir.cache_dir / "sleep.lock", timeout)


def words(text: str) -> set[str]:
    """Content words: lower case, no stop words, longer than two characters."""
    return {
        w for w in _WORD.findall(text.lower()) if len(w) > 2 and w not in CONVERSATION_STOP_WORDS
    }


@dataclass
class Group:
    """Turns consolidated together."""

    key: str
    topic: str | None
    turns: list[Turn] = field(default_factory=list)
    vocabulary: set[str] = field(default_factory=set)

    @property
    def last(self) -> datetime:
        return self.turns[-1].moment

    @property
    def summarisable(self) -> list[Turn]:
        return [turn for turn in self.turns if turn.summarisable]

    @property
    def withheld(self) -> list[Turn]:
        return [turn for turn in self.turns if not turn.summarisable]

    def add(self, turn: Turn) -> None:
        self.turns.append(turn)
        self.vocabulary |= words(turn.text)


def group_turns(turns: Iterable[Turn], rules: DreamSettings) -> list[Group]:
    """Group turns (in time order): by explicit topic, else per session by gaps and overlap."""
    topics: dict[str, Group] = {}
    sessions: dict[str, list[Group]] = {}
    for turn in turns:
        if turn.topic:
            key = turn.topic.casefold()
            topics.setdefault(key, Group(f"topic:{key}", turn.topic)).add(turn)
            continue
        groups = sessions.setdefault(turn.session, [])
        if not groups or _starts_new_group(groups[-1], turn, rules):
            groups.append(Group(f"session:{turn.session}:{turn.at}", None))
        groups[-1].add(turn)
    found = list(topics.values()) + [g for groups in sessions.values() for g in groups]
    return sorted(found, key=lambda group: (group.turns[0].moment, group.key))


def _starts_new_group(group: Group, turn: Turn, rules: DreamSettings) -> bool:
    pause = turn.moment - group.last
    if pause > rules.gap:
        return True
    if pause > rules.quick_gap:
        own = words(turn.text)
        overlap = len(own & group.vocabulary) / len(own) if own else 1.0
        return overlap < rules.min_overlap
    return False


def topic_signal(group: Group) -> str | None:
    """An explicit topic, else the content word found in most summarisable turns (at least 2)."""
    if group.topic:
        return group.topic
    counts: Counter[str] = Counter()
    for turn in group.summarisable:
        counts.update(words(turn.text))
    recurring = [(n, w) for w, n in counts.items() if n >= 2 and len(w) > 3 and w not in GENERIC]
    if not recurring:
        return None
    return max(recurring, key=lambda item: (item[0], len(item[1]), item[1]))[1]


# summaries ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Sentence:
    order: int
    role: str
    text: str
    score: float
    turn: Turn
    own: bool  # the user's own words: a trusted user turn, outside what it marks as pasted


def _label(turn: Turn) -> str:
    """'User', 'Assistant', 'Tool'; a user turn from an untrusted channel says so."""
    return ROLE_LABELS[turn.role] + ("" if turn.trusted else f" (via {turn.channel})")


def by_user(turn: Turn) -> bool:
    """A turn whose words are the user's own: a user turn that arrived by a trusted path."""
    return turn.role == "user" and turn.trusted


def _sentences(turns: list[Turn], statements_only: bool = False) -> list[Sentence]:
    frequency: Counter[str] = Counter()
    for turn in turns:
        frequency.update(words(turn.text))
    found: list[Sentence] = []
    for turn in turns:
        mine = f" {normalise(own_words(turn.text))} " if by_user(turn) else ""
        for piece in _SENTENCE.split(" ".join(turn.text.split())):
            piece = piece.strip()
            own = words(piece)
            if not piece or not own or (statements_only and piece.endswith("?")):
                continue
            score = sum(frequency[w] for w in own) / len(own) * math.log1p(len(own))
            if turn.role == "user":
                score *= 1.25  # what the user says matters more than the reply
            if piece.endswith("?"):
                score *= 0.8
            text = (
                piece if len(piece) <= MAX_SENTENCE_CHARS else piece[: MAX_SENTENCE_CHARS - 1] + "…"
            )
            users = bool(mine) and f" {normalise(piece)} " in mine
            found.append(Sentence(len(found), _label(turn), text, score, turn, users))
    return found


def summarise(
    turns: list[Turn], limit: int = MAX_SENTENCES, labels: bool = True,
    statements_only: bool = False,
) -> tuple[str, list[Turn], bool]:  # fmt: skip
    """The group's most representative sentences, in order, each with who said it (unless
    `labels` is off); the turns they come from (the summary's sources); and whether every one
    is the user's own words. With `statements_only`, only the user's own statements are
    taken: no question, no other speaker, nothing the user pasted."""
    sentences = _sentences(turns, statements_only)
    if statements_only:
        sentences = [sentence for sentence in sentences if sentence.own]
    best = sorted(sentences, key=lambda s: (-s.score, s.order))[:limit]
    parts: list[str] = []
    sources: dict[str, Turn] = {}
    previous = None
    for sentence in sorted(best, key=lambda s: s.order):
        same_speaker = sentence.role == previous or not labels
        parts.append(sentence.text if same_speaker else f"{sentence.role}: {sentence.text}")
        previous = sentence.role
        sources.setdefault(sentence.turn.id, sentence.turn)
    return " ".join(parts), list(sources.values()), all(sentence.own for sentence in best)


def extractive_summary(turns: list[Turn], limit: int = MAX_SENTENCES, labels: bool = True) -> str:
    """The summary's text alone (see summarise)."""
    return summarise(turns, limit, labels)[0]


def transcript(turns: list[Turn]) -> str:
    """What an external summariser reads on stdin: one 'Role: text' line per turn."""
    return "\n".join(f"{_label(turn)}: {' '.join(turn.text.split())}" for turn in turns) + "\n"


def run_summariser(command: str, text: str, timeout: float) -> str:
    """Run the configured summariser: the group's text on stdin, the summary on stdout."""
    try:
        done = subprocess.run(
            shlex.split(command), input=text.encode("utf-8"), capture_output=True,
            timeout=timeout, check=False,
        )  # fmt: skip
    except (OSError, ValueError, subprocess.TimeoutExpired) as error:
        raise BadInputError(f"summariser {command!r} failed: {error}") from None
    output = done.stdout.decode("utf-8", "replace").strip()
    if done.returncode != 0:
        detail = done.stderr.decode("utf-8", "replace").strip().splitlines()
        reason = f"exit {done.returncode}" + (f": {detail[-1]}" if detail else "")
        raise BadInputError(f"summariser {command!r} failed ({reason})")
    if not output:
        raise BadInputError(f"summariser {command!r} failed (no output)")
    return " ".join(output.split())


def _heading(group: Group, zone: Any, topic: str | None) -> str:
    turns = group.summarisable
    first, last = turns[0].moment.astimezone(zone), turns[-1].moment.astimezone(zone)
    days = first.strftime("%Y-%m-%d")
    if last.date() != first.date():
        days += f" to {last.strftime('%Y-%m-%d')}"
    sessions = sorted({turn.session for turn in turns})
    about = f", about {topic}" if topic else ""
    return f"Conversation on {days} (session {', '.join(sessions)}{about})"


@dataclass
class Planned:
    """What a dream writes for one group."""

    group: Group
    topic: str | None
    method: str | None = None
    summary: Memory | None = None
    promoted: Memory | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "group": self.group.key,
            "topic": self.topic,
            "turns": len(self.group.summarisable),
            "withheld": len(self.group.withheld),
            "method": self.method,
            "memory": self.summary.id if self.summary else None,
            "text": self.summary.text if self.summary else None,
            "promoted": self.promoted.id if self.promoted else None,
            "promoted_text": self.promoted.text if self.promoted else None,
        }


def _provenance(turn: Turn) -> str:
    who = "user" if by_user(turn) else turn.role if turn.role != "user" else "user, untrusted"
    return f"{turn.id} ({who}, via {turn.channel})"


def _memory(text: str, store: str, group: Group, links: list[dict[str, str]],
            sources: list[Turn], users_own: bool, ttl: timedelta) -> Memory:  # fmt: skip
    """A derived memory with the weakest provenance of its sources: from the user's own words
    only it is `derived` (durable); with any other words among them (an assistant's, a
    tool's, an imported assistant's, a user turn from an untrusted channel, what the user
    pasted) it is an inference — provisional, in the review queue, expiring `ttl` after the
    episode (a time of the turns, so the same group still gives the same memory however often
    dream runs) — until the user confirms it. Its meta.evidence names every source turn."""
    turns = group.summarisable
    sessions = {turn.session for turn in turns}
    users_own = users_own and all(by_user(turn) for turn in sources)
    return new_memory(
        created=turns[-1].at,  # the episode's time: the same group gives the same memory
        text=text,
        source="derived" if users_own else "inference",
        author="memdir",
        store=store,
        visibility=summary_visibility(turn.secrecy for turn in turns),
        session=next(iter(sessions)) if len(sessions) == 1 else None,
        links=tuple(links),
        expires=None if users_own else format_time(turns[-1].moment + ttl),
        meta={"evidence": "sources: " + ", ".join(_provenance(turn) for turn in sources)},
    )


def plan_group(group: Group, settings: DreamSettings, zone: Any, use_command: bool,
               warnings: list[str], ttl: timedelta) -> Planned:  # fmt: skip
    """The memories for one closed group (none when every turn is withheld); `ttl` is the
    lifetime a summary gets when it is an inference (see _memory)."""
    turns = group.summarisable
    topic = topic_signal(group)
    planned = Planned(group, topic)
    if not turns:
        return planned
    command = settings.summariser
    (body, sources, users_own), planned.method = summarise(turns), "extractive"
    if command and use_command:
        try:
            timeout = settings.timeout.total_seconds()
            body, planned.method = (
                run_summariser(command, transcript(turns), timeout),
                "command",
            )
            sources = turns  # the summariser read every turn, pasted material too
            users_own = all(by_user(turn) and own_words(turn.text) == turn.text for turn in turns)
        except BadInputError as error:
            warnings.append(f"{error.message}; used the extractive summary for {group.key}")
    links = [{"type": SUMMARY_LINK, "to": turn.id} for turn in turns]
    text = f"{_heading(group, zone, topic)}: {body}"
    planned.summary = _memory(text, "episodic", group, links, sources, users_own, ttl)
    planned.promoted = promote(group, topic, planned.summary.id, ttl)
    return planned


def promote(group: Group, topic: str | None, summary_id: str, ttl: timedelta) -> Memory | None:
    """The semantic memory for a group with a topic signal and at least two summarisable
    turns: what the user stated about the topic in their own (trusted) turns — statements,
    never questions, never another speaker's words — linked to the episode and the turns.
    None when the user stated nothing."""
    turns = group.summarisable
    if not topic or len(turns) < 2:
        return None
    facts, sources, users_own = summarise([turn for turn in turns if by_user(turn)], limit=2,
                                          labels=False, statements_only=True)  # fmt: skip
    if not facts:
        return None
    links = [{"type": PROMOTED_LINK, "to": summary_id}]
    links += [{"type": SUMMARY_LINK, "to": turn.id} for turn in turns]
    return _memory(f"About {topic}: {facts}", "semantic", group, links, sources, users_own,
                   ttl)  # fmt: skip


@dataclass
class DreamReport:
    planned: list[Planned] = field(default_factory=list)
    open_groups: int = 0
    written: list[str] = field(default_factory=list)
    digests: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    dry_run: bool = False

    @property
    def changed(self) -> bool:
        return bool(self.written or self.digests)

    @property
    def to_write(self) -> list[str]:
        """The memories the planned groups write (what a dry run reports): each group's
        summary and its promoted semantic memory."""
        return [
            memory.id
            for planned in self.planned
            if planned.summary is not None
            for memory in (planned.summary, planned.promoted)
            if memory is not None
        ]

    def to_dict(self) -> dict[str, Any]:
        return {
            "dry_run": self.dry_run,
            "groups": [planned.to_dict() for planned in self.planned],
            "open_groups": self.open_groups,
            "summarised_turns": sum(len(p.group.summarisable) for p in self.planned),
            "withheld_turns": sum(len(p.group.withheld) for p in self.planned),
            "memories_written": self.written,
            "memories_to_write": self.to_write if self.dry_run else self.written,
            "digests_written": self.digests,
            "warnings": self.warnings,
        }


def _existing_summaries(memdir: Memdir, now: datetime) -> dict[frozenset[str], dict[str, str]]:
    """Derived memories already written for a set of turns, by store (left by a dream that
    stopped before its digest): reused rather than written again."""
    found: dict[frozenset[str], dict[str, str]] = {}
    for state in load_view(memdir, now):
        memory = state.memory
        if memory is None or memory.source not in ("derived", "inference"):
            continue
        turns = frozenset(link["to"] for link in memory.links if link.get("type") == SUMMARY_LINK)
        if turns:
            found.setdefault(turns, {})[memory.store] = state.id
    return found


def dream(memdir: Memdir, now: datetime, dry_run: bool = False) -> DreamReport:
    """Consolidate every closed group of undigested turns; idempotent."""
    report = DreamReport(dry_run=dry_run)
    rules = memdir.settings.dream
    zone = memdir.settings.zone
    with maintenance_lock(memdir):
        book = journal.read_journal(memdir, until=now)
        done = book.digested()
        # secret turns stay out: they live on this machine only (journal/secret.jsonl), and a
        # committed digest naming one would carry its id, a hash over its text
        fresh = [t for t in book.turns if t.id not in done and t.secrecy != "secret"]
        groups = group_turns(fresh, rules)
        closed = [group for group in groups if now - group.last >= rules.gap]
        report.open_groups = len(groups) - len(closed)
        ttl = memdir.settings.inference_ttl
        report.planned = [
            plan_group(group, rules, zone, not dry_run, report.warnings, ttl) for group in closed
        ]
        for warning in report.warnings:
            log.warning(warning)
        if dry_run or not report.planned:
            return report
        _write(memdir, now, report, ttl)
    return report


def _write(memdir: Memdir, now: datetime, report: DreamReport, ttl: timedelta) -> None:
    with writing(memdir):
        existing = _existing_summaries(memdir, now)
        memories: list[Memory] = []
        digests: list[Digest] = []
        for planned in report.planned:
            group = planned.group
            summary_id = promoted_id = None
            if planned.summary is not None:
                turn_ids = frozenset(turn.id for turn in group.summarisable)
                # a run that stopped before its digest may have written them already
                reused = existing.get(turn_ids, {})
                summary_id = reused.get("episodic", planned.summary.id)
                if summary_id == planned.summary.id and "episodic" not in reused:
                    memories.append(planned.summary)
                promoted = planned.promoted
                if promoted is not None and summary_id != planned.summary.id:
                    promoted = promote(group, planned.topic, summary_id, ttl)
                if "semantic" in reused:
                    promoted_id = reused["semantic"]
                elif promoted is not None:
                    memories.append(promoted)
                    promoted_id = promoted.id
            digests.append(
                journal.new_digest(
                    now,
                    [turn.id for turn in group.summarisable],
                    [turn.id for turn in group.withheld],
                    summary_id,
                    promoted_id,
                    planned.method if summary_id else None,
                )
            )
        add_memories(memdir, memories)
        journal.add_digests(memdir, digests)
    report.written = [memory.id for memory in memories]
    report.digests = [digest.id for digest in digests]
