"""Output: results to stdout (plain, rich or JSON), notes and warnings to stderr."""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .layout import Column, fit, width

if TYPE_CHECKING:
    from rich.console import Console

    from memdir.archive_format.memdir import Memdir


def emit_json(data: Any) -> None:
    """A stable machine interface: one JSON document on stdout."""
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")


def note(message: str) -> None:
    """A human note on stderr, so stdout stays clean for scripts."""
    sys.stderr.write(f"memdir: {message}\n")


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
    """A table on stdout laid out for the terminal (layout.py); ids give way to unique
    prefixes when it is narrow."""
    from memdir.archive_format.lifecycle import short_ids

    room = width()
    ids = [cell for row in rows for column, cell in zip(columns, row, strict=True) if column.ident]
    short = (lambda: short_ids(memdir, ids)) if memdir is not None and ids else None
    for line in fit(columns, rows, room, short, header).lines:
        sys.stdout.write(line + "\n")


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
