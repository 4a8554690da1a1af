"""The policy matrix (archive_format/visibility.py, docs/POLICY.md) on every surface, through
the real `memdir` console script, the MCP SDK's own stdio client and a real `memdir ui`
server's HTTP API.

One record of each class is planted — a memory per status (durable teaching, provisional,
expired and rejected inferences, superseded, forgotten), per visibility (private, sealed) and
one scoped to another persona; a user turn per exposure (normal, sensitive, private, sealed,
secret). Every surface is read in its plain and `--json` forms (and with each opt-in flag),
and each record must appear with its text and marker, masked, or not at all, as
`visibility.decide` says. A command or MCP tool in neither the matrix nor `NO_RECORDS` fails
`test_every_command_and_tool_has_a_row`: a new surface cannot be added without a row.
"""

from __future__ import annotations

import json
import logging
import re
import tarfile
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml
from conftest import MEMDIR_BIN, T0_DT, Server, clean_env, configure, memdir_cli, memdir_main
from ui_server import UiServer

from memdir.actor import Actor
from memdir.archive_format import journal, lifecycle, visibility
from memdir.archive_format.clock import format_time
from memdir.archive_format.memdir import Memdir, init
from memdir.archive_format.visibility import NO_RECORDS, SURFACES, Show, decide

NOW = T0_DT + timedelta(hours=3)
NOW_TEXT = format_time(NOW)
PASSPHRASE = "correct horse battery staple"


@dataclass
class Planted:
    name: str
    kind: str  # "memories" or "turns"
    status: str | None
    visibility: str
    secrecy: str = "public"
    persona: str | None = None
    id: str = ""

    @property
    def token(self) -> str:
        """A word only this record's text holds."""
        return f"qk{self.name.replace(' ', '')}word"

    @property
    def text(self) -> str:
        return f"the quokka {self.token} note"

    @property
    def exposure(self) -> str:
        return visibility.exposure(self.visibility, self.secrecy)


RECORDS = [
    Planted("durable", "memories", "durable", "normal"),
    Planted("provisional", "memories", "provisional", "normal"),
    Planted("expired", "memories", "expired", "normal"),
    Planted("rejected", "memories", "rejected", "normal"),
    Planted("superseded", "memories", "superseded", "normal"),
    Planted("current", "memories", "durable", "normal"),  # what superseded it
    Planted("forgotten", "memories", "forgotten", "normal"),
    Planted("private", "memories", "durable", "private"),
    Planted("sealed", "memories", "durable", "sealed"),
    Planted("persona", "memories", "durable", "normal", persona="work"),
    Planted("turn normal", "turns", None, "normal"),
    Planted("turn sensitive", "turns", None, "normal", "sensitive"),
    Planted("turn private", "turns", None, "private"),
    Planted("turn sealed", "turns", None, "sealed"),
    Planted("turn secret", "turns", None, "normal", "secret"),
]
BY_NAME = {record.name: record for record in RECORDS}


def plant(root: Path) -> Memdir:
    """Every record class, written through the library at fixed times."""
    memdir, _ = init(root, T0_DT)
    memdir = configure(memdir, embedder={"kind": "hashing"})
    at = T0_DT
    for record in RECORDS:
        at += timedelta(seconds=1)
        if record.kind == "turns":
            turn = journal.new_turn(at + timedelta(hours=1), "user", "s1", record.text, "cli",
                                    record.visibility, record.secrecy)  # fmt: skip
            journal.add_turns(memdir, [turn])
            record.id = turn.id
            continue
        options: dict[str, Any] = {"visibility": record.visibility}
        if record.persona:
            options["personas"] = [record.persona]
        if record.name in ("superseded", "current"):
            options["key"] = "quokka-home"
        if record.name in ("provisional", "expired", "rejected"):
            ttl = timedelta(hours=1) if record.name == "expired" else timedelta(days=7)
            record.id = lifecycle.infer(memdir, record.text, at, ttl, **options).id
        else:
            record.id = lifecycle.teach(memdir, record.text, at, **options).id
    attach_files(memdir, root.parent / "planted-files", at)
    lifecycle.reject(memdir, BY_NAME["rejected"].id, "the user said no", at)
    lifecycle.forget(memdir, BY_NAME["forgotten"].id, at)
    lifecycle.expire(memdir, NOW)
    return memdir


ATTACHED: dict[str, str] = {}  # record name → the id of the file attached to it


def attach_files(memdir: Memdir, folder: Path, at: Any) -> None:
    """A text file holding each memory's token, attached to it: its text shows (or not) with
    the memory's, and goes when the memory is forgotten."""
    from memdir.usecases import attachments

    folder.mkdir(parents=True, exist_ok=True)
    for number, record in enumerate(r for r in RECORDS if r.kind == "memories"):
        path = folder / f"file-{number}.txt"
        path.write_text(f"attached {record.token} file\n", encoding="utf-8")
        ATTACHED[record.name] = attachments.attach(memdir, record.id, path, at).attached.id


