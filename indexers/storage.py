"""The parts of one memdir's index, opened lazily: its backends and the models that fill them.

Everything lives under `.memdir/index/`:

  catalog.sqlite           the catalog (catalog.py)
  tantivy-N/, sessions-N/  full text of memories and of whole sessions (fulltext.py)
  memories-N.table         what recall needs of each memory, by iid (memorytable.py)
  faiss/base.index         the vector base (vectors.py)
  vectors/MODEL.f16        the embedding cache of one model, float16 rows (vectors.py)

With `settings.index.backend: postgres` the catalog, full text and vectors live in the memdir's
schema of a PostgreSQL database instead (indexers/postgres/); the memory table stays here.

N is the generation. A rebuild renumbers every memory, so it writes generation N+1 beside N
and switches over in one catalog commit (the manifest's `generation`): readers never see a
half-built index, and one that has the old generation open keeps reading it. This module is
the one place that picks the backend implementations (backends.py says what they must do):
`open_parts` reads the setting, and a caller may hand IndexStorage its own `parts`.
"""

from __future__ import annotations

import logging
import shutil
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar, cast

from memdir.archive_format.errors import DamagedCacheError
from memdir.archive_format.memdir import Memdir
from memdir.archive_format.settings import VectorSettings

from .backends import (
    Catalog,
    CatalogCaches,
    CatalogReader,
    CatalogStatus,
    CatalogWriter,
    FullTextIndex,
    VectorIndex,
    VectorRows,
)
from .catalog import unreadable
from .memorytable import MemoryTable

if TYPE_CHECKING:
    import numpy as np

    from .affect import Annotator
    from .embedding import Embedder
    from .vectors import VectorFile

log = logging.getLogger("memdir")

FULLTEXT_NAMES = ("tantivy", "sessions")
GENERATION_PARTS = (
    "fulltext",
    "sessions",
    "_in_memory_fulltext",
    "memory_table",
    "base",
    "store",  # a rebuild renumbers the embedding cache's rows (what a backend kept of them)
)  # reopened after a rebuild

# A long-lived process (`memdir serve`) loads each model once and lends it to every index it
# opens (the model's settings → the loaded embedder or annotator), and keeps one open index
# per memdir and thread (see `resident_index`). None: every index loads its own models.
_resident: dict[tuple[str, ...], Any] | None = None
_resident_lock = threading.RLock()
_reading = threading.local()  # .shared: this thread reads beside others (`shared_read`)


class WriterNeeded(BaseException):  # noqa: N818 - a signal, like SystemExit, not an error
    """Raised in a `shared_read` thread that would write the index (an update, a discard): the
    caller runs the whole command again alone. A BaseException, so that no error boundary on
    the way (the CLI's `except Exception`) turns it into an answer."""


@contextmanager
def shared_read() -> Iterator[None]:
    """This thread reads the index while others may too (the service holds its read lock):
    the thread's own open index may be opened or reopened, but an update or a discard, which
    write to the index everyone reads, raise WriterNeeded instead."""
    _reading.shared = True
    try:
        yield
    finally:
        _reading.shared = False


def check_writable(what: str) -> None:
    """Before writing the index: refuse in a `shared_read` thread (see WriterNeeded)."""
    if getattr(_reading, "shared", False):
        raise WriterNeeded(what)


def keep_models_resident() -> None:
    """From now on, indexes in this process share their embedder and annotator (per setting),
    and `resident_index` keeps indexes open between commands."""
    global _resident
    with _resident_lock:
        if _resident is None:
            _resident = {}


