"""How many threads numpy's OpenBLAS uses, set at run time.

A single short query is a handful of small matrix products: one thread does them faster than
two, and on a busy machine a second spinning BLAS thread made one query embedding take ~500 ms
instead of ~40 ms (measured here). Batches (indexing) keep every thread.
"""

from __future__ import annotations

import ctypes
import glob
import os
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from typing import Any

_SETTERS = (
    "scipy_openblas_set_num_threads64_",
    "openblas_set_num_threads64_",
    "openblas_set_num_threads",
)
_GETTERS = (
    "scipy_openblas_get_num_threads64_",
    "openblas_get_num_threads64_",
    "openblas_get_num_threads",
)


@cache
def _openblas() -> tuple[Any, Any] | None:
    """The (setter, getter) of the OpenBLAS that numpy loaded, or None when there is none."""
    import numpy

    folder = os.path.join(os.path.dirname(numpy.__file__), os.pardir, "numpy.libs")
    for path in glob.glob(os.path.join(folder, "*openblas*")):
        try:
            library = ctypes.CDLL(path)
        except OSError:
            continue
        setter = next((getattr(library, n) for n in _SETTERS if hasattr(library, n)), None)
        getter = next((getattr(library, n) for n in _GETTERS if hasattr(library, n)), None)
        if setter is not None and getter is not None:
            return setter, getter
    return None


@contextmanager
def single_thread() -> Iterator[None]:
    """Run the block with one BLAS thread, then restore the previous count."""
    functions = _openblas()
    if functions is None:
        yield
        return
    setter, getter = functions
    before = int(getter())
    setter(1)
    try:
        yield
    finally:
        setter(before)
