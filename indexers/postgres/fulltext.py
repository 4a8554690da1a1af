"""Full text (backends.FullTextIndex) in PostgreSQL: per index and generation (`fulltext_N`,
`sessions_N` in the memdir's schema) a documents table with the Tantivy index's fields, and
an inverted index beside it that BM25 reads without touching the documents:

  T            the documents (id, iid, text, the filter fields, each searchable field's length,
               and whether its postings are in T_lists)
  T_lists      one row per (field, lexeme): every posting of the lexeme in the field packed in
               one bytea (per document 16 bytes: iid, term frequency, the document's length in
               that field), the documents' times in another (8 bytes each) with their least
               and greatest, as the bulk load or the last merge left them
  T_postings   the postings written since then, one row each, with a btree on (field, lexeme)
  T_gone       the iids of documents removed since then whose postings are still in T_lists
  T_stats      each field's document count and total length, and the documents changed since
               the last merge (`changed`)

The searchable fields are backends.TEXT_FIELDS: `text`, `context`, the meta-memory fields
`intent`, `rationale` and `evidence`, and `meta`, the three of them joined and ranked by BM25
as one field (as the memory backend does; Tantivy sums the three fields' BM25 instead), so its
scores are close to, not equal to, the local index's.

Ranking is BM25 (k1 = 1.2, b = 0.75, as Tantivy), not `ts_rank_cd`: cover density has no
inverse document frequency, so a rare word counts no more than a common one, and on LoCoMo dev
it cost 5 points of R@5 (BENCHMARKS.md). One statement per query fetches the query's lexemes'
packed lists, their recent postings, the gone iids and the field's statistics (in binary), and
the client scores them with numpy, as Tantivy scores its posting blocks: an aggregate in SQL
over the same postings, one executor row each, cost ten times as much (BENCHMARKS.md). A
lexeme's document frequency is the length of its lists once the gone iids are taken out, so
it is exact after any writes without a table of frequencies. Lexemes are PostgreSQL's English
configuration (`to_tsvector('english', …)`, whose positions give the term frequency); a
document's length is its number of words, stop words included (as Tantivy counts tokens).
A query is the English lexemes of its words, any of which may match (as Tantivy's lenient
parser reads a query), so no input is a syntax error. Text is lower-cased in Python before
PostgreSQL sees it, so case folding of non-ASCII letters does not depend on the database's
locale.

Every commit keeps the index exact, in one transaction (a savepoint inside the catalog's, so
an update's catalog rows and documents commit together): a removed document leaves its rows in
T and T_postings and, if its postings were packed, its iid in T_gone; an added one gets rows
in T and T_postings; the statistics move by their counts and lengths. A new table's first
commit (a rebuild's) is a bulk load: documents by COPY; every distinct piece of their text
parsed once (a memory's text is also part of its neighbours' contexts: `_pieces`), the
postings summed and packed here and written into T_lists by COPY (BulkLists). When the
documents changed since the last merge pass `MERGE_RATIO` of the documents (and `MERGE_MIN`),
the commit merges: the lists are read, stripped of the gone iids, joined with the recent
postings and written again, so reading stays one fetch of packed bytes per lexeme. A rebuild
vacuums its new tables (`vacuum`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from ..backends import META_FIELDS, TEXT_FIELDS, Document, Iids, Span, TextHit
from ..text import WORD as _WORDS
from .database import Database

if TYPE_CHECKING:
    import numpy as np

FIELD_CODES = {field: code for code, field in enumerate(TEXT_FIELDS)}  # postings' `field`
_LENGTHS = {field: f"{field}_length" for field in TEXT_FIELDS}  # the documents' columns
K1, B = 1.2, 0.75
COMPANIONS = ("lists", "postings", "gone", "stats")  # T_lists, T_postings, …
LEGACY = ("terms",)  # companions of an older layout, dropped with the table
BATCH = 1000  # documents per INSERT of postings
CHANGED = "changed"  # the T_stats row counting documents changed since the last merge
MERGE_RATIO = 0.05  # merge once this share of the documents changed (added or removed) …
MERGE_MIN = 500  # … and at least this many
# A posting as packed in T_lists (its time apart), in the byte order of PostgreSQL's int8send
# and int4send; recent postings are packed with their time.
LISTED = [("iid", ">i8"), ("tf", ">i4"), ("dl", ">i4")]
POSTING = [*LISTED, ("time", ">i8")]
_LISTED = "int8send({p}iid) || int4send({p}tf) || int4send({p}dl)"
_PACKED = _LISTED + " || int8send({p}time)"
TIMES = ">i8"
DENSE_IIDS = 1 << 24  # iids below this are summed in an array indexed by iid (else sorted)

# Everything BM25 needs for one field and query, in one row: the field's statistics, the gone
# iids, and per lexeme its packed list, its times unless all are inside [start, end) (NULL
# then: most queries filter on nothing but "before now"), and its recent postings.
_FETCH = f"""
WITH q AS (
    SELECT DISTINCT lexeme FROM unnest(tsvector_to_array(to_tsvector('english', %(words)s)))
        AS lexeme
)
SELECT st.documents, st.length,
       (SELECT string_agg(int8send(g.iid), ''::bytea) FROM {{s}}.{{gone}} AS g),
       array_agg(COALESCE(l.postings, ''::bytea)),
       array_agg(CASE WHEN l.earliest >= %(start)s AND l.latest < %(end)s THEN NULL
                      ELSE COALESCE(l.times, ''::bytea) END),
       array_agg(COALESCE(r.postings, ''::bytea))