@dataclass
class View:
    """One surface read one way: its output and what it may be checked for."""

    surface: str
    label: str
    output: str
    asked: frozenset[str] = frozenset()
    persona: str | None = None  # the persona the reader named
    ids: bool = True  # the output names the records it shows (and only those)
    json: bool = False
    only: str | None = None  # the one record a view of one id shows
    marks: bool = False  # plain output marks a record on its line
    partial: bool = False  # shows some records only (the weakest three, ten ids of a prefix):
    # checked for what it must not show, not for what it must


def _cli(memdir: Memdir, *args: str, served: bool = False) -> str:
    """A command's output: from the CLI in this process (the surfaces are what is checked, and
    some seventy commands would start as many interpreters), or `served` by the real client
    from a running `memdir serve`."""
    run = memdir_cli if served else memdir_main
    done = run("--dir", str(memdir.root), *args, now=NOW_TEXT,
               env=clean_env(MEMDIR_PASSPHRASE=PASSPHRASE))  # fmt: skip
    assert done.code == 0, done
    return done.out


def _forms(memdir: Memdir, surface: str, args: tuple[str, ...], marks: bool = False,
           plain_ids: bool = True, **view: Any) -> list[View]:  # fmt: skip
    """The plain and the --json form of one command."""
    label = " ".join(args)
    return [
        View(surface, label, _cli(memdir, *args), marks=marks, ids=plain_ids, **view),
        View(surface, f"{label} --json", _cli(memdir, *args, "--json"), json=True, **view),
    ]


def cli_views(memdir: Memdir, tmp: Path) -> list[View]:
    views: list[View] = []
    private, expired = frozenset({"private"}), frozenset({"expired"})
    for surface in ("recall", "search", "similar"):
        base = (surface, "quokka", "--k", "30") + (("--no-record",) if surface == "recall" else ())
        views += _forms(memdir, surface, base, marks=True)
        views += _forms(memdir, surface, (*base, "--include-private"), True, asked=private)
        views += _forms(memdir, surface, (*base, "--include-expired"), True, asked=expired)
    views += _forms(memdir, "recall", ("recall", "quokka", "--k", "30", "--no-record",
                                       "--persona", "home"), True, persona="home")  # fmt: skip
    for asked in (frozenset(), private):
        views += journal_group_views(memdir, asked)
    _cli(memdir, "island", "create", "everything")
    _cli(memdir, "island", "add", "everything",
         *(r.id for r in RECORDS if r.kind == "memories" and r.status != "forgotten"))  # fmt: skip
    views += _forms(memdir, "island show", ("island", "show", "everything"), marks=True)
    views += _forms(memdir, "core", ("core", "--budget", "4000"), partial=True)
    views += _forms(memdir, "list", ("list",))
    views += _forms(
        memdir, "list", ("list", "--status", "all"), asked=frozenset(visibility.STATUSES)
    )
    views += _forms(memdir, "list", ("list", "--persona", "home"), persona="home")
    for record in RECORDS:
        if record.kind == "memories":
            views += _forms(memdir, "show", ("show", record.id), only=record.name)
            views += _forms(memdir, "log", ("log", record.id), only=record.name)
            views += _forms(memdir, "attachments", ("attachments", record.id), only=record.name)
            views.append(attachment_get_view(memdir, record))
            if record.status != "forgotten":  # a forgotten memory has nothing to decay
                # (its --json form only: the plain one prints the same text, and CI stays quick)
                views.append(
                    View(
                        "show",
                        f"decay {record.id} --json",
                        json=True,
                        only=record.name,
                        output=_cli(memdir, "decay", record.id, "--json"),
                    )
                )
    views += _forms(memdir, "annotate", ("annotate",))
    views += _forms(memdir, "annotate", ("distill",))
    views += _forms(memdir, "review", ("review",))
    views += _forms(memdir, "journal read", ("journal", "read"), plain_ids=False)
    views += _forms(memdir, "journal read --all", ("journal", "read", "--all"), plain_ids=False)
    views += _forms(memdir, "journal search", ("journal", "search", "quokka note", "--k", "50"),
                    plain_ids=False)  # fmt: skip
    views += _forms(memdir, "journal search", ("journal", "search", "quokka note", "--k", "50",
                                               "--all"), plain_ids=False, asked=frozenset({"private"}))  # fmt: skip
    views += _forms(memdir, "room", ("room", "--turns", "50"), plain_ids=False)
    views += _forms(memdir, "song list", ("song", "list"), partial=True)
    views += _forms(memdir, "ring", ("ring",), marks=True)
    views += _forms(memdir, "wake", ("wake",), plain_ids=False)  # turns are quoted without ids
    views.append(View("boot", "boot", _cli(memdir, "boot")))
    dreamt = _cli(
        memdir, "dream", "--dry-run", "--json", "--now", format_time(NOW + timedelta(days=1))
    )
    views.append(View("dream", "dream --dry-run --json", dreamt, ids=False, json=True))
    slept = _cli(memdir, "sleep", "--dry-run", "--json")
    views.append(View("sleep --json", "sleep --dry-run --json", slept, ids=False, json=True,
                      partial=True))  # fmt: skip
    for encrypt in (False, True):
        out = tmp / f"export-{encrypt}.tar.gz"
        _cli(memdir, "export", "--out", str(out), *(["--encrypt"] if encrypt else []))
        views.append(View("export --encrypt" if encrypt else "export", f"export {encrypt}",
                          _unpacked(out, tmp / f"restored-{encrypt}", encrypt)))  # fmt: skip
    return views


