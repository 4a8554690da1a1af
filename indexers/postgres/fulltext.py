"""Full text (backends.FullTextIndex) in PostgreSQL: per index and generation (`fulltext_N`,
`sessions_N` in the memdir's schema) a documents table with the Tantivy index's fields, and
an inverted index beside it that BM25 reads without touching the documents:

  T            the documents (id, iid, text, the filter fields, each searchable field's length)
  T_postings   one row per (field, lexeme, document): its term frequency, the document's
               length in that field and its time; a btree on (field, lexeme) carries the rest,
               so a query's postings are one index range per lexeme
  T_terms      each (field, lexeme)'s document frequency
  T_stats      each field's document count and total length

The searchable fields are backends.TEXT_FIELDS: `text`, `context`, the meta-memory fields
`intent`, `rationale` and `evidence`, and `meta`, the three of them joined and ranked by BM25
as one field (as the memory backend does; Tantivy sums the three fields' BM25 instead), so its
scores are close to, not equal to, the local index's.

Ranking is BM25 (k1 = 1.2, b = 0.75, as Tantivy) computed in SQL, not `ts_rank_cd`: cover
density has no inverse document frequency, so a rare word counts no more than a common one,
and on LoCoMo dev it cost 5 points of R@5 (BENCHMARKS.md). Lexemes are PostgreSQL's English
configuration (`to_tsvector('english', …)`, whose positions give the term frequency); a
document's length is its number of words, stop words included (as Tantivy counts tokens).
A query is the English lexemes of its words, any of which may match (as Tantivy's lenient
parser reads a query), so no input is a syntax error. Text is lower-cased in Python before
PostgreSQL sees it, so case folding of non-ASCII letters does not depend on the database's
locale.

The statistics are live: every commit updates the postings, document frequencies, counts and
lengths of the documents it adds or removes, in one transaction (a savepoint inside the
catalog's, so an update's catalog rows and documents commit together). A rebuild writes a new
generation's tables and then vacuums them (`vacuum`), so their postings are read from the
index alone; later commits leave that to autovacuum. A new table's first commit (a rebuild's)
is a bulk load: documents by COPY, postings without their btrees, then the document
frequencies counted and each btree sorted once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..backends import META_FIELDS, TEXT_FIELDS, Document, Iids, Span, TextHit
from ..text import WORD as _WORDS
from .database import Database

FIELD_CODES = {field: code for code, field in enumerate(TEXT_FIELDS)}  # postings' `field`
_LENGTHS = {field: f"{field}_length" for field in TEXT_FIELDS}  # the documents' columns
K1, B = 1.2, 0.75
COMPANIONS = ("postings", "terms", "stats")  # T_postings, T_terms, T_stats
BATCH = 1000  # documents per INSERT of postings

# BM25 of the documents holding any of the query's lexemes: each lexeme's inverse document
# frequency from T_terms (once per lexeme: MATERIALIZED, in float8), then its postings (term
# frequency, length, time) from the btree.
_BM25 = f"""
WITH q AS (
    SELECT DISTINCT lexeme FROM unnest(tsvector_to_array(to_tsvector('english', %(words)s)))
        AS lexeme
), stats AS (
    SELECT GREATEST(documents, 1)::float8 AS n,
           GREATEST(length, 1)::float8 / GREATEST(documents, 1) AS average
    FROM {{s}}.{{stats}} WHERE field = %(name)s
), idf AS MATERIALIZED (
    SELECT t.lexeme, ln(1.0::float8 + (st.n - t.df + 0.5::float8) / (t.df + 0.5::float8))
           AS weight
    FROM {{s}}.{{terms}} AS t JOIN q ON t.lexeme = q.lexeme, stats AS st
    WHERE t.field = %(field)s AND t.df > 0
)
SELECT p.iid, SUM(
    idf.weight * p.tf * {K1 + 1}::float8
    / (p.tf + {K1}::float8 * ({1 - B}::float8 + {B}::float8 * p.dl / st.average))
) AS score
FROM idf JOIN {{s}}.{{postings}} AS p ON p.field = %(field)s AND p.lexeme = idf.lexeme,
     stats AS st
WHERE TRUE {{filters}}
GROUP BY p.iid ORDER BY score DESC, p.iid LIMIT %(limit)s
"""
_WITH_IDS = (
    "SELECT r.iid, d.id, r.score FROM ({ranked}) AS r JOIN {s}.{table} AS d"
    " ON d.iid = r.iid ORDER BY r.score DESC, r.iid"
)
_HEADLINE = "StartSel=[, StopSel=], MinWords=12, MaxWords=30, ShortWord=2"

_TABLE = (
    """
