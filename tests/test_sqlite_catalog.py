"""The SQLite catalog (indexers/catalog.py) keeps the Catalog contract; its one `IN (...)`
helper binds at most CHUNK values per statement."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from contracts import CatalogContract, memory_line

from memdir.indexers.catalog import CHUNK, SqliteCatalog


class TestSqliteCatalog(CatalogContract):
    @pytest.fixture
    def opener(self, tmp_path: Path) -> Callable[[], SqliteCatalog]:
        return lambda: SqliteCatalog(tmp_path / "catalog.sqlite")


def test_lookups_are_chunked_below_the_parameter_limit(tmp_path: Path) -> None:
    catalog = SqliteCatalog(tmp_path / "catalog.sqlite")
    count = 2 * CHUNK + 1
    with catalog.transaction():
        for number in range(count):
            catalog.add_memory(memory_line(number), number, f"h{number}")
    statements: list[str] = []
    catalog.db.set_trace_callback(statements.append)
    found = catalog.memories_by_id(f"m-{number:06d}" for number in range(count))
    assert len(found) == count
    # one statement per chunk of at most CHUNK values (traced with the values filled in)
    assert len(statements) == 3
    assert [s.count("'m-") for s in statements] == [CHUNK, CHUNK, 1]
    catalog.close()