def attachment_get_view(memdir: Memdir, record: Planted) -> View:
    """`attachment get A-ID --out -`: the file's bytes, or a refusal (a sealed memory's file is
    shown nowhere, a forgotten one's is gone)."""
    attached = ATTACHED[record.name]
    done = memdir_main("--dir", str(memdir.root), "attachment", "get", attached, "--out", "-",
                       now=NOW_TEXT, env=clean_env())  # fmt: skip
    refused = {"sealed": 8, "forgotten": 4}.get(record.name, 0)
    assert done.code == refused, done
    return View("attachment get", f"attachment get {attached}", done.out, ids=False,
                only=record.name)  # fmt: skip


def journal_group_views(memdir: Memdir, asked: frozenset[str]) -> list[View]:
    """`recall --include-journal`, plain and --json: the memories follow recall's row, the
    journal group (after its heading, under `journal`) the row of its own."""
    from memdir.usecases.recall import JOURNAL_GROUP

    args = ("recall", "quokka", "--k", "30", "--no-record", "--include-journal",
            *(("--include-private",) if asked else ()))  # fmt: skip
    label = " ".join(args)
    plain = _cli(memdir, *args)
    memories, heading, group = plain.partition(JOURNAL_GROUP)
    assert heading, plain
    data = json.loads(_cli(memdir, *args, "--json"))
    found = json.dumps(data.pop("journal"), ensure_ascii=False)
    surface = "recall --include-journal"
    return [
        View("recall", label, memories, asked, marks=True),
        View(surface, label, group, asked, marks=True),
        View("recall", f"{label} --json", json.dumps(data, ensure_ascii=False), asked, json=True),
        View(surface, f"{label} --json", found, asked, json=True),
    ]


# A prompt the planted memories answer (the hashing embedder scores "quokka" alone too weakly
# for a GROUNDED verdict, and context shows nothing without one).
CONTEXT_PROMPT = "the quokka note"
CONTEXT = ("context", CONTEXT_PROMPT, "--k", "30", "--budget", "4000", "--no-record")


def context_journal_views(memdir: Memdir, tmp: Path) -> list[View]:
    """`context` when no memory answers: its journal turns (a copy of the planted memdir where
    no memory can ground a prompt, so the block asks the journal)."""
    import shutil

    copy = tmp / "journal-only"
    shutil.copytree(memdir.root, copy)
    quiet = configure(Memdir.open(copy), recall={"verdict": {"grounded_cosine": 1.0,
                                                             "grounded_bm25": 10000}})  # fmt: skip
    args = ("context", "quokka note", "--budget", "4000", "--no-record")
    views = _forms(quiet, "context (journal)", args, marks=True)
    assert "From the journal" in views[0].output, views[0].output
    return views


def context_views(memdir: Memdir, tmp: Path) -> list[View]:
    """`context` in-process and through a running `memdir serve` (its request counter proves
    it answered): both must say the same, and both are checked against the matrix. The block
    carries at most MAX_ENTRIES entries, so these views show some of the records the matrix
    lets it show (partial); a prompt naming one record's own word shows that one (`only`)."""
    local = [
        View("context", f"{' '.join(args)} (in-process)", _cli(memdir, *args),
             json=json_, marks=not json_, partial=True)
        for json_, args in ((False, CONTEXT), (True, (*CONTEXT, "--json")))
    ]  # fmt: skip
    for record in RECORDS:
        if record.kind == "memories":
            args = ("context", f"the quokka {record.token} note", "--budget", "4000",
                    "--no-record")  # fmt: skip
            local += _forms(memdir, "context", args, marks=True, only=record.name)
    running = Server(memdir, tmp / "serve-policy.log", "--no-watch")
    served = []
    try:
        running.wait_ready()
        for view in local[:2]:
            before = running.status()["requests"]
            args = (*CONTEXT, "--json") if view.json else CONTEXT
            output = _cli(memdir, *args, served=True)
            served.append(View("context", f"{' '.join(args)} (served)", output, json=view.json,
                               marks=view.marks, partial=True))  # fmt: skip
            assert running.status()["requests"] == before + 1, f"{view.label}: not served"
    finally:
        stopped = running.stop()
    assert stopped == 0, running.text()
    for mine, theirs in zip(local[:2], served, strict=True):
        assert mine.output == theirs.output, theirs.label
    assert all(view.output for view in local), "the context prompt must be GROUNDED"
    return local + served


