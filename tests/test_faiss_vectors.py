"""The FAISS vector index and the embedding cache file (indexers/vectors.py) keep the
VectorIndex and VectorRows contracts; the FAISS index both as a flat index and as HNSW."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from contracts import DIM, VectorIndexContract, VectorRowsContract, unit_vectors

from memdir.indexers.vectors import FaissIndex, VectorFile, VectorSettings


class TestFlatFaissIndex(VectorIndexContract):
    @pytest.fixture
    def opener(self, tmp_path: Path) -> Callable[[], FaissIndex]:
        return lambda: FaissIndex(tmp_path / "base.index", DIM, VectorSettings())


class TestHnswFaissIndex(VectorIndexContract):
    @pytest.fixture
    def opener(self, tmp_path: Path) -> Callable[[], FaissIndex]:
        settings = VectorSettings(hnsw_above=0)
        return lambda: FaissIndex(tmp_path / "base.index", DIM, settings)

    def test_it_is_hnsw(self, index: FaissIndex) -> None:
        import numpy as np

        index.build(unit_vectors(5), np.arange(5))
        assert index.kind() == "hnsw"


class TestVectorFile(VectorRowsContract):
    @pytest.fixture
    def opener(self, tmp_path: Path) -> Callable[[], VectorFile]:
        return lambda: VectorFile(tmp_path / "vectors" / "model.f32", DIM)

    def test_a_torn_row_is_cut_off_by_the_next_append(self, rows: VectorFile) -> None:
        import numpy as np

        rows.append(unit_vectors(2))
        with open(rows.path, "ab") as handle:
            handle.write(b"\x01\x02\x03")  # a crash in the middle of a row
        assert rows.count() == 2
        added = unit_vectors(1, 9)
        assert rows.append(added) == 2
        assert np.allclose(rows.rows([2]), added)
