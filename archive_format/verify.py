"""`verify`: a read-only check of a whole memdir against docs/FORMAT.md."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import attachments, gitrules, journal, secrets, shelf
from .errors import FormatError
from .fold import impossible_line
from .memdir import Memdir
from .records import content_id
from .state import read_yaml
from .tombstones import writing
from .validate import line_problems


@dataclass
class Report:
    """Problems make verify fail; warnings need a look but break nothing; notes are harmless."""

    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    lines: int = 0

    @property
    def clean(self) -> bool:
        return not self.problems


def _lines(path: Path, report: Report) -> list[tuple[str, dict[str, Any]]]:
    """Decodable lines of a shelf with their locations; undecodable ones become problems."""
    found: list[tuple[str, dict[str, Any]]] = []
    blob = path.read_bytes()
    for number, raw in enumerate(blob.split(b"\n")[:-1], start=1):
        if not raw.strip():
            continue
        where = f"{path.name}:{number}"
        try:
            found.append((where, shelf.decode_line(raw, where)))
        except FormatError as error:
            report.problems.append(error.message)
    torn = shelf.torn_tail(path)
    if torn:
        report.problems.append(
            f"{path.name}: torn last line ({torn} bytes without a newline); the next write quarantines it"
        )
    return found


def verify(memdir: Memdir, history: bool = False) -> Report:
    """Check schemas, ids against content, references and provenance rules; change nothing.

    In git, a line the last commit's shelves hold that none holds now; with `history`, also
    every line git once had in a shelf (archive_format/history.py)."""
    report = Report()
    if memdir.settings_problem:
        report.problems.append(memdir.settings_problem)
    if history:
        from .history import gone_lines  # runs git: only when asked

        report.problems.extend(gone_lines(memdir))
    from .history import uncommitted_deletions

    report.problems.extend(uncommitted_deletions(memdir))
    located: list[tuple[str, dict[str, Any]]] = []
    for path in memdir.shelves():
        located.extend(_lines(path, report))
    report.lines = len(located)
    shelves = _sort_lines(located, report)
    known = set(shelves.memories) | shelves.tombstones
    report.problems.extend(_event_problems(shelves, known))
    report.problems.extend(
        f"{where}: recall lists unknown memory {memory_id}"
        for where, recalled in shelves.recalls
        for memory_id in recalled["memories"]
        if memory_id not in known
    )
    report.warnings.extend(_conflicting_decisions(shelves.events))
    report.warnings.extend(
        f"teaching {memory_id} quotes journal turn {turn_id} (via {channel}), which no agent "
        "harness recorded: a process of this user could have written it; `memdir review` lists it"
        for memory_id, turn_id, channel in unvouched_teachings(memdir, shelves.memories.values())
    )
    report.problems.extend(_memory_problems(shelves, known))
    found, warned = attachments.problems(
        memdir, _attachment_links(shelves.memories, shelves.tombstones, shelves.events)
    )
    report.problems.extend(found)
    report.warnings.extend(warned)
    checked, found, turns = journal.check(memdir, shelves.memories, known, report.notes)
    report.lines += checked
    report.problems.extend(found)
    forgotten = shelves.tombstones | journal.forgotten_turns(memdir)
    report.problems.extend(_derived_mentions(memdir, forgotten))
    report.problems.extend(
        f"{where}: link to unknown journal turn {event['to']}"
        for where, event in shelves.events
        if event["op"] == "link"
        and str(event.get("to", "")).startswith("t-")
        and event["to"] not in turns
    )
    _check_state(memdir, report)
    _check_surroundings(memdir, report)
    return report


@dataclass
class _Shelves:
    """The shelves' valid lines by kind, as verify goes on to check them against each other."""

    memories: dict[str, dict[str, Any]] = field(default_factory=dict)
    tombstones: set[str] = field(default_factory=set)
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    recalls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


_NOT_ITS_CONTENT = "does not match its content (edited by hand?)"