def _unpacked(archive: Path, into: Path, encrypted: bool) -> str:
    """Every file an export holds, as text (an encrypted one restored through the CLI)."""
    if encrypted:
        done = memdir_cli("restore", str(archive), str(into), now=NOW_TEXT,
                          env=clean_env(MEMDIR_PASSPHRASE=PASSPHRASE))  # fmt: skip
        assert done.code == 0, done
        return "\n".join(p.read_text(errors="replace") for p in into.rglob("*") if p.is_file())
    with tarfile.open(archive) as tar:
        members = [tar.extractfile(m) for m in tar.getmembers() if m.isfile()]
        return "\n".join(f.read().decode("utf-8", "replace") for f in members if f)


def mcp_views(memdir: Memdir) -> list[View]:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    params = StdioServerParameters(command=str(MEMDIR_BIN), args=["--dir", str(memdir.root), "mcp"],
                                   env=clean_env(MEMDIR_NOW=NOW_TEXT))  # fmt: skip

    async def scenario() -> list[View]:
        found: list[View] = []
        async with Client(params, read_timeout_seconds=60) as client:

            async def call(surface: str, tool: str, asked: frozenset[str] = frozenset(),
                           only: str | None = None, partial: bool = False,
                           **arguments: Any) -> None:  # fmt: skip
                result = await client.call_tool(tool, arguments)
                assert not result.is_error, result
                text = json.dumps(result.structured_content, ensure_ascii=False)
                # --explain's filter stage names what it drops; documents quote turns by text
                ids = not arguments.get("explain") and tool != "wake"
                found.append(View(surface, f"MCP {tool} {arguments}", text, asked, ids=ids,
                                  json=True, only=only, partial=partial))  # fmt: skip

            private = frozenset({"private"})
            await call("recall", "recall", query="quokka", k=30)
            await call("recall", "recall", private, query="quokka", k=30, include_private=True)
            await call("recall", "recall", query="quokka", k=30, explain=True)
            for asked in (frozenset(), private):  # the journal group: normal turns only
                result = await client.call_tool("recall", {"query": "quokka", "k": 30,
                                                           "include_journal": True,
                                                           "include_private": bool(asked)})  # fmt: skip
                assert not result.is_error, result
                data = dict(result.structured_content or {})
                group = json.dumps(data.pop("journal"), ensure_ascii=False)
                label = f"MCP recall include_journal {sorted(asked)}"
                found.append(View("recall include_journal (MCP)", label, group, asked, json=True))
                found.append(View("recall", label, json.dumps(data, ensure_ascii=False), asked,
                                  json=True))  # fmt: skip
            await call("island show (MCP)", "island_show", name="everything")
            await call("core", "core", partial=True, budget=4000)  # the core is not every memory
            await call("search", "search", query="quokka", k=30)
            await call("search", "search", private, query="quokka", k=30, include_private=True)
            for record in RECORDS:
                if record.kind == "memories" and decide("show (MCP)", record.status,
                                                        record.exposure) is not Show.OMITTED:  # fmt: skip
                    await call("show (MCP)", "show", only=record.name, memory_id=record.id)
            # an id the tool may not show is not found, as an id that does not exist
            for record in RECORDS:
                if record.kind == "memories" and decide("show (MCP)", record.status,
                                                        record.exposure) is Show.OMITTED:  # fmt: skip
                    result = await client.call_tool("show", {"memory_id": record.id})
                    assert result.is_error, record.name
                    assert "no memory with id" in result.content[0].text, record.name
            # an ambiguous prefix lists only ids the tool may show
            result = await client.call_tool("show", {"memory_id": "m-"})
            assert result.is_error
            found.append(View("show (MCP)", "MCP show m- (ambiguous)", result.content[0].text,
                              json=False, partial=True))  # fmt: skip
            for record in RECORDS:
                if record.kind != "memories":
                    continue
                if decide("attachments (MCP)", record.status, record.exposure) is Show.OMITTED:
                    result = await client.call_tool("attachments", {"memory_id": record.id})
                    assert result.is_error and "no memory with id" in result.content[0].text
                else:
                    await call("attachments (MCP)", "attachments", only=record.name,
                               memory_id=record.id)  # fmt: skip
            await call("journal_read (MCP)", "journal_read")
            await call("journal_read (MCP)", "journal_read", private, include_private=True)
            await call("room (MCP)", "room", turns=50)
            await call("song list (MCP)", "song_list", partial=True)
            await call("ring", "ring")
            await call("wake", "wake")
            await call("boot", "boot")
        return found

    return anyio.run(scenario)


def write_an_old_ring(memdir: Memdir) -> None:
    """A ring as an earlier memdir wrote it: every memory's text, sealed and private too (the
    ring must filter what it reads, not only what it writes)."""
    slots = [{"at": format_time(T0_DT), "what": "taught", "id": r.id, "text": r.text}
             for r in RECORDS if r.kind == "memories" and r.status != "forgotten"]  # fmt: skip
    (memdir.state_dir / "ring.yaml").write_text(yaml.safe_dump({"size": 30, "slots": slots}))


