"""What leaves with a clone, and what a forget leaves behind (issue 32, families 4, 6 and 7).

14. Secrets in tracked files: a secret turn (`--secrecy secret`) and a sealed memory
    (`teach --visibility sealed`), then a sync to a bare hub on disk; the hub's every blob is
    searched for each. A second memdir holds a secret turn
    in a commit made by hand (as a memdir older than the rule did) and syncs. The unrestricted
    arm is a memdir without the rule: the secret turn sits in the committed journal file and
    the sync is a plain `git add -A`, `commit`, `push`.
16. Forget reaches every clone and backend: b forgets a memory that a still quotes (a reject's
    reason); a then runs a plain `git pull` and one read (`memdir list`); every file of a
    outside .git is searched for the text. On PostgreSQL (when the bundled server starts), a
    forget on a memdir whose index lives in the database, then every text column of its schema
    is searched. The unrestricted arm re-applies forgets only on a write and refreshes only a
    local index (what memdir did before issue 32).
17. Guessed ids: memories like "Sam lives at N Elm Street" and a reject whose reason quotes one;
    one of each forgotten. The attacker holds the memdir afterwards and hashes every candidate
    text with whatever the tombstone and the redacted event still show; a match confirms the
    guess. The unrestricted arm writes the lines without a nonce (format 1.0).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import shutil
import subprocess
import tempfile
import warnings
from pathlib import Path
from typing import Any

from memdir.archive_format import journal, lifecycle
from memdir.archive_format.clock import format_time
from memdir.archive_format.memdir import Memdir, set_local_settings
from memdir.archive_format.records import Memory, content_id, encode_line, new_event, new_memory

from .harness import ARMS, SAFE, Lab, Measure, Metric, compare
from .user import on_day

SECRET = "ZX-PIN-4711-QUARTZ"
SEALED = "QV-DOOR-2290-OPAL"
FORGOTTEN = "ZX-SAFE-WORD-OBSIDIAN"
IDENTITY = ("-c", "user.name=bench", "-c", "user.email=bench@example.invalid",
            "-c", "commit.gpgsign=false")  # fmt: skip


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("MEMDIR")}
    return subprocess.run(["git", *IDENTITY, "-C", str(repo), *args], capture_output=True,
                          text=True, env=environment, timeout=120, check=False)  # fmt: skip


def _in_main(memdir: Memdir, now: Any, *args: str) -> int:
    """One memdir command in this process (`cli.main.main`), at `now`; what it prints is
    dropped (the benchmark's own output is its report)."""
    from memdir.cli.main import main

    before = os.environ.get("MEMDIR_NOW")
    os.environ["MEMDIR_NOW"] = now.isoformat()
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            return main(["--dir", str(memdir.root), *args])
    finally:
        if before is None:
            os.environ.pop("MEMDIR_NOW", None)
        else:
            os.environ["MEMDIR_NOW"] = before


def _repository(lab: Lab, name: str) -> tuple[Memdir, Path]:
    """A memdir committed in its own git repository, with a bare hub as origin."""
    memdir = lab.memdir(name)
    hub = memdir.root.parent / f"{memdir.root.name}-hub.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(hub)], check=True,
                   capture_output=True)  # fmt: skip
    _git(memdir.root, "init", "-q", "-b", "main")
    _git(memdir.root, "remote", "add", "origin", str(hub))
    _git(memdir.root, "add", "-A")
    _git(memdir.root, "commit", "-q", "-m", "a memdir")
    _git(memdir.root, "push", "-q", "-u", "origin", "main")
    return memdir, hub


def _blobs_holding(repo: Path, needle: str) -> int:
    """How many blobs of the repository (any commit) hold `needle`."""
    listed = _git(repo, "rev-list", "--objects", "--all").stdout.split("\n")
    count = 0
    for line in filter(None, listed):
        sha = line.split()[0]
        if _git(repo, "cat-file", "-t", sha).stdout.strip() == "blob":
            count += needle in _git(repo, "cat-file", "-p", sha).stdout
    return count


