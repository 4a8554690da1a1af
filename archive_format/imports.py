"""What imports leave in a memdir, and how to take it back out.

An import appends verbatim turns to the journal with the channel `import:SOURCE`, where SOURCE
is derived from the imported file's bytes; nothing else is written but one entry in
`state/imports.yaml` (what was imported, when, how many turns). Undo removes exactly the turns
of one channel: the journal file is rewritten atomically under the writer lock (rewrite.py, as
`forget` rewrites a shelf), and the id cache follows the rewrite.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from . import shelf
from .errors import BadInputError, LifecycleError
from .memdir import Memdir
from .rewrite import Lines, rewrite
from .state import read_yaml, write_yaml
from .tombstones import writing
from .validate import JOURNAL_KINDS

CHANNEL_PREFIX = "import:"


def channel(source: str) -> str:
    return f"{CHANNEL_PREFIX}{source}"


def manifest_path(memdir: Memdir) -> Path:
    return memdir.state_dir / "imports.yaml"


def read_manifest(memdir: Memdir) -> dict[str, dict[str, Any]]:
    """source id → {file, format, at, turns, sessions}."""
    data = read_yaml(manifest_path(memdir), {}) or {}
    sources = data.get("sources") if isinstance(data, dict) else None
    return {str(k): dict(v) for k, v in (sources or {}).items() if isinstance(v, dict)}


def record(memdir: Memdir, source: str, entry: dict[str, Any]) -> None:
    """Add or update one source's entry (caller holds the writer lock)."""
    sources = read_manifest(memdir)
    sources[source] = entry
    write_yaml(manifest_path(memdir), {"sources": sources})


def remove_source(memdir: Memdir, source: str) -> int:
    """Remove every journal turn of `import:SOURCE`; returns how many lines were removed.

    Refused when a dream has already summarised some of them: removing the turns would leave
    summaries pointing at nothing (forget those summaries first, or keep the import).
    """
    wanted = channel(source)
    needle = json.dumps(wanted).encode("utf-8")
    removed = 0
    with writing(memdir):
        files = sorted(memdir.journal_dir.glob("*.jsonl"))
        plans: list[tuple[Lines, list[bytes], int]] = []
        dropped_ids: set[str] = set()
        for path in files:
            shelf.quarantine_torn_tail(path, memdir.quarantine_dir)
            old = Lines.read(path)
            kept: list[bytes] = []
            count = 0
            for number, line in enumerate(old.lines, start=1):
                if needle in line:
                    data = shelf.decode_line(line[:-1], f"{path}:{number}")
                    if data.get("kind") == "turn" and data.get("channel") == wanted:
                        dropped_ids.add(str(data.get("id")))
                        count += 1
                        kept.append(b"")
                        continue
                kept.append(line)
            if count:
                plans.append((old, kept, count))
        digested = _digested(files, dropped_ids)
        if digested:
            raise LifecycleError(
                f"{len(digested)} turn(s) of import {source} were already consolidated by a "
                f"dream (e.g. {sorted(digested)[0]}); undoing it would orphan their summaries",
                hint="keep the import, or forget the summary memories and remove the digests",
            )
        for old, kept, count in plans:
            rewrite(memdir, old, kept)
            removed += count
        sources = read_manifest(memdir)
        if source in sources:
            del sources[source]
            if sources:
                write_yaml(manifest_path(memdir), {"sources": sources})
            else:  # the first import created it: undoing the last one leaves no trace
                manifest_path(memdir).unlink()
    return removed


def _digested(files: list[Path], ids: set[str]) -> set[str]:
    """Which of `ids` a digest line names."""
    if not ids:
        return set()
    found: set[str] = set()
    for path in files:
        for item in shelf.read(path, kinds=JOURNAL_KINDS):
            if item.data.get("kind") == "digest":
                named = {*item.data.get("turns", ()), *item.data.get("withheld", ())}
                found |= named & ids
    return found


def check_source(source: str) -> str:
    """A source id as given on the command line (with or without the `import:` prefix)."""
    value = source.strip().removeprefix(CHANNEL_PREFIX)
    if not value or any(ch.isspace() for ch in value):
        raise BadInputError(
            f"{source!r} is not an import source id", hint="`memdir import --list` shows them"
        )
    return value
