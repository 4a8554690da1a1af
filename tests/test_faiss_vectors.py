"""The FAISS vector index and the embedding cache file (indexers/vectors.py) keep the
VectorIndex and VectorRows contracts; the FAISS index both as a flat index and as HNSW."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from contracts import DIM, ROW_ATOL, VectorIndexContract, VectorRowsContract, unit_vectors

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
        folder = tmp_path / "vectors"
        return lambda: VectorFile(folder / "model.f16", DIM, legacy=folder / "model.f32")

    def test_a_torn_row_is_cut_off_by_the_next_append(self, rows: VectorFile) -> None:
        import numpy as np

        rows.append(unit_vectors(2))
        with open(rows.path, "ab") as handle:
            handle.write(b"\x01\x02\x03")  # a crash in the middle of a row
        assert rows.count() == 2
        added = unit_vectors(1, 9)
        assert rows.append(added) == 2
        assert np.allclose(rows.rows([2]), added, rtol=0, atol=ROW_ATOL)

    def test_rows_are_stored_as_float16(self, rows: VectorFile) -> None:
        import numpy as np

        vectors = unit_vectors(3)
        rows.append(vectors)
        assert rows.path.stat().st_size == 3 * DIM * 2
        stored = np.frombuffer(rows.path.read_bytes(), dtype="<f2").reshape(3, DIM)
        assert np.array_equal(stored, vectors.astype(np.float16))


class TestLegacyVectorFile:
    """An older version's float32 file is read as float32 until a rewrite turns it into the
    float16 file: an upgraded memdir keeps its embeddings and never reads one file as the
    other."""

    def test_a_float32_file_is_read_and_extended_until_the_rewrite(self, tmp_path: Path) -> None:
        import numpy as np

        folder = tmp_path / "vectors"
        folder.mkdir()
        old, added = unit_vectors(3, 1), unit_vectors(1, 2)
        (folder / "model.f32").write_bytes(old.astype("<f4").tobytes())
        rows = VectorFile(folder / "model.f16", DIM, legacy=folder / "model.f32")
        assert rows.count() == 3
        assert np.array_equal(rows.rows([2, 0]), old[[2, 0]])  # exactly: read as float32
        assert rows.append(added) == 3 and not rows.path.exists()
        assert (folder / "model.f32").stat().st_size == 4 * DIM * 4
        rows.rewrite(rows.rows([3, 1]))
        assert not (folder / "model.f32").exists() and rows.path.stat().st_size == 2 * DIM * 2
        assert rows.count() == 2
        assert np.allclose(rows.rows([0, 1]), [added[0], old[1]], rtol=0, atol=ROW_ATOL)

    def test_a_float32_file_beside_the_float16_one_holds_the_rows(self, tmp_path: Path) -> None:
        """Both exist only when an older memdir wrote the float32 file after a downgrade, or a
        rewrite stopped before its catalog transaction committed: either way the catalog
        numbers the float32 file's rows."""
        import numpy as np

        folder = tmp_path / "vectors"
        rows = VectorFile(folder / "model.f16", DIM, legacy=folder / "model.f32")
        rows.append(unit_vectors(2, 1))
        newer = unit_vectors(5, 2)
        (folder / "model.f32").write_bytes(newer.tobytes())
        assert rows.count() == 5
        assert np.array_equal(rows.rows([4]), newer[4:])
        rows.rewrite(rows.rows([4]))
        assert not (folder / "model.f32").exists() and rows.count() == 1
