"""`memdir recall`: the main job — what should the assistant remember right now, and why."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any

import typer

from memdir.archive_format.errors import BadInputError
from memdir.archive_format.lifecycle import short_ids
from memdir.archive_format.visibility import exposure, marker
from memdir.usecases.prompt import CANDIDATES, DEFAULT_BUDGET
from memdir.words import counted

from .. import context, layout
from ..context import Invocation, Served
from ..explain import ScoreWeights, score_table
from ..layout import Column, fit, flat, rule, wrap
from ..parameters import IncludeExpiredOpt, IncludePrivateOpt, TranscriptOpt, group
from ..render import Answer, emit, json_text, lines_text

if TYPE_CHECKING:
    from memdir.indexers.recall import RecallResult

QueryArg = Annotated[str, typer.Argument(help="What to remember about, or '-' for stdin.")]
ExplainOpt = Annotated[bool, typer.Option("--explain", help="Show every stage of the pipeline.")]
ProfileOpt = Annotated[
    str | None,
    typer.Option(
        "--profile", help="Weight profile: default, quality, cama, anima, or one from memdir.yaml."
    ),
]
BudgetOpt = Annotated[
    int | None, typer.Option("--budget", min=1, help="Token budget for the results.")
]
PersonaOpt = Annotated[str | None, typer.Option("--persona", help="Recall as this persona.")]
IslandOpt = Annotated[
    str | None,
    typer.Option("--island", help="Recall only among this island's members (`memdir island`)."),
]
NoCounterweightsOpt = Annotated[
    bool, typer.Option("--no-counterweights", help="Ablation: no balancing for negative queries.")
]
MmrOpt = Annotated[bool, typer.Option("--mmr", help="Re-rank for diversity (MMR).")]
PerfectOpt = Annotated[
    bool, typer.Option("--perfect", help="Ignore decay: rank as if nothing faded.")
]
InterferenceOpt = Annotated[
    float | None,
    typer.Option("--interference", min=0, max=1,
                 help="Human recall's noise among alike memories, 0..1 (default recall.interference)."),
]  # fmt: skip
SeedOpt = Annotated[int, typer.Option("--seed", help="The interference draws' seed.")]
NoRecordOpt = Annotated[
    bool, typer.Option("--no-record", help="Do not record this recall (rehearsal, ring).")
]
WindowOpt = Annotated[
    bool, typer.Option("--window", help="Also show the raw window: recent user turns.")
]
IncludeJournalOpt = Annotated[
    bool,
    typer.Option(
        "--include-journal",
        help="Also search the journal's turns (imported and journalled conversations): those "
        "holding the query's words, shown apart as verbatim turns, not memories.",
    ),
]


@dataclass(frozen=True)
class Recall:
    """`memdir recall`'s parameters, declared once: typer reads the command's options from here
    (`parameters.group`), and `memdir serve` parses a request into them."""

    query: QueryArg
    k: Annotated[int, typer.Option("--k", "-k", min=1, help="How many memories.")] = 10
    explain: ExplainOpt = False
    profile: ProfileOpt = None
    budget: BudgetOpt = None
    include_expired: IncludeExpiredOpt = False
    include_private: IncludePrivateOpt = False
    persona: PersonaOpt = None
    island: IslandOpt = None
    no_counterweights: NoCounterweightsOpt = False
    mmr: MmrOpt = False
    perfect: PerfectOpt = False
    interference: InterferenceOpt = None
    seed: SeedOpt = 0
    no_record: NoRecordOpt = False
    window: WindowOpt = False
    include_journal: IncludeJournalOpt = False
    now: context.NowOpt = None
    json_: context.JsonOpt = False


@dataclass(frozen=True)
class Context:
    """`memdir context`'s parameters (as `Recall`'s)."""

    prompt: Annotated[str, typer.Argument(help="The user's prompt, or '-' for stdin.")]
    budget: Annotated[
        int, typer.Option("--budget", min=1, help="Token budget for the whole block.")
    ] = DEFAULT_BUDGET
    journal: Annotated[
        str | None,
        typer.Option(
            "--journal",
            metavar="SESSION",
            help="Also store the prompt as the user's turn in this journal session "
            "(what `memdir journal add --role user` does), in the same process.",
        ),
    ] = None
    k: Annotated[
        int, typer.Option("--k", "-k", min=1, help="How many memories recall considers.")
    ] = CANDIDATES
    no_record: NoRecordOpt = False
    transcript: TranscriptOpt = None
    now: context.NowOpt = None
    json_: context.JsonOpt = False


def register(app: typer.Typer) -> None:
    @app.command()
    @group("asked", Recall)
    def recall(ctx: typer.Context, asked: Recall) -> None:
        """Recall the memories that matter for a query, with a verdict:
        GROUNDED, LOW_CONFIDENCE or NO_DATA.

        With --include-journal, the journal's turns that hold the query's words follow as a
        group of their own (they neither rank the memories nor change the verdict). A recall
        is recorded (a rehearsal) unless --no-record; one with --explain never is.

        Example: memdir recall "how does Sam take his coffee?" --explain
        Example: memdir recall "where was the flat in Valencia?" --include-journal
        Example: memdir recall "what did we eat?" --island trips
        """
        emit(answer_recall(context.invocation(ctx), asked))

    @app.command("context")
    @group("asked", Context)
    def context_command(ctx: typer.Context, asked: Context) -> None:
        """The block an assistant should see before answering a prompt: hard facts, relevant
        memories and unconfirmed inferences, each with its id and provenance — or nothing,
        when recall's verdict is not GROUNDED. For per-prompt hooks (examples/, docs/MCP.md).

        Example: memdir context "what should I pack for Lisbon?" --budget 300
        Hook: memdir context --journal "$SESSION" --budget 400 - < prompt.txt
        """
        emit(answer_context(context.invocation(ctx), asked))


def answer_recall(at: Invocation, asked: Recall) -> Answer:
    """What `memdir recall` prints: the one body of the command and of the service's answer."""
    from memdir.indexers.recall import RecallOptions
    from memdir.usecases.journal import read_turns
    from memdir.usecases.recall import journal_group
    from memdir.usecases.recall import recall as run

    moment = at.moment(asked.now)
    options = RecallOptions(
        k=asked.k, profile=asked.profile, include_expired=asked.include_expired,
        include_private=asked.include_private, persona=asked.persona, budget=asked.budget,
        counterweights=not asked.no_counterweights, mmr=asked.mmr, perfect=asked.perfect,
        island=asked.island, interference=asked.interference, seed=asked.seed,
    )  # fmt: skip
    text = at.text(asked.query).strip()
    if not text:
        raise BadInputError("the query is empty")
    with at.progress() as advance:
        # a debugger that writes would change what it explains: --explain never records
        result = run(at.memdir(), text, moment, options,
                     record=not (asked.no_record or asked.explain), progress=advance)  # fmt: skip
    # the raw window: the last trusted user turns, any session
    turns = read_turns(at.memdir(), moment, window=True) if asked.window else None
    found = None
    if asked.include_journal:
        found = journal_group(at.memdir(), result, asked.k, asked.include_private)
    if asked.json_:
        data = result.to_dict(explain=asked.explain)
        if asked.window:
            data["raw_window"] = turns
        return Answer(json_text({**data, "journal": found} if found is not None else data))
    room = at.room
    ids = [c.id for c in result.results]
    if asked.explain:
        ids += [row["id"] for stage in result.stages for row in stage.rows if "id" in row]
    memdir = at.memdir()
    short = functools.cache(lambda: short_ids(memdir, ids))  # asked only if ids do not fit
    lines = []
    if asked.explain:
        lines += explain_lines(result, room, short, ScoreWeights.of(memdir, result.profile))
    lines += result_lines(result, room, short)
    for turn in turns or []:
        lines += layout.wrap(f"raw {turn['at']} [{turn['session']}] {flat(turn['text'])}",
                             room, "   ")  # fmt: skip
    if found is not None:
        lines += journal_lines(found, room, asked.explain)
    return Answer(lines_text(lines))


