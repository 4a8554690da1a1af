"""The boot and wake documents: what an assistant reads to re-enter a conversation.

- documents/boot.md (refreshed by sleep and by journal writes): today's date and the time since
  the last session, recent events, the day's emotional arc, recent teachings, hard facts (the
  current memory per supersede key) and the review queue (inferences awaiting confirmation,
  newest first, each with its expiry).
- the wake document (`memdir wake`, documents/wake.md after each sleep): markdown for a system
  prompt within a token budget — the date and time since the last session, hard facts, recent
  teachings, the review queue, open threads from the console ring, the emotional arc, the last
  journal entry and the raw window of recent user turns. When the budget is tight, sections
  are filled in priority order (review queue and hard facts first) and say how much was left
  out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from memdir.archive_format import journal, ring, visibility
from memdir.archive_format.atomic import write_text
from memdir.archive_format.clock import format_duration, format_time, parse_time
from memdir.archive_format.cutoffs import is_hard_fact, named_day, past_cutoff, stands
from memdir.archive_format.documents import estimate_tokens
from memdir.archive_format.fold import ArchiveView, MemoryState
from memdir.archive_format.lifecycle import TURN_ID, recent_view, view_of
from memdir.archive_format.memdir import Memdir
from memdir.archive_format.state import read_yaml
from memdir.archive_format.tombstones import writing

RECENT_TEACHINGS_DAYS = 14
RECENT_EVENTS_DAYS = 7
LIST_LIMIT = 12
BOOT_LIMIT = 50  # entries per boot section; the rest are counted
TEXT_WIDTH = 160
DAY_PARTS = ((0, "night"), (6, "morning"), (12, "afternoon"), (18, "evening"))
SECTION_TITLES = {
    "hard_facts": "Hard facts (current value per key)",
    "standing": "Kept at any age (pinned, important, medication, money)",
    "upcoming": "Coming up (memories naming a day ahead)",
    "teachings": "Recent teachings",
    "review": "Review queue (inferences awaiting the user's confirmation)",
    "decisions": "Needs your decision",
    "people": "People",
    "self": "Self (who the assistant is to this user)",
    "threads": "Open threads (console ring)",
    "arc": "Emotional arc",
    "entry": "Last journal entry",
    "raw_window": "Raw window (recent user turns)",
    "events": "Recent events",
}
WAKE_ORDER = ("self", "hard_facts", "standing", "upcoming", "people", "teachings", "review",
              "decisions", "threads", "arc", "entry", "raw_window")  # fmt: skip
WAKE_PRIORITY = ("review", "decisions", "hard_facts", "standing", "upcoming", "self", "teachings",
                 "people", "raw_window", "threads", "arc", "entry")  # fmt: skip
BOOT_ORDER = ("events", "arc", "upcoming", "teachings", "hard_facts", "standing", "review",
              "decisions")  # fmt: skip
UPCOMING_DAYS = 60  # how far ahead "Coming up" looks
DECISION_LIMIT = 5  # contradiction candidates and stale hard facts a briefing lists
PEOPLE_LIMIT = 6  # people in wake's People section (the latest changed first)
PERSON_FIELDS = 3  # fields shown per person besides their aliases
SELF_FIELDS = 8  # fields of the self notes in wake's Self section
SILENT_WHEN_EMPTY = ("self", "upcoming")
# wake's first section, CAMA's core (`memdir core`): these three, under one heading
CORE_SECTIONS = ("self", "hard_facts", "standing")
CORE_HEADING = [
    "",
    "## Core (what defines the person)",
]  # sections wake leaves out, rather than say they are empty
DREAM_AUTHOR = "memdir"  # who writes dream's summaries (docs/CONTINUITY.md, Dream)
DONE = {"confirm": "confirmed", "reject": "rejected", "expire": "expired"}


def short_text(text: str | None, width: int = TEXT_WIDTH) -> str:
    flat = " ".join((text or "").split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


@dataclass
class Section:
    """A titled list: `lines` are markdown, `items` the same entries as data for --json."""

    name: str
    lines: list[str] = field(default_factory=list)
    items: list[dict[str, Any]] = field(default_factory=list)
    empty: str = "none"
    more: str = ""  # how to see what a budget left out
    total: int = 0  # entries before any limit

    def cap(self, limit: int = BOOT_LIMIT) -> Section:
        self.total = max(self.total, len(self.items))
        self.lines, self.items = self.lines[:limit], self.items[:limit]
        return self

    @property
    def title(self) -> str:
        return SECTION_TITLES[self.name]


@dataclass
class Briefing:
    """Everything boot and wake show, gathered once at `now`."""

    now: datetime
    zone: Any
    header: list[str]
    header_data: dict[str, Any]
    sections: dict[str, Section]


def _local(moment: datetime, zone: Any) -> str:
    return moment.astimezone(zone).strftime("%Y-%m-%d %H:%M")


def _since(text: str, start: str) -> bool:
    """`text` (a time from a line) is at or after `start` (canonical); canonical UTC strings
    compare as strings, which matters when a boot document walks every memory."""
    if len(text) == 20 and text.endswith("Z"):
        return text >= start
    return parse_time(text) >= parse_time(start)


def _last_session(book: journal.Journal, now: datetime, zone: Any) -> tuple[str, dict[str, Any]]:
    if not book.turns:
        return "No conversation in the journal yet.", {"last_session": None}
    last = book.turns[-1]
    ago = format_duration(now - last.moment)
    data = {"last_session": last.session, "last_turn": last.at, "since": ago}
    return f"Last session: {last.session}, last turn {_local(last.moment, zone)} ({ago} ago).", data


def _emotional_arc(memdir: Memdir, book: journal.Journal, now: datetime, zone: Any) -> Section:
    """Valence of the user's turns over the last day with any, by part of the day."""
    section = Section("arc", empty="no user turns in the journal yet")
    turns = [t for t in book.turns if t.role == "user" and t.summarisable and t.moment <= now]
    if not turns:
        return section
    day = turns[-1].moment.astimezone(zone).date()
    today = [t for t in turns if t.moment.astimezone(zone).date() == day]
    name = memdir.settings.affect.annotator
    if name == "none":
        section.empty = "affect annotation is switched off (affect.annotator: none)"
        return section
    from memdir.indexers.affect import load_annotator

    annotator = load_annotator(name)
    points = []
    for turn in today:
        local = turn.moment.astimezone(zone)
        points.append((local, annotator.annotate(turn.text).valence))
    parts: list[tuple[str, list[float]]] = []
    for local, valence in points:
        part = next(label for hour, label in reversed(DAY_PARTS) if local.hour >= hour)
        if not parts or parts[-1][0] != part:
            parts.append((part, []))
        parts[-1][1].append(valence)
    arc = " → ".join(f"{part} {sum(v) / len(v):+.2f} ({len(v)})" for part, v in parts)
    low = min(points, key=lambda p: p[1])
    high = max(points, key=lambda p: p[1])
    section.lines = [
        f"- {day.isoformat()}: {arc}",
        f"- low {low[1]:+.2f} at {low[0]:%H:%M}, high {high[1]:+.2f} at {high[0]:%H:%M}",
    ]
    section.items = [
        {"day": day.isoformat(), "parts": [
            {"part": part, "valence": round(sum(v) / len(v), 3), "turns": len(v)}
            for part, v in parts
        ], "points": [{"at": f"{local:%H:%M}", "valence": round(v, 3)} for local, v in points]}
    ]  # fmt: skip
    return section


