"""Append-only JSONL files: crash-safe appends, torn-line quarantine, strict reading.

A shelf line is written with one O_APPEND write followed by fsync, under the writer lock. A
crash can leave at most one torn (newline-less) last line; the next writer moves it to the
quarantine directory and reports it, so it is never silently dropped and never glued to the
next line. Rewrites of whole lines (`forget`, `import --undo`, …) go through rewrite.py.
"""

from __future__ import annotations

import json
import json.scanner
import logging
import os
from collections.abc import Callable, Container, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .errors import FormatError
from .paths import naming, open_fd, open_inside
from .validate import LINE_KINDS, checker, line_is_valid, line_problems

log = logging.getLogger("memdir")


@dataclass(frozen=True)
class ShelfLine:
    """A decoded line and where it came from."""

    path: Path
    number: int  # 1-based line number
    offset: int  # byte offset of the line's start
    data: dict[str, Any]
    end: int  # byte offset just after the line's newline


def quarantine_torn_tail(path: Path, quarantine_dir: Path) -> int:
    """Move a newline-less last line (a crashed write) to the quarantine; returns bytes moved."""
    torn_bytes = torn_tail(path)
    if torn_bytes == 0:
        return 0
    with open(open_fd(path, os.O_RDWR), "rb+") as handle:
        keep = handle.seek(0, os.SEEK_END) - torn_bytes
        handle.seek(keep)
        torn = handle.read()
        quarantine_dir.mkdir(parents=True, exist_ok=True)
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
        target = quarantine_dir / f"{path.name}.{stamp}.torn"
        with open(target, "wb") as out:
            out.write(torn)
            out.flush()
            os.fsync(out.fileno())
        handle.truncate(keep)
        handle.flush()
        os.fsync(handle.fileno())
    log.warning(
        "moved a torn last line (%d bytes) from %s to %s — a writer crashed mid-write",
        len(torn),
        path,
        target,
    )
    return len(torn)


