"""Import conversation exports into the raw journal, and undo an import.

Formats:
  chatgpt  ChatGPT's `conversations.json`: a list of conversations, each a tree of messages
           (`mapping`); the branch that ends at `current_node` is the conversation as the
           user last saw it. System and hidden messages are left out.
  claude   Claude's export `conversations.json`: a list of conversations with `chat_messages`
           (`sender` human/assistant, `text` or `content` blocks, `created_at`).
  jsonl    one turn per line: {"role", "content", "timestamp", "session"}; role is user,
           assistant or tool; timestamp ISO-8601 or epoch seconds; session optional.

Every message becomes a verbatim journal turn on the channel `import:SOURCE`, SOURCE being
derived from the file's bytes, with the conversation as its session and its title as topic.
Imported user turns are trusted (the user's own export); assistant text is journal text only
and never becomes a teaching. Importing is idempotent (a turn already in the journal with the
same session, time, role and text is not added again, whatever import brought it), all turns of
one import are appended in one write, and a malformed conversation is reported with its
position and contributes nothing (by default the whole import is refused; `skip_malformed`
imports the others).
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from memdir.archive_format import imports, journal
from memdir.archive_format.clock import format_time, parse_time
from memdir.archive_format.errors import BadInputError, FormatError, MemdirError, NotFoundError
from memdir.archive_format.journal import Turn
from memdir.archive_format.lifecycle import follow_up
from memdir.archive_format.memdir import Memdir
from memdir.archive_format.tombstones import writing

log = logging.getLogger("memdir")

FORMATS = ("chatgpt", "claude", "jsonl")
CHATGPT_ROLES = {"user": "user", "assistant": "assistant", "tool": "tool"}
CLAUDE_SENDERS = {"human": "user", "user": "user", "assistant": "assistant"}
JSONL_ROLES = {"user": "user", "human": "user", "assistant": "assistant", "tool": "tool"}


class Malformed(Exception):
    """One conversation (or line) that cannot be imported, with where it is."""

    def __init__(self, where: str, problem: str) -> None:
        super().__init__(f"{where}: {problem}")
        self.where, self.problem = where, problem


@dataclass(frozen=True)
class Message:
    role: str
    text: str
    at: datetime


@dataclass
class Conversation:
    session: str
    where: str
    topic: str | None = None
    messages: list[Message] = field(default_factory=list)


@dataclass
class ImportReport:
    source: str
    format: str
    conversations: int = 0
    turns: int = 0
    added: int = 0
    already: int = 0
    skipped: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "channel": imports.channel(self.source),
                "format": self.format, "conversations": self.conversations,
                "turns": self.turns, "added": self.added, "already_present": self.already,
                "skipped": self.skipped}  # fmt: skip


def source_id(data: bytes) -> str:
    """The import's source id: 16 hex digits of SHA-256 over the file's bytes."""
    return hashlib.sha256(data).hexdigest()[:16]


# time -----------------------------------------------------------------------------------------
def _moment(value: Any, what: str) -> datetime:
    """An epoch number or an ISO-8601 string as UTC."""
    if isinstance(value, bool):
        raise BadInputError(f"{what} is not a time: {value!r}")
    if isinstance(value, (int, float)):
        if not math.isfinite(value) or not 0 <= value < 253402300800:
            raise BadInputError(f"{what} is out of range: {value!r}")
        return datetime.fromtimestamp(value, tz=timezone.utc)
    if isinstance(value, str) and value.strip():
        try:
            return parse_time(value, what)
        except MemdirError:
            raise BadInputError(f"{what} is not an ISO-8601 time: {value!r}") from None
    raise BadInputError(f"{what} is missing or not a time: {value!r}")


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def _json(data: bytes, name: str) -> Any:
    try:
        return json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as error:
        raise FormatError(f"{name}: not UTF-8 (byte {error.start})") from None
    except json.JSONDecodeError as error:
        raise FormatError(
            f"{name}:{error.lineno}:{error.colno}: not valid JSON ({error.msg}); nothing was "
            "imported"
        ) from None


def _export(
    data: bytes, name: str, fmt: str, conversation: Callable[[Any, str], Conversation]
) -> Iterator[Conversation | Malformed]:
    """Each conversation of a ChatGPT or Claude export's conversations.json, parsed by
    `conversation`, or the reason it cannot be imported."""
    found = _json(data, name)
    if isinstance(found, dict) and isinstance(found.get("conversations"), list):
        found = found["conversations"]
    if not isinstance(found, list):
        raise FormatError(
            f"{name}: expected a list of conversations (a {fmt} export's conversations.json)",
            hint="check --format",
        )
    for number, raw in enumerate(found, start=1):
        try:
            yield conversation(raw, f"{name}: conversation {number}")
        except Malformed as problem:
            yield problem


# ChatGPT --------------------------------------------------------------------------------------
def _chatgpt_conversation(raw: Any, where: str) -> Conversation:
    if not isinstance(raw, dict):
        raise Malformed(where, "not a JSON object")
    ident = raw.get("conversation_id") or raw.get("id")
    title = _text(raw.get("title"))
    if ident:
        where = f"{where} (id {ident}{f', {title!r}' if title else ''})"
    mapping = raw.get("mapping")
    if not isinstance(ident, str) or not ident:
        raise Malformed(where, "no conversation id")
    if not isinstance(mapping, dict) or not mapping:
        raise Malformed(where, "no `mapping` of messages")
    node_id = raw.get("current_node")
    if node_id is None:  # no pointer: the last node without children
        leaves = [k for k, v in mapping.items() if isinstance(v, dict) and not v.get("children")]
        node_id = leaves[-1] if leaves else None
    branch: list[tuple[str, dict[str, Any]]] = []
    seen: set[str] = set()
    while node_id is not None:
        if node_id in seen:
            raise Malformed(where, f"message node {node_id!r}: the parent chain loops")
        seen.add(node_id)
        node = mapping.get(node_id)
        if not isinstance(node, dict):
            raise Malformed(where, f"message node {node_id!r} is missing")
        branch.append((node_id, node))
        node_id = node.get("parent")
    try:
        started = _moment(raw.get("create_time"), "create_time")
    except BadInputError:
        started = None
    conversation = Conversation(f"chatgpt-{ident}", where, title or None)
    for node_id, node in reversed(branch):
        message = node.get("message")
        if message is None:
            continue
        spot = f"{where}, message node {node_id!r}"
        if not isinstance(message, dict):
            raise Malformed(spot, "the message is not a JSON object")
        author = message.get("author")
        role = author.get("role") if isinstance(author, dict) else None
        if role not in (*CHATGPT_ROLES, "system"):
            raise Malformed(spot, f"unknown author role {role!r}")
        metadata = message.get("metadata")
        hidden = isinstance(metadata, dict) and metadata.get("is_visually_hidden_from_conversation")
        if role == "system" or hidden:
            continue
        text = _chatgpt_text(message.get("content"), spot)
        if not text:
            continue
        stamp = message.get("create_time")
        try:
            at = _moment(stamp, "create_time") if stamp is not None else started
        except BadInputError as error:
            raise Malformed(spot, str(error)) from None
        if at is None:
            raise Malformed(spot, "no create_time on the message or the conversation")
        conversation.messages.append(Message(CHATGPT_ROLES[str(role)], text, at))
    return conversation


def _chatgpt_text(content: Any, spot: str) -> str:
    if not isinstance(content, dict):
        raise Malformed(spot, "no `content` object")
    kind = content.get("content_type")
    if kind in ("text", "multimodal_text"):
        parts = content.get("parts")
        if not isinstance(parts, list):
            raise Malformed(spot, f"{kind} content without a `parts` list")
        return "\n".join(part.strip() for part in parts if isinstance(part, str)).strip()
    if kind in ("code", "execution_output"):
        return _text(content.get("text"))
    return ""  # browsing displays, reasoning, custom instructions: not conversation text


# Claude ---------------------------------------------------------------------------------------
def _claude_conversation(raw: Any, where: str) -> Conversation:
    if not isinstance(raw, dict):
        raise Malformed(where, "not a JSON object")
    ident, title = raw.get("uuid"), _text(raw.get("name"))
    if isinstance(ident, str) and ident:
        where = f"{where} (uuid {ident}{f', {title!r}' if title else ''})"
    else:
        raise Malformed(where, "no conversation uuid")
    messages = raw.get("chat_messages")
    if not isinstance(messages, list):
        raise Malformed(where, "no `chat_messages` list")
    conversation = Conversation(f"claude-{ident}", where, title or None)
    for number, message in enumerate(messages, start=1):
        spot = f"{where}, message {number}"
        if not isinstance(message, dict):
            raise Malformed(spot, "not a JSON object")
        sender = message.get("sender")
        if sender not in CLAUDE_SENDERS:
            raise Malformed(spot, f"unknown sender {sender!r}")
        text = _text(message.get("text"))
        if not text and isinstance(message.get("content"), list):
            blocks = message["content"]
            text = "\n".join(
                _text(block.get("text"))
                for block in blocks
                if isinstance(block, dict) and block.get("type") == "text"
            ).strip()
        if not text:
            continue
        try:
            at = _moment(message.get("created_at"), "created_at")
        except BadInputError as error:
            raise Malformed(spot, str(error)) from None
        conversation.messages.append(Message(CLAUDE_SENDERS[sender], text, at))
    return conversation


# generic JSONL --------------------------------------------------------------------------------
def _jsonl(data: bytes, name: str, source: str) -> Iterator[Conversation | Malformed]:
    try:
        lines = data.decode("utf-8").split("\n")
    except UnicodeDecodeError as error:
        raise FormatError(f"{name}: not UTF-8 (byte {error.start})") from None
    sessions: dict[str, Conversation] = {}
    broken: dict[str, Malformed] = {}
    default = f"import-{source}"
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        where = f"{name}:{number}"
        try:
            item = json.loads(raw)
        except json.JSONDecodeError as error:
            # a line that is not an object names no session: refused by default, skipped alone
            # with skip_malformed
            yield Malformed(f"{where}:{error.colno}", f"not valid JSON ({error.msg})")
            continue
        if not isinstance(item, dict):
            yield Malformed(where, "expected a JSON object")
            continue
        session = item.get("session") if item.get("session") is not None else default
        if not isinstance(session, str) or not session.strip():
            yield Malformed(where, "session must be a non-empty string")
            continue
        conversation = sessions.setdefault(
            session, Conversation(session, f"{name} session {session!r}")
        )
        if session in broken:
            continue
        try:
            conversation.messages.append(_jsonl_message(item, where))
        except Malformed as problem:  # like a broken conversation: its session contributes nothing
            broken[session] = Malformed(f"{problem.where} (session {session!r})", problem.problem)
    for session, conversation in sessions.items():
        yield broken.get(session) or conversation


def _jsonl_message(item: dict[str, Any], where: str) -> Message:
    role = item.get("role")
    if role not in JSONL_ROLES:
        raise Malformed(where, f"role must be user, assistant or tool, not {role!r}")
    content = item.get("content")
    if not isinstance(content, str) or not content.strip():
        raise Malformed(where, "content must be a non-empty string")
    try:
        at = _moment(item.get("timestamp"), "timestamp")
    except BadInputError as error:
        raise Malformed(where, str(error)) from None
    return Message(JSONL_ROLES[role], content.strip(), at)


# the use case ---------------------------------------------------------------------------------
def detect(data: bytes, name: str) -> str:
    """The export's format from its content: a JSON list of conversations with `mapping`
    (ChatGPT) or `chat_messages` (Claude), else one JSON object per line (jsonl)."""
    if name.endswith((".jsonl", ".ndjson")):
        return "jsonl"
    try:
        found = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        first = next((line for line in data.split(b"\n") if line.strip()), b"")
        if first.lstrip().startswith(b"{"):
            return "jsonl"
        found = None
    if isinstance(found, dict) and isinstance(found.get("conversations"), list):
        found = found["conversations"]
    if isinstance(found, dict):
        return "jsonl"  # a single line holding one object
    first_conversation = next((c for c in found if isinstance(c, dict)), {}) if found else {}
    if "mapping" in first_conversation:
        return "chatgpt"
    if "chat_messages" in first_conversation:
        return "claude"
    raise BadInputError(
        f"{name}: cannot tell the export's format",
        hint="pass --format chatgpt, claude or jsonl",
    )


def parse(data: bytes, fmt: str, name: str, source: str) -> list[Conversation | Malformed]:
    if fmt == "chatgpt":
        return list(_export(data, name, "ChatGPT", _chatgpt_conversation))
    if fmt == "claude":
        return list(_export(data, name, "Claude", _claude_conversation))
    if fmt == "jsonl":
        return list(_jsonl(data, name, source))
    raise BadInputError(f"unknown format {fmt!r}", hint=f"use one of {', '.join(FORMATS)}")


def _turns(conversation: Conversation, channel: str, visibility: str, secrecy: str) -> list[Turn]:
    """The conversation's turns, in its order: the journal orders turns by time (whole
    seconds), then id, so a message dated no later than the one before it (a null
    `create_time` that takes the conversation's, two messages in one second) is dated a
    second after it."""
    turns = []
    previous: datetime | None = None
    for position, message in enumerate(conversation.messages, start=1):
        at = message.at.replace(microsecond=0)
        if previous is not None and at <= previous:
            at = previous + timedelta(seconds=1)
        previous = at
        try:
            turns.append(
                journal.new_turn(
                    at,
                    message.role,
                    conversation.session,
                    message.text,
                    channel,
                    visibility,
                    secrecy,
                    conversation.topic,
                )  # fmt: skip
            )
        except BadInputError as error:
            raise Malformed(f"{conversation.where}, message {position}", error.message) from None
    return turns


def import_file(
    memdir: Memdir,
    path: Path,
    fmt: str | None,
    now: datetime,
    skip_malformed: bool = False,
    visibility: str = "normal",
    secrecy: str = "public",
) -> ImportReport:
    """Import one export file into the journal (see the module docstring)."""
    try:
        data = path.expanduser().read_bytes()
    except FileNotFoundError:
        raise BadInputError(f"no such file: {path}") from None
    except IsADirectoryError:
        raise BadInputError(
            f"{path} is a directory; give the export's conversations file"
        ) from None
    source = source_id(data)
    channel = imports.channel(source)
    fmt = fmt or detect(data, path.name)
    report = ImportReport(source, fmt)
    batches: list[list[Turn]] = []
    problems: list[Malformed] = []
    for item in parse(data, fmt, path.name, source):
        if isinstance(item, Malformed):
            problems.append(item)
            continue
        try:
            batches.append(_turns(item, channel, visibility, secrecy))
        except Malformed as problem:
            problems.append(problem)
    if problems and not skip_malformed:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise FormatError(
            f"{problems[0]}{more}; nothing was imported",
            hint="fix the file, or pass --skip-malformed to import the other conversations",
        )
    report.skipped = [str(problem) for problem in problems]
    report.conversations = len(batches)
    turns = [turn for batch in batches for turn in batch]
    report.turns = len(turns)
    from .journal import record_turns

    with writing(memdir):
        existing = {
            (turn.session, turn.at, turn.role, turn.text)
            for turn in journal.read_journal(memdir).turns
        }
        fresh = [t for t in turns if (t.session, t.at, t.role, t.text) not in existing]
        results = record_turns(memdir, fresh, now) if fresh else []
        report.added = sum(1 for _, added in results if added)
        report.already = report.turns - report.added
        if report.added:
            previous = imports.read_manifest(memdir).get(source, {})
            imports.record(memdir, source, {
                "file": path.name, "format": fmt, "at": format_time(now),
                "turns": int(previous.get("turns", 0)) + report.added,
                "sessions": len({turn.session for turn, added in results if added}),
            })  # fmt: skip
    return report


def undo(memdir: Memdir, source: str, now: datetime) -> int:
    """Remove exactly the turns one import added; returns how many."""
    source = imports.check_source(source)
    known = source in imports.read_manifest(memdir)
    removed = imports.remove_source(memdir, source)
    if not removed and not known:
        raise NotFoundError(
            f"no import with source {source}", hint="`memdir import --list` shows the sources"
        )
    from .documents import refresh_boot

    follow_up("the boot refresh", lambda: refresh_boot(memdir, now))
    return removed
