"""The agent harness's own record of what the user typed, against which a prompt hook's turn is
checked before the journal trusts it (docs/MCP.md, "Who is asking").

A prompt hook runs inside the harness, beside the model's shell: what it hands memdir could as
well come from the model piping a made-up payload into it. Claude Code gives each hook the path
of the session's transcript (`transcript_path`, JSON lines written by Claude Code itself); a
user turn is *verified* when its text is one of the last `RECENT` user messages there. A turn
that cannot be checked (no transcript, not found, unreadable) is still recorded — nothing the
user typed is lost — but as unverified: the teaching guard never quotes it, and `verify` and
`review` show teachings that quote one.

Standard library only: the service client and the hook path import it.
"""

from __future__ import annotations

import json
from collections import deque
from pathlib import Path

VERIFIED = "hook:verified"  # a user turn the harness's transcript holds (trusted)
UNVERIFIED = "hook:unverified"  # a hook's user turn with no harness record (never quoted)
RECENT = 8  # user messages, from the transcript's end, that a new prompt may be
MAX_TRANSCRIPT = 64 << 20  # bytes read from a transcript's end


def _texts(content: object) -> str:
    """A transcript message's text: a string, or the text blocks of a list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(block.get("text", "") for block in content
                         if isinstance(block, dict) and block.get("type") == "text")  # fmt: skip
    return ""


def _same(one: str, other: str) -> bool:
    return " ".join(one.split()) == " ".join(other.split())


def recent_user_messages(transcript: Path) -> list[str]:
    """The last RECENT messages the harness recorded as the user's (Claude Code's transcript:
    `{"type": "user", "message": {"role": "user", "content": …}}` lines); [] when unreadable."""
    try:
        size = transcript.stat().st_size
        with transcript.open("rb") as handle:
            handle.seek(max(0, size - MAX_TRANSCRIPT))
            data = handle.read()
    except OSError:
        return []
    found: deque[str] = deque(maxlen=RECENT)
    for raw in data.splitlines():
        try:
            line = json.loads(raw)
        except (ValueError, RecursionError):
            continue
        if not isinstance(line, dict) or line.get("type") != "user":
            continue
        message = line.get("message")
        if isinstance(message, dict) and message.get("role") == "user":
            text = _texts(message.get("content"))
            if text.strip():
                found.append(text)
    return list(found)


def on_record(transcript: str | None, text: str) -> bool:
    """Whether the harness's transcript holds `text` as one of the user's recent messages."""
    if not transcript:
        return False
    return any(_same(text, said) for said in recent_user_messages(Path(transcript)))


def hook_channel(transcript: str | None, text: str) -> str:
    """The channel a hook's user turn is recorded with: VERIFIED or UNVERIFIED."""
    return VERIFIED if on_record(transcript, text) else UNVERIFIED