@pytest.fixture(scope="module")
def observed(tmp_path_factory: pytest.TempPathFactory) -> list[View]:
    tmp = tmp_path_factory.mktemp("policy")
    memdir = plant(tmp / "memory")
    ring_file = (memdir.state_dir / "ring.yaml").read_text()
    # the ring stores only what it may show: no sealed text at all, a private one masked
    assert BY_NAME["sealed"].token not in ring_file
    assert BY_NAME["private"].token not in ring_file
    write_an_old_ring(memdir)
    views = cli_views(memdir, tmp) + context_views(memdir, tmp) + mcp_views(memdir)
    views += context_journal_views(memdir, tmp)
    server = UiServer(memdir.root, tmp / "ui-policy.log", now=NOW_TEXT)
    try:
        views += ui_views(server)
        # last: its links would name records in other views
        return views + links_views(memdir, server)
    finally:
        assert server.stop() == 0, server.text()


def links_views(memdir: Memdir, server: UiServer) -> list[View]:
    """`memdir links` (and the page's links view) from a hub linked to every planted memory
    the fold still has."""
    hub = lifecycle.teach(memdir, "The hub every planted memory links to", NOW).id
    for record in RECORDS:
        if record.kind == "memories" and record.status != "forgotten":
            _cli(memdir, "link", hub, record.id, "--type", "related")
    graph = _ui(server, "ui links", f"/api/memories/{hub}/links?depth=1")
    return _forms(memdir, "links", ("links", hub, "--depth", "1"), marks=True) + [graph]


def _ui(server: UiServer, surface: str, path: str, asked: frozenset[str] = frozenset(),
        **view: Any) -> View:  # fmt: skip
    """One route of `memdir ui`'s API, read with the token, as a view of `surface`."""
    answer = server.get(path)
    assert answer.status == 200, (path, answer.body)
    return View(surface, f"ui GET {path}", answer.body.decode(), asked, json=True, **view)


def ui_views(server: UiServer) -> list[View]:
    """Every view of `memdir ui` and the API routes the matrix's rows name, through a real
    server on the planted memdir (explain's stages name what the filters drop: no id check)."""
    private, expired = frozenset({"private"}), frozenset({"expired"})
    views = [
        _ui(server, "ui review", "/api/review"),
        _ui(server, "ui recall", "/api/recall?q=quokka&k=30", ids=False),
        _ui(server, "ui recall", "/api/recall?q=quokka&k=30&include_private=true", private,
            ids=False),
        _ui(server, "ui recall", "/api/recall?q=quokka&k=30&include_expired=true", expired,
            ids=False),
        _ui(server, "ui timeline", "/api/timeline?days=3660"),
        _ui(server, "ui health", "/api/health", ids=False),
        _ui(server, "list", "/api/memories?k=100"),
        # (at most MAX_ENTRIES entries: some of what the matrix lets it show, as context_views)
        _ui(server, "context", "/api/context?q=the+quokka+note&budget=4000", partial=True),
        _ui(server, "context", "/api/context?q=the+quokka+qkprovisionalword+note&budget=4000",
            only="provisional"),
        _ui(server, "journal read", "/api/journal", ids=False),
        _ui(server, "journal read --all", "/api/journal?all=true", ids=False),
    ]  # fmt: skip
    metrics = server.get("/metrics")
    assert metrics.status == 200
    views.append(View("ui health", "ui GET /metrics", metrics.body.decode(), ids=False))
    for record in RECORDS:
        if record.kind == "memories":
            views.append(_ui(server, "ui memory", f"/api/memories/{record.id}", only=record.name))
    return views


def test_sleep_scrubs_a_ring_an_older_memdir_wrote(tmp_path: Path) -> None:
    """state/ring.yaml holds only what the ring may show, also after an older version wrote it."""
    memdir = plant(tmp_path / "memory")
    write_an_old_ring(memdir)
    done = memdir_cli("--dir", str(memdir.root), "sleep", now=NOW_TEXT)
    assert done.code == 0, done
    text = (memdir.state_dir / "ring.yaml").read_text()
    for record in RECORDS:
        if record.kind == "memories":
            shown = decide("ring", record.status, record.exposure) is Show.TEXT
            assert (record.token in text) is shown, record.name
    assert BY_NAME["private"].id in text and "[private]" in text


def _records_with(output: str, token: str) -> list[dict[str, Any]]:
    """The JSON objects in `output` whose own string values hold `token`."""
    found: list[dict[str, Any]] = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            if any(isinstance(v, str) and token in v for v in value.values()):
                found.append(value)
            for inner in value.values():
                walk(inner)
        elif isinstance(value, list):
            for inner in value:
                walk(inner)

    walk(json.loads(output))
    return found


def expected(view: View, record: Planted) -> Show:
    other = bool(view.persona and record.persona and record.persona != view.persona)
    return decide(view.surface, record.status, record.exposure, view.asked, other)


