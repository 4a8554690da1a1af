"""Errors raised by the archive; each carries a one-line message, a hint and an exit status."""

from __future__ import annotations

from enum import IntEnum


class ExitStatus(IntEnum):
    """Process exit codes: a stable interface for scripts."""

    OK = 0
    PROBLEMS = 1  # e.g. `verify` found problems
    USAGE = 2  # bad command line (typer's own code)
    NOT_A_MEMDIR = 3
    NOT_FOUND = 4
    AMBIGUOUS = 5
    BAD_FORMAT = 6
    LOCKED = 7
    BAD_INPUT = 8
    FAILED = 9
    NEEDS_EXTRA = 10


# What each exit status means to a script; docs/CLI.md's table is generated from it.
EXIT_MEANINGS: dict[ExitStatus, str] = {
    ExitStatus.OK: "success",
    ExitStatus.PROBLEMS: "the command ran and found problems (`verify`, `doctor`, `restore`)",
    ExitStatus.USAGE: "bad command line: an unknown command or option, a missing argument",
    ExitStatus.NOT_A_MEMDIR: "no memdir at --dir, $MEMDIR or upward",
    ExitStatus.NOT_FOUND: "no memory, turn, file or session with that id or name",
    ExitStatus.AMBIGUOUS: "an id prefix that fits several memories",
    ExitStatus.BAD_FORMAT: "a file that does not follow docs/FORMAT.md, or a wrong setting",
    ExitStatus.LOCKED: "another process holds the writer lock past the timeout",
    ExitStatus.BAD_INPUT: "a value that cannot be used, or a transition the provenance rules "
    "forbid",
    ExitStatus.FAILED: "anything else that stopped the command (one line says what; "
    "`--debug` shows the traceback)",
    ExitStatus.NEEDS_EXTRA: "an optional feature whose extra is not installed (the hint is the "
    "command that installs it)",
}
INTERRUPTED = 130  # Ctrl-C, as shells report a SIGINT


class MemdirError(Exception):
    """Base class: a problem a user can act on, shown as one line plus a hint."""

    status = ExitStatus.FAILED

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


class NotAMemdirError(MemdirError):
    status = ExitStatus.NOT_A_MEMDIR


class NotFoundError(MemdirError):
    status = ExitStatus.NOT_FOUND


class AmbiguousIdError(MemdirError):
    status = ExitStatus.AMBIGUOUS


class FormatError(MemdirError):
    """A file that does not follow docs/FORMAT.md (malformed line, bad YAML, unknown version)."""

    status = ExitStatus.BAD_FORMAT


class LockedError(MemdirError):
    status = ExitStatus.LOCKED


class BadInputError(MemdirError):
    """A value given on the command line or through an API that cannot be used."""

    status = ExitStatus.BAD_INPUT


class MissingExtraError(MemdirError):
    """An optional feature (`memdir mcp`, watching, encryption, PostgreSQL, the NRC lexicon)
    whose extra of pyproject.toml is not installed; archive_format/extras.py raises it."""

    status = ExitStatus.NEEDS_EXTRA


class LifecycleError(MemdirError):
    """A lifecycle transition that the provenance rules forbid (e.g. confirming a teaching)."""

    status = ExitStatus.BAD_INPUT


class DamagedCacheError(MemdirError):
    """A file of the derived cache (`.memdir/`) cannot be read: damaged, cut short or foreign.
    Nothing stored is lost; the index heals by discarding the cache and rebuilding it from the
    shelves (indexers/storage.py: heal). Seen by a user only when it cannot be rebuilt."""

    status = ExitStatus.FAILED
