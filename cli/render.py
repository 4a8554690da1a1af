"""Output: results to stdout (plain, rich or JSON), notes and warnings to stderr."""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

from .layout import Column, fit, width

if TYPE_CHECKING:
    from rich.console import Console

    from memdir.archive_format.memdir import Memdir


@dataclass(frozen=True)
class Answer:
    """What a command prints: its results (stdout) and its notes (stderr). A command that
    `memdir serve` answers builds one, and the command line and the service each emit it."""

    stdout: str
    stderr: str = ""


def lines_text(lines: Iterable[str]) -> str:
    """Lines as printed, each with its newline."""
    return "".join(line + "\n" for line in lines)


def note_text(message: str) -> str:
    """A human note as it stands on stderr."""
    return f"memdir: {message}\n"


def emit(answer: Answer, out: TextIO | None = None, err: TextIO | None = None) -> None:
    """Print an answer (to stdout and stderr, or the streams given): the results echoed as click
    echoes (escape sequences left out unless they go to a terminal), the notes as they are."""
    import click

    click.echo(answer.stdout, file=out, nl=False)
    (err or sys.stderr).write(answer.stderr)


def json_text(data: Any) -> str:
    """A stable machine interface: one JSON document."""
    return json.dumps(data, ensure_ascii=False, indent=2) + "\n"


def emit_json(data: Any) -> None:
    """One JSON document on stdout."""
    sys.stdout.write(json_text(data))


def note(message: str) -> None:
    """A human note on stderr, so stdout stays clean for scripts."""
    sys.stderr.write(note_text(message))


def console() -> Console:
    from rich.console import Console

    # The same width as layout.py's tables: $COLUMNS, else the terminal's; a pipe without
    # $COLUMNS is unbounded (rich would assume 80), so a table keeps its natural width there.
    room = width()
    return Console(highlight=False, soft_wrap=False, width=room if room is not None else 100_000)


def print_table(
    columns: Sequence[Column],
    rows: Sequence[Sequence[str]],
    memdir: Memdir | None = None,
    header: bool = True,
) -> None:
    """A table on stdout laid out for the terminal (layout.py)."""
    sys.stdout.write(lines_text(table_lines(columns, rows, width(), memdir, header)))


def table_lines(
    columns: Sequence[Column],
    rows: Sequence[Sequence[str]],
    room: int | None,
    memdir: Memdir | None = None,
    header: bool = True,
) -> list[str]:
    """A table's lines laid out for `room` (layout.py); ids give way to unique prefixes when
    it is narrow."""
    from memdir.archive_format.lifecycle import short_ids

    ids = [cell for row in rows for column, cell in zip(columns, row, strict=True) if column.ident]
    short = (lambda: short_ids(memdir, ids)) if memdir is not None and ids else None
    return fit(columns, rows, room, short, header).lines


def readable(value: Any) -> str:
    """A field's value for people: no Python reprs (None, True, {…}, […])."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, dict):
        if set(value) == {"type", "to"}:
            return f"{value['type']} → {value['to']}"
        return ", ".join(f"{key} {readable(item)}" for key, item in value.items()) or "none"
    if isinstance(value, list | tuple):
        return "; ".join(readable(item) for item in value) or "none"
    return str(value)


def print_fields(data: dict[str, Any], skip: tuple[str, ...] = ()) -> None:
    """`name:  value` lines, values made readable, empty ones left out."""
    shown = {k: v for k, v in data.items() if v not in (None, [], {}, "") and k not in skip}
    pad = max((len(name) for name in shown), default=0) + 2
    room = width()
    for name, value in shown.items():
        text = readable(value)
        lines = textwrap.wrap(text, room - pad, break_on_hyphens=False) if room else [text]
        sys.stdout.write(f"{name + ':':<{pad}}{lines[0] if lines else ''}\n")
        for line in lines[1:]:
            sys.stdout.write(" " * pad + line + "\n")
