"""Forget survives merges: a tombstone wins over the memory line it names, on every clone.

A union merge keeps both sides' lines, so a clone that still had a memory's line brings its
text back next to the tombstone another clone wrote. The fold already treats the memory as
forgotten; `reapply` removes the text again. It runs whenever a writer takes the writer lock
(`writing`, which every write goes through; the lock itself, `Memdir.lock`, is only a lock),
in `memdir sync`, and before every other command too (`catch_up`: reads
included, so a plain `git pull` never leaves forgotten text on show), and stays cheap: a stamp
in the cache remembers each shelf's inode, size, the fingerprint of its bytes
(`shelf.prefix_fingerprint`) and their CRC-32, so a shelf that only grew is scanned from where
the last check ended, and an unchanged one not at all. Grown in place, a shelf's old bytes are
trusted when the fingerprint still matches; written anew (after git touched its index — a merge,
a checkout, a pull — inodes prove nothing: a file git writes anew may get the number of the one
it replaced), only when every old byte still has the same CRC-32, as when git wrote it with its
old bytes first and the pulled lines after them (one pass over the old bytes, as cheap as one
search of them, however many ids were forgotten). Any other shelf, and any rewritten one, is
read whole, and the ids forgotten for the first time are searched for in every shelf whole.
`memdir sync` (the post-merge hook's too) re-applies with `full`: every shelf whole, exactly.
"""

from __future__ import annotations

import json
import logging
import mmap
import os
import re
import zlib
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

from . import atomic, clock, ring, shelf
from .clock import format_time
from .errors import FormatError, LockedError
from .idcache import Edit
from .lock import WriterLock
from .memdir import Memdir
from .records import Event, Tombstone, encode_line
from .rewrite import Lines, replace_lines, rewrite
from .validate import line_is_valid

log = logging.getLogger("memdir")

STAMP_NAME = "tombstones.json"
_CATCH_UP_WAIT = 2.0  # seconds a reader waits for the writer lock before leaving it to its holder
_TOMBSTONE = b'{"kind":"tombstone","id":"'  # at the start of a line
_EVENT = b'{"kind":"event","id":"'
_FORGET = b'"op":"forget","target":"'


def _stamp_path(memdir: Memdir) -> Path:
    return memdir.cache_dir / STAMP_NAME


def _read_stamp(memdir: Memdir) -> dict[str, Any]:
    try:
        data = json.loads(_stamp_path(memdir).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


Blob = bytes | mmap.mmap  # a shelf's bytes, or its read-only mapping (searched, never copied)


def _forgotten_in(blob: Blob, begin: int = 0) -> set[str]:
    """The ids named by the tombstone lines and forget events in `blob` from `begin` on. A scan
    for two fixed strings (the bytes' own search, several times faster than a regular
    expression over the 400 MB of a million memories); each id runs to the next quote, as the
    lines write it."""
    found: set[str] = set()
    for needle, at_line_start in ((_TOMBSTONE, True), (_FORGET, False)):
        at = blob.find(needle, begin)
        while at >= 0:
            start = at + len(needle)
            end = blob.find(b'"', start)
            if end < 0:
                break
            named = end > start and (not at_line_start or at == 0 or blob[at - 1] == 0x0A)
            if named:
                found.add(blob[start:end].decode("ascii", "replace"))
            at = blob.find(needle, end + 1 if named else start)
    return found


def _needs_compaction(blob: Blob, memory_id: str, begin: int = 0) -> bool:
    """Whether a shelf (from `begin` on) still holds the memory's line, or an unredacted event
    that may quote it. One search for the quoted id (a tenth of a second in the 360 MB of a
    million memories), then a look at the few lines that name it."""
    needle = b'"' + memory_id.encode("ascii", "replace") + b'"'
    memory_line = b'{"kind":"memory","id":' + needle
    target = b'"target":' + needle
    found = blob.find(needle, begin)
    while found >= 0:
        start, end = blob.rfind(b"\n", 0, found) + 1, blob.find(b"\n", found)
        line = blob[start : end if end >= 0 else len(blob)]
        if memory_line in line or (
            target in line and (b'"reason":' in line or b'"evidence":' in line)
        ):
            return True
        if end < 0:
            return False
        found = blob.find(needle, end)
    return False


def _contents(path: Path, searches: int, start: int = 0) -> Blob:
    with open(path, "rb") as handle:
        return _mapped(handle, searches, start)


def _mapped(handle: Any, searches: int, start: int = 0) -> Blob:
    """The file's bytes for `searches` searches from `start` on: mapped read-only for a few (no
    copy of a shelf of hundreds of MB), read for more of the whole file, where the copy pays for
    itself (a search of a mapping is a quarter slower than of bytes: measured on a million
    memories' shelf, BENCHMARKS.md). The tail of a shelf that grew is always searched where it
    is mapped: reading the whole shelf for it cost a cold write 0.2 s at a million memories."""
    if not os.fstat(handle.fileno()).st_size:
        return b""
    if searches > 3 and not start:
        return handle.read()
    return mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)


