"""docs/ARCHITECTURE.md names every module of the four layers (issue 28: claims true again):
a module added without saying where it fits fails here."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DOC = REPO / "docs" / "ARCHITECTURE.md"
LAYERS = ("archive_format", "indexers", "cli", "memdir")


def modules() -> list[Path]:
    found = []
    for layer in LAYERS:
        for path in (REPO / layer).rglob("*.py"):
            if path.name == "__init__.py" or any(p.is_symlink() for p in path.parents):
                continue
            if layer == "memdir" and path.parent == REPO / "memdir" and path.name == "__main__.py":
                continue  # `python -m memdir`, named in the doc as such
            found.append(path)
    return found


def unnamed(paths: list[Path], text: str) -> list[str]:
    """The modules `text` names neither as `name.py` nor as folder/name.py."""
    return sorted(str(p.relative_to(REPO)) for p in paths if f"`{p.name}`" not in text
                  and f"{p.parent.name}/{p.name}" not in text)  # fmt: skip


def test_every_module_is_named_in_the_architecture_doc() -> None:
    assert unnamed(modules(), DOC.read_text(encoding="utf-8")) == [], (
        "name these modules in docs/ARCHITECTURE.md"
    )


def test_the_check_sees_a_module_the_doc_does_not_name() -> None:
    found = modules()
    assert REPO / "memdir" / "usecases" / "room.py" in found  # it walks the real tree
    assert REPO / "memdir" / "api.py" in found and REPO / "cli" / "main.py" in found
    fake = REPO / "indexers" / "no_such_module.py"
    text = DOC.read_text(encoding="utf-8")
    assert unnamed([*found, fake], text) == sorted(
        [*unnamed(found, text), str(fake.relative_to(REPO))]
    )
