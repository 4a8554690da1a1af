"""The sync state machine (tests/sync_machine.py) with a bounded number of examples; the
larger run is benchmarks/bench_sync.py and `make test-slow`."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from sync_machine import SyncMachine

from memdir.archive_format import lifecycle, records


def seeded_nonce() -> str:
    """A nonce from `random`, which hypothesis seeds for each example: replaying an example
    then writes the same ids, so a failure replays and shrinks (the rules pick by id)."""
    return f"{random.getrandbits(128):032x}"


def run_machine(base: Path, examples: int, steps: int) -> None:
    SyncMachine.base = base
    case = SyncMachine.TestCase
    case.settings = settings(
        max_examples=examples,
        stateful_step_count=steps,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        derandomize=True,
        database=None,
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(records, "new_nonce", seeded_nonce)
        patch.setattr(lifecycle, "new_nonce", seeded_nonce)
        case("runTest").runTest()


def test_three_clones_converge(tmp_path: Path) -> None:
    run_machine(tmp_path, examples=5, steps=8)


@pytest.mark.slow
@pytest.mark.timeout(2400)  # 30 examples × 30 steps of real git merges: minutes
def test_three_clones_converge_long(tmp_path: Path) -> None:
    run_machine(tmp_path, examples=30, steps=30)  # the 60-example run: benchmarks/bench_sync.py
