"""Attachments (`memdir teach --attach FILE`, `memdir attach ID FILE`, `memdir attachments ID`,
`memdir attachment get A-ID --out FILE`): a file kept with a memory, and what a small offline
library can read from it — a PDF's text (pypdf), an image's EXIF date and GPS place (exifread),
audio's title, artist and length (mutagen), a text file's text — stored in its sidecar and
indexed with the memory (archive_format/attachments.py has the files and the format).

The libraries are the `attach` extra, imported only when a file of their kind is attached: a
missing one skips the extraction, says so, and stores the file all the same.
"""

from __future__ import annotations

import io
import logging
import mimetypes
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from memdir.archive_format import atomic, attachments, lifecycle, visibility
from memdir.archive_format.attachments import Stored
from memdir.archive_format.errors import BadInputError, LifecycleError, NotFoundError
from memdir.archive_format.fold import MemoryState
from memdir.archive_format.memdir import Memdir
from memdir.archive_format.tombstones import writing

log = logging.getLogger("memdir")
T = TypeVar("T")
SURFACE = "attachments"  # the policy row of `memdir attachments` (visibility.SURFACES)
GET_SURFACE = "attachment get"
MCP_SURFACE = "attachments (MCP)"

# each kind of file memdir reads something from: (media type, ext, the first bytes it starts with)
_MAGIC = (
    ("application/pdf", "pdf", (b"%PDF-",)),
    ("image/jpeg", "jpg", (b"\xff\xd8\xff",)),
    ("image/png", "png", (b"\x89PNG\r\n\x1a\n",)),
    ("image/gif", "gif", (b"GIF87a", b"GIF89a")),
    ("image/tiff", "tif", (b"II*\x00", b"MM\x00*")),
    ("audio/mpeg", "mp3", (b"ID3", b"\xff\xfb", b"\xff\xf3")),
    ("audio/flac", "flac", (b"fLaC",)),
    ("audio/ogg", "ogg", (b"OggS",)),
)


def sniff(data: bytes, name: str) -> tuple[str, str]:
    """The media type and file extension, from the bytes (the name only where the bytes do not
    say: a text file, an unknown kind)."""
    for media_type, ext, prefixes in _MAGIC:
        if data.startswith(prefixes):
            return media_type, ext
    if data[:4] == b"RIFF" and data[8:12] in (b"WAVE", b"WEBP"):
        return ("audio/wav", "wav") if data[8:12] == b"WAVE" else ("image/webp", "webp")
    if data[4:8] == b"ftyp":
        return ("audio/mp4", "m4a") if data[8:11] == b"M4A" else ("video/mp4", "mp4")
    suffix = Path(name).suffix.lower().lstrip(".")
    ext = suffix if suffix.isascii() and suffix.isalnum() and len(suffix) <= 10 else ""
    guessed = mimetypes.guess_type(f"x.{ext}")[0] if ext else None
    if b"\x00" not in data[:8192]:
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            pass
        else:
            textual = guessed if guessed and guessed.startswith("text/") else "text/plain"
            return textual, ext or "txt"
    return guessed or "application/octet-stream", ext or "bin"


def extract(data: bytes, media_type: str) -> tuple[dict[str, Any], str | None]:
    """What can be read from the file: ({"method", "text", "truncated", "metadata"}, None), or
    ({}, why it was skipped) — a library missing, a file it cannot read."""
    kind = media_type.split("/")[0]
    if media_type == "application/pdf":
        return _guarded("pypdf", "pypdf", lambda: _pdf(data))
    if kind == "image":
        return _guarded("exifread", "exifread", lambda: _image(data))
    if kind == "audio":
        return _guarded("mutagen", "mutagen", lambda: _audio(data))
    if kind == "text":
        return _extracted("text", data.decode("utf-8", errors="replace"), {}), None
    return {}, None


