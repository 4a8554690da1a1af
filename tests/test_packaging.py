"""The installed layout: one `memdir` namespace, `python -m memdir`, and the layer rule."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from conftest import clean_env

import memdir

REPO = Path(__file__).resolve().parent.parent
FOLDERS = ("archive_format", "indexers", "cli")  # the top-level folders memdir/ links to
# each layer may import only those before it; the library is memdir/*.py and memdir/usecases/
LAYERS = ("archive_format", "indexers", "library", "cli")


def test_wheel_installs_only_the_memdir_namespace(tmp_path: Path) -> None:
    source = tmp_path / "source"  # a copy, so the build writes nothing into the repository
    for name in ("memdir", *FOLDERS):
        shutil.copytree(
            REPO / name, source / name, symlinks=True, ignore=shutil.ignore_patterns("__pycache__")
        )
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(REPO / name, source / name)
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(tmp_path), str(source)],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (wheel,) = tmp_path.glob("memdir-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert {name.split("/")[0] for name in names} == {
        "memdir",
        f"memdir-{memdir.__version__}.dist-info",
    }
    sources = {
        f"memdir/{path.relative_to(REPO).as_posix()}".replace("memdir/memdir/", "memdir/")
        for layer in LAYERS
        for path in _layer_files(layer)
    }
    assert sources <= set(names), sorted(sources - set(names))
    assert "memdir/archive_format/schemas/memory.schema.json" in names
    metadata = next(name for name in names if name.endswith("METADATA"))
    text = zipfile.ZipFile(wheel).read(metadata).decode()
    assert "License-Expression: MIT" in text
    # pip compiles what it installs from a wheel, whatever PYTHONDONTWRITEBYTECODE says
    site = tmp_path / "site"
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "-q",
         "--target", str(site), str(wheel)],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
        env={**clean_env(), "PYTHONDONTWRITEBYTECODE": "1"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert _uncompiled(site / "memdir") == []


def _uncompiled(package: Path) -> list[str]:
    """The modules under `package` without a current .pyc beside them."""
    import importlib.util

    missing = []
    for source in sorted(package.rglob("*.py")):
        cached = Path(importlib.util.cache_from_source(str(source)))
        if not cached.is_file() or cached.stat().st_mtime < source.stat().st_mtime:
            missing.append(str(source.relative_to(package)))
    return missing


def test_make_setup_compiles_bytecode_even_with_pythondontwritebytecode(tmp_path: Path) -> None:
    """An editable install compiles nothing, so `make setup` does (its bytecode step, here on a
    copy of the tree, with this interpreter's environment standing in for the installed one):
    a cold command in a clone then reads .pyc files instead of compiling every module."""
    source = tmp_path / "source"
    for name in ("memdir", *FOLDERS):
        shutil.copytree(
            REPO / name, source / name, symlinks=True, ignore=shutil.ignore_patterns("__pycache__")
        )
    shutil.copy(REPO / "Makefile", source / "Makefile")
    venv = Path(sys.executable).parent.parent
    done = subprocess.run(
        ["make", "-s", "-o", f"{venv}/.installed", "bytecode", f"VENV={venv}",
         f"PY={sys.executable}"],
        capture_output=True, text=True, timeout=300, cwd=source,
        env={**clean_env(), "PYTHONDONTWRITEBYTECODE": "1"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    for name in ("memdir", *FOLDERS):
        assert _uncompiled(source / name) == [], name


def test_a_plain_clone_resolves_every_memdir_import_without_installing(tmp_path: Path) -> None:
    """memdir/cli, memdir/indexers and memdir/archive_format are links to the top-level folders,
    so a reader of the tree (python, mypy, pyright, an editor) finds every memdir.* module."""
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True, timeout=120)
    for layer in FOLDERS:
        link = clone / "memdir" / layer
        assert link.is_symlink() and link.resolve() == (clone / layer).resolve()
    probe = (
        "import sys; sys.path.insert(0, sys.argv[1]);"
        "import memdir.cli.main, memdir.indexers.recall.pipeline, memdir.archive_format.fold as f;"
        "print(f.__file__)"
    )
    done = subprocess.run(
        [sys.executable, "-I", "-c", probe, str(clone)],
        capture_output=True, text=True, timeout=60, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert Path(done.stdout.strip()).resolve() == (clone / "archive_format" / "fold.py").resolve()


def test_python_dash_m_memdir_runs_the_command(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "memdir", "--version"],
        capture_output=True, text=True, timeout=60, cwd=tmp_path, env=clean_env(),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"memdir {memdir.__version__}"
    assert memdir.__version__ != "0+unknown", "the version comes from the installed metadata"


def _imports(path: Path) -> set[str]:
    """The memdir layers a module of the repository imports."""
    module = ("memdir", *path.relative_to(REPO).with_suffix("").parts)
    if module[1] == "memdir":  # memdir/api.py is memdir.api, not memdir.memdir.api
        module = module[1:]
    return _layers_imported(path.read_text(encoding="utf-8"), module)


def _layer_named(name: str) -> str | None:
    """The layer a dotted import names: a folder's subpackage, or the library (`memdir` itself,
    `memdir.api`, `memdir.usecases`, ...); None for a module outside memdir."""
    pieces = name.split(".")
    if pieces[0] in FOLDERS:
        return f"bare {pieces[0]}"
    if pieces[0] != "memdir":
        return None
    return pieces[1] if len(pieces) > 1 and pieces[1] in FOLDERS else "library"


def _layers_imported(source: str, module: tuple[str, ...]) -> set[str]:
    """The memdir layers `source` (the module named by `module`) imports, absolutely or
    relatively, at any depth of its code (function-level imports included)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join((*module[: len(module) - node.level], base)).rstrip(".")
            # `from memdir import cli` and `from . import indexers` name the layer as an alias
            names = [base, *(f"{base}.{alias.name}" for alias in node.names)]
        found |= {layer for name in names if (layer := _layer_named(name))}
    return found