def resident_index(memdir: Memdir, make: Callable[[Memdir], IndexStorage]) -> Any:
    """The index this thread keeps open for `memdir` (made with `make` when there is none),
    or None when indexes are not kept. It is reopened when the memdir's settings changed or
    another connection wrote to the catalog since (an update or rebuild by another process, or
    by another thread): its caches (the scoring table, the generation's parts) would be stale.
    Its own updates keep its caches right. Each thread has its own (SQLite connections and
    Tantivy searchers stay on the thread that opened them); serve.py runs the commands that
    write one at a time, on one thread, so that thread's index stays warm."""
    if _resident is None:
        return None
    key = ("index", str(memdir.root), str(threading.get_ident()))
    with _resident_lock:
        index = _resident.get(key)
        if index is not None:
            version = index.foreign_writes()
            if index.memdir.settings != memdir.settings or version != index.seen_writes:
                index.resident = False
                index.close()
                index = None
        if index is None:
            index = make(memdir)
            index.resident = True
            _resident[key] = index
        index.seen_writes = index.foreign_writes()
        return index


class IndexParts(Protocol):
    """Where an index's catalog, full-text indexes and vectors live: files under
    `.memdir/index/` (LocalParts) or a PostgreSQL schema (postgres.PostgresParts). The memory
    table is a memory-mapped file beside the memdir either way (docs/SCALE.md)."""

    def catalog(self) -> Catalog: ...

    def fulltext(self, name: str, generation: int) -> FullTextIndex:
        """One of FULLTEXT_NAMES at one generation."""

    def wipe_fulltext(self, name: str, generation: int) -> None: ...

    def remove_stale(self, generation: int) -> None:
        """Delete every other generation's full-text indexes."""

    def base(self, model_id: str, dim: int, settings: VectorSettings) -> VectorIndex:
        """The vector base over the embedding cache of one model (`store`)."""

    def store(self, model_id: str, dim: int) -> VectorRows: ...

    def missing(self, generation: int) -> str | None:
        """Which part was deleted from under the catalog, if any (no model load)."""

    def base_outdated(self) -> bool:
        """Whether an older memdir wrote the vector base in a form this one reads but writes
        no more: the next update builds it again from the cache (no model load)."""

    def size_bytes(self) -> int: ...

    def writer_lock(self, timeout: float) -> AbstractContextManager[object]:
        """Held by the index's writer inside the lock file `.memdir/index.lock`: where the
        parts are shared beyond this host (a database), the lock that keeps a writer on
        another host out, waiting `timeout` seconds (LockedError then); else nothing."""

    def drop(self) -> None:
        """Delete the catalog, full text and vectors (a scratch memdir's, at its end)."""

    def close(self) -> None: ...


class LocalParts:
    """SQLite, Tantivy, FAISS and the vector file under `.memdir/index/` (the default)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def catalog(self) -> Catalog:
        """The SQLite catalog, checked: a damaged or foreign file raises what `unreadable`
        recognises, and IndexStorage discards the index."""
        from .catalog import SqliteCatalog

        catalog = SqliteCatalog(self.root / "catalog.sqlite")
        catalog.check()
        return catalog

    def fulltext(self, name: str, generation: int) -> FullTextIndex:
        from .fulltext import TantivyIndex

        return TantivyIndex(self.root / f"{name}-{generation}")

    def wipe_fulltext(self, name: str, generation: int) -> None:
        from .fulltext import TantivyIndex

        TantivyIndex.wipe(self.root / f"{name}-{generation}")

    def remove_stale(self, generation: int) -> None:
        from .fulltext import TantivyIndex

        current = {f"{name}-{generation}" for name in FULLTEXT_NAMES}
        for name in FULLTEXT_NAMES:
            for stale in self.root.glob(f"{name}*"):
                if stale.name not in current:
                    TantivyIndex.wipe(stale)

    def base(self, model_id: str, dim: int, settings: VectorSettings) -> VectorIndex:
        from .vectors import FaissIndex

        path = self.root / "faiss" / "base.index"
        return FaissIndex(path, dim, settings, self._vector_file(model_id, dim))

    def store(self, model_id: str, dim: int) -> VectorRows:
        return self._vector_file(model_id, dim)

    def _vector_file(self, model_id: str, dim: int) -> VectorFile:
        from .vectors import VectorFile, safe_name

        folder, name = self.root / "vectors", safe_name(model_id)
        return VectorFile(folder / f"{name}.f16", dim, legacy=folder / f"{name}.f32")

    def base_outdated(self) -> bool:
        from .vectors import written_by_older

        try:
            return written_by_older(self.root / "faiss" / "base.index")
        except FileNotFoundError:
            return False

    def missing(self, generation: int) -> str | None:
        if not (self.root / f"tantivy-{generation}" / "meta.json").is_file():
            return "full-text index missing"
        if not (self.root / "faiss" / "base.index").is_file():
            return "vector index missing"
        return None

    def size_bytes(self) -> int:
        return sum(f.stat().st_size for f in self.root.rglob("*") if f.is_file())

    def writer_lock(self, timeout: float) -> AbstractContextManager[object]:
        """None needed: the lock file is the only way to these files."""
        return nullcontext()

    def drop(self) -> None:
        """Nothing to do: the files go with the memdir's directory."""

    def close(self) -> None:
        pass


