"""Guarded writes for writers that cannot vouch for the user: the MCP server, and the command
line when an assistant runs it (MEMDIR_ACTOR=assistant, or an agent harness's shell).

A model can claim anything ("the user told me…"), so what it writes is checked against the raw
journal, where user turns arrive only by a trusted path — the command line run by the user
(e.g. a client's prompt hook calling `memdir journal add --role user`) or an import:

- teach: stored as a teaching only when its text is the user's own words, quoted from a
  trusted user turn of the last `window` (default 24 h), as a statement that keeps its
  polarity (below); otherwise it is stored as an inference awaiting the user's confirmation,
  and the reply says so.
- confirm: needs the user's words quoted from a trusted user turn recorded after the
  inference was made, that turn referring to the memory and the quote affirming it.
- reject: the assistant may withdraw its own unconfirmed inference; anything durable needs
  the user's words from a trusted turn recorded after it became durable, referring to it,
  the quote saying it is wrong.
- forget: needs the user's words from a trusted turn of the last `window`, referring to the
  memory, the quote asking to forget it.

Quotes are matched on words: case, punctuation, typographic quotes and spacing are ignored,
and the quote must cover whole words of one turn. Only the user's own writing counts: material
the turn marks as pasted — a ``` fenced block, lines quoted with '>', or text between two
separators of three or more '-', '=', '_' or '*' — is someone else's words (an email, a web
page) even though the user sent it, so a quote from it does not vouch for anything.

Whether the words decide *this* memory is quote_guard.py's reading (docs/MCP.md, "The
teaching guard"): the quote, where it sits in its turn, must express the operation — not in a
question, a hypothetical, a conditional, reported speech or sarcasm, not cut out of a negation
— and on this memory (its id, or enough of its content words; one shared word is not enough).
What it cannot decide it refuses, and the reply tells the assistant to ask the user.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from typing import Any

from memdir.actor import ACTORS, ASSISTANT, HARNESS_MARKERS, Actor, actor_from  # noqa: F401
from memdir.archive_format import journal, lifecycle
from memdir.archive_format.clock import parse_time
from memdir.archive_format.errors import LifecycleError
from memdir.archive_format.fold import MemoryState
from memdir.archive_format.journal import Turn
from memdir.archive_format.memdir import Memdir
from memdir.archive_format.settings import McpSettings
from memdir.indexers.text import QUOTE_NEGATORS, QUOTE_WORD, fold
from memdir.usecases import quote_guard

DEFAULT_WINDOW = McpSettings().quote_window  # the default of mcp.quote_window, declared once


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
    return " ".join(QUOTE_WORD.findall(fold(text)))


POLARITY = QUOTE_NEGATORS  # what turns a quote's meaning, declared once (indexers/text.py)
_POLARITY_PHRASES = re.compile(r"\b(?:no longer|any more|used to)\b")
_CLAUSE = re.compile(r"[.!?;:,\n()\[\]—–]+|\s-+\s|\b(?:but|although|though|however|whereas)\b")


@dataclass(frozen=True)
class Quoted:
    """Where a quote was found: the turn, and the words around it that the quote leaves out."""

    turn: Turn
    left_out: str  # the rest of the quote's clauses (what a polarity check reads)
    question: bool  # the quote sits in a sentence that ends with '?'

    @property
    def keeps_polarity(self) -> bool:
        """True when no polarity-turning word around the quote (in its clauses) is dropped."""
        return self.keeps(self.left_out)

    @staticmethod
    def keeps(left_out: str) -> bool:
        return not set(left_out.split()) & POLARITY and not _POLARITY_PHRASES.search(left_out)


def _clauses(text: str) -> list[tuple[list[str], bool]]:
    """The turn's own words as clauses (their words, and whether their sentence asks)."""
    folded = fold(text)
    found: list[tuple[list[str], bool]] = []
    for sentence in re.split(r"(?<=[.!?])\s+|\n+", folded):
        asks = sentence.rstrip().endswith("?")
        for clause in _CLAUSE.split(sentence):
            found.append((QUOTE_WORD.findall(clause), asks))
    return [(words, asks) for words, asks in found if words]


