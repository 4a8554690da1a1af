"""The one policy for what a surface may show: for every (surface, record) pair, whether the
record appears, with its text or masked, and how it is marked (docs/POLICY.md is generated
from `SURFACES` below, and tests/test_policy.py checks every surface against it).

A memory has a status (fold.py) and a `visibility`; a turn has a `visibility` and a `secrecy`
(docs/FORMAT.md). Both fold into one *exposure*, from least to most withheld:

    normal     shown
    sensitive  (a turn's secrecy) shown to the owner; never quoted verbatim into a prompt
    private    shown only to a reader who asked for private material
    sealed     never shown (kept in the files, which the owner can read anyway, and exports)
    secret     (a turn's secrecy) the same as sealed, whatever the turn's visibility

A visibility outside the format (a hand-edited line, a later minor version's value) counts as
sealed: the rule fails closed. A secrecy other than `secret` or `sensitive` does not withhold.

A surface gives each status and each exposure one of four outcomes (`Show`); a record gets the
stricter of its two. `ASKED` means "left out unless the reader asked for it" (an
`--include-private`, `--include-expired` or `--status` flag, a tool's `include_private`); what
appears with a status or exposure other than durable/normal carries it as a marker (a
`[provisional]` tag in text output, the `status`/`visibility` fields in `--json`).

`withheld` and `shown` are the exposure rule on its own, for the readers that predate the
matrix (recall's filter stage names the reason in `--explain`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import Enum

VISIBILITIES = ("normal", "private", "sealed")
SECRECY = ("public", "sensitive", "secret")


class Withheld(str, Enum):
    """Why something is not shown (the value is what recall's `--explain` prints)."""

    SECRET = "secret"
    SEALED = "sealed"
    PRIVATE = "private"
    UNKNOWN = "unknown visibility"


def withheld(
    visibility: str, secrecy: str = "public", *, include_private: bool = False
) -> Withheld | None:
    """Why a memory or turn with this visibility (and secrecy) is withheld; None: it is shown."""
    if secrecy == "secret":
        return Withheld.SECRET
    if visibility == "normal":
        return None
    if visibility == "private":
        return None if include_private else Withheld.PRIVATE
    if visibility == "sealed":
        return Withheld.SEALED
    return Withheld.UNKNOWN


def shown(visibility: str, secrecy: str = "public", *, include_private: bool = False) -> bool:
    """Whether a memory or turn with this visibility (and secrecy) may be shown."""
    return withheld(visibility, secrecy, include_private=include_private) is None


def leaves(visibility: str, secrecy: str = "public") -> bool:
    """Whether a record's text may be handed to a program the user configured (dream's
    summariser, `distill.command`): what the dream surface may quote — never private, sealed
    or secret text."""
    return decide("dream", None, exposure(visibility, secrecy)) is Show.TEXT


def summary_visibility(secrecies: Iterable[str]) -> str:
    """The visibility of a memory summarising turns: private when any of them is sensitive."""
    return "private" if "sensitive" in secrecies else "normal"


# the matrix ------------------------------------------------------------------------------------
class Show(str, Enum):
    """What a surface does with a record."""

    TEXT = "text"  # it appears with its text (and its marker)
    ASKED = "asked"  # left out unless the reader asked for it; then as TEXT
    MASKED = "masked"  # it appears (id, time, status) with its text replaced by `[why]`
    OMITTED = "omitted"  # it does not appear


STATUSES = ("durable", "provisional", "expired", "rejected", "superseded", "forgotten")
EXPOSURES = ("normal", "sensitive", "private", "sealed", "secret")
_RANK = {Show.OMITTED: 0, Show.MASKED: 1, Show.TEXT: 2}


def exposure(visibility: str, secrecy: str = "public") -> str:
    """A memory's or turn's place on the one axis of `EXPOSURES` (unknown visibility: sealed)."""
    if secrecy == "secret":
        return "secret"
    if visibility not in VISIBILITIES:
        return "sealed"
    if visibility == "normal" and secrecy == "sensitive":
        return "sensitive"
    return visibility


@dataclass(frozen=True)
class Surface:
    """One surface: the commands and MCP tools that are it, and its outcome per status and
    per exposure (a turn has no status)."""

    name: str
    cli: tuple[str, ...]
    mcp: tuple[str, ...]
    exposure: dict[str, Show]
    status: dict[str, Show] = field(default_factory=dict)  # empty: a surface of turns
    asked_by: str = ""
    note: str = ""
    persona: Show = Show.TEXT  # a memory scoped to other personas than the one the reader named
    kinds: tuple[str, ...] = ("memories",)  # what it shows: memories, turns or both
    http: tuple[str, ...] = ()  # the routes of `memdir ui`'s API that are it (docs/HTTP.md)


def _row(*outcomes: str) -> dict[str, Show]:
    return {name: Show(value) for name, value in zip(STATUSES, outcomes, strict=True)}


def _exposed(*outcomes: str) -> dict[str, Show]:
    return {name: Show(value) for name, value in zip(EXPOSURES, outcomes, strict=True)}


_RECALLED = _row("text", "text", "asked", "omitted", "omitted", "omitted")
_RECALLED_EXPOSURE = _exposed("text", "text", "asked", "omitted", "omitted")
_NAMED = _row("text", "text", "text", "text", "text", "masked")
_NAMED_EXPOSURE = _exposed("text", "text", "text", "masked", "masked")
_LISTED_EXPOSURE = _exposed("text", "text", "masked", "masked", "masked")
_LIVE = _row("text", "text", "omitted", "omitted", "omitted", "omitted")
_PROMPT_EXPOSURE = _exposed("text", "omitted", "omitted", "omitted", "omitted")
_ARCHIVED = _row("text", "text", "text", "text", "text", "masked")

SURFACES: dict[str, Surface] = {
    surface.name: surface
    for surface in (
        Surface("recall", ("recall",), ("recall",), _RECALLED_EXPOSURE, _RECALLED,
                "--include-expired, --include-private (the tool's include_private)",
                "--explain's candidate pool masks the text of what the filters drop",
                persona=Show.OMITTED),
        Surface("search", ("search",), ("search",), _RECALLED_EXPOSURE, _RECALLED,
                "--include-expired, --include-private (the tool's include_private)"),
        Surface("similar", ("similar",), (), _RECALLED_EXPOSURE, _RECALLED,
                "--include-expired, --include-private"),
        Surface("list", ("list",), (), _LISTED_EXPOSURE,
                _row("text", "text", "asked", "asked", "asked", "asked"), "--status",
                "a forgotten memory has no text: asked for, its row shows `—`",
                persona=Show.OMITTED, http=("GET /api/memories",)),
        Surface("show", ("show", "decay"), (), _NAMED_EXPOSURE, _NAMED,
                note="naming the id is asking for it: private text is shown"),
        Surface("show (MCP)", (), ("show",), _exposed("text", "text", "asked", "omitted", "omitted"),
                _NAMED, "quote: the user's words asking about it, from a trusted turn of the "
                "quote window (what confirm requires)",
                "an assistant naming an id is not the user asking: a private memory is shown "
                "only on the user's quoted words, and an id the tool may not show is not "
                "found and never listed"),
        Surface("log", ("log",), (), _NAMED_EXPOSURE, _NAMED),
        Surface("attachments", ("attachments",), (), _NAMED_EXPOSURE, _NAMED,
                note="a memory's attached files with what was read from them (text, date, "
                "place, title); naming the id is asking for it, as in show: a sealed memory's "
                "are masked, a forgotten memory's files are gone"),
        Surface("attachments (MCP)", (), ("attachments",),
                _exposed("text", "text", "omitted", "omitted", "omitted"), _NAMED,
                note="the assistant naming an id is not the user asking: a private or sealed "
                "memory's files are not found, as an id that does not exist"),
        Surface("attachment get", ("attachment get",), (),
                _exposed("text", "text", "text", "omitted", "omitted"),
                _row("text", "text", "text", "text", "text", "omitted"),
                note="writes the attached file where the user names it: not a sealed memory's "
                "(its file stays in the git-ignored attachments/sealed/), not a forgotten "
                "one's (removed)"),
        Surface("island show", ("island show",), (), _LISTED_EXPOSURE,
                _row("text", "text", "text", "text", "text", "omitted"),
                note="an island's members with their status; a forgotten memory has left every "
                "island"),
        Surface("links", ("links",), (), _LISTED_EXPOSURE,
                _row("text", "text", "text", "text", "text", "omitted"),
                note="a memory's neighbourhood over its typed links; the walk does not pass "
                "through a memory the row leaves out"),
        Surface("island show (MCP)", (), ("island_show",),
                _exposed("text", "text", "omitted", "omitted", "omitted"),
                _row("text", "text", "text", "text", "text", "omitted"),
                note="the assistant asking is not the user asking: a private or sealed member is "
                "left out, not masked"),
        Surface("annotate", ("annotate", "distill"), (), _LISTED_EXPOSURE,
                _row("text", "text", "text", "omitted", "omitted", "omitted"),
                note="the index's searchable memories (an expired inference stays searchable)"),
        Surface("review", ("review",), (), _PROMPT_EXPOSURE,
                _row("asked", "text", "omitted", "omitted", "asked", "omitted"),
                note="a durable memory appears only as a side of a contradiction candidate or "
                "as a stale hard fact; a superseded teaching only as the older side of sleep's "
                "automatic supersede, with its undo"),
        Surface("journal read", ("journal read",), (),
                _exposed("text", "text", "masked", "masked", "masked"), kinds=("turns",),
                http=("GET /api/journal",)),
        Surface("journal read --all", ("journal read --all",), (),
                _exposed("text", "text", "text", "masked", "masked"), kinds=("turns",),
                http=("GET /api/journal?all=true",)),
        Surface("journal search", ("journal search",), (),
                _exposed("text", "text", "asked", "omitted", "omitted"), asked_by="--all",
                note="full text over the turns; a turn it may not show is not a hit (a masked "
                "hit would tell what a private turn says)", kinds=("turns",)),
        Surface("recall --include-journal", ("recall --include-journal",), (),
                _exposed("text", "text", "asked", "omitted", "omitted"),
                asked_by="--include-private",
                note="the journal group beside the memories: verbatim turns that hold the "
                "query's words, as `journal search` finds them; a turn it may not show is not "
                "a hit", kinds=("turns",)),
        Surface("recall include_journal (MCP)", (), ("recall",), _PROMPT_EXPOSURE,
                note="the journal group the assistant gets: normal turns only — a sensitive "
                "turn is never quoted verbatim to a model, and a private one not even with "
                "include_private (the assistant asking is not the user asking)",
                kinds=("turns",)),
        Surface("song list", ("song list",), (), _LISTED_EXPOSURE,
                _row("text", "text", "omitted", "omitted", "omitted", "omitted"),
                note="only memories of type SONG, live ones; a private or sealed song is listed, "
                "masked"),
        Surface("song list (MCP)", (), ("song_list",), _PROMPT_EXPOSURE,
                _row("text", "text", "omitted", "omitted", "omitted", "omitted"),
                note="the assistant gets the normal songs only"),
        Surface("room", ("room",), (), _exposed("text", "text", "omitted", "omitted", "omitted"),
                note="the affect of a session's recent turns, each with the start of its "
                "text; a turn it may not show counts in no figure", kinds=("turns",)),
        Surface("room (MCP)", (), ("room",), _PROMPT_EXPOSURE,
                note="the assistant reads the room from normal turns only", kinds=("turns",)),
        Surface("journal_read (MCP)", (), ("journal_read",),
                _exposed("text", "text", "asked", "omitted", "omitted"), asked_by="include_private",
                kinds=("turns",)),
        Surface("ring", ("ring",), ("ring",), _exposed("text", "omitted", "masked", "omitted", "omitted"),
                _LIVE, note="state/ring.yaml never stores text the ring may not show"),
        Surface("context", ("context",), (), _PROMPT_EXPOSURE, _LIVE,
                note="the block for one prompt (the per-prompt hook's): one recall that never "
                "includes private or expired memories, only what bears on the prompt and nothing "
                "unless a durable memory it carries grounds it; a provisional memory is shown as "
                "a question for the user", http=("GET /api/context",)),
        Surface("context (journal)", ("context",), (), _PROMPT_EXPOSURE,
                note="the block's journal turns, only when no memory answers the prompt: turns "
                "of other conversations that hold its words, as `journal search` finds them; "
                "normal turns only, as the assistant's journal group", kinds=("turns",),
                http=("GET /api/context",)),
        Surface("wake", ("wake",), ("wake",), _PROMPT_EXPOSURE,
                _row("text", "text", "omitted", "omitted", "asked", "omitted"),
                note="also documents/wake.md; a provisional memory is in the review queue; "
                "turns in the raw window; a superseded teaching only as the older side of "
                "sleep's automatic supersede (Needs your decision)", kinds=("memories", "turns")),
        Surface("core", ("core",), ("core",), _PROMPT_EXPOSURE,
                _row("text", "omitted", "omitted", "omitted", "omitted", "omitted"),
                note="only durable hard facts and high-importance milestones (and the self "
                "notes): a durable memory that is neither is not core"),
        Surface("boot", ("boot",), ("boot",), _PROMPT_EXPOSURE,
                _row("text", "text", "text", "text", "asked", "omitted"),
                note="also documents/boot.md; expired and rejected ones as recent events; a "
                "superseded teaching as in wake"),
        Surface("sleep --json", ("sleep --json",), (), _LISTED_EXPOSURE, _LIVE,
                note="`decay.weakest`, the live memories fading most: private and sealed ones "
                "masked; its dream part follows dream's row", kinds=("memories", "turns")),
        Surface("dream", ("dream", "sleep"), (),
                _exposed("text", "text", "omitted", "omitted", "omitted"),
                note="what a summary may quote; a summary of a sensitive turn is private",
                kinds=("turns",)),
        Surface("export", ("export",), (), _exposed("text", "text", "text", "text", "text"),
                _ARCHIVED, note="a copy of the canonical files: only the owner names its file; "
                "a forgotten memory is its tombstone", kinds=("memories", "turns")),
        Surface("export --encrypt", ("export --encrypt",), (),
                _exposed("text", "text", "text", "text", "text"), _ARCHIVED,
                kinds=("memories", "turns")),
        # the views of `memdir ui` (cli/web/), each with the API routes under it
        Surface("ui review", (), (), _PROMPT_EXPOSURE,
                _row("asked", "text", "omitted", "omitted", "asked", "omitted"),
                note="the review's row, each memory with its history (its log); the page's "
                "confirm, reject and link are the user's writes", http=("GET /api/review",)),
        Surface("ui recall", (), (), _RECALLED_EXPOSURE, _RECALLED,
                "include_private, include_expired",
                "`recall --explain --json` (the pool masks what the filters drop) beside the "
                "per-prompt block's memories for the same query (context's row, stricter)",
                persona=Show.OMITTED, http=("GET /api/recall",)),
        Surface("ui memory", (), (), _NAMED_EXPOSURE, _NAMED,
                note="show, log and decay of one memory: naming the id is asking for it",
                http=("GET /api/memories/{id}",)),
        Surface("ui timeline", (), (), _LISTED_EXPOSURE, _NAMED,
                note="what happened to each memory, by day, and the journal's sessions as "
                "counts (no turn's text); the person filter never matches masked text",
                http=("GET /api/timeline",)),
        Surface("ui links", (), (), _LISTED_EXPOSURE,
                _row("text", "text", "text", "text", "text", "omitted"),
                note="the links row, drawn as a graph", http=("GET /api/memories/{id}/links",)),
        Surface("ui health", (), (),
                _exposed("omitted", "omitted", "omitted", "omitted", "omitted"),
                _row("omitted", "omitted", "omitted", "omitted", "omitted", "omitted"),
                note="doctor's checks, verify's findings, the index, the last sleep, sizes: "
                "counts and reports", kinds=("memories", "turns"),
                http=("GET /api/health", "GET /metrics")),
    )
}  # fmt: skip

# Commands and tools that show no stored record's text (they write, count, or report on files).
NO_RECORDS: dict[str, str] = {
    **dict.fromkeys(
        (
            "init",
            "teach",
            "infer",
            "confirm",
            "reject",
            "expire",
            "forget",
            "link",
            "journal add",
            "journal write",
            "journal forget",
            "import",
            "restore",
            "island create",
            "song add",
            "heal",
            "island add",
            "island remove",
            "island delete",
            "attach",
        ),
        "writes; prints ids",
    ),  # fmt: skip
    **dict.fromkeys(
        (
            "stats",
            "verify",
            "index",
            "watch",
            "sync",
            "mcp",
            "doctor",
            "bench locomo",
            "bench delivery",
            "bench safety",
        ),
        "counts and reports; no record text",
    ),  # fmt: skip
    **dict.fromkeys(
        (
            "teach (MCP)",
            "infer (MCP)",
            "confirm (MCP)",
            "reject (MCP)",
            "forget (MCP)",
            "link (MCP)",
            "journal_add (MCP)",
        ),
        "writes; echoes only the caller's input",
    ),  # fmt: skip
    **dict.fromkeys(("stats (MCP)", "island_list (MCP)"), "counts"),
    **dict.fromkeys(("island list",), "the islands' names, what they are about and their sizes"),
    **dict.fromkeys(
        ("serve",), "answers other commands (their rows apply); shows no record itself"
    ),
    **dict.fromkeys(
        ("ui",), "serves the page; its views are the ui rows, its routes theirs or below"
    ),
    **dict.fromkeys(
        (
            "POST /api/memories/{id}/confirm",
            "POST /api/memories/{id}/reject",
            "POST /api/memories/{id}/link",
        ),
        "the page's writes; answer with ids",
    ),  # fmt: skip
    **dict.fromkeys(("GET /health", "GET /ready"), "liveness and readiness; no record"),
    **dict.fromkeys(
        ("GET /", "GET /app.js", "GET /app.css", "GET /login"),
        "the page's shell, its assets and the sign-in link; no record",
    ),
    **dict.fromkeys(("GET /api/people",), "the self and people notes, not records"),
    **dict.fromkeys(
        (
            "self_read (MCP)",
            "self_update (MCP)",
            "people_read (MCP)",
            "person_update (MCP)",
            "people list",
            "people show",
            "people add",
            "people alias",
            "people forget",
            "self show",
            "self set",
        ),
        "the self and people notes, not records",
    ),  # fmt: skip
}


def decide(surface: str, status: str | None, exposed: str, asked: Iterable[str] = (),
           other_persona: bool = False) -> Show:  # fmt: skip
    """What `surface` does with a record of this status (None: a turn) and exposure, when the
    reader asked for the statuses and exposures in `asked` (and named a persona the memory is
    not scoped to, `other_persona`): TEXT, MASKED or OMITTED."""
    rule = SURFACES[surface]
    wanted = set(asked)
    outcomes = [(exposed, rule.exposure.get(exposed, Show.OMITTED))]
    if status is not None and rule.status:
        outcomes.append((status, rule.status.get(status, Show.OMITTED)))
    if other_persona:
        outcomes.append(("persona", rule.persona))
    resolved = [
        (Show.TEXT if name in wanted else Show.OMITTED) if outcome is Show.ASKED else outcome
        for name, outcome in outcomes
    ]
    return min(resolved, key=_RANK.__getitem__)


def marker(status: str | None, exposed: str) -> str:
    """The marker a shown record carries: its status and exposure when not durable/normal."""
    return ", ".join(
        part
        for part in (
            status if status != "durable" else None,
            exposed if exposed != "normal" else None,
        )
        if part  # fmt: skip
    )


def present(surface: str, text: str, status: str | None, visibility: str,
            secrecy: str = "public", asked: Iterable[str] = ()) -> str | None:  # fmt: skip
    """The text `surface` may show for a record, `[why]` when masked, None when left out."""
    exposed = exposure(visibility, secrecy)
    outcome = decide(surface, status, exposed, asked)
    if outcome is Show.OMITTED:
        return None
    if outcome is Show.MASKED:
        return f"[{exposed if exposed != 'normal' else status}]"
    return text


def matrix_markdown() -> str:
    """The matrix as markdown tables (docs/POLICY.md holds this; a test keeps it in step)."""
    columns = [*STATUSES, *EXPOSURES, "other persona"]
    out = ["| surface | commands | MCP tools | " + " | ".join(columns) + " | asked by |",
           "|---|---|---|" + "---|" * len(columns) + "---|"]  # fmt: skip
    for surface in SURFACES.values():
        cells = [surface.status[name].value if surface.status else "·" for name in STATUSES]
        cells += [surface.exposure[name].value for name in EXPOSURES]
        cells.append(surface.persona.value if "memories" in surface.kinds else "·")
        commands = ", ".join(f"`{name}`" for name in (*surface.cli, *surface.http)) or "—"
        tools = ", ".join(f"`{name}`" for name in surface.mcp) or "—"
        out.append(f"| {surface.name} | {commands} | {tools} | " + " | ".join(cells)
                   + f" | {surface.asked_by or '—'} |")  # fmt: skip
    out += ["", "Notes:", ""]
    out += [f"- **{s.name}**: {s.note}" for s in SURFACES.values() if s.note]
    out += ["", "Showing no record's text:", ""]
    by_reason: dict[str, list[str]] = {}
    for name, reason in NO_RECORDS.items():
        by_reason.setdefault(reason, []).append(f"`{name}`")
    out += [f"- {reason}: {', '.join(names)}" for reason, names in by_reason.items()]
    return "\n".join(out) + "\n"
