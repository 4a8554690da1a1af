"""Reading the archive: show, log, list, stats, verify."""

from __future__ import annotations

from collections import Counter
from typing import Annotated

import typer

from memdir.archive_format import clock
from memdir.archive_format.errors import BadInputError, ExitStatus
from memdir.archive_format.fold import LIVE_STATUSES, STATUSES, MemoryState
from memdir.archive_format.lifecycle import load_view
from memdir.archive_format.verify import verify as verify_memdir

from .. import context
from ..layout import Column, flat, width, wrap
from ..render import emit_json, note, print_fields, print_table

LIST_COLUMNS = (
    Column("id", ident=True),
    Column("created", drop=2),
    Column("status"),
    Column("source", drop=3),
    Column("type", drop=1),
    Column("text", text=True),
)
LOG_COLUMNS = (Column("at"), Column("what"), Column("detail", text=True))
IdArg = Annotated[str, typer.Argument(metavar="ID", help="An id or a unique prefix.")]


def history(state: MemoryState) -> list[dict[str, str | None]]:
    """A memory's whole story in time order: written, events, and derived transitions."""
    steps: list[dict[str, str | None]] = []
    memory = state.memory
    written = f"{memory.source} by {memory.author}" if memory else "written (text forgotten)"
    steps.append({"at": state.created, "what": "created", "detail": written})
    if memory is not None and memory.expires and state.status in ("provisional", "expired"):
        steps.append(
            {"at": memory.expires, "what": "ttl-ends", "detail": "expires unless confirmed"}
        )
    for event in state.events:
        detail = (
            event.reason
            or event.evidence
            or (f"{event.link_type} → {event.to}" if event.to else None)
        )
        steps.append(
            {
                "at": event.at,
                "what": event.op,
                "detail": f"by {event.actor}" + (f": {detail}" if detail else ""),
            }
        )
    if state.superseded_by:
        steps.append({"at": None, "what": "superseded", "detail": f"by {state.superseded_by}"})
    steps.sort(
        key=lambda step: (
            clock.parse_time(step["at"]) if step["at"] else clock.parse_time("9999-01-01")
        )
    )
    return steps


def _matches(state: MemoryState, statuses: set[str], source: str | None, type_: str | None,
             persona: str | None, since: str | None, until: str | None) -> bool:  # fmt: skip
    memory = state.memory
    if state.status not in statuses:
        return False
    if memory is None:
        return not (source or type_ or persona)
    if source and memory.source != source:
        return False
    if type_ and memory.type_label != type_ and memory.type != type_:
        return False
    if persona and memory.personas and persona not in memory.personas:
        return False
    created = clock.parse_time(state.created)
    if since and created < clock.parse_time(since, "--since"):
        return False
    return not (until and created > clock.parse_time(until, "--until"))


def resolved(ctx: typer.Context, memory_id: str, now: str | None) -> MemoryState:
    """The memory an id (or a unique prefix of one) names, folded as of --now."""
    return load_view(context.open_memdir(ctx), context.now(ctx, now)).resolve(memory_id)


