"""The derived indexes: index, search, similar, annotate."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, Any

import typer

from .. import context
from ..render import emit_json, note, shorten

if TYPE_CHECKING:
    from memdir.indexers.index import MemoryIndex, Progress
    from memdir.indexers.reader import Hit

KOpt = Annotated[int, typer.Option("--k", "-k", min=1, help="How many results.")]
SEARCH_FIELDS = ("text", "intent", "rationale", "evidence", "meta")


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


def show_hits(hits: list[Hit], json_: bool, snippets: bool) -> None:
    """`search` and `similar` results: id, score and text (the highlighted snippet, if any)."""
    if json_:
        rows = [{"id": h.id, "text": h.text, "score": round(h.score, 4)} for h in hits]
        if snippets:
            rows = [{**row, "snippet": h.snippet} for row, h in zip(rows, hits, strict=True)]
        emit_json(rows)
        return
    width = 7 if snippets else 6  # BM25 scores run to tens, cosines stay below one
    for hit in hits:
        typer.echo(f"{hit.id}  {hit.score:{width}.3f}  {shorten(hit.snippet or hit.text, 100)}")


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
        field: Annotated[
            str,
            typer.Option(
                "--field",
                help="Search the text, or a meta-memory field: intent, rationale, evidence,"
                " meta (all three).",
            ),
        ] = "text",
        json_: context.JsonOpt = False,
    ) -> None:
        """Full-text search over live memories, with highlighted snippets.

        Example: memdir search "coffee order" --k 5; memdir search "allergy" --field rationale
        """
        from memdir.archive_format.errors import BadInputError

        if field not in SEARCH_FIELDS:
            raise BadInputError(
                f"unknown search field {field!r}", hint=f"use one of {', '.join(SEARCH_FIELDS)}"
            )
        show_hits(open_index(ctx).search(query, k, field), json_, snippets=True)

    @app.command()
    def similar(
        ctx: typer.Context,
        query: Annotated[
            str, typer.Argument(help="A sentence; memories closest in meaning are shown.")
        ],
        k: KOpt = 10,
        json_: context.JsonOpt = False,
    ) -> None:
        """Vector search only: memories closest in meaning (cosine similarity).

        Example: memdir similar "what does the user drink in the morning"
        """
        show_hits(open_index(ctx).similar(query, k), json_, snippets=False)

    @app.command()
    def distill(
        ctx: typer.Context,
        recompute: Annotated[
            bool, typer.Option("--recompute", help="Distil every memory again.")
        ] = False,
        json_: context.JsonOpt = False,
    ) -> None:
        """Derived labels for memories the user did not label: type, importance, temporal
        class, relational impact, with a confidence (docs/RECALL.md, the taxonomy).

        New memories are distilled when the index updates; what the user gave always wins.

        Example: memdir distill --recompute --json
        """
        from collections import Counter

        memory_index = open_index(ctx)
        count = memory_index.distill(recompute)
        if recompute:
            note(f"distilled {count} memories again")
        rows = memory_index.distillations()
        if json_:
            emit_json(rows)
            return
        for row in rows:
            label = row["effective"]["type"] or "-"
            if row["effective"]["subtype"]:
                label += f":{row['effective']['subtype']}"
            source = "user" if row["given"]["type"] else "distilled"
            typer.echo(f"{row['id']}  {label:<18} {source:<9} imp {row['effective']['importance']:<2} "
                       f"{row['effective']['temporal']:<10} {shorten(row['text'], 60)}")  # fmt: skip
        counts = Counter(str(row["effective"]["type"]) for row in rows)
        note(", ".join(f"{label} {n}" for label, n in counts.most_common()) or "no memories")

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
        rows = memory_index.affects()
        if json_:
            emit_json(rows)
            return
        for row in rows:
            typer.echo(
                f"{row['id']}  v={row['valence']:+.2f} a={row['arousal']:.2f}  "
                f"{row['annotator']:<12} {shorten(row['text'], 60)}"
            )
