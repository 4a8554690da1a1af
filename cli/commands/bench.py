"""`memdir bench`: benchmarks that run memdir's own pipeline end to end."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from .. import context
from ..render import console, emit_json
from .index import progress_bar

if TYPE_CHECKING:
    from memdir.indexers.index import Progress

# the arguments and options of more than one benchmark
FilesArg = Annotated[
    list[Path], typer.Argument(help="locomo10.json-style files.", exists=True, dir_okay=False)
]
LimitOpt = Annotated[
    int | None, typer.Option("--limit", min=1, help="Only the first N samples of each file.")
]
WeightOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--weight",
        metavar="NAME=VALUE",
        help="Change one weight of the profile (repeatable), e.g. --weight session=0.25.",
    ),
]
PerQuestionOpt = Annotated[
    Path | None,
    typer.Option(
        "--per-question",
        dir_okay=False,
        help="Write one JSON line per question (what recall found for it, and its scores) to "
        "this file.",
    ),
]

SHAPE_HELP = (
    "Another block shape measured on the same recalls (repeatable): floor_cosine, floor_bm25,"
    " relative, neighbour, max_entries, journal_turns, journal_least or journal_share laid over"
    " the default's."
)
ShapeOpt = Annotated[
    list[str] | None, typer.Option("--shape", metavar="NAME=VALUE[,…]", help=SHAPE_HELP)
]

# `bench locomo`'s own: where each sample's index lives, and what its memdir.yaml says
PostgresOpt = Annotated[
    str | None,
    typer.Option(
        "--postgres",
        metavar="DSN",
        help="Build each sample's index on this PostgreSQL server (index.backend: postgres).",
    ),
]
SettingsFileOpt = Annotated[
    Path | None,
    typer.Option(
        "--settings",
        exists=True,
        dir_okay=False,
        help="A YAML file of memdir.yaml settings for each sample's memdir (e.g. a stage"
        " switched off).",
    ),
]

bench_app = typer.Typer(help="Benchmarks run through memdir's own pipeline.", no_args_is_help=True)


@bench_app.command("locomo")
def locomo(
    files: FilesArg,
    profile: Annotated[str | None, typer.Option("--profile", help="Recall weight profile.")] = None,
    limit: LimitOpt = None,
    decay: Annotated[
        bool, typer.Option("--decay", help="Let decay lower old memories (off: no rehearsals).")
    ] = False,
    per_question: PerQuestionOpt = None,
    postgres: PostgresOpt = None,
    weight: WeightOpt = None,
    settings_file: SettingsFileOpt = None,
    sleep: Annotated[
        bool, typer.Option("--sleep", help="Run one sleep (relink) on each sample first.")
    ] = False,
    compare: Annotated[
        list[str] | None,
        typer.Option(
            "--compare",
            metavar="SPEC",
            help="One more arm on the same index (repeatable): the first arm's weights with"
            " NAME=VALUE[,…] changed, or profile=NAME[,…]; each delta gets a paired bootstrap"
            " interval.",
        ),
    ] = None,
    resamples: Annotated[
        int, typer.Option("--resamples", min=100, help="Bootstrap resamples of a comparison.")
    ] = 2000,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the bootstrap.")] = 0,
    json_: context.JsonOpt = False,
) -> None:
    """Turn-level recall@k on LoCoMo-style conversations, no LLM, through `memdir recall`:
    each file's figures (overall, per category, per chat), and pooled over all of them when
    there are several. Each --compare is one more arm that answers the same questions on the
    same built index; each of its R@5/R@10 deltas gets a paired bootstrap 95 % interval over
    the questions.

    Example: memdir bench locomo ../shared/bench/locomo/locomo-dev.json --json;
    memdir bench locomo FILE --weight session=0.25 --weight bm25=0.75 (a profile variant);
    memdir bench locomo DEV VAL --compare when=0 --compare profile=quality (two arms)
    """
    from memdir.archive_format.settings import load_settings
    from memdir.cli.bench.locomo import comparison, run, weight_overrides

    scratch = _settings_file(settings_file) if settings_file is not None else {}
    if postgres is not None:
        scratch.update(index={"backend": "postgres", "dsn": postgres})
    load_settings(scratch, str(settings_file or "--postgres"))  # a bad value fails here
    weights = weight_overrides(weight or [])
    comparisons = [comparison(spec, resamples, seed) for spec in compare or []]

    report = measured(per_question, lambda advance, rows: run(
        files, profile, limit, advance, decay=decay, per_question=rows, settings=scratch,
        sleep=sleep, weights=weights, compare=comparisons))  # fmt: skip
    if json_:
        emit_json(report)
        return
    from rich.table import Table

    out = console()
    parts = [
        (path, figures, figures["evidence_repairs"]) for path, figures in report["files"].items()
    ]
    if len(files) > 1:
        parts.append((f"pooled over {len(files)} files", report["pooled"], None))
    for title, figures, repairs in parts:
        table = Table("category", "n", "R@1", "R@5", "R@10", "all@5", "all@10", "session R@5",
                      title=title)  # fmt: skip
        rows_shown = [("overall (1–4)", figures["overall"])] + [
            (f"{key} {value['name']}", value) for key, value in figures["categories"].items()
        ]
        for label, row in rows_shown:
            table.add_row(label, str(row["n"]), *(f"{row.get(m, 0):.3f}" for m in
                          ("recall@1", "recall@5", "recall@10", "all@5", "all@10", "session_recall@5")))  # fmt: skip
        out.print(table)
        extra = f"; evidence repairs: {repairs}" if repairs is not None else ""
        out.print(f"{figures['ms_per_query']} ms per query{extra}")
        chats = figures.get("chats") or {}
        if len(chats) > 1:
            out.print("per chat R@5 / R@10: " + ", ".join(
                f"{chat} {row.get('recall@5', 0):.3f} / {row.get('recall@10', 0):.3f}"
                for chat, row in chats.items()))  # fmt: skip
    for number in range(len(comparisons)):
        compared = [(path, figures["comparisons"][number])
                    for path, figures in report["files"].items()]  # fmt: skip
        if len(files) > 1:
            compared.append((f"pooled over {len(files)} files", report["comparisons"][number]))
        for title, deltas in compared:
            out.print(comparison_table(title, deltas))


def comparison_table(title: str, comparison: dict[str, Any]) -> Any:
    """The variant against the baseline: each R@5 / R@10 delta with its interval."""
    from rich.table import Table

    table = Table("questions", "n", "R@5 base → variant", "Δ R@5 [95 %]", "R@10 base → variant",
                  "Δ R@10 [95 %]", title=f"{title}: variant {comparison['variant']}")  # fmt: skip
    parts = [("overall (1–4)", comparison["overall"])]
    parts += [(f"category {key}", value) for key, value in comparison["categories"].items()]
    parts += [(f"chat {key}", value) for key, value in comparison["chats"].items()]
    for label, row in parts:
        cells = []
        for metric in ("recall@5", "recall@10"):
            d = row[metric]
            cells += [f"{d['baseline']:.3f} → {d['variant']:.3f}",
                      f"{d['delta']:+.3f} [{d['low']:+.3f}, {d['high']:+.3f}]"]  # fmt: skip
        table.add_row(label, str(row["recall@5"]["n"]), *cells)
    return table


def measured(
    per_question: Path | None,
    measure: Callable[[Progress, list[dict[str, Any]] | None], dict[str, Any]],
) -> dict[str, Any]:
    """A benchmark's report, run under a progress bar; with `--per-question`, the rows it
    collects written to that file, one JSON object per line, replaced atomically."""
    import json

    from memdir.archive_format.atomic import write_text

    rows: list[dict[str, Any]] | None = [] if per_question is not None else None
    with progress_bar() as advance:
        report = measure(advance, rows)
    if per_question is not None and rows is not None:
        write_text(
            per_question, "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
        )
    return report


@bench_app.command("delivery")
def delivery(
    files: FilesArg,
    limit: LimitOpt = None,
    budget: Annotated[
        int | None, typer.Option("--budget", min=1, help="The context block's token budget.")
    ] = None,
    per_question: PerQuestionOpt = None,
    weight: WeightOpt = None,
    shape: ShapeOpt = None,
    in_journal: Annotated[
        bool,
        typer.Option(
            "--in-journal",
            help="Keep each sample's turns in the journal only, as an "
            "import leaves them (no memory of them): the block's journal turns.",
        ),
    ] = False,
    json_: context.JsonOpt = False,
) -> None:
    """What the per-prompt hook delivers (`memdir context` for every question): answered,
    silent with the answer in recall's top 10, noise (entries holding no evidence, and turns
    that are not evidence) and tokens, per file and category.

    Example: memdir bench delivery ../shared/bench/locomo/locomo-dev.json --json;
    memdir bench delivery FILE --weight pair_semantic=1 (a profile variant);
    memdir bench delivery FILE --shape relative=0.9 --shape max_entries=2 (block shapes);
    memdir bench delivery FILE --in-journal (the turns only in the journal, as after an import)
    """
    from memdir.cli.bench.delivery import run
    from memdir.cli.bench.locomo import weight_overrides, with_weights

    weights = weight_overrides(weight or [])
    settings = with_weights({}, "default", weights) if weights else None
    report = measured(per_question, lambda advance, rows: run(
        files, limit, budget, settings, progress=advance, per_question=rows, shapes=shape,
        in_journal=in_journal))  # fmt: skip
    report["weights"] = weights
    if json_:
        emit_json(report)
        return
    from rich.table import Table

    out = console()
    parts = list(report["files"].items())
    if len(files) > 1:
        parts.append((f"pooled over {len(files)} files", report["pooled"]))
    columns = ("answered", "answered_when_available", "silent_with_answer", "noise",
               "turn_noise", "mean_tokens")  # fmt: skip
    for title, figures in parts:
        table = Table("category", "n", "answered", "of available", "silent w/ answer", "noise",
                      "turn noise", "tokens", title=title)  # fmt: skip
        shown = (
            [("overall (1–4)", figures["overall"])]
            + [(f"{key} {value['name']}", value) for key, value in figures["categories"].items()]
            + [(f"--shape {name}", arm["overall"]) for name, arm in figures["shapes"].items()]
        )
        for label, row in shown:
            table.add_row(label, str(row["n"]), *(
                "–" if row.get(name) is None else f"{row[name]:g}" for name in columns))  # fmt: skip
        out.print(table)


@bench_app.command("safety")
def safety(
    seed: Annotated[int, typer.Option("--seed", help="Seed of every random choice.")] = 0,
    sessions: Annotated[
        int, typer.Option("--sessions", min=10, help="Simulated sessions (experiments 2, 5, 6).")
    ] = 100,
    json_: context.JsonOpt = False,
) -> None:
    """False memories, corrections, adversarial insertion, affective amplification, write
    discipline and drift: each metric with the safeguards on and in an unrestricted ablation.

    Example: memdir bench safety --seed 0 --json
    """
    from memdir.cli.bench.safety import run

    with progress_bar() as advance:
        report = run(seed, sessions, progress=advance)
    if json_:
        emit_json(report)
        return
    from rich.table import Table

    table = Table("experiment", "metric", "safeguarded", "unrestricted", "better")
    for row in report["metrics"]:
        better = "lower" if row["lower_is_better"] else "higher"
        mark = (
            "✓"
            if row["safeguard_wins"]
            else ("=" if row["safeguarded"] == row["unrestricted"] else "✗")
        )
        table.add_row(row["experiment"], row["metric"], f"{row['safeguarded']:g}",
                      f"{row['unrestricted']:g}", f"{mark} {better}")  # fmt: skip
    out = console()
    out.print(table)
    out.print(
        f"seed {report['seed']}, {report['sessions']} sessions, top-{report['k']}, "
        f"{report['embedder']}, {report['seconds']} s; series: --json (details)"
    )


def register(app: typer.Typer) -> None:
    app.add_typer(bench_app, name="bench")


def _settings_file(path: Path) -> dict[str, Any]:
    """The `settings` mapping of a YAML file (a bare mapping of settings, or memdir.yaml's
    shape with them under `settings:`)."""
    import yaml

    from memdir.archive_format.errors import BadInputError

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as error:
        raise BadInputError(f"cannot read {path}: {error}") from None
    if isinstance(data, dict) and isinstance(data.get("settings"), dict):
        data = data["settings"]
    if not isinstance(data, dict):
        raise BadInputError(f"{path} holds no mapping of settings", hint="e.g. `recall: {...}`")
    return dict(data)