def _plain_sync(memdir: Memdir) -> None:
    _git(memdir.root, "add", "-A")
    _git(memdir.root, "commit", "-q", "-m", "sync")
    _git(memdir.root, "push", "-q", "origin", "main")


def secrets_in_git(lab: Lab, rng: random.Random) -> tuple[list[Metric], dict[str, Any]]:
    del rng
    found: dict[str, dict[str, Any]] = {}
    now = on_day(1, 9)
    for arm in ARMS:
        memdir, hub = _repository(lab, f"secret-{arm}")
        turn = journal.new_turn(now, "user", "s1", f"My bank PIN is {SECRET}", secrecy="secret")
        door = f"My door code is {SEALED}"
        if arm == SAFE:
            journal.add_turns(memdir, [turn])
            lifecycle.teach(memdir, door, now, visibility="sealed")
            synced = _in_main(memdir, now, "sync")
        else:  # no rule: the turn and the memory in committed files, a plain commit and push
            memdir.journal_dir.mkdir(exist_ok=True)
            with open(journal.turns_path(memdir), "ab") as handle:
                handle.write(encode_line(turn.to_line()))
            memory = new_memory(created=format_time(now), text=door, source="teaching",
                                author="user", store="semantic", visibility="sealed")  # fmt: skip
            with open(memdir.memory_shelf, "ab") as handle:
                handle.write(encode_line(memory.to_line()))
            _plain_sync(memdir)
            synced = 0
        # an older memdir's secret, committed by hand before the rule: is it pushed?
        old, old_hub = _repository(lab, f"secret-old-{arm}")
        old.journal_dir.mkdir(exist_ok=True)
        with open(journal.turns_path(old), "ab") as handle:
            handle.write(encode_line(turn.to_line()))
        _git(old.root, "add", "-A")
        _git(old.root, "commit", "-q", "-m", "by hand")
        if arm == SAFE:
            verify_fails = _in_main(old, now, "verify") != 0
            refused = _in_main(old, now, "sync") != 0
        else:
            _plain_sync(old)
            refused = verify_fails = False
        found[arm] = {
            "sync_exit": synced,
            "hub_blobs": _blobs_holding(hub, SECRET),
            "sealed_hub_blobs": _blobs_holding(hub, SEALED),
            "old_hub_blobs": _blobs_holding(old_hub, SECRET),
            "old_push_refused": refused,
            "verify_failed_on_tracked": verify_fails,
        }
    metrics = compare(
        "14 secrets in git",
        found,
        Measure("blobs on the remote holding a new secret turn", "hub_blobs",
                note="every object of the bare hub after `memdir sync`"),
        Measure("blobs on the remote holding a new sealed memory", "sealed_hub_blobs",
                note="`teach --visibility sealed`, then `memdir sync`"),
        Measure("blobs on the remote holding a secret committed by hand", "old_hub_blobs",
                note="sync refuses to push it (and verify fails on the tracked file)"),
    )  # fmt: skip
    return metrics, found


def _holding(root: Path, needle: bytes) -> int:
    return sum(
        1
        for path in root.rglob("*")
        if path.is_file() and ".git" not in path.relative_to(root).parts
        and needle in path.read_bytes()
    )  # fmt: skip