def append(path: Path, payloads: Iterable[bytes], quarantine_dir: Path) -> int:
    """Append complete lines (caller holds the writer lock); returns the start offset.

    On a failed write the file is truncated back to where it was, as mailbox does.
    """
    data = b"".join(payloads)
    if not data:
        return path.stat().st_size if path.exists() else 0
    path.parent.mkdir(parents=True, exist_ok=True)
    quarantine_torn_tail(path, quarantine_dir)
    fd = open_fd(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        start = os.fstat(fd).st_size
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            os.fsync(fd)
        except OSError as error:
            os.ftruncate(fd, start)
            raise naming(path, error) from None
        except BaseException:
            os.ftruncate(fd, start)
            raise
    finally:
        os.close(fd)
    return start


RETRY_WINDOW = 1 << 18  # bytes at a shelf's end where a line written just before is looked for


def tail_holds(path: Path, needle: bytes, window: int = RETRY_WINDOW) -> bool:
    """Whether the last `window` bytes of the file hold `needle` (e.g. a line's `"id":"…"`):
    a line appended moments ago, by a retry of the same command, is found without reading the
    whole shelf. False when the file does not exist."""
    try:
        fd = open_fd(path, os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        size = os.fstat(fd).st_size
        start = max(0, size - window)
        return needle in os.pread(fd, size - start, start)
    finally:
        os.close(fd)


MAX_DEPTH = 32  # nesting of objects and arrays in one line (a memory's meta is two deep)
HINT = "fix or remove that line; `memdir verify` lists every problem"


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


_DECODER = json.JSONDecoder(parse_constant=_no_constant)  # made once: json.loads(…, **kw) is slow
# one value at an index of a text (decoded_lines); typeshed types the decoder argument wrongly
_SCAN = json.scanner.make_scanner(_DECODER)  # type: ignore[arg-type]


def decode_line(raw: bytes, where: str) -> dict[str, Any]:
    """One line as a JSON object, or a FormatError naming `where` (file:line).

    Beyond JSON itself a line must be valid Unicode (no lone surrogates, even escaped), hold
    no NaN or Infinity and nest at most MAX_DEPTH deep, so no reader or writer downstream can
    fail on it.
    """
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise FormatError(
            f"{where}: not UTF-8 ({error.reason} at byte {error.start})", hint=HINT
        ) from None
    if raw.count(b"{") + raw.count(b"[") > MAX_DEPTH and _depth(text) > MAX_DEPTH:
        raise FormatError(f"{where}: nested more than {MAX_DEPTH} deep", hint=HINT)
    try:
        data = _DECODER.decode(text)
    except json.JSONDecodeError as error:
        raise FormatError(
            f"{where}: not valid JSON ({error.msg}, column {error.colno})", hint=HINT
        ) from None
    except (ValueError, RecursionError) as error:  # NaN, a number of over 4,300 digits
        raise FormatError(f"{where}: not valid JSON ({error})", hint=HINT) from None
    if not isinstance(data, dict):
        raise FormatError(f"{where}: a line must be a JSON object", hint=HINT)
    if b"\\u" in raw and not _encodable(data):  # memdir writes non-ASCII as it is: rare
        raise FormatError(
            f"{where}: holds a lone surrogate (\\ud800-\\udfff): not Unicode", hint=HINT
        )
    return data


def decoded_lines(blob: bytes) -> Iterator[tuple[int, dict[str, Any] | None]]:
    """Each complete line of `blob` (a newline-less tail is left out): its length with the
    newline, and its object as decode_line gives it, or None where decode_line refuses it.

    Several times faster than decode_line line by line, for reading a whole shelf: the bytes
    are decoded as one text and each line's object scanned where it stands. Only a line that is
    plainly a JSON object and nothing else takes that way (it starts with `{`, the object ends
    at the newline, no `\\u` escape, nesting too shallow to check); any other line, and every
    line of a blob that is not UTF-8 throughout, goes through decode_line itself.
    """
    try:
        text: str | None = blob.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    same = text is not None and len(text) == len(blob)  # ASCII: a byte is a character
    start = char = 0  # where the line starts: in blob, in text
    while (end := blob.find(b"\n", start)) >= 0:
        data: Any = None
        if text is not None:
            char_end = end if same else text.index("\n", char)
            if (
                blob[start] == 0x7B  # {
                and blob.find(b"\\u", start, end) < 0
                and blob.count(b"{", start, end) + blob.count(b"[", start, end) <= MAX_DEPTH
            ):
                try:
                    data, stop = _SCAN(text, char)
                except (StopIteration, ValueError):
                    stop = -1
                if stop != char_end:
                    data = None
            char = char_end + 1
        if data is None:
            try:
                data = decode_line(blob[start:end], "")
            except FormatError:
                data = None
        yield end + 1 - start, data
        start = end + 1


def _depth(text: str) -> int:
    """How deep brackets nest in a JSON text (brackets inside strings aside)."""
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "{[":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "}]":
            depth -= 1
    return deepest


def _encodable(data: dict[str, Any]) -> bool:
    try:
        json.dumps(data, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def parse(raw: bytes, where: str, kinds: tuple[str, ...]) -> dict[str, Any] | None:
    """A line checked against its schema: the object, None for a line of a kind not in `kinds`
    (a later minor version's line type, ignored by readers, reported by `verify`), or a
    FormatError naming `where` and the first problem."""
    data = decode_line(raw, where)
    kind = data.get("kind")
    if type(kind) is str and kind not in kinds:
        return None
    if not line_is_valid(data, kinds):
        found = line_problems(data, kinds) or ["does not fit its schema"]
        raise FormatError(f"{where}: {found[0]}", hint=HINT)
    return data


_warned: dict[str, set[str]] = {}  # file → the problems already shown (once per process)
WARNINGS_SHOWN = 5  # per file; `verify` lists every one


def skip_malformed(error: FormatError) -> None:
    """A reader's way past a malformed line: one warning naming file:line, and on."""
    where = error.message.split(":", 1)[0].split(" (byte ", 1)[0]
    shown = _warned.setdefault(where, set())
    if error.message in shown:
        return
    shown.add(error.message)
    if len(shown) <= WARNINGS_SHOWN:
        log.warning("skipped %s", error.message)
    elif len(shown) == WARNINGS_SHOWN + 1:
        log.warning("skipped more malformed lines of %s; `memdir verify` lists them", where)


def read(path: Path, start: int = 0, kinds: tuple[str, ...] = LINE_KINDS,
         select: Selector | None = None) -> Iterator[ShelfLine]:  # fmt: skip
    """The valid lines of `kinds` from byte `start` on (line numbers count from there).

    Every line is checked against its schema once, here: a malformed line is skipped with a
    warning naming it (readers degrade, nothing is rewritten; `verify` fails on it), a line of
    another kind is passed over. A newline-less last line (being written, or torn) is not
    yielded: `verify` reports it and the next writer quarantines it. With `select`, only the
    lines starting at the offsets it finds in the bytes read are parsed (a reader's prefilter).
    """
    for item in read_all(path, start, kinds, select):
        if item.data is not None:
            yield item  # type: ignore[misc]


@dataclass(frozen=True)
class AnyLine:
    """A complete line of a file: its data when valid, else None (and why, when malformed)."""

    path: Path
    number: int
    offset: int
    data: dict[str, Any] | None
    end: int
    problem: FormatError | None = None


# bytes read → the offsets (in them) of the lines worth parsing; see `read`
Selector = Callable[[bytes], Container[int]]


def read_all(path: Path, start: int = 0, kinds: tuple[str, ...] = LINE_KINDS,
             select: Selector | None = None) -> Iterator[AnyLine]:  # fmt: skip
    """Every complete non-blank line from byte `start` on, valid or not (see `read`); with
    `select`, only the selected ones."""
    try:
        with open_inside(path) as handle:
            handle.seek(start)
            blob = handle.read()
    except FileNotFoundError:
        return
    offset = start
    checks = {kind: checker(kind) for kind in kinds}
    chosen = select(blob) if select is not None else None
    for number, raw in enumerate(blob.split(b"\n")[:-1], start=1):
        end = offset + len(raw) + 1
        if chosen is not None and offset - start not in chosen:
            offset = end
            continue
        if raw.strip():
            try:
                # the fast path of `parse`; the location is spelled out only for a bad line
                data: dict[str, Any] | None = decode_line(raw, "")
                kind = data.get("kind")  # type: ignore[union-attr]
                check = checks.get(kind) if type(kind) is str else None
                if check is None or not check(data):
                    data = parse(raw, "", kinds)
                yield AnyLine(path, number, offset, data, end)
            except FormatError as error:
                where = f"{path}:{number}" if start == 0 else f"{path} (byte {offset})"
                located = FormatError(where + error.message, hint=error.hint)
                skip_malformed(located)
                yield AnyLine(path, number, offset, None, end, located)
        offset = end


def torn_tail(path: Path) -> int:
    """Bytes after the last newline (0 when the file ends cleanly), read backwards in chunks."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return 0
    chunk = 1 << 16
    with open_inside(path) as handle:
        position = size
        while position > 0:
            start = max(0, position - chunk)
            handle.seek(start)
            newline = handle.read(position - start).rfind(b"\n")
            if newline >= 0:
                return size - (start + newline + 1)
            position = start
    return size


def prefix_fingerprint(handle: Any, length: int, window: int = 1 << 16) -> str:
    """The one checkpoint of a file's first `length` bytes, cheaply: their length and the
    `window` bytes at either end of them (an open file, read with pread). A file that grew keeps
    its prefix's fingerprint; a truncation, an edit near either end or another history changes
    it. The id cache (4 KiB windows) and the index checkpoints (64 KiB) both use it."""
    import hashlib

    digest = hashlib.sha256(str(length).encode("ascii"))
    head = min(length, window)
    digest.update(os.pread(handle.fileno(), head, 0))
    if length > head:
        start = max(head, length - window)
        digest.update(os.pread(handle.fileno(), length - start, start))
    return digest.hexdigest()
