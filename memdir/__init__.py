"""memdir: long-term memory for LLM assistants, stored as plain files.

One installed namespace: `memdir.archive_format` (the files), `memdir.indexers` (the derived
cache and recall) and `memdir.cli` (the application). The repository keeps them as the
top-level folders `archive_format/`, `indexers/` and `cli/`; pyproject.toml maps them here.
"""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
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
