"""Vectors: an append-only float16 file per embedding model (backends.VectorRows), and a FAISS
index over it (backends.VectorIndex).

The file is the embedding cache: float16 rows, read back as float32 (cosines between MiniLM's
unit vectors move by at most 5.5e-5 on chat sentences, median 8e-6). Older memdirs kept
float32 rows in `MODEL.f32`; that file is read as it is until the next rebuild rewrites it as
float16 (`rewrite`), so an upgrade re-embeds nothing. Each file's suffix names its row type,
so neither is ever read as the other.

The vector base (`faiss/base.index`) is written whole only now and then (at rebuild, or when
the delta grows); vectors added since live in the *delta*, searched exactly with numpy. So
appending one memory never rewrites the base. The cache holds each vector once: the base keeps
no copy of its own, but which memories each cache row is, and above `hnsw_above` memories an
HNSW graph (FAISS, `hnsw_m` links a node) over the cache's rows whose storage, when the base is
opened, is a view of the cache file's own mapping (float16, the values the reader scores with;
inner product, and vectors are L2-normalised, so this is cosine). Below that, FAISS searches
the cache rows exactly (flat). Rows that are no memory of the base (a superseded memory's, a
forgotten one's until the next rebuild) are linked in the graph but never returned. The
base records a fingerprint of the rows it was written over, so it is never read with other
rows (a rebuild renumbers them). It is never written in place: writers build a new file and
rename it over the old one. An older memdir's base (an IndexIDMap2 with its own copy of the
vectors, 8-bit above `hnsw_above`) is read as it is until the next update writes it again;
nothing is embedded again for it.

Both are mapped once per process and file (`shared_map`): in the resident service each thread
keeps its own open index, and a mapping per thread would hold the same pages once per thread
in its resident memory (100k memories: 3 × 67 MiB of vectors and, when the base had its own
copy, 3 × 63 MiB of base index).
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

from memdir.archive_format.errors import DamagedCacheError
from memdir.archive_format.settings import VectorSettings

if TYPE_CHECKING:
    import numpy as np


def safe_name(model_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", model_id)


ROW_TYPES = {".f16": "<f2", ".f32": "<f4"}  # a vector file's suffix → its rows' numpy type

_mapped: weakref.WeakValueDictionary[tuple[object, ...], Any] = weakref.WeakValueDictionary()
_mapping = threading.RLock()  # re-entrant: opening the base maps the cache


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


def plain(mapped: np.memmap[Any, Any]) -> np.ndarray:
    """A memory map as a plain array over the same pages (it keeps the map open): indexing a
    numpy memmap runs Python code on every look-up, several hundred of them in one recall."""
    import numpy as np

    return mapped.view(np.ndarray)


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
            self._map = shared_map(path, stat, lambda: plain(np.memmap(
                path, dtype=dtype, mode="r", shape=(count, self.dim))), (dtype, self.dim))  # fmt: skip
            self._map_key = key
        return self._map

    def row_type(self) -> str:
        """The numpy type of the rows in the file they are in now."""
        return self._file()[1]

    def mapping(self, rows: int) -> np.ndarray:
        """The file's rows as they are stored (at least `rows` of them), read-only and mapped
        once per process (`shared_map`): what the vector base reads instead of a copy."""
        import numpy as np

        if rows == 0:
            return np.zeros((0, self.dim), dtype=self.row_type())
        return self._mapped(rows)

    def fingerprint(self, rows: int) -> str:
        """A digest of the first `rows` rows that changes when they are replaced (a rebuild
        renumbers them): the first, the middle and the last row, and the count."""
        import hashlib

        digest = hashlib.blake2b(str(rows).encode("ascii"), digest_size=16)
        if rows:
            if self.count() < rows:
                return "short"
            table = self.mapping(rows)
            for row in sorted({0, rows // 2, rows - 1}):
                digest.update(table[row].tobytes())
        return digest.hexdigest()

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


BASE_MAGIC = b"memdir vector base 2\n"  # an older base.index is a plain FAISS file ("IxM2")
GRAPH_BATCH = 65536  # rows converted to float32 at a time while the graph is built


def written_by_older(path: Path) -> bool:
    """Whether the base file at `path` is an older memdir's (a FAISS file with its own copy of
    the vectors), which this one reads but writes no more (FileNotFoundError when none)."""
    with open(path, "rb") as handle:
        return handle.read(len(BASE_MAGIC)) != BASE_MAGIC


class FaissIndex:
    """The vector base over the embedding cache's rows (see the module docstring): a file of
    which memories each row is, and above `hnsw_above` memories the FAISS HNSW graph over
    the rows, whose storage is the cache file itself. An older memdir's base (a FAISS
    IndexIDMap2 with its own copy of the vectors) is read as it is until the next update
    writes it again (`outdated`)."""

    def __init__(self, path: Path, dim: int, settings: VectorSettings, store: VectorFile) -> None:
        self.path = path
        self.dim = dim
        self.settings = settings
        self.store = store
        self._index: Any = None

    def _open(self) -> Any:
        if self._index is None:
            try:
                stat = self.path.stat()
                legacy = written_by_older(self.path)
            except FileNotFoundError:
                return None
            read = self._read_legacy if legacy else lambda: OpenBase.read(self.path, self)
            self._index = shared_map(self.path, stat, read, (self.settings.ef_search,))
        return self._index

    def _read_legacy(self) -> Any:
        import faiss

        faiss.omp_set_num_threads(1)
        # MMAP_IFC maps the stored arrays in place (plain MMAP still reads an IDMap2 file whole)
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
        if isinstance(index, OpenBase):
            return index.kind
        import faiss

        return "hnsw" if hasattr(faiss.downcast_index(index.index), "hnsw") else "flat"

    def build(self, iids: np.ndarray, rows: np.ndarray) -> None:
        """Write a new base holding exactly these memories (`rows`: each one's cache row),
        then swap it in. Above `hnsw_above` memories its graph links every row the cache
        holds now (rows of no memory here are never returned)."""
        import numpy as np

        count = self.store.count()
        iids = np.asarray(iids, dtype=np.int64)
        rows = np.asarray(rows, dtype=np.int64)
        graph = b""
        if len(iids) > self.settings.hnsw_above:
            graph = self._graph(count)
        order = np.argsort(rows, kind="stable")
        offsets = np.searchsorted(rows[order], np.arange(count + 1)).astype("<i4")
        selected = np.packbits(np.diff(offsets) > 0, bitorder="little")
        header = {
            "kind": "hnsw" if graph else "flat",
            "rows": count,
            "row_type": self.store.row_type(),
            "cache": self.store.fingerprint(count),
        }
        sections = [offsets.tobytes(), iids[order].astype("<i4").tobytes(), selected.tobytes(),
                    graph]  # fmt: skip
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temp = self.path.with_name(self.path.name + ".tmp")
        with open(temp, "wb") as handle:
            handle.write(OpenBase.header(header, sections))
            for section in sections:
                handle.write(section)
                handle.write(b"\0" * (-len(section) % 8))
        os.replace(temp, self.path)
        self._index = None

    def _graph(self, count: int) -> bytes:
        """An HNSW graph over the cache's first `count` rows, without its vectors (a reader
        gives it the cache's own: OpenBase)."""
        import faiss
        import numpy as np

        faiss.omp_set_num_threads(os.cpu_count() or 1)
        quantiser: Any = faiss.ScalarQuantizer  # (faiss's stubs type its constants as int)
        index = faiss.IndexHNSWSQ(self.dim, quantiser.QT_fp16, self.settings.hnsw_m,
                                  faiss.METRIC_INNER_PRODUCT)  # fmt: skip
        index.hnsw.efConstruction = self.settings.ef_construction
        index.is_trained = True  # float16 needs no training
        table = self.store.mapping(count)
        for start in range(0, count, GRAPH_BATCH):
            index.add(np.asarray(table[start : start + GRAPH_BATCH], dtype=np.float32))
        writer = faiss.VectorIOWriter()
        faiss.write_index(index, writer, faiss.IO_FLAG_SKIP_STORAGE)
        return bytes(faiss.vector_to_array(writer.data))

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)
        self._index = None

    def search(self, query: np.ndarray, k: int) -> list[tuple[int, float]]:
        index = self._open()
        if isinstance(index, OpenBase) and index.stale:
            self._index = None  # opened while a rebuild replaced both files: once more
            index = self._open()
            if isinstance(index, OpenBase) and index.stale:
                raise DamagedCacheError(
                    f"the vector base {self.path} is not over the embedding cache's rows"
                )
        if index is None or index.ntotal == 0 or k <= 0:
            return []
        if isinstance(index, OpenBase):
            return index.search(query, k)
        scores, ids = index.search(query.reshape(1, -1), min(k, int(index.ntotal)))
        return [(int(i), float(s)) for i, s in zip(ids[0], scores[0], strict=True) if i >= 0]


