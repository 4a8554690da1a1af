"""How output says a count: "1 memory", "2 memories" — never "1 memories" or "2 turn(s)"."""

from __future__ import annotations

IRREGULAR = {"memory": "memories", "inference": "inferences", "summary": "summaries"}


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """`count` and the noun, singular for exactly one."""
    if count == 1:
        return f"{count} {noun}"
    return f"{count} {plural or IRREGULAR.get(noun) or noun + 's'}"
