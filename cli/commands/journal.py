"""`memdir journal`: the raw journal of verbatim turns, and narrative entries."""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer

from memdir.archive_format import clock, journal
from memdir.archive_format.errors import BadInputError
from memdir.cli import context, parameters
from memdir.cli.commands.lifecycle import GIT_HISTORY_NOTE, read_text, refuse_turn_forget
from memdir.cli.layout import width, wrap
from memdir.cli.parameters import LimitAlias, SessionOpt, VisibilityOpt
from memdir.cli.render import emit_json, note
from memdir.words import counted

# journal add
TurnArg = Annotated[str | None, typer.Argument(help="The turn, verbatim, or '-' for stdin.")]
RoleOpt = Annotated[str | None, typer.Option("--role", help="user | assistant | tool.")]
TopicOpt = Annotated[
    str | None, typer.Option("--topic", help="Explicit topic (dream groups by it).")
]
SecrecyOpt = Annotated[str, typer.Option("--secrecy", help="public | sensitive | secret.")]
JsonlOpt = Annotated[bool, typer.Option("--jsonl", help="Read a JSONL transcript on stdin.")]
# journal read
SinceOpt = Annotated[str | None, typer.Option("--since", help="ISO time, or a duration: 2d, 6h.")]
OnlyRoleOpt = Annotated[str | None, typer.Option("--role", help="Only this role.")]
WindowOpt = Annotated[
    bool, typer.Option("--window", help="Only the raw window (recent user turns).")
]
EntriesOpt = Annotated[bool, typer.Option("--entries", help="List narrative entries instead.")]
AllOpt = Annotated[bool, typer.Option("--all", help="Show private, sealed and secret text too.")]
# journal search
QueryArg = Annotated[str, typer.Argument(help="Words to find in the turns.")]
SearchKOpt = Annotated[int, typer.Option("--k", "-k", min=1, help="At most this many turns.")]
SearchAllOpt = Annotated[
    bool, typer.Option("--all", help="Search private turns too (never sealed or secret).")
]
# journal forget
TurnIdsArg = Annotated[
    list[str] | None, typer.Argument(metavar="[ID]...", help="Turn ids (t-…) or prefixes.")
]

journal_app = typer.Typer(
    help="The raw journal: verbatim conversation turns and narrative entries.",
    no_args_is_help=True,
)


def turn_defaults(
    role: RoleOpt = None,
    session: SessionOpt = None,
    topic: TopicOpt = None,
    visibility: VisibilityOpt = "normal",
    secrecy: SecrecyOpt = "public",
) -> dict[str, Any]:
    """The options journal add gives each turn; a JSONL line may set its own."""
    return {"role": role, "session": session, "topic": topic, "visibility": visibility,
            "secrecy": secrecy}  # fmt: skip


@journal_app.command("add")
@parameters.group("defaults", turn_defaults)
def add(
    ctx: typer.Context,
    text: TurnArg = None,
    *,
    defaults: dict[str, Any],
    jsonl: JsonlOpt = False,
    transcript: parameters.TranscriptOpt = None,
    json_: context.JsonOpt = False,
    now: context.NowOpt = None,
) -> None:
    """Store verbatim turns in the journal; prints each turn's id.

    Run by an assistant (MEMDIR_ACTOR=assistant, or an agent harness's shell) it refuses user
    turns: only the user's own path (a prompt hook) may record what the user said.

    With --jsonl, stdin holds one {"role", "text", ...} object per line (also session, topic,
    visibility, secrecy, at); the options give defaults. Turns without `at` are dated one
    second apart in the order given, the last one now, so the journal keeps their order.

    Example: memdir journal add --role user --session s1 "I planted tomatoes today"
    """
    from memdir.usecases.journal import (
        record_turns,
        turn_from_fields,
        turns_from_jsonl,
        vouch_user_turns,
    )

    memdir, moment, actor = context.writer(ctx, now)
    channel = "cli:assistant" if actor.assistant else "cli"  # who wrote it, on every turn
    if jsonl:
        turns = turns_from_jsonl(_stdin_lines(), defaults, moment, channel)
    elif text is None:
        raise BadInputError("no TEXT given", hint="pass the turn, '-' for stdin, or --jsonl")
    else:
        turns = [turn_from_fields({**defaults, "text": read_text(text)}, moment, channel)]
    turns = vouch_user_turns(actor, turns, transcript)
    results = record_turns(memdir, turns, moment)
    if json_:
        emit_json([{"id": turn.id, "added": added} for turn, added in results])
        return
    for turn, added in results:
        typer.echo(turn.id)
        if not added:
            note(f"{turn.id} is already in the journal")