FROM q LEFT JOIN {{s}}.{{lists}} AS l ON l.field = %(field)s AND l.lexeme = q.lexeme
LEFT JOIN LATERAL (
    SELECT string_agg({_PACKED.format(p="p.")}, ''::bytea) AS postings
    FROM {{s}}.{{postings}} AS p WHERE p.field = %(field)s AND p.lexeme = q.lexeme
) AS r ON TRUE
CROSS JOIN {{s}}.{{stats}} AS st WHERE st.field = %(name)s
GROUP BY st.documents, st.length
"""
_HEADLINE = "StartSel=[, StopSel=], MinWords=12, MaxWords=30, ShortWord=2"

_TABLE = (
    """
CREATE TABLE IF NOT EXISTS {s}.{table} (
    id TEXT PRIMARY KEY, iid BIGINT NOT NULL, text TEXT NOT NULL, type TEXT, source TEXT,
    status TEXT, persona TEXT[], session TEXT, time BIGINT NOT NULL,
    intent TEXT, rationale TEXT, evidence TEXT, packed BOOLEAN NOT NULL,
"""
    + ",\n".join(f"    {length} INTEGER NOT NULL" for length in _LENGTHS.values())
    + """
);
CREATE INDEX IF NOT EXISTS {iid_index} ON {s}.{table} (iid);
CREATE TABLE IF NOT EXISTS {s}.{lists} (
    field SMALLINT NOT NULL, lexeme TEXT COLLATE "C" NOT NULL, postings BYTEA NOT NULL,
    times BYTEA NOT NULL, earliest BIGINT NOT NULL, latest BIGINT NOT NULL,
    PRIMARY KEY (field, lexeme)
);
ALTER TABLE {s}.{lists} ALTER COLUMN postings SET STORAGE EXTERNAL,
    ALTER COLUMN times SET STORAGE EXTERNAL;
CREATE TABLE IF NOT EXISTS {s}.{postings} (
    field SMALLINT NOT NULL, lexeme TEXT COLLATE "C" NOT NULL, iid BIGINT NOT NULL,
    tf INTEGER NOT NULL, dl INTEGER NOT NULL, time BIGINT NOT NULL
);
CREATE INDEX IF NOT EXISTS {lexeme_index} ON {s}.{postings} (field, lexeme)
    INCLUDE (iid, tf, dl, time);
