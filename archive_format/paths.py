"""Nothing leaves the memdir: files are opened without following symbolic links.

A cloned repository can carry a symlink where a shelf, a state file or the cache should be;
writing through it would append to (or truncate) a file anywhere on the machine. So memdir
opens its own files with O_NOFOLLOW, and `Memdir.open` refuses a memdir whose folders or files
are links (`links_inside`), naming the first one.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import BinaryIO

from .errors import FormatError

# the folders memdir writes in, and the files in them it owns
FOLDERS = ("shelves", "journal", "state", "documents", "quarantine", "attachments", ".memdir")
PATTERNS = ("shelves/*", "journal/*", "state/*", "journal/entries", ".memdir/*", "attachments/*",
            "attachments/sealed/*")  # fmt: skip


def link_error(path: Path) -> FormatError:
    try:
        target = f" (to {os.readlink(path)})"
    except OSError:
        target = ""
    return FormatError(
        f"{path} is a symbolic link{target}; memdir never reads or writes through one",
        hint="replace the link with the file itself (or remove it), then run `memdir verify`",
    )


def open_fd(path: Path, flags: int, mode: int = 0o644) -> int:
    """os.open with O_NOFOLLOW: a link at `path` is a FormatError naming it."""
    try:
        return os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise link_error(path) from None
        raise


def open_inside(path: Path) -> BinaryIO:
    """A memdir file opened for reading without following a link."""
    return open(open_fd(path, os.O_RDONLY), "rb")


def links_inside(root: Path) -> list[Path]:
    """Every symbolic link where memdir keeps its folders and files."""
    found = [root / name for name in FOLDERS if (root / name).is_symlink()]
    if found:
        return found
    for pattern in PATTERNS:
        found.extend(path for path in sorted(root.glob(pattern)) if path.is_symlink())
    found.extend(path for path in (root / "memdir.yaml",) if path.is_symlink())
    return found


def check_no_links(root: Path) -> None:
    """Refuse a memdir that holds a symbolic link where memdir reads or writes."""
    found = links_inside(root)
    if found:
        raise link_error(found[0])


def describe_os_error(error: OSError) -> str:
    """One line for a failed file operation: what went wrong and on which file."""
    reason = error.strerror or str(error) or type(error).__name__
    if error.errno == errno.ENOSPC:
        reason = "no space left on the device"
    elif error.errno == errno.EFBIG:
        reason = "file too large (a size limit)"
    name = error.filename or getattr(error, "memdir_file", None)
    return f"{reason}: {name}" if name else reason


def naming(path: Path, error: OSError) -> OSError:
    """`error` with `path` as its file name when it had none (a write on an open descriptor)."""
    if error.filename is None and error.errno is not None:
        return type(error)(error.errno, error.strerror, str(path))
    return error
