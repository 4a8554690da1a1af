"""The derived indexes: index, search, similar, annotate."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, Any

import typer

from memdir.archive_format import visibility
from memdir.words import counted

from .. import context
from ..layout import Column, flat
from ..parameters import IncludeExpiredOpt, IncludePrivateOpt
from ..render import emit_json, note, print_fields, print_table

if TYPE_CHECKING:
    from memdir.archive_format.memdir import Memdir
    from memdir.indexers.index import MemoryIndex, Progress

# `--recompute` of the derived labels (distill, annotate): every memory's, not only new ones
RecomputeOpt = Annotated[
    bool, typer.Option("--recompute", help="Derive them again for every memory, not only new ones.")
]
HIT_COLUMNS = (Column("id", ident=True), Column("score", right=True), Column("text", text=True))
AFFECT_COLUMNS = (
    Column("id", ident=True), Column("valence"), Column("arousal"), Column("annotator", drop=1),
    Column("text", text=True),
)  # fmt: skip
DISTILL_COLUMNS = (
    Column("id", ident=True), Column("type"), Column("source", drop=2), Column("imp", drop=1),
    Column("temporal", drop=3), Column("text", text=True),
)  # fmt: skip
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
    from memdir.usecases.recall import fresh_index

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
          include_private: bool, now: str | None, field: str = "text") -> list[dict[str, Any]]:  # fmt: skip
    from memdir.usecases.recall import search

    asked = {
        name for name, on in (("expired", include_expired), ("private", include_private)) if on
    }
    memdir = context.open_memdir(ctx)
    moment = context.now(ctx, now)
    return search(memdir, query, moment, k, surface, asked, open_index(ctx), field)


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
        compact: Annotated[
            bool,
            typer.Option(
                "--compact",
                help="Also write the full text again, so replaced documents no longer count in"
                " its BM25 statistics (as `memdir sync` does).",
            ),
        ] = False,
        json_: context.JsonOpt = False,
    ) -> None:
        """Bring the full-text and vector indexes up to date (incrementally when possible).

        Example: memdir index --status
        """
        from memdir.archive_format.memdir import move_stray_cache
        from memdir.indexers.index import MemoryIndex

        memdir = context.open_memdir(ctx)
        if rebuild:
            moved = move_stray_cache(memdir, context.now(ctx))
            if moved is not None:
                note(f"{memdir.cache_dir.name} was a file, not the cache directory: moved it to "
                     f"{moved.relative_to(memdir.root)}")  # fmt: skip
        memory_index = MemoryIndex(memdir)
        if status:
            from memdir.indexers.storage import describe_backend

            data = {"backend": describe_backend(memdir), **memory_index.status()}
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
        if compact:
            report.compacted = memory_index.compact_fulltext() or report.compacted
        if json_:
            emit_json(report.__dict__)
            return
        what = f"rebuilt ({report.reason})" if report.rebuilt else "updated"
        note(
            f"index {what}: {counted(report.memories, 'memory')}, "
            f"{counted(report.events, 'event')}, {report.embedded} embedded"
            + (", full text compacted" if report.compacted else "")
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
        include_expired: IncludeExpiredOpt = False,
        include_private: IncludePrivateOpt = False,
        json_: context.JsonOpt = False,
        now: context.NowOpt = None,
    ) -> None:
        """Full-text search over live memories, with highlighted snippets.

        Example: memdir search "coffee order" --k 5; memdir search "allergy" --field rationale
        """
        from memdir.archive_format.errors import BadInputError

        if field not in SEARCH_FIELDS:
            raise BadInputError(
                f"unknown search field {field!r}", hint=f"use one of {', '.join(SEARCH_FIELDS)}"
            )
        rows = _hits(ctx, query, k, "search", include_expired, include_private, now, field)
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
    def distill(
        ctx: typer.Context,
        recompute: RecomputeOpt = False,
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
            note(f"distilled {counted(count, 'memory')} again")
        rows = []
        for row in memory_index.distillations():  # the text as the policy lets it show
            text = visibility.present("annotate", row["text"], row["status"], row["visibility"])
            if text is not None:
                rows.append({**row, "text": text})
        if json_:
            emit_json(rows)
            return
        table = []
        for row in rows:
            effective = row["effective"]
            label = (effective["type"] or "-") + (
                f":{effective['subtype']}" if effective["subtype"] else ""
            )
            source = "user" if row["given"]["type"] else "distilled"
            table.append((row["id"], label, source, str(effective["importance"]),
                          str(effective["temporal"]), flat(row["text"])))  # fmt: skip
        print_table(DISTILL_COLUMNS, table, context.open_memdir(ctx))
        counts = Counter(row["effective"]["type"] or "untyped" for row in rows)
        note(", ".join(f"{label} {n}" for label, n in counts.most_common()) or "no memories")

    @app.command()
    def annotate(
        ctx: typer.Context,
        recompute: RecomputeOpt = False,
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
                f"re-annotated {counted(count, 'memory')} with "
                f"{memory_index.annotator.name}/{memory_index.annotator.version}"
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
