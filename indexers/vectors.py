"""Vectors: an append-only float16 file per embedding model (backends.VectorRows), and a FAISS
index over it (backends.VectorIndex).

The file is the embedding cache: float16 rows, read back as float32 (cosines between MiniLM's
unit vectors move by at most 5.5e-5 on chat sentences, median 8e-6). Older memdirs kept
float32 rows in `MODEL.f32`; that file is read as it is until the next rebuild rewrites it as
float16 (`rewrite`), so an upgrade re-embeds nothing. Each file's suffix names its row type,
so neither is ever read as the other.

The FAISS index is written whole only now and then (at rebuild, or when the delta grows);
vectors added since live in the *delta*, searched exactly with numpy. So appending one memory
never rewrites the index. The base index is an IndexIDMap2 over inner product (vectors are
L2-normalised, so this is cosine): exact flat over float16 vectors (the cache's own values)
below `hnsw_above` vectors, HNSW over 8-bit scalar-quantised ones above it (one byte per
dimension, each dimension's range trained on the vectors it holds). It only proposes
candidates: the reader scores them again with the cached vectors (reader.vector_hits). The
base is opened memory-mapped for reading (fast cold start); it is never written in place:
writers build a new file and rename it over the old one.

Both are mapped once per process and file (`shared_map`): in the resident service each thread
keeps its own open index, and a mapping per thread would hold the same pages once per thread
in its resident memory (100k memories: 3 × 67 MiB of vectors and 3 × 63 MiB of base index).
A file replaced or grown is a new file (its inode, size and time); the old mapping stays with
whoever still holds it and goes with the last of them.
"""

from __future__ import annotations

import os
import re
import threading
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memdir.archive_format.settings import VectorSettings

if TYPE_CHECKING:
    import numpy as np


def safe_name(model_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", model_id)


ROW_TYPES = {".f16": "<f2", ".f32": "<f4"}  # a vector file's suffix → its rows' numpy type

_mapped: weakref.WeakValueDictionary[tuple[object, ...], Any] = weakref.WeakValueDictionary()
_mapping = threading.Lock()


def shared_map(
    path: Path, stat: os.stat_result, open_it: Callable[[], Any], how: tuple[object, ...]
) -> Any:
    """The read-only mapping of the file at `path` as it is now (`stat`), opened `how` (what
    `open_it` makes of it) unless this process holds that one already: every open index of the
    process reads the same pages through it. Read-only use only (numpy memmaps in mode "r", a
    FAISS index read with IO_FLAG_READ_ONLY, whose searches may run side by side)."""
    key = (str(path), stat.st_ino, stat.st_size, stat.st_mtime_ns, *how)
    with _mapping:
        found = _mapped.get(key)
        if found is None:
            found = open_it()
            _mapped[key] = found
        return found


class VectorFile:
    """Rows of vectors in one flat file: row i starts at byte i * dim * width. New rows are
    float16 in `path` (`.f16`); `legacy` is an older version's float32 file (`.f32`): while it
    exists it holds the rows the catalog numbers, even beside a float16 file (an older memdir
    wrote it after a downgrade, or a rewrite stopped before the catalog committed), and it is
    read and appended to until `rewrite` replaces it."""

    def __init__(self, path: Path, dim: int, legacy: Path | None = None) -> None:
        self.path = path
        self.dim = dim
        self.legacy = legacy
        self._map: Any = None
        self._map_key: tuple[str, int, int] | None = None

    def _file(self) -> tuple[Path, str]:
        """The file the rows are in now, and their numpy type."""
        if self.legacy is not None and self.legacy.exists():
            return self.legacy, ROW_TYPES[self.legacy.suffix]
        return self.path, ROW_TYPES[self.path.suffix]

    def _row_bytes(self, dtype: str) -> int:
        return self.dim * int(dtype[-1])

    def count(self) -> int:
        path, dtype = self._file()
        try:
            return path.stat().st_size // self._row_bytes(dtype)
        except FileNotFoundError:
            return 0

    def append(self, vectors: np.ndarray) -> int:
        """Append rows; returns the first new row number. A torn row from a crash is cut off."""
        import numpy as np

        path, dtype = self._file()
        row_bytes = self._row_bytes(dtype)
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "ab") as handle:
            size = handle.seek(0, os.SEEK_END)
            start = size // row_bytes
            if size % row_bytes:
                handle.truncate(start * row_bytes)
            handle.write(np.ascontiguousarray(vectors, dtype=dtype).tobytes())
        return start

    def rows(self, numbers: list[int] | np.ndarray) -> np.ndarray:
        """These rows as float32."""
        import numpy as np

        wanted = np.asarray(numbers, dtype=np.int64)
        if not len(wanted):
            return np.zeros((0, self.dim), dtype=np.float32)
        table = self._mapped(int(wanted.max()) + 1)
        return np.asarray(table[wanted], dtype=np.float32)

    def _mapped(self, rows: int) -> np.ndarray:
        """The file memory-mapped, re-mapped only when it was replaced or is too short."""
        import numpy as np

        path, dtype = self._file()
        try:
            stat = path.stat()
        except FileNotFoundError:
            raise IndexError(f"vector row {rows - 1}: no vectors in {path} yet") from None
        key = (str(path), stat.st_ino, stat.st_size)
        if self._map is None or self._map_key != key or len(self._map) < rows:
            count = stat.st_size // self._row_bytes(dtype)
            if count < rows:
                raise IndexError(f"vector row {rows - 1} beyond the end of {path}")
            self._map = shared_map(path, stat, lambda: np.memmap(
                path, dtype=dtype, mode="r", shape=(count, self.dim)), (dtype, self.dim))  # fmt: skip
            self._map_key = key
        return self._map

    def rewrite(self, vectors: np.ndarray) -> None:
        """Replace the store (rebuild compaction: only vectors still referenced survive), as
        float16 in `path`; a legacy float32 file goes."""
        import numpy as np

        temp = self.path.with_name(self.path.name + ".tmp")
        temp.parent.mkdir(parents=True, exist_ok=True)
        dtype = ROW_TYPES[self.path.suffix]
        with open(temp, "wb") as handle:
            handle.write(np.ascontiguousarray(vectors, dtype=dtype).tobytes())
        os.replace(temp, self.path)
        if self.legacy is not None:
            self.legacy.unlink(missing_ok=True)

    def current(self) -> bool:
        """False while a legacy float32 file holds the rows (`rewrite` turns it into float16)."""
        return self.legacy is None or not self.legacy.exists()