@contextmanager
def writing(memdir: Memdir, timeout: float | None = None) -> Iterator[WriterLock]:
    """Hold the writer lock for a write to the canonical files, as every writer does: whoever
    takes it first (not a nested hold) re-applies the tombstones a merge may have undone, so no
    write lands beside forgotten text a merge brought back."""
    with memdir.lock(timeout) as lock:
        if lock.outermost:
            reapply(memdir)
        yield lock


def reapply(memdir: Memdir, now: datetime | None = None, full: bool = False) -> list[str]:
    """Compact away the text of every forgotten memory that a merge brought back (caller holds
    the writer lock). Returns the ids whose text was removed; `full` ignores the stamp."""
    now = now or clock.now()
    stamp = {} if full else _read_stamp(memdir)
    known = stamp.get("shelves", {}) if isinstance(stamp.get("shelves"), dict) else {}
    git = _git_index(memdir.root)  # before any shelf is read: a pull landing later moves it
    git_moved = stamp.get("git") != git
    forgotten = (
        set(stamp.get("forgotten", [])) if isinstance(stamp.get("forgotten"), list) else set()
    )
    shelves = memdir.shelves()
    scanned: dict[Path, tuple[int, Blob]] = {}  # a changed shelf: where its scan began, its bytes
    fresh: set[str] = set()  # forgotten ids first seen now: every shelf is checked for them
    compacted: set[str] = set()
    searched: dict[str, list[Any]] = {}  # what the stamp says of a shelf: the bytes searched
    try:
        for path in shelves:
            with open(path, "rb") as handle:
                info = os.fstat(handle.fileno())
                before: Any = known.get(path.name)
                start = _unchanged_up_to(handle, info, before, git_moved)
                if start is None:
                    searched[path.name] = before
                    continue
                blob = _mapped(handle, 2 + len(forgotten), start)
                scanned[path] = (start, blob)
                searched[path.name] = _entry(handle, info, blob, before if start else None)
            fresh |= _forgotten_in(scanned[path][1], start) - forgotten
        forgotten |= fresh
        for path in shelves:
            start, blob = scanned.get(path, (0, b""))
            wanted = forgotten if path in scanned else fresh
            if fresh and (start or path not in scanned):
                start, blob = 0, blob or _contents(path, len(fresh))  # the whole shelf
                scanned[path] = (start, blob)
            due = [memory_id for memory_id in sorted(wanted)
                   if _needs_compaction(blob, memory_id, start)]  # fmt: skip
            if due:
                shelf.quarantine_torn_tail(path, memdir.quarantine_dir)
                compact(memdir, path, due, now)
                compacted.update(due)
                searched.pop(path.name, None)  # rewritten: the stamp reads it as it is now
    finally:
        for _, blob in scanned.values():
            if isinstance(blob, mmap.mmap):
                blob.close()
    for memory_id in sorted(fresh | compacted):
        ring.drop(memdir, memory_id)
    if compacted:
        log.warning(
            "removed the text of %d forgotten memories that a merge brought back: %s",
            len(compacted),
            ", ".join(sorted(compacted)),
        )
    if fresh or compacted:
        _drop_documents(memdir)
    _write_stamp(memdir, shelves, forgotten, stamp, (git, searched))
    return sorted(compacted)


