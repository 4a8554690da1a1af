"""The Tantivy full-text index (indexers/fulltext.py) keeps the FullTextIndex contract."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from contracts import FullTextContract

from memdir.indexers.fulltext import TantivyIndex


class TestTantivyIndex(FullTextContract):
    @pytest.fixture
    def opener(self, tmp_path: Path) -> Callable[[], TantivyIndex]:
        return lambda: TantivyIndex(tmp_path / "tantivy-0")
