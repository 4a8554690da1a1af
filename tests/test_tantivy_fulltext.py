"""The Tantivy full-text index (indexers/fulltext.py) keeps the FullTextIndex contract."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from contracts import FullTextContract, document

from memdir.indexers.fulltext import TantivyIndex


class TestTantivyIndex(FullTextContract):
    @pytest.fixture
    def opener(self, tmp_path: Path) -> Callable[[], TantivyIndex]:
        return lambda: TantivyIndex(tmp_path / "tantivy-0")


def test_an_index_written_with_another_schema_starts_empty(tmp_path: Path) -> None:
    """A directory another memdir version wrote is a cache: reopened empty, not an error."""
    import tantivy

    builder = tantivy.SchemaBuilder()
    builder.add_text_field("id", stored=True)
    old = tantivy.Index(builder.build(), path=str(tmp_path))
    writer = old.writer()
    writer.add_document(tantivy.Document(id="m-1"))
    writer.commit()
    index = TantivyIndex(tmp_path)
    assert index.count() == 0
    index.upsert([document(1, "black coffee")])
    index.commit()
    assert index.count() == 1
