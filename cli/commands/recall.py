"""`memdir recall`: the main job — what should the assistant remember right now, and why."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated, Any

import typer

from memdir.archive_format.errors import BadInputError

from .. import context
from ..render import console, emit_json, shorten
from ..usecases.prompt import DEFAULT_BUDGET
from .index import progress_bar
from .lifecycle import read_text

if TYPE_CHECKING:
    from memdir.indexers.recall import RecallResult

QueryArg = Annotated[str, typer.Argument(help="What to remember about, or '-' for stdin.")]
ExplainOpt = Annotated[bool, typer.Option("--explain", help="Show every stage of the pipeline.")]
ProfileOpt = Annotated[
    str | None,
    typer.Option(
        "--profile", help="Weight profile: default, cama, anima, or one from memdir.yaml."
    ),
]
BudgetOpt = Annotated[
    int | None, typer.Option("--budget", min=1, help="Token budget for the results.")
]
IncludeExpiredOpt = Annotated[
    bool, typer.Option("--include-expired", help="Also recall expired inferences (weight 0.2).")
]
IncludePrivateOpt = Annotated[
    bool, typer.Option("--include-private", help="Also recall private memories.")
]
PersonaOpt = Annotated[str | None, typer.Option("--persona", help="Recall as this persona.")]
NoCounterweightsOpt = Annotated[
    bool, typer.Option("--no-counterweights", help="Ablation: no balancing for negative queries.")
]
MmrOpt = Annotated[bool, typer.Option("--mmr", help="Re-rank for diversity (MMR).")]
PerfectOpt = Annotated[
    bool, typer.Option("--perfect", help="Ignore decay: rank as if nothing faded.")
]
NoRecordOpt = Annotated[
    bool, typer.Option("--no-record", help="Do not record this recall (rehearsal, ring).")
]
WindowOpt = Annotated[
    bool, typer.Option("--window", help="Also show the raw window: recent user turns.")
]

SHOWN = {  # explain-table column → component
    "sem": "semantic", "bm25": "bm25", "ctx·sem": "context_semantic", "ctx·bm25": "context_bm25",
    "spk": "speaker", "sess": "session", "aff": "affect", "deg": "degree", "rec": "recency",
    "imp": "importance", "kw": "keyword", "decay": "decay",
}  # fmt: skip


def register(app: typer.Typer) -> None:
    register_context(app)

    @app.command()
    def recall(
        ctx: typer.Context,
        query: QueryArg,
        k: Annotated[int, typer.Option("--k", "-k", min=1, help="How many memories.")] = 10,
        explain: ExplainOpt = False,
        profile: ProfileOpt = None,
        budget: BudgetOpt = None,
        include_expired: IncludeExpiredOpt = False,
        include_private: IncludePrivateOpt = False,
        persona: PersonaOpt = None,
        no_counterweights: NoCounterweightsOpt = False,
        mmr: MmrOpt = False,
        perfect: PerfectOpt = False,
        no_record: NoRecordOpt = False,
        window: WindowOpt = False,
        now: context.NowOpt = None,
        json_: context.JsonOpt = False,
    ) -> None:
        """Recall the memories that matter for a query, with a verdict:
        GROUNDED, LOW_CONFIDENCE or NO_DATA.

        Example: memdir recall "how does Sam take his coffee?" --explain
        """
        from memdir.cli.usecases.recall import recall as run
        from memdir.indexers.recall import RecallOptions

        options = RecallOptions(
            k=k, profile=profile, include_expired=include_expired, include_private=include_private,
            persona=persona, budget=budget, counterweights=not no_counterweights, mmr=mmr,
            perfect=perfect,
        )  # fmt: skip
        text = read_text(query).strip()
        if not text:
            raise BadInputError("the query is empty")
        with progress_bar() as advance:
            result = run(context.open_memdir(ctx), text, context.now(ctx, now), options,
                         record=not no_record, progress=advance)  # fmt: skip
        turns = raw_window(ctx, now) if window else None
        if json_:
            data = result.to_dict(explain=explain)
            emit_json({**data, "raw_window": turns} if window else data)
            return
        if explain:
            render_explain(result)
        render_results(result)
        for turn in turns or []:
            typer.echo(f"   raw {turn['at']} [{turn['session']}] {shorten(turn['text'], 100)}")


def register_context(app: typer.Typer) -> None:
    @app.command("context")
    def context_command(
        ctx: typer.Context,
        prompt: Annotated[str, typer.Argument(help="The user's prompt, or '-' for stdin.")],
        budget: Annotated[
            int, typer.Option("--budget", min=1, help="Token budget for the whole block.")
        ] = DEFAULT_BUDGET,
        journal: Annotated[
            str | None,
            typer.Option(
                "--journal",
                metavar="SESSION",
                help="Also store the prompt as the user's turn in this journal session "
                "(what `memdir journal add --role user` does), in the same process.",
            ),
        ] = None,
        no_record: NoRecordOpt = False,
        now: context.NowOpt = None,
        json_: context.JsonOpt = False,
    ) -> None:
        """The block an assistant should see before answering a prompt: hard facts, relevant
        memories and unconfirmed inferences, each with its id and provenance — or nothing,
        when recall's verdict is not GROUNDED. For per-prompt hooks (examples/, docs/MCP.md).

        Example: memdir context "what should I pack for Lisbon?" --budget 300
        Hook: memdir context --journal "$SESSION" --budget 400 - < prompt.txt
        """
        from memdir.cli.usecases.prompt import prompt_context

        given = read_text(prompt)
        text = given.strip()
        if not text:
            raise BadInputError("the prompt is empty")
        memdir, moment = context.open_memdir(ctx), context.now(ctx, now)
        if journal is not None:
            from memdir.cli.usecases.journal import record_turns, turn_from_fields

            fields = {"role": "user", "session": journal, "text": given}
            # boot.md is left to the next sleep or journal write: folding the whole archive
            # for it on every prompt would be most of the hook's time
            record_turns(memdir, [turn_from_fields(fields, moment, "cli")], moment, refresh=False)
        found = prompt_context(memdir, text, moment, budget, record=not no_record)
        if json_:
            emit_json(found.to_dict())
        else:
            sys.stdout.write(found.markdown())


def raw_window(ctx: typer.Context, now: str | None) -> list[dict[str, Any]]:
    """The raw window (the last trusted user turns, any session) to show beside the results."""
    from memdir.cli.usecases.journal import read_turns

    return read_turns(context.open_memdir(ctx), context.now(ctx, now), window=True)


def render_results(result: RecallResult) -> None:
    out = console()
    out.print(f"[bold]{result.verdict}[/bold]  {len(result.results)} memories  "
              f"(profile {result.profile}, {result.milliseconds:.0f} ms)")  # fmt: skip
    for rank, candidate in enumerate(result.results, start=1):
        line = candidate.memory.line
        tag = "" if candidate.status == "durable" else f" [{candidate.status} ×{candidate.weight}]"
        out.print(f"{rank:>2}. {candidate.score:5.3f}  {candidate.id}  {line['created'][:10]}  "
                  f"{shorten(candidate.memory.text, 90)}{tag}", markup=False)  # fmt: skip


def render_explain(result: RecallResult) -> None:
    from rich.table import Table

    from memdir.indexers.recall import Stage

    out = console()
    analysis = result.analysis.to_dict()
    out.rule(f"1. {Stage.QUERY.value}")
    affect = analysis["affect"]
    out.print(f"affect: valence {affect['valence']:+.2f}, arousal {affect['arousal']:.2f}"
              + ("  → strongly negative" if analysis["strongly_negative"] else ""))  # fmt: skip
    window = analysis["time_window"]
    out.print(
        f"time window: {window['phrase']!r} → {window['start']} … {window['end']}"
        if window
        else "time window: none"
    )
    out.print(
        f"names: {', '.join(analysis['names']) or 'none'}   keys named: {', '.join(analysis['keys']) or 'none'}"
    )
    stages = {stage.name: stage for stage in result.stages}
    pool = stages[Stage.POOL].rows
    out.rule(f"2. {Stage.POOL.value} ({len(pool)})")
    counts: dict[str, int] = {}
    for row in pool:
        for channel in row["channels"]:
            counts[channel] = counts.get(channel, 0) + 1
    out.print(", ".join(f"{name} {count}" for name, count in sorted(counts.items())) or "empty")
    filters = stages[Stage.FILTERS]
    out.rule(f"3. {Stage.FILTERS.value}")
    dropped = [row for row in filters.rows if row["dropped"]]
    for note in filters.notes:
        out.print(note)
    if dropped:
        table = Table("id", "status", "dropped because", box=None)
        for row in dropped[:15]:
            table.add_row(row["id"], row["status"], row["dropped"])
        out.print(table)
    out.rule(f"4. {Stage.SCORE.value} (top 15) = Σ weight × component, × provenance weight")
    table = Table("id", "score", "×w", *SHOWN, "text", box=None)
    texts = {row["id"]: row["text"] for row in pool}
    for row in stages[Stage.SCORE].rows[:15]:
        components = [f"{row.get(name, 0.0):.2f}" for name in SHOWN.values()]
        text = shorten(texts.get(row["id"]), 40)
        table.add_row(
            row["id"][:12], f"{row['score']:.3f}", f"{row['weight']:g}", *components, text
        )
    out.print(table)
    for number, name in ((5, Stage.COUNTERWEIGHTS), (6, Stage.DIVERSITY), (7, Stage.BUDGET)):
        stage = stages[name]
        out.rule(f"{number}. {name.value}")
        for note in stage.notes:
            out.print(note)
        for row in stage.rows:
            out.print(_row_text(row), markup=False)
    out.rule(Stage.VERDICT.value)


def _row_text(row: dict[str, Any]) -> str:
    return ", ".join(f"{key} {value}" for key, value in row.items())