@pytest.mark.parametrize("surface", sorted(SURFACES))
def test_every_surface_follows_the_matrix(observed: list[View], surface: str) -> None:
    views = [view for view in observed if view.surface == surface]
    assert views, f"no view reads the surface {surface!r}: add one to this test"
    kinds = SURFACES[surface].kinds
    for view in views:
        for record in RECORDS:
            if view.only and record.name != view.only:
                continue
            where = f"{view.label}: {record.name}"
            has_text = record.token in view.output
            has_id = record.id in view.output
            if record.status == "forgotten":
                assert not has_text, where  # its text is nowhere
            if record.kind not in kinds:
                assert not has_text, f"{where}: this surface shows no {record.kind}"
                continue
            outcome = expected(view, record)
            if outcome is Show.TEXT and record.status != "forgotten":
                if view.partial:
                    continue
                assert has_text, f"{where}: the matrix shows it"
                _check_marker(view, record, where)
            elif outcome is Show.MASKED:
                assert not has_text, f"{where}: the matrix masks it"
                if view.ids and not view.partial:
                    assert has_id, f"{where}: a masked record still appears"
            elif outcome is Show.OMITTED:
                assert not has_text, f"{where}: the matrix leaves it out"
                if view.ids:
                    assert not has_id, f"{where}: the matrix leaves it out"
            elif view.ids and not view.partial:
                assert has_id, where


DOCUMENTS = {
    "wake": {"provisional": ("unconfirmed",)},
    "boot": {"provisional": ("unconfirmed", "inferred"), "expired": ("expired", "inferred"),
             "rejected": ("rejected", "inferred")},
}  # fmt: skip


def _check_marker(view: View, record: Planted, where: str) -> None:
    """A shown record that is not durable and normal carries its status and exposure."""
    mark = visibility.marker(record.status, record.exposure)
    if not mark:
        return
    if view.surface in DOCUMENTS:
        # a document marks by section: the review queue, or a recent event's verb
        text = json.loads(view.output)["markdown"] if view.json else view.output
        lines = [line for line in text.splitlines() if record.token in line]
        assert lines and all(any(word in line for word in DOCUMENTS[view.surface][record.status or ""])
                             for line in lines), f"{where}: not marked"  # fmt: skip
    elif (
        view.json
        and record.kind == "memories"
        and view.surface not in ("export", "export --encrypt")
    ):
        rows = [row for row in _records_with(view.output, record.token) if "id" in row]
        assert rows, where
        for row in rows:
            if "status" in row and record.status:
                assert row["status"] == record.status, where
            if "visibility" in row:
                assert row["visibility"] == record.visibility, where
        assert any("status" in row for row in rows), f"{where}: no status marker"
    elif view.marks:
        lines = [line for line in view.output.splitlines() if record.token in line]
        for part in mark.split(", "):
            assert all(part in line for line in lines), f"{where}: not marked {part!r}"


def test_sealed_and_secret_text_only_where_the_matrix_allows(observed: list[View]) -> None:
    """The target: sealed or secret text on any other surface, 0 occurrences."""
    allowed = {name for name, s in SURFACES.items() if s.exposure["sealed"] is Show.TEXT}
    assert allowed == {"export", "export --encrypt"}
    withheld = [r.token for r in RECORDS if r.exposure in ("sealed", "secret")]
    leaks = [(view.label, token) for view in observed if view.surface not in allowed
             for token in withheld if token in view.output]  # fmt: skip
    assert leaks == []


def _cli_commands() -> set[str]:
    import typer.main

    from memdir.cli.main import app

    root = typer.main.get_command(app)
    names: set[str] = set()

    def walk(command: Any, prefix: str) -> None:
        if hasattr(command, "list_commands"):
            for name in command.list_commands(None):
                walk(command.get_command(None, name), f"{prefix} {name}".strip())
        else:
            names.add(prefix)

    walk(root, "")
    return names