def _locate(wanted: list[str], text: str) -> tuple[str, bool] | None:
    """Where the quote sits in `text`: the words of its clauses it leaves out, and whether its
    sentence asks (of all its places, the last one that keeps polarity, else the last)."""
    clauses = _clauses(text)
    flat = [(word, number) for number, (words, _) in enumerate(clauses) for word in words]
    size = len(wanted)
    best: tuple[str, bool] | None = None
    for begin in range(len(flat) - size + 1):
        if [word for word, _ in flat[begin : begin + size]] != wanted:
            continue
        touched = range(flat[begin][1], flat[begin + size - 1][1] + 1)
        outside = [word for position, (word, number) in enumerate(flat)
                   if number in touched and not begin <= position < begin + size]  # fmt: skip
        here = (" ".join(outside), any(clauses[number][1] for number in touched))
        if best is None or not Quoted.keeps(best[0]) or Quoted.keeps(here[0]):
            best = here
    return best


def find_quotes(
    memdir: Memdir, quote: str, after: datetime, until: datetime, strictly_after: bool = False
) -> list[Quoted]:
    """The trusted user turns in (after, until] (or [after, until]) whose own words (see
    own_words) contain `quote` as whole words, latest first, with where it sits in each."""
    wanted = normalise(quote).split()
    if not wanted:
        return []
    needle = f" {' '.join(wanted)} "
    book = journal.read_journal(memdir, until=until, since=after)
    found: list[Quoted] = []
    for turn in reversed(book.turns):
        if turn.role != "user" or not turn.trusted:
            continue
        moment = turn.moment
        if moment < after or (strictly_after and moment == after):
            continue
        own = own_words(turn.text)
        if needle not in f" {normalise(own)} ":
            continue
        place = _locate(wanted, own)
        if place is not None:
            found.append(Quoted(turn, *place))
    return found


def find_quote(
    memdir: Memdir, quote: str, after: datetime, until: datetime, strictly_after: bool = False
) -> Turn | None:
    """The latest trusted user turn in the range whose own words contain `quote`."""
    found = find_quotes(memdir, quote, after, until, strictly_after)
    return found[0].turn if found else None


def content_words(text: str) -> set[str]:
    """A memory's content words for the reference measure (quote_guard.content_words)."""
    return quote_guard.content_words(text)


def refers_to(text: str, state: MemoryState) -> bool:
    """Whether `text` (a user turn) is about the memory: it names the memory's id (a prefix
    of at least 6 characters) or shares at least min(2, n) of its n content words."""
    memory = state.memory.text if state.memory is not None else ""
    return quote_guard.refers(quote_guard.words_of(text), memory, state.id, raw=text)


def judged(
    found: list[Quoted], operation: str, quote: str, memory: str, memory_id: str = "", **link: str
) -> tuple[Quoted | None, str]:
    """The first of the turns holding the quote in which it says `operation` on the memory
    (quote_guard.judge), or why none does."""
    reason = ""
    for quoted in found:
        verdict = quote_guard.judge(operation, own_words(quoted.turn.text), quote, memory,
                                    memory_id, **link)  # fmt: skip
        if verdict:
            return quoted, ""
        reason = reason or f"in the user's turn {quoted.turn.id}, {verdict.reason}"
    return None, reason


# who runs the command line -------------------------------------------------------------------
# Environment variables agent harnesses set in the shells they give a model (docs/MCP.md,
# "An actor for every command-line write"): their presence means an assistant is typing.
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
    refused: bool | None = None  # True when the guard said no (the user's words are missing)

    def to_dict(self) -> dict[str, Any]:
        return {key: value for key, value in asdict(self).items() if value is not None}