def describe_backend(memdir: Memdir) -> str:
    """Where this memdir's derived index lives, in words (`index --status`, doctor)."""
    settings = memdir.settings.index
    if settings.backend == "postgres":
        # the dsn never holds a password (settings refuse one), so it may be shown
        return f"postgres ({settings.dsn or 'libpq defaults: $PGHOST, $PGDATABASE'})"
    return "local (Tantivy, FAISS and SQLite under .memdir/)"


def open_parts(memdir: Memdir, root: Path) -> IndexParts:
    """The parts memdir.yaml's `settings.index.backend` names."""
    settings = memdir.settings.index
    if settings.backend == "postgres":
        from memdir.archive_format.extras import require

        require("postgres", "settings.index.backend: postgres")
        from .postgres import PostgresParts

        return PostgresParts(
            settings.dsn or "", memdir, root, build_megabytes=settings.build_megabytes
        )
    return LocalParts(root)


class CheckedRows:
    """Vector rows read on behalf of the catalog: a row it names that the store lacks
    (IndexError) means one of the two is damaged, so it is a DamagedCacheError."""

    def __init__(self, rows: VectorRows) -> None:
        self.inner = rows

    def count(self) -> int:
        return self.inner.count()

    def append(self, vectors: np.ndarray) -> int:
        return self.inner.append(vectors)

    def rows(self, numbers: list[int] | np.ndarray) -> np.ndarray:
        try:
            return self.inner.rows(numbers)
        except IndexError as error:
            raise DamagedCacheError(f"the catalog points past the vectors ({error})") from None

    def rewrite(self, vectors: np.ndarray) -> None:
        self.inner.rewrite(vectors)

    def current(self) -> bool:
        return self.inner.current()


Role = TypeVar("Role")


class CatalogRole(Generic[Role]):
    """The storage's catalog, the one open now (heal reopens it), seen through one role."""

    def __get__(self, storage: IndexStorage, owner: object = None) -> Role:
        return cast(Role, storage._catalog)


