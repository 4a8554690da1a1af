"""Attachments: files (images, PDFs, audio, text) kept under the memdir beside a memory.

A file is stored once, named by the SHA-256 of its bytes, `attachments/<sha256>.<ext>`, with an
immutable *sidecar* `attachments/<sha256>.<h8>.json` saying what it is (its name, media type,
size) and what could be read from it (the extracted text and metadata). The sidecar's own name
carries `h8`, the first 8 hex digits of SHA-256 over its canonical JSON: two clones that attach
the same bytes under another name (or with another extractor installed) write two sidecars,
never one file two ways, so a merge cannot conflict. Readers take the sidecars of one file in
name order, those that read something first; the first is its description.

A memory names its attachments by links of type `attachment` to `a-<first 16 hex digits>`: in
its own line (`teach --attach`) or by a `link` event (`attach ID FILE`), so attaching never
edits a line. A sealed memory's files go to `attachments/sealed/`, which is git-ignored like
`shelves/sealed.jsonl`. Forget removes the files no other memory still links (`prune`).

This module knows the files only: the extraction (optional libraries) is the library's
(memdir/usecases/attachments.py), the index's use of the text the indexers'.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import atomic
from .errors import BadInputError, NotFoundError
from .memdir import Memdir
from .records import canonical_json
from .tombstones import writing
from .validate import line_problems

LINK_TYPE = "attachment"  # the link from a memory to an attachment id
FOLDER = "attachments"
SEALED = "sealed"  # attachments/sealed/: a sealed memory's files, git-ignored
ID = re.compile(r"a-[0-9a-f]{16}")
CONTENT = re.compile(r"([0-9a-f]{64})\.([a-z0-9]{1,10})")
SIDECAR = re.compile(r"([0-9a-f]{64})\.([0-9a-f]{8})\.json")
TEXT_CAP = 20_000  # characters of extracted text kept in a sidecar (and indexed)
SIDECAR_FIELDS = ("kind", "id", "sha256", "bytes", "media_type", "name", "extracted", "skipped")


def attachment_id(sha256: str) -> str:
    return f"a-{sha256[:16]}"


def folder(memdir: Memdir, visibility: str) -> Path:
    """Where a memory of this visibility keeps its files: a sealed one's stay on the machine."""
    base = memdir.root / FOLDER
    return base / SEALED if visibility == "sealed" else base


def folders(memdir: Memdir) -> list[Path]:
    base = memdir.root / FOLDER
    return [base, base / SEALED]


def linked(links: Iterable[dict[str, Any]]) -> list[str]:
    """The attachment ids among a memory's links (MemoryState.links, a line's `links`), once
    each, in order."""
    return list(
        dict.fromkeys(
            str(link.get("to"))
            for link in links
            if link.get("type") == LINK_TYPE and link.get("to")
        )
    )


@dataclass(frozen=True)
class Stored:
    """One attachment as found on disk: its content file and its sidecars (first = its
    description)."""

    id: str
    sha256: str
    path: Path
    sidecars: tuple[dict[str, Any], ...]

    @property
    def sidecar(self) -> dict[str, Any]:
        return self.sidecars[0] if self.sidecars else {}

    @property
    def sealed(self) -> bool:
        return self.path.parent.name == SEALED

    @property
    def names(self) -> list[str]:
        return list(dict.fromkeys(str(s["name"]) for s in self.sidecars if s.get("name")))


