"""Reading the archive: show, log, list, stats, verify."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Annotated, Any

import typer

from memdir.archive_format import visibility
from memdir.archive_format.errors import BadInputError, ExitStatus, MemdirError
from memdir.archive_format.fold import ArchiveView, MemoryState
from memdir.archive_format.lifecycle import load_view
from memdir.archive_format.memdir import Memdir
from memdir.archive_format.verify import verify as verify_memdir
from memdir.words import counted

from .. import context, parameters
from ..layout import Column, flat, width, wrap
from ..parameters import LimitAlias, MemoryIdArg, OneMemory, moment
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


def _right_aligned(first: str, *counts: str) -> tuple[Column, ...]:
    """A report's columns: a label, then counts aligned right."""
    return (Column(first), *(Column(name, right=True) for name in counts))


PROVENANCE_COLUMNS = _right_aligned(
    "group", "n", "confirmed", "rejected", "expired", "pending", "median decision"
)


def _rate(count: int, rate: float | None) -> str:
    return f"{count} ({rate:.0%})" if rate is not None else str(count)


DRIFT_COLUMNS = (
    Column("month"),
    Column("n", right=True),
    Column("valence", right=True),
    Column("arousal", right=True),
    Column("emotion"),
    Column("top type"),
    Column("type drift", right=True),
)


def print_drift(report: dict[str, Any]) -> None:
    """The drift report as one table, a month a row (type drift: from the month before)."""
    rows = []
    for month in report["months"]:
        top = max(month["types"], key=lambda name: month["types"][name])
        change = month["type_drift"]
        rows.append((month["month"], str(month["memories"]), f"{month['valence']:+.2f}",
                     f"{month['arousal']:.2f}", month["emotion"] or "—",
                     f"{top} {month['types'][top]:.0%}",
                     "—" if change is None else f"{change:.2f} bits"))  # fmt: skip
    print_table(DRIFT_COLUMNS, rows)


EVOLUTION_COLUMNS = _right_aligned(
    "month",
    "written",
    "taught",
    "inferred",
    "confirmed",
    "rejected",
    "expired",
    "superseded",
    "forgotten",
    "links",
    "live",
    "churn",
)


def print_evolution(report: dict[str, Any]) -> None:
    """The evolution report as one table, a month a row."""
    rows = [
        (m["month"], *(str(m[name]) for name in ("written", "teachings", "inferences",
                                                 "confirmed", "rejected", "expired",
                                                 "superseded", "forgotten", "links")),
         str(m["live_at_end"]), "—" if m["churn"] is None else f"{m['churn']:.0%}")
        for m in report["months"]
    ]  # fmt: skip
    print_table(EVOLUTION_COLUMNS, rows)


def print_provenance(report: dict[str, Any]) -> None:
    """The provenance report as one table: every inference, then each month, type, author."""
    rows = []
    labelled = [("all", report["all"])]
    for group, prefix in (("by_month", ""), ("by_type", "type "), ("by_author", "by ")):
        labelled += [(prefix + key, summary) for key, summary in report[group].items()]
    for label, summary in labelled:
        wait = summary["median_hours_to_decision"]
        rows.append((label, str(summary["inferences"]),
                     *(_rate(summary[name], summary[f"{name}_rate"])
                       for name in ("confirmed", "rejected", "expired")),
                     str(summary["pending"]), "—" if wait is None else f"{wait:g} h"))  # fmt: skip
    print_table(PROVENANCE_COLUMNS, rows)


def _distilled(memdir: Memdir, state: MemoryState) -> dict[str, Any] | None:
    """The labels the distiller gave a memory (`memdir distill`), read from the index if there
    is one (show never builds it); none for a memory whose text this surface does not show
    whole, since a label says something about the text."""
    if state.memory is None or state.text_on("show") != state.memory.text:
        return None
    if not (memdir.cache_dir / "index").is_dir():
        return None
    from memdir.indexers.index import MemoryIndex

    try:
        index = MemoryIndex(memdir)
        try:
            found = index.catalog.memories_by_id([state.id]).get(state.id)
            return index.distilled_of([found]).get(state.id) if found else None
        finally:
            index.close()
    except MemdirError:  # an index that does not open: show the memory without its labels
        return None