def _pull_and_read(lab: Lab, arm: str) -> int:
    """Files of clone a holding the text b forgot, after a plain pull and one read."""
    origin, hub = _repository(lab, f"forget-clone-{arm}")
    base = origin.root.parent
    clones = []
    for name in ("a", "b"):
        target = base / f"{origin.root.name}-{name}"
        subprocess.run(["git", "clone", "-q", str(hub), str(target)], check=True,
                       capture_output=True)  # fmt: skip
        clones.append(Memdir.open(target))
    a, b = clones
    day = on_day(1, 9)
    taught = lifecycle.teach(a, f"My safe word is {FORGOTTEN}", day).id
    for clone in (a, b):  # the safeguarded arm's sync installs the post-merge hook
        if arm == SAFE:
            _in_main(clone, day, "sync")
        else:
            _git(clone.root, "pull", "-q", "--no-rebase", "--no-edit")
            _plain_sync(clone)
    _git(a.root, "pull", "-q", "--no-rebase", "--no-edit")
    later = on_day(1, 10)
    lifecycle.forget(b, taught, later)
    if arm == SAFE:
        _in_main(b, later, "sync")
    else:
        _plain_sync(b)
    lifecycle.reject(a, taught, f"not {FORGOTTEN}", on_day(1, 11))
    _git(a.root, "commit", "-q", "-am", "a's reject")
    _git(a.root, "pull", "-q", "--no-rebase", "--no-edit")  # plain git: a hook runs if installed
    if arm == SAFE:
        _in_main(a, on_day(1, 12), "list")
    else:  # reads never re-applied forgets: a read through the library, as `list` did
        lifecycle.load_view(a, on_day(1, 12))
    return _holding(a.root, FORGOTTEN.encode())


def _postgres_rows(lab: Lab, arm: str, dsn: str) -> int:
    """Rows of a PostgreSQL-indexed memdir's schema holding a forgotten text."""
    from memdir.indexers.postgres import memdir_schema
    from memdir.usecases.forgetting import forget_memory

    memdir = lab.memdir(f"forget-postgres-{arm}")
    set_local_settings(memdir.root, {"index.backend": "postgres", "index.dsn": dsn})
    memdir = Memdir.open(memdir.root)
    day = on_day(1, 9)
    lifecycle.teach(memdir, "The user drinks coffee black", day)
    taught = lifecycle.teach(memdir, f"My safe word is {FORGOTTEN}", day).id
    lab.index(memdir).update()
    if arm == SAFE:
        forget_memory(memdir, taught, on_day(1, 10))
    else:  # the files only: a local index would have been refreshed, this one is not
        lifecycle.forget(memdir, taught, on_day(1, 10))
    return sum(postgres_rows_holding(dsn, memdir_schema(memdir), FORGOTTEN).values())


def postgres_rows_holding(dsn: str, schema: str, needle: str) -> dict[str, int]:
    """How many rows of each text column ('table.column') of a memdir's PostgreSQL schema hold
    `needle`, case-insensitively (the postings hold lower-cased lexemes); columns with none are
    left out."""
    import psycopg

    found = {}
    with psycopg.connect(dsn) as connection:
        columns = connection.execute(
            "SELECT table_name, column_name FROM information_schema.columns"
            " WHERE table_schema = %s AND data_type IN ('text', 'character varying', 'ARRAY')",
            (schema,),
        ).fetchall()
        for table, column in columns:
            query = f'SELECT count(*) FROM "{schema}"."{table}" WHERE "{column}"::text ILIKE %s'
            row = connection.execute(query, (f"%{needle}%",)).fetchone()  # type: ignore[arg-type]
            if row and row[0]:
                found[f"{table}.{column}"] = int(row[0])
    return found


def _postgres_server() -> tuple[Any, Path] | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import pgserver  # type: ignore[import-not-found,unused-ignore]

            data = Path(tempfile.mkdtemp(prefix="memdir-bench-postgres-"))
            return pgserver.get_server(data, cleanup_mode="stop"), data
    except Exception:  # noqa: BLE001 - no bundled server: the experiment says so
        return None


def forget_everywhere(lab: Lab, rng: random.Random) -> tuple[list[Metric], dict[str, Any]]:
    del rng
    found: dict[str, dict[str, Any]] = {arm: {"clone_files": _pull_and_read(lab, arm)}
                                        for arm in ARMS}  # fmt: skip
    rows = [Measure("files of a clone holding forgotten text after a plain git pull and a read",
                    "clone_files", note="shelves, journal, state, documents, .memdir/")]  # fmt: skip
    server = _postgres_server()
    if server is not None:
        handle, data = server
        try:
            dsn = f"host={data} user=postgres dbname=postgres"
            for arm in ARMS:
                found[arm]["postgres_rows"] = _postgres_rows(lab, arm, dsn)
        finally:
            handle.cleanup()
            shutil.rmtree(data, ignore_errors=True)
        rows.append(Measure("PostgreSQL rows holding forgotten text after forget",
                            "postgres_rows", note="every text column of the memdir's schema"))  # fmt: skip
    else:
        for arm in ARMS:
            found[arm]["postgres_rows"] = None  # no bundled server (pip install pgserver)
    return compare("16 forget everywhere", found, *rows), found


