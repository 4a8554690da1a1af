"""The derived indexes: incremental = rebuild, lifecycle reaches both indexes, rewrites are
detected, caches are reused, concurrent runs are safe, and the CLI's search/similar output.

Everything runs on real files in tmp_path with real Tantivy and FAISS; CLI cases run the
installed `memdir` script in a subprocess.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import sqlite3
import subprocess
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from conftest import MEMDIR_BIN, T0_DT, clean_env, configure, memdir_main

from memdir.archive_format import lifecycle
from memdir.archive_format.clock import format_time
from memdir.archive_format.memdir import Memdir
from memdir.archive_format.records import encode_line, new_memory
from memdir.indexers import embedding
from memdir.indexers.embedding import HashingEmbedder
from memdir.indexers.index import MemoryIndex

QUERIES = ("coffee", "sister", "piano lessons", "train to Lisbon", "garden tomatoes", "deadline")
TEXTS = (
    "I drink my coffee black every morning before work",
    "My sister Ana lives in Lisbon and teaches piano lessons",
    "The project deadline moved to the end of March",
    "We grow tomatoes and basil in the garden behind the house",
    "I take the early train to Lisbon on Mondays",
    "The dog hates thunderstorms and hides under the bed",
    "Ana's birthday concert is on the twelfth of June",
    "I am learning to cook risotto with mushrooms",
)


# --- helpers --------------------------------------------------------------------------------


@pytest.fixture
def hashing() -> HashingEmbedder:
    return HashingEmbedder()


def at(minutes: int) -> Any:
    return T0_DT + timedelta(minutes=minutes)


def teach_texts(memdir: Memdir) -> None:
    for number, text in enumerate(TEXTS):
        lifecycle.teach(memdir, text, at(number))


def indexed_texts(memdir: Memdir, embedder: Any) -> MemoryIndex:
    """TEXTS taught, one minute apart, and indexed."""
    teach_texts(memdir)
    index = MemoryIndex(memdir, embedder=embedder)
    index.update()
    return index


def results(index: MemoryIndex, queries: tuple[str, ...] = QUERIES) -> dict[str, Any]:
    """What search and similar return for each query: the ids full text finds (BM25 scores
    count deleted documents until Tantivy merges segments, so ranks may shift), and similar's
    (cosine, id) pairs in rank order."""
    found: dict[str, Any] = {}
    for query in queries:
        found[f"search {query}"] = sorted(hit.id for hit in index.search(query, k=100))
        hits = index.similar(query, k=100)
        found[f"similar {query}"] = sorted(
            ((round(hit.score, 4), hit.id) for hit in hits), key=lambda pair: (-pair[0], pair[1])
        )
    found["statuses"] = sorted(
        (memory.id, memory.status, memory.searchable) for memory in index.catalog.all_memories()
    )
    return found


def assert_vectors_match_texts(index: MemoryIndex, embedder: Any) -> None:
    """Each catalogued memory's vector, found by iid through the row map, is its text's."""
    import numpy as np

    memories = list(index.catalog.all_memories())
    matrix, found = index.vector_matrix([memory.iid for memory in memories])
    assert found.all()
    expected = as_cached(embedder.embed([memory.text for memory in memories]))
    assert np.allclose(matrix, expected, atol=1e-6)


def as_cached(vectors: Any) -> Any:
    """Vectors as the embedding cache keeps them: float16 rows, read back as float32."""
    import numpy as np

    return vectors.astype(np.float16).astype(np.float32)


def search_ids(index: MemoryIndex, query: str) -> set[str]:
    return {hit.id for hit in index.search(query, k=100)}


def similar_ids(index: MemoryIndex, query: str) -> set[str]:
    return {hit.id for hit in index.similar(query, k=100)}


def fresh_index(memdir: Memdir, embedder: Any) -> MemoryIndex:
    """An index built from nothing: `.memdir/` deleted first."""
    shutil.rmtree(memdir.cache_dir, ignore_errors=True)
    index = MemoryIndex(memdir, embedder=embedder)
    report = index.update()
    assert report.rebuilt and report.reason == "no index yet"
    return index


def files_under(directory: Path) -> Iterator[Path]:
    return (path for path in directory.rglob("*") if path.is_file())


def cli_json(
    *args: str, root: Path, env: dict[str, str] | None = None, process: bool = False
) -> Any:
    done = run_cli(*args, "--json", root=root, env=env, process=process)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def run_cli(
    *args: str, root: Path, env: dict[str, str] | None = None, process: bool = False
) -> subprocess.CompletedProcess[str]:
    """`memdir --dir ROOT ARGS` through the CLI in this process (what the index answers is the
    subject here), or as the real console script (`process`: another process's lock, a model
    looked for from a new process's environment)."""
    now = format_time(at(600))
    if not process:
        done = memdir_main("--dir", str(root), *args, now=now, env=env)
        return subprocess.CompletedProcess(done.args, done.code, done.out, done.err)
    # (one BLAS thread, as every process of the suite: conftest.py)
    environment = {**(env or clean_env()), "MEMDIR_NOW": now}
    return subprocess.run(
        [str(MEMDIR_BIN), "--dir", str(root), *args],
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )


def write_rounds(memdir: Memdir) -> tuple[dict[str, str], list[Callable[[], None]]]:
    """Four rounds of writes, to be called with an index update after each; and named ids."""
    ids: dict[str, str] = {}

    def round_1() -> None:
        for number, text in enumerate(TEXTS[:5]):
            ids[f"t{number}"] = lifecycle.teach(memdir, text, at(number)).id
        ids["coffee_v1"] = lifecycle.teach(
            memdir, "My usual coffee order is a flat white", at(6), key="coffee-order"
        ).id
        ids["guess_a"] = lifecycle.infer(memdir, "The user probably plays piano too", at(7)).id
        ids["guess_b"] = lifecycle.infer(memdir, "The user seems to like train journeys", at(8)).id
        ids["guess_c"] = lifecycle.infer(memdir, "The user may dislike gardening chores", at(9)).id

    def round_2() -> None:
        ids["coffee_v2"] = lifecycle.teach(
            memdir, "My usual coffee order is now an oat cortado", at(20), key="coffee-order"
        ).id
        lifecycle.reject(memdir, ids["guess_a"], "the user does not play", at(21))
        lifecycle.confirm(memdir, ids["guess_b"], at(22))
        ids["t5"] = lifecycle.teach(memdir, TEXTS[5], at(23)).id

    def round_3() -> None:
        lifecycle.link(memdir, ids["t1"], ids["t4"], "related", at(30))
        lifecycle.expire(memdir, at(60 * 24 * 8))  # guess_c's 7-day TTL has passed
        lifecycle.reject(memdir, ids["t3"], "we moved house", at(31))
        ids["t6"] = lifecycle.teach(memdir, TEXTS[6], at(32)).id

    def round_4() -> None:
        lifecycle.confirm(memdir, ids["guess_a"], at(40))  # the user changed their mind
        ids["t7"] = lifecycle.teach(memdir, TEXTS[7], at(41)).id

    return ids, [round_1, round_2, round_3, round_4]


# --- incremental == rebuild ------------------------------------------------------------------


@pytest.mark.parametrize("base", ["flat", "hnsw"])
def test_incremental_updates_match_a_rebuild(md: Memdir, hashing: Any, base: str) -> None:
    memdir = configure(md, vectors={"hnsw_above": 0 if base == "hnsw" else 50_000})
    ids, rounds = write_rounds(memdir)
    index = MemoryIndex(memdir, embedder=hashing)
    for number, step in enumerate(rounds):
        step()
        report = index.update()
        assert report.rebuilt == (number == 0), report
        assert_vectors_match_texts(index, hashing)
    assert index.status()["vector_base"]["kind"] == base
    assert index.bookkeeping.counts()["delta"] > 0  # later rounds live in the delta
    incremental = results(index)

    # sanity: the lifecycle reached the indexes
    live = search_ids(index, "coffee") | similar_ids(index, "coffee order")
    assert ids["coffee_v2"] in live and ids["coffee_v1"] not in live
    assert ids["t3"] not in similar_ids(index, TEXTS[3])
    assert ids["guess_a"] in similar_ids(index, "The user probably plays piano too")
    statuses = {memory.id: memory.status for memory in index.catalog.all_memories()}
    assert (statuses[ids["guess_b"]], statuses[ids["guess_c"]]) == ("durable", "expired")

    index.updater.merge_delta()  # folding the delta into the base changes nothing
    assert results(index) == incremental

    report = index.update(rebuild=True)
    assert report.rebuilt and report.embedded == 0
    assert results(index) == incremental
    assert_vectors_match_texts(index, hashing)  # the store was compacted: rows renumbered
    index.close()

    rebuilt = fresh_index(memdir, hashing)
    assert results(rebuilt) == incremental
    assert_vectors_match_texts(rebuilt, hashing)
    rebuilt.close()


def cli_results(root: Path) -> list[Any]:
    """search and similar through the CLI; BM25 scores are left out because Tantivy counts
    deleted documents in its statistics until segments merge (ranks and cosines must match)."""
    found = cli_json("search", "Lisbon sister", root=root)
    return [
        [(hit["id"], hit["text"], hit["snippet"]) for hit in found],
        cli_json("similar", "where does my sister live", root=root),
    ]


def test_cli_index_after_deleting_the_cache_gives_the_same_results(md: Memdir) -> None:
    teach_texts(md)
    before = cli_json("search", "Lisbon sister", root=md.root)  # builds the index
    lifecycle.teach(md, "My sister visits Lisbon every summer", at(50))
    lifecycle.reject(md, before[0]["id"], "wrong", at(51))
    incremental = cli_results(md.root)  # search and similar refresh the index incrementally
    assert [hit[0] for hit in incremental[0]] != [hit["id"] for hit in before]
    shutil.rmtree(md.cache_dir)
    report = cli_json("index", root=md.root)
    assert report["rebuilt"] and report["reason"] == "no index yet"
    assert cli_results(md.root) == incremental


# --- lifecycle reaches both indexes ----------------------------------------------------------


SECRET = "My online banking passphrase is purple-zebrafish-4417"


def test_forgotten_memory_never_returns_and_leaves_no_bytes(md: Memdir, minilm: Any) -> None:
    teach_texts(md)
    secret = lifecycle.teach(md, SECRET, at(10)).id
    lifecycle.reject(md, secret, "said by mistake: purple-zebrafish-4417", at(11))
    index = MemoryIndex(md, embedder=minilm)
    index.update()
    lifecycle.teach(md, "I keep my passwords in a paper notebook", at(12))
    index.update()  # the secret is in the base, its events in the catalog
    assert any(b"zebrafish" in path.read_bytes() for path in files_under(md.cache_dir))

    lifecycle.forget(md, secret, at(20))
    report = index.update()
    assert report.rebuilt and "rewritten" in report.reason
    for query in ("banking passphrase", "purple zebrafish", SECRET):
        assert secret not in search_ids(index, query)
        assert secret not in similar_ids(index, query)
    assert secret not in {memory.id for memory in index.catalog.all_memories()}
    # while this process still holds the catalog open (a daemon would) ...
    leaked = [path for path in files_under(md.cache_dir) if b"zebrafish" in path.read_bytes()]
    assert not leaked
    index.close()
    # ... and after it closed, and for the words of the text too
    for path in files_under(md.cache_dir):
        data = path.read_bytes()
        assert b"zebrafish" not in data and b"passphrase" not in data, path
    # later appends keep it out
    lifecycle.teach(md, "Banking is done on Fridays", at(30))
    index = MemoryIndex(md, embedder=minilm)
    assert not index.update().rebuilt
    assert secret not in similar_ids(index, SECRET)
    index.close()


def test_forget_through_the_cli_leaves_no_bytes(md: Memdir, cli: Any) -> None:
    for number, text in enumerate(TEXTS[:4]):
        lifecycle.teach(md, text, at(number))
    secret = lifecycle.teach(md, SECRET, at(10)).id
    assert [hit["id"] for hit in cli_json("search", "zebrafish", root=md.root)] == [secret]
    done = run_cli("forget", secret, root=md.root)
    assert done.returncode == 0, done.stderr
    assert cli_json("search", "zebrafish", root=md.root) == []
    assert secret not in {hit["id"] for hit in cli_json("similar", SECRET, root=md.root)}
    assert not [p for p in files_under(md.cache_dir) if b"zebrafish" in p.read_bytes()]


@pytest.mark.parametrize("base", ["flat", "hnsw"])
def test_rejected_never_returns_until_confirmed(md: Memdir, hashing: Any, base: str) -> None:
    memdir = configure(md, vectors={"hnsw_above": 0 if base == "hnsw" else 50_000})
    for number, text in enumerate(TEXTS[:6]):
        lifecycle.teach(memdir, text, at(number))
    in_base = lifecycle.infer(memdir, "The user is allergic to cats", at(10)).id
    index = MemoryIndex(memdir, embedder=hashing)
    index.update()
    in_delta = lifecycle.infer(memdir, "The user is afraid of flying", at(11)).id
    index.update()
    in_base_row, in_delta_row = (
        index.catalog.db.execute("SELECT in_base FROM memories WHERE id = ?", (memory,)).fetchone()
        for memory in (in_base, in_delta)
    )
    assert (in_base_row[0], in_delta_row[0]) == (1, 0)

    lifecycle.reject(memdir, in_base, "the user has a cat", at(20))
    lifecycle.reject(memdir, in_delta, "the user flies weekly", at(21))
    assert not index.update().rebuilt
    for memory, text in ((in_base, "allergic to cats"), (in_delta, "afraid of flying")):
        assert memory not in search_ids(index, text)
        assert memory not in similar_ids(index, text)
        assert memory not in similar_ids(index, "The user " + text)
    assert index.status()["searchable"] == 6

    index.update(rebuild=True)  # and after a rebuild
    assert in_base not in similar_ids(index, "allergic to cats")
    assert in_delta not in search_ids(index, "flying")

    lifecycle.confirm(memdir, in_base, at(30))  # the user takes it back
    lifecycle.confirm(memdir, in_delta, at(31))
    assert not index.update().rebuilt
    assert in_base in search_ids(index, "cats") and in_delta in search_ids(index, "flying")
    assert index.similar("The user is allergic to cats", k=1)[0].id == in_base
    assert index.similar("The user is afraid of flying", k=1)[0].id == in_delta
    index.close()


def test_superseded_memory_leaves_search_and_similar(md: Memdir, hashing: Any) -> None:
    old = lifecycle.teach(md, "I live in Porto near the river", at(0), key="home-city").id
    lifecycle.teach(md, "The river is lovely in autumn", at(1))
    index = MemoryIndex(md, embedder=hashing)
    index.update()
    assert old in search_ids(index, "Porto river")
    new = lifecycle.teach(md, "I live in Lisbon near the river now", at(60), key="home-city").id
    assert not index.update().rebuilt
    assert old not in search_ids(index, "Porto river") | similar_ids(index, "live in Porto")
    assert new in search_ids(index, "live river") & similar_ids(index, "I live in Lisbon")
    statuses = {memory.id: memory.status for memory in index.catalog.all_memories()}
    assert statuses[old] == "superseded" and statuses[new] == "durable"
    index.close()


# --- shelves rewritten behind the index's back -----------------------------------------------


def replace_by_rename(path: Path, data: bytes) -> None:
    """What `git checkout` does: write a new file, rename it over the shelf (new inode)."""
    temp = path.with_name(path.name + ".checkout")
    temp.write_bytes(data)
    os.replace(temp, path)


def replace_in_place(path: Path, data: bytes) -> None:
    """An editor or tool that truncates and rewrites the same file (same inode)."""
    with open(path, "r+b") as handle:
        handle.truncate(0)
        handle.write(data)


@pytest.mark.parametrize("rewrite", [replace_by_rename, replace_in_place])
def test_rewritten_shelf_is_detected_and_reindexed(md: Memdir, hashing: Any, rewrite: Any) -> None:
    first = [lifecycle.teach(md, text, at(n)).id for n, text in enumerate(TEXTS[:3])]
    older_version = md.memory_shelf.read_bytes()
    later = [lifecycle.teach(md, text, at(10 + n)).id for n, text in enumerate(TEXTS[3:6])]
    index = MemoryIndex(md, embedder=hashing)
    index.update()
    assert set(later) <= search_ids(index, "garden train dog")

    rewrite(md.memory_shelf, older_version)  # "checkout" the older version: shorter
    assert index.needs_update()
    report = index.update()
    assert report.rebuilt and report.reason == "shelf memories.jsonl was rewritten"
    assert not set(later) & (search_ids(index, "garden train dog") | similar_ids(index, "garden"))
    assert set(first) <= similar_ids(index, "coffee sister deadline")

    # another version of exactly the same size: a different memory in the last line's place
    *kept, last = older_version.splitlines(keepends=True)
    fields = {name: value for name, value in json.loads(last).items() if name not in ("kind", "id")}
    fields["text"] = fields["text"].replace("project", "wombats")
    swapped = new_memory(**fields)
    payload = b"".join(kept) + encode_line(swapped.to_line())
    assert len(payload) == len(older_version) and payload != older_version
    rewrite(md.memory_shelf, payload)
    assert index.needs_update()  # the cheap check `memdir search` relies on catches it too
    assert index.update().rebuilt
    assert search_ids(index, "wombats") == {swapped.id}
    assert first[-1] not in search_ids(index, "project") | similar_ids(index, TEXTS[2])
    index.close()


def test_a_shelf_git_wrote_anew_with_lines_appended_is_appended_to_not_rebuilt(
    md: Memdir, hashing: Any
) -> None:
    """A git pull or merge writes the whole shelf as a new file (a new inode), the old bytes
    first: the index appends the pulled lines instead of rebuilding (docs/SCALE.md)."""
    kept = [lifecycle.teach(md, text, at(n)).id for n, text in enumerate(TEXTS[:4])]
    index = MemoryIndex(md, embedder=hashing)
    index.update()
    inode = md.memory_shelf.stat().st_ino
    pulled = new_memory(created=format_time(at(30)), text="The neighbours adopted a grey parrot",
                        source="teaching", author="user", store="semantic")  # fmt: skip
    replace_by_rename(md.memory_shelf, md.memory_shelf.read_bytes() + encode_line(pulled.to_line()))
    assert md.memory_shelf.stat().st_ino != inode and index.needs_update()
    report = index.update()
    assert not report.rebuilt and report.memories == 1, report
    assert pulled.id in search_ids(index, "grey parrot")
    assert set(kept) <= similar_ids(index, " ".join(TEXTS[:4]))
    incremental = results(index)
    index.close()
    assert results(fresh_index(md, hashing)) == incremental


def test_rewritten_shelf_through_the_cli(md: Memdir) -> None:
    md = configure(md, embedder={"kind": "hashing"})
    lifecycle.teach(md, "Orchids need very little water", at(0))
    older_version = md.memory_shelf.read_bytes()
    dropped = lifecycle.teach(md, "Cacti need even less water", at(1)).id
    assert dropped in {hit["id"] for hit in cli_json("search", "water", root=md.root)}
    replace_by_rename(md.memory_shelf, older_version)
    hits = cli_json("search", "water", root=md.root)  # search refreshes the index first
    assert [hit["text"] for hit in hits] == ["Orchids need very little water"]


def test_appended_line_is_indexed_incrementally(md: Memdir) -> None:
    md = configure(md, embedder={"kind": "hashing"})
    teach_texts(md)
    assert cli_json("index", root=md.root)["rebuilt"]
    status = cli_json("index", "--status", root=md.root)
    assert status["up_to_date"] and status["vector_delta"] == 0
    base_size = status["vector_base"]["size"]

    added = lifecycle.teach(md, "The neighbours adopted a grey parrot", at(100)).id
    assert not cli_json("index", "--status", root=md.root)["up_to_date"]
    done = run_cli("index", root=md.root)
    assert done.returncode == 0 and "rebuil" not in done.stderr, done.stderr
    assert "updated: 1 memory," in done.stderr

    lifecycle.teach(md, "The parrot says hello every morning", at(101))
    report = cli_json("index", root=md.root)
    assert report["rebuilt"] is False and report["reason"] == ""
    assert (report["memories"], report["embedded"], report["events"]) == (1, 1, 0)
    status = cli_json("index", "--status", root=md.root)
    assert status["up_to_date"] and status["memories"] == len(TEXTS) + 2
    assert status["vector_base"]["size"] == base_size and status["vector_delta"] == 2
    assert added in {hit["id"] for hit in cli_json("search", "parrot", root=md.root)}


def test_appended_line_in_process_reads_only_the_tail(md: Memdir, hashing: Any) -> None:
    index = indexed_texts(md, hashing)
    offset = index.bookkeeping.checkpoints()["memories.jsonl"].offset
    lifecycle.teach(md, "Blackbirds sing at dawn in April", at(50))
    report = index.update()
    assert (report.rebuilt, report.memories, report.embedded) == (False, 1, 1)
    checkpoint = index.bookkeeping.checkpoints()["memories.jsonl"]
    assert checkpoint.offset == md.memory_shelf.stat().st_size > offset
    index.close()


def test_trailing_blank_lines_do_not_keep_the_index_stale(md: Memdir, hashing: Any) -> None:
    lifecycle.teach(md, TEXTS[0], at(0))
    with open(md.memory_shelf, "ab") as handle:
        handle.write(b"\n  \n")  # a hand edit; the reader skips blank lines
    index = MemoryIndex(md, embedder=hashing)
    index.update()
    assert not index.needs_update()  # else every search would take the lock and update
    lifecycle.teach(md, TEXTS[1], at(1))
    report = index.update()
    assert (report.rebuilt, report.memories) == (False, 1) and not index.needs_update()
    index.close()


# --- rebuild triggers and the embedding cache -----------------------------------------------


def test_manifest_version_mismatch_rebuilds(md: Memdir, hashing: Any) -> None:
    index = indexed_texts(md, hashing)
    before = results(index)
    with index.catalog_writer.transaction():
        index.catalog_writer.set_manifest({"version": "0"})
    report = index.update()
    assert report.rebuilt and report.reason.startswith("index version 0")
    assert report.embedded == 0  # the cache survives a format change of the index
    assert results(index) == before
    assert not index.update().rebuilt
    index.close()


def test_an_older_float32_vector_cache_is_kept_and_rewritten_as_float16(
    md: Memdir, hashing: Any
) -> None:
    """An index of INDEX_VERSION 11 kept its embeddings as float32 rows in MODEL.f32: the
    rebuild its version asks for embeds nothing and leaves only the float16 file."""
    import numpy as np

    index = indexed_texts(md, hashing)
    before = results(index)
    folder = md.cache_dir / "index" / "vectors"
    (f16,) = folder.glob("*.f16")
    vectors = np.frombuffer(f16.read_bytes(), dtype="<f2").astype("<f4")
    f16.with_suffix(".f32").write_bytes(vectors.tobytes())
    f16.unlink()
    with index.catalog_writer.transaction():
        index.catalog_writer.set_manifest({"version": "11"})
    index.close()
    index = MemoryIndex(md, embedder=hashing)
    report = index.update()
    assert report.rebuilt and report.reason.startswith("index version 11")
    assert report.embedded == 0
    assert [path.name for path in folder.iterdir()] == [f16.name]
    assert f16.stat().st_size == vectors.nbytes // 2
    assert results(index) == before
    index.close()


@pytest.mark.parametrize("base", ["flat", "hnsw"])
def test_an_older_vector_base_is_read_then_written_again_from_the_cache(
    md: Memdir, hashing: Any, base: str
) -> None:
    """Before the base kept no vectors of its own, it was a FAISS IndexIDMap2 holding a copy
    of them by iid (8-bit above hnsw_above): such a base answers as it is, and the next update
    writes the new one from the cache, embedding nothing and rebuilding nothing; the answers
    stay the same and the base file no longer holds a vector."""
    import faiss
    import numpy as np

    from memdir.indexers.vectors import written_by_older

    memdir = configure(md, vectors={"hnsw_above": 0 if base == "hnsw" else 50_000})
    index = indexed_texts(memdir, hashing)
    before = results(index)
    iids = np.asarray(index.catalog.searchable_iids(), dtype=np.int64)
    vectors, _ = index.vector_matrix(iids.tolist())
    quantiser: Any = faiss.ScalarQuantizer
    inner = (
        faiss.IndexHNSWSQ(vectors.shape[1], quantiser.QT_8bit, 32, faiss.METRIC_INNER_PRODUCT)
        if base == "hnsw"
        else faiss.IndexScalarQuantizer(
            vectors.shape[1], quantiser.QT_fp16, faiss.METRIC_INNER_PRODUCT
        )  # fmt: skip
    )
    older = faiss.IndexIDMap2(inner)
    older.train(vectors)
    older.add_with_ids(vectors, iids)
    path = md.cache_dir / "index" / "faiss" / "base.index"
    faiss.write_index(older, str(path))
    index.close()

    index = MemoryIndex(memdir, embedder=hashing)
    assert index.status()["vector_base"] == {"kind": base, "size": len(iids)}
    assert results(index) == before  # read as it is
    assert index.needs_update()
    report = index.update()
    assert report.merged and not report.rebuilt and report.embedded == 0
    assert not written_by_older(path) and not index.needs_update()
    assert index.status()["vector_base"] == {"kind": base, "size": len(iids)}
    assert results(index) == before
    data = path.read_bytes()
    assert not any(row.astype("<f2").tobytes() in data for row in vectors)
    index.close()


def test_a_rebuild_that_drops_no_vector_leaves_the_embedding_cache(
    md: Memdir, hashing: Any
) -> None:
    """A rebuild compacts the embedding cache only when a cached vector is no memory's any
    more (a forgotten one's goes then, test_forget_everywhere): when every row is still some
    memory's, renumbering would move none, and the file stays as it is."""
    index = indexed_texts(md, hashing)
    before = results(index)
    (f16,) = (md.cache_dir / "index" / "vectors").glob("*.f16")
    written = f16.stat()
    report = index.update(rebuild=True)
    assert report.rebuilt and report.embedded == 0
    assert (f16.stat().st_ino, f16.stat().st_mtime_ns) == (written.st_ino, written.st_mtime_ns)
    assert results(index) == before
    assert_vectors_match_texts(index, hashing)
    index.close()


def test_a_catalog_of_the_previous_layout_keeps_its_caches_through_the_rebuild(
    md: Memdir, hashing: Any
) -> None:
    """A catalog as memdir wrote it before the leaner layout (hex text keys, full JSON values,
    the tables `affect`, `distilled`, `vector_rows`): the rebuild its schema asks for copies
    the caches over and embeds, annotates and distils nothing (a value no annotator would give
    is still there after it), and recall finds what it found."""
    index = indexed_texts(md, hashing)
    before = results(index)
    hashes = list(index.bookkeeping.content_hashes().values())
    affect = index.catalog_caches.affect_for(hashes)
    distilled = index.catalog_caches.distilled_for(hashes)
    rows = index.catalog_caches.vector_rows(hashes)
    assert len(affect) == len(distilled) == len(rows) == len(TEXTS)
    marked = hashes[0]
    affect[marked] = (affect[marked][0], {**affect[marked][1], "valence": 0.1234})
    distilled[marked] = {**distilled[marked], "confidence": 0.4321}
    index.close()
    with sqlite3.connect(md.cache_dir / "index" / "catalog.sqlite") as db:
        db.executescript(
            "DROP TABLE affect_values; DROP TABLE distillations; DROP TABLE embedding_rows;"
            "CREATE TABLE affect (content_hash TEXT PRIMARY KEY, annotator TEXT NOT NULL,"
            " value TEXT NOT NULL);"
            "CREATE TABLE distilled (content_hash TEXT PRIMARY KEY, value TEXT NOT NULL);"
            "CREATE TABLE vector_rows (content_hash TEXT PRIMARY KEY, number BIGINT NOT NULL);"
            "PRAGMA user_version = 54321;"
        )
        db.executemany(
            "INSERT INTO affect VALUES (?, ?, ?)",
            [(h, who, json.dumps(value)) for h, (who, value) in affect.items()],
        )
        db.executemany(
            "INSERT INTO distilled VALUES (?, ?)",
            [(h, json.dumps(value)) for h, value in distilled.items()],
        )
        db.executemany("INSERT INTO vector_rows VALUES (?, ?)", rows.items())  # fmt: skip
    index = MemoryIndex(md, embedder=hashing)
    report = index.update()
    assert report.rebuilt and report.embedded == 0
    assert index.catalog_caches.affect_for(hashes) == affect
    assert index.catalog_caches.distilled_for(hashes) == distilled
    assert index.catalog_caches.vector_rows(hashes) == rows
    assert results(index) == before
    assert not index.update().rebuilt
    index.close()


def test_cli_search_after_an_index_version_change_rebuilds(md: Memdir) -> None:
    md = configure(md, embedder={"kind": "hashing"})
    teach_texts(md)
    cli_json("index", root=md.root)
    with sqlite3.connect(md.cache_dir / "index" / "catalog.sqlite") as db:
        db.execute("UPDATE manifest SET value = '0' WHERE name = 'version'")
    # and a Tantivy index with another schema, as an older memdir would have left it
    import tantivy

    current = next((md.cache_dir / "index").glob("tantivy-*"))
    shutil.rmtree(current)
    current.mkdir()
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("id", stored=True)
    old = tantivy.Index(builder.build(), path=str(current))
    writer = old.writer()
    writer.add_document(tantivy.Document(id="m-0000000000000000"))
    writer.commit()
    del writer, old

    assert run_cli("index", "--status", root=md.root).returncode == 0
    done = run_cli("search", "Lisbon", "--json", root=md.root)
    assert done.returncode == 0, done.stderr
    assert "rebuilding the index: index version 0" in done.stderr
    assert len(json.loads(done.stdout)) == 2


def test_embedding_model_change_rebuilds_every_vector(md: Memdir, minilm: Any) -> None:
    ids = [lifecycle.teach(md, text, at(n)).id for n, text in enumerate(TEXTS)]
    index = MemoryIndex(md, embedder=minilm)
    assert index.update().embedded == len(TEXTS)
    index.close()

    index = MemoryIndex(md, embedder=HashingEmbedder())
    report = index.update()
    assert report.rebuilt and report.reason.startswith("embedding model changed")
    assert report.embedded == len(TEXTS)
    assert index.bookkeeping.manifest()["model"] == "hashing-384"
    top = index.similar(TEXTS[3], k=1)[0]
    assert top.id == ids[3] and top.score == pytest.approx(1.0, abs=1e-3)  # float16 cache
    index.close()

    # An index built with another model is never queried with this model's vectors.
    index = MemoryIndex(md, embedder=minilm)
    assert not index.status()["up_to_date"]
    assert index.similar("a flower bed with vegetables", k=1)[0].id == ids[3]
    assert index.bookkeeping.manifest()["model"] == minilm.model_id
    index.close()


def test_embedder_setting_in_memdir_yaml(md: Memdir) -> None:
    for number, text in enumerate(TEXTS[:4]):
        lifecycle.teach(md, text, at(number))
    assert cli_json("index", root=md.root)["embedded"] == 4
    configure(md, embedder={"kind": "hashing"})
    report = cli_json("index", root=md.root)
    assert report["rebuilt"] and "embedding model changed" in report["reason"]
    assert report["embedded"] == 4
    status = cli_json("index", "--status", root=md.root)
    assert (status["model"], status["embedder"], status["up_to_date"]) == (
        "hashing-384",
        "hashing",
        True,
    )


def test_embeddings_are_cached_by_content_hash(md: Memdir, hashing: Any) -> None:
    teach_texts(md)
    index = MemoryIndex(md, embedder=hashing)
    assert index.update().embedded == len(TEXTS)
    before = results(index)
    index.close()

    shutil.rmtree(index.root / f"tantivy-{index.generation}")
    index = MemoryIndex(md, embedder=hashing)
    assert index.needs_update()
    report = index.update()
    assert (report.rebuilt, report.reason, report.embedded) == (
        True,
        "full-text index missing",
        0,
    )
    assert results(index) == before

    report = index.update(rebuild=True)
    assert (report.rebuilt, report.embedded) == (True, 0)
    index.close()

    shutil.rmtree(index.root / "faiss")
    index = MemoryIndex(md, embedder=hashing)
    report = index.update()
    assert (report.reason, report.embedded) == ("vector index missing", 0)
    assert results(index) == before

    # the same text under another id (observed later) is not embedded again
    lifecycle.observe(md, TEXTS[0], at(90), author="assistant")
    report = index.update()
    assert (report.memories, report.embedded) == (1, 0)
    index.close()


LEGACY_MEMORIES = """CREATE TABLE memories (
    iid INTEGER PRIMARY KEY, id TEXT UNIQUE NOT NULL, line TEXT NOT NULL, text TEXT NOT NULL,
    key TEXT, created INTEGER NOT NULL, status TEXT NOT NULL, searchable INTEGER NOT NULL,
    content_hash TEXT NOT NULL, in_base INTEGER NOT NULL DEFAULT 0
)"""


def test_catalog_with_an_older_layout_is_rebuilt_keeping_the_cache(
    md: Memdir, hashing: Any
) -> None:
    index = indexed_texts(md, hashing)
    before = results(index)
    db = index.catalog.db  # make it look like the first release's catalog
    db.execute("DROP TABLE memories")
    db.execute(LEGACY_MEMORIES)
    db.execute("PRAGMA user_version = 0")
    index.close()

    index = MemoryIndex(md, embedder=hashing)
    report = index.update()
    assert report.rebuilt and report.reason.startswith("index version None")
    assert report.embedded == 0
    assert results(index) == before
    index.close()


def test_lost_vector_store_is_re_embedded(md: Memdir, hashing: Any) -> None:
    index = indexed_texts(md, hashing)
    before = results(index)
    index.close()
    shutil.rmtree(index.root / "vectors")
    index = MemoryIndex(md, embedder=hashing)
    report = index.update()
    assert (report.reason, report.embedded) == ("vector cache missing", len(TEXTS))
    assert results(index) == before
    index.close()


def test_lost_or_torn_memory_table_is_rebuilt_without_embedding(md: Memdir, hashing: Any) -> None:
    index = indexed_texts(md, hashing)
    before = results(index)
    table = index.memory_table.path
    index.close()
    table.unlink()
    index = MemoryIndex(md, embedder=hashing)
    assert index.needs_update()
    report = index.update()
    assert (report.reason, report.embedded) == ("memory table missing", 0)
    assert results(index) == before
    assert_vectors_match_texts(index, hashing)
    # a crash while growing the table leaves a torn record: the next append cuts it off
    table = index.memory_table.path  # (the rebuild wrote the next generation's)
    size = table.stat().st_size
    with open(table, "ab") as handle:
        handle.write(b"\x07\x00")
    lifecycle.teach(md, "The car needs new tyres before winter", at(40))
    assert not index.update().rebuilt
    record = index.memory_table.dtype.itemsize
    assert table.stat().st_size == size + record  # the torn bytes cut off, one record added
    assert_vectors_match_texts(index, hashing)
    # a table shorter than the catalog (records lost) is rebuilt too
    with open(table, "r+b") as handle:
        handle.truncate(44 * 2)
    assert index.needs_update()
    assert index.update().reason == "memory table shorter than the catalog"
    assert_vectors_match_texts(index, hashing)
    table = index.memory_table.path
    # a rebuild writes the next generation's table and removes the old one
    assert index.update(rebuild=True).rebuilt
    assert not table.exists() and index.memory_table.path.is_file()
    assert [p.name for p in index.root.glob("memories-*.table")] == [index.memory_table.path.name]
    assert_vectors_match_texts(index, hashing)
    index.close()


def test_a_reused_iid_does_not_inherit_a_rolled_back_record(md: Memdir, hashing: Any) -> None:
    """The table is written before the catalog commits; an update that fails after that leaves
    records for iids the catalog hands out again. A new memory's record is written whole."""
    import numpy as np

    index = MemoryIndex(md, embedder=hashing)
    lifecycle.observe(md, "Sam: hello there", at(0), "chat:Sam", session="s1")
    lifecycle.observe(md, "Ana: hi Sam", at(1), "chat:Ana", session="s1")
    index.update()
    next_iid = index.catalog.db.execute("SELECT MAX(iid) FROM memories").fetchone()[0] + 1
    index.memory_table.set([next_iid], near=[[1, 2, -1, -1]], session=[99], speaker=[7])
    alone = lifecycle.teach(md, "The boiler is serviced every October", at(5)).id
    index.update()
    iid = index.catalog.memories_by_id([alone])[alone].iid
    assert iid == next_iid
    record = index.memory_table.get(np.asarray([iid]))[0]
    assert list(record["near"]) == [-1, -1, -1, -1]
    from memdir.indexers.memorytable import name_code

    # no session; the speaker is the plain user's (not the rolled-back record's 7)
    assert (record["session"], record["speaker"]) == (0, name_code("user"))
    index.close()


def test_memory_table_neighbours_follow_the_sessions(md: Memdir, hashing: Any) -> None:
    """Each memory's context neighbours are its searchable same-session memories within ±2,
    kept in step through appends and rejections, and the same after a rebuild."""
    index = MemoryIndex(md, embedder=hashing)
    said: dict[str, list[str]] = {"a": [], "b": []}
    for number in range(7):
        session = "a" if number % 3 else "b"
        text = f"turn {number} of session {session} about {TEXTS[number]}"
        said[session].append(
            lifecycle.observe(md, text, at(number), "chat:Sam", session=session).id
        )
        index.update()
    lifecycle.reject(md, said["a"][2], "never said", at(20))
    index.update()

    def neighbours(index: MemoryIndex) -> dict[str, set[str]]:
        memories = [m for m in index.catalog.all_memories() if m.searchable]
        by_iid = {m.iid: m.id for m in index.catalog.all_memories()}
        import numpy as np

        near = index.memory_table.get(np.asarray([m.iid for m in memories]))["near"]
        return {
            m.id: {by_iid[i] for i in row if i >= 0} for m, row in zip(memories, near, strict=True)
        }

    expected: dict[str, set[str]] = {}
    for ids in said.values():
        live = [i for i in ids if i != said["a"][2]]
        for position, memory_id in enumerate(live):
            window = live[max(0, position - 2) : position + 3]
            expected[memory_id] = set(window) - {memory_id}
    assert neighbours(index) == expected
    # the context vector recall scores with: normalise(2·v + Σ neighbour vectors)
    import numpy as np

    from memdir.indexers.recall.relevance import vectors_with_context

    memories = {m.id: m for m in index.catalog.all_memories()}
    ids = sorted(expected)
    iids = np.asarray([memories[i].iid for i in ids])
    _, context = vectors_with_context(index, iids, index.memory_table.get(iids)["near"])
    for row, memory_id in enumerate(ids):
        mixed = 2 * as_cached(hashing.embed([memories[memory_id].text]))[0] + sum(
            as_cached(hashing.embed([memories[j].text]))[0] for j in expected[memory_id]
        )
        assert np.allclose(context[row], mixed / np.linalg.norm(mixed), atol=1e-6)
    index.close()
    assert neighbours(fresh_index(md, hashing)) == expected


def test_deleting_the_tantivy_dir_is_repaired_even_after_status(md: Memdir) -> None:
    md = configure(md, embedder={"kind": "hashing"})
    for number, text in enumerate(TEXTS[:3]):
        lifecycle.teach(md, text, at(number))
    assert cli_json("index", root=md.root)["embedded"] == 3
    shutil.rmtree(next((md.cache_dir / "index").glob("tantivy-*")))
    status = cli_json("index", "--status", root=md.root)  # opens (recreates) an empty one
    assert status["fulltext_documents"] == 0 and status["searchable"] == 3
    report = cli_json("index", root=md.root)
    assert report["rebuilt"] and report["embedded"] == 0
    assert len(cli_json("search", "coffee", root=md.root)) == 1


# --- concurrency -----------------------------------------------------------------------------


def bulk_memories(memdir: Memdir, count: int) -> None:
    words = "coffee garden sister piano Lisbon deadline train river parrot concert".split()
    lifecycle.add_memories(
        memdir,
        (
            new_memory(
                created=format_time(at(n)),
                text=f"Note {n}: " + " ".join(words[(n * 7 + i) % len(words)] for i in range(8)),
                source="observation",
                author="user",
                store="episodic",
            )
            for n in range(count)
        ),
    )


def test_two_concurrent_index_runs_are_safe(md: Memdir, minilm: Any) -> None:
    bulk_memories(md, 300)
    command = [str(MEMDIR_BIN), "--dir", str(md.root), "index", "--json"]
    env = clean_env()
    runs = [
        subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for _ in range(2)
    ]
    outputs = [run.communicate(timeout=120) for run in runs]
    outcomes = [(run.returncode, out, err) for run, (out, err) in zip(runs, outputs, strict=True)]
    for code, _out, err in outcomes:
        assert code == 0 or (code == 7 and b"index is being updated" in err), err
    assert any(code == 0 for code, _, _ in outcomes)
    reports = [json.loads(out) for code, out, _ in outcomes if code == 0]
    assert sum(report["embedded"] for report in reports) == 300  # nothing embedded twice
    index = MemoryIndex(md, embedder=minilm)
    status = index.status()
    assert status["up_to_date"]
    assert status["memories"] == status["searchable"] == status["fulltext_documents"] == 300
    assert status["vector_base"]["size"] + status["vector_delta"] == 300
    assert len(index.search("parrot", k=500)) == 240
    assert len(index.similar("parrot", k=500)) == 300
    index.close()


def test_index_run_refused_clearly_while_another_holds_the_lock(md: Memdir) -> None:
    lifecycle.teach(md, "A memory to index", at(0))
    holder = MemoryIndex(md, embedder=HashingEmbedder())
    with holder.lock():
        done = run_cli(
            "index", root=md.root, env=clean_env(MEMDIR_INDEX_TIMEOUT="0.3"), process=True
        )
    holder.close()
    assert done.returncode == 7, done
    assert "index is being updated by pid" in done.stderr
    assert "MEMDIR_INDEX_TIMEOUT" in done.stderr and "Traceback" not in done.stderr
    assert run_cli("index", root=md.root, process=True).returncode == 0


# --- the embedder fallback -------------------------------------------------------------------


@pytest.fixture
def no_weights_env(tmp_path: Path) -> dict[str, str]:
    """An environment where no MiniLM weights can be found: the explicit dir and the hub cache
    are empty, and a module on PYTHONPATH shadows the weights package (find_spec finds a
    plain module, which has no model/ directory)."""
    empty = tmp_path / "no-model"
    empty.mkdir()
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    (shadow / f"{embedding.MODEL_PACKAGE}.py").write_text("# not the weights package\n")
    return clean_env(
        MEMDIR_EMBED_MODEL=str(empty),
        HF_HUB_CACHE=str(empty),
        HF_HOME=str(empty),
        PYTHONPATH=str(shadow),
    )


def test_missing_weights_fall_back_to_hashing_with_a_warning(
    md: Memdir, no_weights_env: dict[str, str]
) -> None:
    for number, text in enumerate(TEXTS[:4]):
        lifecycle.teach(md, text, at(number))
    done = run_cli("index", root=md.root, env=no_weights_env, process=True)
    assert done.returncode == 0, done.stderr
    assert re.search(r"not found .*hashing embedder", done.stderr), done.stderr
    status = cli_json("index", "--status", root=md.root, env=no_weights_env, process=True)
    assert (status["embedder"], status["model"]) == ("hashing", "hashing-384")
    assert "hashing embedder" in status["embedder_warning"]
    text_status = run_cli("index", "--status", root=md.root, env=no_weights_env, process=True)
    assert "embedder_warning:" in text_status.stdout and "degraded" in text_status.stdout
    similar = run_cli(
        "similar", "coffee every morning", "--json", root=md.root, env=no_weights_env, process=True
    )
    assert similar.returncode == 0 and "hashing embedder" in similar.stderr
    assert json.loads(similar.stdout)[0]["text"] == TEXTS[0]
    # with the weights back, the next vector query rebuilds with MiniLM instead of mixing models
    assert not cli_json("index", "--status", root=md.root, process=True)["up_to_date"]
    hits = cli_json("similar", "where does my sister live", root=md.root, process=True)
    assert hits[0]["text"] == TEXTS[1]


def test_missing_weights_in_process(
    md: Memdir, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: Any
) -> None:
    monkeypatch.setenv("MEMDIR_EMBED_MODEL", str(tmp_path / "nothing-here"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "nothing-here"))
    monkeypatch.setattr(embedding, "_package_model_dir", lambda: None)
    lifecycle.teach(md, "Swallows return in spring", at(0))
    index = MemoryIndex(md)
    logger = logging.getLogger("memdir")  # the CLI may have stopped it propagating
    logger.addHandler(caplog.handler)
    try:
        report = index.update()
    finally:
        logger.removeHandler(caplog.handler)
    assert report.rebuilt and index.embedder.kind == "hashing"
    assert any("hashing embedder" in record.getMessage() for record in caplog.records)
    status = index.status()
    assert status["embedder"] == "hashing" and "degraded" in status["embedder_warning"]
    index.close()


# --- semantic search, snippets and JSON shapes -----------------------------------------------


def test_similar_finds_a_paraphrase_sharing_no_words(md: Memdir) -> None:
    target = lifecycle.teach(md, "The physician prescribed medication", at(0)).id
    for number, text in enumerate(TEXTS):
        lifecycle.teach(md, text, at(1 + number))
    query = "doctor gave me pills"
    words = {word.lower() for word in re.findall(r"\w+", query)}
    assert not words & {
        word.lower() for word in re.findall(r"\w+", "The physician prescribed medication")
    }
    hits = cli_json("similar", query, "--k", "3", root=md.root)
    assert hits[0]["id"] == target and len(hits) == 3
    assert hits[0]["score"] > hits[1]["score"] + 0.1
    assert cli_json("search", query, root=md.root) == []  # no shared word: full text finds nothing


def test_search_snippets_and_json_shapes(md: Memdir) -> None:
    teach_texts(md)
    lifecycle.teach(md, "She runs along the river every Sunday", at(20))
    hits = cli_json("search", "Lisbon", root=md.root)
    assert len(hits) == 2
    for hit in hits:
        # each hit marked with its status and visibility (the policy's markers)
        assert set(hit) == {"id", "text", "score", "snippet", "status", "visibility", "source",
                            "marker"}  # fmt: skip
        assert (hit["status"], hit["visibility"], hit["marker"]) == ("durable", "normal", "")
        assert re.fullmatch(r"m-[0-9a-f]{16}", hit["id"]) and isinstance(hit["score"], float)
        assert "[Lisbon]" in hit["snippet"] and "Lisbon" in hit["text"]
    assert hits[0]["score"] >= hits[1]["score"]
    stemmed = cli_json("search", "running", root=md.root)  # English stemming: running ~ runs
    assert stemmed[0]["snippet"] == "She [runs] along the river every Sunday"
    assert len(cli_json("search", "the", "--k", "2", root=md.root)) == 2

    similar = cli_json("similar", "my sibling's music teaching", "--k", "4", root=md.root)
    assert len(similar) == 4 and similar[0]["text"] == TEXTS[1]
    for hit in similar:
        assert set(hit) == {"id", "text", "score", "status", "visibility", "source", "marker"}
        assert -1.0 <= hit["score"] <= 1.0
    assert [hit["score"] for hit in similar] == sorted((h["score"] for h in similar), reverse=True)

    plain = run_cli("search", "Lisbon", root=md.root)
    assert plain.returncode == 0 and plain.stdout.count("[Lisbon]") == 2
    assert plain.stderr == ""  # stdout holds the results, nothing else


def test_meta_memory_fields_are_searchable_and_weigh_in_recall(
    hashed: Memdir, cli_in_process
) -> None:
    cli = cli_in_process  # what the commands answer, so in this process
    """`--rationale` (and intent, evidence) is a full-text field of its own: `search --field
    rationale` finds it, plain search does not, and recall's small `meta_bm25` weight lets a
    rationale tip the ranking between two memories whose text says the same."""
    root = str(hashed.root)

    def teach(*args: str) -> str:
        done = cli("--dir", root, "teach", *args)
        assert done.code == 0, done
        return done.out.strip()

    plain = teach("Book the table by the window")
    reasoned = teach(
        "Book the table by the window", "--rationale", "the user has a shellfish allergy"
    )
    found = cli("--dir", root, "search", "allergy", "--field", "rationale", "--json")
    assert found.code == 0, found
    assert [hit["id"] for hit in json.loads(found.out)] == [reasoned]
    assert json.loads(cli("--dir", root, "search", "allergy", "--json").out) == []
    wrong = cli("--dir", root, "search", "allergy", "--field", "colour")
    assert wrong.code != 0 and "unknown search field" in wrong.err and "Traceback" not in wrong.err

    def scores(*extra: str) -> dict[str, dict[str, float]]:
        done = cli("--dir", root, "recall", "window table shellfish allergy", "--json",
                   "--explain", "--no-record", *extra)  # fmt: skip
        assert done.code == 0, done
        stages = {stage["name"]: stage for stage in json.loads(done.out)["stages"]}
        return {row["id"]: row for row in stages["score"]["rows"]}

    weighed = scores()
    assert weighed[reasoned]["meta_bm25"] == 1.0 and weighed[plain]["meta_bm25"] == 0.0
    assert weighed[reasoned]["score"] > weighed[plain]["score"]
    configure(hashed, recall={"profiles": {"nometa": {"meta_bm25": 0.0}}})
    unweighed = scores("--profile", "nometa")
    assert unweighed[reasoned]["score"] == pytest.approx(unweighed[plain]["score"])