class FaissIndex:
    """The FAISS base index file (IndexIDMap2 over flat float16 or 8-bit HNSW vectors)."""

    def __init__(self, path: Path, dim: int, settings: VectorSettings) -> None:
        self.path = path
        self.dim = dim
        self.settings = settings
        self._index: Any = None

    def _open(self) -> Any:
        if self._index is None:
            try:
                stat = self.path.stat()
            except FileNotFoundError:
                return None
            self._index = shared_map(self.path, stat, self._read, (self.settings.ef_search,))
        return self._index

    def _read(self) -> Any:
        import faiss

        faiss.omp_set_num_threads(1)  # as fast as two for single queries, kinder to the machine
        # MMAP_IFC maps the stored arrays in place; plain MMAP still reads an IDMap2/HNSW
        # file whole (100k vectors: 8 ms instead of 160 ms). Never add to it (see build).
        index: Any = faiss.read_index(
            str(self.path), faiss.IO_FLAG_MMAP_IFC | faiss.IO_FLAG_READ_ONLY
        )
        inner = faiss.downcast_index(index.index)
        if hasattr(inner, "hnsw"):
            inner.hnsw.efSearch = self.settings.ef_search
        return index

    def size(self) -> int:
        index = self._open()
        return int(index.ntotal) if index is not None else 0

    def kind(self) -> str:
        index = self._open()
        if index is None:
            return "none"
        import faiss

        return "hnsw" if hasattr(faiss.downcast_index(index.index), "hnsw") else "flat"

    def build(self, vectors: np.ndarray, iids: np.ndarray) -> None:
        """Write a new base index holding exactly these vectors, then swap it in."""
        import faiss
        import numpy as np

        faiss.omp_set_num_threads(os.cpu_count() or 1)
        inner: Any
        quantiser: Any = faiss.ScalarQuantizer  # (faiss's stubs type its constants as int)
        inner_product = faiss.METRIC_INNER_PRODUCT
        if len(vectors) > self.settings.hnsw_above:
            m = self.settings.hnsw_m
            inner = faiss.IndexHNSWSQ(self.dim, quantiser.QT_8bit, m, inner_product)
            inner.hnsw.efConstruction = self.settings.ef_construction
        else:
            inner = faiss.IndexScalarQuantizer(self.dim, quantiser.QT_fp16, inner_product)
        index = faiss.IndexIDMap2(inner)
        if len(vectors):
            rows = np.ascontiguousarray(vectors, dtype=np.float32)
            index.train(rows)  # 8 bits: each dimension's range, from exactly the vectors held
            index.add_with_ids(rows, iids.astype(np.int64))
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temp = self.path.with_name(self.path.name + ".tmp")
        faiss.write_index(index, str(temp))
        os.replace(temp, self.path)
        self._index = None

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)
        self._index = None

    def search(self, query: np.ndarray, k: int) -> list[tuple[int, float]]:
        index = self._open()
        if index is None or index.ntotal == 0 or k <= 0:
            return []
        scores, ids = index.search(query.reshape(1, -1), min(k, int(index.ntotal)))
        return [(int(i), float(s)) for i, s in zip(ids[0], scores[0], strict=True) if i >= 0]


def exact_search(
    query: np.ndarray, vectors: np.ndarray, iids: list[int], k: int
) -> list[tuple[int, float]]:
    """Exact inner-product top-k over a small matrix (the delta)."""
    import numpy as np

    if not iids or k <= 0:
        return []
    scores = vectors @ query.reshape(-1)
    top = np.argsort(-scores)[:k]
    return [(iids[i], float(scores[i])) for i in top]
