"""The in-memory backends (indexers/memory_backend.py) keep every contract the Tantivy, FAISS
and SQLite backends keep: the protocols need nothing a file-less backend cannot do."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from contracts import (
    DIM,
    CatalogContract,
    FullTextContract,
    VectorIndexContract,
    VectorRowsContract,
)

from memdir.indexers.memory_backend import (
    CatalogState,
    MemoryCatalog,
    MemoryFullText,
    MemoryVectorIndex,
    MemoryVectorRows,
    VectorState,
)


class TestMemoryFullText(FullTextContract):
    @pytest.fixture
    def opener(self) -> Callable[[], MemoryFullText]:
        store: dict = {}
        return lambda: MemoryFullText(store)


class TestMemoryVectorIndex(VectorIndexContract):
    @pytest.fixture
    def store(self) -> MemoryVectorRows:
        return MemoryVectorRows(DIM)

    @pytest.fixture
    def opener(self, store: MemoryVectorRows) -> Callable[[], MemoryVectorIndex]:
        state = VectorState()
        return lambda: MemoryVectorIndex(store, state)


class TestMemoryVectorRows(VectorRowsContract):
    @pytest.fixture
    def opener(self) -> Callable[[], MemoryVectorRows]:
        state = VectorState()
        return lambda: MemoryVectorRows(DIM, state)


class TestMemoryCatalog(CatalogContract):
    @pytest.fixture
    def opener(self) -> Callable[[], MemoryCatalog]:
        state = CatalogState()
        return lambda: MemoryCatalog(state)
