"""The derived indexes: index, search, similar, annotate."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, Any

import typer

from memdir.archive_format import visibility

from .. import context
from ..parameters import IncludeExpiredOpt, IncludePrivateOpt
from ..render import emit_json, note, shorten

if TYPE_CHECKING:
    from memdir.indexers.index import MemoryIndex, Progress

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


def show_hits(rows: list[dict[str, Any]], json_: bool) -> None:
    """`search` and `similar` results: id, score and text (the highlighted snippet, if any),
    marked with a status or visibility other than durable/normal."""
    if json_:
        emit_json(rows)
        return
    width = 7 if rows and "snippet" in rows[0] else 6  # BM25 runs to tens, cosines below one
    for row in rows:
        tag = f"  [{row['marker']}]" if row["marker"] else ""
        typer.echo(
            f"{row['id']}  {row['score']:{width}.3f}  "
            f"{shorten(row.get('snippet') or row['text'], 100)}{tag}"
        )


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
            for name, value in data.items():
                typer.echo(f"{name + ':':<20} {value}")
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
        show_hits(_hits(ctx, query, k, "search", include_expired, include_private, now), json_)

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
        show_hits(_hits(ctx, query, k, "similar", include_expired, include_private, now), json_)

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
        for row in rows:
            typer.echo(
                f"{row['id']}  v={row['valence']:+.2f} a={row['arousal']:.2f}  "
                f"{row['annotator']:<12} {shorten(row['text'], 60)}"
            )