def _sort_lines(located: list[tuple[str, dict[str, Any]]], report: Report) -> _Shelves:
    """Each line checked on its own (schema, id against content), then filed by kind; a memory
    or event id found in more than one place is a warning (the copies count once)."""
    shelves = _Shelves()
    seen: dict[str, list[str]] = {}
    for where, line in located:
        found = line_problems(line)
        if found:
            report.problems.extend(f"{where}: {problem}" for problem in found)
            continue
        kind = line["kind"]
        if kind == "memory":
            report.problems.extend(_memory_line_problems(where, line, shelves.memories))
            seen.setdefault(line["id"], []).append(where)
            shelves.memories.setdefault(line["id"], line)
        elif kind == "event":
            if not line.get("redacted") and content_id("e", line) != line["id"]:
                report.problems.append(f"{where}: {line['id']} {_NOT_ITS_CONTENT}")
            seen.setdefault(line["id"], []).append(where)
            shelves.events.append((where, line))
        elif kind == "recall":
            if content_id("r", line) != line["id"]:
                report.problems.append(f"{where}: {line['id']} {_NOT_ITS_CONTENT}")
            shelves.recalls.append((where, line))
        else:
            shelves.tombstones.add(line["id"])
    report.warnings.extend(
        f"{memory_id} appears {len(places)} times ({', '.join(places)}): the copies count "
        "once; `memdir sync` drops them"
        for memory_id, places in seen.items()
        if len(places) > 1
    )
    return shelves


def _memory_line_problems(
    where: str, line: dict[str, Any], memories: dict[str, dict[str, Any]]
) -> list[str]:
    """A memory line against its id and an earlier line of that id, and whether it can be."""
    found = []
    if content_id("m", line) != line["id"]:
        found.append(f"{where}: {line['id']} {_NOT_ITS_CONTENT}")
    elif line["id"] in memories and memories[line["id"]] != line:
        found.append(f"{where}: {line['id']} appears twice with different content")
    impossible = impossible_line(line)
    if impossible:
        found.append(
            f"{where}: {line['id']} is {impossible} (ignored: the fold and recall leave it out)"
        )
    return found


def _event_problems(shelves: _Shelves, known: set[str]) -> list[str]:
    """Events whose target or linked memory is unknown, self-links, impossible confirms and
    confirms of what is not an inference."""
    found = []
    for where, event in shelves.events:
        target = event["target"]
        if event["op"] == "link" and event.get("to") == target:
            found.append(f"{where}: {target} links to itself")
        if target not in known:
            found.append(f"{where}: event {event['id']} refers to unknown memory {target}")
            continue
        if event["op"] == "confirm":
            impossible = impossible_line(event)
            if impossible:
                found.append(
                    f"{where}: {target}: {impossible} (ignored: the fold leaves the confirm out)"
                )
            memory = shelves.memories.get(target)
            if memory is not None and memory["source"] != "inference":
                found.append(f"{where}: confirm of {target}, which is not an inference")
        to = str(event.get("to", ""))
        if event["op"] == "link" and to.startswith("m-") and to not in known:
            found.append(f"{where}: link from {target} to unknown memory {to}")
    return found


def _memory_problems(shelves: _Shelves, known: set[str]) -> list[str]:
    """Forgotten memories whose text is back, and memory lines' links to themselves or to
    unknown memories."""
    found = []
    for memory_id, memory in shelves.memories.items():
        if memory_id in shelves.tombstones:
            found.append(
                f"{memory_id} is forgotten but its text is back in a shelf (a merge?); "
                "the next write or `memdir sync` removes it"
            )
        for link in memory.get("links", ()):
            if link["to"] == memory_id:
                found.append(f"{memory_id}: links to itself")
            elif link["to"].startswith("m-") and link["to"] not in known:
                found.append(f"{memory_id}: link to unknown memory {link['to']}")
    return found


