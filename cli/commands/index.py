"""The derived indexes: index, search, similar, annotate."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any

import typer

from memdir.archive_format import visibility
from memdir.words import counted

from .. import context
from ..context import Invocation, Served
from ..layout import Column, flat
from ..parameters import IncludeExpiredOpt, IncludePrivateOpt, group
from ..render import (
    Answer,
    emit,
    emit_json,
    json_text,
    lines_text,
    note,
    note_text,
    print_fields,
    print_table,
    table_lines,
)

if TYPE_CHECKING:
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


@dataclass(frozen=True)
class Labelling:
    """The parameters of the derived labels' commands (distill, annotate), declared once."""

    recompute: RecomputeOpt = False
    json_: context.JsonOpt = False


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


@dataclass(frozen=True)
class Similar:
    """`memdir similar`'s parameters, declared once: typer reads the command's options from here
    (`parameters.group`), and `memdir serve` parses a request into them."""

    query: Annotated[str, typer.Argument(help="A sentence; memories closest in meaning are shown.")]
    k: KOpt = 10
    include_expired: IncludeExpiredOpt = False
    include_private: IncludePrivateOpt = False
    json_: context.JsonOpt = False
    now: context.NowOpt = None


@dataclass(frozen=True)
class Search(Similar):
    """`memdir search`'s parameters: similar's, for words, and the field to look in."""

    query: Annotated[str, typer.Argument(help="Words to look for (full text, English stemming).")]
    field: Annotated[
        str,
        typer.Option(
            "--field",
            help="Search the text, or a meta-memory field: intent, rationale, evidence,"
            " meta (all three).",
        ),
    ] = "text"


def answer_search(at: Invocation, asked: Search) -> Answer:
    """What `memdir search` prints: the one body of the command and of the service's answer."""
    from memdir.archive_format.errors import BadInputError

    if asked.field not in SEARCH_FIELDS:
        raise BadInputError(
            f"unknown search field {asked.field!r}",
            hint=f"use one of {', '.join(SEARCH_FIELDS)}",
        )
    return _hits(at, asked, "search", asked.field)


def answer_similar(at: Invocation, asked: Similar) -> Answer:
    """What `memdir similar` prints (as `answer_search`)."""
    return _hits(at, asked, "similar")


def _hits(at: Invocation, asked: Similar, surface: str, field: str = "text") -> Answer:
    """`search` and `similar` results: id, score and text (the highlighted snippet, if any),
    marked with a status or visibility other than durable/normal."""
    from memdir.usecases.recall import fresh_index, search

    chosen = {"expired": asked.include_expired, "private": asked.include_private}
    memdir = at.memdir()
    moment = at.moment(asked.now)
    with at.progress() as advance:
        index = fresh_index(memdir, advance)
    rows = search(memdir, asked.query, moment, asked.k, surface,
                  {name for name, on in chosen.items() if on}, index, field)  # fmt: skip
    if asked.json_:
        return Answer(json_text(rows))
    if not rows:
        return Answer("", note_text("no results"))
    table = []
    for row in rows:
        tag = f"  [{row['marker']}]" if row["marker"] else ""
        text = flat(row.get("snippet") or row["text"]) + tag
        table.append((row["id"], f"{row['score']:.3f}", text))
    return Answer(lines_text(table_lines(HIT_COLUMNS, table, at.room, memdir, header=False)))


# what `memdir serve` answers of this module's commands (cli/serve.py)
SERVED = {"search": Served(Search, answer_search), "similar": Served(Similar, answer_similar)}


RebuildOpt = Annotated[bool, typer.Option("--rebuild", help="Start over from the shelves.")]
StatusOpt = Annotated[bool, typer.Option("--status", help="Show the state of the indexes.")]
CompactOpt = Annotated[
    bool,
    typer.Option(
        "--compact",
        help="Also write the full text again, so replaced documents no longer count in its BM25"
        " statistics (as `memdir sync` does).",
    ),
]


def index(
    ctx: typer.Context,
    rebuild: RebuildOpt = False,
    status: StatusOpt = False,
    compact: CompactOpt = False,
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


def register(app: typer.Typer) -> None:
    app.command()(index)

    @app.command()
    @group("asked", Search)
    def search(ctx: typer.Context, asked: Search) -> None:
        """Full-text search over live memories, with highlighted snippets.

        Example: memdir search "coffee order" --k 5; memdir search "allergy" --field rationale
        """
        emit(answer_search(context.invocation(ctx), asked))

    @app.command()
    @group("asked", Similar)
    def similar(ctx: typer.Context, asked: Similar) -> None:
        """Vector search only: memories closest in meaning (cosine similarity).

        Example: memdir similar "what does the user drink in the morning"
        """
        emit(answer_similar(context.invocation(ctx), asked))

    @app.command()
    @group("asked", Labelling)
    def distill(ctx: typer.Context, asked: Labelling) -> None:
        """Derived labels for memories the user did not label: type, importance, temporal
        class, relational impact, with a confidence (docs/RECALL.md, the taxonomy).

        New memories are distilled when the index updates; what the user gave always wins.

        Example: memdir distill --recompute --json
        """
        from collections import Counter

        memory_index = open_index(ctx)
        count = memory_index.distill(asked.recompute)
        if asked.recompute:
            note(f"distilled {counted(count, 'memory')} again")
        rows = []
        for row in memory_index.distillations():  # the text as the policy lets it show
            text = visibility.present("annotate", row["text"], row["status"], row["visibility"])
            if text is not None:
                rows.append({**row, "text": text})
        if asked.json_:
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
    @group("asked", Labelling)
    def annotate(ctx: typer.Context, asked: Labelling) -> None:
        """Affect annotations (valence, arousal, Plutchik chord) of the memories.

        Affect given by the user wins over the annotator.

        Example: memdir annotate --recompute
        """
        memory_index = open_index(ctx)
        if asked.recompute:
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
        if asked.json_:
            emit_json(rows)
            return
        table = [
            (row["id"], f"v={row['valence']:+.2f}", f"a={row['arousal']:.2f}", row["annotator"],
             flat(row["text"]))
            for row in rows
        ]  # fmt: skip
        print_table(AFFECT_COLUMNS, table, context.open_memdir(ctx), header=False)