CREATE INDEX IF NOT EXISTS {document_index} ON {s}.{postings} (iid);
CREATE TABLE IF NOT EXISTS {s}.{gone} (iid BIGINT PRIMARY KEY);
CREATE TABLE IF NOT EXISTS {s}.{stats} (
    field TEXT PRIMARY KEY, documents BIGINT NOT NULL, length BIGINT NOT NULL
);
INSERT INTO {s}.{stats} (field, documents, length)
    SELECT unnest(%(fields)s::text[]), 0, 0 ON CONFLICT (field) DO NOTHING;
"""
)

_COPY = (
    "COPY {s}.{table} (id, iid, text, type, source, status, persona, session, time,"
    " intent, rationale, evidence, packed, "
    + ", ".join(_LENGTHS.values())
    + ") FROM STDIN (FORMAT BINARY)"
)
_COPY_TYPES = ["text", "int8", "text", "text", "text", "text", "text[]", "text", "int8",
               "text", "text", "text", "bool", *["int4"] * len(_LENGTHS)]  # fmt: skip

# The postings of a batch of (field, iid, lowered text, length, time).
_POSTINGS = """
    SELECT b.field, u.lexeme, b.iid, COALESCE(array_length(u.positions, 1), 1), b.dl, b.time
    FROM unnest(%s::int2[], %s::int8[], %s::text[], %s::int4[], %s::int8[])
        AS b(field, iid, body, dl, time), unnest(to_tsvector('english', b.body)) AS u
"""
_POST = "INSERT INTO {s}.{postings} (field, lexeme, iid, tf, dl, time)" + _POSTINGS
# A bulk load parses each distinct piece of text once (see _pieces): its lexemes and their
# term frequencies, by the piece's number in the batch.
_PARSE = """
    SELECT b.n::int4, u.lexeme, COALESCE(array_length(u.positions, 1), 1)::int4
    FROM unnest(%s::text[]) WITH ORDINALITY AS b(body, n), unnest(to_tsvector('english', b.body))
        AS u
