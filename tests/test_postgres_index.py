"""A memdir whose derived index lives on PostgreSQL (settings.index.backend: postgres): the
commands work unchanged on top of it, memdirs sharing one database never see each other's
rows, a connection lost mid-update leaves the checkpoints where they were, and an unreachable
database is a one-line error that leaves the files untouched. The server is the one the test
session starts (conftest.postgres_dsn)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import MEMDIR_BIN, T0, T0_DT, clean_env, configure, snapshot

from memdir.archive_format import lifecycle
from memdir.archive_format.errors import ExitStatus
from memdir.archive_format.memdir import Memdir, init
from memdir.indexers.embedding import HashingEmbedder
from memdir.indexers.index import MemoryIndex
from memdir.indexers.postgres import IndexUnavailableError, PostgresParts, memdir_schema
from memdir.indexers.postgres.writer import writer_key

TEXTS = (
    "I drink my coffee black every morning",
    "Sam moved to Lisbon last spring",
    "The dog hates thunderstorms and hides under the bed",
    "My sister Ana plays the cello in an orchestra",
    "We bought a red kayak for the summer trips",
    "Lisbon has steep hills and yellow trams",
)


LATER = (T0_DT + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")


def on_postgres(memdir: Memdir, dsn: str) -> Memdir:
    return configure(
        memdir, embedder={"kind": "hashing"}, index={"backend": "postgres", "dsn": dsn}
    )


def taught(root: Path, texts: tuple[str, ...] = TEXTS, minute: int = 0) -> Memdir:
    memdir = Memdir.open(root)
    for number, text in enumerate(texts):
        lifecycle.teach(memdir, text, T0_DT + timedelta(minutes=minute + number))
    return memdir


def test_the_commands_work_unchanged_and_match_the_local_index(
    tmp_path: Path, postgres_dsn: str, cli_in_process: Any
) -> None:
    cli = cli_in_process  # what the commands answer, so in this process
    local, _ = init(tmp_path / "local", T0_DT)
    configure(local, embedder={"kind": "hashing"})
    taught(local.root)
    remote_root = tmp_path / "remote"
    shutil.copytree(local.root, remote_root)
    on_postgres(Memdir.open(remote_root), postgres_dsn)

    def answers(root: Path) -> dict[str, Any]:
        def run(*args: str) -> str:
            # after the last memory was taught: search and similar leave out memories not yet
            # written at MEMDIR_NOW (the policy on every surface, memdir/usecases/recall.search)
            done = cli(*args, cwd=root, now=LATER)
            assert done.code == 0, done
            return done.out

        run("index")
        found: dict[str, Any] = {}
        for query in ("coffee", "Lisbon hills", "orchestra cello"):
            recalled = json.loads(run("recall", query, "--json"))
            found[f"recall {query}"] = [item["id"] for item in recalled["results"]][:3]
            found[f"search {query}"] = run("search", query).split()[0]
        first = found["recall coffee"][0]
        found["similar"] = sorted(  # (ties in any order)
            (line.split()[0], float(line.split()[1])) for line in run("similar", first).splitlines()
        )
        run("index", "--rebuild")
        found["after rebuild"] = run("search", "kayak").split()[0]
        return found

    remote, here = answers(remote_root), answers(local.root)
    # the local cache keeps vectors in float16 (docs/SCALE.md), so a similarity printed to three
    # places may round the other way: the same memories, each within a rounding step
    similar, similar_here = remote.pop("similar"), here.pop("similar")
    assert remote == here
    assert [memory for memory, _ in similar] == [memory for memory, _ in similar_here]
    for (_, score), (_, score_here) in zip(similar, similar_here, strict=True):
        assert abs(score - score_here) <= 0.0015, (similar, similar_here)
    assert not list((remote_root / ".memdir" / "index").glob("tantivy-*"))  # nothing local
    assert not (remote_root / ".memdir" / "index" / "catalog.sqlite").exists()


def test_two_memdirs_in_one_database_never_see_each_other(
    tmp_path: Path, postgres_dsn: str
) -> None:
    first = on_postgres(init(tmp_path / "first", T0_DT)[0], postgres_dsn)
    second = on_postgres(init(tmp_path / "second", T0_DT)[0], postgres_dsn)
    assert memdir_schema(first) != memdir_schema(second)
    embedder = HashingEmbedder()
    indexes = {name: MemoryIndex(md, embedder=embedder) for name, md in
               (("first", first), ("second", second))}  # fmt: skip
    written: dict[str, set[str]] = {"first": set(), "second": set()}
    for round_ in range(4):  # interleaved: teach in one, index it, then the other
        for name, memdir in (("first", first), ("second", second)):
            text = f"{name} memdir note {round_} about shared coffee"
            written[name].add(lifecycle.teach(memdir, text, T0_DT + timedelta(minutes=round_)).id)
            indexes[name].update()
    victim = sorted(written["first"])[0]  # forgetting in one must not touch the other
    lifecycle.forget(first, victim, T0_DT + timedelta(hours=1))
    written["first"].discard(victim)
    indexes["first"].update()
    for name, index in indexes.items():
        assert {hit.id for hit in index.search("coffee", k=100)} == written[name]
        assert {hit.id for hit in index.similar("shared coffee note", k=100)} == written[name]
        assert {memory.id for memory in index.catalog.all_memories()} == written[name]
        assert index.bookkeeping.counts()["memories"] == len(written[name])


def _kill_on_embed(index: MemoryIndex, postgres_dsn: str) -> Any:
    """An embedder that ends the index's database connection (pg_terminate_backend) the first
    time it is asked to embed: halfway through an update, after its first catalog writes."""
    embedder = HashingEmbedder()
    real = embedder.embed

    def embed(texts: list[str]) -> Any:
        import psycopg

        if not getattr(embed, "done", False):
            embed.done = True  # type: ignore[attr-defined]
            pid = index.parts.db.backend_pid()  # type: ignore[attr-defined]
            with psycopg.connect(postgres_dsn, autocommit=True) as admin:
                admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        return real(texts)

    embedder.embed = embed  # type: ignore[method-assign]
    return embedder


def test_a_connection_lost_mid_update_keeps_the_checkpoint_and_the_next_update_resumes(
    md: Memdir, postgres_dsn: str
) -> None:
    memdir = on_postgres(md, postgres_dsn)
    taught(memdir.root, TEXTS[:3])
    MemoryIndex(memdir, embedder=HashingEmbedder()).update()
    before = MemoryIndex(memdir, embedder=HashingEmbedder())
    checkpoints = before.bookkeeping.checkpoints()
    taught(memdir.root, TEXTS[3:], minute=10)

    index = MemoryIndex(memdir, embedder=HashingEmbedder())
    index._embedder = _kill_on_embed(index, postgres_dsn)
    with pytest.raises(IndexUnavailableError):
        index.update()
    assert before.bookkeeping.checkpoints() == checkpoints  # nothing of the update committed
    assert before.bookkeeping.counts()["memories"] == 3

    report = index.update()  # the same object reconnects and carries on from the checkpoint
    assert not report.rebuilt
    assert before.bookkeeping.checkpoints() != checkpoints
    assert {hit.id for hit in index.search("Lisbon", k=10)} == {
        m.id for m in index.catalog.all_memories() if "Lisbon" in m.text
    }
    assert index.bookkeeping.counts()["memories"] == len(TEXTS)
    assert not index.needs_update()


def test_an_unreachable_database_is_one_line_and_the_files_are_untouched(
    md: Memdir, tmp_path: Path, cli: Any
) -> None:
    memdir = on_postgres(md, f"host={tmp_path / 'no-server'} user=memdir dbname=memdir")
    assert cli("teach", "written while the database is down", cwd=memdir.root).code == 0
    files = snapshot(memdir.root)
    for args in (("index",), ("recall", "database"), ("search", "database")):
        done = cli(*args, cwd=memdir.root)
        assert done.code == 9, done
        assert done.err.startswith("memdir: error: the index database is unavailable"), done
        assert "Traceback" not in done.err and "hint:" in done.err
        assert snapshot(memdir.root) == files


def test_a_password_in_the_dsn_is_refused_without_repeating_it(md: Memdir, cli: Any) -> None:
    config = md.root / "memdir.yaml"
    written = yaml.safe_load(config.read_text())
    written["settings"]["index"] = {"backend": "postgres", "dsn": "postgresql://me:s3cret@db/x"}
    config.write_text(yaml.safe_dump(written))
    done = cli("recall", "anything", cwd=md.root)
    assert done.code == 6, done
    assert "PGPASSWORD" in done.err and "s3cret" not in done.err + done.out


def test_parts_can_be_injected_for_another_schema(md: Memdir, postgres_dsn: str) -> None:
    """IndexStorage takes its parts from the caller (tests, a service that names schemas)."""
    memdir = on_postgres(md, postgres_dsn)
    taught(memdir.root, TEXTS[:2])
    parts = PostgresParts(postgres_dsn, memdir, memdir.cache_dir / "index", schema="memdir_named")
    index = MemoryIndex(memdir, embedder=HashingEmbedder(), parts=parts)
    index.update()
    import psycopg

    with psycopg.connect(postgres_dsn, autocommit=True) as admin:
        count = admin.execute("SELECT COUNT(*) FROM memdir_named.memories").fetchone()
    assert count == (2,)


def test_a_rebuild_copying_its_batches_stores_what_row_by_row_inserts_store(
    md: Memdir, postgres_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rebuild of more memories than postgres.catalog.COPY_FROM copies each batch (the
    memories, their affect, distillations and embedding rows) through a temporary table;
    with that bound out of reach every row is its own insert. Both leave the same catalog,
    odd characters and all, and recall and similar answer the same."""
    from memdir.indexers.postgres import catalog as module

    memdir = on_postgres(md, postgres_dsn)
    texts = tuple(f"{TEXTS[n % len(TEXTS)]}, note {n}: a tab\there, a \\N, quotes ' \" é"
                  for n in range(module.COPY_FROM + 50))  # fmt: skip
    taught(memdir.root, texts)

    def built(schema: str) -> tuple[MemoryIndex, dict[str, Any]]:
        parts = PostgresParts(postgres_dsn, memdir, memdir.cache_dir / "index", schema=schema)
        index = MemoryIndex(memdir, embedder=HashingEmbedder(), parts=parts)
        assert index.update().rebuilt
        catalog = index.catalog
        memories = list(catalog.all_memories())
        hashes = [memory.content_hash for memory in memories]
        stored = {
            "memories": [(m.iid, m.id, m.text, m.status, m.searchable, m.content_hash,
                          m.annotator, m.stored_affect) for m in memories],
            "affect": catalog.affect_for(hashes),
            "distilled": catalog.distilled_for(hashes),
            "vector rows": catalog.vector_rows(hashes),
            "recall": [[hit.id for hit in index.search(query, k=10)]
                       for query in ("Lisbon hills", "coffee morning", "note 7")],
            "similar": [hit.id for hit in index.similar("a dog in a thunderstorm", k=10)],
        }  # fmt: skip
        return index, stored

    copied, stored = built("memdir_copied")
    assert len(stored["memories"]) == len(texts) and len(stored["vector rows"]) == len(texts)
    assert len(stored["affect"]) == len(texts)
    assert sorted(m[2] for m in stored["memories"]) == sorted(texts)
    monkeypatch.setattr(module, "COPY_FROM", 10**9)
    one_by_one, stored_one_by_one = built("memdir_row_by_row")
    assert stored == stored_one_by_one
    copied.close()
    one_by_one.close()