def resolved(ctx: typer.Context, asked: OneMemory) -> tuple[MemoryState, ArchiveView]:
    """The memory an id (or a unique prefix of one) names, folded as of --now, and the view."""
    view = load_view(context.open_memdir(ctx), context.now(ctx, asked.now))
    return view.resolve(asked.memory_id), view


@parameters.group("asked", OneMemory)
def show(ctx: typer.Context, asked: OneMemory) -> None:
    """Show one memory and its current status.

    Example: memdir show m-3f9a --json
    """
    state, view = resolved(ctx, asked)
    data = {**(state.shown_on("show") or {}), "incoming_links": view.incoming(state.id)}
    if state.memory is not None and data.get("text") == state.memory.text:
        from memdir.archive_format.attachments import linked

        if linked(state.links):  # what is attached (a masked memory lists nothing)
            from memdir.usecases.attachments import brief

            data["attachments"] = brief(context.open_memdir(ctx), state)
    distilled = _distilled(context.open_memdir(ctx), state)
    if distilled is not None:
        data["distilled"] = distilled
    if asked.json_:
        emit_json(data)
        return
    print_fields(data, skip=("events",))


@parameters.group("asked", OneMemory)
def log(ctx: typer.Context, asked: OneMemory) -> None:
    """A memory's whole history: when it was written, every event, what it became.

    Example: memdir log m-3f9a
    """
    from memdir.usecases.inspection import history

    state, view = resolved(ctx, asked)
    steps = history(state, view.incoming(state.id))
    text = state.text_on("log")
    if asked.json_:
        emit_json({"id": state.id, "status": state.status, "text": text, "history": steps})
        return
    for line in wrap(f"{state.id}  now {state.status}: {flat(text)}", width()):
        typer.echo(line)
    rows = [(step["at"] or "", step["what"] or "", step["detail"] or "") for step in steps]
    print_table(LOG_COLUMNS, rows, header=False)


def links(
    ctx: typer.Context,
    memory_id: MemoryIdArg,
    depth: Annotated[int, typer.Option("--depth", help="How many links away to go (1-5).")] = 2,
    json_: context.JsonOpt = False,
    now: context.NowOpt = None,
) -> None:
    """A memory's neighbourhood over its typed links, both ways, up to --depth hops: what
    spreading activation walks. Private and sealed memories are masked, forgotten ones gone.

    Example: memdir links m-3f9a --depth 2
    """
    from memdir.usecases.links import neighbourhood

    found = neighbourhood(context.open_memdir(ctx), memory_id, context.now(ctx, now), depth)
    if json_:
        emit_json(found)
        return
    for node in found["memories"]:
        marker = visibility.marker(node["status"], node.get("visibility") or "normal")
        typer.echo(f"{'  ' * node['depth']}{node['id']}  {marker or node['status']}  "
                   f"{flat(node['text'] or '')}".rstrip())  # fmt: skip
    for edge in found["links"]:
        typer.echo(f"{edge['from']} -{edge['type']}-> {edge['to']}")


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
        str | None,
        typer.Option("--since", help="Created at or after this time: ISO, or 2d, 6h back."),
    ] = None,
    until: Annotated[
        str | None,
        typer.Option("--until", help="Created at or before this time: ISO, or 2d, 6h back."),
    ] = None,
    k: Annotated[
        int | None, typer.Option("--k", "-k", min=1, help="At most this many (newest first).")
    ] = None,
    limit: LimitAlias = None,
    json_: context.JsonOpt = False,
    now: context.NowOpt = None,
) -> None:
    """List memories, newest first.

    Example: memdir list --status provisional --status expired --json
    """
    from memdir.usecases.inspection import listed, statuses

    wanted = statuses(status)
    moment_now = context.now(ctx, now)
    start, end = moment(since, moment_now, "--since"), moment(until, moment_now, "--until")
    view = load_view(context.open_memdir(ctx), moment_now)
    chosen = listed(view, wanted, source, type_, persona, start, end)
    most = k or limit
    chosen = chosen[:most] if most else chosen
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
    note(counted(len(chosen), "memory"))