def _check_state(memdir: Memdir, report: Report) -> None:
    """The state folder: the notes' and islands' lines against their schemas, the YAML files
    readable."""
    for name, kind in (("notes.jsonl", "note"), ("islands.jsonl", "island")):
        path = memdir.state_dir / name
        if path.is_file():
            for where, line in _lines(path, report):
                report.lines += 1
                report.problems.extend(
                    f"{where}: {problem}" for problem in line_problems(line, (kind,))
                )
    for state_file in sorted(memdir.state_dir.glob("*.yaml")):
        try:
            read_yaml(state_file)
        except FormatError as error:
            report.problems.append(error.message)


def _check_surroundings(memdir: Memdir, report: Report) -> None:
    """What lies around the records: secrets in tracked files, missing git rules, leftovers of
    interrupted writes and stray files, quarantined torn lines."""
    report.problems.extend(
        f"{where}: a secret turn or sealed memory in a file git tracks (a sync would push it "
        "in plain text; `memdir sync` moves it to the git-ignored journal/secret.jsonl or "
        "shelves/sealed.jsonl)"
        for where in secrets.tracked(memdir)
    )
    for name, lacking in gitrules.missing(memdir.root).items():
        report.warnings.append(
            f"{name} lacks {', '.join(lacking)}: clones may conflict; `memdir init .` adds it"
        )
    for leftover in leftovers(memdir):
        place = leftover.path.relative_to(memdir.root)
        if leftover.pid is None:
            report.warnings.append(f"{place}: a stray file memdir did not write (move it away?)")
        elif leftover.stale:
            report.warnings.append(
                f"{place}: temporary file of an interrupted write (pid {leftover.pid} is gone); "
                "`memdir verify --fix` removes it"
            )
        else:
            report.notes.append(f"{place}: a write in progress (pid {leftover.pid})")
    if memdir.quarantine_dir.is_dir():
        for item in sorted(memdir.quarantine_dir.iterdir()):
            report.notes.append(f"quarantined torn line kept in {item.relative_to(memdir.root)}")


def _attachment_links(
    memories: dict[str, dict[str, Any]],
    tombstones: set[str],
    events: list[tuple[str, dict[str, Any]]],
) -> dict[str, tuple[list[str], bool]]:
    """Each unforgotten memory's attachment ids (its line's links and its link events), and
    whether it is sealed (its files are then in attachments/sealed/)."""
    forgotten = tombstones | {event["target"] for _, event in events if event["op"] == "forget"}
    added: dict[str, list[dict[str, Any]]] = {}
    for _, event in events:
        if event["op"] == "link" and event.get("link_type") == attachments.LINK_TYPE:
            added.setdefault(event["target"], []).append(
                {"type": attachments.LINK_TYPE, "to": event.get("to")}
            )
    found: dict[str, tuple[list[str], bool]] = {}
    for memory_id, memory in memories.items():
        if memory_id in forgotten:
            continue
        ids = attachments.linked([*memory.get("links", ()), *added.get(memory_id, ())])
        if ids:
            found[memory_id] = (ids, memory.get("visibility") == "sealed")
    return found


def _derived_mentions(memdir: Memdir, forgotten: set[str]) -> list[str]:
    """Generated files (documents/, the console ring) that still quote a forgotten memory or
    turn: each quotes a record beside its id, so the id is enough to find it."""
    found = []
    files = [*sorted(memdir.documents_dir.glob("*.md")), memdir.state_dir / "ring.yaml"]
    for path in files:
        if not path.is_file() or not forgotten:
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        named = sorted(record_id for record_id in forgotten if record_id in text)
        if named:
            where = path.relative_to(memdir.root)
            found.append(f"{where} still quotes forgotten {named[0]}"
                         f"{f' (and {len(named) - 1} more)' if len(named) > 1 else ''}; "
                         "`memdir sleep` writes it again")  # fmt: skip
    return found


