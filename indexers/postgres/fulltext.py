"""Full text (backends.FullTextIndex) in PostgreSQL: one table per index and generation
(`fulltext_N`, `sessions_N` in the memdir's schema) with the Tantivy index's fields and a
`tsvector` in the English configuration, each under a GIN index, for every searchable field
(backends.TEXT_FIELDS): `text`, `context`, the meta-memory fields `intent`, `rationale` and
`evidence`, and `meta`, the three of them together. `meta` is one tsvector of the three joined,
ranked by BM25 as one field (as the memory backend does; Tantivy sums the three fields' BM25
instead), so its scores are close to, not equal to, the local index's.

Ranking is BM25 (k1 = 1.2, b = 0.75, as Tantivy) computed in SQL, not `ts_rank_cd`: cover
density has no inverse document frequency, so a rare word counts no more than a common one,
and on LoCoMo dev it cost 5 points of R@5 (BENCHMARKS.md). A query's GIN match finds the
documents holding any of its lexemes; their tsvectors give each lexeme's term frequency
(its positions) and, counted over that same match, its document frequency; the document
count and total length come from a one-row statistics table that each commit refreshes. A
document's length is its number of words, stop words included (as Tantivy counts tokens).
The query is the English lexemes of its words joined by OR, as Tantivy's lenient parser reads
a query, so no input is a syntax error. Text is lower-cased in Python before PostgreSQL sees it, so case
folding of non-ASCII letters does not depend on the database's locale.

Writes are staged in the instance and applied by `commit()` in one transaction (a savepoint
inside the catalog's, so an update's catalog rows and documents commit together).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from ..backends import META_FIELDS, TEXT_FIELDS, Document, Iids, Span, TextHit
from .database import Database

_WORDS = re.compile(r"\w+")
# each searchable field: its tsvector and its length in words (the statistics table's row)
_COLUMNS = {field: (f"{field}_terms", f"{field}_length") for field in TEXT_FIELDS}
K1, B = 1.2, 0.75

# BM25 of the documents matching the query: `matched` has one row per (document, query lexeme
# it holds), `frequency` each lexeme's document frequency, `stats` N and the average length.
# Marking the query's lexemes (setweight) and keeping only those (ts_filter) before unnesting
# avoids a row per word of every matching document (10k memories: 3 s → see BENCHMARKS.md).
_BM25 = f"""
WITH q AS (
    SELECT websearch_to_tsquery('english', %(words)s) AS query,
           tsvector_to_array(to_tsvector('english', %(words)s)) AS lexemes
), matched AS (
    SELECT d.iid, d.id, d.time, d.{{length}} AS dl, u.lexeme,
           COALESCE(array_length(u.positions, 1), 1) AS tf
    FROM {{s}}.{{table}} AS d, q,
         unnest(ts_filter(setweight(d.{{column}}, 'A', q.lexemes), ARRAY['a']::"char"[])) AS u
    WHERE d.{{column}} @@ q.query
), frequency AS (
    SELECT lexeme, COUNT(*)::float8 AS df FROM matched GROUP BY lexeme
), stats AS (
    SELECT GREATEST(documents, 1)::float8 AS n, GREATEST(length, 1)::float8 / GREATEST(documents, 1)
           AS average
    FROM {{s}}.{{stats}} WHERE field = %(column)s
)
SELECT m.iid, m.id, SUM(
    ln(1.0 + (st.n - f.df + 0.5) / (f.df + 0.5))
    * m.tf * {K1 + 1}::float8 / (m.tf + {K1}::float8 * ({1 - B}::float8 + {B}::float8 * m.dl / st.average))
) AS score
FROM matched AS m JOIN frequency AS f USING (lexeme), stats AS st
WHERE TRUE {{filters}}
GROUP BY m.iid, m.id ORDER BY score DESC, m.iid LIMIT %(limit)s
"""
_HEADLINE = "StartSel=[, StopSel=], MinWords=12, MaxWords=30, ShortWord=2"

_TABLE = (
    """