def forgotten_now(memdir: Memdir, ids: Iterable[str], vouched: bool, now: datetime) -> None:
    """After forget compacted `ids` out of every shelf (the caller holds the writer lock, and
    has since `vouched`: whether the stamp vouched for every shelf before the compaction, see
    `pending`): drop them from the ring and the generated documents, and re-apply the
    tombstones. When the stamp vouched for the shelves, it now vouches for them as forget
    left them (compaction only removes text, and forget's own event names no text), so the
    re-application reads nothing again; otherwise it checks the shelves as after any change."""
    ids = sorted(ids)
    for memory_id in ids:
        ring.drop(memdir, memory_id)
    _drop_documents(memdir)
    stamp = _read_stamp(memdir)
    if vouched and stamp.get("git") == _git_index(memdir.root):
        known = stamp.get("forgotten")
        forgotten = set(known) if isinstance(known, list) else set()
        _write_stamp(memdir, memdir.shelves(), forgotten | set(ids), stamp)
    reapply(memdir, now)


def pending(memdir: Memdir) -> bool:
    """Whether a shelf changed since the tombstones were last re-applied (it grew, was
    rewritten, or git touched its index): a stat of each shelf, no read of their lines."""
    stamp = _read_stamp(memdir)
    known = stamp.get("shelves")
    if not isinstance(known, dict) or stamp.get("git") != _git_index(memdir.root):
        return True
    shelves = memdir.shelves()
    if len(shelves) != len(known):
        return True
    for path in shelves:
        info = path.stat()
        before = known.get(path.name)
        if not isinstance(before, list) or before[:2] != [info.st_ino, info.st_size]:
            return True
    return False


def catch_up(memdir: Memdir) -> None:
    """Before any command answers, a read included: re-apply the forgets a plain `git pull`
    (or any merge) brought back, so that no shelf, ring or generated document this machine
    shows still holds forgotten text. Free when nothing changed; otherwise it takes the writer
    lock briefly, as a writer does (`writing`: its holder re-applies them). A busy lock means
    another command holds it and re-applies them itself; a memdir this process may not write
    (a mounted backup) is left as it is, with a warning (the fold still hides the forgotten
    memories)."""
    if not memdir.shelves_dir.is_dir() or not pending(memdir):
        return
    cache = memdir.cache_dir
    if (cache.exists() or cache.is_symlink()) and not cache.is_dir():
        return  # a stray `.memdir` file holds no lock: the commands needing the cache say so
    try:
        with writing(memdir, timeout=_CATCH_UP_WAIT):
            pass
    except LockedError:
        return
    except OSError as error:
        log.warning(
            "could not re-apply the forgets a merge may have undone (%s): %s",
            memdir.root,
            error.strerror or error,
        )


def _git_index(root: Path) -> list[int] | None:
    """mtime and size of the git index of the repository holding `root` (None outside git):
    git rewrites it on every merge, checkout and pull."""
    for folder in (root, *root.parents):
        dot_git = folder / ".git"
        if dot_git.is_dir():
            index = dot_git / "index"
        elif dot_git.is_file():  # a worktree or submodule: "gitdir: PATH"
            pointer = dot_git.read_text(encoding="utf-8", errors="replace").strip()
            index = (folder / pointer.removeprefix("gitdir:").strip()) / "index"
        else:
            continue
        try:
            info = index.stat()
        except OSError:
            return [0, 0]
        return [info.st_mtime_ns, info.st_size]
    return None