class IndexStorage:
    """The catalog, full-text indexes, vector base, embedding cache and memory table of one
    memdir, and its embedder and affect annotator; each opened on first use."""

    def __init__(
        self,
        memdir: Memdir,
        embedder: Embedder | None = None,
        annotator: Annotator | None = None,
        parts: IndexParts | None = None,
    ) -> None:
        from memdir.archive_format.memdir import check_cache

        self.memdir = memdir
        self.root = memdir.cache_dir / "index"
        check_cache(memdir)
        self.root.mkdir(parents=True, exist_ok=True)
        self.parts = parts if parts is not None else open_parts(memdir, self.root)
        self._catalog: Catalog = self._open_catalog()
        self._embedder = embedder
        self._annotator = annotator
        self.embedder_warning: str | None = None
        self.vector_settings = memdir.settings.vectors
        self._generation: int | None = None
        # recall's table of every memory (scoring.py), built by the reader; None: not built,
        # False: the archive is too large for one. Any update or rebuild drops it.
        self.cached_scoring_table: Any = None
        self.resident = False  # kept open between commands (resident_index): close() keeps it
        self.seen_writes: object = None

    def _open_catalog(self) -> Catalog:
        """The catalog; a damaged or foreign one (or one missing a table) is thrown away with
        the rest of the index, which the next update rebuilds from the shelves."""
        try:
            return self.parts.catalog()
        except Exception as error:
            if not unreadable(error):
                raise
            problem = error
        self.discard(f"the catalog under {self.root} is unreadable ({problem})")
        return self.parts.catalog()

    def discard(self, why: str) -> None:
        """Delete the whole index (a cache) so it is rebuilt from the shelves; one notice."""
        check_writable(why)
        log.warning("%s: rebuilding the index from the shelves", why)
        catalog = self.__dict__.get("_catalog")
        if catalog is not None:
            catalog.close()
        for name in GENERATION_PARTS:
            self.__dict__.pop(name, None)
        self._generation = None
        self.cached_scoring_table = None
        shutil.rmtree(self.root, ignore_errors=True)
        self.root.mkdir(parents=True, exist_ok=True)

    def heal(self, error: BaseException) -> bool:
        """After `error` from the index: when it means a damaged cache, discard the index and
        reopen an empty catalog (the caller then rebuilds); False for any other error."""
        if not (unreadable(error) or isinstance(error, DamagedCacheError)):
            return False
        self.discard(f"the index under {self.root} is damaged ({error})")
        self._catalog = self.parts.catalog()
        return True

    # the catalog by role: each client sees the one it needs (backends.py), never all four
    catalog: CatalogRole[CatalogReader] = CatalogRole()
    bookkeeping: CatalogRole[CatalogStatus] = CatalogRole()
    catalog_writer: CatalogRole[CatalogWriter] = CatalogRole()
    catalog_caches: CatalogRole[CatalogCaches] = CatalogRole()

    # the models -----------------------------------------------------------------------------
    # (loaded under _resident_lock, so that threads starting together load a model once)
    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            from .embedding import load_embedder

            config = self.memdir.settings.embedder
            key = ("embedder", str(config.path), config.kind, str(config.mpnet), str(config.e5))
            with _resident_lock:
                if _resident is not None and key in _resident:
                    self._embedder = _resident[key]
                    return _resident[key]
                self._embedder, self.embedder_warning = load_embedder(
                    config.path, config.kind, config.mpnet, config.e5
                )
                if self.embedder_warning:
                    log.warning(self.embedder_warning.removeprefix("memdir: "))
                if _resident is not None:
                    _resident[key] = self._embedder
        return self._embedder

    @property
    def annotator(self) -> Annotator:
        if self._annotator is None:
            from .affect import load_annotator

            # memdir.yaml's settings allow only the annotators load_annotator knows
            name = self.memdir.settings.affect.annotator
            with _resident_lock:
                if _resident is not None and ("annotator", name) in _resident:
                    self._annotator = _resident["annotator", name]
                    return self._annotator
                self._annotator = load_annotator(name)
                if _resident is not None:
                    _resident["annotator", name] = self._annotator
        return self._annotator

    def annotator_label(self) -> str:
        return f"{self.annotator.name}/{self.annotator.version}"

    # the backends ---------------------------------------------------------------------------
    @property
    def generation(self) -> int:
        """Which full-text directories and memory table are current (see the module doc)."""
        if self._generation is None:
            self._generation = int(self._catalog.manifest().get("generation", "0"))
        return self._generation

    @property
    def read_only(self) -> bool:
        """Whether this index cannot be written (a memdir on a read-only mount, a backup): it
        is answered from as it is, never updated."""
        return bool(getattr(self._catalog, "read_only", False))

    # Each part is opened on first use and kept (cached_property); the parts of one generation
    # are dropped together when it changes, and reopened on next use.
    @cached_property
    def fulltext(self) -> FullTextIndex:
        if self.read_only:
            return self._in_memory_fulltext[0]
        return self.parts.fulltext("tantivy", self.generation)

    @cached_property
    def sessions(self) -> FullTextIndex:
        """One document per session (its memories joined): recall's session prior."""
        if self.read_only:
            return self._in_memory_fulltext[1]
        return self.parts.fulltext("sessions", self.generation)

    @cached_property
    def _in_memory_fulltext(self) -> tuple[FullTextIndex, FullTextIndex]:
        """Both full-text indexes loaded into memory from the catalog (a read-only memdir:
        Tantivy takes a lock file even to read). Scored as a compacted index is."""
        from .fulltext import TantivyIndex
        from .updater import fulltext_documents

        texts, sessions = fulltext_documents(self._catalog, self.memdir)
        return TantivyIndex.in_memory(texts), TantivyIndex.in_memory(sessions)

    @cached_property
    def memory_table(self) -> MemoryTable:
        """What recall needs of each memory at scale, by iid (memorytable.py); one file per
        generation, since a rebuild renumbers the memories."""
        return MemoryTable(self.root / f"memories-{self.generation}.table")

    @cached_property
    def base(self) -> VectorIndex:
        embedder = self.embedder
        return self.parts.base(embedder.model_id, embedder.dim, self.vector_settings)

    @cached_property
    def store(self) -> VectorRows:
        """The embedding cache: the model's vectors, one row per distinct text (a row the
        catalog names but the cache lacks is a damaged cache, healed like one)."""
        return CheckedRows(self.parts.store(self.embedder.model_id, self.embedder.dim))

    def close(self) -> None:
        if not self.resident:
            self._catalog.close()
            self.parts.close()

    def foreign_writes(self) -> object:
        """A token that changes when another connection wrote to the catalog; a backend that
        cannot tell gives a new token each time (so its index is never kept)."""
        return self._catalog.data_version()

    # generations ----------------------------------------------------------------------------
    def _drop_generation(self) -> None:
        for name in GENERATION_PARTS:
            self.__dict__.pop(name, None)
        self._generation = None
        self.cached_scoring_table = None

    def follow_rebuilds(self) -> None:
        """If another process rebuilt the index (a new generation), reopen its files: the old
        generation's memory table numbers memories differently. One catalog read."""
        current = self._catalog.manifest().get("generation")
        if (
            self._generation is not None
            and current is not None
            and int(current) != self._generation
        ):
            self._drop_generation()

    def start_generation(self) -> int:
        """Begin a rebuild: the next generation's full-text directories start empty and the
        vector base is removed. Returns the new generation, which the rebuild's manifest names."""
        for name in ("fulltext", "sessions"):  # those already open (opening one may fail)
            if name in self.__dict__:
                self.__dict__[name].rollback()
        following = self.generation + 1
        self._drop_generation()
        self._generation = following
        for name in FULLTEXT_NAMES:
            self.parts.wipe_fulltext(name, following)
        self.base.remove()
        return following

    def remove_stale(self) -> None:
        """Delete other generations' files (after a rebuild has switched over)."""
        self.parts.remove_stale(self.generation)
        for stale in self.root.glob("memories-*.table"):
            if stale != self.memory_table.path:
                stale.unlink(missing_ok=True)  # a reader still mapping it keeps its pages

    def base_outdated(self) -> bool:
        """See IndexParts.base_outdated."""
        return self.parts.base_outdated()

    def files_missing(self) -> str | None:
        """Which index file was deleted from under the catalog, if any (no model load)."""
        missing = self.parts.missing(self.generation)
        if missing:
            return missing
        if not self.memory_table.exists():
            return "memory table missing"
        return None

    def size_bytes(self) -> int:
        return self.parts.size_bytes()