def shown(state: MemoryState) -> bool:
    """Whether a memory may go into a document meant for a system prompt (visibility.py's boot
    row; each wake section also keeps only durable or provisional memories)."""
    return state.memory is not None and state.text_on("boot") is not None


def ring_slots(
    memdir: Memdir, now: datetime, view: ArchiveView | None = None
) -> list[dict[str, Any]]:
    """The console ring, newest first, as visibility.py lets it show: entries of memories no
    longer live (or sealed) are left out, a private one's text is masked; each entry says the
    memory's status and visibility now."""
    slots = ring.read_ring(memdir)
    # the ring is this machine's recent past: fold at its newest entry when that is later
    newest = max((parse_time(str(slot["at"])) for slot in slots if slot.get("at")), default=now)
    ids = {str(slot.get("id", "")) for slot in slots}
    view = view or view_of(memdir, ids, max(now, newest))
    shown_slots = []
    for slot in reversed(slots):
        state = view.states.get(str(slot.get("id", "")))
        if state is None or state.memory is None:
            continue
        visible = state.memory.visibility
        text = visibility.present("ring", str(slot.get("text", "")), state.status, visible)
        if text is not None:
            shown_slots.append(
                {**slot, "text": text, "status": state.status, "visibility": visible}
            )
    return shown_slots


