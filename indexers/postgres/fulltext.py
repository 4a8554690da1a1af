"""Full text (backends.FullTextIndex) in PostgreSQL: one table per index and generation
(`fulltext_N`, `sessions_N` in the memdir's schema) with the Tantivy index's fields and a
`tsvector` of `text` and of `context` in the English configuration, each under a GIN index.

Ranking is `ts_rank_cd` (cover density) with length normalisation 1 (rank / (1 + log of the
document's length)), not BM25: PostgreSQL keeps no corpus statistics, so there is no inverse
document frequency and a rare word counts no more than a common one. The query is the
English lexemes of its words joined by OR, as Tantivy's lenient parser reads a query, so no
input is a syntax error. Text is lower-cased in Python before PostgreSQL sees it, so case
folding of non-ASCII letters does not depend on the database's locale.

Writes are staged in the instance and applied by `commit()` in one transaction (a savepoint
inside the catalog's, so an update's catalog rows and documents commit together).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from ..backends import Document, Iids, Span, TextHit
from .database import Database

_WORDS = re.compile(r"\w+")
_COLUMNS = {"text": "text_terms", "context": "context_terms"}
_HEADLINE = "StartSel=[, StopSel=], MinWords=12, MaxWords=30, ShortWord=2"

_TABLE = """
CREATE TABLE IF NOT EXISTS {s}.{table} (
    id TEXT PRIMARY KEY, iid BIGINT NOT NULL, text TEXT NOT NULL, type TEXT, source TEXT,
    status TEXT, persona TEXT[], session TEXT, time BIGINT NOT NULL,
    text_terms TSVECTOR NOT NULL, context_terms TSVECTOR NOT NULL
);
CREATE INDEX IF NOT EXISTS {text_index} ON {s}.{table} USING GIN (text_terms);
CREATE INDEX IF NOT EXISTS {context_index} ON {s}.{table} USING GIN (context_terms);
CREATE INDEX IF NOT EXISTS {iid_index} ON {s}.{table} (iid);
"""


def or_query(text: str) -> str:
    """The query's words for websearch_to_tsquery, any one of which may match."""
    return " or ".join(word for word in _WORDS.findall(text.lower()) if word != "or")


class PostgresFullText:
    """One full-text table (see the module docstring)."""

    def __init__(self, database: Database, table: str) -> None:
        self.db = database
        self.table = table
        self._staged: list[tuple[str, Any]] = []
        self._created = False

    def _names(self) -> dict[str, str]:
        return {"table": self.table, "text_index": f"{self.table}_text",
                "context_index": f"{self.table}_context", "iid_index": f"{self.table}_iid"}  # fmt: skip

    def create(self) -> None:
        if self._created or self.db.table_exists(self.table):
            self._created = True
            return
        with self.db.transaction():
            self.db.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (self.db.schema,))
            for statement in _TABLE.split(";"):
                if statement.strip():
                    self.db.execute(statement, **self._names())
        self._created = True

    @staticmethod
    def wipe(database: Database, table: str) -> None:
        """Drop the table (a rebuild starts the next generation empty)."""
        database.execute("DROP TABLE IF EXISTS {s}.{table}", table=table)

    def exists(self) -> bool:
        return self.db.table_exists(self.table)

    # writing --------------------------------------------------------------------------------
    def upsert(self, documents: Sequence[Document]) -> None:
        self._staged.append(("upsert", list(documents)))

    def delete(self, ids: Sequence[str]) -> None:
        self._staged.append(("delete", list(ids)))

    def rollback(self) -> None:
        self._staged = []

    def commit(self) -> None:
        staged, self._staged = self._staged, []
        if not staged:
            return
        self.create()
        with self.db.transaction():
            for action, items in staged:
                if action == "delete":
                    self.db.execute(
                        "DELETE FROM {s}.{table} WHERE id = ANY(%s)", (items,), table=self.table
                    )
                else:
                    self._insert(items)

    def _insert(self, documents: list[Document]) -> None:
        rows = []
        for fields in documents:
            text = fields["text"]
            context = fields.get("context") or text
            rows.append((
                fields["id"], int(fields.get("iid", -1)), text, fields.get("type"),
                fields.get("source"), fields.get("status"), list(fields.get("persona") or ()),
                fields.get("session"), int(fields["time"]), text.lower(), context.lower(),
            ))  # fmt: skip
        self.db.executemany(
            "INSERT INTO {s}.{table} (id, iid, text, type, source, status, persona, session,"
            " time, text_terms, context_terms) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s,"
            " to_tsvector('english', %s), to_tsvector('english', %s))"
            " ON CONFLICT (id) DO UPDATE SET iid = EXCLUDED.iid, text = EXCLUDED.text,"
            " type = EXCLUDED.type, source = EXCLUDED.source, status = EXCLUDED.status,"
            " persona = EXCLUDED.persona, session = EXCLUDED.session, time = EXCLUDED.time,"
            " text_terms = EXCLUDED.text_terms, context_terms = EXCLUDED.context_terms",
            rows,
            table=self.table,
        )

    # reading --------------------------------------------------------------------------------
    def count(self) -> int:
        if not self.exists():
            return 0
        return int(self.db.one("SELECT COUNT(*) FROM {s}.{table}", table=self.table)[0])

    def _ranked(
        self, text: str, limit: int, column: str, within: Iids, between: Span, snippets: bool
    ) -> list[Any]:
        query = or_query(text)
        if not query or limit <= 0 or within == [] or not self.exists():
            return []
        where = ""
        # in the order of their placeholders: the headline's options (select list), the
        # query's words (FROM), the filters, the limit
        params: list[Any] = [_HEADLINE, query] if snippets else [query]
        if within is not None:
            where += " AND d.iid = ANY(%s)"
            params.append([int(i) for i in within])
        if between is not None:
            where += " AND d.time >= %s AND d.time < %s"
            params.extend([int(between[0]), int(between[1])])
        params.append(limit)
        headline = ", ts_headline('english', d.text, q, %s)" if snippets else ", ''"
        return self.db.rows(
            "SELECT d.iid, d.id, ts_rank_cd(d.{column}, q, 1) AS score" + headline
            + " FROM {s}.{table} AS d, websearch_to_tsquery('english', %s) AS q"
            " WHERE d.{column} @@ q" + where + " ORDER BY score DESC, d.iid LIMIT %s",
            params,
            table=self.table,
            column=column,
        )  # fmt: skip

    def scores(
        self, text: str, limit: int, field: str = "text", within: Iids = None, between: Span = None
    ) -> dict[int, float]:
        rows = self._ranked(text, limit, _COLUMNS[field], within, between, snippets=False)
        return {int(iid): float(score) for iid, _, score, _ in rows}

    def search(self, text: str, k: int, snippets: bool = False) -> list[TextHit]:
        rows = self._ranked(text, k, "text_terms", None, None, snippets)
        return [TextHit(memory_id, float(score), snippet) for _, memory_id, score, snippet in rows]
