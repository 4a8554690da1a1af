"""Guarded writes for clients that cannot vouch for the user (the MCP server).

A model on the other end of MCP can claim anything ("the user told me…"), so what it writes
is checked against the raw journal, where user turns arrive only by a trusted path — the
command line (e.g. a client's prompt hook calling `memdir journal add --role user`) or an
import:

- teach: stored as a teaching only when its text is the user's own words, quoted from a
  trusted user turn of the last `window` (default 24 h); otherwise it is stored as an
  inference awaiting the user's confirmation, and the reply says so.
- confirm: needs the user's words quoted from a trusted user turn recorded after the
  inference was made; they become the confirm event's evidence. Otherwise nothing changes
  and the reply asks the model to ask the user.
- reject: the assistant may withdraw its own unconfirmed inference; anything durable needs
  the user's words from a trusted turn recorded after it became durable.
- forget: needs the user's words from a trusted turn of the last `window`.

Quotes are matched on words: case, punctuation, typographic quotes and spacing are ignored,
and the quote must cover whole words of one turn. Only the user's own writing counts: material
the turn marks as pasted — a ``` fenced block, lines quoted with '>', or text between two
separators of three or more '-', '=', '_' or '*' — is someone else's words (an email, a web
page) even though the user sent it, so a quote from it does not vouch for anything.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from typing import Any

from memdir.archive_format import journal, lifecycle
from memdir.archive_format.clock import parse_time
from memdir.archive_format.fold import MemoryState
from memdir.archive_format.journal import Turn
from memdir.archive_format.memdir import Memdir
from memdir.archive_format.settings import McpSettings

DEFAULT_WINDOW = McpSettings().quote_window  # the default of mcp.quote_window, declared once
ASSISTANT = "assistant"
_WORD = re.compile(r"\w+(?:'\w+)*")
_QUOTES = str.maketrans({"’": "'", "‘": "'", "ʼ": "'", "“": '"', "”": '"'})


_FENCED = re.compile(r"```.*?(?:```|\Z)", re.DOTALL)
_QUOTED_LINE = re.compile(r"^[ \t]*>.*$", re.MULTILINE)
_SEPARATOR = re.compile(r"-{3,}|={3,}|_{3,}|\*{3,}")


def own_words(text: str) -> str:
    """The turn without what it marks as pasted: fenced blocks, '>' lines, and each span
    between two separators (an unpaired last separator encloses nothing)."""
    text = _QUOTED_LINE.sub(" ", _FENCED.sub(" ", text))
    pieces = _SEPARATOR.split(text)
    enclosed = range(1, len(pieces) - 1, 2)
    return " ".join(piece for number, piece in enumerate(pieces) if number not in enclosed)


def normalise(text: str) -> str:
    """Words only, case-folded: the form quotes are compared in."""
    folded = unicodedata.normalize("NFKC", text).translate(_QUOTES).casefold()
    return " ".join(_WORD.findall(folded))


def find_quote(
    memdir: Memdir, quote: str, after: datetime, until: datetime, strictly_after: bool = False
) -> Turn | None:
    """The latest trusted user turn in (after, until] (or [after, until]) whose own words (see
    own_words) contain `quote`."""
    wanted = normalise(quote)
    if not wanted:
        return None
    needle = f" {wanted} "
    book = journal.read_journal(memdir, until=until, since=after)
    for turn in reversed(book.turns):
        if turn.role != "user" or not turn.trusted:
            continue
        moment = turn.moment
        if moment < after or (strictly_after and moment == after):
            continue
        if needle in f" {normalise(own_words(turn.text))} ":
            return turn
    return None


def _cite(quote: str, turn: Turn) -> str:
    flat = " ".join(quote.split())
    return f'the user: "{flat}" (journal turn {turn.id}, {turn.at}, via {turn.channel})'


@dataclass(frozen=True)
class Outcome:
    """What a guarded write did, with a message meant for the model."""

    id: str
    done: bool
    status: str
    message: str
    stored_as: str | None = None
    evidence: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {key: value for key, value in asdict(self).items() if value is not None}


def teach(
    memdir: Memdir, text: str, now: datetime, window: timedelta = DEFAULT_WINDOW, **options: Any
) -> Outcome:
    """A teaching if `text` is quoted from a recent trusted user turn, else an inference."""
    turn = find_quote(memdir, text, now - window, now)
    hours = window.total_seconds() / 3600
    if turn is not None:
        evidence = _cite(text, turn)
        meta = {**(options.pop("meta", None) or {}), "evidence": evidence}
        options["session"] = options.get("session") or turn.session
        written = lifecycle.teach(memdir, text, now, author="user", meta=meta, **options)
        return Outcome(
            written.id,
            True,
            "durable",
            "Stored as a teaching: the text is the user's own words"
            + ("" if written.added else " (it was already stored)"),
            stored_as="teaching",
            evidence=evidence,
        )
    meta = {
        **(options.pop("meta", None) or {}),
        "intent": "offered as a teaching over MCP, without the user's words to back it",
    }
    written = lifecycle.infer(memdir, text, now, author=ASSISTANT, meta=meta, **options)
    state = lifecycle.load_view(memdir, now).resolve(written.id)
    expires = state.memory.expires if state.memory else None
    return Outcome(
        written.id,
        True,
        state.status,
        f"Stored as an INFERENCE, not a teaching: no user turn recorded by a trusted path (the "
        f"client's prompt hook or an import) in the last {hours:g} h contains this text word "
        f"for word in the user's own writing (pasted material — a fenced block, '>' lines, text "
        f"between separators — does not count). It is provisional (recalled at reduced weight) "
        f"and expires {expires} unless the user confirms it. Ask the user; once their reply is "
        "in the journal, call `confirm` with their words — or `teach` again with the user's "
        "exact words.",
        stored_as="inference",
    )


def confirm(memdir: Memdir, given: str, quote: str, now: datetime) -> Outcome:
    """Confirm an inference with the user's words from a trusted turn made after it."""
    state = lifecycle.load_view(memdir, now).resolve(given)
    _require_inference(state)
    if state.status in ("durable", "superseded"):
        return Outcome(state.id, False, state.status, "Already confirmed; nothing to do.")
    turn = find_quote(memdir, quote, parse_time(state.created), now, strictly_after=True)
    if turn is None:
        return Outcome(
            state.id,
            False,
            state.status,
            "NOT confirmed: no user turn recorded by a trusted path after this inference was "
            "made contains those words. Ask the user whether it is right; when their answer is "
            "in the journal, call `confirm` again quoting it.",
        )
    evidence = _cite(quote, turn)
    memory_id, _ = lifecycle.confirm(memdir, state.id, now, actor="user", evidence=evidence)
    return Outcome(memory_id, True, "durable", "Confirmed by the user's words.", evidence=evidence)