def teach(
    memdir: Memdir,
    text: str,
    now: datetime,
    window: timedelta = DEFAULT_WINDOW,
    via: str = "MCP",
    **options: Any,
) -> Outcome:
    """A teaching if `text` is quoted from a recent trusted user turn as a statement that keeps
    its polarity, else an inference."""
    found = find_quotes(memdir, text, now - window, now)
    chosen, reason = judged(found, "teach", text, text)
    hours = window.total_seconds() / 3600
    if chosen is not None:
        turn = chosen.turn
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
        "intent": f"offered as a teaching {via}, without the user's words to back it",
    }
    written = lifecycle.infer(memdir, text, now, author=ASSISTANT, meta=meta, **options)
    state = lifecycle.load_view(memdir, now).resolve(written.id)
    expires = state.memory.expires if state.memory else None
    if found:
        why = f"the user's words do not state it: {reason}"
    else:
        why = (
            f"no user turn recorded by a trusted path (the client's prompt hook or an import) in "
            f"the last {hours:g} h contains this text word for word in the user's own writing "
            "(pasted material — a fenced block, '>' lines, text between separators — does not "
            "count)"
        )
    return Outcome(
        written.id,
        True,
        state.status,
        f"Stored as an INFERENCE, not a teaching: {why}. It is provisional (recalled at reduced "
        f"weight) and expires {expires} unless the user confirms it. Ask the user; once their "
        "reply is in the journal, call `confirm` with their words — or `teach` again with the "
        "user's exact words.",
        stored_as="inference",
    )


def _deciding(
    memdir: Memdir,
    state: MemoryState,
    quote: str | None,
    operation: str,
    after: datetime,
    until: datetime,
    strictly_after: bool,
) -> tuple[Quoted | None, str]:
    """The trusted user turn whose quoted words decide this memory, or why there is none."""
    if not quote or not normalise(quote):
        return None, "no words of the user were quoted"
    found = find_quotes(memdir, quote, after, until, strictly_after)
    if not found:
        return None, "no user turn recorded by a trusted path in that time contains those words"
    memory = state.memory.text if state.memory is not None else ""
    return judged(found, operation, quote, memory, state.id)


def vouch(
    memdir: Memdir,
    operation: str,
    quote: str | None,
    now: datetime,
    memory: str,
    memory_id: str = "",
    window: timedelta = DEFAULT_WINDOW,
    **link: str,
) -> tuple[Quoted | None, str]:
    """For the writes without a guard of their own (link, people, self) and MCP `show` of a
    private memory: the trusted user turn of the last `window` whose quoted words say
    `operation` on `memory` (for link, `other`/`other_id`/`link_type` name the second
    memory and the link), or why there is none."""
    if not quote or not normalise(quote):
        return None, "no words of the user were quoted"
    found = find_quotes(memdir, quote, now - window, now)
    if not found:
        return None, "no user turn recorded by a trusted path in that time contains those words"
    return judged(found, operation, quote, memory, memory_id, **link)


def confirm(memdir: Memdir, given: str, quote: str, now: datetime) -> Outcome:
    """Confirm an inference with the user's words, from a trusted turn made after it that is
    about it, affirming it."""
    state = lifecycle.load_view(memdir, now).resolve(given, named=_nameable)
    _require_inference(state)
    if state.status in ("durable", "superseded"):
        return Outcome(state.id, False, state.status, "Already confirmed; nothing to do.")
    found, why = _deciding(memdir, state, quote, "confirm", parse_time(state.created), now, True)
    if found is None:
        return Outcome(
            state.id,
            False,
            state.status,
            f"NOT confirmed: {why}. It needs the user's answer, recorded by a trusted path after "
            "this inference was made, about this memory and saying yes. Ask the user whether "
            "it is right; when their answer is in the journal, call `confirm` again quoting it.",
            refused=True,
        )
    evidence = _cite(quote, found.turn)
    memory_id, _ = lifecycle.confirm(memdir, state.id, now, actor="user", evidence=evidence)
    return Outcome(memory_id, True, "durable", "Confirmed by the user's words.", evidence=evidence)


