"""memdir: long-term memory for LLM assistants, stored as plain files.

One installed namespace, four layers (docs/ARCHITECTURE.md): `memdir.archive_format` (the
files), `memdir.indexers` (the derived cache and recall), the library here (`memdir.api`, the
use cases in `memdir.usecases`, `memdir.actor`) and `memdir.cli` (the adapters: commands, MCP,
the service). The repository keeps three as the top-level folders `archive_format/`,
`indexers/` and `cli/`; pyproject.toml maps them here.

The public Python API (docs/API.md): `memdir.open(path, actor=...)` and `memdir.init(...)`
return a `memdir.Memdir`; errors are `memdir.MemdirError` and the rest of `memdir.errors`.
Every name resolves on first use, so `import memdir` loads nothing but this module.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

# public name -> the module that holds it (memdir/api.py, memdir/errors.py)
_API = {
    **dict.fromkeys(("open", "init", "Memdir", "Outcome", "WriteResult"), "memdir.api"),
    **dict.fromkeys(
        (
            "MemdirError",
            "NotAMemdirError",
            "NotFoundError",
            "AmbiguousIdError",
            "FormatError",
            "LockedError",
            "BadInputError",
            "LifecycleError",
            "MissingExtraError",
            "ExitStatus",
        ),
        "memdir.errors",
    ),  # fmt: skip
}
__all__ = ["__version__", "errors", "api", *_API]


def __getattr__(name: str) -> Any:
    if name in ("api", "errors"):
        return import_module(f"memdir.{name}")
    if name in _API:
        found = getattr(import_module(_API[name]), name)
        globals()[name] = found
        return found
    # The version is read from the package metadata on first use: importlib.metadata costs
    # ~20 ms, which the client of a running `memdir serve` (cli/service.py) does not pay.
    if name != "__version__":
        raise AttributeError(f"module 'memdir' has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        found = version("memdir")
    except PackageNotFoundError:  # run from a source tree that was never installed
        found = "0+unknown"
    globals()["__version__"] = found
    return found