CREATE TABLE IF NOT EXISTS {s}.{table} (
    id TEXT PRIMARY KEY, iid BIGINT NOT NULL, text TEXT NOT NULL, type TEXT, source TEXT,
    status TEXT, persona TEXT[], session TEXT, time BIGINT NOT NULL,
    intent TEXT, rationale TEXT, evidence TEXT,
"""
    + ",\n".join(f"    {length} INTEGER NOT NULL" for length in _LENGTHS.values())
    + """
);
CREATE INDEX IF NOT EXISTS {iid_index} ON {s}.{table} (iid);
CREATE TABLE IF NOT EXISTS {s}.{postings} (
    field SMALLINT NOT NULL, lexeme TEXT COLLATE "C" NOT NULL, iid BIGINT NOT NULL,
    tf INTEGER NOT NULL, dl INTEGER NOT NULL, time BIGINT NOT NULL
);
CREATE TABLE IF NOT EXISTS {s}.{terms} (
    field SMALLINT NOT NULL, lexeme TEXT COLLATE "C" NOT NULL, df INTEGER NOT NULL,
    PRIMARY KEY (field, lexeme)
);
CREATE TABLE IF NOT EXISTS {s}.{stats} (
    field TEXT PRIMARY KEY, documents BIGINT NOT NULL, length BIGINT NOT NULL
);
INSERT INTO {s}.{stats} (field, documents, length)
    SELECT unnest(%(fields)s::text[]), 0, 0 ON CONFLICT (field) DO NOTHING;
"""
)

# The postings' btrees, made by the first commit that writes postings, after loading them
# (a rebuild's bulk load: one sort per btree instead of an insertion per posting).
_INDEXES = """
CREATE INDEX IF NOT EXISTS {lexeme_index} ON {s}.{postings} (field, lexeme)
    INCLUDE (iid, tf, dl, time);
CREATE INDEX IF NOT EXISTS {document_index} ON {s}.{postings} (iid)
"""

_COPY = (
    "COPY {s}.{table} (id, iid, text, type, source, status, persona, session, time,"
    " intent, rationale, evidence, " + ", ".join(_LENGTHS.values()) + ") FROM STDIN (FORMAT BINARY)"
)
_COPY_TYPES = ["text", "int8", "text", "text", "text", "text", "text[]", "text", "int8",
               "text", "text", "text", *["int4"] * len(_LENGTHS)]  # fmt: skip

# The postings of a batch of (field, iid, lowered text, length, time), and the document
# frequencies they add.
_POSTINGS = """
    SELECT b.field, u.lexeme, b.iid, COALESCE(array_length(u.positions, 1), 1), b.dl, b.time
    FROM unnest(%s::int2[], %s::int8[], %s::text[], %s::int4[], %s::int8[])
        AS b(field, iid, body, dl, time), unnest(to_tsvector('english', b.body)) AS u
"""
_POST = (
    """
WITH added AS (
    INSERT INTO {s}.{postings} (field, lexeme, iid, tf, dl, time)"""
    + _POSTINGS
    + """
    RETURNING field, lexeme
)
INSERT INTO {s}.{terms} AS t (field, lexeme, df)
SELECT field, lexeme, COUNT(*) FROM added GROUP BY field, lexeme
ON CONFLICT (field, lexeme) DO UPDATE SET df = t.df + EXCLUDED.df
"""
)
# A bulk load (the postings' btrees not made yet): the postings alone, their frequencies
# counted once at the end of the commit.
_LOAD = "INSERT INTO {s}.{postings} (field, lexeme, iid, tf, dl, time)" + _POSTINGS
_COUNT_TERMS = (
    "INSERT INTO {s}.{terms} (field, lexeme, df)"
    " SELECT field, lexeme, COUNT(*) FROM {s}.{postings} GROUP BY field, lexeme"
)

# The postings of removed documents, and the document frequencies they took. A lexeme whose
# frequency falls to 0 keeps its row (it matches nothing) until the next rebuild.
_UNPOST = """
WITH gone AS (
    DELETE FROM {s}.{postings} WHERE iid = ANY(%s) RETURNING field, lexeme
), counted AS (
    SELECT field, lexeme, COUNT(*) AS n FROM gone GROUP BY field, lexeme
)
UPDATE {s}.{terms} AS t SET df = t.df - c.n FROM counted AS c
WHERE t.field = c.field AND t.lexeme = c.lexeme
"""

_DELETE = "DELETE FROM {s}.{table} WHERE id = ANY(%s) RETURNING iid, " + ", ".join(
    _LENGTHS.values()
)

_ADD_STATS = (
    "UPDATE {s}.{stats} AS st SET documents = st.documents + c.documents,"
    " length = st.length + c.length"
    " FROM unnest(%s::text[], %s::int8[], %s::int8[]) AS c(field, documents, length)"
    " WHERE st.field = c.field"
)


def or_query(text: str) -> str:
    """The query's words for websearch_to_tsquery (snippets), any one of which may match."""
    return " or ".join(word for word in _WORDS.findall(text.lower()) if word != "or")


