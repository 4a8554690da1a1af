"""The memory table: what recall needs of each memory at scale, as fixed-size records by iid.

One record per catalog iid (the integer id FAISS and Tantivy also use) in one memory-mapped
file, `.memdir/index/memories-GENERATION.table`:

  row      the memory's row in the vector store (-1: none)
  near     the iids of its same-session neighbours within ±2 (-1 pads), for context scores
  created  epoch seconds
  session  name_code of its session (0: none), as in the sessions index
  speaker  name_code of the person who said it (0: nobody in particular)
  asks     the share of its words in questions (questions.py), for the `questions` weight

So a pool of candidates is scored with array look-ups instead of catalog queries. The table is
a cache like the rest of the index: the writer fills records for new iids before the catalog
commits them and rewrites neighbours in place; a rebuild renumbers every memory, so it writes
the next generation's file while readers keep the current one. The file is never shortened
under a reader's mapping. A missing or short file reads as empty records.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .vectors import plain

if TYPE_CHECKING:
    import numpy as np

CONTEXT = 2  # same-session neighbours on each side in a memory's context (docs/RECALL.md)
NEAR = 2 * CONTEXT


def name_code(name: str) -> int:
    """A session's or a person's number: 56 bits of a hash of the name, plus one (0 is none).
    Sessions are numbered so in the sessions index too, so their scores come back from a fast
    field instead of stored documents."""
    digest = hashlib.blake2b(name.encode("utf-8"), digest_size=7).digest()
    return int.from_bytes(digest, "big") + 1


def record_type() -> np.dtype[Any]:
    import numpy as np

    return np.dtype(
        [("row", "<i4"), ("near", "<i4", (NEAR,)), ("created", "<i8"), ("session", "<i8"),
         ("speaker", "<i8"), ("asks", "<f4")]
    )  # fmt: skip


class MemoryTable:
    """Fixed-size records by iid in one file (see the module docstring)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.dtype = record_type()
        self._map: Any = None
        self._map_key: tuple[int, int] | None = None

    def _empty(self, count: int) -> np.ndarray:
        import numpy as np

        records = np.zeros(count, dtype=self.dtype)
        records["row"] = -1
        records["near"] = -1
        return records

    def _mapped(self) -> np.ndarray:
        """The file mapped for reading, re-mapped only when it was replaced or has grown."""
        import numpy as np

        try:
            stat = self.path.stat()
        except FileNotFoundError:
            return self._empty(0)
        key = (stat.st_ino, stat.st_size)
        if self._map is None or self._map_key != key:
            count = stat.st_size // self.dtype.itemsize
            self._map = (
                plain(np.memmap(self.path, dtype=self.dtype, mode="r", shape=(count,)))
                if count
                else self._empty(0)
            )
            self._map_key = key
        return self._map  # type: ignore[no-any-return]

    def get(self, iids: np.ndarray) -> np.ndarray:
        """The records of these iids (empty records for unknown ones)."""

        table = self._mapped()
        found = self._empty(len(iids))
        inside = (iids >= 0) & (iids < len(table))
        found[inside] = table[iids[inside]]
        return found

    def exists(self) -> bool:
        return self.path.is_file()

    def __len__(self) -> int:
        """How many whole records the file holds."""
        try:
            return self.path.stat().st_size // self.dtype.itemsize
        except FileNotFoundError:
            return 0

    def clear(self) -> None:
        """Start empty: a new file swapped in, so a reader's mapping of the old one stays valid."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temp = self.path.with_name(self.path.name + ".tmp")
        temp.write_bytes(b"")
        os.replace(temp, self.path)

    def _writable(self, size: int) -> np.memmap[Any, Any]:
        """The file mapped for writing, grown with empty records to hold `size` records; a torn
        record from a crash is cut off first."""
        import numpy as np

        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "ab") as handle:
            count = handle.seek(0, os.SEEK_END) // self.dtype.itemsize
            handle.truncate(count * self.dtype.itemsize)
            if count < size:
                handle.write(self._empty(size - count).tobytes())
        count = max(count, size)
        return np.memmap(self.path, dtype=self.dtype, mode="r+", shape=(count,))

    def set(self, iids: list[int], **fields: Any) -> None:
        """Write these fields (arrays aligned with `iids`) of these records."""
        import numpy as np

        if not iids:
            return
        where = np.asarray(iids, dtype=np.int64)
        table = self._writable(int(where.max()) + 1)
        for name, values in fields.items():
            table[name][where] = values
        table.flush()

    def set_rows(self, rows: np.ndarray) -> None:
        """Replace every record's vector row (`rows` indexed by iid; after compaction)."""
        table = self._writable(len(rows))
        table["row"][:] = -1
        table["row"][: len(rows)] = rows
        table.flush()