"""
PARSE_BATCH = 20_000  # pieces per statement
WHOLE_FROM = 16383  # characters: a body this long is parsed whole (tsvector positions end here)
MOST_POSITIONS = 255  # a tsvector keeps this many positions of a lexeme, so tf stops there
# A merge reads the lists and the recent postings, and writes the lists again; a bulk load
# writes the lists it packed.
_RECENT = (
    f"SELECT field, lexeme, string_agg({_PACKED.format(p='')}, ''::bytea)"
    " FROM {s}.{postings} GROUP BY field, lexeme"
)
_COPY_LISTS = (
    "COPY {s}.{lists} (field, lexeme, postings, times, earliest, latest) FROM STDIN (FORMAT BINARY)"
)
LIST_TYPES = ["int2", "text", "bytea", "bytea", "int8", "int8"]

_DELETE = "DELETE FROM {s}.{table} WHERE id = ANY(%s) RETURNING iid, packed, " + ", ".join(
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


def _pieces(body: str, parts: Sequence[str] | None) -> list[str]:
    """Pieces of `body` whose lexemes, their term frequencies summed (up to MOST_POSITIONS),
    are the body's own: `parts` when the body is them joined by spaces, and what follows them
    after a newline (a memory's context: its and its neighbours' texts, then its attachments'
    text; backends.Document's `context_parts`); else the body whole. PostgreSQL's parser reads
    no word across a space or a newline except an XML tag or comment (`<a title="x y">`), so
    a body with a '<' stays whole, and so does a long one (a tsvector's positions stop at
    16,383: repeats past it are one). tests/test_postgres_backend.py checks the sums against
    the whole body's parse."""
    if "<" in body or len(body) >= WHOLE_FROM:
        return [body]
    return _split(body, parts)


def _split(body: str, parts: Sequence[str] | None) -> list[str]:
    """`parts` and what follows them after a newline, when `body` is them joined by spaces
    and that; else the body whole. (No word of _WORDS spans a space or a newline, so a body's
    words are its pieces'.)"""
    if not parts:
        return [body]
    joined = " ".join(parts)
    if body == joined:
        return list(parts)
    if body.startswith(joined + "\n"):
        return [*parts, body[len(joined) + 1 :]]
    return [body]


class BulkLists:
    """The lists of a bulk load (a rebuild's first commit): each document's fields as pieces
    of text (`_pieces`), every distinct piece parsed once by PostgreSQL (a memory's text is
    also a piece of its four neighbours' contexts: the context field, ≈ 5× the text, is not
    parsed again), its lexemes' frequencies summed per document and packed per (field,
    lexeme) here, as T_lists holds them. It holds ≈ 50 bytes per posting of one field while
    packing."""

    def __init__(self) -> None:
        self.numbers: dict[str, int] = {}  # a lowered piece → its number
        self.iids: list[int] = []
        self.times: list[int] = []
        self.lengths: list[list[int]] = [[] for _ in TEXT_FIELDS]  # by field code, document
        self.uses: list[tuple[list[int], list[int]]] = [([], []) for _ in TEXT_FIELDS]
        self.vocabulary: list[str] = []
        self.parsed: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    def add(self, iid: int, time: int, bodies: dict[str, str], lengths: list[int],
            parts: Sequence[str] | None) -> None:  # fmt: skip
        """One document: its iid, time, each field's body and length (in words)."""
        document = len(self.iids)
        self.iids.append(iid)
        self.times.append(time)
        for code, field in enumerate(TEXT_FIELDS):
            self.lengths[code].append(lengths[code])
            if not lengths[code]:
                continue
            documents, pieces = self.uses[code]
            for piece in _pieces(bodies[field], parts if field == "context" else None):
                documents.append(document)
                pieces.append(self.numbers.setdefault(piece.lower(), len(self.numbers)))

    def parse(self, db: Database) -> None:
        """Every piece's lexemes and term frequencies, from PostgreSQL's English parser."""
        import numpy as np

        texts = list(self.numbers)
        known: dict[str, int] = {}
        pieces: list[int] = []
        lexemes: list[int] = []
        counts: list[int] = []
        for start in range(0, len(texts), PARSE_BATCH):
            rows = db.binary_rows(_PARSE, (texts[start : start + PARSE_BATCH],))
            pieces.extend(start + int(n) - 1 for n, _, _ in rows)
            lexemes.extend(known.setdefault(lexeme, len(known)) for _, lexeme, _ in rows)
            counts.extend(int(tf) for _, _, tf in rows)
        self.vocabulary = list(known)
        order = np.argsort(np.asarray(pieces, dtype=np.int64), kind="stable")
        per_piece = np.bincount(np.asarray(pieces, dtype=np.int64), minlength=len(texts))
        self.parsed = (
            np.concatenate([[0], np.cumsum(per_piece)]),  # each piece's first row
            np.asarray(lexemes, dtype=np.int64)[order],
            np.asarray(counts, dtype=np.int64)[order],
        )

    def rows(self) -> Iterator[tuple[int, str, bytes, bytes, int, int]]:
        """(field, lexeme, postings, times, earliest, latest) of every list, for COPY."""
        import numpy as np

        assert self.parsed is not None, "parse() first"
        offsets, lexemes, counts = self.parsed
        iids = np.asarray(self.iids, dtype=np.int64)
        times = np.asarray(self.times, dtype=np.int64)
        total = max(len(self.iids), 1)
        for code, (documents, used) in enumerate(self.uses):
            pieces = np.asarray(used, dtype=np.int64)
            sizes = offsets[pieces + 1] - offsets[pieces]
            if not sizes.sum():
                continue
            # each use of a piece, row by row: (document, lexeme, tf), summed per document
            at = np.repeat(offsets[pieces] - (np.cumsum(sizes) - sizes), sizes)
            at += np.arange(len(at))
            keys = lexemes[at] * total + np.repeat(np.asarray(documents, np.int64), sizes)
            order = np.argsort(keys, kind="stable")
            keys = keys[order]
            first = np.flatnonzero(np.concatenate([[True], keys[1:] != keys[:-1]]))
            tf = np.minimum(np.add.reduceat(counts[at][order], first), MOST_POSITIONS)
            keys = keys[first]
            document, lexeme = keys % total, keys // total
            postings = np.empty(len(keys), dtype=np.dtype(LISTED))
            postings["iid"] = iids[document]
            postings["tf"] = tf
            postings["dl"] = np.asarray(self.lengths[code], dtype=np.int64)[document]
            stamps = times[document]
            starts = np.flatnonzero(np.concatenate([[True], lexeme[1:] != lexeme[:-1]]))
            ends = np.concatenate([starts[1:], [len(keys)]])
            earliest = np.minimum.reduceat(stamps, starts)
            latest = np.maximum.reduceat(stamps, starts)
            packed, stamped = postings.tobytes(), stamps.astype(TIMES).tobytes()
            width = postings.itemsize
            for start, end, low, high, word in zip(starts.tolist(), ends.tolist(),
                                                   earliest.tolist(), latest.tolist(),
                                                   lexeme[starts].tolist(), strict=True):  # fmt: skip
                yield (code, self.vocabulary[word], packed[start * width : end * width],
                       stamped[start * 8 : end * 8], low, high)  # fmt: skip


def postings_of(packed: bytes, times: bytes | None = None) -> np.ndarray:
    """Recent postings packed with their times, or a list's postings and times (`times`), as
    one structured array (iid, tf, dl, time)."""
    import numpy as np

    if times is None:
        return np.frombuffer(packed, dtype=np.dtype(POSTING))
    listed = np.frombuffer(packed, dtype=np.dtype(LISTED))
    postings = np.empty(len(listed), dtype=np.dtype(POSTING))
    for name, _ in LISTED:
        postings[name] = listed[name]
    postings["time"] = np.frombuffer(times, dtype=TIMES)
    return postings


def bm25(row: Sequence[Any], limit: int, within: Iids, between: Span) -> list[tuple[int, float]]:
    """(iid, BM25) of the best `limit` documents, best first (ties by iid), from one row of
    _FETCH: the field's document count and total length, the gone iids, and per query lexeme
    its packed list, its times (None: all inside `between`) and its recent postings."""
    import numpy as np

    documents, length, gone, packs, times, recents = row
    if limit <= 0:
        return []
    n = float(max(int(documents), 1))
    average = float(max(int(length), 1)) / n
    dead = np.frombuffer(gone, dtype=">i8").astype(np.int64) if gone else None
    wanted = np.asarray(within, dtype=np.int64) if within is not None else None
    iids, scores = [], []
    for pack, pack_times, recent in zip(packs, times, recents, strict=True):
        listed = np.frombuffer(pack, dtype=np.dtype(LISTED))
        stamps = None if pack_times is None else np.frombuffer(pack_times, dtype=TIMES)
        if dead is not None and len(listed):
            alive = ~np.isin(listed["iid"], dead)
            listed, stamps = listed[alive], None if stamps is None else stamps[alive]
        newer = postings_of(recent)
        df = len(listed) + len(newer)  # the live documents holding the lexeme
        if not df:
            continue
        weight = np.log(1.0 + (n - df + 0.5) / (df + 0.5))
        for postings, stamped in ((listed, stamps), (newer, newer["time"])):
            if between is not None and stamped is not None:
                postings = postings[(stamped >= between[0]) & (stamped < between[1])]
            if wanted is not None:
                postings = postings[np.isin(postings["iid"], wanted)]
            if len(postings):
                tf = postings["tf"].astype(np.float64)
                norm = tf + K1 * ((1 - B) + B * postings["dl"].astype(np.float64) / average)
                iids.append(postings["iid"].astype(np.int64))
                scores.append(weight * tf * (K1 + 1) / norm)
    if not iids:
        return []
    return _best(np.concatenate(iids), np.concatenate(scores), limit)


def _packed(item: tuple[tuple[int, str], np.ndarray]) -> tuple[Any, ...]:
    """A merged list as T_lists holds it."""
    import numpy as np

    (field, lexeme), postings = item
    listed = np.empty(len(postings), dtype=np.dtype(LISTED))
    for name, _ in LISTED:
        listed[name] = postings[name]
    times = postings["time"].astype(TIMES)
    low, high = (int(times.min()), int(times.max())) if len(times) else (0, 0)
    return field, lexeme, listed.tobytes(), times.tobytes(), low, high


def _best(iids: np.ndarray, scores: np.ndarray, limit: int) -> list[tuple[int, float]]:
    """Each iid's summed score, the best `limit` of them (ties by iid). Every score is above
    0 (an inverse document frequency and a term frequency are), so a sum of 0 is no iid."""
    import numpy as np

    if iids.min() >= 0 and iids.max() < DENSE_IIDS:
        totals = np.bincount(iids, weights=scores)
        keys = np.flatnonzero(totals)
        totals = totals[keys]
    else:
        keys, inverse = np.unique(iids, return_inverse=True)
        totals = np.bincount(inverse.reshape(-1), weights=scores)
    if limit < len(totals):  # the limit-th best score; every tie with it is sorted below
        cut = np.partition(totals, len(totals) - limit)[len(totals) - limit]
        chosen = np.flatnonzero(totals >= cut)
        keys, totals = keys[chosen], totals[chosen]
    order = np.lexsort((keys, -totals))[:limit]
    return [(int(keys[i]), float(totals[i])) for i in order]


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
        """Whether the documents table exists, and whether its inverted index (this layout's:
        packed lists) does too."""
        found = self.db.one(
            "SELECT to_regclass(%s) IS NOT NULL, to_regclass(%s) IS NOT NULL",
            (f'"{self.db.schema}"."{self.table}"', f'"{self.db.schema}"."{self.table}_lists"'),
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
            # A table of an older layout (tsvector columns, or postings without packed lists)
            # is a cache: it starts again empty, and the updater, seeing fewer documents than
            # the catalog has searchable memories, rebuilds the index.
            if exists and not current:
                self.wipe(self.db, self.table)
            for statement in _TABLE.split(";"):
                if statement.strip():
                    params = {"fields": [*TEXT_FIELDS, CHANGED]} if "%(" in statement else {}
                    self.db.execute(statement, params, **self._names())
        self._created = True

    @staticmethod
    def tables(table: str) -> list[str]:
        """The documents table and its companions."""
        return [table, *(f"{table}_{part}" for part in COMPANIONS)]

    @staticmethod
    def wipe(database: Database, table: str) -> None:
        """Drop the table and its inverted index (a rebuild starts the next generation empty)."""
        for name in (*PostgresFullText.tables(table), *(f"{table}_{part}" for part in LEGACY)):
            database.drop_table(name)

    def exists(self) -> bool:
        """Whether the table is there (known once created: a reader then skips the look-up;
        a table dropped under it later is a clear error, see database.py)."""
        if not self._created:
            self._created = all(self._layout())
        return self._created

    def vacuum(self) -> None:
        """VACUUM ANALYZE the tables: the planner learns their sizes, and the visibility map
        lets the recent postings be read from their btree alone. Not inside a transaction
        (then it is left to autovacuum)."""
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
            # A table without documents or lists (a rebuild's new generation, a replace_all)
            # takes its first documents in bulk: their postings packed in one aggregate.
            bulk = self._empty(names)
            for action, items in staged:
                if action == "clear":
                    self._clear(names)
                    bulk = True
                elif action == "delete":
                    self._remove(items, names)
                else:
                    latest = {fields["id"]: fields for fields in items}  # the last one wins
                    if not bulk:
                        self._remove(list(latest), names)
                    self._insert(list(latest.values()), names, bulk)
                    bulk = False
            if self._needs_merge(names):
                self._merge(names)

    def _empty(self, names: dict[str, str]) -> bool:
        found = self.db.one(
            "SELECT NOT EXISTS (SELECT 1 FROM {s}.{table})"
            " AND NOT EXISTS (SELECT 1 FROM {s}.{lists})",
            **names,
        )
        return bool(found[0])

    def _clear(self, names: dict[str, str]) -> None:
        """Delete every document (replace_all); DELETE, not TRUNCATE: readers keep their
        snapshot instead of waiting."""
        for table in ("table", "lists", "postings", "gone"):
            self.db.execute("DELETE FROM {s}.{name}", name=names[table])
        self.db.execute("UPDATE {s}.{stats} SET documents = 0, length = 0", **names)

    def _remove(self, ids: list[str], names: dict[str, str]) -> None:
        """Delete documents with their recent postings; a packed one's iid joins T_gone."""
        if not ids:
            return
        gone = self.db.rows(_DELETE, (ids,), **names)
        if not gone:
            return
        iids = [int(row[0]) for row in gone]
        self.db.execute("DELETE FROM {s}.{postings} WHERE iid = ANY(%s)", (iids,), **names)
        packed = [int(row[0]) for row in gone if row[1]]
        if packed:
            self.db.execute(
                "INSERT INTO {s}.{gone} (iid) SELECT unnest(%s::int8[]) ON CONFLICT DO NOTHING",
                (packed,),
                **names,
            )
        lengths = [-sum(int(row[2 + n]) for row in gone) for n in range(len(TEXT_FIELDS))]
        self._add_stats(-len(gone), lengths, len(packed), names)

    def _insert(self, documents: list[Document], names: dict[str, str], bulk: bool) -> None:
        """Add documents: their rows (COPY), postings and statistics; in `bulk`, their
        postings are packed into lists (BulkLists) instead of written as rows."""
        lists = BulkLists() if bulk else None
        totals = [0] * len(TEXT_FIELDS)
        counted: dict[str, int] = {}  # words per piece: a context's are its parts' (_split)

        def words(piece: str) -> int:
            found = counted.get(piece)
            if found is None:
                found = counted[piece] = len(_WORDS.findall(piece))
            return found

        for start in range(0, len(documents), BATCH):
            rows, postings = [], []
            for fields in documents[start : start + BATCH]:
                iid, time = int(fields.get("iid", -1)), int(fields["time"])
                bodies = _bodies(fields)
                parts = fields.get("context_parts")
                lengths = [sum(map(words, _split(bodies[field], parts if field == "context"
                                                  else None))) for field in TEXT_FIELDS]  # fmt: skip
                rows.append((
                    fields["id"], iid, fields["text"], fields.get("type"), fields.get("source"),
                    fields.get("status"), list(fields.get("persona") or ()),
                    fields.get("session"), time,
                    *(bodies[name] or None for name in META_FIELDS), bulk, *lengths,
                ))  # fmt: skip
                totals = [total + length for total, length in zip(totals, lengths, strict=True)]
                if lists is not None:
                    lists.add(iid, time, bodies, lengths, parts)
                    continue
                for code, (field, length) in enumerate(zip(TEXT_FIELDS, lengths, strict=True)):
                    if length:
                        postings.append((code, iid, bodies[field].lower(), length, time))
            self.db.copy(_COPY, rows, _COPY_TYPES, **names)
            if postings:
                columns = [list(column) for column in zip(*postings, strict=True)]
                self.db.execute(_POST, columns, **names)
        if lists is not None:
            lists.parse(self.db)
            self.db.copy(_COPY_LISTS, lists.rows(), LIST_TYPES, **names)
        self._add_stats(len(documents), totals, 0 if bulk else len(documents), names)

    def _add_stats(
        self, documents: int, lengths: list[int], changed: int, names: dict[str, str]
    ) -> None:
        self.db.execute(
            _ADD_STATS,
            ([*TEXT_FIELDS, CHANGED], [documents] * len(lengths) + [changed], [*lengths, 0]),
            **names,
        )

    def _needs_merge(self, names: dict[str, str]) -> bool:
        """Whether the documents changed since the last merge call for one (MERGE_RATIO)."""
        found = self.db.one(
            "SELECT c.documents, t.documents FROM {s}.{stats} AS c, {s}.{stats} AS t"
            " WHERE c.field = %s AND t.field = 'text'",
            (CHANGED,),
            **names,
        )
        changed, documents = (int(found[0]), int(found[1])) if found else (0, 0)
        return changed > max(MERGE_MIN, MERGE_RATIO * documents)

    def _merge(self, names: dict[str, str]) -> None:
        """Write the lists again: without the gone iids' postings, with the recent ones; then
        T_postings and T_gone start empty. (It holds the lists in memory, ≈ 24 bytes a
        posting.)"""
        import numpy as np

        dead = np.asarray(
            [row[0] for row in self.db.rows("SELECT iid FROM {s}.{gone}", **names)],
            dtype=np.int64,
        )
        lists: dict[tuple[int, str], Any] = {}
        for field, lexeme, stored, times in self.db.binary_rows(
            "SELECT field, lexeme, postings, times FROM {s}.{lists}", **names
        ):
            postings = postings_of(stored, times)
            lists[int(field), lexeme] = postings[~np.isin(postings["iid"], dead)]
        for field, lexeme, stored in self.db.binary_rows(_RECENT, **names):
            key = (int(field), lexeme)
            recent = postings_of(stored)
            lists[key] = np.concatenate([lists[key], recent]) if key in lists else recent
        for table in ("lists", "postings", "gone"):
            self.db.execute("DELETE FROM {s}.{name}", name=names[table])
        self.db.copy(_COPY_LISTS, [_packed(item) for item in lists.items() if len(item[1])],
                     LIST_TYPES, **names)  # fmt: skip
        self.db.execute("UPDATE {s}.{table} SET packed = TRUE WHERE NOT packed", **names)
        self.db.execute("UPDATE {s}.{stats} SET documents = 0 WHERE field = %s", (CHANGED,),
                        **names)  # fmt: skip

    # reading --------------------------------------------------------------------------------
    def count(self) -> int:
        if not self.exists():
            return 0
        found = self.db.one(
            "SELECT documents FROM {s}.{stats} WHERE field = 'text'", **self._names()
        )
        return int(found[0]) if found else 0

    def _ranked(
        self, text: str, limit: int, field: str, within: Iids, between: Span
    ) -> list[tuple[int, float]]:
        """(iid, BM25) of the best `limit` documents, best first."""
        if field not in FIELD_CODES:
            raise ValueError(f"no full-text field {field!r} (one of {', '.join(TEXT_FIELDS)})")
        words = " ".join(_WORDS.findall(text.lower()))
        if not words or limit <= 0 or within == [] or not self.exists():
            return []
        start, end = between if between is not None else (-(1 << 63), (1 << 63) - 1)
        params = {"words": words, "name": field, "field": FIELD_CODES[field],
                  "start": start, "end": end}  # fmt: skip
        rows = self.db.binary_rows(_FETCH, params, **self._names())
        return bm25(rows[0], limit, within, between) if rows else []

    def scores(
        self, text: str, limit: int, field: str = "text", within: Iids = None, between: Span = None
    ) -> dict[int, float]:
        return dict(self._ranked(text, limit, field, within, between))

    def search(
        self, text: str, k: int, snippets: bool = False, field: str = "text"
    ) -> list[TextHit]:
        """As `scores`, by memory id; a snippet is of `field` (of the text for "context" and
        "meta", as the Tantivy index shows them)."""
        ranked = self._ranked(text, k, field, None, None)
        if not ranked:
            return []
        shown = field if field in META_FIELDS else "text"
        found = {
            int(iid): (memory_id, snippet)
            for iid, memory_id, snippet in self.db.rows(
                "SELECT d.iid, d.id, CASE WHEN %s THEN ts_headline('english',"
                " COALESCE(d.{shown}, d.text), websearch_to_tsquery('english', %s), %s)"
                " ELSE '' END FROM {s}.{table} AS d WHERE d.iid = ANY(%s)",
                (snippets, or_query(text), _HEADLINE, [iid for iid, _ in ranked]),
                table=self.table,
                shown=shown,
            )
        }
        return [
            TextHit(found[iid][0], score, found[iid][1]) for iid, score in ranked if iid in found
        ]
