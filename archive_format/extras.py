"""The optional features and the extra of pyproject.toml each needs.

`pip install memdir` teaches, recalls and sleeps; the rest comes with an extra
(`pip install 'memdir[mcp]'`, or `memdir[all]`). A feature asks `require(extra, feature)` before
it imports its modules, so a missing extra is one line naming the extra and the command that
installs it (MissingExtraError, exit status 10), never a traceback. tests/test_extras.py keeps
EXTRAS in step with pyproject.toml's optional dependencies.
"""

from __future__ import annotations

import importlib
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

from .errors import MissingExtraError


@dataclass(frozen=True)
class Extra:
    """What an extra is for, the modules it provides and the packages pip installs for it."""

    purpose: str
    modules: tuple[str, ...]
    packages: tuple[str, ...]


EXTRAS: dict[str, Extra] = {
    "mcp": Extra("the MCP server (`memdir mcp`)", ("mcp", "mcp_types"), ("mcp>=2.3,<3",)),
    "encrypt": Extra(
        "encrypted exports (`export --encrypt`, restoring one)",
        ("cryptography", "argon2"),
        ("cryptography>=42", "argon2-cffi>=23"),
    ),
    "watch": Extra(
        "watching the files (`memdir watch`, `memdir serve` without --no-watch)",
        ("watchdog",),
        ("watchdog>=4",),
    ),
    "postgres": Extra(
        "the index on PostgreSQL (settings.index.backend: postgres)",
        ("psycopg", "pgvector"),
        ("psycopg[binary]>=3.2", "pgvector>=0.3"),
    ),
    "nrc": Extra(
        "the NRC Emotion Lexicon's chord (affect.annotator: vader+nrc; research use only)",
        ("nrclex",),
        ("nrclex>=4",),
    ),
    "ui": Extra("the local web page (`memdir ui`)", ("uvicorn",), ("uvicorn>=0.30",)),
    "attach": Extra(
        "reading attached files (a PDF's text, an image's EXIF, audio tags; else stored unread)",
        ("pypdf", "exifread", "mutagen"),
        ("pypdf>=4", "exifread>=3", "mutagen>=1.47"),
    ),
    "bf16": Extra(
        "embedding in bfloat16 where the CPU has it (about 4x faster index builds)",
        ("openvino",),
        ("openvino>=2026.4,<2027",),
    ),
}


def install_command(*packages: str, no_deps: bool = False) -> str:
    """The command that adds packages to the environment memdir runs in: `pipx runpip` for a
    pipx install (`pipx inject … --pip-args=--no-deps` installs, then exits 1 with "Pipx
    Internal Error"), `uv pip --python` for a uv tool, else this Python's pip."""
    names = " ".join(shlex.quote(package) for package in packages)
    flag = " --no-deps" if no_deps else ""
    prefix = Path(sys.prefix)
    if "/pipx/venvs/" in prefix.as_posix():
        return f"pipx runpip {shlex.quote(prefix.name)} install{flag} {names}"
    if "/uv/tools/" in prefix.as_posix():
        return f"uv pip install --python {shlex.quote(sys.executable)}{flag} {names}"
    return f"{shlex.quote(sys.executable)} -m pip install{flag} {names}"


def missing(extra: str) -> list[str]:
    """The modules of `extra` that do not import here (installed without it, or broken)."""
    absent = []
    for name in EXTRAS[extra].modules:
        try:
            importlib.import_module(name)
        except ImportError:
            absent.append(name)
    return absent


def require(extra: str, feature: str, instead: str = "") -> None:
    """Raise MissingExtraError, naming `extra` and its install command, unless it imports.

    `feature` says what was asked for, in the user's words ("memdir mcp", "export --encrypt");
    `instead`, a way to do without the extra, ends the hint ("or …").
    """
    absent = missing(extra)
    if absent:
        raise MissingExtraError(
            f"{feature} needs memdir's `{extra}` extra ({', '.join(absent)} not installed)",
            hint=f"pip install 'memdir[{extra}]' (into this install: "
            f"{install_command(*EXTRAS[extra].packages)})" + (f"; or {instead}" if instead else ""),
        )
