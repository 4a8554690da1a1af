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


class LifecycleError(MemdirError):
    """A lifecycle transition that the provenance rules forbid (e.g. confirming a teaching)."""

    status = ExitStatus.BAD_INPUT