class OpenBase:
    """A base file opened for reading (memory-mapped once per process: `shared_map`).

    The file: BASE_MAGIC, the length of a JSON header and the header (the kind, the cache rows
    it covers, their type and a fingerprint of them), then four sections 8-byte aligned: for
    each row r, offsets[r]:offsets[r + 1] into the memories' iids sorted by row; a bitmap of the
    rows with a memory; and the FAISS HNSW graph without its vectors (none for a flat base).
    The graph's vectors, and the flat base's, are a view of the cache's own mapping."""

    def __init__(self, kind: str, ntotal: int, offsets: Any, iids: Any, index: Any,
                 params: Any, rows: Any, keep: tuple[object, ...], stale: bool = False) -> None:  # fmt: skip
        self.kind = kind
        self.stale = stale  # not over the cache's rows as they are (see `read`)
        self.ntotal = ntotal  # memories in the base
        self.offsets = offsets
        self.iids = iids
        self.index = index  # over the rows
        self.params = params  # the search parameters: efSearch, the rows with a memory
        self.rows = rows  # the cache's rows, as the store maps them: the vectors searched
        self.keep = keep  # what else the FAISS objects point into

    @staticmethod
    def header(header: dict[str, Any], sections: list[bytes]) -> bytes:
        """The bytes before the sections, their places in the header (`sections`)."""
        import json

        size = len(BASE_MAGIC) + 8 + 4096
        places, at = [], size
        for section in sections:
            places.append([at, len(section)])
            at += len(section) + (-len(section) % 8)
        text = json.dumps({**header, "sections": places}).encode("utf-8")
        if len(text) > 4096:
            raise ValueError("vector base header too long")
        return BASE_MAGIC + len(text).to_bytes(8, "little") + text.ljust(4096, b" ")

    @classmethod
    def read(cls, path: Path, owner: FaissIndex) -> OpenBase:
        """The base at `path` over `owner.store`. It is `stale`, and searches nothing, when the
        cache does not hold the rows it was written over (another model's cache, or a rebuild
        replaced both in between)."""
        import json

        import faiss
        import numpy as np

        faiss.omp_set_num_threads(1)  # as fast as two for single queries, kinder to the machine
        swig: Any = faiss  # (faiss's stubs lack the zero-copy reader and the views)
        mapping = plain(np.memmap(path, dtype=np.uint8, mode="r"))
        length = int.from_bytes(bytes(mapping[len(BASE_MAGIC) : len(BASE_MAGIC) + 8]), "little")
        start = len(BASE_MAGIC) + 8
        header = json.loads(bytes(mapping[start : start + length]))
        (o, o_len), (i, i_len), (b, b_len), (g, g_len) = header["sections"]
        count = int(header["rows"])
        offsets = mapping[o : o + o_len].view("<i4")
        iids = mapping[i : i + i_len].view("<i4")
        selected = mapping[b : b + b_len]
        store = owner.store
        stale = (
            store.row_type() != header["row_type"] or store.fingerprint(count) != header["cache"]
        )
        if stale or not count:
            return cls(header["kind"], len(iids), offsets, iids, None, None, None, (mapping,),
                       stale=stale)  # fmt: skip
        rows = store.mapping(count)
        quantiser: Any = faiss.ScalarQuantizer
        storage: Any = (
            faiss.IndexScalarQuantizer(owner.dim, quantiser.QT_fp16, faiss.METRIC_INNER_PRODUCT)
            if header["row_type"] == "<f2"
            else faiss.IndexFlatIP(owner.dim)
        )
        raw = rows[:count].view(np.uint8).reshape(-1)
        storage.codes = swig.MaybeOwnedVectorUInt8.create_view(
            faiss.swig_ptr(raw), raw.size, storage.codes.owner
        )  # the cache's own pages, not a copy
        storage.ntotal = count
        index: Any = storage
        params: Any = faiss.SearchParameters()
        if g_len:
            reader = swig.ZeroCopyIOReader(faiss.swig_ptr(mapping[g : g + g_len]), g_len)
            index = faiss.read_index(reader, faiss.IO_FLAG_SKIP_STORAGE | faiss.IO_FLAG_READ_ONLY)
            index.storage = storage
            index.own_fields = False
            params = swig.SearchParametersHNSW()
            params.efSearch = owner.settings.ef_search
        selector = None
        if np.any(np.diff(offsets) == 0):  # some rows are no memory of the base's
            selector = faiss.IDSelectorBitmap(count, faiss.swig_ptr(selected))
            params.sel = selector
        return cls(header["kind"], len(iids), offsets, iids, index, params, rows,
                   (mapping, raw, storage, selector))  # fmt: skip

    def search(self, query: np.ndarray, k: int) -> list[tuple[int, float]]:
        """The best `k` (iid, inner product): rows from FAISS, each row's memories."""
        import numpy as np

        if self.index is None or k <= 0:
            return []
        vector = np.ascontiguousarray(query, dtype=np.float32).reshape(1, -1)
        scores, rows = self.index.search(vector, min(k, self.index.ntotal), params=self.params)
        found = rows[0] >= 0
        rows, scores = rows[0][found], scores[0][found]
        first, last = self.offsets[rows], self.offsets[rows + 1]
        if np.all(last - first == 1):  # each row one memory: the usual case, without a loop
            return list(zip(self.iids[first].tolist(), scores.tolist(), strict=True))[:k]
        hits: list[tuple[int, float]] = []
        for start, end, score in zip(first.tolist(), last.tolist(), scores.tolist(), strict=True):
            hits.extend((iid, score) for iid in self.iids[start:end].tolist())
        return hits[:k]


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