def scrub_ring(memdir: Memdir, now: datetime) -> bool:
    """Rewrite state/ring.yaml with only what the ring may show (an older memdir's ring may hold
    sealed or private text); `sleep` runs it. Returns whether anything changed."""
    with writing(memdir):
        slots = ring.read_ring(memdir)
        kept = [
            {name: slot[name] for name in ("at", "what", "id", "text") if name in slot}
            for slot in reversed(ring_slots(memdir, now))
        ]
        changed = kept != slots
        if changed:
            ring.replace_slots(memdir, kept)
    return changed


def current(state: MemoryState, now: datetime, cutoffs: Mapping[str, timedelta]) -> bool:
    """Whether a memory is still worth a briefing's space: not past its type's, subtype's or
    temporal class's age cut-off (the same rule recall applies: an EMOTION teaching of 66 hours
    ago or a day-old ephemeral note is not "recent" news)."""
    memory = state.memory
    if memory is None:
        return False
    labels = (memory.type, memory.subtype, memory.temporal)
    hard = is_hard_fact(key=memory.key, pinned=memory.pinned, source=memory.source,
                        type=memory.type)  # fmt: skip
    return past_cutoff(labels, parse_time(state.created), now, cutoffs, text=memory.text,
                       hard=hard) is None  # fmt: skip


def _hard_facts(view: ArchiveView, now: datetime, cutoffs: Mapping[str, timedelta]) -> Section:
    section = Section("hard_facts", empty="no supersede keys yet", more="memdir list --json")
    facts = [s for s in view if s.status == "durable" and shown(s) and s.memory and s.memory.key
             and current(s, now, cutoffs)]  # fmt: skip
    for state in sorted(facts, key=lambda s: str(s.memory.key if s.memory else "")):
        assert state.memory is not None
        section.lines.append(f"- {state.memory.key}: {short_text(state.memory.text)} ({state.id})")
        section.items.append({"key": state.memory.key, "id": state.id, "text": state.memory.text,
                              "since": state.durable_since})  # fmt: skip
    return section.cap()


def _standing(view: ArchiveView, now: datetime, zone: Any,
              cutoffs: Mapping[str, timedelta]) -> Section:  # fmt: skip
    """Durable memories wake keeps at any age (cutoffs.stands) that no key lists among the hard
    facts: pinned, rated important, a MEDICATION or FINANCIAL teaching — pinned first, then the
    most important, then the newest. The cut-offs still apply (`current`): a pinned memory is
    exempt from them, a merely important feeling is not."""
    section = Section("standing", empty="nothing pinned or marked important",
                      more="memdir list --json")  # fmt: skip
    kept = []
    for state in view:
        memory = state.memory
        if state.status != "durable" or not shown(state) or memory is None or memory.key:
            continue
        if stands(key=memory.key, pinned=memory.pinned, source=memory.source, type=memory.type,
                  importance=memory.importance) and current(state, now, cutoffs):  # fmt: skip
            kept.append(state)
    kept.sort(key=lambda s: s.created, reverse=True)
    kept.sort(key=lambda s: (not s.memory.pinned, -s.memory.importance) if s.memory else (True, 0))
    for state in kept:
        assert state.memory is not None
        why = ["pinned"] if state.memory.pinned else []
        why += [state.memory.type_label] if state.memory.type_label else []
        why += [f"importance {state.memory.importance}"] if state.memory.importance != 5 else []
        when = _local(parse_time(state.created), zone)[:10]
        section.lines.append(f"- {short_text(state.memory.text)} ({', '.join(why)}; since "
                             f"{when}; {state.id})")  # fmt: skip
        section.items.append({"id": state.id, "text": state.memory.text, "created": state.created,
                              "pinned": state.memory.pinned, "type": state.memory.type_label,
                              "importance": state.memory.importance})  # fmt: skip
    return section.cap()


def _upcoming(view: ArchiveView, now: datetime, zone: Any,
              cutoffs: Mapping[str, timedelta]) -> Section:  # fmt: skip
    """Durable memories whose text names a day from today to UPCOMING_DAYS ahead (the
    dentist on 3 December, a flight, a birthday), soonest first — however long ago they were
    taught, while their cut-offs keep them current."""
    section = Section("upcoming", empty=f"nothing dated in the next {UPCOMING_DAYS} days",
                      more="memdir list --json")  # fmt: skip
    today = now.astimezone(zone).date()
    found = []
    for state in view:
        memory = state.memory
        if state.status != "durable" or not shown(state) or memory is None:
            continue
        day = named_day(memory.text, parse_time(state.created))
        if (
            day is not None
            and today <= day <= today + timedelta(days=UPCOMING_DAYS)
            and current(state, now, cutoffs)
        ):
            found.append((day, state))
    for day, state in sorted(found, key=lambda pair: (pair[0], pair[1].created)):
        assert state.memory is not None
        left = (day - today).days
        when = "today" if left == 0 else "tomorrow" if left == 1 else f"in {left} days"
        section.lines.append(f"- {day.isoformat()} ({when}): {short_text(state.memory.text)} "
                             f"({state.id})")  # fmt: skip
        section.items.append({"id": state.id, "day": day.isoformat(), "in_days": left,
                              "text": state.memory.text})  # fmt: skip
    return section.cap()