def _unchanged_up_to(handle: Any, info: os.stat_result, before: Any, git_moved: bool) -> int | None:
    """Where the scan of a shelf begins, from its stamp (`before`: inode, size, fingerprint,
    CRC-32 of every byte): None when nothing changed (the same inode and size, git's index as
    it was), the old size when it only grew, 0 when it must be read whole. Grown in place (the
    same inode, git's index as it was: memdir's own appends), the fingerprint must still match
    (`cp` and the shell's `>` write an older, longer copy into the same inode); written anew by
    git or another program, every old byte must (a pass over them, as cheap as one search: a
    merge can change a line in the middle and keep the length). `handle` and `info`: the open
    shelf and its fstat."""
    if not isinstance(before, list) or len(before) != 4:
        return 0  # none, or an older version's stamp
    inode, size, mark, crc = before
    if not isinstance(size, int) or not 0 <= size <= info.st_size:
        return 0  # shorter now, or a damaged stamp
    if not git_moved and inode == info.st_ino and size == info.st_size:
        return None
    if shelf.prefix_fingerprint(handle, size) != mark:
        return 0
    if not git_moved and inode == info.st_ino:
        return size
    return size if _crc(handle, size) == crc else 0


def _crc(handle: Any, size: int) -> int:
    """CRC-32 of an open file's first `size` bytes, where they are mapped (0.2 s for the 377 MB
    of a million memories; read in slices, 0.27–0.35 s); -1 when the file is shorter."""
    if not size:
        return 0
    if os.fstat(handle.fileno()).st_size < size:
        return -1
    with mmap.mmap(handle.fileno(), size, access=mmap.ACCESS_READ) as mapped:
        with memoryview(mapped) as view:
            return zlib.crc32(view)


def _entry(handle: Any, info: os.stat_result, blob: Blob, before: list[Any] | None) -> list[Any]:
    """A shelf's stamp entry for the bytes searched (`blob`, of the open shelf `handle` with its
    fstat `info`): inode, size, fingerprint and CRC-32 — carried on from `before` over the bytes
    it did not cover when the shelf only grew, else over all of them."""
    size = info.st_size
    if before is not None:
        start, crc = before[1], before[3]
    else:
        start, crc = 0, 0
    if len(blob) >= size:
        with memoryview(blob) as view:  # released before the mapping is closed
            crc = zlib.crc32(view[start:size], crc)
    else:  # the mapping is shorter than the fstat said (truncated since): read what is there
        crc = zlib.crc32(os.pread(handle.fileno(), size - start, start), crc)
    return [info.st_ino, size, shelf.prefix_fingerprint(handle, size), crc]


def _drop_documents(memdir: Memdir) -> None:
    """Generated documents may quote a forgotten memory; they are derived, so they go (the next
    `boot`, `wake` or `sleep` writes them again)."""
    for name in ("boot.md", "wake.md"):
        (memdir.documents_dir / name).unlink(missing_ok=True)


def _write_stamp(
    memdir: Memdir,
    shelves: list[Path],
    forgotten: set[str],
    before: dict[str, Any],
    searched: tuple[list[int] | None, dict[str, list[Any]]] | None = None,
) -> None:
    """Write the stamp: git's index and each shelf's inode, size, fingerprint and CRC-32 (see
    `_unchanged_up_to`). `searched`:
    git's index as `reapply` found it before reading any shelf, and the shelves as it searched
    them; a shelf git wrote after they were searched is then checked again by the next one (the
    stamp never vouches for bytes nobody searched). The others are stamped as they are now."""
    sizes: dict[str, list[Any]] = {}
    git, seen = searched if searched is not None else (_git_index(memdir.root), {})
    kept = before.get("shelves") if before.get("git") == git else None
    for path in shelves:
        if path.name in seen:
            sizes[path.name] = seen[path.name]
            continue
        with open(path, "rb") as handle:
            info = os.fstat(handle.fileno())
            was = kept.get(path.name) if isinstance(kept, dict) else None
            if isinstance(was, list) and len(was) == 4 and was[:2] == [info.st_ino, info.st_size]:
                sizes[path.name] = was  # unchanged: its fingerprint stands (not an older stamp's)
            else:
                crc = _crc(handle, info.st_size)
                mark = shelf.prefix_fingerprint(handle, info.st_size)
                sizes[path.name] = [info.st_ino, info.st_size, mark, crc]
    data = {"shelves": sizes, "git": git, "forgotten": sorted(forgotten)}
    if data == before:
        return  # nothing moved: no write on the way to every append
    # a cache (a lost or empty one means a full scan): no fsync on the way to every append
    atomic.write_text(_stamp_path(memdir), json.dumps(data, separators=(",", ":")), durable=False)