def _guarded(
    module: str, method: str, run: Callable[[], dict[str, Any]]
) -> tuple[dict[str, Any], str | None]:
    try:
        __import__(module)
    except ImportError:
        return {}, f"{module} is not installed (pip install 'memdir[attach]')"
    try:
        return run(), None
    except Exception as error:  # a library's parse error, whatever its type: the file stays
        return {}, f"{method} could not read it ({type(error).__name__})"


def _extracted(method: str, text: str, metadata: dict[str, Any]) -> dict[str, Any]:
    text = text.replace("\x00", " ").strip()
    found: dict[str, Any] = {"method": method}
    if text:
        found["text"] = text[: attachments.TEXT_CAP]
        if len(text) > attachments.TEXT_CAP:
            found["truncated"] = True
    kept = {key: value for key, value in metadata.items() if value not in (None, "", [], {})}
    if kept:
        found["metadata"] = dict(sorted(kept.items()))
    return found


def _pdf(data: bytes) -> dict[str, Any]:
    logging.getLogger("pypdf").setLevel(logging.ERROR)  # its warnings about sloppy files
    from pypdf import PdfReader

    reader = PdfReader(io.BytesIO(data))
    texts: list[str] = []
    total = 0
    for page in reader.pages:
        if total > attachments.TEXT_CAP:
            break
        text = page.extract_text() or ""
        texts.append(text)
        total += len(text)
    info: Any = reader.metadata or {}
    metadata = {
        "pages": len(reader.pages),
        "title": str(info.get("/Title") or "") or None,
        "author": str(info.get("/Author") or "") or None,
    }
    return _extracted("pypdf", "\n".join(texts), metadata)


def _image(data: bytes) -> dict[str, Any]:
    import exifread

    logging.getLogger("exifread").setLevel(logging.ERROR)
    tags = exifread.process_file(io.BytesIO(data), details=False)
    taken = next((str(tags[name]) for name in ("EXIF DateTimeOriginal", "Image DateTime")
                  if name in tags), None)  # fmt: skip
    metadata: dict[str, Any] = {"date": _exif_date(taken) if taken else None}
    latitude = _degrees(tags.get("GPS GPSLatitude"), tags.get("GPS GPSLatitudeRef"), "S")
    longitude = _degrees(tags.get("GPS GPSLongitude"), tags.get("GPS GPSLongitudeRef"), "W")
    if latitude is not None and longitude is not None:
        metadata["place"] = f"{latitude:.5f}, {longitude:.5f}"
    camera = " ".join(str(tags[name]) for name in ("Image Make", "Image Model") if name in tags)
    metadata["camera"] = camera.strip() or None
    return _extracted("exifread", "", metadata)


def _exif_date(value: str) -> str:
    """EXIF's 'YYYY:MM:DD HH:MM:SS' as ISO-8601 (as it is when it is not that)."""
    try:
        return datetime.strptime(value.strip(), "%Y:%m:%d %H:%M:%S").isoformat()
    except ValueError:
        return value.strip()


def _degrees(tag: Any, ref: Any, negative: str) -> float | None:
    if tag is None:
        return None
    parts = [float(part.num) / float(part.den) for part in tag.values[:3] if part.den]
    if len(parts) != 3:
        return None
    value = parts[0] + parts[1] / 60 + parts[2] / 3600
    return -value if ref is not None and str(ref).strip().upper() == negative else value


_AUDIO_TAGS = {
    "title": ("TIT2", "title", "\xa9nam", "INAM"),
    "artist": ("TPE1", "artist", "\xa9ART", "IART"),
    "album": ("TALB", "album", "\xa9alb", "IPRD"),
    "date": ("TDRC", "date", "\xa9day", "ICRD"),
}


def _audio(data: bytes) -> dict[str, Any]:
    import mutagen

    found = mutagen.File(io.BytesIO(data))
    if found is None:
        raise ValueError("not an audio file mutagen knows")
    metadata: dict[str, Any] = {}
    tags = found.tags or {}
    for field, keys in _AUDIO_TAGS.items():
        for key in keys:
            value = tags.get(key) if hasattr(tags, "get") else None
            if value is not None:
                text = value.text if hasattr(value, "text") else value
                items = text if isinstance(text, list) else [text]
                metadata[field] = ", ".join(str(item) for item in items if str(item))
                break
    length = getattr(found.info, "length", None)
    if length:
        metadata["duration_s"] = round(float(length), 1)
    return _extracted("mutagen", "", metadata)


