"""The journal: verbatim conversation turns, dream digests, and narrative entries.

    journal/turns.jsonl    one `turn` line per turn, appended like a shelf (O_APPEND, fsync,
                           under the writer lock); a turn is never edited
    journal/digests.jsonl  one `digest` line per group of turns a dream consolidated: which turns
                           a derived memory summarises (the turn → summary backlink)
    journal/entries/*.md   narrative entries: end-of-thread reflections, sleep reports

Turn ids are content ids ('t-' + 16 hex digits), so appending the same transcript twice adds
nothing. A user turn is *trusted* only when it came from the command line, the Python API used
as the user (memdir/api.py) or an import: an MCP client can claim any role, so its "user" turns
are kept but never taken as the user's word.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import yaml

from . import idcache, shelf, visibility
from .atomic import write_text
from .clock import format_time, parse_time
from .errors import BadInputError, FormatError
from .memdir import Memdir
from .records import LineRecord, Tombstone, content_id, encode_line, line_fields
from .rewrite import Lines, rewrite
from .settings import JournalSettings
from .tombstones import writing
from .validate import JOURNAL_KINDS, line_problems, load_schema

ROLES = ("user", "assistant", "tool")
# The user's shell; a program using the API as the user; a prompt hook whose turn the
# harness's own transcript held.
TRUSTED_CHANNELS = ("cli", "api", "hook:verified")
TRUSTED_PREFIXES = ("import:",)
SUMMARY_LINK = "summarises"  # a summary memory's link to each turn it summarises


@dataclass(frozen=True)
class Turn(LineRecord):
    """One verbatim conversation turn."""

    KIND = "turn"

    id: str
    at: str
    role: str
    session: str
    text: str
    topic: str | None = None
    visibility: str = "normal"
    secrecy: str = "public"
    channel: str = "cli"

    @property
    def moment(self) -> datetime:
        return parse_time(self.at)

    @property
    def summarisable(self) -> bool:
        """Whether a dream summary may quote it (normal or sensitive; visibility.py)."""
        return self.text_on("dream") is not None

    def text_on(self, surface: str, asked: Iterable[str] = ()) -> str | None:
        """The text `surface` may show of this turn (`[why]` when masked, None: left out)."""
        return visibility.present(surface, self.text, None, self.visibility, self.secrecy, asked)

    @property
    def trusted(self) -> bool:
        """False for a 'user' turn that arrived by a channel that cannot vouch for the user."""
        return self.role != "user" or channel_is_trusted(self.channel)


TURN_FIELDS = line_fields(Turn)

J = TypeVar("J", "Turn", "Digest")


def _identified(draft: J, prefix: str) -> J:
    """The draft with its content id, validated: a bad value is a BadInputError naming it."""
    identified = draft.with_content_id(prefix)
    found = line_problems(identified.to_line(), JOURNAL_KINDS)
    if found:
        raise BadInputError(f"invalid {draft.KIND}: {found[0]}")
    return identified


def channel_is_trusted(channel: str) -> bool:
    return channel in TRUSTED_CHANNELS or channel.startswith(TRUSTED_PREFIXES)


def new_turn(
    at: datetime | str,
    role: str,
    session: str,
    text: str,
    channel: str = "cli",
    visibility: str = "normal",
    secrecy: str = "public",
    topic: str | None = None,
) -> Turn:
    """A validated turn with its content id; bad values are a BadInputError naming the field."""
    when = format_time(parse_time(at, "the turn's time") if isinstance(at, str) else at)
    draft = Turn("t-0000000000000000", when, role, session.strip(), text,
                 (topic or "").strip() or None, visibility, secrecy, channel)  # fmt: skip
    return _identified(draft, "t")


@dataclass(frozen=True)
class Digest(LineRecord):
    """What a dream did with one group of turns."""

    KIND = "digest"

    id: str
    at: str
    turns: tuple[str, ...]
    withheld: tuple[str, ...] = ()
    memory: str | None = None
    promoted: str | None = None
    method: str | None = None

    @property
    def summaries(self) -> tuple[str, ...]:
        """The memories written for this group (episodic, then the promoted semantic one)."""
        return tuple(m for m in (self.memory, self.promoted) if m)


DIGEST_FIELDS = line_fields(Digest)


def new_digest(at: datetime, turns: Iterable[str], withheld: Iterable[str] = (),
               memory: str | None = None, promoted: str | None = None,
               method: str | None = None) -> Digest:  # fmt: skip
    draft = Digest("d-0000000000000000", format_time(at), tuple(turns), tuple(withheld),
                   memory, promoted, method)  # fmt: skip
    return _identified(draft, "d")


# reading --------------------------------------------------------------------------------------
def turns_path(memdir: Memdir) -> Path:
    return memdir.journal_dir / "turns.jsonl"


SECRET_NAME = "secret.jsonl"


def secret_path(memdir: Memdir) -> Path:
    """Where this machine keeps its secret turns (and their tombstones): a journal file like
    the others, but git-ignored, so a secret never enters a commit (docs/FORMAT.md, section 8)."""
    return memdir.journal_dir / SECRET_NAME


def path_for(memdir: Memdir, turn: Turn) -> Path:
    """The journal file a new turn goes to: a secret one stays on this machine."""
    return secret_path(memdir) if turn.secrecy == "secret" else turns_path(memdir)


def digests_path(memdir: Memdir) -> Path:
    return memdir.journal_dir / "digests.jsonl"


def entries_dir(memdir: Memdir) -> Path:
    return memdir.journal_dir / "entries"


def journal_files(memdir: Memdir) -> list[Path]:
    """Every journal/*.jsonl; readers do not depend on which file a line is in."""
    return sorted(memdir.journal_dir.glob("*.jsonl"))


@dataclass
class Journal:
    """Every turn (in time order) and every digest of a memdir."""

    turns: list[Turn]
    digests: list[Digest]

    def by_id(self) -> dict[str, Turn]:
        return {turn.id: turn for turn in self.turns}

    def summaries_of(self) -> dict[str, list[str]]:
        """turn id → the memories that summarise it (the backlink)."""
        found: dict[str, list[str]] = {}
        for digest in self.digests:
            for turn_id in digest.turns:
                found.setdefault(turn_id, []).extend(digest.summaries)
        return found

    def digested(self) -> set[str]:
        """Turns some dream already handled (summarised or withheld)."""
        return {t for digest in self.digests for t in (*digest.turns, *digest.withheld)}


_REQUIRED = {kind: frozenset(load_schema(kind)["required"]) for kind in JOURNAL_KINDS}


def read_journal(
    memdir: Memdir, until: datetime | None = None, since: datetime | None = None,
    holding: Iterable[str] | None = None, need: int = 1,
) -> Journal:  # fmt: skip
    """The journal as of `until` (lines dated later are left out, as the fold does).

    With `since`, only the lines dated at or after it, found through the id cache instead of
    reading every journal file (all of them when the cache is out of step). With `holding`
    (lower-case words), at least every turn whose text holds `need` of them as parts of its
    words, case aside (`lines_holding`) — the lines that cannot are not parsed: a search reads
    the journal at the speed of a byte scan.
    """
    if holding is not None:
        words = sorted({word.encode("utf-8") for word in holding if word})
        return _journal(_every_line(memdir, lambda blob: lines_holding(blob, words, need)),
                        until, since)  # fmt: skip
    if since is None:
        return _journal(_every_line(memdir), until, None)
    try:
        found = idcache.open_cache(memdir).journal_lines(since, until)
    except idcache.Stale:
        return _journal(_every_line(memdir), until, since)
    return _journal(((f"journal line {data.get('id')}", data) for data in found), until, since)


def read_recent(
    memdir: Memdir, now: datetime, hours: float = JournalSettings().raw_window_hours
) -> Journal:
    """What a briefing reads of the journal as of `now`: at least the last `hours`, the last
    turn, and the whole local day of the user's last summarisable turn. A window back from
    `now` is widened until it holds all three (or the whole journal)."""
    first = idcache.open_cache(memdir).journal_start()
    span = timedelta(hours=max(hours, 48.0))
    while True:
        since = now - span
        book = read_journal(memdir, until=now, since=since)
        said = [turn for turn in book.turns if turn.role == "user" and turn.summarisable]
        # a local day is at most 25 hours long (a DST change), wherever the user is
        if book.turns and said and since <= said[-1].moment - timedelta(hours=26):
            return book
        if first is None or since <= first:
            return book
        span *= 4


def _every_line(memdir: Memdir, select: shelf.Selector | None = None
                ) -> Iterator[tuple[str, dict[str, Any]]]:  # fmt: skip
    for path in journal_files(memdir):
        for item in shelf.read(path, kinds=JOURNAL_KINDS, select=select):
            yield f"{path}:{item.number}", item.data


_NOT_PLAIN = re.compile(rb"[\x80-\xff]|\\u")  # a line whose words a byte scan cannot read
_KEPT_ALWAYS = (b'"tombstone"', b'"digest"')  # lines a reader needs whatever they hold


def lines_holding(blob: bytes, words: list[bytes], need: int = 1) -> set[int]:
    """The offsets of the lines of `blob` that may hold `need` of `words` (lower-case): each
    line holding that many as substrings, case aside, and every line the scan cannot judge —
    any byte beyond ASCII or a `\\u` escape (accents, which a search folds away) — and every
    tombstone and digest. A superset of the lines whose text holds them as words."""
    lowered = blob.lower()
    counts: dict[int, set[bytes]] = {}
    kept: set[int] = set()

    def line_at(position: int) -> int:
        return lowered.rfind(b"\n", 0, position) + 1

    for word in words:
        at = lowered.find(word)
        while at >= 0:
            line = line_at(at)
            counts.setdefault(line, set()).add(word)
            end = lowered.find(b"\n", at)
            at = lowered.find(word, end) if end >= 0 else -1
    kept.update(line for line, found in counts.items() if len(found) >= need)
    if not blob.isascii() or b"\\u" in blob:
        kept.update(line_at(match.start()) for match in _NOT_PLAIN.finditer(blob))
    for marker in _KEPT_ALWAYS:
        at = blob.find(marker)
        while at >= 0:
            kept.add(line_at(at))
            end = blob.find(b"\n", at)
            at = blob.find(marker, end) if end >= 0 else -1
    return kept


def _journal(
    lines: Iterable[tuple[str, dict[str, Any]]], until: datetime | None, since: datetime | None
) -> Journal:
    turns: dict[str, tuple[datetime, Turn]] = {}  # by id: a line merged in twice counts once
    digests: dict[str, Digest] = {}
    forgotten: set[str] = set()  # a turn line a merge brought back beside its tombstone
    for _where, data in lines:
        kind = data["kind"]  # a valid line (shelf.read checked it)
        if kind == "tombstone":
            forgotten.add(data["id"])
            continue
        moment = parse_time(data["at"])
        if (until is not None and moment > until) or (since is not None and moment < since):
            continue
        if kind == "turn":
            turns.setdefault(data["id"], (moment, Turn.from_line(data)))
        else:
            digests.setdefault(data["id"], Digest.from_line(data))
    # time, then id: the same order on every clone, whatever the order of the lines
    ordered = sorted(
        (entry for turn_id, entry in turns.items() if turn_id not in forgotten),
        key=lambda entry: (entry[0], entry[1].id),
    )
    return Journal([turn for _, turn in ordered], sorted(digests.values(), key=lambda d: d.id))


def raw_window(
    turns: Iterable[Turn],
    now: datetime,
    count: int = JournalSettings().raw_window_turns,
    hours: float = JournalSettings().raw_window_hours,
) -> list[Turn]:
    """The last `count` trusted user turns of the past `hours`, whatever their session.

    Only what the wake document may quote verbatim (visibility.py): never a sensitive,
    private, sealed or secret turn, since it is meant for a system prompt.
    """
    start = now - timedelta(hours=hours)
    chosen = [
        turn
        for turn in turns
        if turn.role == "user" and turn.trusted and turn.text_on("wake") is not None
        and start <= turn.moment <= now
    ]  # fmt: skip
    return chosen[-count:] if count > 0 else []


# writing --------------------------------------------------------------------------------------
def add_turns(memdir: Memdir, turns: Iterable[Turn]) -> list[tuple[Turn, bool]]:
    """Append turns (skipping those already in the journal); returns each with `added`."""
    batch = list(turns)
    results: list[tuple[Turn, bool]] = []
    with writing(memdir):
        present = idcache.open_cache(memdir).turns_present(turn.id for turn in batch)
        payload: dict[Path, list[bytes]] = {}
        for turn in batch:
            fresh = turn.id not in present
            if fresh:
                present.add(turn.id)
                payload.setdefault(path_for(memdir, turn), []).append(encode_line(turn.to_line()))
            results.append((turn, fresh))
        for path in (turns_path(memdir), secret_path(memdir)):
            if path in payload:
                shelf.append(path, payload[path], memdir.quarantine_dir)
    return results


def add_digests(memdir: Memdir, digests: Iterable[Digest]) -> None:
    """Append digest lines (caller holds the writer lock in a dream)."""
    payload = [encode_line(digest.to_line()) for digest in digests]
    with writing(memdir):
        shelf.append(digests_path(memdir), payload, memdir.quarantine_dir)


def forgotten_turns(memdir: Memdir) -> set[str]:
    """The ids of the turns `journal forget` left tombstones for."""
    return {
        str(item.data.get("id"))
        for path in journal_files(memdir)
        for item in shelf.read(path, kinds=JOURNAL_KINDS)
        if item.data.get("kind") == "tombstone"
    }


def forgotten_among(memdir: Memdir, ids: Iterable[str]) -> set[str]:
    """Which of `ids` `journal forget` left tombstones for: forgotten_turns for a few ids, each
    looked for with the bytes' own search (the lines naming it are then read as forgotten_turns
    reads them), not by reading every line of the journal."""
    wanted = {str(turn_id) for turn_id in ids}
    found: set[str] = set()
    if not wanted:
        return found
    for path in journal_files(memdir):
        data = path.read_bytes()
        for turn_id in sorted(wanted - found):
            needle = json.dumps(turn_id).encode("ascii")
            at = data.find(needle)
            while at >= 0:
                start, end = data.rfind(b"\n", 0, at) + 1, data.find(b"\n", at)
                end = len(data) if end < 0 else end
                try:
                    line = shelf.parse(data[start:end], f"{path} (byte {start})", JOURNAL_KINDS)
                except FormatError:
                    line = None  # a malformed line, skipped as forgotten_turns skips it
                if (
                    line is not None
                    and line.get("kind") == "tombstone"
                    and line.get("id") == turn_id
                ):
                    found.add(turn_id)
                    break
                at = data.find(needle, end)
    return found


def returned_turns(memdir: Memdir) -> list[Turn]:
    """Turn lines beside their own tombstone (a union merge from a clone that still had them):
    readers skip them, `verify` reports them, `journal forget` removes them again."""
    lines = [
        item.data
        for path in journal_files(memdir)
        for item in shelf.read(path, kinds=JOURNAL_KINDS)
    ]
    stones = {data.get("id") for data in lines if data.get("kind") == "tombstone"}
    back = {
        data["id"]: data
        for data in lines
        if data.get("kind") == "turn" and data.get("id") in stones
    }
    return [Turn.from_line(data) for data in back.values()]


def forget_turns(memdir: Memdir, turns: Iterable[Turn], now: datetime) -> list[Digest]:
    """Remove turns from every journal file, with the digests that name them, leaving one
    tombstone line per turn; each file is rewritten atomically (caller holds the writer lock).
    Returns the digests removed: the memories they name summarise forgotten text."""
    chosen = {turn.id: turn for turn in turns}
    needles = [turn_id.encode("ascii") for turn_id in chosen]
    removed: list[Digest] = []
    for path in journal_files(memdir):
        shelf.quarantine_torn_tail(path, memdir.quarantine_dir)
        old = Lines.read(path)
        output: list[bytes] = []
        for number, line in enumerate(old.lines, start=1):
            if not any(needle in line for needle in needles):
                output.append(line)
                continue
            data = shelf.decode_line(line[:-1], f"{path}:{number}")
            named = {*data.get("turns", ()), *data.get("withheld", ())}
            if data.get("kind") == "turn" and data.get("id") in chosen:
                output.append(b"")
            elif data.get("kind") == "digest" and named & chosen.keys():
                removed.append(Digest.from_line(data))
                output.append(b"")
            else:
                output.append(line)
        rewrite(memdir, old, output)  # the id cache follows it
    known = forgotten_turns(memdir)
    stones: dict[Path, list[bytes]] = {}
    for turn in chosen.values():
        if turn.id not in known:  # a secret turn's tombstone stays on this machine too
            stone = Tombstone(turn.id, turn.at, format_time(now))
            stones.setdefault(path_for(memdir, turn), []).append(encode_line(stone.to_line()))
    for path, lines in stones.items():
        shelf.append(path, lines, memdir.quarantine_dir)
    return removed


# narrative entries ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Entry:
    """A narrative journal entry: markdown with a small YAML header."""

    path: Path
    at: str
    author: str
    kind: str
    text: str

    def to_dict(self) -> dict[str, Any]:
        return {"file": self.path.name, "at": self.at, "author": self.author,
                "kind": self.kind, "text": self.text}  # fmt: skip


def write_entry(
    memdir: Memdir, text: str, now: datetime, author: str = "assistant", kind: str = "reflection"
) -> Entry:
    """Write an entry as journal/entries/<time>-<kind>-<hash>.md (same content, same file)."""
    body = text.strip()
    if not body:
        raise BadInputError("the entry is empty", hint="pass the text, or '-' to read stdin")
    at = format_time(now)
    header = {"at": at, "author": author, "kind": kind}
    digest = hashlib.sha256(f"{at}\n{author}\n{kind}\n{body}".encode()).hexdigest()[:8]
    stamp = at.replace("-", "").replace(":", "")
    path = entries_dir(memdir) / f"{stamp}-{kind}-{digest}.md"
    document = "---\n" + yaml.safe_dump(header, sort_keys=False) + "---\n\n" + body + "\n"
    with writing(memdir):
        write_text(path, document)
    return Entry(path, at, author, kind, body)


def read_entry(path: Path) -> Entry:
    raw = path.read_text(encoding="utf-8")
    header: dict[str, Any] = {}
    body = raw
    if raw.startswith("---\n") and "\n---\n" in raw[3:]:
        head, body = raw[4:].split("\n---\n", 1)
        loaded = yaml.safe_load(head)
        header = loaded if isinstance(loaded, dict) else {}
    at = header.get("at")
    return Entry(path, str(at) if at else "", str(header.get("author", "")),
                 str(header.get("kind", "reflection")), body.strip())  # fmt: skip


def read_entries(memdir: Memdir, until: datetime | None = None) -> list[Entry]:
    """Entries in time order (their names start with the time), as of `until`."""
    entries = []
    for path in sorted(entries_dir(memdir).glob("*.md")):
        entry = read_entry(path)
        if until is not None and entry.at and parse_time(entry.at) > until:
            continue
        entries.append(entry)
    return entries


# verify ---------------------------------------------------------------------------------------
def check(
    memdir: Memdir,
    memories: dict[str, dict[str, Any]],
    known: set[str],
    notes: list[str] | None = None,
) -> tuple[int, list[str], set[str]]:
    """Journal problems for `verify`: schemas, ids, and backlinks both ways.

    `memories` are the memory lines by id, `known` every memory id (tombstones included).
    Returns how many lines were checked, the problems, and the turn ids. A dream writes its
    summaries first and then their digest, the line that commits them: a summary whose turns
    no digest covers yet is a dream stopped in between (killed, a full disk), which the next
    dream completes by reusing it — given `notes`, it is said there, not counted a problem.
    """
    lines = _journal_lines(memdir)
    found = lines.problems
    forgotten = lines.forgotten
    for turn_id in sorted(forgotten & lines.turns.keys()):
        found.append(f"{turn_id} is forgotten but its text is back in the journal (a merge?); "
                     f"`memdir journal forget {turn_id}` removes it")  # fmt: skip
    for where, digest in lines.digests:
        named = {*digest["turns"], *digest.get("withheld", ())} & forgotten
        if named:
            found.append(f"{where}: digest of forgotten turn {sorted(named)[0]}: its summary "
                         "may quote it")  # fmt: skip
    turns = {turn_id: line for turn_id, line in lines.turns.items() if turn_id not in forgotten}
    backlinked: dict[str, set[str]] = {}
    for where, digest in lines.digests:
        found.extend(_digest_problems(where, digest, memories, known, turns, backlinked))
    digested = {
        turn_id
        for _, digest in lines.digests
        for turn_id in (*digest["turns"], *digest.get("withheld", ()))
    }
    for memory_id, line in memories.items():
        uncommitted = notes is not None and _awaits_digest(line, digested)
        for link in line.get("links", ()):
            target = link["to"]
            if not target.startswith("t-"):
                continue
            if target in forgotten:
                continue  # a link to a forgotten turn: the id survives, as for a memory
            if target not in turns:
                found.append(f"{memory_id}: link to unknown journal turn {target}")
            elif link["type"] == SUMMARY_LINK and target not in backlinked.get(memory_id, set()):
                if not uncommitted:
                    found.append(f"{memory_id}: turn {target} has no digest linking back to it")
        if uncommitted and notes is not None:
            notes.append(f"{memory_id}: a dream stopped before writing its digest; the next "
                         "`memdir dream` or `memdir sleep` completes it")  # fmt: skip
    return lines.checked, found, set(turns) | forgotten


@dataclass
class _JournalLines:
    """The journal files' valid lines by kind, for `check`, with the problems of single lines."""

    checked: int
    problems: list[str]
    turns: dict[str, dict[str, Any]]
    digests: list[tuple[str, dict[str, Any]]]
    forgotten: set[str]


def _journal_lines(memdir: Memdir) -> _JournalLines:
    """Every journal line decoded and checked on its own (schema, id against content)."""
    lines = _JournalLines(0, [], {}, [], set())
    for path in journal_files(memdir):
        blob = path.read_bytes()
        for number, raw in enumerate(blob.split(b"\n")[:-1], start=1):
            if not raw.strip():
                continue
            lines.checked += 1
            where = f"journal/{path.name}:{number}"
            try:
                line = shelf.decode_line(raw, where)
            except FormatError as error:
                lines.problems.append(error.message)
                continue
            problems = line_problems(line, JOURNAL_KINDS)
            if problems:
                lines.problems.extend(f"{where}: {problem}" for problem in problems)
                continue
            if line["kind"] == "tombstone":
                lines.forgotten.add(line["id"])
                continue
            if content_id(line["id"][0], line) != line["id"]:
                lines.problems.append(
                    f"{where}: {line['id']} does not match its content (edited by hand?)"
                )
            if line["kind"] == "turn":
                lines.turns[line["id"]] = line
            else:
                lines.digests.append((where, line))
        torn = shelf.torn_tail(path)
        if torn:
            lines.problems.append(
                f"journal/{path.name}: torn last line ({torn} bytes without a newline)"
            )
    return lines


def _digest_problems(
    where: str,
    digest: dict[str, Any],
    memories: dict[str, dict[str, Any]],
    known: set[str],
    turns: dict[str, dict[str, Any]],
    backlinked: dict[str, set[str]],
) -> list[str]:
    """A digest's unknown memories and turns, and summaries that do not link back to its
    turns; records in `backlinked` which turns each of its memories is a digest of."""
    found = []
    for field_name in ("memory", "promoted"):
        memory_id = digest.get(field_name)
        if memory_id and memory_id not in known:
            found.append(f"{where}: digest names unknown memory {memory_id}")
    for turn_id in (*digest["turns"], *digest.get("withheld", ())):
        if turn_id not in turns:
            found.append(f"{where}: digest names unknown turn {turn_id}")
    for memory_id in (digest.get("memory"), digest.get("promoted")):
        if not memory_id:
            continue
        backlinked.setdefault(memory_id, set()).update(digest["turns"])
        summary = memories.get(memory_id)
        linked = {link["to"] for link in (summary or {}).get("links", ())}
        missing = [turn_id for turn_id in digest["turns"] if turn_id not in linked]
        if summary is not None and missing:
            found.append(f"{where}: {memory_id} does not link back to {missing[0]}")
    return found


def _awaits_digest(line: dict[str, Any], digested: set[str]) -> bool:
    """A dream's summary (derived or a promoted inference) none of whose turns any digest
    covers: written by a dream that stopped before its digest."""
    summarised = [link["to"] for link in line.get("links", ()) if link.get("type") == SUMMARY_LINK]
    return (
        line.get("source") in ("derived", "inference")
        and bool(summarised)
        and not digested.intersection(summarised)
    )
