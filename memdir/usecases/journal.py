"""Journal use cases shared by the CLI, the MCP server and imports: record turns from a
transcript, write narrative entries, and keep the boot document fresh after each."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from memdir.actor import Actor
from memdir.archive_format import journal
from memdir.archive_format.errors import BadInputError, LifecycleError
from memdir.archive_format.journal import Entry, Turn
from memdir.archive_format.lifecycle import follow_up
from memdir.archive_format.memdir import Memdir
from memdir.indexers.text import JOURNAL_SEARCH_STOP_WORDS, WORD
from memdir.usecases import documents

log = logging.getLogger("memdir")

STREAM_FIELDS = ("role", "session", "text", "topic", "visibility", "secrecy", "at")


def turns_from_jsonl(
    lines: Iterable[str], defaults: dict[str, Any], now: datetime, channel: str
) -> list[Turn]:
    """Turns from a JSONL transcript: one object per line with `role` and `text`, and
    optionally session, topic, visibility, secrecy and `at`; missing ones come from `defaults`.
    The channel is the caller's to set, never the stream's.

    The journal orders turns by time, then id, and times are whole seconds: so that a
    transcript keeps its order, the turns without an `at` are one second apart in the order
    given, the last one at `now`."""
    parsed: list[tuple[int, dict[str, Any]]] = []
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            data = json.loads(raw)
        except ValueError as error:  # JSONDecodeError, or e.g. an integer of over 4,300 digits
            raise BadInputError(f"stdin line {number}: not JSON ({error})") from None
        if not isinstance(data, dict):
            raise BadInputError(f"stdin line {number}: expected a JSON object")
        unknown = sorted(set(data) - set(STREAM_FIELDS))
        if unknown:
            raise BadInputError(
                f"stdin line {number}: unknown field {unknown[0]!r}",
                hint=f"a turn may have {', '.join(STREAM_FIELDS)}",
            )
        parsed.append((number, {**defaults, **{k: v for k, v in data.items() if v is not None}}))
    undated = sum(1 for _, fields in parsed if not fields.get("at"))
    stamps = iter([now - timedelta(seconds=undated - 1 - n) for n in range(undated)])
    turns = []
    for number, fields in parsed:
        try:
            turns.append(turn_from_fields(fields, now if fields.get("at") else next(stamps),
                                          channel))  # fmt: skip
        except BadInputError as error:
            raise BadInputError(f"stdin line {number}: {error.message}", hint=error.hint) from None
    return turns


def turn_from_fields(fields: dict[str, Any], now: datetime, channel: str) -> Turn:
    """A turn from loose fields (role, session, text required); `at` defaults to `now`."""
    for name in ("role", "session", "text"):
        if not fields.get(name):
            raise BadInputError(f"no {name}", hint=f"give it in the line or with --{name}")
    return journal.new_turn(
        at=str(fields["at"]) if fields.get("at") else now,
        role=str(fields["role"]),
        session=str(fields["session"]),
        text=str(fields["text"]),
        channel=channel,
        visibility=str(fields.get("visibility") or "normal"),
        secrecy=str(fields.get("secrecy") or "public"),
        topic=fields.get("topic"),
    )


def refuse_user_turns(actor: Actor, turns: Iterable[Turn]) -> None:
    """An assistant (MEMDIR_ACTOR, an agent harness's shell) may not record the user's turns:
    they are what the teaching guard trusts. Every command that stores a turn asks this."""
    if actor.assistant and any(turn.role == "user" for turn in turns):
        raise LifecycleError(
            f"an assistant cannot record user turns ({actor.reason}): the journal's user turns "
            "are what the teaching guard trusts",
            hint="record your own turn with --role assistant; the user's turns come from the "
            "client's prompt hook (it runs memdir with MEMDIR_ACTOR=user)",
        )


def vouch_user_turns(actor: Actor, turns: list[Turn], transcript: str | None) -> list[Turn]:
    """The turns as they may be recorded: a prompt hook's (actor.hook) user turns get the
    channel the harness's transcript earns them (memdir/harness.py: verified, trusted; else
    unverified, kept but never quoted); any other assistant's user turn is refused."""
    if not actor.hook:
        refuse_user_turns(actor, turns)
        return turns
    from memdir.harness import hook_channel

    return [
        journal.new_turn(turn.at, turn.role, turn.session, turn.text,
                         hook_channel(transcript, turn.text), turn.visibility, turn.secrecy,
                         turn.topic)
        if turn.role == "user" else turn
        for turn in turns
    ]  # fmt: skip


