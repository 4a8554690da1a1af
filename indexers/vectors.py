"""Vectors: an append-only float32 file per embedding model (backends.VectorRows), and a FAISS
index over it (backends.VectorIndex).

The FAISS index is written whole only now and then (at rebuild, or when the delta grows);
vectors added since live in the *delta*, searched exactly with numpy. So appending one memory
never rewrites the index. The base index is an IndexIDMap2 over inner product (vectors are
L2-normalised, so this is cosine): exact flat below `hnsw_above` vectors, HNSW above it. The
base is opened memory-mapped for reading (fast cold start); it is never written in place:
writers build a new file and rename it over the old one.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memdir.archive_format.settings import VectorSettings

if TYPE_CHECKING:
    import numpy as np


def safe_name(model_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", model_id)


class VectorFile:
    """Rows of float32 vectors in one flat file: row i starts at byte i * dim * 4."""

    def __init__(self, path: Path, dim: int) -> None:
        self.path = path
        self.dim = dim
        self.row_bytes = dim * 4
        self._map: Any = None
        self._map_key: tuple[int, int] | None = None

    def count(self) -> int:
        try:
            return self.path.stat().st_size // self.row_bytes
        except FileNotFoundError:
            return 0

    def append(self, vectors: np.ndarray) -> int:
        """Append rows; returns the first new row number. A torn row from a crash is cut off."""
        import numpy as np

        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "ab") as handle:
            size = handle.seek(0, os.SEEK_END)
            start = size // self.row_bytes
            if size % self.row_bytes:
                handle.truncate(start * self.row_bytes)
            handle.write(np.ascontiguousarray(vectors, dtype=np.float32).tobytes())
        return start

    def rows(self, numbers: list[int] | np.ndarray) -> np.ndarray:
        import numpy as np

        wanted = np.asarray(numbers, dtype=np.int64)
        if not len(wanted):
            return np.zeros((0, self.dim), dtype=np.float32)
        table = self._mapped(int(wanted.max()) + 1)
        return np.asarray(table[wanted], dtype=np.float32)

    def _mapped(self, rows: int) -> np.ndarray:
        """The file memory-mapped, re-mapped only when it was replaced or is too short."""
        import numpy as np

        try:
            stat = self.path.stat()
        except FileNotFoundError:
            raise IndexError(f"vector row {rows - 1}: no vectors in {self.path} yet") from None
        key = (stat.st_ino, stat.st_size)
        if self._map is None or self._map_key != key or len(self._map) < rows:
            count = stat.st_size // self.row_bytes
            if count < rows:
                from memdir.archive_format.errors import DamagedCacheError

                # the memory table points past the store: one of the two is damaged
                raise DamagedCacheError(f"vector row {rows - 1} beyond the end of {self.path}")
            self._map = np.memmap(self.path, dtype=np.float32, mode="r", shape=(count, self.dim))
            self._map_key = key
        return self._map

    def rewrite(self, vectors: np.ndarray) -> None:
        """Replace the store (rebuild compaction: only vectors still referenced survive)."""
        import numpy as np

        temp = self.path.with_name(self.path.name + ".tmp")
        temp.parent.mkdir(parents=True, exist_ok=True)
        with open(temp, "wb") as handle:
            handle.write(np.ascontiguousarray(vectors, dtype=np.float32).tobytes())
        os.replace(temp, self.path)


class FaissIndex:
    """The FAISS base index file (IndexIDMap2 over flat IP or HNSW)."""

    def __init__(self, path: Path, dim: int, settings: VectorSettings) -> None:
        self.path = path
        self.dim = dim
        self.settings = settings
        self._index: Any = None

    def _open(self) -> Any:
        if self._index is None and self.path.exists():
            import faiss

            faiss.omp_set_num_threads(1)  # as fast as two for single queries, kinder to the machine
            # MMAP_IFC maps the stored arrays in place; plain MMAP still reads an IDMap2/HNSW
            # file whole (100k vectors: 8 ms instead of 160 ms). Never add to it (see build).
            self._index = faiss.read_index(
                str(self.path), faiss.IO_FLAG_MMAP_IFC | faiss.IO_FLAG_READ_ONLY
            )
            inner = faiss.downcast_index(self._index.index)
            if hasattr(inner, "hnsw"):
                inner.hnsw.efSearch = self.settings.ef_search
        return self._index

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
        if len(vectors) > self.settings.hnsw_above:
            inner = faiss.IndexHNSWFlat(self.dim, self.settings.hnsw_m, faiss.METRIC_INNER_PRODUCT)
            inner.hnsw.efConstruction = self.settings.ef_construction
        else:
            inner = faiss.IndexFlatIP(self.dim)
        index = faiss.IndexIDMap2(inner)
        if len(vectors):
            index.add_with_ids(
                np.ascontiguousarray(vectors, dtype=np.float32), iids.astype(np.int64)
            )
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
