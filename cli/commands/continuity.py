"""Continuity: the console ring, decay, dream, sleep, and the boot and wake documents."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

import typer

from memdir.archive_format import ring as ring_file
from memdir.archive_format import visibility
from memdir.archive_format.errors import LifecycleError
from memdir.archive_format.lifecycle import load_view
from memdir.cli import context
from memdir.cli.context import Invocation, Served
from memdir.cli.layout import Column, flat, width, wrap
from memdir.cli.parameters import OneMemory, group
from memdir.cli.render import (
    Answer,
    console,
    emit,
    emit_json,
    json_text,
    note,
    note_text,
    print_table,
)
from memdir.words import counted

RING_COLUMNS = (
    Column("at", drop=1),
    Column("what"),
    Column("id", ident=True),
    Column("text", text=True),
)
DREAM_COLUMNS = (
    Column("memory", ident=True), Column("turns"), Column("withheld", drop=1),
    Column("text", text=True),
)  # fmt: skip
DryRunOpt = Annotated[bool, typer.Option("--dry-run", help="Show what it would do; write nothing.")]


@dataclass(frozen=True)
class Wake:
    """`memdir wake`'s parameters, declared once: typer reads the command's options from here
    (`parameters.group`), and `memdir serve` parses a request into them."""

    budget: Annotated[int | None, typer.Option("--budget", min=1, help="Token budget.")] = None
    persona: Annotated[
        str | None,
        typer.Option("--persona", help="Wake as this persona: others' memories left out."),
    ] = None
    island: Annotated[
        str | None,
        typer.Option("--island", help="Only this island's memories in the memory sections."),
    ] = None
    json_: context.JsonOpt = False
    now: context.NowOpt = None


def answer_wake(at: Invocation, asked: Wake) -> Answer:
    """What `memdir wake` prints: the one body of the command and of the service's answer."""
    from memdir.usecases.documents import wake as build

    document = build(at.memdir(), at.moment(asked.now), asked.budget, persona=asked.persona,
                     island=asked.island)  # fmt: skip
    if asked.json_:
        return Answer(json_text(document.to_dict()))
    return Answer(document.markdown, note_text(f"{document.tokens} of {document.budget} tokens"))


# what `memdir serve` answers of this module's commands (cli/serve.py)
SERVED = {"wake": Served(Wake, answer_wake)}