def record_turns(
    memdir: Memdir, turns: list[Turn], now: datetime, refresh: bool = True
) -> list[tuple[Turn, bool]]:
    """Append turns to the journal (already present ones are skipped), then refresh boot."""
    results = journal.add_turns(memdir, turns)
    if refresh and any(added for _, added in results):
        _refresh_boot(memdir, now)
    return results


def write_entry(memdir: Memdir, text: str, now: datetime, author: str) -> Entry:
    """A narrative entry (an end-of-thread reflection), then refresh boot."""
    entry = journal.write_entry(memdir, text, now, author, "reflection")
    _refresh_boot(memdir, now)
    return entry


def _refresh_boot(memdir: Memdir, now: datetime) -> None:
    # The journal write has happened; a boot document that cannot be rendered must not undo it.
    follow_up("the boot refresh", lambda: documents.refresh_boot(memdir, now))


def read_turns(
    memdir: Memdir,
    now: datetime,
    session: str | None = None,
    role: str | None = None,
    since: datetime | None = None,
    window: bool = False,
    everything: bool = False,
) -> list[dict[str, Any]]:
    """Turns as of `now` (oldest first), filtered, each with the memories that summarise it.

    Private, sealed and secret text is masked; `everything` (--all) shows private text too,
    never sealed or secret text (visibility.py; the files hold it anyway)."""
    book = journal.read_journal(memdir, until=now)
    turns = book.turns
    if window:
        settings = memdir.settings.journal
        turns = journal.raw_window(turns, now, settings.raw_window_turns, settings.raw_window_hours)
    summaries = book.summaries_of()
    rows = []
    for turn in turns:
        if (session and turn.session != session) or (role and turn.role != role):
            continue
        if since is not None and turn.moment < since:
            continue
        text = turn.text_on("journal read --all" if everything else "journal read")
        if text is None:
            continue
        row = {**turn.to_line(), "text": text}
        rows.append({**row, "trusted": turn.trusted, "summarised_by": summaries.get(turn.id, [])})
    return rows


def search_turns(memdir: Memdir, query: str, now: datetime, limit: int = 20,
                 everything: bool = False, surface: str = "journal search",
                 least: int = 1) -> list[dict[str, Any]]:  # fmt: skip
    """Full text over the journal's turns as of `now`: every turn holding at least `least` of
    the query's words (case and accents aside, a plural `s` off), best first — the most query
    words, then the rarest among those turns, then the newest — as the policy's `surface` row
    lets it show (`journal search`: private turns only with `everything`, sealed and secret
    never; withheld turns are no hits). So a detail said in the middle of an imported
    conversation can be found, not only what dream kept of it; recall's journal group and the
    context block's journal entries are this search too."""
    import math

    wanted = search_terms(query)
    if len(wanted) < least:
        return []
    book = journal.read_journal(memdir, until=now, holding=wanted, need=least)
    asked = ("private",) if everything else ()
    shown: list[tuple[Turn, str, set[str]]] = []
    for turn in book.turns:
        text = turn.text_on(surface, asked)
        if text is None:
            continue
        found = wanted & search_terms(text) if _may_hold(text, wanted) else set()
        if found and len(found) >= least:
            shown.append((turn, text, found))
    counts = {term: sum(1 for _, _, found in shown if term in found) for term in wanted}
    total = len(shown)  # (not len(shown) in the key: a list is empty while it sorts)
    summaries = book.summaries_of()

    def weight(found: set[str]) -> float:
        return sum(math.log(1 + total / counts[term]) for term in found)

    shown.sort(key=lambda hit: (-len(hit[2]), -weight(hit[2]), -hit[0].moment.timestamp()))
    return [{**turn.to_line(), "text": text, "trusted": turn.trusted, "matched": sorted(found),
             "summarised_by": summaries.get(turn.id, [])}
            for turn, text, found in shown[:limit]]  # fmt: skip


def _may_hold(text: str, wanted: set[str]) -> bool:
    """False when an ASCII text holds none of the words, even as part of a word: most turns
    are, and this spares them the word split (half of a search's time on a large journal)."""
    if not text.isascii():
        return True
    lowered = text.lower()
    return any(term in lowered for term in wanted)


def search_terms(text: str) -> set[str]:
    """The words of `text` a search matches on: lower case, accents off, a plural `s` off."""
    import unicodedata

    plain = unicodedata.normalize("NFKD", text.lower())
    plain = "".join(ch for ch in plain if not unicodedata.combining(ch))
    words = {word[:-1] if len(word) > 3 and word.endswith("s") else word
             for word in WORD.findall(plain)}  # fmt: skip
    return words - JOURNAL_SEARCH_STOP_WORDS