def register(app: typer.Typer) -> None:
    @app.command()
    def show(
        ctx: typer.Context,
        memory_id: IdArg,
        json_: context.JsonOpt = False,
        now: context.NowOpt = None,
    ) -> None:
        """Show one memory and its current status.

        Example: memdir show m-3f9a --json
        """
        data = resolved(ctx, memory_id, now).shown_on("show") or {}
        if json_:
            emit_json(data)
            return
        print_fields(data, skip=("events",))

    @app.command()
    def log(
        ctx: typer.Context,
        memory_id: IdArg,
        json_: context.JsonOpt = False,
        now: context.NowOpt = None,
    ) -> None:
        """A memory's whole history: when it was written, every event, what it became.

        Example: memdir log m-3f9a
        """
        state = resolved(ctx, memory_id, now)
        steps = history(state)
        text = state.text_on("log")
        if json_:
            emit_json({"id": state.id, "status": state.status, "text": text, "history": steps})
            return
        for line in wrap(f"{state.id}  now {state.status}: {flat(text)}", width()):
            typer.echo(line)
        rows = [(step["at"] or "", step["what"] or "", step["detail"] or "") for step in steps]
        print_table(LOG_COLUMNS, rows, header=False)

    @app.command("list")
    def list_command(
        ctx: typer.Context,
        status: Annotated[
            list[str] | None,
            typer.Option(
                "--status",
                help="Status to show (repeatable), or 'all'. Default: the live ones (durable, provisional).",
            ),
        ] = None,
        source: Annotated[
            str | None,
            typer.Option("--source", help="teaching | inference | observation | derived."),
        ] = None,
        type_: Annotated[str | None, typer.Option("--type", help="TYPE or TYPE:subtype.")] = None,
        persona: Annotated[
            str | None, typer.Option("--persona", help="Only memories visible to this persona.")
        ] = None,
        since: Annotated[
            str | None, typer.Option("--since", help="Created at or after this date-time.")
        ] = None,
        until: Annotated[
            str | None, typer.Option("--until", help="Created at or before this date-time.")
        ] = None,
        limit: Annotated[
            int | None, typer.Option("--limit", min=1, help="At most this many (newest first).")
        ] = None,
        json_: context.JsonOpt = False,
        now: context.NowOpt = None,
    ) -> None:
        """List memories, newest first.

        Example: memdir list --status provisional --status expired --json
        """
        wanted = set(status or LIVE_STATUSES)
        if "all" in wanted:
            wanted = set(STATUSES)
        unknown = wanted - set(STATUSES)
        if unknown:
            raise BadInputError(
                f"unknown status {sorted(unknown)[0]!r}",
                hint=f"use one of {', '.join(STATUSES)}, all",
            )
        view = load_view(context.open_memdir(ctx), context.now(ctx, now))
        chosen = [s for s in view if _matches(s, wanted, source, type_, persona, since, until)
                  and s.text_on("list", wanted) is not None]  # fmt: skip
        chosen.sort(key=lambda s: (clock.parse_time(s.created), s.id), reverse=True)
        chosen = chosen[:limit] if limit else chosen
        if json_:
            emit_json([state.shown_on("list", wanted) for state in chosen])
            return
        rows = [
            (
                state.id,
                state.created[:16].replace("T", " "),
                state.status,
                state.memory.source if state.memory else "—",
                (state.memory.type_label or "") if state.memory else "",
                flat(state.text_on("list", wanted) if state.memory else None),
            )
            for state in chosen
        ]
        print_table(LIST_COLUMNS, rows, context.open_memdir(ctx))
        note(f"{len(chosen)} memories")

    @app.command()
    def stats(
        ctx: typer.Context, now: context.NowOpt = None, json_: context.JsonOpt = False
    ) -> None:
        """Counts by status, source and store, and the size of the files.

        Example: memdir stats --json
        """
        memdir = context.open_memdir(ctx)
        view = load_view(memdir, context.now(ctx, now))
        data = {
            "memdir": str(memdir.root),
            "memories": len(view),
            "status": dict(Counter(state.status for state in view)),
            "source": dict(Counter(s.memory.source for s in view if s.memory)),
            "store": dict(Counter(s.memory.store for s in view if s.memory)),
            "events": sum(len(state.events) for state in view),
            "shelf_bytes": {path.name: path.stat().st_size for path in memdir.shelves()},
        }
        if json_:
            emit_json(data)
            return
        typer.echo(f"memdir    {data['memdir']}")
        typer.echo(f"memories  {data['memories']}  (events {data['events']})")
        for group in ("status", "source", "store"):
            counts = data[group]
            assert isinstance(counts, dict)
            typer.echo(
                f"{group:<9} "
                + ", ".join(f"{name} {count}" for name, count in sorted(counts.items()))
            )

    @app.command()
    def verify(
        ctx: typer.Context,
        history: bool = typer.Option(
            False, "--history", help="Also report shelf lines git once had that are now gone."
        ),
        json_: context.JsonOpt = False,
    ) -> None:
        """Check the memdir (read-only): schemas, ids, references, provenance, git rules.

        Exits 0 when clean, 1 with the list of problems otherwise; warnings do not fail it.

        Example: memdir verify --history || echo "needs attention"
        """
        report = verify_memdir(context.open_memdir(ctx, lenient=True), history=history)
        if json_:
            emit_json(
                {
                    "clean": report.clean,
                    "problems": report.problems,
                    "warnings": report.warnings,
                    "notes": report.notes,
                    "lines": report.lines,
                }
            )
        else:
            for problem in report.problems:
                typer.echo(f"problem: {problem}")
            for warning in report.warnings:
                typer.echo(f"warning: {warning}")
            for item in report.notes:
                note(item)
            note(f"{report.lines} lines checked, {len(report.problems)} problem(s)")
        if not report.clean:
            raise typer.Exit(int(ExitStatus.PROBLEMS))