def answer_context(at: Invocation, asked: Context) -> Answer:
    """What `memdir context` prints (as `answer_recall`)."""
    from memdir.usecases.prompt import prompt_context

    given = at.text(asked.prompt)
    text = given.strip()
    if not text:
        raise BadInputError("the prompt is empty")
    memdir, moment = at.memdir(), at.moment(asked.now)
    if asked.journal is not None:
        from memdir.usecases.journal import (
            record_turns,
            turn_from_fields,
            vouch_user_turns,
        )

        fields = {"role": "user", "session": asked.journal, "text": given}
        turn = turn_from_fields(fields, moment, "cli")
        [turn] = vouch_user_turns(at.actor(), [turn], asked.transcript)
        # boot.md is left to the next sleep or journal write: folding the whole archive
        # for it on every prompt would be most of the hook's time
        record_turns(memdir, [turn], moment, refresh=False)
    found = prompt_context(memdir, text, moment, asked.budget, record=not asked.no_record,
                           k=asked.k, session=asked.journal)  # fmt: skip
    return Answer(json_text(found.to_dict()) if asked.json_ else found.markdown())


# what `memdir serve` answers of this module's commands (cli/serve.py)
SERVED = {"recall": Served(Recall, answer_recall), "context": Served(Context, answer_context)}