def _layer_files(layer: str) -> list[Path]:
    """A layer's modules; memdir/__main__.py (`python -m memdir`) is an adapter, of the cli."""
    package = REPO / "memdir"
    if layer == "library":
        library = [*package.glob("*.py"), *(package / "usecases").rglob("*.py")]
        return sorted(path for path in library if path.name != "__main__.py")
    return sorted([*(REPO / layer).rglob("*.py"), *([package / "__main__.py"] * (layer == "cli"))])


@pytest.mark.parametrize("layer", LAYERS)
def test_layers_import_only_downwards(layer: str) -> None:
    allowed = set(LAYERS[: LAYERS.index(layer) + 1])
    wrong = {
        str(path.relative_to(REPO)): sorted(found - allowed)
        for path in _layer_files(layer)
        if (found := _imports(path)) - allowed
    }
    assert wrong == {}


@pytest.mark.parametrize(
    "source",
    ["from ..indexers import catalog", "import memdir.cli.main", "from memdir import cli",
     "from .. import indexers", "def f():\n    from memdir.cli.render import note\n",
     "from memdir.usecases import recall", "from memdir import api", "import memdir"],
)  # fmt: skip
def test_the_layer_check_sees_a_back_edge(source: str) -> None:
    # the rule above must be able to fail: each form of an upward import is seen
    module = ("memdir", "archive_format", "probe")
    assert _layers_imported(source, module) & {"indexers", "library", "cli"}
    assert _layers_imported("from . import records", module) == {"archive_format"}
    # the library (memdir/usecases/recall.py is memdir.usecases.recall) sees its own imports
    library = ("memdir", "usecases", "recall")
    assert _layers_imported("from . import documents", library) == {"library"}
    assert _layers_imported("from ..cli import render", library) == {"cli"}


def test_indexers_never_import_the_application_frameworks() -> None:
    banned = {"typer", "rich", "mcp", "click"}
    wrong = []
    for path in (REPO / "indexers").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = (
                    [a.name for a in node.names]
                    if isinstance(node, ast.Import)
                    else [node.module or ""]
                )
                wrong += [f"{path.name}: {n}" for n in names if n.split(".")[0] in banned]
    assert wrong == []