INDEX_HOLDER = """
import sys
from pathlib import Path
from memdir.archive_format.memdir import Memdir
from memdir.indexers.embedding import HashingEmbedder
from memdir.indexers.index import MemoryIndex
index = MemoryIndex(Memdir.open(Path(sys.argv[1])), embedder=HashingEmbedder())
with index.lock():
    print("locked", flush=True)
    sys.stdin.readline()
"""


def hold_index_lock(root: Path) -> subprocess.Popen[bytes]:
    """Another process holding the index writer lock of the memdir at `root` until its stdin
    closes; returns once it holds it."""
    holder = subprocess.Popen(
        [sys.executable, "-c", INDEX_HOLDER, str(root)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        cwd=Path(__file__).parent.parent,
    )
    assert holder.stdout is not None and holder.stdout.readline() == b"locked\n"
    return holder


def two_hosts(tmp_path: Path, dsn: str) -> tuple[Memdir, Memdir]:
    """One memdir on two "hosts": two copies of its files (so two lock files that know
    nothing of each other) whose index is the same schema of one database."""
    first = on_postgres(init(tmp_path / "host-a", T0_DT)[0], dsn)
    taught(first.root, TEXTS[:3])
    shutil.copytree(first.root, tmp_path / "host-b")
    second = Memdir.open(tmp_path / "host-b")
    assert memdir_schema(first) == memdir_schema(second)
    return first, second


def test_one_index_writer_across_hosts(tmp_path: Path, postgres_dsn: str, cli: Any) -> None:
    """While a process on one host holds the memdir's index writer lock, `memdir index` on
    another host (its own copy of the files, its own lock file) waits for the database's
    advisory lock, then fails in one line naming the holder; once the holder is done it
    runs."""
    first, second = two_hosts(tmp_path, postgres_dsn)
    holder = hold_index_lock(first.root)
    try:
        files = snapshot(second.root)
        started = time.monotonic()
        done = cli("index", cwd=second.root, env=clean_env(MEMDIR_INDEX_TIMEOUT="0.5"))
        waited = time.monotonic() - started
        assert done.code == ExitStatus.LOCKED, done
        [line, hint] = done.err.strip().splitlines()
        assert line.startswith("memdir: error: the index is being updated by memdir index on")
        assert f"pid {holder.pid}" in line and memdir_schema(second) in line
        assert "MEMDIR_INDEX_TIMEOUT" in hint and "Traceback" not in done.err
        assert waited >= 0.5
        assert snapshot(second.root) == files
        assert not MemoryIndex(second, embedder=HashingEmbedder()).bookkeeping.checkpoints()
        # a writer that waits long enough gets the lock when the holder lets go
        waiting = subprocess.Popen(
            [str(MEMDIR_BIN), "index"],
            cwd=second.root,
            env=clean_env(MEMDIR_INDEX_TIMEOUT="60", MEMDIR_NOW=T0),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        time.sleep(0.5)
        assert waiting.poll() is None  # still waiting for the holder
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(10)
    _, err = waiting.communicate(timeout=60)
    assert waiting.returncode == 0, err
    assert MemoryIndex(first, embedder=HashingEmbedder()).bookkeeping.counts()["memories"] == 3


def test_a_killed_index_writer_leaves_no_lock_in_the_database(
    tmp_path: Path, postgres_dsn: str, cli: Any
) -> None:
    first, second = two_hosts(tmp_path, postgres_dsn)
    holder = hold_index_lock(first.root)
    holder.kill()
    holder.wait(10)
    done = cli("index", cwd=second.root, env=clean_env(MEMDIR_INDEX_TIMEOUT="10"))
    assert done.code == 0, done


def test_the_index_writer_lock_is_reentrant_and_released(md: Memdir, postgres_dsn: str) -> None:
    """Nested holds in one process take the database lock once and release it at the end."""
    memdir = on_postgres(md, postgres_dsn)
    index = MemoryIndex(memdir, embedder=HashingEmbedder())
    import psycopg

    def advisory_locks() -> int:
        with psycopg.connect(postgres_dsn, autocommit=True) as admin:
            found = admin.execute(
                "SELECT COUNT(*) FROM pg_locks WHERE locktype = 'advisory' AND granted"
                " AND classid = %s::bigint::oid AND objid = %s::bigint::oid",
                (
                    writer_key(memdir_schema(memdir)) >> 32,
                    writer_key(memdir_schema(memdir)) & 0xFFFFFFFF,
                ),
            ).fetchone()
        return int(found[0])

    with index.lock():
        with index.lock():
            assert advisory_locks() == 1
        assert advisory_locks() == 1
    assert advisory_locks() == 0
    index.update()  # takes and releases it again
    assert advisory_locks() == 0