def _teachings(view: ArchiveView, now: datetime, zone: Any,
               cutoffs: Mapping[str, timedelta]) -> Section:  # fmt: skip
    section = Section("teachings", empty=f"nothing taught in the last {RECENT_TEACHINGS_DAYS} days",
                      more="memdir list --source teaching")  # fmt: skip
    start = format_time(now - timedelta(days=RECENT_TEACHINGS_DAYS))
    recent = [
        s for s in view
        if s.status == "durable" and shown(s) and s.memory and s.memory.source == "teaching"
        and _since(s.created, start) and current(s, now, cutoffs)
    ]  # fmt: skip
    recent.sort(key=lambda s: s.created, reverse=True)
    section.total = len(recent)
    for state in recent[:BOOT_LIMIT]:
        assert state.memory is not None
        when = _local(parse_time(state.created), zone)[:10]
        section.lines.append(f"- {when}: {short_text(state.memory.text)} ({state.id})")
        section.items.append({"id": state.id, "created": state.created, "text": state.memory.text})
    return section


def _review(view: ArchiveView, now: datetime, zone: Any,
            cutoffs: Mapping[str, timedelta]) -> Section:  # fmt: skip
    """Inferences awaiting confirmation, by the same cut-offs as every section: a guess about
    today's mood, three days on, is no question worth a briefing (`memdir review` still lists
    it until its TTL)."""
    from .review import SUMMARIES_COMMAND, is_summary, review_queue

    section = Section("review", empty="nothing awaits confirmation",
                      more="memdir list --status provisional")  # fmt: skip
    states = view.states
    everything = [row for row in review_queue(view, now)
                  if row["id"] in states and current(states[row["id"]], now, cutoffs)]  # fmt: skip
    # dream's conversation summaries (author memdir) are one line, not one question each: a
    # week of imported chats must not bury the inferences the person is asked about
    summaries = [row for row in everything if is_summary(row)]
    queue = [row for row in everything if not is_summary(row)]
    section.total = len(queue) + bool(summaries)
    for row in queue[:BOOT_LIMIT]:
        expires, left = row["expires"], row["expires_in"] or "never"
        when = (
            f"expires {_local(parse_time(expires), zone)} (in {left})" if expires else "no expiry"
        )
        section.lines.append(
            f"- {short_text(row['text'])} — unconfirmed, {when}; ask the user, and "
            f"only their answer confirms it ({row['id']})"
        )
        section.items.append({"id": row["id"], "text": row["text"], "created": row["created"],
                              "expires": expires, "expires_in": left})  # fmt: skip
    if summaries:
        line = (f"conversation summaries by dream awaiting confirmation: {len(summaries)} "
                f"(newest {summaries[0]['id']}); `{SUMMARIES_COMMAND}` lists them, unconfirmed "
                "they expire")  # fmt: skip
        section.lines.append(f"- {line}")
        section.items.append({"what": "conversation summaries", "text": line,
                              "count": len(summaries), "ids": [row["id"] for row in summaries]})  # fmt: skip
    return section