def register(app: typer.Typer) -> None:
    @app.command()
    def ring(ctx: typer.Context, json_: context.JsonOpt = False) -> None:
        """Show the console ring: the last 30 things taught, confirmed or recalled.

        Newest first.

        Example: memdir ring --json
        """
        from memdir.usecases.documents import ring_slots

        slots = ring_slots(context.open_memdir(ctx), context.now(ctx, None))
        if json_:
            emit_json(slots)
            return
        rows = []
        for slot in slots:
            masked = slot["text"] == f"[{slot['visibility']}]"
            tag = visibility.marker(slot["status"], "normal" if masked else slot["visibility"])
            text = flat(str(slot.get("text", ""))) + (f"  [{tag}]" if tag else "")
            rows.append((str(slot.get("at")), str(slot.get("what", "")), str(slot.get("id")), text))
        print_table(RING_COLUMNS, rows, context.open_memdir(ctx), header=False)
        note(f"{len(slots)} of {ring_file.RING_SIZE} slots used")

    @app.command()
    @group("asked", OneMemory)
    def decay(ctx: typer.Context, asked: OneMemory) -> None:
        """Show a memory's fidelity now, what it is made of, and a forecast.

        F = (1 + t/S)^-d from timestamps; decay only lowers recall rank, it never deletes.

        Example: memdir decay m-3f9a --json
        """
        from memdir.archive_format.decay import linked_memories
        from memdir.indexers.decay import describe

        memdir, moment = context.open_memdir(ctx), context.now(ctx, asked.now)
        view = load_view(memdir, moment)
        state = view.resolve(asked.memory_id)
        if state.memory is None:
            raise LifecycleError(
                f"{state.id} was forgotten", hint="`memdir log ID` shows its history"
            )
        neighbours = linked_memories(view, state, memdir.settings.decay.reactivation)
        data = describe(memdir, state.memory.to_line(), moment, neighbours)
        data.update(
            text=state.text_on("show"), status=state.status, visibility=state.memory.visibility
        )
        if asked.json_:
            emit_json(data)
            return
        render_decay(data)

    @app.command()
    def dream(
        ctx: typer.Context, dry_run: DryRunOpt = False, json_: context.JsonOpt = False,
        now: context.NowOpt = None,
    ) -> None:  # fmt: skip
        """Consolidate the journal into derived memories (sleep runs this too).

        Closed groups of turns are summarised, with backlinks both ways. Idempotent.

        Example: memdir dream --dry-run
        """
        from memdir.usecases.dream import dream as run

        report = run(context.open_memdir(ctx), context.now(ctx, now), dry_run=dry_run)
        if json_:
            emit_json(report.to_dict())
            return
        rows = [
            (group["memory"] or "(withheld)", counted(group["turns"], "turn"),
             f"{group['withheld']} withheld", flat(group["text"]))
            for group in report.to_dict()["groups"]
        ]  # fmt: skip
        print_table(DREAM_COLUMNS, rows, context.open_memdir(ctx), header=False)
        note(f"{counted(len(report.planned), 'group')}{' (dry run)' if dry_run else ''}, "
             f"{report.open_groups} still open")  # fmt: skip

    @app.command()
    def sleep(
        ctx: typer.Context, dry_run: DryRunOpt = False, json_: context.JsonOpt = False,
        now: context.NowOpt = None,
    ) -> None:  # fmt: skip
        """The maintenance run for cron; locked and idempotent.

        Expire, decay bookkeeping, dream, relink, refresh boot, write the wake document and
        a journal entry about the run.

        Example (crontab): 30 3 * * * memdir --dir ~/memory sleep
        """
        from memdir.usecases.sleep import sleep as run

        report = run(context.open_memdir(ctx), context.now(ctx, now), dry_run=dry_run)
        if json_:
            emit_json(report.to_dict())
            return
        render_sleep(report.to_dict())

    @app.command()
    @group("asked", Wake)
    def wake(ctx: typer.Context, asked: Wake) -> None:
        """Print the wake document: markdown for the next session's system prompt.

        Kept within a token budget (default wake.budget in memdir.yaml). Writes nothing.
        With --island, the memory sections hold only that island's members (the people notes,
        the emotional arc and the raw window of the journal stay whole).

        Example: memdir wake --budget 800 > /tmp/system-prompt.md
        """
        emit(answer_wake(context.invocation(ctx), asked))

    @app.command()
    def review(
        ctx: typer.Context,
        summaries: Annotated[bool, typer.Option(
            "--summaries", help="List dream's conversation summaries awaiting confirmation "
            "one by one (otherwise they are one line).")] = False,
        json_: context.JsonOpt = False,
        now: context.NowOpt = None,
    ) -> None:  # fmt: skip
        """What awaits the user's decision: provisional inferences, contradiction candidates
        (both sides) and stale hard facts.

        Writes nothing; each entry says the command that settles it. Dream's conversation
        summaries awaiting confirmation are one line unless --summaries lists them.

        Example: memdir review --summaries
        """
        from memdir.usecases.review import review as gather

        found = gather(context.open_memdir(ctx), context.now(ctx, now))
        if json_:
            emit_json(found.to_dict())
            return
        render_review(found.to_dict(), summaries)

    @app.command()
    def boot(ctx: typer.Context, now: context.NowOpt = None) -> None:
        """Refresh documents/boot.md and print it.

        Date, recent events, emotional arc, teachings, hard facts and the review queue.

        Example: memdir boot | less
        """
        from memdir.usecases.documents import refresh_boot

        path = refresh_boot(context.open_memdir(ctx), context.now(ctx, now))
        typer.echo(path.read_text(encoding="utf-8"), nl=False)


def render_sleep(data: dict[str, Any]) -> None:
    """A short summary of a sleep run; a dry run says what the run would write."""
    dreamt = data["dream"]
    decay = data["decay"]
    title = "sleep (dry run: nothing written)" if data["dry_run"] else "sleep"
    console().print(f"[bold]{title}[/bold]  {data['now']}  {data['seconds']:.2f} s")
    written = (
        f"{counted(len(dreamt['memories_to_write']), 'memory')} to write"
        if data["dry_run"]
        else f"{counted(len(dreamt['memories_written']), 'memory')} written"
    )
    kinds = sorted({link["type"] for link in data["links"]})
    lines = [
        f"expired   {counted(len(data['expired']), 'inference')}"
        + (" due" if data["dry_run"] else ""),
        f"dream     {counted(len(dreamt['groups']), 'group')}: "
        f"{counted(dreamt['summarised_turns'], 'turn')} summarised, "
        f"{dreamt['withheld_turns']} withheld, {written}, {dreamt['open_groups']} still open",
        f"decay     {counted(decay.get('memories', 0), 'live memory', 'live memories')}, "
        f"mean fidelity {decay.get('mean_fidelity')}, {decay.get('faded', 0)} faded",
        f"relink    {counted(len(data['links']), 'new link')}"
        + (f": {', '.join(kinds)}" if kinds else ""),
    ]
    if not data["dry_run"]:
        lines.append(f"documents {data['boot']}, documents/wake.md ({data['wake_tokens']} tokens)")
        lines.append(f"entry     {data['entry'] or 'none (nothing changed)'}")
    room = width()
    for line in lines:
        for piece in wrap(line, room, "  "):
            typer.echo(piece)


