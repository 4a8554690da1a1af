"""memdir: long-term memory for LLM assistants, stored as plain files.

One installed namespace: `memdir.archive_format` (the files), `memdir.indexers` (the derived
cache and recall) and `memdir.cli` (the application). The repository keeps them as the
top-level folders `archive_format/`, `indexers/` and `cli/`; pyproject.toml maps them here.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("memdir")
except PackageNotFoundError:  # run from a source tree that was never installed
    __version__ = "0+unknown"
