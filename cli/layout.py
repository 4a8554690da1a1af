"""Plain-text tables that fit the width they are given.

A table has at most one text column, the last one: it takes the width the other columns
leave and wraps within it. When the text would wrap, ids give way first (each is replaced by
its shortest unique prefix, which every command accepts); when the width is still short,
columns with a drop rank go, the highest rank first. Ids and scores are never cut: a cell is
shown whole or its column is dropped. With no width (a pipe with no $COLUMNS) nothing is wrapped, shortened or dropped.
"""

from __future__ import annotations

import os
import shutil
import sys
import textwrap
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

GAP = "  "
TEXT_MIN = 30  # the text column gives way to no more than this before a column is dropped
TEXT_FLOOR = 10  # the narrowest text column, however short the width


@dataclass(frozen=True)
class Column:
    """One column: `drop` 0 is always kept, higher ranks are dropped first when short;
    `ident` cells are ids that may be shortened; `text` is the wrapped last column."""

    name: str
    drop: int = 0
    right: bool = False
    ident: bool = False
    text: bool = False


def width(terminal: bool | None = None) -> int | None:
    """The width to lay out for: $COLUMNS when set, else the terminal's; None for a pipe.
    `terminal`: whether the output goes to a terminal (by default, whether stdout is one)."""
    given = os.environ.get("COLUMNS", "")
    if given.isdigit() and int(given) > 0:
        return int(given)
    if sys.stdout.isatty() if terminal is None else terminal:
        return shutil.get_terminal_size().columns
    return None


@dataclass(frozen=True)
class Laid:
    """A table's lines, and the names of the columns that did not fit."""

    lines: list[str]
    dropped: list[str]


def fit(
    columns: Sequence[Column],
    rows: Sequence[Sequence[str]],
    room: int | None,
    short: Mapping[str, str] | Callable[[], Mapping[str, str]] | None = None,
    header: bool = True,
) -> Laid:
    """The table laid out for `room` columns (None: unbounded); `short` maps ids to unique
    prefixes (or makes that map, only when the full ids do not fit)."""
    assert all(not c.text for c in columns[:-1]), "the text column comes last"
    table = [list(row) for row in rows]
    kept = list(range(len(columns)))
    if room is not None:
        # ids shorten as soon as the text would have to wrap (README: at 80 columns)
        if _needed(columns, table, kept, header, text_min=None) > room and short is not None:
            prefixes = short() if callable(short) else short
            table = [
                [
                    prefixes.get(cell, cell) if columns[i].ident else cell
                    for i, cell in enumerate(row)
                ]
                for row in table
            ]
        while _needed(columns, table, kept, header) > room:
            droppable = [i for i in kept if columns[i].drop > 0]
            if not droppable:
                break
            kept.remove(max(droppable, key=lambda i: (columns[i].drop, i)))
    widths = {i: _natural(columns, table, i, header) for i in kept}
    last = kept[-1]
    if columns[last].text and room is not None:
        fixed = sum(widths[i] for i in kept[:-1]) + len(GAP) * (len(kept) - 1)
        # below TEXT_MIN only when nothing else could be dropped; never below TEXT_FLOOR
        widths[last] = min(widths[last], max(room - fixed, TEXT_FLOOR))
    lines = []
    if header:
        lines.append(_line(columns, kept, widths, [c.name for c in columns]))
    for row in table:
        lines.extend(_wrapped(columns, kept, widths, row, room is not None))
    return Laid(lines, [c.name for i, c in enumerate(columns) if i not in kept])


def _natural(columns: Sequence[Column], table: list[list[str]], i: int, header: bool) -> int:
    cells = [len(row[i]) for row in table]
    return max([len(columns[i].name) if header else 0, *cells, 1])


def _needed(
    columns: Sequence[Column],
    table: list[list[str]],
    kept: list[int],
    header: bool,
    text_min: int | None = TEXT_MIN,
) -> int:
    """The width the kept columns take, the text column at most `text_min` (None: whole)."""
    total = len(GAP) * (len(kept) - 1)
    for i in kept:
        natural = _natural(columns, table, i, header)
        total += min(natural, text_min) if columns[i].text and text_min else natural
    return total


def _line(
    columns: Sequence[Column], kept: list[int], widths: dict[int, int], cells: Sequence[str]
) -> str:
    parts = []
    for i in kept:
        cell = cells[i]
        parts.append(cell.rjust(widths[i]) if columns[i].right else cell.ljust(widths[i]))
    return GAP.join(parts).rstrip()


def _wrapped(
    columns: Sequence[Column], kept: list[int], widths: dict[int, int], row: list[str], wrap: bool
) -> list[str]:
    last = kept[-1]
    if not (wrap and columns[last].text) or len(row[last]) <= widths[last]:
        return [_line(columns, kept, widths, row)]
    # a word longer than the column (an id, a URL) overflows rather than being cut
    pieces = textwrap.wrap(
        row[last], widths[last], break_on_hyphens=False, break_long_words=False
    ) or [""]
    lines = [_line(columns, kept, widths, [*row[:last], pieces[0], *row[last + 1 :]])]
    indent = sum(widths[i] for i in kept[:-1]) + len(GAP) * (len(kept) - 1)
    lines.extend(" " * indent + piece for piece in pieces[1:])
    return lines


def flat(text: str | None) -> str:
    """One line of text (runs of whitespace made one space); '—' for none."""
    return "—" if text is None else " ".join(text.split())


def wrap(text: str, room: int | None, indent: str = "") -> list[str]:
    """A paragraph as lines of at most `room` characters (one line when unbounded); words
    (ids, scores) are never broken."""
    if room is None or len(indent + text) <= room:
        return [indent + text]
    return textwrap.wrap(
        text, room, initial_indent=indent, subsequent_indent=indent + "  ",
        break_long_words=False, break_on_hyphens=False,
    )  # fmt: skip


def rule(title: str, room: int | None) -> str:
    """A section heading: '── title ─────' across the width (80 when unbounded)."""
    head = f"── {title} "
    return head + "─" * max(3, (room or 80) - len(head))
