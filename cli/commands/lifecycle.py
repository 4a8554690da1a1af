"""Writing memories and moving them through their lifecycle:
teach, infer, confirm, reject, expire, forget, link."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from memdir.actor import refuse_user_claim
from memdir.archive_format import clock, lifecycle
from memdir.archive_format.errors import BadInputError, LifecycleError
from memdir.archive_format.fold import COMPATIBLE, SUPERSEDED_BY
from memdir.archive_format.memdir import Memdir
from memdir.usecases import provenance
from memdir.usecases.fields import memory_fields
from memdir.usecases.provenance import refuse_turn_forget, user  # noqa: F401 (re-export)
from memdir.words import counted

from .. import context, parameters
from ..parameters import MemoryIdArg, SessionOpt, VisibilityOpt
from ..render import emit_json, note
from .attachments import AttachOpt, report_skipped

TypeOpt = Annotated[
    str | None, typer.Option("--type", help="TYPE or TYPE:subtype, e.g. FACT:preference.")
]
KeyOpt = Annotated[
    str | None,
    typer.Option("--key", help="Supersede key: a newer memory with it replaces older ones."),
]
ImportanceOpt = Annotated[
    int, typer.Option("--importance", min=1, max=10, help="1 (trivial) to 10 (vital).")
]
TemporalOpt = Annotated[str, typer.Option("--temporal", help="ephemeral | persistent | milestone.")]
StoreOpt = Annotated[str | None, typer.Option("--store", help="episodic | semantic | procedural.")]
PersonaOpt = Annotated[
    list[str] | None, typer.Option("--persona", help="Persona scope (repeatable).")
]
ThreadOpt = Annotated[str | None, typer.Option("--thread", help="Thread within the session.")]
ValenceOpt = Annotated[
    float | None,
    typer.Option(
        "--valence", min=-1, max=1, help="Affect valence, -1..1 (wins over the annotator)."
    ),
]
ArousalOpt = Annotated[
    float | None, typer.Option("--arousal", min=0, max=1, help="Affect arousal, 0..1.")
]
IntentOpt = Annotated[
    str | None, typer.Option("--intent", help="Meta-memory: why this was stored.")
]
RationaleOpt = Annotated[
    str | None, typer.Option("--rationale", help="Meta-memory: the reasoning behind it.")
]
EvidenceOpt = Annotated[
    str | None, typer.Option("--evidence", help="Meta-memory: what supports it.")
]
ConfidenceOpt = Annotated[
    float | None, typer.Option("--confidence", min=0, max=1, help="Meta-memory: confidence 0..1.")
]
PinOpt = Annotated[bool, typer.Option("--pin", help="Eligible for recall's guaranteed slots.")]
UserOpt = Annotated[
    str | None,
    typer.Option("--by", help="The user's name, if several people share the memdir."),
]
QuoteOpt = Annotated[
    str | None,
    typer.Option(
        "--quote",
        help="The user's words deciding it, quoted from the journal (needed when an assistant "
        "runs memdir: MEMDIR_ACTOR=assistant or an agent harness's shell).",
    ),
]


DECIDING_LINKS = (SUPERSEDED_BY, COMPATIBLE)  # the link types the fold takes from the user only
GIT_HISTORY_NOTE = (
    "the text is gone from every file under the memdir, but git history still holds it if the "
    "memdir was committed; to purge it, rewrite history (e.g. `git filter-repo --replace-text "
    "FILE`) and force-push every clone"
)


def read_text(text: str) -> str:
    """The argument itself, or standard input when it is '-'."""
    if text != "-":
        return text
    data = sys.stdin.buffer.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise BadInputError(f"standard input is not UTF-8 (byte {error.start})") from None


def memory_options(
    type_: TypeOpt = None,
    key: KeyOpt = None,
    importance: ImportanceOpt = 5,
    temporal: TemporalOpt = "persistent",
    store: StoreOpt = None,
    persona: PersonaOpt = None,
    visibility: VisibilityOpt = "normal",
    session: SessionOpt = None,
    thread: ThreadOpt = None,
    valence: ValenceOpt = None,
    arousal: ArousalOpt = None,
    intent: IntentOpt = None,
    rationale: RationaleOpt = None,
    evidence: EvidenceOpt = None,
    confidence: ConfidenceOpt = None,
    pin: PinOpt = False,
) -> dict[str, Any]:
    """The options teach and infer share, as memory fields (usecases/fields.py)."""
    return memory_fields(
        type_, key, importance, temporal, store, persona, visibility, session, thread,
        valence, arousal, intent, rationale, evidence, confidence, pin,
    )  # fmt: skip


def guarded(outcome: provenance.Outcome, actor: provenance.Actor) -> None:
    """An assistant's guarded write: the id when it was done, else the guard's refusal."""
    if outcome.refused:
        raise LifecycleError(
            f"{outcome.id}: {outcome.message}",
            hint=f"memdir runs as the assistant here ({actor.reason}); the user's own words "
            "decide, so ask the user",
        )
    if not outcome.done:
        note(outcome.message)
    typer.echo(outcome.id)


def refuse_deciding_link(actor: provenance.Actor, link_type: str) -> None:
    """A `superseded-by` or `compatible` link decides which of the user's memories is current:
    from an assistant's shell it would be recorded as the assistant's and the fold would not
    take it, so it is refused with the reason instead of written to no effect."""
    if actor.assistant and link_type in DECIDING_LINKS:
        raise LifecycleError(
            f"an assistant cannot link memories {link_type!r} ({actor.reason}): that decides "
            "which of the user's memories holds",
            hint="ask the user; their own `memdir link` (or a correcting `teach`) decides",
        )


def store(
    memdir: Memdir,
    files: list[Path] | None,
    fields: dict[str, Any],
    write: Callable[[list[dict[str, str]]], tuple[str, str | None]],
) -> None:
    """Write a memory and print its id (and what the write said on stderr), with `--attach`'s
    files stored first and linked from its line (under one hold of the writer lock)."""
    if files:
        from memdir.usecases import attachments

        (written, message), done = attachments.stored_together(
            memdir, files, str(fields.get("visibility") or "normal"), write
        )
        report_skipped(list(done))
    else:
        written, message = write([])
    if message:
        note(message)
    typer.echo(written)


def register(app: typer.Typer) -> None:
    @app.command()
    @parameters.group("fields", memory_options)
    def teach(
        ctx: typer.Context,
        text: Annotated[str, typer.Argument(help="What the user taught, or '-' for stdin.")],
        attach: AttachOpt = None,
        *,
        fields: dict[str, Any],
        by: UserOpt = None,
        now: context.NowOpt = None,
    ) -> None:
        """Store something the user taught: durable from the start. Prints the id.

        Run by an assistant (MEMDIR_ACTOR=assistant, or an agent harness's shell) it is stored
        as a teaching only when the text quotes the user's recent words, else as an inference.

        --attach keeps a file with it (memdir attachments ID lists them).

        Example: ID=$(memdir teach "I take my coffee black" --type FACT:preference --key coffee)
        """
        memdir, moment, actor = context.writer(ctx, now)
        if by:  # an assistant's teaching is guarded below; it cannot name the user besides
            refuse_user_claim(actor, user(by), "teach")
        body = read_text(text)

        def write(links: list[dict[str, str]]) -> tuple[str, str | None]:
            options = {**fields, "links": links} if links else fields
            if actor.assistant:  # an assistant's shell: the teaching guard, as over MCP
                outcome = provenance.teach(memdir, body, moment, memdir.settings.mcp.quote_window,
                                           f"from an assistant's shell ({actor.reason})", **options)  # fmt: skip
                return outcome.id, outcome.message
            result = lifecycle.teach(memdir, body, moment, user(by), **options)
            return result.id, None if result.added else f"already stored as {result.id}"

        store(memdir, attach, fields, write)

    @app.command()
    @parameters.group("fields", memory_options)
    def infer(
        ctx: typer.Context,
        text: Annotated[
            str, typer.Argument(help="What the assistant concluded, or '-' for stdin.")
        ],
        ttl: Annotated[
            str | None,
            typer.Option(
                "--ttl", help="Time to live unconfirmed, e.g. 7d (default from memdir.yaml)."
            ),
        ] = None,
        attach: AttachOpt = None,
        *,
        fields: dict[str, Any],
        by: Annotated[
            str, typer.Option("--by", help="Which assistant or model concluded it.")
        ] = "assistant",
        now: context.NowOpt = None,
    ) -> None:
        """Store an assistant's inference: provisional until the user confirms it. Prints the id.

        It is recalled at provisional_weight (default 0.4) and expires after its TTL (default 7 days) unless confirmed.

        Example: memdir infer "The user seems to prefer mornings for meetings" --ttl 3d
        """
        lifetime = clock.parse_duration(ttl) if ttl else None
        memdir, moment, actor = context.writer(ctx, now)
        refuse_user_claim(actor, by, "infer")
        body = read_text(text)

        def write(links: list[dict[str, str]]) -> tuple[str, str | None]:
            options = {**fields, "links": links} if links else fields
            result = lifecycle.infer(memdir, body, moment, lifetime, by, **options)
            return result.id, None if result.added else f"already stored as {result.id}"

        store(memdir, attach, fields, write)

    @app.command()
    def confirm(
        ctx: typer.Context,
        memory_id: Annotated[
            str, typer.Argument(metavar="ID", help="The inference (an id prefix is enough).")
        ],
        evidence: Annotated[
            str | None, typer.Option("--evidence", help="The user's words that confirm it.")
        ] = None,
        by: UserOpt = None,
        quote: QuoteOpt = None,
        now: context.NowOpt = None,
    ) -> None:
        """The user confirms an inference: it becomes durable. Prints the id.

        Run by an assistant, it needs --quote: the user's answer, from a trusted journal turn
        after the inference, about it and saying yes.

        Example: memdir confirm m-3f9a --evidence "yes, mornings are best"
        """
        memdir, moment, actor = context.writer(ctx, now)
        if actor.assistant:
            guarded(provenance.confirm(memdir, memory_id, quote or evidence or "", moment), actor)
            return
        memory, event = lifecycle.confirm(memdir, memory_id, moment, user(by), evidence)
        if event is None:
            note(f"{memory} is already durable")
        typer.echo(memory)

    @app.command()
    def reject(
        ctx: typer.Context,
        memory_id: MemoryIdArg,
        reason: Annotated[str, typer.Option("--reason", help="Why it is wrong (required).")],
        by: Annotated[str | None, typer.Option("--by", help="The user's name.")] = None,
        quote: QuoteOpt = None,
        now: context.NowOpt = None,
    ) -> None:
        """Mark a memory wrong: kept for audit, never recalled. Prints the id.

        Run by an assistant, it withdraws its own unconfirmed inference; anything else needs
        --quote: the user's words saying it is wrong, from a trusted journal turn about it.

        Example: memdir reject m-3f9a --reason "I never said that"
        """
        memdir, moment, actor = context.writer(ctx, now)
        if actor.assistant:
            guarded(provenance.reject(memdir, memory_id, reason, moment, quote), actor)
            return
        memory, event = lifecycle.reject(memdir, memory_id, reason, moment, user(by))
        if event is None:
            note(f"{memory} was already rejected")
        typer.echo(memory)

    @app.command()
    def expire(
        ctx: typer.Context,
        json_: context.JsonOpt = False,
        now: context.NowOpt = None,
    ) -> None:
        """The TTL sweep for cron: record every inference past its TTL as expired.

        Example (crontab): 0 * * * * memdir --dir ~/memory expire
        """
        expired = lifecycle.expire(context.open_memdir(ctx), context.now(ctx, now))
        if json_:
            emit_json({"expired": expired})
            return
        for memory in expired:
            typer.echo(memory)
        note(f"{counted(len(expired), 'inference')} expired")

    @app.command()
    def forget(
        ctx: typer.Context,
        memory_id: MemoryIdArg,
        quote: QuoteOpt = None,
        now: context.NowOpt = None,
    ) -> None:
        """Remove a memory's text from every file under the memdir, leaving a tombstone.

        The shelves are compacted atomically; the ring, boot and wake documents and the index
        are refreshed in the same command. A turn id (t-…) forgets that journal turn.

        Run by an assistant, it needs --quote: the user's request to forget it, from a recent
        trusted journal turn about it.

        Example: memdir forget m-3f9a
        """
        from memdir.usecases import forgetting

        memdir, moment, actor = context.writer(ctx, now)
        if memory_id.startswith("t-"):
            refuse_turn_forget(actor)
            done = forgetting.forget_turns(memdir, [memory_id], None, moment)
            for forgotten in (*done.turns, *done.memories):
                typer.echo(forgotten)
        elif actor.assistant:
            present = forgetting.documents_present(memdir)
            window = memdir.settings.mcp.quote_window
            outcome = provenance.forget(memdir, memory_id, quote or "", moment, window)
            guarded(outcome, actor)
            if outcome.done:
                forgetting.refresh_derived(memdir, moment, present)
        else:
            typer.echo(forgetting.forget_memory(memdir, memory_id, moment).memories[0])
        note(GIT_HISTORY_NOTE)

    @app.command()
    def link(
        ctx: typer.Context,
        memory_id: Annotated[
            str, typer.Argument(metavar="ID", help="The memory the link starts from.")
        ],
        to: Annotated[
            str, typer.Argument(metavar="TO", help="The memory (or journal turn) it points to.")
        ],
        link_type: Annotated[
            str, typer.Option("--type", help="The link's type, e.g. supports, contradicts.")
        ] = "related",
        now: context.NowOpt = None,
    ) -> None:
        """Add a typed link between two memories. Prints the event id.

        Run by an assistant the link is recorded as the assistant's, and the links that decide
        which of the user's memories holds (superseded-by, compatible) are refused: the fold
        takes them from the user or memdir's own sleep only.

        Example: memdir link m-3f9a m-77c1 --type contradicts
        """
        memdir, moment, actor = context.writer(ctx, now)
        refuse_deciding_link(actor, link_type)
        event = lifecycle.link(memdir, memory_id, to, link_type, moment, actor.name)
        typer.echo(event.id)
