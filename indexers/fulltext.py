"""Full text in Tantivy (backends.FullTextIndex): memory documents, English stemming, snippets.

Documents are keyed by memory id; an update deletes by id and adds again, so writing the same
memory twice never duplicates it. Commits are explicit (tantivy-py's context manager commits
even when its block raises) and batched: one per update.

Tantivy's BM25 statistics (documents, document frequencies, tokens) go on counting a deleted or
replaced document until a segment merge drops it, so two indexes holding the same documents
can score differently after different histories. `replaced()` counts those documents (every
document carries the one term `all:1`, whose document frequency includes them) and
`replace_all()` writes the whole index again in one commit, after which it counts none.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .backends import META_FIELDS, Document, Iids, Span, TextHit


def _schema() -> Any:
    import tantivy

    builder = tantivy.SchemaBuilder()
    builder.add_text_field("id", stored=True, tokenizer_name="raw")
    builder.add_text_field("all", stored=False, tokenizer_name="raw")  # see replaced()
    builder.add_text_field("text", stored=True, tokenizer_name="en_stem")
    # the memory with its same-session neighbours: recall scores both (docs/RECALL.md)
    builder.add_text_field("context", stored=False, tokenizer_name="en_stem")
    builder.add_text_field("type", stored=True, tokenizer_name="raw")
    builder.add_text_field("source", stored=True, tokenizer_name="raw")
    builder.add_text_field("status", stored=True, tokenizer_name="raw")
    builder.add_text_field("persona", stored=True, tokenizer_name="raw")
    builder.add_text_field("session", stored=True, tokenizer_name="raw")
    # the meta-memory fields (why it was stored, the reasoning, what supports it): searched on
    # their own (`memdir search --field rationale`) and by recall's `meta_bm25` component
    for name in META_FIELDS:
        builder.add_text_field(name, stored=True, tokenizer_name="en_stem")
    builder.add_integer_field("time", stored=True, indexed=True, fast=True)
    # the catalog's iid (a session document's: its name_code); indexed to restrict searches
    builder.add_integer_field("iid", stored=True, indexed=True, fast=True)
    return builder.build()


class TantivyIndex:
    """One Tantivy index directory (`.memdir/index/tantivy-N`, `sessions-N`), or one held in
    memory only (`in_memory`)."""

    def __init__(self, path: Path) -> None:
        import tantivy

        from memdir.archive_format.errors import MemdirError

        self.path = path
        path.mkdir(parents=True, exist_ok=True)
        self.schema = _schema()
        self._writer: Any = None
        try:
            self.index = tantivy.Index(self.schema, path=str(path), reuse=True)
        except ValueError as error:
            if "ReadOnlyFilesystem" in str(error) or "PermissionDenied" in str(error):
                raise MemdirError(
                    f"the memdir is read-only: Tantivy cannot take its lock file in {path}",
                    hint="a read-only memdir is searched from the index it was copied with; "
                    "index it on a writable copy first (`memdir list`, `show` and `wake` work "
                    "without one)",
                ) from None
            if "schema does not match" not in str(error):
                raise damaged(path, error) from None
            # Written by another memdir version. It is a cache: start it empty; the catalog's
            # document count no longer matches, so the next update rebuilds it.
            self.wipe(path)
            path.mkdir(parents=True, exist_ok=True)
            self.index = tantivy.Index(self.schema, path=str(path), reuse=True)

    @classmethod
    def in_memory(cls, documents: Sequence[Document]) -> TantivyIndex:
        """An index in memory holding `documents`: what a read-only memdir answers from, since
        Tantivy cannot open a directory it may not write (it takes a lock file to read)."""
        import tantivy

        made = cls.__new__(cls)
        made.path = Path()
        made.schema = _schema()
        made.index = tantivy.Index(made.schema)
        made._writer = None
        made._add(documents)
        made.commit()
        return made

    @staticmethod
    def wipe(path: Path) -> None:
        """Delete the index files (rebuild; also drops deleted documents' text for good)."""
        shutil.rmtree(path, ignore_errors=True)

    def _writer_open(self) -> Any:
        if self._writer is None:
            self._writer = self.index.writer(heap_size=32_000_000, num_threads=1)
        return self._writer

    def upsert(self, documents: Sequence[Document]) -> None:
        """Add or replace documents (backends.Document)."""
        writer = self._writer_open()
        for fields in documents:
            writer.delete_documents_by_term("id", fields["id"])
        self._add(documents)

    def replace_all(self, documents: Sequence[Document]) -> None:
        """Stage an index holding exactly `documents` (no replaced ones left to count)."""
        self._writer_open().delete_all_documents()
        self._add(documents)

    def _add(self, documents: Sequence[Document]) -> None:
        import tantivy

        writer = self._writer_open()
        for fields in documents:
            document = tantivy.Document()
            document.add_text("id", fields["id"])
            document.add_text("all", "1")
            document.add_text("text", fields["text"])
            document.add_text("context", fields.get("context") or fields["text"])
            labels = {"type": fields.get("type"), "source": fields.get("source"),
                      "status": fields.get("status"), "session": fields.get("session")}  # fmt: skip
            for name, label in labels.items():
                if label:
                    document.add_text(name, label)
            for persona in fields.get("persona") or ():
                document.add_text("persona", persona)
            for name in META_FIELDS:
                if fields.get(name):
                    document.add_text(name, str(fields.get(name)))
            document.add_integer("time", int(fields["time"]))
            document.add_integer("iid", int(fields.get("iid", -1)))
            writer.add_document(document)

    def delete(self, ids: Sequence[str]) -> None:
        writer = self._writer_open()
        for memory_id in ids:
            writer.delete_documents_by_term("id", memory_id)

    def commit(self) -> None:
        if self._writer is not None:
            self._writer.commit()
            self._writer.wait_merging_threads()
            self._writer = None
            self.index.reload()

    def rollback(self) -> None:
        if self._writer is not None:
            self._writer.rollback()
            self._writer = None

    def count(self) -> int:
        """Documents in the last commit, including one made by another process."""
        with reading(self.path):
            self.index.reload()
            return int(self.index.searcher().num_docs)

    def replaced(self) -> int:
        """Deleted or replaced documents the BM25 statistics still count (last commit)."""
        self.index.reload()
        searcher = self.index.searcher()
        return int(searcher.doc_freq("all", "1")) - int(searcher.num_docs)

    def _query(self, text: str, field: str = "text") -> Any:
        fields = list(META_FIELDS) if field == "meta" else [field]
        query, _errors = self.index.parse_query_lenient(text, fields)
        return query

    def scores(
        self, text: str, limit: int, field: str = "text", within: Iids = None, between: Span = None
    ) -> dict[int, float]:
        """BM25 score of the best `limit` documents for the query on one field, best first, by
        catalog iid (a session document's iid is its name_code); `within` limits them to these
        iids, `between` to times in [start, end) (epoch seconds). The iids come from a fast
        field, so thousands of hits cost no document fetches."""
        import tantivy

        if not text.strip() or limit <= 0 or within == []:
            return {}
        searcher = self.index.searcher()
        query = self._query(text, field)
        required = []
        if within is not None:
            required.append(tantivy.Query.term_set_query(self.schema, "iid", within))
        if between is not None:
            required.append(
                tantivy.Query.range_query(
                    self.schema, "time", tantivy.FieldType.Integer, between[0], between[1],
                    include_upper=False,
                )
            )  # fmt: skip
        if required:
            query = tantivy.Query.boolean_query(
                [(tantivy.Occur.Must, clause) for clause in (query, *required)]
            )
        with reading(self.path):
            hits = searcher.search(query, limit=limit, count=False).hits
            iids = searcher.fast_field_values("iid", [address for _, address in hits])
        return {int(i): float(s) for (s, _), i in zip(hits, iids, strict=True) if i is not None}

    def search(
        self, text: str, k: int, snippets: bool = False, field: str = "text"
    ) -> list[TextHit]:
        """Best `k` documents for a free-text query (BM25) on `field`, optionally with
        highlighted snippets (of that field; of the text for "context" and "meta")."""
        if not text.strip() or k <= 0:
            return []
        searcher = self.index.searcher()
        query = self._query(text, field)
        with reading(self.path):
            return self._hits(searcher, query, k, field, snippets)

    def _hits(self, searcher: Any, query: Any, k: int, field: str, snippets: bool) -> list[TextHit]:
        import tantivy

        result = searcher.search(query, limit=k)
        shown = field if field in META_FIELDS else "text"
        generator = (
            tantivy.SnippetGenerator.create(searcher, query, self.schema, shown)
            if snippets
            else None
        )
        hits: list[TextHit] = []
        for score, address in result.hits:
            document = searcher.doc(address)
            snippet = ""
            if generator is not None:
                fragment = generator.snippet_from_doc(document)
                snippet = _highlight(fragment) or (document[shown] or document["text"])[0][:160]
            hits.append(TextHit(document["id"][0], float(score), snippet))
        return hits


def damaged(path: Path, error: BaseException) -> Exception:
    """The error for a full-text index Tantivy cannot read: a meta file or segment damaged, cut
    short or deleted. A cache: the index heals (storage.heal) by rebuilding it."""
    from memdir.archive_format.errors import DamagedCacheError

    return DamagedCacheError(
        f"full-text index {path.name}: {error}",
        hint="it is rebuilt from the shelves: `memdir index --rebuild`",
    )


@contextmanager
def reading(path: Path) -> Iterator[None]:
    """Tantivy opens some segment files only when a search needs them: a damaged one is found
    there, as the same DamagedCacheError as at opening (a query it cannot parse is not)."""
    try:
        yield
    except ValueError as error:
        if not str(error).startswith(("Data corrupted", "Failed to open")):
            raise
        raise damaged(path, error) from None


def _highlight(snippet: Any) -> str:
    """The snippet's fragment with matches wrapped in [ ] (Tantivy's spans count UTF-8 bytes)."""
    fragment: bytes = snippet.fragment().encode("utf-8")
    pieces: list[bytes] = []
    last = 0
    for span in snippet.highlighted():
        pieces.append(fragment[last : span.start])
        pieces.append(b"[" + fragment[span.start : span.end] + b"]")
        last = span.end
    pieces.append(fragment[last:])
    return b"".join(pieces).decode("utf-8", "replace")
