"""Export a memdir's canonical files to one tar.gz (optionally sealed), and restore it.

The export holds exactly the files that are the truth (docs/FORMAT.md section 1): memdir.yaml,
.gitattributes, .gitignore and everything under shelves/, journal/, state/, documents/ and
quarantine/. Never the derived cache `.memdir/` (restore rebuilds it on first use), never
`.git/`. A consistent snapshot is taken without blocking writers for long: every file is
opened and measured under the writer lock, then read after it is released (shelves only grow,
and a rewrite replaces the file, so the open handles still show the snapshot).

Restore never writes into the target until the whole archive has been authenticated and
unpacked: it unpacks into a temporary directory beside the target, checks every member's path
(no absolute paths, no `..`, no links or devices, nothing outside the canonical names), runs
`verify`, and renames the directory into place.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import logging
import os
import shutil
import stat as stat_module
import sys
import tarfile
import tempfile
import time
import zlib
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO, Any

from memdir.archive_format import atomic
from memdir.archive_format.errors import BadInputError
from memdir.archive_format.extras import require
from memdir.archive_format.memdir import CONFIG_NAME, Memdir
from memdir.archive_format.tombstones import writing
from memdir.archive_format.verify import Report, verify

from .sealing import SealedReader, SealedWriter, is_sealed

TOP_FILES = (CONFIG_NAME, ".gitattributes", ".gitignore")
TOP_DIRS = ("shelves", "journal", "state", "documents", "quarantine", "attachments")
MANIFEST = "MANIFEST.sha256"  # the last member: "<sha256>  <path>" per file
log = logging.getLogger("memdir")


class RestoreError(BadInputError):
    """An archive that cannot be restored (unsafe, damaged, or not a memdir export)."""


@dataclass(frozen=True)
class ExportReport:
    path: Path
    files: int
    bytes_in: int
    bytes_out: int
    encrypted: bool
    seconds: float


@dataclass(frozen=True)
class RestoreReport:
    root: Path
    files: int
    encrypted: bool
    verify: Report


def canonical_files(memdir: Memdir) -> list[Path]:
    """The canonical files of a memdir, relative to its root, in a stable order."""
    root = memdir.root
    found = [Path(name) for name in TOP_FILES if (root / name).is_file()]
    for name in TOP_DIRS:
        directory = root / name
        if not directory.is_dir():
            continue
        for path in sorted(directory.rglob("*")):
            relative = path.relative_to(root)
            # Temporary files of atomic writes (".NAME.….tmp") are not part of the memdir.
            if path.is_file() and not path.is_symlink() and not _hidden(relative):
                found.append(relative)
    return found


def _hidden(relative: Path) -> bool:
    return any(part.startswith(".") for part in relative.parts[1:])


@contextmanager
def _snapshot(memdir: Memdir) -> Iterator[list[tuple[Path, IO[bytes], int, os.stat_result]]]:
    """Every canonical file opened and measured under the writer lock."""
    with ExitStack() as stack:
        opened: list[tuple[Path, IO[bytes], int, os.stat_result]] = []
        with writing(memdir):
            for relative in canonical_files(memdir):
                handle = stack.enter_context(open(memdir.root / relative, "rb"))
                stat = os.fstat(handle.fileno())
                opened.append((relative, handle, stat.st_size, stat))
        yield opened


def export(memdir: Memdir, out: Path, passphrase: str | None = None) -> ExportReport:
    """Write the canonical files to `out` (tar.gz; sealed when a passphrase is given).

    The file appears atomically (temporary file, fsync, rename) and is readable by its owner
    only: even unencrypted, it holds the whole memory.
    """
    started = time.perf_counter()
    if passphrase is not None:
        require("encrypt", "export --encrypt")
    if str(out) == "-":  # standard output: the caller's stream, no file of ours
        stream = _Counting(sys.stdout.buffer)
        files, bytes_in = _pack(memdir, stream, passphrase)
        stream.flush()
        return ExportReport(out, files, bytes_in, stream.count, passphrase is not None,
                            time.perf_counter() - started)  # fmt: skip
    out = out.expanduser()
    if any(out.resolve().is_relative_to(memdir.root / name) for name in TOP_DIRS):
        raise BadInputError(
            f"{out} is inside the memdir's canonical files; the next export would pack it",
            hint="write it outside the memdir",
        )
    try:
        kind = out.lstat().st_mode
    except FileNotFoundError:
        kind = stat_module.S_IFREG
    if not stat_module.S_ISREG(kind):
        raise BadInputError(
            f"{out} exists and is not a regular file (a directory, link, FIFO or device); "
            "nothing was written",
            hint="name a new file or an existing regular file, or `-` for standard output",
        )
    with atomic.replacing(out, mode=0o600) as raw:  # a temporary file beside it, renamed
        files, bytes_in = _pack(memdir, raw, passphrase)
    return ExportReport(out, files, bytes_in, out.stat().st_size, passphrase is not None,
                        time.perf_counter() - started)  # fmt: skip


class _Counting:
    """A write-only stream that counts the bytes through it."""

    def __init__(self, inner: IO[bytes]) -> None:
        self.inner, self.count = inner, 0

    def write(self, data: bytes) -> int:
        self.count += len(data)
        return self.inner.write(data)

    def flush(self) -> None:
        self.inner.flush()


def _pack(memdir: Memdir, raw: Any, passphrase: str | None) -> tuple[int, int]:
    """Write the tar.gz (sealed with a passphrase) of the canonical files to `raw`, ending
    with MANIFEST: the SHA-256 of every file, which restore checks. Returns files and bytes."""
    files = bytes_in = 0
    digests: list[str] = []
    sealer = SealedWriter(raw, passphrase) if passphrase is not None else None
    target: IO[bytes] = sealer if sealer is not None else raw  # type: ignore[assignment]
    with gzip.GzipFile(fileobj=target, mode="wb", compresslevel=6, mtime=0) as zipped:
        with tarfile.open(fileobj=zipped, mode="w|", format=tarfile.PAX_FORMAT) as tar:
            with _snapshot(memdir) as snapshot:
                for relative, handle, size, stat in snapshot:
                    info = tarfile.TarInfo(relative.as_posix())
                    info.size, info.mtime = size, int(stat.st_mtime)
                    info.mode = stat.st_mode & 0o777
                    hashing = _Hashing(handle)
                    # addfile reads exactly `size` bytes: the snapshot's length.
                    tar.addfile(info, hashing)  # type: ignore[arg-type]
                    digests.append(f"{hashing.digest.hexdigest()}  {relative.as_posix()}\n")
                    files += 1
                    bytes_in += size
            manifest = "".join(digests).encode("utf-8")
            info = tarfile.TarInfo(MANIFEST)
            info.size, info.mode = len(manifest), 0o600
            tar.addfile(info, io.BytesIO(manifest))
    if sealer is not None:
        sealer.close()
    return files, bytes_in


class _Hashing:
    """A reader that hashes what is read through it."""

    def __init__(self, inner: IO[bytes]) -> None:
        self.inner, self.digest = inner, hashlib.sha256()

    def read(self, size: int = -1) -> bytes:
        data = self.inner.read(size)
        self.digest.update(data)
        return data


def _check_manifest(staging: Path, files: list[PurePosixPath], sealed: bool) -> None:
    """Every unpacked file against the export's MANIFEST; a mismatch, a missing or an extra
    file is a RestoreError (the staging directory is then removed: nothing is restored).

    A plain export without one is refused: a damaged tar header silently ends a tar stream, so
    only the manifest shows that members are missing. A sealed export is authenticated to its
    end anyway, so one made before manifests still restores."""
    listing = staging / MANIFEST
    if not listing.is_file():
        if sealed:
            log.warning("the export holds no %s (made by an older memdir)", MANIFEST)
            return
        raise RestoreError(
            f"the archive holds no {MANIFEST}: damaged or cut short; nothing was restored",
            hint="an export made before manifests unpacks with `tar xzf`; then `memdir verify`",
        )
    expected: dict[str, str] = {}
    for line in listing.read_text(encoding="utf-8", errors="replace").splitlines():
        digest, _, name = line.partition("  ")
        expected[name] = digest
    listing.unlink()
    found = {path.as_posix() for path in files if path.as_posix() != MANIFEST}
    for name in sorted(found | set(expected)):
        if name not in expected or name not in found:
            raise RestoreError(f"{name} is missing from the archive or its manifest: altered? "
                               "nothing was restored")  # fmt: skip
        digest = hashlib.sha256((staging / name).read_bytes()).hexdigest()
        if digest != expected[name]:
            raise RestoreError(
                f"{name} does not match the export's SHA-256 manifest (altered or damaged); "
                "nothing was restored"
            )


def needs_passphrase(archive: Path) -> bool:
    """True when the archive is a sealed export."""
    try:
        return is_sealed(archive)
    except FileNotFoundError:
        raise BadInputError(f"no such file: {archive}") from None
    except IsADirectoryError:
        raise BadInputError(f"{archive} is a directory, not an export") from None


def _safe_member(member: tarfile.TarInfo) -> PurePosixPath:
    """The member's relative path, or a RestoreError if it could write outside the memdir."""
    name = PurePosixPath(member.name)
    parts = name.parts
    if (
        name.is_absolute()
        or not parts
        or any(part in ("..", "") for part in parts)
        or "\\" in member.name
        or "\x00" in member.name
    ):
        raise RestoreError(f"unsafe path in the archive: {member.name!r}; nothing was restored")
    if not (member.isfile() or member.isdir()):
        raise RestoreError(
            f"the archive member {member.name!r} is a link or a device; nothing was restored"
        )
    top = parts[0]
    allowed = top in TOP_DIRS if len(parts) > 1 or member.isdir() else top in (*TOP_FILES, MANIFEST)
    if not allowed:
        raise RestoreError(
            f"unexpected member {member.name!r}: not a memdir export; nothing was restored"
        )
    return name