def _decisions(memdir: Memdir, view: ArchiveView, now: datetime,
               cutoffs: Mapping[str, timedelta]) -> Section:  # fmt: skip
    """Contradiction candidates linked lately (the recent view's) between memories not past
    their cut-off, automatic supersedes and stale hard facts, at most DECISION_LIMIT; `memdir
    review` lists them all."""
    from .review import automatic_supersedes, contradiction_pairs, stale_facts

    section = Section("decisions", empty="no contradiction or stale fact to settle",
                      more="memdir review")  # fmt: skip
    targets = {event.to for state in view for event in state.events
               if event.op == "link" and event.to and event.to.startswith("m-")}  # fmt: skip
    lookup = dict(view.states)
    missing = targets - set(lookup)
    if missing:
        lookup.update(view_of(memdir, missing, now).states)
    for row in contradiction_pairs(view, lookup):
        one, other = row["sides"]
        if not all(current(lookup[side["id"]], now, cutoffs) for side in (one, other)):
            continue  # recall no longer gives either side: nothing left to settle for a briefing
        section.lines.append(
            f"- contradiction? {short_text(one['text'], 100)} ({one['id']}, {one['source']} "
            f"{one['created'][:10]}) vs {short_text(other['text'], 100)} ({other['id']}, "
            f"{other['source']} {other['created'][:10]}): ask which holds"
        )
        section.items.append({"what": "contradiction", **row})
    for row in automatic_supersedes(view, lookup, now - timedelta(days=RECENT_TEACHINGS_DAYS)):
        old, new = row["old"], row["new"]
        section.lines.append(
            f"- sleep replaced {short_text(old['text'], 100)} ({old['id']}) by "
            f"{short_text(new['text'], 100)} ({new['id']}): if both hold, undo with "
            f"`memdir link {new['id']} {old['id']} --type compatible`"
        )
        section.items.append({"what": "automatic supersede", **row})
    for row in stale_facts(view, now):
        section.lines.append(
            f"- still true? {row['key']}: {short_text(row['text'], 120)} ({row['id']}), "
            f"last affirmed {row['age']} ago"
        )
        section.items.append({"what": "stale hard fact", **row})
    return section.cap(DECISION_LIMIT)


def _people(memdir: Memdir) -> Section:
    """The people notes, briefly: the latest changed first, each with their aliases and a few
    fields (`memdir people show NAME` has them all)."""
    from memdir.archive_format.people import ALIASES, aliases_of, read_people

    section = Section("people", empty="no people notes yet (`memdir people add NAME`)",
                      more="memdir people list")  # fmt: skip
    everyone = read_people(memdir)
    latest = sorted(everyone, key=lambda name: max(
        (str(entry.get("at", "")) for entry in everyone[name].values()), default=""), reverse=True)  # fmt: skip
    for name in latest:
        fields = everyone[name]
        aliases = aliases_of(fields)
        shown_fields = [(field, entry["value"]) for field, entry in fields.items()
                        if field != ALIASES][:PERSON_FIELDS]  # fmt: skip
        # a field the user did not set says who did: the assistant's note is not the user's word
        details = "; ".join(
            f"{field}: {value}" + _set_by(fields[field]) for field, value in shown_fields
        )
        also = f" (also {', '.join(aliases)})" if aliases else ""
        section.lines.append(short_text(f"- {name}{also}" + (f" — {details}" if details else "")))
        section.items.append({"name": name, "aliases": aliases, "fields": dict(shown_fields),
                              "set_by": {field: fields[field].get("by") for field, _ in shown_fields}})  # fmt: skip
    return section.cap(PEOPLE_LIMIT)


def _self_notes(memdir: Memdir) -> Section:
    """The self notes (who the assistant is to this user: name, tone…), each field saying who
    set it when it was not the user."""
    from memdir.archive_format.people import read_self

    section = Section("self", empty="no self notes yet (`memdir self set name=Ada`)",
                      more="memdir self show")  # fmt: skip
    for name, entry in read_self(memdir).items():
        section.lines.append(short_text(f"- {name}: {entry['value']}" + _set_by(entry)))
        section.items.append({"field": name, "value": entry["value"], "set_by": entry.get("by")})
    return section.cap(SELF_FIELDS)


def _set_by(entry: dict[str, Any]) -> str:
    """' (set by the assistant)' for a people note not set by the user, else ''."""
    from memdir.archive_format.records import author_is_user

    by = str(entry.get("by", ""))
    return "" if author_is_user(by) else f" (set by {by or 'unknown'})"


def in_persona(state: MemoryState, persona: str | None) -> bool:
    """Whether a memory belongs in a briefing for `persona` (recall's persona rule: a memory
    scoped to personas is left out for any other)."""
    personas = state.memory.personas if state.memory else ()
    return persona is None or not personas or persona in personas


