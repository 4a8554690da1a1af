"""What recall needs from the index: typing Protocols and the scoring table it hands back.

Recall depends on this narrow surface, not on indexers/index.py: MemoryIndex satisfies it (and
builds its scoring table with relevance.build_table, imported lazily), and a fake index or
another backend can stand in."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import numpy as np

    from memdir.archive_format.memdir import Memdir

    from ..affect import Annotator
    from ..backends import CatalogMemory, CatalogReader, FullTextIndex
    from ..embedding import Embedder


@dataclass
class ScoringTable:
    """Every searchable memory as arrays, built once per process and index state."""

    iids: np.ndarray
    created: np.ndarray  # epoch seconds
    session_keys: np.ndarray  # the distinct session codes (name_code; 0: no session)
    session_of: np.ndarray  # each memory's index into session_keys
    speakers: np.ndarray  # name_code of who said each memory (0: nobody in particular)
    asks: np.ndarray  # the share of each memory's words in questions (questions.py)
    vectors: np.ndarray
    context: np.ndarray
    row_of_iid: np.ndarray  # iid → row, -1 when not in the table
    # (partners, paired), worked out on first use: a profile that weighs the adjacency pairs 0
    # (the default) never pays for them
    pairing: Callable[[], tuple[np.ndarray, np.ndarray]] = field(repr=False, compare=False)

    @cached_property
    def _pairs(self) -> tuple[np.ndarray, np.ndarray]:
        return self.pairing()

    @property
    def partners(self) -> np.ndarray:
        """The iid of the question each memory replies to (-1: none)."""
        return self._pairs[0]

    @property
    def paired(self) -> np.ndarray:
        """normalise(v_i + v_partner), for pair_semantic."""
        return self._pairs[1]

    def __len__(self) -> int:
        return len(self.iids)

    def rows(self, iids: list[int]) -> np.ndarray:
        """Table rows of these iids (-1 for those not in it)."""
        import numpy as np

        found = np.asarray(iids, dtype=np.int64)
        inside = found < len(self.row_of_iid)
        rows = np.full(len(found), -1, dtype=np.int64)
        rows[inside] = self.row_of_iid[found[inside]]
        return rows


class RecordTable(Protocol):
    """The fixed-size record of each memory (vector row, neighbours, time, session, speaker)."""

    def get(self, iids: np.ndarray) -> np.ndarray: ...


class RecallIndex(Protocol):
    """The index as recall uses it (indexers.index.MemoryIndex is one)."""

    memdir: Memdir

    @property
    def embedder(self) -> Embedder: ...

    @property
    def annotator(self) -> Annotator: ...

    @property
    def catalog(self) -> CatalogReader: ...

    @property
    def fulltext(self) -> FullTextIndex: ...  # BM25 over memories: scores()

    @property
    def sessions(self) -> FullTextIndex: ...  # BM25 over one document per session: scores()

    @property
    def memory_table(self) -> RecordTable: ...

    def follow_rebuilds(self) -> None: ...

    def scoring_table(self) -> ScoringTable | None: ...

    def vector_hits(self, vector: np.ndarray, k: int) -> list[tuple[int, float]]: ...

    def vector_matrix(self, iids: list[int]) -> tuple[np.ndarray, np.ndarray]: ...

    def vectors_for(self, memories: list[CatalogMemory]) -> dict[int, np.ndarray]: ...

    def affects_of(self, memories: list[CatalogMemory]) -> dict[str, dict[str, Any]]: ...

    def distilled_of(self, memories: list[CatalogMemory]) -> dict[str, dict[str, Any]]: ...