def _unpack(source: IO[bytes], into: Path) -> list[PurePosixPath]:
    """Unpack a tar.gz stream into `into` (which exists); returns the files' paths."""
    files: list[PurePosixPath] = []
    try:
        with tarfile.open(fileobj=source, mode="r|gz") as tar:
            for member in tar:
                relative = _safe_member(member)
                target = into.joinpath(*relative.parts)
                if member.isdir():
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                extracted = tar.extractfile(member)
                assert extracted is not None
                with open(target, "xb") as handle:
                    shutil.copyfileobj(extracted, handle)
                os.chmod(target, (member.mode & 0o777) | 0o600)
                os.utime(target, (member.mtime, member.mtime))
                files.append(relative)
    except FileExistsError as error:
        raise RestoreError(
            f"the archive holds {error.filename} twice; nothing was restored"
        ) from None
    except (tarfile.TarError, EOFError, gzip.BadGzipFile, zlib.error, UnicodeError) as error:
        raise RestoreError(
            f"the archive is damaged or not a memdir export ({error}); nothing was restored"
        ) from None
    return files


def restore(archive: Path, target: Path, passphrase: str | None = None) -> RestoreReport:
    """Unpack an export into `target` (new, or an empty directory) and verify it."""
    archive, target = archive.expanduser(), target.expanduser()
    sealed = needs_passphrase(archive)
    if sealed:
        require("encrypt", f"restoring the encrypted {archive}")
    if sealed and passphrase is None:
        raise BadInputError(f"{archive} is encrypted and no passphrase was given")
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise BadInputError(
            f"{target} exists and is not empty; nothing was restored",
            hint="restore into a new directory",
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.restore-", dir=target.parent))
    try:
        with open(archive, "rb") as raw:
            if sealed:
                assert passphrase is not None
                reader = SealedReader(raw, passphrase)
                unpacked = _unpack(reader, staging)  # type: ignore[arg-type]
                reader.verify_to_end()
            else:
                unpacked = _unpack(raw, staging)
        _check_manifest(staging, unpacked, sealed)
        files = len([path for path in unpacked if path.as_posix() != MANIFEST])
        if not (staging / CONFIG_NAME).is_file():
            raise RestoreError(f"the archive holds no {CONFIG_NAME}; not a memdir export")
        for name in ("shelves", "journal", "state", "documents"):
            (staging / name).mkdir(exist_ok=True)
        report = verify(Memdir.open(staging, lenient=True))
        if target.exists():
            target.rmdir()
        os.rename(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return RestoreReport(target.resolve(), files, sealed, report)