def _conflicting_decisions(events: list[tuple[str, dict[str, Any]]]) -> list[str]:
    """A confirm and a reject of one memory in the same second (e.g. on two clones): the fold's
    rule decides (reject beats confirm, docs/FORMAT.md "Sync"), but the user should know."""
    decisions: dict[tuple[str, str], dict[str, tuple[str, dict[str, Any]]]] = {}
    for where, event in events:
        if event["op"] in ("confirm", "reject"):
            decisions.setdefault((event["target"], event["at"]), {})[event["op"]] = (where, event)
    found = []
    for (target, at), ops in sorted(decisions.items()):
        if len(ops) == 2:
            (c_where, confirm), (r_where, reject) = ops["confirm"], ops["reject"]
            found.append(
                f"{target}: confirmed ({confirm['id']} by {confirm['actor']}, {c_where}) and "
                f"rejected ({reject['id']} by {reject['actor']}, {r_where}) at {at}: "
                "the reject stands; confirm again to overrule it"
            )
    return found


# leftovers ------------------------------------------------------------------------------------
# A killed write leaves its temporary file (atomic.py: ".NAME.PID.RANDOM.tmp"); these folders
# hold only what memdir writes there, so anything else is a stray file worth a look.
TEMP_NAME = re.compile(r"\..+\.(\d+)(?:\.[0-9a-f]{8})?\.tmp")
EXPECTED = {"shelves": (".jsonl",), "journal": (".jsonl",), "state": (".yaml", ".jsonl")}


@dataclass(frozen=True)
class Leftover:
    path: Path
    pid: int | None  # the writer of a temporary file; None for a stray file

    @property
    def stale(self) -> bool:
        """A temporary file whose writer is gone (safe to remove)."""
        return self.pid is not None and not _alive(self.pid)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True


def leftovers(memdir: Memdir) -> list[Leftover]:
    """Temporary files of interrupted writes and stray files in memdir's folders."""
    found: list[Leftover] = []
    folders = [memdir.root, memdir.cache_dir, memdir.documents_dir, memdir.journal_dir / "entries",
               *(memdir.root / name for name in EXPECTED), *attachments.folders(memdir)]  # fmt: skip
    for folder in folders:
        if not folder.is_dir() or folder.is_symlink():
            continue
        for path in sorted(folder.iterdir()):
            match = TEMP_NAME.fullmatch(path.name)
            if match and path.is_file():
                found.append(Leftover(path, int(match.group(1))))
            elif folder.name in EXPECTED and folder.parent == memdir.root:
                if path.is_dir() and path.name == "entries" and folder.name == "journal":
                    continue
                if not path.name.endswith(EXPECTED[folder.name]):
                    found.append(Leftover(path, None))
    return found


def fix_leftovers(memdir: Memdir) -> list[Path]:
    """Remove the temporary files of writers that are gone; returns what was removed."""
    removed = []
    with writing(memdir):  # no write of ours is under way meanwhile
        for item in leftovers(memdir):
            if item.stale:
                item.path.unlink(missing_ok=True)
                removed.append(item.path)
    return removed


_CITED_TURN = re.compile(r"journal turn (t-[0-9a-f]{16})")
VOUCHED_CHANNELS = ("hook:verified",)  # a turn the harness's own transcript held
VOUCHED_PREFIXES = ("import:",)  # an export the user imported


def unvouched_teachings(memdir: Memdir, memories: Any) -> list[tuple[str, str, str]]:
    """(memory id, turn id, channel) for each teaching the guard accepted from a quote (its
    meta.evidence cites the turn) whose turn has no harness record: recorded from a command
    line ('cli') rather than by a prompt hook the harness's transcript vouched for, or gone.
    Such a turn is trusted, but any process of this user could have written it."""
    cited: list[tuple[str, str]] = []
    for line in memories:
        if line.get("source") != "teaching":
            continue
        evidence = str((line.get("meta") or {}).get("evidence") or "")
        found = _CITED_TURN.search(evidence)
        if found:
            cited.append((str(line["id"]), found.group(1)))
    if not cited:
        return []
    channels = {turn.id: turn.channel for turn in journal.read_journal(memdir).turns}
    return [
        (memory_id, turn_id, channels.get(turn_id, "no such turn"))
        for memory_id, turn_id in cited
        if channels.get(turn_id) not in VOUCHED_CHANNELS
        and not channels.get(turn_id, "").startswith(VOUCHED_PREFIXES)
    ]