def read_source(path: Path, max_bytes: int) -> bytes:
    """The bytes of a file the user names, within the size limit; a missing file, a folder, an
    unreadable or an oversized file is one error saying which (nothing is written)."""
    shown = str(path)
    try:
        with open(path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if size > max_bytes:
                raise _too_big(shown, size, max_bytes)
            data = handle.read(max_bytes + 1)
    except FileNotFoundError:
        raise NotFoundError(f"no file {shown}", hint="name a file that exists") from None
    except IsADirectoryError:
        raise BadInputError(f"{shown} is a directory", hint="attach a file, not a folder") from None
    except PermissionError:
        raise BadInputError(
            f"cannot read {shown}: permission denied", hint="check the file's permissions"
        ) from None
    except OSError as error:
        raise BadInputError(f"cannot read {shown}: {error.strerror or error}") from None
    if len(data) > max_bytes:  # it grew while read (or is a pipe)
        raise _too_big(shown, len(data), max_bytes)
    return data


def _too_big(shown: str, size: int, limit: int) -> BadInputError:
    return BadInputError(
        f"{shown} is {_size(size)}, over the attachment limit of {_size(limit)}",
        hint="attach a smaller file, or raise attachments.max_bytes in memdir.yaml",
    )


def _size(count: int) -> str:
    if count < 1024:
        return f"{count} bytes"
    value = count / 1024
    for unit in ("KiB", "MiB"):
        if value < 1024:
            return f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GiB"


def sidecar_line(sha256: str, size: int, media_type: str, name: str | None,
                 extracted: dict[str, Any], skipped: str | None) -> dict[str, Any]:  # fmt: skip
    """A sidecar in table order; empty optional fields are left out."""
    values = {"kind": "attachment", "id": attachment_id(sha256), "sha256": sha256, "bytes": size,
              "media_type": media_type, "name": name, "extracted": extracted,
              "skipped": skipped}  # fmt: skip
    return {key: values[key] for key in SIDECAR_FIELDS if values[key] not in (None, "", {}, [])}


def store(
    memdir: Memdir, data: bytes, ext: str, sidecar: dict[str, Any], visibility: str
) -> Stored:
    """Write the file and its sidecar where a memory of `visibility` keeps them (under the
    writer lock); a file already there is not written again."""
    sha256 = hashlib.sha256(data).hexdigest()
    if sidecar.get("sha256") != sha256:
        raise ValueError("the sidecar describes other bytes")
    wrong = line_problems(sidecar, ("attachment",))
    if wrong:
        raise BadInputError(f"invalid attachment sidecar: {wrong[0]}")
    if not re.fullmatch(r"[a-z0-9]{1,10}", ext):
        ext = "bin"
    place = folder(memdir, visibility)
    with writing(memdir):
        place.mkdir(parents=True, exist_ok=True)
        existing = [p for p in place.glob(f"{sha256}.*") if CONTENT.fullmatch(p.name)]
        if not existing:
            atomic.write_bytes(place / f"{sha256}.{ext}", [data])
        encoded = canonical_json(sidecar)
        h8 = hashlib.sha256(encoded.encode("utf-8")).hexdigest()[:8]
        side = place / f"{sha256}.{h8}.json"
        if not side.exists():
            text = json.dumps(sidecar, ensure_ascii=False, indent=1) + "\n"
            atomic.write_text(side, text)
    found = find(memdir, attachment_id(sha256), sealed=visibility == "sealed")
    assert found is not None
    return found


def _entries(place: Path) -> tuple[dict[str, Path], dict[str, list[Path]]]:
    contents: dict[str, Path] = {}
    sidecars: dict[str, list[Path]] = {}
    if not place.is_dir():
        return contents, sidecars
    for path in sorted(place.iterdir()):
        if (match := CONTENT.fullmatch(path.name)) and path.is_file():
            contents.setdefault(match.group(1), path)
        elif (match := SIDECAR.fullmatch(path.name)) and path.is_file():
            sidecars.setdefault(match.group(1), []).append(path)
    return contents, sidecars


def _read_sidecar(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def find(memdir: Memdir, given: str, sealed: bool | None = None) -> Stored | None:
    """The attachment `a-…` (the normal folder first, then the sealed one; `sealed` picks one)."""
    if not ID.fullmatch(given):
        return None
    prefix = given[2:]
    places = folders(memdir)
    if sealed is not None:
        places = [places[1] if sealed else places[0]]
    for place in places:
        if not place.is_dir():
            continue
        for path in sorted(place.glob(f"{prefix}*")):
            match = CONTENT.fullmatch(path.name)
            if match and path.is_file():
                sha = match.group(1)
                sides = sorted(place.glob(f"{sha}.*.json"))
                read = [
                    s for s in (_read_sidecar(p) for p in sides if SIDECAR.fullmatch(p.name)) if s
                ]
                # one that read something describes the file best (stable: a clone holding the
                # same sidecars chooses the same one)
                read.sort(key=lambda sidecar: not sidecar.get("extracted"))
                return Stored(given, sha, path, tuple(read))
    return None


def resolve(memdir: Memdir, given: str) -> Stored:
    """An attachment by its id (`a-` and 16 hex digits), or NotFoundError."""
    found = find(memdir, given.strip())
    if found is None:
        raise NotFoundError(
            f"no attachment {given!r}", hint="`memdir attachments ID` lists a memory's attachments"
        )
    return found


def indexed_text(stored: Stored) -> str:
    """What the index holds for an attachment: its names, its metadata and its text."""
    parts = list(stored.names)
    extracted = stored.sidecar.get("extracted") or {}
    for _, value in sorted((extracted.get("metadata") or {}).items()):
        if isinstance(value, str | int | float) and not isinstance(value, bool):
            parts.append(str(value))
    if extracted.get("text"):
        parts.append(str(extracted["text"]))
    return "\n".join(parts)


def texts(memdir: Memdir, ids: Iterable[str], sealed: bool = False) -> str:
    """The indexed text of several attachments, joined (missing ones are skipped)."""
    found = (find(memdir, given, sealed=sealed) or find(memdir, given) for given in ids)
    return "\n".join(indexed_text(stored) for stored in found if stored is not None)


def prune(memdir: Memdir, wanted: dict[str, set[str]]) -> list[Path]:
    """Remove every attachment file and sidecar no memory still links: `wanted` is, per folder
    ("normal", "sealed"), the attachment ids some memory that is not forgotten links. Under
    the writer lock (forget holds it). Returns what was removed."""
    removed: list[Path] = []
    for place, key in zip(folders(memdir), ("normal", "sealed"), strict=True):
        contents, sidecars = _entries(place)
        for sha in sorted(set(contents) | set(sidecars)):
            if attachment_id(sha) in wanted.get(key, set()):
                continue
            for path in ([contents[sha]] if sha in contents else []) + sidecars.get(sha, []):
                path.unlink(missing_ok=True)
                removed.append(path)
        if removed and place.is_dir():
            atomic.sync_folder(place)
    return removed


def problems(
    memdir: Memdir, links: dict[str, tuple[list[str], bool]]
) -> tuple[list[str], list[str]]:
    """`verify`'s findings: a file whose bytes do not match its name, a sidecar that is not
    JSON or describes other bytes, a link from a memory (id → (attachment ids, sealed)) to an
    attachment that is missing; and as warnings, files no memory links and strays."""
    found: list[str] = []
    warned: list[str] = []
    present: dict[str, set[str]] = {"normal": set(), "sealed": set()}
    for place, key in zip(folders(memdir), ("normal", "sealed"), strict=True):
        if not place.is_dir():
            continue
        where = place.relative_to(memdir.root)
        contents, sidecars = _entries(place)
        for sha, path in contents.items():
            digest = hashlib.sha256()
            with open(path, "rb") as handle:
                for chunk in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(chunk)
            if digest.hexdigest() != sha:
                found.append(
                    f"{where}/{path.name}: its bytes do not match its name (changed by hand?)"
                )
            else:
                present[key].add(attachment_id(sha))
            if sha not in sidecars:
                warned.append(f"{where}/{path.name}: no sidecar describes it")
        for sha, paths in sidecars.items():
            for path in paths:
                data = _read_sidecar(path)
                wrong = line_problems(data, ("attachment",)) if data is not None else ["not JSON"]
                if wrong or data is None or data.get("sha256") != sha:
                    why = wrong[0] if wrong else f"describes other bytes than {sha[:16]}…"
                    found.append(f"{where}/{path.name}: not a sidecar of its file ({why})")
                elif (
                    hashlib.sha256(canonical_json(data).encode()).hexdigest()[:8]
                    != path.name.split(".")[1]
                ):
                    found.append(f"{where}/{path.name}: does not match its name (edited by hand?)")
            if sha not in contents:
                found.append(f"{where}/{paths[0].name}: describes a file that is missing")
        for path in sorted(place.iterdir()):
            if path.is_file() and not (
                CONTENT.fullmatch(path.name) or SIDECAR.fullmatch(path.name)
            ):
                if not path.name.startswith("."):
                    warned.append(f"{where}/{path.name}: a stray file memdir did not write")
    used: dict[str, set[str]] = {"normal": set(), "sealed": set()}
    for memory_id, (ids, sealed) in sorted(links.items()):
        key = "sealed" if sealed else "normal"
        for given in ids:
            used[key].add(given)
            if given not in present[key]:
                found.append(f"{memory_id}: link to missing attachment {given}")
    for key in ("normal", "sealed"):
        for given in sorted(present[key] - used[key]):
            warned.append(f"attachment {given} is linked by no memory (`memdir forget` removes "
                          "a forgotten memory's files)")  # fmt: skip
    return found, warned
