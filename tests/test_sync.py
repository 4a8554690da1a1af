"""Git sync (docs/FORMAT.md "Sync"): clones merge without conflicts, loss or resurrection.

Real git repositories in tmp_path; the commands run through the CLI in this process, and git's
merge driver and hooks run the real console script. test_sync_says_clearly_what_stops_it runs
`memdir sync` itself as a process too (its one-line errors and exit codes)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

from clones import conflicts, git, hub_and_clones, new_memdir_repo
from conftest import MEMDIR_BIN, memdir_cli, memdir_main

LATER = "2026-05-01T10:00:00Z"


def run(clone: Path, *args: str, now: str | None = "2026-05-01T09:00:00Z"):
    done = memdir_main("--dir", str(clone), *args, now=now)
    assert done.code == 0, str(done)
    return done


def listed(clone: Path) -> dict[str, dict]:
    done = run(clone, "list", "--status", "all", "--json", now="2026-05-01T12:00:00Z")
    return {item["id"]: item for item in json.loads(done.out)}


def shelf_text(clone: Path) -> str:
    return "".join(path.read_text() for path in sorted((clone / "shelves").glob("*.jsonl")))


def test_two_clones_writing_every_file_merge_without_conflicts(tmp_path: Path) -> None:
    a, b = hub_and_clones(tmp_path)
    for clone, word in ((a, "alpha"), (b, "beta")):
        run(clone, "teach", f"the {word} machine is in the study")
        run(clone, "infer", f"the user likes {word}")
        run(clone, "journal", "add", "--role", "user", "--session", word, f"hello from {word}")
        run(clone, "boot")
        run(clone, "wake")
        run(clone, "sleep", now="2026-05-02T03:00:00Z")
    for clone in (a, b, a):
        run(clone, "sync")
        assert conflicts(clone) == []
    assert listed(a) == listed(b) and len(listed(a)) >= 4
    for clone in (a, b):
        assert git(clone, "status", "--porcelain").stdout == ""
        tracked = git(clone, "ls-files").stdout.split()
        assert not {"state/ring.yaml", "state/sleep.yaml", "documents/boot.md"} & set(tracked)
        assert (clone / "state" / "ring.yaml").exists()  # kept on this machine
        assert run(clone, "verify").out.count("problem") == 0


def test_an_older_repository_stops_tracking_the_per_machine_files(tmp_path: Path) -> None:
    (a,) = hub_and_clones(tmp_path, ("a",))
    run(a, "teach", "tea at four")
    git(a, "add", "-f", "state/ring.yaml")  # as memdir before sync committed it
    git(a, "commit", "-q", "-m", "old layout")
    run(a, "sync")
    assert "state/ring.yaml" not in git(a, "ls-files").stdout
    assert (a / "state" / "ring.yaml").exists()


def test_a_forget_is_not_undone_by_the_other_clone(tmp_path: Path) -> None:
    a, b = hub_and_clones(tmp_path)
    secret = "my bank PIN is 4321"
    taught = run(a, "teach", secret).out.strip()
    run(a, "sync")
    run(b, "sync")
    # b forgets it while a, not knowing, rejects it with a reason quoting it and goes on
    run(b, "forget", taught)
    run(a, "reject", taught, "--reason", f"not '{secret}'", now=LATER)
    run(a, "teach", "the cat is called Miso")
    run(b, "sync")
    run(a, "sync")
    run(b, "sync")
    for clone in (a, b):
        assert secret not in shelf_text(clone)
        ring = clone / "state" / "ring.yaml"
        assert not ring.exists() or secret not in ring.read_text()
        assert listed(clone)[taught]["status"] == "forgotten"
        assert "problem" not in run(clone, "verify").out
    assert git(a, "rev-parse", "HEAD").stdout == git(b, "rev-parse", "HEAD").stdout


def test_the_same_line_appended_on_both_clones_counts_once(tmp_path: Path) -> None:
    a, b = hub_and_clones(tmp_path)
    first = run(a, "teach", "coffee, black").out.strip()
    second = run(a, "teach", "tea, green").out.strip()
    run(a, "sync")
    run(b, "sync")
    for clone in (a, b):  # the same link in the same second: the same line, the same id
        run(clone, "link", first, second, "--type", "related")
    run(a, "sync")
    run(b, "sync")
    assert len(listed(b)) == 2
    assert shelf_text(b).count('"op":"link"') == 1  # sync dropped the duplicate


def test_the_same_text_taught_on_two_clones_is_two_memories(tmp_path: Path) -> None:
    """Since format 1.1 a teaching carries a nonce (docs/FORMAT.md, "Ids"), so each clone's
    teaching of the same words is its own memory; both merge, neither is lost."""
    a, b = hub_and_clones(tmp_path)
    ids = {run(clone, "teach", "coffee, black").out.strip() for clone in (a, b)}
    assert len(ids) == 2
    run(a, "sync")
    run(b, "sync")
    assert set(listed(b)) == ids


def test_confirm_and_reject_in_the_same_second_reject_wins_and_verify_warns(
    tmp_path: Path,
) -> None:
    a, b = hub_and_clones(tmp_path)
    guess = run(a, "infer", "the user is vegetarian").out.strip()
    run(a, "sync")
    run(b, "sync")
    run(a, "confirm", guess, now=LATER)
    run(b, "reject", guess, "--reason", "eats fish", now=LATER)
    for clone in (a, b, a):
        run(clone, "sync")
    assert listed(a)[guess]["status"] == listed(b)[guess]["status"] == "rejected"
    report = run(a, "verify").out
    warning = next(line for line in report.splitlines() if line.startswith("warning:"))
    events = listed(a)[guess]["events"]
    assert all(event["id"] in warning for event in events if event["op"] in ("confirm", "reject"))
    run(a, "confirm", guess, now="2026-05-01T11:00:00Z")  # a later decision overrules it
    assert listed(a)[guess]["status"] == "durable"


def test_init_adds_its_lines_to_existing_git_files_and_verify_warns_without_them(
    tmp_path: Path,
) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    (root / ".gitattributes").write_text("*.png binary")
    (root / ".gitignore").write_text("node_modules/\n")
    assert memdir_cli("init", str(root)).code == 0
    attributes, ignored = (root / ".gitattributes").read_text(), (root / ".gitignore").read_text()
    assert attributes.startswith("*.png binary\n") and "*.jsonl merge=union" in attributes
    assert ignored.startswith("node_modules/\n") and ".memdir/" in ignored.splitlines()
    assert "/state/ring.yaml" in ignored.splitlines()
    assert memdir_cli("init", str(root)).code == 0
    assert (root / ".gitignore").read_text() == ignored  # nothing added twice
    assert "warning" not in run(root, "verify").out
    (root / ".gitattributes").write_text("*.png binary\n")
    out = run(root, "verify").out
    assert "warning: .gitattributes lacks *.jsonl merge=union" in out


def one_line_error(done) -> str:
    assert done.code != 0 and "Traceback" not in done.err, str(done)
    (error,) = [line for line in done.err.splitlines() if line.startswith("memdir: error:")]
    return error


def test_sync_says_clearly_what_stops_it(tmp_path: Path) -> None:
    alone = tmp_path / "alone"
    assert memdir_cli("init", str(alone)).code == 0
    assert "not in a git repository" in one_line_error(memdir_cli("--dir", str(alone), "sync"))
    local = new_memdir_repo(tmp_path / "local")
    memdir_cli("--dir", str(local), "teach", "a local thing")
    error = one_line_error(memdir_cli("--dir", str(local), "sync"))
    assert "no git remote" in error and "committed locally" in error
    assert git(local, "status", "--porcelain").stdout == ""

    a, b = hub_and_clones(tmp_path / "pair")
    for clone, text in ((a, "mine\n"), (b, "theirs\n")):
        (clone / "NOTES.txt").write_text(text)
        git(clone, "add", "NOTES.txt")
        git(clone, "commit", "-q", "-m", "notes")
    run(a, "sync")
    error = one_line_error(memdir_cli("--dir", str(b), "sync"))
    assert "conflicts in NOTES.txt" in error
    assert conflicts(b) == [] and (b / "NOTES.txt").read_text() == "theirs\n"  # aborted


def test_dry_run_changes_nothing(tmp_path: Path) -> None:
    (a,) = hub_and_clones(tmp_path, ("a",))
    run(a, "teach", "plants on tuesdays")
    head = git(a, "rev-parse", "HEAD").stdout
    out = run(a, "sync", "--dry-run").out
    assert "would commit" in out and "shelves/memories.jsonl" in out
    assert git(a, "rev-parse", "HEAD").stdout == head


def test_verify_history_reports_a_line_removed_by_hand(tmp_path: Path) -> None:
    (a,) = hub_and_clones(tmp_path, ("a",))
    guess = run(a, "infer", "the user hates jazz").out.strip()
    run(a, "reject", guess, "--reason", "loves jazz")
    forgotten = run(a, "teach", "a thing to forget").out.strip()
    run(a, "sync")
    run(a, "forget", forgotten)
    events = a / "shelves" / "events.jsonl"
    events.write_text(
        "".join(line for line in events.read_text().splitlines(True) if "reject" not in line)
    )
    git(a, "commit", "-q", "-am", "tidy")
    assert "problem" not in run(a, "verify").out
    done = memdir_cli("--dir", str(a), "verify", "--history")
    assert done.code != 0
    problems = [line for line in done.out.splitlines() if line.startswith("problem:")]
    assert len(problems) == 1 and "reject event about " + guess in problems[0]


def test_the_post_merge_hook_removes_forgotten_text_after_a_plain_git_pull(
    tmp_path: Path,
) -> None:
    a, b = hub_and_clones(tmp_path)
    hook = a / ".git" / "hooks" / "post-merge"
    shutil.copy(Path(__file__).parent.parent / "examples" / "post-merge", hook)
    secret = "the spare key is under the blue pot"
    taught = run(a, "teach", secret).out.strip()
    run(a, "sync")
    run(b, "sync")
    run(b, "forget", taught)
    run(b, "sync")
    run(a, "reject", taught, "--reason", f"not '{secret}'", now=LATER)  # keeps the line on a
    git(a, "commit", "-q", "-am", "a's reject")
    env = {**os.environ, "PATH": f"{MEMDIR_BIN.parent}:{os.environ['PATH']}"}
    env.pop("MEMDIR", None)
    pulled = subprocess.run(["git", "-C", str(a), "pull", "-q", "--no-rebase", "--no-edit"],
                            env=env, capture_output=True, text=True)  # fmt: skip
    assert pulled.returncode == 0, pulled.stderr
    assert conflicts(a) == [] and secret not in shelf_text(a)
    assert git(a, "status", "--porcelain").stdout == ""  # the hook committed the compaction


def _bm25(clone: Path, query: str) -> dict[str, float]:
    done = run(clone, "recall", query, "--json", "--explain", "--no-record", now=LATER)
    return {hit["id"]: hit["raw"]["bm25"] for hit in json.loads(done.out)["results"]}


def test_clones_with_the_same_lines_score_alike_whatever_their_update_history(
    tmp_path: Path,
) -> None:
    """One clone indexes each write as it comes (a rejection and a confirmation replace and
    delete Tantivy documents); the other gets the same lines in one pull. Tantivy's BM25
    counts replaced documents until they are compacted away: the scores must not differ."""
    a, b = hub_and_clones(tmp_path)
    for text in ("garden tomatoes grow", "garden roses bloom", "the garden shed", "piano"):
        run(a, "teach", f"{text} on mondays")
    run(a, "infer", "the user likes the garden")
    _bm25(a, "garden")  # one update: the five documents in one Tantivy segment
    memories = listed(a)
    inferred = next(i for i, item in memories.items() if item["status"] == "provisional")
    rejected = next(i for i, item in memories.items() if "roses" in item["text"])
    run(a, "confirm", inferred)  # its document is written again with its new status
    _bm25(a, "garden")
    run(a, "reject", rejected, "--reason", "the user has no roses")  # its document is deleted
    _bm25(a, "garden")
    status = json.loads(run(a, "index", "--status", "--json").out)
    assert status["fulltext_replaced"] == 0, status
    git(a, "add", "-A")
    git(a, "commit", "-q", "-m", "writes")
    git(a, "push", "-q", "origin", "main")
    git(b, "pull", "-q", "--no-rebase", "origin", "main")
    mine, theirs = _bm25(a, "garden"), _bm25(b, "garden")
    assert len(mine) == 4 and rejected not in mine
    assert mine == theirs


def test_index_compact_writes_the_full_text_again(tmp_path: Path) -> None:
    """Above the size where every update compacts, replaced documents stay in the statistics
    until they reach a tenth of the live ones, `memdir index --compact` or `memdir sync`."""
    from datetime import datetime, timedelta, timezone

    from memdir.archive_format import lifecycle
    from memdir.archive_format.clock import format_time
    from memdir.archive_format.memdir import Memdir
    from memdir.archive_format.records import new_memory
    from memdir.indexers.updater import COMPACT_ALWAYS_BELOW

    root = new_memdir_repo(tmp_path / "m")
    start = datetime(2026, 4, 1, tzinfo=timezone.utc)
    count = COMPACT_ALWAYS_BELOW + 50
    lifecycle.add_memories(Memdir.open(root), [
        new_memory(created=format_time(start + timedelta(seconds=i)), source="observation",
                   text=f"note {i} about the garden", author="user", store="episodic")
        for i in range(count)
    ])  # fmt: skip
    run(root, "index")
    ids = sorted(listed(root))[:5]
    for memory_id in ids:
        run(root, "reject", memory_id, "--reason", "not so")
    run(root, "index")
    status = json.loads(run(root, "index", "--status", "--json").out)
    assert status["fulltext_documents"] == count - 5 and status["fulltext_replaced"] == 5
    done = run(root, "index", "--compact")
    assert "full text compacted" in done.err
    status = json.loads(run(root, "index", "--status", "--json").out)
    assert status["fulltext_replaced"] == 0 and status["fulltext_documents"] == count - 5
    assert "compacted" not in run(root, "index", "--compact").err  # nothing left to do
