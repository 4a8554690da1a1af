"""Islands (named groups of memories) through the CLI's commands (in this process): the island
commands, recall scoped to an island, forget, the actor, the policy and a git merge."""

from __future__ import annotations

import json
from pathlib import Path

from clones import conflicts, hub_and_clones
from conftest import clean_env, memdir_main

from memdir.archive_format.memdir import Memdir


def runner(root: Path):
    minutes = iter(range(60))

    def ok(*args: str, code: int = 0, **env: str) -> str:
        # a minute apart: the islands' fold orders changes by time
        done = memdir_main("--dir", str(root), *args, now=f"2026-05-01T09:{next(minutes):02d}:00Z",
                          env=clean_env(**env))  # fmt: skip
        assert done.code == code, done
        assert "Traceback" not in done.err, done
        return done.out if code == 0 else done.err

    return ok


def teach(ok, *texts: str, **options: str) -> list[str]:
    extra = [part for name, value in options.items() for part in (f"--{name}", value)]
    return [ok("teach", text, *extra).strip() for text in texts]


def test_island_commands_and_their_json(hashed: Memdir) -> None:
    ok = runner(hashed.root)
    alps, lisbon, dentist = teach(ok, "we hiked in the alps with Ana", "the coffee in Lisbon "
                                  "was strong", "my dentist is Dr Lee")  # fmt: skip
    made = json.loads(ok("island", "create", "trips", "--about", "journeys", "--json"))
    assert made == {"name": "trips", "about": "journeys", "by": "user"}
    added = json.loads(ok("island", "add", "trips", alps, lisbon[:8], "--json"))
    assert added == {"name": "trips", "added": [alps, lisbon]}
    assert json.loads(ok("island", "list", "--json"))["islands"] == [
        {"name": "trips", "about": "journeys", "created": "2026-05-01T09:03:00Z", "by": "user",
         "members": 2}]  # fmt: skip
    shown = json.loads(ok("island", "show", "trips", "--json"))
    # members in the order they were added (one line: by id)
    assert [m["id"] for m in shown["members"]] == sorted([alps, lisbon])
    assert shown["members"][0]["added"] == {"at": "2026-05-01T09:04:00Z", "by": "user"}
    assert "the coffee in Lisbon" in ok("island", "show", "trips")
    ok("island", "remove", "trips", lisbon)
    assert [m["id"] for m in json.loads(ok("island", "show", "trips", "--json"))["members"]] == [alps]  # fmt: skip
    # bad input: one line, a hint, a typed exit code
    assert "no island named 'nope'" in ok("island", "add", "nope", alps, code=4)
    assert "already exists" in ok("island", "create", "trips", code=8)
    assert "not in the island" in ok("island", "remove", "trips", dentist, code=4)
    assert "no memory with id" in ok("island", "add", "trips", "m-ffffffffffffffff", code=4)
    assert "1–64 characters" in ok("island", "create", "x" * 65, code=8)
    ok("island", "delete", "trips")
    assert json.loads(ok("island", "list", "--json"))["islands"] == []
    assert "problem" not in ok("verify")


def test_a_forgotten_memory_leaves_every_island(hashed: Memdir) -> None:
    ok = runner(hashed.root)
    kept, gone = teach(ok, "the cabin by the lake", "the motel on route 66")
    for name in ("trips", "summers"):
        ok("island", "create", name)
        ok("island", "add", name, kept, gone)
    ok("forget", gone)
    for name in ("trips", "summers"):
        members = json.loads(ok("island", "show", name, "--json"))["members"]
        assert [m["id"] for m in members] == [kept]
        assert "route 66" not in ok("island", "show", name)
    assert [i["members"] for i in json.loads(ok("island", "list", "--json"))["islands"]] == [1, 1]
    assert "no memory with id" in ok("island", "add", "trips", gone, code=4)


def test_recall_island_returns_only_its_members(hashed: Memdir) -> None:
    ok = runner(hashed.root)
    ins = teach(ok, "the quokka on Rottnest island", "a quokka photo from the ferry")
    outs = teach(ok, "the quokka plush on the shelf", "quokka facts from the zoo talk")
    ok("island", "create", "rottnest")
    ok("island", "add", "rottnest", *ins)
    found = json.loads(ok("recall", "quokka", "--no-record", "--json", "--island", "rottnest"))
    assert sorted(r["id"] for r in found["results"]) == sorted(ins)
    everything = json.loads(ok("recall", "quokka", "--no-record", "--json"))
    assert set(outs) <= {r["id"] for r in everything["results"]}
    explained = ok("recall", "quokka", "--no-record", "--explain", "--island", "rottnest")
    assert "not in the island 'rottnest'" in explained
    assert "no island named" in ok("recall", "quokka", "--island", "nope", code=4)