def test_every_command_and_tool_has_a_row(hashed: Memdir) -> None:
    """A new command or MCP tool must be given a row in the matrix (or be listed as showing no
    record), and every row must name commands and tools that exist."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    params = StdioServerParameters(command=str(MEMDIR_BIN), args=["--dir", str(hashed.root), "mcp"],
                                   env=clean_env())  # fmt: skip

    async def listed() -> set[str]:
        async with Client(params, read_timeout_seconds=60) as client:
            return {tool.name for tool in (await client.list_tools()).tools}

    tools = anyio.run(listed)
    commands = _cli_commands()
    in_rows = {re.sub(r" --\S+$", "", name) for s in SURFACES.values() for name in s.cli}
    tool_rows = {name for s in SURFACES.values() for name in s.mcp}
    plain = {name for name in NO_RECORDS if not name.endswith(" (MCP)") and not _route(name)}
    quiet_tools = {name.removesuffix(" (MCP)") for name in NO_RECORDS if name.endswith(" (MCP)")}
    assert sorted(commands - in_rows - plain) == [], "commands with no row in the policy matrix"
    assert sorted(tools - tool_rows - quiet_tools) == [], "MCP tools with no row in the matrix"
    assert sorted((in_rows | plain) - commands) == [], "rows naming commands that do not exist"
    assert sorted((tool_rows | quiet_tools) - tools) == [], "rows naming tools that do not exist"


def _route(name: str) -> bool:
    return name.split(" ")[0] in ("GET", "POST")


def test_every_route_of_the_page_has_a_row(hashed: Memdir) -> None:
    """Each route of `memdir ui`'s API is in a row of the matrix (its `http`) or shows no
    record (NO_RECORDS), and every route a row names exists."""
    from memdir.api import Memdir as Handle
    from memdir.cli.web.server import App, Settings

    app = App(Handle(hashed, Actor("user", "a test")), Settings(0))
    routes = {f"{route.method} {route.pattern}" for route in app.routes}
    in_rows = {name.split("?")[0] for s in SURFACES.values() for name in s.http}
    quiet = {name for name in NO_RECORDS if _route(name)}
    assert sorted(routes - in_rows - quiet) == [], "routes with no row in the policy matrix"
    assert sorted((in_rows | quiet) - routes) == [], "rows naming routes that do not exist"


def test_docs_hold_the_matrix() -> None:
    """docs/POLICY.md holds the matrix the code enforces (regenerate it from matrix_markdown)."""
    doc = (Path(__file__).parents[1] / "docs" / "POLICY.md").read_text(encoding="utf-8")
    assert visibility.matrix_markdown() in doc, (
        "paste visibility.matrix_markdown() into docs/POLICY.md"
    )


# every --json output (issue 32) --------------------------------------------------------------
# Commands whose --json output shows no record (visibility.NO_RECORDS): each runs here, in
# process, on a planted memdir, and no planted record's text may be in what it prints.
QUIET_JSON: dict[str, tuple[str, ...]] = {
    "expire": ("expire",),
    "stats": ("stats",),
    "verify": ("verify",),
    "index": ("index",),
    "doctor": ("doctor",),
    "people list": ("people", "list"),
    "people show": ("people", "show", "Ana"),
    "self show": ("self", "show"),
    "journal add": ("journal", "add", "--role", "assistant", "--session", "s9", "Noted."),
    "journal write": ("journal", "write", "We planned the garden."),
    "journal forget": ("journal", "forget", "{turn}"),
    "export": ("export", "--out", "{tmp}/quiet.tar.gz"),
    "restore": ("restore", "{tmp}/quiet.tar.gz", "{tmp}/restored"),
    "import": ("import", "{tmp}/chat.jsonl", "--format", "jsonl"),
    "sync": ("sync",),
    "island create": ("island", "create", "quiet", "--about", "a quiet island"),
    "island list": ("island", "list"),
    "island delete": ("island", "delete", "quiet"),
    "heal": ("heal",),
}
# --json outputs this test does not run, and where they are covered
NOT_RUN = {
    "serve": "a resident service: it answers other commands, whose rows apply (test_serve, "
    "context_views above)",
    "bench locomo": "reads benchmark data into its own throwaway memdirs, never a memdir's records",
    "bench safety": "builds its own throwaway memdirs (test_safety; experiment 12 probes these "
    "surfaces)",
    "bench delivery": "reads benchmark data into its own throwaway memdirs, never a memdir's "
    "records (test_delivery covers the hook's block it scores)",
    "island add": "echoes the island's name and the ids given (test_islands)",
    "island remove": "echoes the island's name and the ids given (test_islands)",
}


def _json_commands() -> set[str]:
    import typer.main

    from memdir.cli.main import app

    found: set[str] = set()

    def walk(command: Any, prefix: str) -> None:
        if hasattr(command, "list_commands"):
            for name in command.list_commands(None):
                walk(command.get_command(None, name), f"{prefix} {name}".strip())
        elif any("--json" in getattr(option, "opts", ()) for option in command.params):
            found.add(prefix)

    walk(typer.main.get_command(app), "")
    return found


def test_every_json_output_is_read(observed: list[View]) -> None:
    """A command with --json is read by the matrix test, run by the quiet-output test, or
    named here with where it is covered: a new --json output cannot go unread."""
    labels = [view.label for view in observed if view.json]
    read = {name for name in _json_commands()
            if any(label == name or label.startswith(f"{name} ") for label in labels)}  # fmt: skip
    missing = _json_commands() - read - set(QUIET_JSON) - set(NOT_RUN)
    assert sorted(missing) == [], "--json outputs no test reads"
    # export's --json is a report on the archive it wrote (the archive is the export row)
    quiet = set(QUIET_JSON) - {"export"}
    assert quiet <= set(NO_RECORDS), "a quiet output must be a NO_RECORDS row"


def test_json_outputs_that_show_no_record_hold_no_record_text(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from memdir.cli.main import main

    memdir = plant(tmp_path / "memory")
    spare = journal.new_turn(NOW - timedelta(minutes=1), "user", "s2", "a spare turn", "cli")
    journal.add_turns(memdir, [spare])
    (tmp_path / "chat.jsonl").write_text(
        json.dumps({"role": "user", "content": "hello there", "timestamp": NOW_TEXT}) + "\n"
    )
    monkeypatch.setenv("MEMDIR_NOW", NOW_TEXT)
    monkeypatch.setenv("MEMDIR_NO_SERVICE", "1")
    monkeypatch.setenv("MEMDIR_PASSPHRASE", PASSPHRASE)
    tokens = [record.token for record in RECORDS]
    for name, args in QUIET_JSON.items():
        argv = [part.format(tmp=tmp_path, turn=spare.id) for part in args]
        logging.getLogger("memdir").handlers.clear()  # else bound to an earlier run's stderr
        main(["--dir", str(memdir.root), *argv, "--json"])
        out, err = capsys.readouterr()
        assert "Traceback" not in err, (name, err)
        assert not [token for token in tokens if token in out + err], name


# sealed and private stay in (issue 32) -------------------------------------------------------
def test_mcp_show_gives_private_text_only_on_the_users_words(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An assistant naming a private memory's id is not the user asking for it: `show` finds
    it only with the user's quoted words asking about it, from a trusted turn (as `confirm`
    needs); a sealed one never; a prefix lists only what the tool may show."""
    from memdir.archive_format.errors import AmbiguousIdError, NotFoundError
    from memdir.cli.mcp_server import MemdirTools

    memdir = plant(tmp_path / "memory")
    monkeypatch.setenv("MEMDIR_NOW", NOW_TEXT)
    tools = MemdirTools(memdir, timedelta(hours=24))
    private, sealed = BY_NAME["private"], BY_NAME["sealed"]
    asking = f"What did I tell you about {private.id}?"
    elsewhere = "What did I tell you about the weather?"
    turns = [journal.new_turn(NOW - timedelta(minutes=2), "user", "s3", text, "cli")
             for text in (asking, elsewhere, f"Show me {sealed.id} please")]  # fmt: skip
    journal.add_turns(memdir, turns)
    for quote in (None, "What did I tell you about the weather", "about it"):
        with pytest.raises(NotFoundError):
            tools.show(private.id, quote)
    shown = tools.show(private.id[:10], asking.rstrip("?"))
    assert shown["text"] == private.text and shown["visibility"] == "private"
    with pytest.raises(NotFoundError):
        tools.show(sealed.id, f"Show me {sealed.id} please")
    with pytest.raises(AmbiguousIdError) as listing:
        tools.show("m-")
    assert private.id not in str(listing.value) and sealed.id not in str(listing.value)
    assert BY_NAME["durable"].id in str(listing.value) or "among them" in str(listing.value)
    # the write tools' errors name no id the assistant may not see either
    with pytest.raises(AmbiguousIdError) as refused:
        tools.forget("m-", "forget it")
    assert private.id not in str(refused.value) and sealed.id not in str(refused.value)


