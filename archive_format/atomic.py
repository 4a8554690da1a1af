"""Atomic replacement of a whole file: a reader sees the old content or the new, never half.

The one way memdir replaces a file it owns — state files, memdir.yaml, generated documents, a
shelf rewritten by `forget`, a journal rewritten by `import --undo`, an export: write a
temporary file in the same directory (a dot name, so `export` and `watch` pass it over), fsync
it, rename it over the target, then fsync the directory so the rename survives a power cut. On
any failure before the rename the temporary file is removed and the target is untouched.

Two kinds of file need less than a power cut's worth of durability, and skip fsyncs that would
cost every write several milliseconds: caches under `.memdir/` (`durable=False`: no fsync at
all; after a power cut the old content, the new, or an empty file, which the reader treats as
a missing cache) and the console ring (`sync_directory=False`: the file is synced before the
rename, so a power cut leaves the old ring or the new, both whole, but maybe the old one).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from .paths import naming


@contextmanager
def replacing(
    path: Path, mode: int | None = None, durable: bool = True, sync_directory: bool = True
) -> Iterator[BinaryIO]:
    """A binary handle whose content replaces `path` when the block ends without an error.

    `mode` sets the new file's permissions (e.g. 0o600, before any byte is written); by default
    they are those of any new file (0o666 less the umask). `durable` and `sync_directory`: see
    the module doc.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    # pid and random bytes: two processes, or two threads of one, never share a temporary file
    temp = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    descriptor = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # umask applies
    try:
        with open(descriptor, "wb") as handle:
            if mode is not None:
                os.fchmod(handle.fileno(), mode)
            yield handle
            handle.flush()
            if durable:
                os.fsync(handle.fileno())
        os.replace(temp, path)
    except OSError as error:
        temp.unlink(missing_ok=True)
        raise naming(path, error) from None
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    if durable and sync_directory:
        sync_folder(path.parent)


def write_bytes(path: Path, chunks: Iterable[bytes | memoryview], mode: int | None = None,
                durable: bool = True, sync_directory: bool = True) -> None:  # fmt: skip
    """Replace `path` with the concatenated `chunks` (e.g. a shelf's lines), atomically."""
    with replacing(path, mode, durable, sync_directory) as handle:
        for chunk in chunks:
            handle.write(chunk)


def write_text(path: Path, text: str, durable: bool = True, sync_directory: bool = True) -> None:
    """Replace `path` with `text` in UTF-8, atomically."""
    write_bytes(path, [text.encode("utf-8")], durable=durable, sync_directory=sync_directory)


def sync_folder(directory: Path) -> None:
    """fsync a directory, so the names created or renamed in it are on disk."""
    descriptor = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