def _events(view: ArchiveView, now: datetime, zone: Any) -> Section:
    """What happened lately, teachings aside: episodes, inferences, decisions, expiries."""
    section = Section("events", empty=f"nothing in the last {RECENT_EVENTS_DAYS} days")
    start = format_time(now - timedelta(days=RECENT_EVENTS_DAYS))
    rows: list[tuple[str, str, str]] = []
    verbs = {"derived": "dreamt", "observation": "observed", "inference": "inferred"}
    for state in view:
        memory = state.memory
        if not shown(state):
            continue
        assert memory is not None
        # a promoted summary repeats its episode
        promoted = memory.source == "derived" and memory.store == "semantic"
        if memory.source in verbs and not promoted and _since(state.created, start):
            rows.append(
                (state.created, verbs[memory.source], f"{short_text(memory.text)} ({state.id})")
            )
        for event in state.events:
            if event.op in ("confirm", "reject", "expire") and _since(event.at, start):
                rows.append(
                    (event.at, DONE[event.op], f"{short_text(memory.text, 100)} ({state.id})")
                )
    for at, verb, text in sorted(rows, reverse=True)[:LIST_LIMIT]:
        section.lines.append(f"- {_local(parse_time(at), zone)} {verb}: {text}")
        section.items.append({"at": at, "what": verb, "text": text})
    return section


def _threads(memdir: Memdir, view: ArchiveView, zone: Any, now: datetime,
             cutoffs: Mapping[str, timedelta]) -> Section:  # fmt: skip
    """The console ring's live memories, newest first, by the same cut-offs as every section
    (a 19-day-old ephemeral note is not an open thread)."""
    section = Section("threads", empty="the console ring is empty", more="memdir ring")
    seen: set[str] = set()
    for slot in reversed(ring.read_ring(memdir)):
        memory_id = str(slot.get("id", ""))
        state = view.states.get(memory_id)
        if memory_id in seen or state is None or not state.live or not shown(state):
            continue
        if not current(state, now, cutoffs):
            continue
        seen.add(memory_id)
        when = _local(parse_time(str(slot["at"])), zone)
        text = str(slot.get("text", "")).removeprefix("recall: ")
        unconfirmed = " — unconfirmed" if state.status == "provisional" else ""
        section.lines.append(
            f"- {when} {slot.get('what')}: {short_text(str(text), 100)} ({memory_id}){unconfirmed}"
        )
        section.items.append({"at": slot["at"], "what": slot.get("what"), "id": memory_id,
                              "text": text, "status": state.status})  # fmt: skip
        if len(section.items) >= LIST_LIMIT:
            break
    return section


FORGOTTEN_MARK = "(a forgotten record)"


def _entry(memdir: Memdir, now: datetime, zone: Any, view: ArchiveView) -> Section:
    """The last journal entry, quoted. An entry is never edited, so one written before a forget
    may name the forgotten record's id (sleep's "expired unconfirmed: m-…"); the quote says
    "(a forgotten record)" instead, so no generated document names it (verify checks that)."""
    section = Section("entry", empty="no journal entries yet", more="memdir journal read --entries")
    entries = journal.read_entries(memdir, until=now)
    forgotten = {state.id for state in view if state.status == "forgotten"}
    # a reflection says more to the next session than sleep's own report
    reflections = [entry for entry in entries if entry.kind != "sleep"]
    if entries:
        last = (reflections or entries)[-1]
        when = _local(parse_time(last.at), zone) if last.at else "?"
        section.lines.append(f"- {when}, {last.kind} by {last.author}:")
        text = last.text
        # of the turns, only those the quote names are looked up (the journal grows for life)
        forgotten |= journal.forgotten_among(memdir, set(TURN_ID.findall(text)))
        for record_id in sorted(forgotten):
            text = text.replace(record_id, FORGOTTEN_MARK)
        section.lines.extend(
            f"  > {short_text(line, 200)}" for line in text.splitlines() if line.strip()
        )
        section.items.append({**last.to_dict(), "text": text})
    return section


def _raw_window(memdir: Memdir, book: journal.Journal, now: datetime, zone: Any) -> Section:
    count = memdir.settings.journal.raw_window_turns
    hours = memdir.settings.journal.raw_window_hours
    section = Section("raw_window", empty=f"no user turns in the last {hours:g} hours",
                      more="memdir journal read --window")  # fmt: skip
    for turn in journal.raw_window(book.turns, now, count, hours):
        section.lines.append(
            f"- {_local(turn.moment, zone)} [{turn.session}] {short_text(turn.text, 240)} ({turn.id})"
        )
        section.items.append({"id": turn.id, "at": turn.at, "session": turn.session,
                              "text": turn.text})  # fmt: skip
    return section