def test_an_island_an_assistant_makes_is_the_assistants(hashed: Memdir) -> None:
    root = str(hashed.root)
    (memory,) = teach(runner(hashed.root), "the blue notebook")

    def as_assistant(*args: str) -> str:
        # an assistant writes at the real time: no MEMDIR_NOW
        done = memdir_main("--dir", root, *args, now=None, env=clean_env(MEMDIR_ACTOR="assistant"))
        assert done.code == 0, done
        return done.out

    as_assistant("island", "create", "notebooks")
    as_assistant("island", "add", "notebooks", memory)
    (island,) = json.loads(as_assistant("island", "list", "--json"))["islands"]
    assert island["by"] == "assistant"
    shown = json.loads(as_assistant("island", "show", "notebooks", "--json"))
    assert shown["members"][0]["added"]["by"] == "assistant"
    path = hashed.root / "state" / "islands.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert {line["by"] for line in lines} == {"assistant"}


def test_island_show_masks_private_and_sealed_members(hashed: Memdir) -> None:
    ok = runner(hashed.root)
    (plain,) = teach(ok, "the quokka plain note")
    (private,) = teach(ok, "the quokka qkprivateword note", visibility="private")
    (sealed,) = teach(ok, "the quokka qksealedword note", visibility="sealed")
    ok("island", "create", "all")
    ok("island", "add", "all", plain, private, sealed)
    for output in (ok("island", "show", "all"), ok("island", "show", "all", "--json")):
        assert "quokka plain note" in output
        assert "qkprivateword" not in output and "qksealedword" not in output
        assert private in output and sealed in output  # masked, not hidden
        assert "[private]" in output and "[sealed]" in output


def test_islands_survive_a_git_merge_of_two_clones(tmp_path: Path) -> None:
    a, b = hub_and_clones(tmp_path)
    ok_a, ok_b = runner(a), runner(b)
    ok_a("island", "create", "trips", "--about", "journeys")
    ok_a("sync")
    ok_b("sync")
    (from_a,) = teach(ok_a, "the train to Porto")
    (from_b,) = teach(ok_b, "the ferry to Naxos")
    ok_a("island", "add", "trips", from_a)
    ok_b("island", "add", "trips", from_b)
    for ok, clone in ((ok_a, a), (ok_b, b), (ok_a, a)):
        ok("sync")
        assert conflicts(clone) == []
    for ok in (ok_a, ok_b):
        members = json.loads(ok("island", "show", "trips", "--json"))["members"]
        assert sorted(m["id"] for m in members) == sorted([from_a, from_b])
        assert "problem" not in ok("verify")


def test_wake_island_keeps_only_its_members_in_the_memory_sections(hashed: Memdir) -> None:
    ok = runner(hashed.root)
    inside, outside = teach(ok, "the rent is paid on the first", "the gym closes at nine",
                            key="x")  # fmt: skip
    (other,) = teach(ok, "the bakery opens at seven", key="bakery")
    ok("island", "create", "home")
    ok("island", "add", "home", inside, outside)
    everything = ok("wake", "--budget", "4000")
    assert "bakery" in everything and "gym closes" in everything
    scoped = ok("wake", "--budget", "4000", "--island", "home")
    assert "bakery" not in scoped and other not in scoped
    assert "gym closes" in scoped  # the current memory of key x, a member
    assert "rent is paid" not in scoped  # superseded in the whole archive, so not current
    assert "no island named" in ok("wake", "--island", "nope", code=4)


def test_the_mcp_recall_and_wake_take_an_island(hashed: Memdir) -> None:
    import anyio
    from conftest import MEMDIR_BIN
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    ok = runner(hashed.root)
    ins = teach(ok, "the quokka on Rottnest island", "a quokka photo from the ferry")
    (out,) = teach(ok, "the quokka plush on the shelf")
    ok("island", "create", "rottnest")
    ok("island", "add", "rottnest", *ins)
    params = StdioServerParameters(command=str(MEMDIR_BIN), args=["--dir", str(hashed.root), "mcp"],
                                   env=clean_env(MEMDIR_NOW="2026-05-01T10:00:00Z"))  # fmt: skip

    async def scenario() -> tuple[dict, dict, dict, str]:
        async with Client(params, read_timeout_seconds=60) as client:
            scoped = await client.call_tool("recall", {"query": "quokka", "island": "rottnest",
                                                       "record": False})  # fmt: skip
            everything = await client.call_tool("recall", {"query": "quokka", "record": False})
            woken = await client.call_tool("wake", {"island": "rottnest", "budget": 4000})
            missing = await client.call_tool("recall", {"query": "quokka", "island": "nope"})
            assert missing.is_error
            return (scoped.structured_content or {}, everything.structured_content or {},
                    woken.structured_content or {}, missing.content[0].text)  # fmt: skip

    scoped, everything, woken, missing = anyio.run(scenario)
    assert sorted(r["id"] for r in scoped["results"]) == sorted(ins)
    assert out in {r["id"] for r in everything["results"]}
    assert "Rottnest" in woken["markdown"]  # a member, among the recent teachings
    assert out not in woken["markdown"] and "plush" not in woken["markdown"]
    assert "no island named" in missing