CREATE TABLE IF NOT EXISTS {s}.{table} (
    id TEXT PRIMARY KEY, iid BIGINT NOT NULL, text TEXT NOT NULL, type TEXT, source TEXT,
    status TEXT, persona TEXT[], session TEXT, time BIGINT NOT NULL,
    intent TEXT, rationale TEXT, evidence TEXT,
"""
    + ",\n".join(
        f"    {terms} TSVECTOR NOT NULL, {length} INTEGER NOT NULL"
        for terms, length in _COLUMNS.values()
    )
    + """
);
CREATE TABLE IF NOT EXISTS {s}.{stats} (
    field TEXT PRIMARY KEY, documents BIGINT NOT NULL, length BIGINT NOT NULL
);
"""
    + "".join(
        f"CREATE INDEX IF NOT EXISTS {{{field}_index}} ON {{s}}.{{table}} USING GIN"
        f" ({field}_terms);\n"
        for field in TEXT_FIELDS
    )
    + "CREATE INDEX IF NOT EXISTS {iid_index} ON {s}.{table} (iid);\n"
)
# A table written before the last field was added (an older memdir) lacks its column: it is a
# cache, so create() drops it and starts it empty, and the updater, seeing fewer documents
# than the catalog has searchable memories, rebuilds the index.
_NEWEST_COLUMN = _COLUMNS["meta"][0]

# the statistics of every field, refreshed by each commit
_STATS = (
    "INSERT INTO {s}.{stats} (field, documents, length) "
    + " UNION ALL ".join(
        f"SELECT '{terms}', COUNT(*), COALESCE(SUM({length}), 0) FROM {{s}}.{{table}}"
        for terms, length in _COLUMNS.values()
    )
    + " ON CONFLICT (field) DO UPDATE SET documents = EXCLUDED.documents,"
    " length = EXCLUDED.length"
)

_INSERT = (
    "INSERT INTO {s}.{table} (id, iid, text, type, source, status, persona, session, time,"
    " intent, rationale, evidence, "
    + ", ".join(f"{terms}, {length}" for terms, length in _COLUMNS.values())
    + ") VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, "
    + ", ".join("to_tsvector('english', %s), %s" for _ in _COLUMNS)
    + ") ON CONFLICT (id) DO UPDATE SET "
    + ", ".join(
        f"{name} = EXCLUDED.{name}"
        for name in (
            "iid",
            "text",
            "type",
            "source",
            "status",
            "persona",
            "session",
            "time",
            *META_FIELDS,
            *(column for pair in _COLUMNS.values() for column in pair),
        )
    )
)


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
        names = {"table": self.table, "iid_index": f"{self.table}_iid",
                 "stats": f"{self.table}_stats"}  # fmt: skip
        names.update({f"{field}_index": f"{self.table}_{field}" for field in TEXT_FIELDS})
        return names

    def _layout(self) -> tuple[bool, bool]:
        """Whether the table exists, and whether it has every field's column."""
        found = self.db.one(
            "SELECT to_regclass(%s) IS NOT NULL, EXISTS (SELECT 1 FROM pg_attribute"
            " WHERE attrelid = to_regclass(%s) AND attname = %s AND NOT attisdropped)",
            (f'"{self.db.schema}"."{self.table}"',) * 2 + (_NEWEST_COLUMN,),
        )
        return bool(found[0]), bool(found[1])

    def create(self) -> None:
        if self._created:
            return
        exists, current = self._layout()
        if exists and current:
            self._created = True
            return
        with self.db.transaction():
            self.db.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (self.db.schema,))
            exists, current = self._layout()  # another process may have just done it
            if exists and not current:  # an older layout: a cache, so start it empty
                self.wipe(self.db, self.table)
            for statement in _TABLE.split(";"):
                if statement.strip():
                    self.db.execute(statement, **self._names())
        self._created = True

    @staticmethod
    def wipe(database: Database, table: str) -> None:
        """Drop the table (a rebuild starts the next generation empty)."""
        database.execute("DROP TABLE IF EXISTS {s}.{table}", table=table)
        database.execute("DROP TABLE IF EXISTS {s}.{table}", table=f"{table}_stats")

    def exists(self) -> bool:
        """Whether the table is there (known once created: a reader then skips the look-up;
        a table dropped under it later is a clear error, see database.py)."""
        if not self._created:
            self._created = self.db.table_exists(self.table)
        return self._created

    # writing --------------------------------------------------------------------------------
    def upsert(self, documents: Sequence[Document]) -> None:
        self._staged.append(("upsert", list(documents)))

    def delete(self, ids: Sequence[str]) -> None:
        self._staged.append(("delete", list(ids)))

    def replace_all(self, documents: Sequence[Document]) -> None:
        self._staged.append(("clear", []))
        self.upsert(documents)

    def replaced(self) -> int:
        return 0  # the statistics table is recomputed from the live rows at each commit

    def rollback(self) -> None:
        self._staged = []

    def commit(self) -> None:
        staged, self._staged = self._staged, []
        if not staged:
            return
        self.create()
        with self.db.transaction():
            for action, items in staged:
                if action == "clear":
                    self.db.execute("DELETE FROM {s}.{table}", table=self.table)
                elif action == "delete":
                    self.db.execute(
                        "DELETE FROM {s}.{table} WHERE id = ANY(%s)", (items,), table=self.table
                    )
                else:
                    self._insert(items)
            self.db.execute(_STATS, **self._names())

    def _insert(self, documents: list[Document]) -> None:
        rows = []
        for fields in documents:
            meta = {name: str(fields.get(name) or "") or None for name in META_FIELDS}
            bodies = {"text": fields["text"], "context": fields.get("context") or fields["text"]}
            bodies.update({name: value or "" for name, value in meta.items()})
            bodies["meta"] = " ".join(value for value in meta.values() if value)
            searched = []
            for field in _COLUMNS:
                searched += [bodies[field].lower(), len(_WORDS.findall(bodies[field]))]
            rows.append((
                fields["id"], int(fields.get("iid", -1)), fields["text"], fields.get("type"),
                fields.get("source"), fields.get("status"), list(fields.get("persona") or ()),
                fields.get("session"), int(fields["time"]), *meta.values(), *searched,
            ))  # fmt: skip
        self.db.executemany(_INSERT, rows, table=self.table)

    # reading --------------------------------------------------------------------------------
    def count(self) -> int:
        if not self.exists():
            return 0
        return int(self.db.one("SELECT COUNT(*) FROM {s}.{table}", table=self.table)[0])

    def _ranked(self, text: str, limit: int, field: str, within: Iids, between: Span) -> list[Any]:
        """(iid, id, BM25) of the best `limit` documents, best first."""
        words = or_query(text)
        if not words or limit <= 0 or within == [] or not self.exists():
            return []
        if field not in _COLUMNS:
            raise ValueError(f"no full-text field {field!r} (one of {', '.join(TEXT_FIELDS)})")
        column, length = _COLUMNS[field]
        params: dict[str, Any] = {"words": words, "column": column, "limit": limit}
        filters = ""
        if within is not None:
            filters += " AND m.iid = ANY(%(within)s)"
            params["within"] = [int(i) for i in within]
        if between is not None:
            filters += " AND m.time >= %(start)s AND m.time < %(end)s"
            params.update(start=int(between[0]), end=int(between[1]))
        return self.db.rows(
            _BM25.replace("{filters}", filters),
            params,
            column=column,
            length=length,
            **self._names(),
        )

    def scores(
        self, text: str, limit: int, field: str = "text", within: Iids = None, between: Span = None
    ) -> dict[int, float]:
        rows = self._ranked(text, limit, field, within, between)
        return {int(iid): float(score) for iid, _, score in rows}

    def search(
        self, text: str, k: int, snippets: bool = False, field: str = "text"
    ) -> list[TextHit]:
        """As `scores`, by memory id; a snippet is of `field` (of the text for "context" and
        "meta", as the Tantivy index shows them)."""
        rows = self._ranked(text, k, field, None, None)
        if not snippets or not rows:
            return [TextHit(memory_id, float(score), "") for _, memory_id, score in rows]
        shown = field if field in META_FIELDS else "text"
        found = dict(
            self.db.rows(
                "SELECT d.id, ts_headline('english', COALESCE(d.{shown}, d.text),"
                " websearch_to_tsquery('english', %s), %s) FROM {s}.{table} AS d"
                " WHERE d.id = ANY(%s)",
                (or_query(text), _HEADLINE, [memory_id for _, memory_id, _ in rows]),
                table=self.table,
                shown=shown,
            )
        )
        return [
            TextHit(memory_id, float(score), found.get(memory_id, ""))
            for _, memory_id, score in rows
        ]
