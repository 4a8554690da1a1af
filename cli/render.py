"""Output: results to stdout (plain, rich or JSON), notes and warnings to stderr."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console


def emit_json(data: Any) -> None:
    """A stable machine interface: one JSON document on stdout."""
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")


def note(message: str) -> None:
    """A human note on stderr, so stdout stays clean for scripts."""
    sys.stderr.write(f"memdir: {message}\n")


def console() -> Console:
    from rich.console import Console

    # Piped output is read by people in pagers and files: do not squeeze it to 80 columns.
    width = None if sys.stdout.isatty() else 160
    return Console(highlight=False, soft_wrap=False, width=width)


def shorten(text: str | None, width: int = 70) -> str:
    if text is None:
        return "—"
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"