@journal_app.command("read")
def read(
    ctx: typer.Context,
    session: SessionOpt = None,
    since: SinceOpt = None,
    role: OnlyRoleOpt = None,
    window: WindowOpt = False,
    entries: EntriesOpt = False,
    everything: AllOpt = False,
    json_: context.JsonOpt = False,
    now: context.NowOpt = None,
) -> None:
    """Show journal turns (oldest first) with the memories that summarise them, or entries.

    Example: memdir journal read --session s1 --since 2d --json
    """
    from memdir.usecases.journal import read_turns

    memdir, moment = context.open_memdir(ctx), context.now(ctx, now)
    if entries:
        found = [entry.to_dict() for entry in journal.read_entries(memdir, until=moment)]
        if json_:
            emit_json(found)
        for entry in [] if json_ else found:
            typer.echo(
                f"## {entry['at']} {entry['kind']} by {entry['author']}\n\n{entry['text']}\n"
            )
        return
    start = clock.parse_moment(since, moment, "--since")
    rows = read_turns(memdir, moment, session, role, start, window, everything)
    if json_:
        emit_json(rows)
        return
    room = width()
    for row in rows:
        tags = f"  <- {', '.join(row['summarised_by'])}" if row["summarised_by"] else ""
        for line in wrap(
            f"{row['at']} [{row['session']}] {row['role']}: {row['text']}{tags}", room
        ):
            typer.echo(line)


@journal_app.command("search")
def search(
    ctx: typer.Context,
    query: QueryArg,
    k: SearchKOpt = 20,
    limit: LimitAlias = None,
    everything: SearchAllOpt = False,
    json_: context.JsonOpt = False,
    now: context.NowOpt = None,
) -> None:
    """Full-text search over the journal's turns (imported conversations included), best
    first, with the memories that summarise each.

    Example: memdir journal search "Valencia flat" --json
    """
    from memdir.usecases.journal import search_turns

    memdir, moment = context.open_memdir(ctx), context.now(ctx, now)
    rows = search_turns(memdir, query, moment, limit or k, everything)
    if json_:
        emit_json(rows)
        return
    if not rows:
        typer.echo("no turns match", err=True)
    room = width()
    for row in rows:
        for line in wrap(f"{row['at']} [{row['session']}] {row['role']}: {row['text']} "
                         f"({row['id']})", room):  # fmt: skip
            typer.echo(line)


def _stdin_lines() -> list[str]:
    try:
        return sys.stdin.buffer.read().decode("utf-8").splitlines()
    except UnicodeDecodeError as error:
        raise BadInputError(f"standard input is not UTF-8 (byte {error.start})") from None


@journal_app.command("write")
def write(
    ctx: typer.Context,
    text: Annotated[str, typer.Argument(help="The entry (markdown), or '-' for stdin.")],
    author: Annotated[str, typer.Option("--author", help="Who writes it.")] = "assistant",
    json_: context.JsonOpt = False,
    now: context.NowOpt = None,
) -> None:
    """Write a narrative entry (e.g. an end-of-thread reflection); prints its file.

    Run by an assistant, --author cannot name the user.

    Example: echo "We planned the garden; Sam felt hopeful." | memdir journal write -
    """
    from memdir.actor import refuse_user_claim
    from memdir.usecases.journal import write_entry

    memdir, moment, actor = context.writer(ctx, now)
    refuse_user_claim(actor, author.strip(), "write a journal entry")
    entry = write_entry(memdir, read_text(text), moment, author)
    if json_:
        emit_json(entry.to_dict())
        return
    typer.echo(str(entry.path.relative_to(memdir.root)))


@journal_app.command("forget")
def forget(
    ctx: typer.Context,
    turn_ids: TurnIdsArg = None,
    session: SessionOpt = None,
    json_: context.JsonOpt = False,
    now: context.NowOpt = None,
) -> None:
    """Forget journal turns: their text leaves every file under the memdir.

    The turns give way to tombstones; digests naming them and the dream summaries those name
    are removed (the next dream summarises the group's other turns again); the ring, boot and
    wake documents and the index are refreshed in the same command. Prints what was forgotten.

    Example: memdir journal forget --session s1
    """
    from memdir.usecases.forgetting import forget_turns

    if not turn_ids and session is None:
        raise BadInputError("nothing to forget", hint="give turn ids or --session SESSION")
    refuse_turn_forget(context.actor(ctx))
    memdir = context.open_memdir(ctx)
    done = forget_turns(memdir, turn_ids or [], session, context.now(ctx, now))
    if json_:
        emit_json(done.to_dict())
        return
    for forgotten in (*done.turns, *done.memories):
        typer.echo(forgotten)
    note(f"{counted(len(done.turns), 'turn')}, {counted(len(done.digests), 'digest')} and {len(done.memories)} "
         f"summary memory(ies) forgotten; {GIT_HISTORY_NOTE}")  # fmt: skip


def register(app: typer.Typer) -> None:
    app.add_typer(journal_app, name="journal")