def _bodies(fields: Document) -> dict[str, str]:
    """What each searchable field of a document holds (context defaults to the text)."""
    meta = {name: str(fields.get(name) or "") for name in META_FIELDS}
    bodies = {"text": fields["text"], "context": fields.get("context") or fields["text"]}
    bodies.update(meta)
    bodies["meta"] = " ".join(value for value in meta.values() if value)
    return bodies


class PostgresFullText:
    """One full-text table and its inverted index (see the module docstring)."""

    def __init__(self, database: Database, table: str) -> None:
        self.db = database
        self.table = table
        self._staged: list[tuple[str, Any]] = []
        self._created = False

    def _names(self) -> dict[str, str]:
        names = {"table": self.table, "iid_index": f"{self.table}_iid",
                 "lexeme_index": f"{self.table}_lexeme",
                 "document_index": f"{self.table}_document"}  # fmt: skip
        names.update({part: f"{self.table}_{part}" for part in COMPANIONS})
        return names

    def _layout(self) -> tuple[bool, bool]:
        """Whether the documents table exists, and whether its inverted index does too."""
        found = self.db.one(
            "SELECT to_regclass(%s) IS NOT NULL, to_regclass(%s) IS NOT NULL",
            (f'"{self.db.schema}"."{self.table}"', f'"{self.db.schema}"."{self.table}_postings"'),
        )
        return bool(found[0]), bool(found[1])

    def create(self) -> None:
        if self._created:
            return
        exists, current = self._layout()
        if exists and current:
            self._created = True
            return
        with self.db.schema_lock():
            exists, current = self._layout()  # another process may have just done it
            # A table of an older layout (tsvector columns, no postings) is a cache: it starts
            # again empty, and the updater, seeing fewer documents than the catalog has
            # searchable memories, rebuilds the index.
            if exists and not current:
                self.wipe(self.db, self.table)
            for statement in _TABLE.split(";"):
                if statement.strip():
                    params = {"fields": list(TEXT_FIELDS)} if "%(" in statement else {}
                    self.db.execute(statement, params, **self._names())
        self._created = True

    @staticmethod
    def tables(table: str) -> list[str]:
        """The documents table and its companions."""
        return [table, *(f"{table}_{part}" for part in COMPANIONS)]

    @staticmethod
    def wipe(database: Database, table: str) -> None:
        """Drop the table and its inverted index (a rebuild starts the next generation empty)."""
        for name in PostgresFullText.tables(table):
            database.drop_table(name)

    def exists(self) -> bool:
        """Whether the table is there (known once created: a reader then skips the look-up;
        a table dropped under it later is a clear error, see database.py)."""
        if not self._created:
            self._created = all(self._layout())
        return self._created

    def vacuum(self) -> None:
        """VACUUM ANALYZE the tables: the planner learns their sizes, and the visibility map
        lets BM25 read postings from the btree alone. Not inside a transaction (then it is
        left to autovacuum)."""
        if self.db.in_transaction() or not self.exists():
            return
        for name in self.tables(self.table):
            self.db.execute("VACUUM (ANALYZE) {s}.{table}", table=name)

    # writing --------------------------------------------------------------------------------
    def upsert(self, documents: Sequence[Document]) -> None:
        self._staged.append(("upsert", list(documents)))

    def delete(self, ids: Sequence[str]) -> None:
        self._staged.append(("delete", list(ids)))

    def replace_all(self, documents: Sequence[Document]) -> None:
        self._staged.append(("clear", []))
        self.upsert(documents)

    def replaced(self) -> int:
        return 0  # the statistics are those of the live documents, kept by every commit

    def rollback(self) -> None:
        self._staged = []

    def commit(self) -> None:
        staged, self._staged = self._staged, []
        if not staged:
            return
        self.create()
        names = self._names()
        with self.db.transaction():
            # Before the first postings their btrees are not made yet (a rebuild's generation
            # starts so): this commit loads the postings in bulk, without document frequencies
            # per batch, then counts the frequencies and sorts each btree once.
            bulk = not self.db.table_exists(names["lexeme_index"])
            for action, items in staged:
                if action == "clear":
                    self._clear(names)
                elif action == "delete":
                    self._remove(items, names)
                else:
                    latest = {fields["id"]: fields for fields in items}  # the last one wins
                    self._remove(list(latest), names)
                    self._insert(list(latest.values()), names, bulk)
            if bulk:
                self.db.execute("DELETE FROM {s}.{terms}", **names)
                self.db.execute(_COUNT_TERMS, **names)
                for statement in _INDEXES.split(";"):
                    self.db.execute(statement, **names)

    def _clear(self, names: dict[str, str]) -> None:
        """Delete every document (replace_all); DELETE, not TRUNCATE: readers keep their
        snapshot instead of waiting."""
        for table in ("table", "postings", "terms"):
            self.db.execute("DELETE FROM {s}.{name}", name=names[table])
        self.db.execute("UPDATE {s}.{stats} SET documents = 0, length = 0", **names)

    def _remove(self, ids: list[str], names: dict[str, str]) -> None:
        """Delete documents with their postings, frequencies and statistics."""
        if not ids:
            return
        gone = self.db.rows(_DELETE, (ids,), **names)
        if not gone:
            return
        self.db.execute(_UNPOST, ([int(row[0]) for row in gone],), **names)
        lengths = [-sum(int(row[1 + n]) for row in gone) for n in range(len(TEXT_FIELDS))]
        self._add_stats(-len(gone), lengths, names)

    def _insert(self, documents: list[Document], names: dict[str, str], bulk: bool) -> None:
        """Add documents: their rows (COPY), postings, frequencies (unless `bulk`: counted at
        the end of the commit) and statistics."""
        statement = _LOAD if bulk else _POST
        totals = [0] * len(TEXT_FIELDS)
        for start in range(0, len(documents), BATCH):
            rows, postings = [], []
            for fields in documents[start : start + BATCH]:
                iid, time = int(fields.get("iid", -1)), int(fields["time"])
                bodies = _bodies(fields)
                lengths = [len(_WORDS.findall(bodies[field])) for field in TEXT_FIELDS]
                rows.append((
                    fields["id"], iid, fields["text"], fields.get("type"), fields.get("source"),
                    fields.get("status"), list(fields.get("persona") or ()),
                    fields.get("session"), time,
                    *(bodies[name] or None for name in META_FIELDS), *lengths,
                ))  # fmt: skip
                for code, (field, length) in enumerate(zip(TEXT_FIELDS, lengths, strict=True)):
                    totals[code] += length
                    if length:
                        postings.append((code, iid, bodies[field].lower(), length, time))
            self.db.copy(_COPY, rows, _COPY_TYPES, **names)
            if postings:
                columns = [list(column) for column in zip(*postings, strict=True)]
                self.db.execute(statement, columns, **names)
        self._add_stats(len(documents), totals, names)

    def _add_stats(self, documents: int, lengths: list[int], names: dict[str, str]) -> None:
        self.db.execute(
            _ADD_STATS, (list(TEXT_FIELDS), [documents] * len(lengths), lengths), **names
        )

    # reading --------------------------------------------------------------------------------
    def count(self) -> int:
        if not self.exists():
            return 0
        found = self.db.one(
            "SELECT documents FROM {s}.{stats} WHERE field = 'text'", **self._names()
        )
        return int(found[0]) if found else 0

    def _statement(
        self, words: str, limit: int, field: str, within: Iids, between: Span, with_ids: bool
    ) -> tuple[str, dict[str, Any]]:
        """The BM25 statement (a template for Database) and its parameters."""
        if field not in FIELD_CODES:
            raise ValueError(f"no full-text field {field!r} (one of {', '.join(TEXT_FIELDS)})")
        params: dict[str, Any] = {
            "words": words, "name": field, "field": FIELD_CODES[field], "limit": limit,
        }  # fmt: skip
        filters = ""
        if within is not None:
            filters += " AND p.iid = ANY(%(within)s)"
            params["within"] = [int(i) for i in within]
        if between is not None:
            filters += " AND p.time >= %(start)s AND p.time < %(end)s"
            params.update(start=int(between[0]), end=int(between[1]))
        statement = _BM25.replace("{filters}", filters)
        if with_ids:
            statement = _WITH_IDS.replace("{ranked}", statement)
        return statement, params

    def _ranked(
        self, text: str, limit: int, field: str, within: Iids, between: Span, with_ids: bool
    ) -> list[Any]:
        """(iid, BM25) of the best `limit` documents, best first ((iid, id, BM25) with ids)."""
        words = " ".join(_WORDS.findall(text.lower()))
        if not words or limit <= 0 or within == [] or not self.exists():
            return []
        statement, params = self._statement(words, limit, field, within, between, with_ids)
        return self.db.rows(statement, params, **self._names())

    def scores(
        self, text: str, limit: int, field: str = "text", within: Iids = None, between: Span = None
    ) -> dict[int, float]:
        rows = self._ranked(text, limit, field, within, between, with_ids=False)
        return {int(iid): float(score) for iid, score in rows}

    def search(
        self, text: str, k: int, snippets: bool = False, field: str = "text"
    ) -> list[TextHit]:
        """As `scores`, by memory id; a snippet is of `field` (of the text for "context" and
        "meta", as the Tantivy index shows them)."""
        rows = self._ranked(text, k, field, None, None, with_ids=True)
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
