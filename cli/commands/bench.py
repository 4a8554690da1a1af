"""`memdir bench`: benchmarks that run memdir's own pipeline end to end."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..render import console, emit_json
from .index import progress_bar

bench_app = typer.Typer(help="Benchmarks run through memdir's own pipeline.", no_args_is_help=True)


@bench_app.command("locomo")
def locomo(
    file: Annotated[
        Path, typer.Argument(help="A locomo10.json-style file.", exists=True, dir_okay=False)
    ],
    profile: Annotated[str | None, typer.Option("--profile", help="Recall weight profile.")] = None,
    limit: Annotated[
        int | None, typer.Option("--limit", min=1, help="Only the first N samples.")
    ] = None,
    decay: Annotated[
        bool, typer.Option("--decay", help="Let decay lower old memories (off: no rehearsals).")
    ] = False,
    json_: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Turn-level recall@k on LoCoMo conversations, no LLM, through `memdir recall`.

    Example: memdir bench locomo ../shared/bench/locomo/locomo-dev.json --json
    """
    from memdir.cli.bench.locomo import run

    with progress_bar() as advance:
        report = run(file, profile, limit, advance, decay=decay)
    if json_:
        emit_json(report)
        return
    from rich.table import Table

    table = Table("category", "n", "R@1", "R@5", "R@10", "all@5", "all@10", "session R@5")
    rows = [("overall (1–4)", report["overall"])] + [
        (f"{key} {value['name']}", value) for key, value in report["categories"].items()
    ]
    for label, row in rows:
        table.add_row(label, str(row["n"]), *(f"{row.get(m, 0):.3f}" for m in
                      ("recall@1", "recall@5", "recall@10", "all@5", "all@10", "session_recall@5")))  # fmt: skip
    out = console()
    out.print(table)
    out.print(
        f"{report['ms_per_query']} ms per query; evidence repairs: {report['evidence_repairs']}"
    )


@bench_app.command("safety")
def safety(
    seed: Annotated[int, typer.Option("--seed", help="Seed of every random choice.")] = 0,
    sessions: Annotated[
        int, typer.Option("--sessions", min=10, help="Simulated sessions (experiments 2, 5, 6).")
    ] = 100,
    json_: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
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