def _side(row: dict[str, Any]) -> str:
    return (f"{row['id']} ({row['source']} by {row['author']}, {row['created'][:10]}): "
            f"{flat(row['text'])}")  # fmt: skip


def render_review(data: dict[str, Any], summaries: bool = False) -> None:
    """The review as short lists, each entry with the command that settles it (lines wrapped
    to the terminal). Dream's conversation summaries are one line, or with `summaries` the
    only rows of the queue listed."""
    from memdir.usecases.review import SUMMARIES_COMMAND, is_summary

    dreamt = [row for row in data["queue"] if is_summary(row)]
    asked = dreamt if summaries else [row for row in data["queue"] if not is_summary(row)]
    lines = [f"Review queue ({len(data['queue'])}): inferences awaiting confirmation"]
    for row in asked:
        expiry = f"expires in {row['expires_in']}" if row["expires"] else "no expiry"
        lines.append(f"  {_side(row)}")
        lines.append(f"    {expiry}; `memdir confirm {row['id']}` or `memdir reject {row['id']}`")
    if dreamt and not summaries:
        lines.append(f"  conversation summaries from sleep (dream) awaiting confirmation: "
                     f"{len(dreamt)}; `{SUMMARIES_COMMAND}` lists them, unconfirmed they "
                     "expire")  # fmt: skip
    lines.append(f"Contradiction candidates ({len(data['contradictions'])})")
    for row in data["contradictions"]:
        one, other = row["sides"]
        lines.append(f"  {_side(one)}")
        lines.append(f"   vs {_side(other)}")
        lines.append(f"    {row['link']} since {row['at'][:10]}; reject or forget one, or "
                     f"`memdir link {one['id']} {other['id']} --type compatible`")  # fmt: skip
    lines.append(f"Stale hard facts ({len(data['stale_hard_facts'])}): "
                 f"not affirmed for over {data['stale_after_days']} days")  # fmt: skip
    for row in data["stale_hard_facts"]:
        lines.append(f"  {row['key']}: {flat(row['text'])} ({row['id']}, {row['age']})")
        lines.append(
            f"    still true? teach its current wording with `--key {row['key']}`, or forget it"
        )
    supersedes = data.get("automatic_supersedes", [])
    lines.append(f"Automatic supersedes ({len(supersedes)}): teachings sleep replaced")
    for row in supersedes:
        lines.append(f"  {_side(row['old'])}")
        lines.append(f"   replaced by {_side(row['new'])} on {row['at'][:10]}")
        lines.append(f"    both hold? `memdir link {row['new']['id']} {row['old']['id']} "
                     "--type compatible`")  # fmt: skip
    unvouched = data.get("unvouched_teachings", [])
    lines.append(f"Teachings quoting a turn no harness recorded ({len(unvouched)})")
    for row in unvouched:
        lines.append(f"  {_side(row)}")
        lines.append(f"    quotes {row['turn']} (via {row['channel']}); did you say it? keep it, "
                     f"or `memdir reject {row['id']} --reason …`")  # fmt: skip
    room = width()
    for line in lines:
        text = line.lstrip()
        for part in wrap(text, room, line[: len(line) - len(text)]):
            typer.echo(part)


def render_decay(data: dict[str, Any]) -> None:
    typer.echo(f"{data['id']}  {flat(data['text'])}")
    typer.echo(
        f"fidelity {data['fidelity']:.3f}  (stability {data['stability_days']:.1f} d, "
        f"{data['elapsed_days']:.1f} d since {data['last_rehearsal']}, "
        f"{counted(data['rehearsals'], 'rehearsal')}, intensity {data['intensity']:.2f})"
    )
    typer.echo(
        f"recall score x {data['recall_multiplier']:.3f}; "
        f"below 0.5 from {data['below_half_at'] or 'never'}"
    )
    rows = ", ".join(f"+{row['after']} {row['fidelity']:.3f}" for row in data["forecast"])
    typer.echo(f"forecast without rehearsal: {rows}")
    if data["reactivated_by"]:
        linked = ", ".join(f"{row['id']} ({row['link']} ×{row['factor']:g}, "
                           f"{counted(row['rehearsals'], 'rehearsal')})"
                           for row in data["reactivated_by"])  # fmt: skip
        worth = data["reactivated"]
        typer.echo(f"refreshed by linked memories ({worth:g} rehearsal{'' if worth == 1 else 's'}"
                   f" worth): {linked}")  # fmt: skip
