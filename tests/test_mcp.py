"""`memdir mcp` end to end: the SDK's own stdio client spawns the server, lists and calls
tools, and the test checks the files the calls wrote. The clock is real (no MEMDIR_NOW), as
for a user: the teaching guard compares turn and memory times."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import anyio
from conftest import MEMDIR_BIN, clean_env, shelf_lines

from memdir.archive_format import clock, lifecycle, people
from memdir.archive_format.memdir import Memdir

EXPECTED = {
    "teach", "infer", "confirm", "reject", "forget", "link", "recall", "search", "show",
    "stats", "journal_add", "journal_read", "ring", "wake", "boot", "self_read",
    "self_update", "people_read", "person_update", "core", "room", "song_list", "island_list",
    "island_show", "attachments",
}  # fmt: skip
READ_ONLY = {"search", "show", "attachments", "stats", "journal_read", "ring", "wake", "boot",
             "self_read", "people_read", "core", "room", "song_list", "island_list",
             "island_show"}  # fmt: skip
DESTRUCTIVE = {"reject", "forget", "self_update", "person_update"}


def user_says(memdir: Memdir, text: str, *extra: str) -> str:
    """The trusted path: what a client's UserPromptSubmit hook runs."""
    done = subprocess.run(
        [str(MEMDIR_BIN), "--dir", str(memdir.root), "journal", "add", "--role", "user",
         "--session", "chat-1", *extra, text],
        env=clean_env(), capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def turns(memdir: Memdir) -> list[dict[str, Any]]:
    path = memdir.journal_dir / "turns.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


class Session:
    """Tool calls returning the structured result (or the error text)."""

    def __init__(self, client: Any) -> None:
        self.client = client

    async def __call__(self, tool: str, /, **arguments: Any) -> dict[str, Any]:
        result = await self.client.call_tool(tool, arguments)
        if result.is_error:
            return {"error": result.content[0].text}
        assert result.structured_content is not None, result
        return dict(result.structured_content)


def test_mcp_round_trip_over_stdio(hashed: Memdir, tmp_path: Path) -> None:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    params = StdioServerParameters(
        command=str(MEMDIR_BIN), args=["--dir", str(hashed.root), "mcp"], cwd=str(tmp_path)
    )
    user_says(hashed, "Note this: I take my coffee black, no sugar.")
    user_says(hashed, "My old flat was in Antwerp", "--now", "2020-01-01T00:00:00Z")
    scoped = lifecycle.teach(hashed, "The deploy key rotates every Friday", clock.now(),
                             personas=("work",)).id  # fmt: skip

    async def scenario() -> dict[str, Any]:
        seen: dict[str, Any] = {}
        async with Client(params, read_timeout_seconds=60) as client:
            call = Session(client)
            listed = (await client.list_tools()).tools
            seen["tools"] = {tool.name: tool for tool in listed}

            seen["invented"] = await call("teach", text="The user told me they love jazz")
            seen["quoted"] = await call("teach", text="I take my coffee black",
                                        type="FACT:preference", key="coffee")  # fmt: skip
            seen["stale"] = await call("teach", text="My old flat was in Antwerp")
            seen["user_turn"] = await call("journal_add", role="user", session="chat-1",
                                           text="I take my tea green")  # fmt: skip
            noted = {"session": "chat-1", "text": "Noted: coffee black."}
            seen["assistant_turn"] = await call("journal_add", role="assistant", **noted)
            seen["teach_after_mcp_user_turn"] = await call("teach", text="I take my tea green")

            guess = await call("infer", text="The user prefers morning meetings", ttl="3d")
            seen["guess"] = guess
            seen["confirm_unbacked"] = await call("confirm", memory_id=guess["id"],
                                                  quote="yes, mornings are best")  # fmt: skip
            await anyio.sleep(1.1)  # the user's answer comes after the inference
            # (about *this* memory: two of its words, not one — issue 32)
            await anyio.to_thread.run_sync(user_says, hashed,
                                           "Yes, morning meetings are best for me")  # fmt: skip
            seen["confirm_backed"] = await call("confirm", memory_id=guess["id"],
                                                quote="yes, morning meetings are best")  # fmt: skip

            seen["recall"] = await call("recall", query="how does the user take coffee?", k=3)
            seen["search"] = await call("search", query="coffee")
            seen["show"] = await call("show", memory_id=seen["quoted"]["id"][:8])
            seen["link"] = await call("link", memory_id=guess["id"],
                                      to=seen["quoted"]["id"], link_type="related")  # fmt: skip
            seen["forget_unbacked"] = await call("forget", memory_id=seen["quoted"]["id"],
                                                 quote="forget about my coffee")  # fmt: skip
            seen["withdraw"] = await call("reject", memory_id=seen["invented"]["id"],
                                          reason="I made that up")  # fmt: skip
            seen["ring"] = await call("ring")
            seen["stats"] = await call("stats")
            seen["journal"] = await call("journal_read", session="chat-1")
            seen["wake"] = await call("wake", budget=800)
            for persona in ("work", "home"):
                seen[f"recall_{persona}"] = await call("recall", query="when does the deploy key rotate?",
                                                       k=3, persona=persona)  # fmt: skip
                seen[f"wake_{persona}"] = await call("wake", budget=2000, persona=persona)
            seen["boot"] = await call("boot")
            seen["self"] = await call("self_update", values={"name": "Ada", "tone": "brief"})
            seen["person"] = await call("person_update", name="Sam",
                                        values={"relation": "brother"})  # fmt: skip
            seen["people"] = await call("people_read")
            seen["missing"] = await call("show", memory_id="m-ffffffffffff")
            seen["self_before"] = await call("self_read")
            seen["misspelt"] = await call("self_update", field="tone", value="chatty")
            seen["self_after"] = await call("self_read")
            seen["extra"] = await call("recall", query="coffee", budjet=10)
            seen["wrong_type"] = await call("wake", budget="lots")
        return seen

    seen = anyio.run(scenario)

    # the tool list: typed, described, annotated, and nothing that touches the shell or files
    tools = seen["tools"]
    assert set(tools) == EXPECTED
    for name, tool in tools.items():
        assert tool.description and tool.input_schema["type"] == "object", name
        assert tool.annotations.read_only_hint is (name in READ_ONLY), name
        assert tool.annotations.destructive_hint is (name in DESTRUCTIVE), name
        assert tool.annotations.open_world_hint is False
        assert not any(word in name for word in ("shell", "exec", "file", "run"))
    assert tools["journal_add"].input_schema["properties"]["role"]["enum"] == ["assistant", "tool"]

    lines = {line["id"]: line for line in shelf_lines(hashed) if "id" in line}
    # the teaching guard
    invented = lines[seen["invented"]["id"]]
    assert seen["invented"]["stored_as"] == "inference"
    assert (invented["source"], invented["author"]) == ("inference", "assistant")
    quoted = lines[seen["quoted"]["id"]]
    assert seen["quoted"]["stored_as"] == "teaching"
    assert (quoted["source"], quoted["author"], quoted["key"]) == ("teaching", "user", "coffee")
    assert quoted["session"] == "chat-1"  # the quoted turn's session
    assert "coffee black" in quoted["meta"]["evidence"]
    assert seen["stale"]["stored_as"] == "inference"  # the user said it, but years ago
    # rejected arguments: one line that names them, no validator report
    for name in ("user_turn", "misspelt", "extra", "wrong_type"):
        error = seen[name]["error"]
        assert "\n" not in error and "validation error" not in error, (name, error)
        assert "pydantic" not in error and "type=" not in error, (name, error)
    assert seen["user_turn"]["error"].startswith("journal_add: invalid argument role: expected")
    assert seen["misspelt"]["error"] == (
        "self_update: unknown argument 'field', 'value'; it takes remove, values"
    )
    assert seen["self_after"] == seen["self_before"]  # nothing changed
    assert "unknown argument 'budjet'" in seen["extra"]["error"]
    assert seen["wrong_type"]["error"].startswith("wake: invalid argument budget:")
    assert seen["teach_after_mcp_user_turn"]["stored_as"] == "inference"
    # confirm needs the user's later words
    assert seen["confirm_unbacked"]["done"] is False
    assert seen["confirm_unbacked"]["status"] == "provisional"
    assert "Ask the user" in seen["confirm_unbacked"]["message"]
    assert seen["confirm_backed"]["done"] is True and seen["confirm_backed"]["status"] == "durable"
    [confirm] = [line for line in lines.values() if line.get("op") == "confirm"]
    assert confirm["actor"] == "user" and "morning meetings are best" in confirm["evidence"]
    # the journal: MCP wrote only the assistant turn, on channel "mcp"
    recorded = turns(hashed)
    assert [(t["role"], t["channel"]) for t in recorded] == [
        ("user", "cli"), ("user", "cli"), ("assistant", "mcp"), ("user", "cli"),
    ]  # fmt: skip
    # reading tools
    assert seen["recall"]["results"][0]["id"] == quoted["id"]
    assert seen["recall"]["verdict"] in ("GROUNDED", "LOW_CONFIDENCE")
    assert quoted["id"] in {hit["id"] for hit in seen["search"]["results"]}
    assert seen["show"]["status"] == "durable"
    assert seen["link"]["to"] == quoted["id"]
    assert seen["forget_unbacked"]["done"] is False and quoted["id"] in lines
    assert seen["withdraw"]["status"] == "rejected"
    assert seen["ring"]["slots"] and seen["stats"]["journal_turns"] == 4
    assert [t["trusted"] for t in seen["journal"]["turns"]] == [True, True, True, True]
    assert "Review queue" in seen["wake"]["markdown"] and seen["wake"]["tokens"] <= 800
    assert seen["boot"]["markdown"].startswith("#")
    # personas: recall and wake leave out memories scoped to another persona
    assert scoped in [row["id"] for row in seen["recall_work"]["results"]]
    assert scoped not in [row["id"] for row in seen["recall_home"]["results"]]
    assert "rotates every Friday" in seen["wake_work"]["markdown"]
    assert "rotates every Friday" not in seen["wake_home"]["markdown"]
    assert scoped not in seen["wake_home"]["markdown"]
    assert "no memory with id" in seen["missing"]["error"]
    # self and people state files, marked as the assistant's notes
    everyone = people.read_people(hashed)
    assert everyone["Sam"]["relation"]["value"] == "brother"
    assert everyone["Sam"]["relation"]["by"] == "assistant"
    assert people.read_self(hashed)["name"]["value"] == "Ada"
    assert (hashed.state_dir / "notes.jsonl").is_file()  # lines, union-merged like the shelves
    # the files are still a valid memdir
    done = subprocess.run([str(MEMDIR_BIN), "--dir", str(hashed.root), "verify"],
                          env=clean_env(), capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr


def test_help_and_writes_do_not_import_mcp(md: Memdir) -> None:
    from test_cold_start import imported_modules

    for args in (("--help",), ("teach", "no mcp here"), ("journal", "add", "--role", "user",
                                                         "--session", "s", "hello")):  # fmt: skip
        code, modules = imported_modules("--dir", str(md.root), *args, cwd=md.root)
        assert code == 0, args
        assert not [name for name in modules if name.split(".")[0] in ("mcp", "mcp_types")]


def test_the_claude_code_prompt_hook_records_a_trusted_user_turn(md: Memdir) -> None:
    hook = Path(__file__).parents[1] / "examples" / "claude-code-hooks" / "memdir-user-prompt.py"
    event = {"session_id": "abc-123", "hook_event_name": "UserPromptSubmit",
             "prompt": "I take my coffee black", "cwd": str(md.root)}  # fmt: skip
    env = clean_env(MEMDIR=str(md.root), MEMDIR_BIN=str(MEMDIR_BIN))
    done = subprocess.run(["python3", str(hook)], input=json.dumps(event), env=env,
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert (done.returncode, done.stdout) == (0, "")  # stdout would go into the model's context
    [turn] = turns(md)
    assert (turn["role"], turn["session"], turn["channel"]) == ("user", "abc-123", "cli")
    assert turn["text"] == "I take my coffee black"
    broken = subprocess.run(["python3", str(hook)], input="not json", env=env,
                            capture_output=True, text=True, timeout=60)  # fmt: skip
    assert (broken.returncode, broken.stdout) == (0, "") and "unreadable" in broken.stderr
