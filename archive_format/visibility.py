"""Who may see a memory or a journal turn: the one visibility rule.

A memory has a `visibility`; a turn has a `visibility` and a `secrecy` (docs/FORMAT.md):

    visibility  normal   shown
                private  shown only to a reader who asked for private material
                sealed   never shown (kept in the files, which the owner can read anyway)
    secrecy     public, sensitive   shown (as its visibility says)
                secret              never shown, whatever its visibility

A visibility outside the format (a hand-edited line, a later minor version's value) is never
shown: the rule fails closed. (Before this module, recall and the MCP `show` tool let such a
memory through while every other surface withheld it.) A secrecy other than `secret` does not
withhold, as every surface has always read it.

Which surface asks what (they differ only in `include_private`):

- recall (`indexers/recall`: `memdir recall`, the MCP `recall` tool) — `withheld`, with
  `include_private` from `--include-private` or the tool's flag; the reason goes to `--explain`;
- MCP `search` — `shown`, `include_private` from the tool's flag;
- MCP `show` (one memory by id) — `withheld` with `include_private=True`: naming the id is
  asking, so only sealed (or unknown) memories are refused;
- wake and boot documents (`cli/usecases/documents.shown`) — `shown`, never private: they go
  into a system prompt;
- dream summaries, the raw window, the emotional arc (`journal.Turn.summarisable`) — `shown`,
  never private;
- MCP `journal_read` — `shown`, `include_private` from the tool's flag;
- `memdir journal read` — masks the text of a turn `Turn.summarisable` rejects, unless `--all`.

What a summary of turns may be seen by is `summary_visibility`: a summary of any sensitive turn
is private. `memdir show`, `list`, `search` and `similar` print everything: they are the owner
reading the files at a terminal.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import Enum

VISIBILITIES = ("normal", "private", "sealed")
SECRECY = ("public", "sensitive", "secret")


class Withheld(str, Enum):
    """Why something is not shown (the value is what recall's `--explain` prints)."""

    SECRET = "secret"
    SEALED = "sealed"
    PRIVATE = "private"
    UNKNOWN = "unknown visibility"


def withheld(
    visibility: str, secrecy: str = "public", *, include_private: bool = False
) -> Withheld | None:
    """Why a memory or turn with this visibility (and secrecy) is withheld; None: it is shown."""
    if secrecy == "secret":
        return Withheld.SECRET
    if visibility == "normal":
        return None
    if visibility == "private":
        return None if include_private else Withheld.PRIVATE
    if visibility == "sealed":
        return Withheld.SEALED
    return Withheld.UNKNOWN


def shown(visibility: str, secrecy: str = "public", *, include_private: bool = False) -> bool:
    """Whether a memory or turn with this visibility (and secrecy) may be shown."""
    return withheld(visibility, secrecy, include_private=include_private) is None


def summary_visibility(secrecies: Iterable[str]) -> str:
    """The visibility of a memory summarising turns: private when any of them is sensitive."""
    return "private" if "sensitive" in secrecies else "normal"
