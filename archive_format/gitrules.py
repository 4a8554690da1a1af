"""The lines a memdir needs in `.gitattributes` and `.gitignore` so that clones merge cleanly.

Committed: only append-only, union-merged lines (shelves, journal), memdir.yaml, entries with
unique names. Ignored: the cache and the files each machine regenerates or keeps for itself
(docs/FORMAT.md, section "Sync"). `memdir init` adds what is missing to existing files without
touching the rest; `verify` warns about what is still missing.
"""

from __future__ import annotations

from pathlib import Path

from . import atomic

# attached files are bytes, never merged line by line (an attached `.jsonl` too): `binary`
# after the union rule overrides it (each name is content-addressed: two clones never write one
# name differently)
ATTRIBUTES = ("*.jsonl merge=union", "attachments/** binary")
ATTRIBUTES_COMMENT = "# memdir: shelves and journal are append-only; union merges never conflict."

IGNORED = (
    ".memdir/",
    "/documents/boot.md",
    "/documents/wake.md",
    "/state/ring.yaml",
    "/state/sleep.yaml",
    "/state/imports.yaml",
    "/memdir.local.yaml",  # the per-machine settings (settings.LOCAL_ONLY): never from a clone
    "/journal/secret.jsonl",  # secret turns never enter a commit (docs/FORMAT.md, section 8)
    "/shelves/sealed.jsonl",  # nor sealed memories and what names them (section 5)
    "/attachments/sealed/",  # nor a sealed memory's attached files (section 10)
)
IGNORED_COMMENT = (
    "# memdir: the derived cache, generated documents and per-machine state stay out of git."
)

# the files that used to be committed and are now per machine or derived (`memdir sync`
# removes them from the index of an older repository, keeping them on disk)
UNTRACKED = tuple(line.lstrip("/") for line in IGNORED[1:])

RULE_FILES = {
    ".gitattributes": (ATTRIBUTES, ATTRIBUTES_COMMENT),
    ".gitignore": (IGNORED, IGNORED_COMMENT),
}


def _present(path: Path) -> set[str]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return set()
    return {" ".join(line.split()) for line in text.splitlines()}


def missing(root: Path) -> dict[str, list[str]]:
    """File name → the memdir lines it lacks (empty when all are there)."""
    found: dict[str, list[str]] = {}
    for name, (lines, _) in RULE_FILES.items():
        have = _present(root / name)
        lacking = [line for line in lines if line not in have]
        if lacking:
            found[name] = lacking
    return found


def merge(root: Path) -> list[str]:
    """Append the missing lines to `.gitattributes` and `.gitignore` (creating them when
    absent), keeping whatever else they hold; returns the names of the files changed."""
    changed = []
    for name, lacking in missing(root).items():
        path = root / name
        before = path.read_text(encoding="utf-8") if path.exists() else ""
        if before and not before.endswith("\n"):
            before += "\n"
        comment = RULE_FILES[name][1]
        block = ([comment] if comment not in before else []) + lacking
        atomic.write_text(path, before + "\n".join(block) + "\n")
        changed.append(name)
    return changed
