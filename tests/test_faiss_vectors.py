"""The FAISS vector index and the embedding cache file (indexers/vectors.py) keep the
VectorIndex and VectorRows contracts; the FAISS index both as a flat index and as HNSW."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from contracts import DIM, ROW_ATOL, VectorIndexContract, VectorRowsContract, unit_vectors

from memdir.indexers.vectors import FaissIndex, VectorFile, VectorSettings, written_by_older


class TestFlatFaissIndex(VectorIndexContract):
    @pytest.fixture
    def store(self, tmp_path: Path) -> VectorFile:
        return VectorFile(tmp_path / "vectors" / "model.f16", DIM)

    @pytest.fixture
    def opener(self, tmp_path: Path, store: VectorFile) -> Callable[[], FaissIndex]:
        return lambda: FaissIndex(tmp_path / "base.index", DIM, VectorSettings(), store)


class TestHnswFaissIndex(TestFlatFaissIndex):
    """The same contract with the graph from the first vector on (`hnsw_above` 0)."""

    @pytest.fixture
    def opener(self, tmp_path: Path, store: VectorFile) -> Callable[[], FaissIndex]:
        settings = VectorSettings(hnsw_above=0)
        return lambda: FaissIndex(tmp_path / "base.index", DIM, settings, store)

    def test_it_is_hnsw(self, index: FaissIndex, store: VectorFile) -> None:
        import numpy as np

        index.build(np.arange(5), self.cached(store, unit_vectors(5)))
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


def test_the_open_indexes_of_a_process_read_one_mapping_of_each_file(tmp_path: Path) -> None:
    """The service keeps an open index per thread: each file is mapped once for all of them
    (one copy of its pages in resident memory), and a file replaced or grown is mapped anew
    while the old mapping stays valid for whoever still reads it."""
    import threading

    import numpy as np

    vectors = unit_vectors(6)
    rows = [VectorFile(tmp_path / "model.f16", DIM) for _ in range(3)]
    rows[0].append(vectors[:4])
    first = [r.rows([0, 3]) for r in rows]
    assert all(np.allclose(found, vectors[[0, 3]], atol=ROW_ATOL) for found in first)
    maps = {id(r._map) for r in rows}
    assert len(maps) == 1
    old = rows[1]._map
    rows[0].append(vectors[4:])  # grown: a new mapping for the new rows
    assert np.allclose(rows[1].rows([5]), vectors[[5]], atol=ROW_ATOL)
    assert rows[1]._map is not old and rows[2].rows([5]) is not None
    assert rows[2]._map is rows[1]._map
    assert np.allclose(old[:4], vectors[:4].astype(np.float16))  # the old one still reads

    settings = VectorSettings(hnsw_above=0)
    builder = FaissIndex(tmp_path / "base.index", DIM, settings, rows[0])
    builder.build(np.arange(6), np.arange(6))
    readers = [FaissIndex(tmp_path / "base.index", DIM, settings,
                          VectorFile(tmp_path / "model.f16", DIM)) for _ in range(4)]  # fmt: skip
    found: list[list[int]] = [[] for _ in readers]

    def search(number: int) -> None:
        for row in range(6):
            found[number].append(readers[number].search(vectors[row], 1)[0][0])

    threads = [threading.Thread(target=search, args=(n,)) for n in range(len(readers))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert found == [list(range(6))] * len(readers)  # side by side, each its own answers
    assert len({id(reader._index) for reader in readers}) == 1
    assert readers[0]._index.rows is rows[2]._map  # the base's vectors: the cache's mapping
    shared = readers[0]._index
    builder.build(np.arange(3), np.arange(3))  # a new file under the same name
    fresh = FaissIndex(tmp_path / "base.index", DIM, settings, rows[0])
    assert fresh.size() == 3 and fresh._index is not shared
    assert readers[0].size() == 6  # an index opened before still reads the file it opened


@pytest.mark.parametrize("hnsw_above", [0, 1000])
def test_the_base_holds_no_copy_of_the_vectors(tmp_path: Path, hnsw_above: int) -> None:
    """The cache holds each vector once: the base file has none of its rows, only which
    memories each row is (and the graph)."""
    import numpy as np

    store = VectorFile(tmp_path / "model.f16", DIM)
    vectors = unit_vectors(300, 5)
    store.append(vectors)
    base = FaissIndex(tmp_path / "base.index", DIM, VectorSettings(hnsw_above=hnsw_above), store)
    base.build(np.arange(300), np.arange(300))
    written = (tmp_path / "base.index").read_bytes()
    assert not any(row.astype("<f2").tobytes() in written for row in vectors)
    assert [iid for iid, _ in base.search(vectors[123], 1)] == [123]


def test_a_base_over_rows_the_cache_no_longer_holds_is_a_damaged_cache(tmp_path: Path) -> None:
    """A rebuild renumbers the cache's rows: a base written over the old ones is never read
    with the new ones (the index is then discarded and rebuilt, as any damaged cache)."""
    import numpy as np

    from memdir.archive_format.errors import DamagedCacheError

    store = VectorFile(tmp_path / "model.f16", DIM)
    store.append(unit_vectors(40, 1))
    FaissIndex(tmp_path / "base.index", DIM, VectorSettings(), store).build(
        np.arange(40), np.arange(40)
    )
    store.append(unit_vectors(5, 2))  # appended rows leave the base's rows as they were
    assert FaissIndex(tmp_path / "base.index", DIM, VectorSettings(), store).size() == 40
    store.rewrite(store.rows(np.arange(44, -1, -1)))  # the same rows, renumbered
    base = FaissIndex(tmp_path / "base.index", DIM, VectorSettings(), store)
    assert base.size() == 40 and base.kind() == "flat"  # what it holds can still be told
    with pytest.raises(DamagedCacheError):
        base.search(unit_vectors(1)[0], 5)


def test_an_older_base_with_its_own_vectors_is_read_as_it_is(tmp_path: Path) -> None:
    """An older memdir's base (a FAISS IndexIDMap2 holding its own copy of the vectors by
    iid) answers until the next update writes the new one (tests/test_index.py)."""
    import faiss
    import numpy as np

    store = VectorFile(tmp_path / "model.f16", DIM)
    vectors = unit_vectors(30, 3)
    store.append(vectors)
    older = faiss.IndexIDMap2(faiss.IndexHNSWSQ(DIM, faiss.ScalarQuantizer.QT_8bit, 8,
                                                faiss.METRIC_INNER_PRODUCT))  # fmt: skip
    older.train(vectors)
    older.add_with_ids(vectors, np.arange(100, 130))
    faiss.write_index(older, str(tmp_path / "base.index"))
    base = FaissIndex(tmp_path / "base.index", DIM, VectorSettings(), store)
    assert written_by_older(tmp_path / "base.index")
    assert base.kind() == "hnsw" and base.size() == 30
    assert base.search(vectors[7], 1)[0][0] == 107
    base.build(np.arange(100, 130), np.arange(30))
    assert not written_by_older(tmp_path / "base.index")
    assert base.kind() == "flat" and base.search(vectors[7], 1)[0][0] == 107


@pytest.mark.parametrize("hnsw_above", [0, 1000])
def test_a_base_over_an_older_float32_cache_reads_its_rows_as_float32(
    tmp_path: Path, hnsw_above: int
) -> None:
    """While an older version's float32 file holds the rows (until the rebuild rewrites it), the
    base is written over those rows and reads them as they are."""
    import numpy as np

    folder = tmp_path / "vectors"
    folder.mkdir()
    vectors = unit_vectors(50, 7)
    (folder / "model.f32").write_bytes(vectors.astype("<f4").tobytes())
    store = VectorFile(folder / "model.f16", DIM, legacy=folder / "model.f32")
    base = FaissIndex(tmp_path / "base.index", DIM, VectorSettings(hnsw_above=hnsw_above), store)
    base.build(np.arange(100, 150), np.arange(50))
    hits = base.search(vectors[31], 3)
    assert hits[0][0] == 131 and hits[0][1] == pytest.approx(1.0, abs=1e-6)
    assert base.kind() == ("hnsw" if hnsw_above == 0 else "flat")
