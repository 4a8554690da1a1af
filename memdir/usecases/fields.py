"""The fields a new memory takes from what teach and infer are given: one rule for the command
line (cli/commands/lifecycle.memory_options), the MCP tools and the API (memdir.api)."""

from __future__ import annotations

from typing import Any

from memdir.archive_format.records import memory_type


def memory_fields(
    type_: str | None = None,
    key: str | None = None,
    importance: int = 5,
    temporal: str = "persistent",
    store: str | None = None,
    persona: list[str] | None = None,
    visibility: str = "normal",
    session: str | None = None,
    thread: str | None = None,
    valence: float | None = None,
    arousal: float | None = None,
    intent: str | None = None,
    rationale: str | None = None,
    evidence: str | None = None,
    confidence: float | None = None,
    pin: bool = False,
) -> dict[str, Any]:
    """The fields of a new memory from the options `teach` and `infer` share (on the command
    line, in the MCP tools and in the API), validated later by the record schema."""
    kind, subtype = memory_type(type_)
    affect: dict[str, Any] = {}
    if valence is not None:
        affect["valence"] = valence
    if arousal is not None:
        affect["arousal"] = arousal
    if affect:
        affect["annotator"] = "user"
    meta = {
        name: value
        for name, value in (
            ("intent", intent),
            ("rationale", rationale),
            ("evidence", evidence),
            ("confidence", confidence),
        )
        if value is not None
    }
    return {
        "type": kind or None,
        "subtype": subtype or None,
        "key": key,
        "importance": importance,
        "temporal": temporal,
        "store": store,
        "personas": persona or [],
        "visibility": visibility,
        "session": session,
        "thread": thread,
        "affect": affect,
        "meta": meta,
        "pinned": pin,
    }