# -- storing ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Attached:
    """One file stored for a memory: its attachment, and why extraction was skipped (or None)."""

    stored: Stored
    skipped: str | None
    name: str

    @property
    def id(self) -> str:
        return self.stored.id


def store_file(memdir: Memdir, path: Path, visibility_: str) -> Attached:
    """Read a file the user names (size-limited), read what can be read from it, store it and
    its sidecar where a memory of `visibility_` keeps its files."""
    import hashlib

    data = attachments.read_source(path, memdir.settings.attachments.max_bytes)
    media_type, ext = sniff(data, path.name)
    extracted, skipped = extract(data, media_type)
    sha256 = hashlib.sha256(data).hexdigest()
    sidecar = attachments.sidecar_line(sha256, len(data), media_type, path.name or None,
                                       extracted, skipped)  # fmt: skip
    return Attached(attachments.store(memdir, data, ext, sidecar, visibility_), skipped, path.name)


def stored_together(
    memdir: Memdir,
    files: Sequence[Path],
    visibility_: str,
    write: Callable[[list[dict[str, str]]], T],
) -> tuple[T, list[Attached]]:
    """Store `files` and then write the memory that links them (`write` gets the links), under
    one hold of the writer lock: a forget in between cannot take the files away. A file that
    cannot be read stops everything before anything is written."""
    for path in files:  # every file checked first: nothing is written for a bad one
        attachments.read_source(path, memdir.settings.attachments.max_bytes)
    with writing(memdir):
        done = [store_file(memdir, path, visibility_) for path in files]
        ids = dict.fromkeys(one.id for one in done)  # the same file twice: one link
        links = [{"type": attachments.LINK_TYPE, "to": one} for one in ids]
        return write(links), done


@dataclass(frozen=True)
class AttachResult:
    memory: str
    attached: Attached
    added: bool  # False: the memory already had this file


def attach(
    memdir: Memdir, given: str, path: Path, now: datetime, actor: str = "user"
) -> AttachResult:
    """Attach a file to an existing memory: the file is stored, and a `link` event of type
    attachment (never an edit of the memory's line) names it."""
    with writing(memdir):
        state = lifecycle.lookup(memdir, given, now)
        if state.status == "forgotten" or state.memory is None:
            raise LifecycleError(
                f"{state.id} was forgotten", hint="attach it to a memory that is kept"
            )
        attachments.read_source(path, memdir.settings.attachments.max_bytes)
        done = store_file(memdir, path, state.memory.visibility)
        if done.id in attachments.linked(state.links):
            return AttachResult(state.id, done, False)
        lifecycle.link(memdir, state.id, done.id, attachments.LINK_TYPE, now, actor)
    return AttachResult(state.id, done, True)


# -- reading ------------------------------------------------------------------------------------


def describe(stored: Stored, with_text: bool = True) -> dict[str, Any]:
    """An attachment as `--json` shows it (its extracted text only when `with_text`)."""
    side = stored.sidecar
    data: dict[str, Any] = {
        "id": stored.id,
        "name": stored.names[0] if stored.names else None,
        "media_type": side.get("media_type"),
        "bytes": side.get("bytes", stored.path.stat().st_size),
        "sha256": stored.sha256,
        "path": str(
            Path(attachments.FOLDER, *(["sealed"] if stored.sealed else []), stored.path.name)
        ),
    }
    if len(stored.names) > 1:
        data["other_names"] = stored.names[1:]
    extracted = side.get("extracted") or {}
    if extracted.get("method"):
        data["extracted_by"] = extracted["method"]
    if extracted.get("metadata"):
        data["metadata"] = extracted["metadata"]
    if with_text and extracted.get("text"):
        data["text"] = extracted["text"]
        if extracted.get("truncated"):
            data["truncated"] = True
    if side.get("skipped"):
        data["skipped"] = side["skipped"]
    return data


