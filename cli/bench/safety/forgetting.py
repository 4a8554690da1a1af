"""10. Forgetting reaches everything: a memory's text spread the usual way (recalled into the
ring, summarised, written into boot and wake, indexed), then `memdir forget` in the real CLI,
then every file under the memdir — canonical, generated and cache, .git aside — scanned for
the text. The unrestricted arm only marks the memory wrong (`reject`): a delete flag."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from memdir.archive_format import lifecycle

from .harness import ARMS, SAFE, Lab, Measure, Metric, compare
from .user import on_day

NEEDLE = "ZX-ALLERGY-7731"
TEXT = f"The user's hospital record number is {NEEDLE}."


def _holding(root: Path, needle: bytes) -> list[str]:
    """Files under `root` (outside .git) whose bytes contain `needle`."""
    return sorted(
        str(path.relative_to(root))
        for path in root.rglob("*")
        if path.is_file() and ".git" not in path.relative_to(root).parts
        and needle in path.read_bytes()
    )  # fmt: skip


def forgetting(lab: Lab, rng: random.Random) -> tuple[list[Metric], dict[str, Any]]:
    from memdir.indexers.recall import RecallOptions
    from memdir.usecases.recall import recall as run_recall
    from memdir.usecases.sleep import sleep

    del rng
    found: dict[str, dict[str, Any]] = {}
    for arm in ARMS:
        memdir = lab.memdir(f"forget-{arm}", small_talk=True)
        at = on_day(1, 9)
        memory_id = lifecycle.teach(memdir, TEXT, at).id
        index = lab.index(memdir)
        run_recall(memdir, "What is the user's hospital record number?", at,
                   RecallOptions(k=5), index=index)  # fmt: skip
        now = on_day(2, 3)
        sleep(memdir, now)
        before = _holding(memdir.root, NEEDLE.encode())
        if arm == SAFE:
            done = lab.cli(memdir, now, {}, "forget", memory_id)
        else:
            done = lab.cli(memdir, now, {}, "reject", memory_id, "--reason", "forget this")
        lab.index(memdir).update()  # the cache catches up with the rewritten shelves
        after = _holding(memdir.root, NEEDLE.encode())
        found[arm] = {"exit": done.returncode, "files_before": before, "files_after": after,
                      "holding_after": len(after)}  # fmt: skip
    metrics = compare(
        "10 forgetting",
        found,
        Measure("files under the memdir holding the text after forget", "holding_after",
                note="every file outside .git: shelves, journal, documents, state, .memdir/"),
    )  # fmt: skip
    return metrics, found
