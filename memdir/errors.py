"""The errors the API raises: the archive's typed errors (archive_format/errors.py), each with
the exit status (`.status`) the command line ends with, a one-line `.message` and a `.hint`."""

from memdir.archive_format.errors import (
    AmbiguousIdError,
    BadInputError,
    DamagedCacheError,
    ExitStatus,
    FormatError,
    LifecycleError,
    LockedError,
    MemdirError,
    MissingExtraError,
    NotAMemdirError,
    NotFoundError,
)

__all__ = [
    "AmbiguousIdError",
    "BadInputError",
    "DamagedCacheError",
    "ExitStatus",
    "FormatError",
    "LifecycleError",
    "LockedError",
    "MemdirError",
    "MissingExtraError",
    "NotAMemdirError",
    "NotFoundError",
]