def gather(memdir: Memdir, now: datetime, persona: str | None = None,
           island: frozenset[str] | None = None) -> Briefing:  # fmt: skip
    """Read the archive, journal and ring once, as of `now` (for `persona`: memories scoped to
    other personas are left out; for an `island`'s live members: every other memory is)."""
    zone = memdir.settings.zone
    cutoffs = memdir.settings.recall.cutoffs
    view = recent_view(
        memdir, now, now - timedelta(days=max(RECENT_TEACHINGS_DAYS, RECENT_EVENTS_DAYS))
    )
    if persona is not None:
        kept = {key: state for key, state in view.states.items() if in_persona(state, persona)}
        view = ArchiveView(kept, view.now)
    if island is not None:  # folded first, so statuses (supersedes) are the whole archive's
        view = ArchiveView({key: state for key, state in view.states.items() if key in island},
                           view.now)  # fmt: skip
    book = journal.read_recent(memdir, now, memdir.settings.journal.raw_window_hours)
    local = now.astimezone(zone)
    session_line, session_data = _last_session(book, now, zone)
    header = [
        f"Today is {local:%A} {local.day} {local:%B %Y}, {local:%H:%M} ({zone}).",
        session_line,
    ]
    sleep_state = read_yaml(memdir.state_dir / "sleep.yaml", {}) or {}
    if sleep_state.get("last_run"):
        header.append(f"Last sleep: {_local(parse_time(str(sleep_state['last_run'])), zone)}.")
    data = {"now": local.isoformat(), "timezone": str(zone), **session_data}
    sections = {
        "events": _events(view, now, zone),
        "arc": _emotional_arc(memdir, book, now, zone),
        "teachings": _teachings(view, now, zone, cutoffs),
        "hard_facts": _hard_facts(view, now, cutoffs),
        "standing": _standing(view, now, zone, cutoffs),
        "upcoming": _upcoming(view, now, zone, cutoffs),
        "review": _review(view, now, zone, cutoffs),
        "decisions": _decisions(memdir, view, now, cutoffs),
        "people": _people(memdir),
        "self": _self_notes(memdir),
        "threads": _threads(memdir, view, zone, now, cutoffs),
        "entry": _entry(memdir, now, zone, view),
        "raw_window": _raw_window(memdir, book, now, zone),
    }
    upcoming = {item["id"] for item in sections["upcoming"].items}
    for name in ("teachings", "standing"):  # said once, with its day, under "Coming up"
        _leave_out(sections[name], upcoming)
    return Briefing(now, zone, header, data, sections)


def _leave_out(section: Section, ids: set[str]) -> None:
    """Drop the entries (a line and its item each) of memories another section shows."""
    kept = [(line, item) for line, item in zip(section.lines, section.items, strict=True)
            if item.get("id") not in ids]  # fmt: skip
    section.total -= len(section.items) - len(kept)
    section.lines = [line for line, _ in kept]
    section.items = [item for _, item in kept]


def _render(title: str, header: list[str], sections: list[Section]) -> str:
    out = [f"# {title}", "", *header]
    for section in sections:
        out += ["", f"## {section.title}", *(section.lines or [f"_{section.empty}_"])]
        if section.total > len(section.items):
            out.append(f"_… {section.total - len(section.items)} more: `{section.more}`_")
    return "\n".join(out) + "\n"


def boot_markdown(briefing: Briefing) -> str:
    sections = [briefing.sections[name] for name in BOOT_ORDER]
    return _render("Boot", briefing.header, sections)


def boot_path(memdir: Memdir) -> Path:
    return memdir.documents_dir / "boot.md"


def wake_path(memdir: Memdir) -> Path:
    return memdir.documents_dir / "wake.md"


def refresh_boot(memdir: Memdir, now: datetime, briefing: Briefing | None = None) -> Path:
    """Rewrite documents/boot.md (atomically) as of `now`."""
    path = boot_path(memdir)
    text = boot_markdown(briefing or gather(memdir, now))
    with writing(memdir):
        write_text(path, text)
    return path


@dataclass
class Wake:
    markdown: str
    tokens: int
    budget: int
    sections: dict[str, dict[str, Any]]
    header: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {**self.header, "budget": self.budget, "tokens": self.tokens,
                "sections": self.sections, "markdown": self.markdown}  # fmt: skip


def _cost(lines: list[str]) -> int:
    return sum(estimate_tokens(line + "\n") for line in lines)