def compact(memdir: Memdir, path: Path, memory_ids: Iterable[str], now: datetime) -> bool:
    """Rewrite one shelf atomically with each memory's line replaced by a tombstone (one, even
    when a merge left several copies) and the reason and evidence of events about it removed.
    Only the lines that name one of the ids are read as lines (the shelf is searched where it
    is mapped, not copied); a shelf that needs no change is not written. Whether it was
    rewritten."""
    with open(path, "rb") as handle:
        stat = os.fstat(handle.fileno())
        if not stat.st_size:
            return False
        data = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    try:
        return _compact(memdir, path, stat, data, memory_ids, now)
    finally:
        data.close()


def _compact(memdir: Memdir, path: Path, stat: os.stat_result, data: mmap.mmap,
             memory_ids: Iterable[str], now: datetime) -> bool:  # fmt: skip
    end = data.rfind(b"\n") + 1  # the complete lines (a torn tail is kept as it is)
    needles = {memory_id: memory_id.encode("ascii") for memory_id in memory_ids}
    spans: dict[int, int] = {}  # the lines naming an id: start → end
    for needle in needles.values():
        found = data.find(needle, 0, end)
        while found >= 0:
            start, stop = data.rfind(b"\n", 0, found) + 1, data.find(b"\n", found) + 1
            spans[start] = stop
            found = data.find(needle, stop, end)
    lines = {start: data[start:stop] for start, stop in sorted(spans.items())}
    tombstoned = {memory_id for memory_id, needle in needles.items()  # (its line names it)
                  if any(b'{"kind":"tombstone","id":"' + needle + b'"' in line
                         for line in lines.values())}  # fmt: skip
    edits: list[Edit] = []
    for start, line in lines.items():
        new = line
        for memory_id, needle in needles.items():
            if needle in new:
                new = _compacted(new, memory_id, tombstoned, now, f"{path} (byte {start})")
        if new != line:
            edits.append((start, len(line), new))
    return replace_lines(memdir, path, stat, data, edits)


def _compacted(line: bytes, memory_id: str, tombstoned: set[str], now: datetime,
               where: str) -> bytes:  # fmt: skip
    """What takes the place of a line naming `memory_id`: a tombstone for its first memory line
    (`tombstoned` says whether the shelf has one; b"" for later copies), the event without its
    reason and evidence, or the line as it is (a malformed one too: `verify` reports it)."""
    if not line:
        return line
    try:
        data = shelf.decode_line(line[:-1], where)
    except FormatError:
        return line
    if (
        data.get("kind") == "memory"
        and data.get("id") == memory_id
        and isinstance(data.get("created"), str)
    ):
        if memory_id in tombstoned:
            return b""
        tombstoned.add(memory_id)
        return encode_line(Tombstone(memory_id, data["created"], format_time(now)).to_line())
    if (
        data.get("kind") == "event"
        and data.get("target") == memory_id
        and ("reason" in data or "evidence" in data)
        and line_is_valid(data)
    ):
        event = Event.from_line(data)
        scrubbed = replace(event, reason=None, evidence=None, redacted=True)
        return encode_line(scrubbed.to_line())
    return line


def dedupe(memdir: Memdir, path: Path) -> int:
    """Drop the lines a union merge left twice (the same line appended on two clones, or an
    event both redacted and not); the fold counts them once anyway. Returns lines dropped."""
    old = Lines.read(path)  # a torn tail is kept as it is
    redacted = {
        match.group(1)
        for match in re.finditer(
            rb'^\{"kind":"event","id":"([^"]+)".*"redacted":true',
            b"".join(old.lines),
            re.MULTILINE,
        )
    }
    seen: set[bytes] = set()
    output: list[bytes] = []
    for line in old.lines:
        raw = line[:-1]
        if raw in seen or (
            b'"redacted":true' not in raw
            and raw.startswith(_EVENT)
            and raw[len(_EVENT) :].split(b'"', 1)[0] in redacted
        ):
            output.append(b"")
            continue
        seen.add(raw)
        output.append(line)
    dropped = output.count(b"")
    if dropped:
        rewrite(memdir, old, output)
    return dropped