def experiments(lab: Lab, seed: int) -> list[tuple[str, Any]]:
    """This module's steps for `safety.run`, each with its own seeded generator."""
    rng = random.Random(seed * 1009 + 14)
    seeds = [rng.randrange(2**32) for _ in range(3)]
    return [
        ("secrets_in_git", lambda: secrets_in_git(lab, random.Random(seeds[0]))),
        ("forget_everywhere", lambda: forget_everywhere(lab, random.Random(seeds[1]))),
        ("guessed_ids", lambda: guessed_ids(lab, random.Random(seeds[2]))),
    ]


def _guess(prefix: str, line: dict[str, Any], candidates: list[str], field: str) -> int:
    """How many candidate texts reproduce the id of `line` (whose `field` is gone)."""
    return sum(content_id(prefix, {**line, field: text}) == line["id"] for text in candidates)


def guessed_ids(lab: Lab, rng: random.Random) -> tuple[list[Metric], dict[str, Any]]:
    candidates = [f"Sam lives at {number} Elm Street" for number in range(1, 301)]
    truth = rng.choice(candidates)
    reason_of = "no, Sam still lives at {}".format
    found: dict[str, dict[str, Any]] = {}
    for arm in ARMS:
        memdir = lab.memdir(f"guessed-{arm}")
        day = on_day(1, 9)
        if arm == SAFE:
            memory_id = lifecycle.teach(memdir, truth, day).id
        else:  # the same line without its nonce (format 1.0)
            memory = new_memory(created=format_time(day), text=truth,
                                source="teaching", author="user", store="semantic")  # fmt: skip
            memdir.memory_shelf.write_bytes(encode_line(memory.to_line()))
            memory_id = memory.id
        guess = lifecycle.infer(memdir, "Sam moved away", day).id
        reason = reason_of(truth.removeprefix("Sam lives at "))
        if arm == SAFE:
            lifecycle.reject(memdir, guess, reason, on_day(1, 10))
        else:  # the same event without its nonce (format 1.0)
            event = new_event(at=format_time(on_day(1, 10)), op="reject", target=guess,
                              actor="user", reason=reason)  # fmt: skip
            line = {k: v for k, v in event.to_line().items() if k != "nonce"}
            line["id"] = content_id("e", line)
            with open(memdir.event_shelf, "ab") as handle:
                handle.write(encode_line(line))
        for target in (memory_id, guess):
            lifecycle.forget(memdir, target, on_day(1, 11))
        shelf_lines = [
            json.loads(raw) for path in memdir.shelves() for raw in path.read_bytes().splitlines()
        ]
        stone = next(x for x in shelf_lines if x["kind"] == "tombstone" and x["id"] == memory_id)
        known = Memory(stone["id"], stone["created"], "", "teaching", "user", "semantic").to_line()
        redacted = next(x for x in shelf_lines if x["kind"] == "event" and x["op"] == "reject")
        shown = {k: v for k, v in redacted.items() if k not in ("redacted", "nonce")}
        reasons = [reason_of(text.removeprefix("Sam lives at ")) for text in candidates]
        found[arm] = {
            "memory_confirmed": _guess("m", known, candidates, "text"),
            "reason_confirmed": _guess("e", shown, reasons, "reason"),
            "candidates": len(candidates),
        }
    metrics = compare(
        "17 guessed ids",
        found,
        Measure("guesses a forgotten memory's tombstone confirms", "memory_confirmed",
                note=f"{len(candidates)} candidate texts hashed with the tombstone's fields"),
        Measure("guesses a redacted event's id confirms", "reason_confirmed",
                note="a reject whose reason quoted the text"),
    )  # fmt: skip
    return metrics, found