def reject(
    memdir: Memdir, given: str, reason: str, now: datetime, quote: str | None = None
) -> Outcome:
    """Withdraw an own unconfirmed inference, or reject anything with the user's words saying
    it is wrong."""
    state = lifecycle.load_view(memdir, now).resolve(given, named=_nameable)
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
    found, why = _deciding(memdir, state, quote, "reject", since, now, True)
    if found is None:
        return Outcome(
            state.id,
            False,
            state.status,
            f"NOT rejected: this memory is {state.status} ({memory.source if memory else '?'}); "
            f"rejecting it needs the user's words saying it is wrong, quoted from a turn about "
            f"it recorded by a trusted path after it became durable ({why}). Ask the user.",
            refused=True,
        )
    evidence = _cite(quote or "", found.turn)
    lifecycle.reject(memdir, state.id, f"{reason.strip()} — {evidence}", now, actor="user")
    return Outcome(state.id, True, "rejected", "Rejected on the user's words.", evidence=evidence)


def forget(
    memdir: Memdir, given: str, quote: str, now: datetime, window: timedelta = DEFAULT_WINDOW
) -> Outcome:
    """Forget a memory when a recent trusted user turn about it asks for it (quoted)."""
    state = lifecycle.load_view(memdir, now).resolve(given, named=_nameable)
    if state.status == "forgotten":
        return Outcome(state.id, False, "forgotten", "Already forgotten; nothing to do.")
    found, why = _deciding(memdir, state, quote, "forget", now - window, now, False)
    if found is None:
        return Outcome(
            state.id,
            False,
            state.status,
            f"NOT forgotten: {why}. Forgetting erases the text, so it needs the user's request, "
            f"about this memory, quoted from a turn recorded by a trusted path in the last "
            f"{window.total_seconds() / 3600:g} h. Ask the user.",
            refused=True,
        )
    lifecycle.forget(memdir, state.id, now, actor="user")
    return Outcome(
        state.id,
        True,
        "forgotten",
        "Forgotten: the text is gone from the shelves (git history, if any, still holds it).",
        evidence=_cite(quote, found.turn),
    )


# what an assistant may see of one memory ----------------------------------------------------
SHOW_SURFACE = "show (MCP)"


def _nameable(state: MemoryState) -> bool:
    """Whether an assistant's error message may name this memory's id (visibility.py's row
    for MCP `show`, asked for nothing)."""
    return state.text_on(SHOW_SURFACE) is not None


def show(
    memdir: Memdir, given: str, quote: str | None, now: datetime, window: timedelta = DEFAULT_WINDOW
) -> dict[str, Any]:
    """One memory as an assistant may see it (MCP `show`): a private one only when `quote` is
    the user's words from a trusted turn of the last `window` asking about it (what confirm
    requires of a decision); a memory it may not see is not found, and an ambiguous prefix
    lists only ids it may see."""
    view = lifecycle.load_view(memdir, now)
    wanted = given.strip()
    vouched: set[str] = set()
    found = find_quotes(memdir, quote, now - window, now) if quote and normalise(quote) else []
    for state in view if found else ():
        named = state.id == wanted or state.id.startswith((wanted, f"m-{wanted}"))
        if named and state.memory is not None and not _nameable(state):
            if (
                state.text_on(SHOW_SURFACE, ("private",)) is not None
                and judged(found, "show", quote or "", state.memory.text, state.id)[0]
            ):
                vouched.add(state.id)
    state = view.resolve(given, among=lambda s: _nameable(s) or s.id in vouched, named=_nameable)
    asked = ("private",) if state.id in vouched else ()
    return state.shown_on(SHOW_SURFACE, asked) or {"id": state.id, "status": state.status}


def _require_inference(state: MemoryState) -> None:
    if state.memory is None:
        raise LifecycleError(f"{state.id} was forgotten")
    if state.memory.source != "inference":
        raise LifecycleError(
            f"{state.id} is a {state.memory.source}, not an inference; only inferences are "
            "confirmed"
        )


def user(name: str | None) -> str:
    """The author or actor a user's write records: 'user', or 'user:NAME' when several people
    share the memdir (`--by`)."""
    return f"user:{name}" if name else "user"


def refuse_turn_forget(actor: Actor) -> None:
    """Journal turns are the user's record: an assistant cannot erase them from its shell."""
    if actor.assistant:
        raise LifecycleError(
            f"an assistant cannot forget journal turns ({actor.reason})",
            hint="ask the user to run `memdir journal forget` in their own shell",
        )
