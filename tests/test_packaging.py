"""The installed layout: one `memdir` namespace, `python -m memdir`, and the layer rule."""

from __future__ import annotations

import re
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
    # the page of `memdir ui` is package data: served from the install, nothing from a network
    assert {f"memdir/cli/web/static/{name}" for name in ("index.html", "app.js", "app.css")} <= set(
        names
    )
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


def _layer_files(layer: str) -> list[Path]:
    """A layer's modules; memdir/__main__.py (`python -m memdir`) is an adapter, of the cli."""
    package = REPO / "memdir"
    if layer == "library":
        library = [*package.glob("*.py"), *(package / "usecases").rglob("*.py")]
        return sorted(path for path in library if path.name != "__main__.py")
    return sorted([*(REPO / layer).rglob("*.py"), *([package / "__main__.py"] * (layer == "cli"))])


LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")  # import-linter, a dev tool


def _contracts() -> dict[str, str]:
    """pyproject.toml's import-linter contracts, id → name."""
    tomllib = pytest.importorskip("tomllib")
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]
    return {contract["id"]: contract["name"] for contract in config["contracts"]}


def _lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    """`lint-imports` in `root`, which it puts first on sys.path: the tree there, not the
    installed memdir, is what it reads (no install needed)."""
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"],
        capture_output=True, text=True, timeout=120, cwd=root, env=clean_env(),
    )  # fmt: skip


def test_the_import_contracts_hold() -> None:
    """The layers (cli > library > indexers > archive_format, every module under memdir/ in
    one), no typer/rich/click/mcp below the adapters, a light `import memdir`, and no import by
    a repository folder's bare name: pyproject.toml's [tool.importlinter]."""
    done = _lint_imports(REPO)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"Contracts: {len(_contracts())} kept, 0 broken." in done.stdout, done.stdout


# the imports that each break a contract: {(the module they go in, the contract): imports}
BACK_EDGES = {
    ("archive_format/clock.py", "layers"): [
        "from ..indexers import catalog",
        "import memdir.cli.main",
        "from memdir import cli",
        "from .. import indexers",
        "def f():\n    from memdir.cli.render import note\n",
        "from memdir.usecases import recall",
        "from memdir import api",
    ],
    ("indexers/blas.py", "layers"): ["from memdir.usecases import recall"],
    ("memdir/usecases/recall.py", "layers"): ["from ..cli import render"],
    ("memdir/words.py", "layers"): ["from memdir.cli.render import note"],
    ("memdir/newmodule.py", "layers"): ["VALUE = 1"],  # exhaustive: a module with no layer
    ("archive_format/clock.py", "root"): ["import memdir"],
    ("indexers/blas.py", "frameworks"): [
        "def f():\n    import typer\n",
        "from rich.console import Console",
    ],
    ("memdir/usecases/recall.py", "frameworks"): ["import mcp"],
    ("memdir/__init__.py", "light"): ["from memdir import api as _api"],
    ("archive_format/clock.py", "folders"): ["import indexers.blas"],
    ("archive_format/memdir.py", "plain-lock"): ["def f():\n    from .tombstones import reapply\n"],
}


@pytest.mark.parametrize(
    ("path", "source", "contract"),
    [(path, source, contract) for (path, contract), sources in BACK_EDGES.items()
     for source in sources],
)  # fmt: skip
def test_the_import_contracts_see_a_back_edge(
    tmp_path: Path, path: str, source: str, contract: str
) -> None:
    """Each contract can fail: a copy of the tree with one import added breaks it, and
    lint-imports names the module and the contract (and any other the import breaks through
    the modules it brings in: the CLI's bring typer and rich)."""
    tree = tmp_path / "tree"
    for name in ("memdir", *FOLDERS):
        shutil.copytree(REPO / name, tree / name, symlinks=True,
                        ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    shutil.copy(REPO / "pyproject.toml", tree / "pyproject.toml")
    target = tree / path
    before = target.read_text(encoding="utf-8") if target.exists() else ""
    target.write_text(f"{before}\n{source}\n", encoding="utf-8")
    done = _lint_imports(tree)
    assert done.returncode == 1, done.stdout + done.stderr
    name = _contracts()[contract]
    assert re.search(rf"^{re.escape(name)}\s*BROKEN$", done.stdout, re.M), done.stdout
    module = "memdir." + path.removeprefix("memdir/").removesuffix(".py").replace("/", ".")
    assert module.removesuffix(".__init__") in done.stdout, done.stdout