def journal_lines(found: dict[str, Any], room: int | None, explain: bool) -> list[str]:
    """The journal group, apart from the memories: date, session (and title), speaker, the
    turn's own words and its id; with --explain, the words each turn matched."""
    turns = found["turns"]
    lines = [rule(f"{found['label']} ({len(turns)})", room)]
    if explain:
        lines += wrap(f"searched the journal for: {', '.join(found['terms']) or 'no words'}"
                      " (these turns do not rank the memories or change the verdict)", room)  # fmt: skip
    if not turns:
        lines.append("no turn holds the query's words")
    for turn in turns:
        where = f"{turn['session']} · {turn['topic']}" if turn.get("topic") else turn["session"]
        exposed = exposure(turn.get("visibility", "normal"), turn.get("secrecy", "public"))
        mark = marker(None, exposed)
        tag = f" [{mark}]" if mark else ""
        matched = f" — matched {', '.join(turn['matched'])}" if explain else ""
        # a "user" turn from a channel that cannot vouch for the user (an MCP client, a hook
        # the harness's transcript did not confirm) is not said to be the user's
        speaker = turn["role"] if turn.get("trusted", True) else f"{turn['role']} (unverified)"
        lines += wrap(f"{turn['at'][:10]} [{where}] {speaker}: {flat(turn['text'])}{tag} "
                      f"({turn['id']}){matched}", room)  # fmt: skip
    return lines


RESULT_COLUMNS = (
    Column("#", right=True),
    Column("score", right=True),
    Column("id", ident=True),
    Column("created", drop=1),
    Column("text", text=True),
)
FILTER_COLUMNS = (Column("id", ident=True), Column("status"), Column("dropped because", text=True))


def result_lines(
    result: RecallResult, room: int | None, short: Callable[[], dict[str, str]]
) -> list[str]:
    lines = [f"{result.verdict}  {counted(len(result.results), 'memory')}  "
             f"(profile {result.profile}, {result.milliseconds:.0f} ms)"]  # fmt: skip
    if result.over_budget:
        lines.append(f"… {result.over_budget} more over the token budget (raise --budget)")
    elif not result.results:
        lines.append("no results")
    rows = []
    for rank, candidate in enumerate(result.results, start=1):
        fields = candidate.memory.line
        mark = marker(candidate.status, fields.get("visibility", "normal"))
        weight = f" ×{candidate.weight}" if candidate.status != "durable" else ""
        tag = f" [{mark}{weight}]" if mark else ""
        rows.append((f"{rank}.", f"{candidate.score:.3f}", candidate.id,
                     fields["created"][:10], flat(candidate.memory.text) + tag))  # fmt: skip
    return lines + fit(RESULT_COLUMNS, rows, room, short, header=False).lines


def explain_lines(
    result: RecallResult,
    room: int | None,
    short: Callable[[], dict[str, str]],
    weights: ScoreWeights,
) -> list[str]:
    from memdir.indexers.recall import Stage

    lines: list[str] = []

    def say(text: str) -> None:
        lines.extend(wrap(text, room))

    analysis = result.analysis.to_dict()
    lines.append(rule(f"1. {Stage.QUERY.value}", room))
    affect = analysis["affect"]
    say(f"affect: valence {affect['valence']:+.2f}, arousal {affect['arousal']:.2f}"
        + ("  → strongly negative" if analysis["strongly_negative"] else ""))  # fmt: skip
    window = analysis["time_window"]
    say(
        f"time window: {window['phrase']!r} → {window['start']} … {window['end']}"
        if window
        else "time window: none"
    )
    say(f"names: {', '.join(analysis['names']) or 'none'}")
    say(f"keys named: {', '.join(analysis['keys']) or 'none'}")
    stages = {stage.name: stage for stage in result.stages}
    pool = stages[Stage.POOL].rows
    lines.append(rule(f"2. {Stage.POOL.value} ({len(pool)})", room))
    counts: dict[str, int] = {}
    for row in pool:
        for channel in row["channels"]:
            counts[channel] = counts.get(channel, 0) + 1
    say(", ".join(f"{name} {count}" for name, count in sorted(counts.items())) or "empty")
    for note in stages[Stage.POOL].notes:  # the scope, and the memories `questions` lowered
        say(note)
    filters = stages[Stage.FILTERS]
    lines.append(rule(f"3. {Stage.FILTERS.value}", room))
    for note in filters.notes:
        say(note)
    dropped = [(row["id"], row["status"], row["dropped"]) for row in filters.rows if row["dropped"]]
    if dropped:
        lines += fit(FILTER_COLUMNS, dropped[:15], room, short).lines
    lines.append(rule(f"4. {Stage.SCORE.value} (top 15)", room))
    texts = {row["id"]: row["text"] for row in pool}
    lines += score_table(stages[Stage.SCORE].rows[:15], texts, weights, room, short)
    stepped = (Stage.ACTIVATION, Stage.INTERFERENCE, Stage.GUARANTEED, Stage.COUNTERWEIGHTS,
               Stage.DIVERSITY, Stage.BUDGET)  # fmt: skip
    for number, name in enumerate(stepped, start=5):
        stage = stages[name]
        lines.append(rule(f"{number}. {name.value}", room))
        for note in stage.notes:
            say(note)
        for row in stage.rows:
            say(_row_text(row))
    lines.append(rule(Stage.VERDICT.value, room))
    return lines


def _row_text(row: dict[str, Any]) -> str:
    return ", ".join(f"{key} {value}" for key, value in row.items())