def of_state(memdir: Memdir, state: MemoryState) -> list[tuple[str, Stored | None]]:
    """A memory's attachment ids, each with its stored file (None: missing)."""
    sealed = state.memory is not None and state.memory.visibility == "sealed"
    return [(given, attachments.find(memdir, given, sealed=sealed))
            for given in attachments.linked(state.links)]  # fmt: skip


def brief(memdir: Memdir, state: MemoryState) -> list[dict[str, Any]]:
    """What `show` lists of a memory's attachments: id, name, type, size (no extracted text)."""
    found = []
    for given, stored in of_state(memdir, state):
        if stored is None:
            found.append({"id": given, "missing": True})
            continue
        row = describe(stored, with_text=False)
        found.append({key: row[key] for key in ("id", "name", "media_type", "bytes") if key in row})
    return found


def listing(memdir: Memdir, given: str, now: datetime) -> dict[str, Any]:
    """`memdir attachments ID`: the memory's attachments with their metadata and extracted
    text, through the policy (the `attachments` row: a sealed memory's are masked)."""
    return _listed(memdir, lifecycle.lookup(memdir, given, now), SURFACE)


def for_assistant(memdir: Memdir, given: str, now: datetime) -> dict[str, Any]:
    """MCP `attachments`: as `listing`, through the `attachments (MCP)` row: a memory the
    assistant may not see (private, sealed) is not found, as an id that does not exist."""
    view = lifecycle.load_view(memdir, now)

    def nameable(state: MemoryState) -> bool:
        return state.text_on(MCP_SURFACE) is not None

    return _listed(memdir, view.resolve(given, among=nameable, named=nameable), MCP_SURFACE)


def _listed(memdir: Memdir, state: MemoryState, surface: str) -> dict[str, Any]:
    text = state.text_on(surface)
    masked = state.memory is None or text != state.memory.text
    rows: list[dict[str, Any]] = []
    if not masked:
        for one, stored in of_state(memdir, state):
            rows.append({"id": one, "missing": True} if stored is None else describe(stored))
    else:
        rows = [{"id": one, "text": text} for one in attachments.linked(state.links)]
    data: dict[str, Any] = {"id": state.id, "status": state.status}
    if state.memory is not None:
        data["visibility"] = state.memory.visibility
    data["text"] = text
    data["attachments"] = rows
    return data


def readable(memdir: Memdir, given: str, now: datetime) -> Stored:
    """The attached file `memdir attachment get` may hand out: one a memory that may show it
    links (the `attachment get` row: not a sealed memory's, not a forgotten one's)."""
    stored = attachments.resolve(memdir, given)
    holders = [
        (state, state.memory.visibility)
        for state in lifecycle.load_view(memdir, now)
        if state.memory is not None and stored.id in attachments.linked(state.links)
    ]
    for state, visible in holders:
        shown = visibility.present(GET_SURFACE, "x", state.status, visible) == "x"
        if shown and (visible == "sealed") == stored.sealed:
            return stored
    if any(visible == "sealed" for _, visible in holders):
        raise LifecycleError(f"{stored.id} belongs to a sealed memory: it is shown nowhere",
                             hint=f"the file is yours to copy: {stored.path}")  # fmt: skip
    raise NotFoundError(f"no memory holds attachment {stored.id}")


def write_copy(stored: Stored, out: Path, force: bool = False) -> None:
    """Copy an attached file to `out` (atomically; an existing file only with `force`)."""
    if out.exists() and not force:
        raise BadInputError(f"{out} exists", hint="name another file, or pass --force")
    try:
        atomic.write_bytes(out, [stored.path.read_bytes()])
    except OSError as error:
        raise BadInputError(f"cannot write {out}: {error.strerror or error}") from None
