"""The sync state machine (tests/sync_machine.py) with a bounded number of examples; the
larger run is benchmarks/bench_sync.py and `make test-slow`."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from sync_machine import SyncMachine


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
    case("runTest").runTest()


def test_three_clones_converge(tmp_path: Path) -> None:
    run_machine(tmp_path, examples=5, steps=8)


@pytest.mark.slow
def test_three_clones_converge_long(tmp_path: Path) -> None:
    run_machine(tmp_path, examples=60, steps=30)
