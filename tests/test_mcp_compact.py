"""The MCP `recall` tool answers compactly by default (each result's id, text, score, status,
provenance weight) and with every score component on request (docs/MCP.md)."""

from __future__ import annotations

import json
from datetime import timedelta

from conftest import T0_DT

from memdir.archive_format import lifecycle
from memdir.archive_format.memdir import Memdir


def test_recall_is_compact_by_default_and_full_on_request(hashed: Memdir) -> None:
    from memdir.cli.mcp_server import COMPACT_RESULT, MemdirTools

    for text in ("Sam takes his coffee black", "Sam's coffee machine is an old Gaggia",
                 "Coffee after 4pm keeps Sam awake", "Sam buys beans from the market",
                 "Sam grinds the coffee each morning"):  # fmt: skip
        lifecycle.teach(hashed, text, T0_DT)
    tools = MemdirTools(hashed, timedelta(hours=24))
    compact = tools.recall("how does Sam take his coffee?", k=5)
    full = tools.recall("how does Sam take his coffee?", k=5, components=True)
    assert compact["verdict"] == full["verdict"] and len(compact["results"]) == 5
    assert [r["id"] for r in compact["results"]] == [r["id"] for r in full["results"]]
    for row in compact["results"]:
        assert set(row) <= set(COMPACT_RESULT)
        assert {"id", "text", "score", "status", "weight"} <= set(row)
    assert "analysis" not in compact and "analysis" in full
    assert all("components" in row and "raw" in row for row in full["results"])
    assert len(json.dumps(compact)) * 2 < len(json.dumps(full))
    assert "stages" in tools.recall("coffee", k=2, explain=True)  # explain stays the full form
