"""Looking is not rehearsing unless asked (issue 30, item 9): `recall --explain` (a debugger)
never records a recall, and MCP `recall` records unless `record` is false or `explain` is
asked; a plain recall on either path still records one (docs/CONTINUITY.md, rehearsal)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from conftest import T0_DT, memdir_main, shelf_lines

from memdir.archive_format import lifecycle
from memdir.archive_format.memdir import Memdir

LATER = "2026-05-02T09:00:00Z"


def recalls(memdir: Memdir) -> int:
    return sum(line["kind"] == "recall" for line in shelf_lines(memdir))


def test_explain_never_records_and_a_plain_recall_does(hashed: Memdir) -> None:
    lifecycle.teach(hashed, "Sam takes his coffee black", T0_DT)
    for args in (("--explain",), ("--explain", "--json"), ("--no-record",)):
        done = memdir_main("--dir", str(hashed.root), "recall", "coffee", *args, now=LATER)
        assert done.code == 0, done
    assert recalls(hashed) == 0
    assert memdir_main("--dir", str(hashed.root), "recall", "coffee", now=LATER).code == 0
    assert recalls(hashed) == 1


def test_mcp_recall_records_unless_told_not_to(
    hashed: Memdir, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memdir.cli.mcp_server import MemdirTools

    monkeypatch.setenv("MEMDIR_NOW", LATER)
    lifecycle.teach(hashed, "Sam takes his coffee black", T0_DT)
    tools = MemdirTools(hashed, timedelta(hours=24))
    looked = tools.recall("coffee", record=False)
    explained = tools.recall("coffee", explain=True)
    assert looked["results"] and explained["results"]
    assert recalls(hashed) == 0
    tools.recall("coffee")
    assert recalls(hashed) == 1