def test_sleep_json_masks_the_weakest_private_and_sealed_memories(tmp_path: Path) -> None:
    """`decay.weakest` lists the most faded live memories: private and sealed ones among
    them appear masked, their ids kept, their text nowhere in what sleep prints."""
    from memdir.archive_format.lifecycle import teach

    memdir, _ = init(tmp_path / "memory", T0_DT - timedelta(days=400))
    memdir = configure(memdir, embedder={"kind": "hashing"})
    old = T0_DT - timedelta(days=400)
    hidden = {name: teach(memdir, f"the faded {name} qk{name}word note", old, visibility=name).id
              for name in ("private", "sealed")}  # fmt: skip
    teach(memdir, "a fresh normal note", NOW)
    done = memdir_cli("--dir", str(memdir.root), "sleep", "--dry-run", "--json", now=NOW_TEXT)
    assert done.code == 0, done
    weakest = json.loads(done.out)["decay"]["weakest"]
    assert {row["id"] for row in weakest} >= set(hidden.values())
    assert {row["text"] for row in weakest if row["id"] in hidden.values()} == {
        "[private]",
        "[sealed]",
    }
    assert "qkprivateword" not in done.out + done.err and "qksealedword" not in done.out


def test_the_users_distiller_is_never_fed_private_or_sealed_text(tmp_path: Path) -> None:
    """`distill.command` reads what dream's summariser may read (visibility.leaves): the
    private and sealed memories are distilled by the built-in distiller instead."""
    import sys

    heard = tmp_path / "heard.jsonl"
    script = tmp_path / "distiller.py"
    script.write_text(
        "import json, sys\n"
        f"out = open({str(heard)!r}, 'a')\n"
        "for line in sys.stdin:\n"
        "    out.write(line)\n"
        "    print(json.dumps({'type': None, 'importance': 5, 'temporal': 'persistent'}))\n"
    )
    memdir = plant(tmp_path / "memory")
    configure(memdir, distill={"command": f"{sys.executable} {script}"})
    done = memdir_cli("--dir", str(memdir.root), "index", now=NOW_TEXT)
    assert done.code == 0, done
    fed = heard.read_text()
    assert BY_NAME["durable"].token in fed  # the command ran and read what it may
    for record in RECORDS:
        if record.kind == "memories" and record.exposure in ("private", "sealed"):
            assert record.token not in fed, record.name
    distilled = memdir_cli("--dir", str(memdir.root), "distill", "--json", now=NOW_TEXT)
    assert distilled.code == 0 and BY_NAME["durable"].token in distilled.out, distilled