def reject(
    memdir: Memdir, given: str, reason: str, now: datetime, quote: str | None = None
) -> Outcome:
    """Withdraw an own unconfirmed inference, or reject anything with the user's words."""
    state = lifecycle.load_view(memdir, now).resolve(given)
    if state.status == "rejected":
        return Outcome(state.id, False, "rejected", "Already rejected; nothing to do.")
    memory = state.memory
    own_guess = (
        memory is not None
        and memory.source == "inference"
        and state.status in ("provisional", "expired")
    )
    if own_guess:
        lifecycle.reject(memdir, state.id, reason, now, actor=ASSISTANT)
        return Outcome(state.id, True, "rejected", "The unconfirmed inference was withdrawn.")
    since = parse_time(state.durable_since or state.created)
    turn = find_quote(memdir, quote, since, now, strictly_after=True) if quote else None
    if turn is None:
        return Outcome(
            state.id,
            False,
            state.status,
            f"NOT rejected: this memory is {state.status} ({memory.source if memory else '?'}); "
            "rejecting it needs the user's words, quoted from a turn recorded by a trusted path "
            "after it became durable. Ask the user.",
        )
    evidence = _cite(quote or "", turn)
    lifecycle.reject(memdir, state.id, f"{reason.strip()} — {evidence}", now, actor="user")
    return Outcome(state.id, True, "rejected", "Rejected on the user's words.", evidence=evidence)


def forget(
    memdir: Memdir, given: str, quote: str, now: datetime, window: timedelta = DEFAULT_WINDOW
) -> Outcome:
    """Forget a memory when a recent trusted user turn asks for it (quoted)."""
    state = lifecycle.load_view(memdir, now).resolve(given)
    if state.status == "forgotten":
        return Outcome(state.id, False, "forgotten", "Already forgotten; nothing to do.")
    turn = find_quote(memdir, quote, now - window, now)
    if turn is None:
        return Outcome(
            state.id,
            False,
            state.status,
            "NOT forgotten: forgetting erases the text, so it needs the user's request quoted "
            f"from a turn recorded by a trusted path in the last {window.total_seconds() / 3600:g} "
            "h. Ask the user.",
        )
    lifecycle.forget(memdir, state.id, now, actor="user")
    return Outcome(
        state.id,
        True,
        "forgotten",
        "Forgotten: the text is gone from the shelves (git history, if any, still holds it).",
        evidence=_cite(quote, turn),
    )


def _require_inference(state: MemoryState) -> None:
    from memdir.archive_format.errors import LifecycleError

    if state.memory is None:
        raise LifecycleError(f"{state.id} was forgotten")
    if state.memory.source != "inference":
        raise LifecycleError(
            f"{state.id} is a {state.memory.source}, not an inference; only inferences are "
            "confirmed"
        )