def wake(
    memdir: Memdir,
    now: datetime,
    budget: int | None = None,
    briefing: Briefing | None = None,
    persona: str | None = None,
    island: str | None = None,
) -> Wake:
    """The wake document within `budget` tokens (default: wake.budget in memdir.yaml), for
    `persona` when given (memories scoped to other personas left out), its memory sections
    limited to the live members of the island named `island` when given (`memdir wake
    --island`; an unknown island is NotFoundError).

    Each rendered line costs estimate_tokens(line + newline); lines are added in priority order
    while the total stays within the budget, so the document never exceeds it.
    """
    limit = budget or memdir.settings.wake.budget
    if briefing is None:
        from .islands import live_members

        briefing = gather(memdir, now, persona, live_members(memdir, island, now))
    title = f"# Wake — {briefing.now.astimezone(briefing.zone):%Y-%m-%d %H:%M}"
    header = [title, ""]
    for line in briefing.header:
        if _cost([*header, line]) <= limit:
            header.append(line)
    used = _cost(header)
    if used > limit:  # a budget too small even for the title
        header = [title[: max(0, limit * 4 - 2)]]
        used = _cost(header)
    kept: dict[str, list[str]] = {}
    kept_items: dict[str, list[dict[str, Any]]] = {}
    used += _cost(CORE_HEADING)  # held for the core's heading; given back if no part of it fits
    for name in WAKE_PRIORITY:
        section = briefing.sections[name]
        if name in SILENT_WHEN_EMPTY and not section.items:
            continue
        lines = ["", f"{'###' if name in CORE_SECTIONS else '##'} {section.title}"]
        if _cost(lines) + used > limit:
            continue
        body = section.lines or [f"_{section.empty}_"]
        chosen: list[str] = []
        beyond = max(0, section.total - len(section.items))  # already cut by the boot limit
        for position, line in enumerate(body):
            left = len(body) - position - 1 + beyond
            tail = [f"_… {left} more: `{section.more}`_"] if left and section.more else []
            if used + _cost(lines + chosen + [line] + tail) > limit:
                break
            chosen.append(line)
        omitted = len(body) - len(chosen) + beyond
        if omitted and section.more:
            note = f"_… {omitted} more: `{section.more}`_"
            if used + _cost(lines + chosen + [note]) <= limit:
                chosen.append(note)
        if not chosen:
            continue
        kept[name] = lines + chosen
        kept_items[name] = section.items[: len([c for c in chosen if c.startswith("- ")])]
        used += _cost(kept[name])
    body_lines = _body(kept)
    left_out = _left_out(briefing, kept, _cost(header + body_lines), limit)
    while left_out and kept and _cost(header + body_lines + left_out) > limit:
        # the note that whole sections were left out matters more than the last kept one
        last = next(name for name in reversed(WAKE_PRIORITY) if name in kept)
        kept.pop(last)
        kept_items.pop(last, None)
        body_lines = _body(kept)
        left_out = _left_out(briefing, kept, _cost(header + body_lines), limit)
    if _cost(header + body_lines + left_out) <= limit:  # a budget too small for any note
        body_lines += left_out
    markdown = "\n".join(header + body_lines) + "\n"
    sections = {
        name: {
            "items": kept_items.get(name, []),
            "omitted": max(briefing.sections[name].total, len(briefing.sections[name].items))
            - len(kept_items.get(name, [])),
        }
        for name in WAKE_ORDER
    }
    return Wake(markdown, estimate_tokens(markdown), limit, sections, briefing.header_data)


def _body(kept: dict[str, list[str]]) -> list[str]:
    """The kept sections in wake's order, the core's parts under the core's heading."""
    lines: list[str] = []
    for name in WAKE_ORDER:
        if name not in kept:
            continue
        if name in CORE_SECTIONS and not any(part in kept for part in CORE_SECTIONS[
                :CORE_SECTIONS.index(name)]):  # fmt: skip
            lines += CORE_HEADING
        lines += kept[name]
    return lines


def _left_out(briefing: Briefing, kept: dict[str, list[str]], used: int, limit: int) -> list[str]:
    """The closing note for whole sections the budget left out (those with something in
    them): with their names and counts when that fits in `limit - used`, else shorter."""
    gone = [
        f"{name} {max(section.total, len(section.items))}"
        for name in WAKE_ORDER
        if name not in kept and (section := briefing.sections[name]).items
    ]
    if not gone:
        return []
    full = ["", f"_… {len(gone)} more sections ({', '.join(gone)}): raise --budget_"]
    if used + _cost(full) <= limit:
        return full
    return ["", f"_… {len(gone)} more sections: raise --budget_"]


def write_wake(
    memdir: Memdir, now: datetime, budget: int | None = None, briefing: Briefing | None = None
) -> Wake:
    """Write documents/wake.md (atomically) and return it."""
    document = wake(memdir, now, budget, briefing)
    with writing(memdir):
        write_text(wake_path(memdir), document.markdown)
    return document
