"""The derived indexes: index, search, similar, annotate."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, Any

import typer

from memdir.archive_format import visibility

from .. import context
from ..layout import Column, flat
from ..parameters import IncludeExpiredOpt, IncludePrivateOpt
from ..render import emit_json, note, print_fields, print_table

if TYPE_CHECKING:
    from memdir.archive_format.memdir import Memdir
    from memdir.indexers.index import MemoryIndex, Progress

HIT_COLUMNS = (Column("id", ident=True), Column("score", right=True), Column("text", text=True))
AFFECT_COLUMNS = (
    Column("id", ident=True), Column("valence"), Column("arousal"), Column("annotator", drop=1),
    Column("text", text=True),
)  # fmt: skip
KOpt = Annotated[int, typer.Option("--k", "-k", min=1, help="How many results.")]


@contextmanager
def progress_bar() -> Iterator[Progress]:
    """A rich progress bar on stderr for long work; silent when stderr is not a terminal."""
    import sys

    if not sys.stderr.isatty():
        yield lambda stage, done, total: None
        return
    from rich.console import Console
    from rich.progress import Progress as RichProgress

    with RichProgress(console=Console(stderr=True), transient=True) as bar:
        tasks: dict[str, Any] = {}

        def advance(stage: str, done: int, total: int) -> None:
            if stage not in tasks:
                tasks[stage] = bar.add_task(stage, total=total)
            bar.update(tasks[stage], completed=done, total=total)

        yield advance


def open_index(ctx: typer.Context) -> MemoryIndex:
    """The memdir's index, brought up to date from the checkpoints first."""
    from memdir.cli.usecases.recall import fresh_index

    with progress_bar() as advance:
        return fresh_index(context.open_memdir(ctx), advance)


def show_hits(memdir: Memdir, rows: list[dict[str, Any]], json_: bool) -> None:
    """`search` and `similar` results: id, score and text (the highlighted snippet, if any),
    marked with a status or visibility other than durable/normal."""
    if json_:
        emit_json(rows)
        return
    if not rows:
        note("no results")
        return
    table = []
    for row in rows:
        tag = f"  [{row['marker']}]" if row["marker"] else ""
        text = flat(row.get("snippet") or row["text"]) + tag
        table.append((row["id"], f"{row['score']:.3f}", text))
    print_table(HIT_COLUMNS, table, memdir, header=False)


def _hits(ctx: typer.Context, query: str, k: int, surface: str, include_expired: bool,
          include_private: bool, now: str | None) -> list[dict[str, Any]]:  # fmt: skip
    from memdir.cli.usecases.recall import search

    asked = {
        name for name, on in (("expired", include_expired), ("private", include_private)) if on
    }
    memdir = context.open_memdir(ctx)
    return search(memdir, query, context.now(ctx, now), k, surface, asked, open_index(ctx))


def register(app: typer.Typer) -> None:
    @app.command()
    def index(
        ctx: typer.Context,
        rebuild: Annotated[
            bool, typer.Option("--rebuild", help="Start over from the shelves.")
        ] = False,
        status: Annotated[
            bool, typer.Option("--status", help="Show the state of the indexes.")
        ] = False,
        json_: context.JsonOpt = False,
    ) -> None:
        """Bring the full-text and vector indexes up to date (incrementally when possible).

        Example: memdir index --status
        """
        from memdir.indexers.index import MemoryIndex

        memory_index = MemoryIndex(context.open_memdir(ctx))
        if status:
            data = memory_index.status()
            if json_:
                emit_json(data)
                return
            vectors = data["vector_base"]
            data["vector_base"] = f"{vectors['kind']}, {vectors['size']} vectors"
            if data.get("embedder_warning") is None:
                data.pop("embedder_warning", None)
            print_fields(data)
            return
        with progress_bar() as advance:
            report = memory_index.update(advance, rebuild=rebuild)
        if json_:
            emit_json(report.__dict__)
            return
        what = f"rebuilt ({report.reason})" if report.rebuilt else "updated"
        note(
            f"index {what}: {report.memories} memories, {report.events} events, {report.embedded} embedded"
        )

    @app.command()
    def search(
        ctx: typer.Context,
        query: Annotated[
            str, typer.Argument(help="Words to look for (full text, English stemming).")
        ],
        k: KOpt = 10,
        include_expired: IncludeExpiredOpt = False,
        include_private: IncludePrivateOpt = False,
        json_: context.JsonOpt = False,
        now: context.NowOpt = None,
    ) -> None:
        """Full-text search over live memories, with highlighted snippets.

        Example: memdir search "coffee order" --k 5
        """
        rows = _hits(ctx, query, k, "search", include_expired, include_private, now)
        show_hits(context.open_memdir(ctx), rows, json_)

    @app.command()
    def similar(
        ctx: typer.Context,
        query: Annotated[
            str, typer.Argument(help="A sentence; memories closest in meaning are shown.")
        ],
        k: KOpt = 10,
        include_expired: IncludeExpiredOpt = False,
        include_private: IncludePrivateOpt = False,
        json_: context.JsonOpt = False,
        now: context.NowOpt = None,
    ) -> None:
        """Vector search only: memories closest in meaning (cosine similarity).

        Example: memdir similar "what does the user drink in the morning"
        """
        rows = _hits(ctx, query, k, "similar", include_expired, include_private, now)
        show_hits(context.open_memdir(ctx), rows, json_)

    @app.command()
    def annotate(
        ctx: typer.Context,
        recompute: Annotated[
            bool, typer.Option("--recompute", help="Re-derive every annotation.")
        ] = False,
        json_: context.JsonOpt = False,
    ) -> None:
        """Affect annotations (valence, arousal, Plutchik chord) of the memories.

        Affect given by the user wins over the annotator.

        Example: memdir annotate --recompute
        """
        memory_index = open_index(ctx)
        if recompute:
            count = memory_index.reannotate()
            note(
                f"re-annotated {count} memories with {memory_index.annotator.name}/{memory_index.annotator.version}"
            )
        rows = [
            {
                **row,
                "text": visibility.present(
                    "annotate", row["text"], row["status"], row["visibility"]
                ),
            }
            for row in memory_index.affects()
        ]
        if json_:
            emit_json(rows)
            return
        table = [
            (row["id"], f"v={row['valence']:+.2f}", f"a={row['arousal']:.2f}", row["annotator"],
             flat(row["text"]))
            for row in rows
        ]  # fmt: skip
        print_table(AFFECT_COLUMNS, table, context.open_memdir(ctx), header=False)