def stats(
    ctx: typer.Context,
    provenance: Annotated[
        bool,
        typer.Option("--provenance", help="What became of the inferences: confirmation, "
                     "rejection and expiry rates by month, type and author, and the median "
                     "time to the user's decision."),
    ] = False,
    drift: Annotated[
        bool,
        typer.Option("--drift", help="Affect and type drift per month: mean valence and "
                     "arousal, the strongest emotion, the mix of types and how far it moved."),
    ] = False,
    evolution: Annotated[
        bool,
        typer.Option("--evolution", help="How the memdir changed per month: written, "
                     "confirmed, rejected, expired, superseded, forgotten, links, the live "
                     "memories at the month's end and the churn."),
    ] = False,
    now: context.NowOpt = None,
    json_: context.JsonOpt = False,
) -> None:  # fmt: skip
    """Counts by status, source and store, and the size of the files.

    Example: memdir stats --json
    Example: memdir stats --provenance
    Example: memdir stats --drift
    Example: memdir stats --evolution
    """
    memdir = context.open_memdir(ctx)
    view = load_view(memdir, context.now(ctx, now))
    if provenance + drift + evolution > 1:
        raise BadInputError("--provenance, --drift and --evolution are three reports",
                            hint="ask for one")  # fmt: skip
    if evolution:
        _evolution_report(view, json_)
    elif drift:
        _drift_report(memdir, view, json_)
    elif provenance:
        _provenance_report(view, json_)
    else:
        _counts_report(memdir, view, json_)


def _monthly_report(
    key: str,
    report: dict[str, Any],
    json_: bool,
    empty: str,
    render: Callable[[dict[str, Any]], None],
) -> None:
    """A report by month (evolution, drift): JSON under `key`; else `empty` said when it has
    no month, or the report rendered."""
    if json_:
        emit_json({key: report})
    elif not report["months"]:
        note(empty)
    else:
        render(report)


def _evolution_report(view: ArchiveView, json_: bool) -> None:
    from memdir.usecases.analytics import evolution as analyse_evolution

    _monthly_report("evolution", analyse_evolution(view), json_, "no memory yet", print_evolution)


def _drift_report(memdir: Memdir, view: ArchiveView, json_: bool) -> None:
    from memdir.indexers.affect import load_annotator
    from memdir.usecases.analytics import drift as analyse_drift

    name = memdir.settings.affect.annotator
    found = analyse_drift(view, None if name == "none" else load_annotator(name))
    _monthly_report("drift", found, json_, "no memory every surface may show yet", print_drift)


def _provenance_report(view: ArchiveView, json_: bool) -> None:
    from memdir.usecases.analytics import provenance as analyse

    report = analyse(view)
    if json_:
        emit_json({"provenance": report})
    else:
        print_provenance(report)


def _counts_report(memdir: Memdir, view: ArchiveView, json_: bool) -> None:
    """stats without a report option: counts by status, source and store, shelf sizes."""
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
            f"{group:<9} " + ", ".join(f"{name} {count}" for name, count in sorted(counts.items()))
        )


def verify(
    ctx: typer.Context,
    history: bool = typer.Option(
        False, "--history", help="Also report shelf lines git once had that are now gone."
    ),
    fix: bool = typer.Option(
        False, "--fix", help="Remove temporary files left by writers that were killed."
    ),
    json_: context.JsonOpt = False,
) -> None:
    """Check the memdir (read-only): schemas, ids, references, provenance, git rules.

    Exits 0 when clean, 1 with the list of problems otherwise; warnings do not fail it.

    Example: memdir verify --history || echo "needs attention"
    """
    memdir = context.open_memdir(ctx, lenient=True)
    if fix:
        from memdir.archive_format.verify import fix_leftovers

        for path in fix_leftovers(memdir):
            note(f"removed {path.relative_to(memdir.root)} (an interrupted write)")
    report = verify_memdir(memdir, history=history)
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
        note(f"{counted(report.lines, 'line')} checked, {counted(len(report.problems), 'problem')}")
    if not report.clean:
        raise typer.Exit(int(ExitStatus.PROBLEMS))


def register(app: typer.Typer) -> None:
    app.command()(show)
    app.command()(log)
    app.command()(links)
    app.command("list")(list_command)
    app.command()(stats)
    app.command()(verify)
