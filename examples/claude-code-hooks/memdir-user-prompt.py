#!/usr/bin/env python3
"""Per-prompt hook for Claude Code (UserPromptSubmit), Codex (UserPromptSubmit) and Cursor
(beforeSubmitPrompt): journal what the user typed, and put the memories that matter for it in
front of the model.

It runs one command, with the prompt on stdin:

    memdir context --journal SESSION --budget N -

which stores the prompt in memdir's raw journal as the user's turn (the *trusted path*: the
words come from the client, not from the model, so an MCP `teach` or `confirm` may later quote
them) and prints the context block — hard facts, relevant memories and unconfirmed inferences,
each with its id and provenance — or nothing when recall finds nothing relevant. With
`memdir serve` running for $MEMDIR, the hook sends that command line straight to the service's
socket (the protocol of docs/MCP.md, so no second interpreter starts); on any trouble there it
runs `memdir` itself, which asks the service or recalls in-process.

Claude Code and Codex add the hook's stdout to the model's context, so the block is printed
as is. Cursor's beforeSubmitPrompt cannot add context (it may only let the prompt through or
block it): with --client cursor the hook only journals the prompt and answers
{"continue": true}; the model recalls through memdir's MCP tools there.

The recipes run it as `python3 -S`: it needs only the standard library, and skipping
site-packages (and the .pth files of whatever is installed there) saves 10-30 ms per prompt.

The hook never blocks a prompt: on any failure it says why on stderr, prints nothing else,
and exits 0 (Cursor: {"continue": true}). It pins the clock ($MEMDIR_NOW, unless set) for the
service and for the `memdir` it may run after giving up on it, so a prompt the service was
still handling is journalled and recorded once (the same time makes the same content ids).

It runs memdir with MEMDIR_ACTOR=user: Claude Code marks the shells it starts (CLAUDECODE=1,
and the recipe's settings.json sets MEMDIR_ACTOR=assistant for the model's own commands), and
memdir takes a command run there as the assistant's — which may not record user turns. Inside
the harness MEMDIR_ACTOR=user only says "a prompt hook relays this" (the model could say it
too), so the hook also passes Claude Code's `transcript_path` as `--transcript`: memdir
trusts the turn only when Claude Code's own transcript holds it among the user's last messages,
and records it otherwise as unverified — kept, never quoted by the teaching guard
(memdir/harness.py, docs/MCP.md "Who is asking").

Which memdir: $MEMDIR (set it in the hook's command or your environment), else the one that
`memdir` finds from the project directory. $MEMDIR_BIN overrides the `memdir` executable,
$MEMDIR_CONTEXT_BUDGET the token budget (default 400), $MEMDIR_HOOK_TIMEOUT the seconds the
hook waits (default 8).
"""

import json
import os
import socket
import sys
import time


def utc_now() -> str:
    """The current time in ISO 8601 with microseconds (time, not datetime: a few ms less to
    import, on every prompt)."""
    seconds = time.time()
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))
    return f"{stamp}.{int(seconds % 1 * 1_000_000):06d}+00:00"


def client() -> str:
    args = sys.argv[1:]
    if len(args) == 2 and args[0] == "--client" and args[1] in ("claude", "codex", "cursor"):
        return args[1]
    return "claude"


def ask_service(args: list, prompt: str) -> "str | None":
    """The command's stdout from the service of $MEMDIR ('' when it failed there), or None when
    no service answered (none, a refusal, too slow): then `memdir` runs it."""
    root = os.environ.get("MEMDIR")
    if not root or os.environ.get("MEMDIR_NO_SERVICE"):
        return None
    root = os.path.realpath(os.path.expanduser(root))
    path = os.path.join(root, ".memdir", "serve.sock")
    if len(os.fsencode(path)) > 107 or not os.path.exists(path):
        return None  # (a long path: `memdir` knows how to reach it)
    request = {"v": 1, "root": root, "command": args[0], "args": args[1:], "stdin": prompt,
               "now": os.environ["MEMDIR_NOW"], "actor": "user"}  # fmt: skip
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(float(os.environ.get("MEMDIR_HOOK_TIMEOUT", "8")))
            sock.connect(path)
            sock.sendall(json.dumps(request).encode("utf-8") + b"\n")
            data = b""
            while chunk := sock.recv(65536):
                data += chunk
        answer = json.loads(data)
    except (OSError, ValueError):
        return None
    if (
        not isinstance(answer, dict)
        or "error" in answer
        or not isinstance(answer.get("status"), int)
    ):
        return None
    if answer["status"] != 0:  # it ran and failed: say why, do not run it twice
        sys.stderr.write(str(answer.get("stderr") or ""))
        return ""
    return str(answer.get("stdout", ""))


def run(event: dict, kind: str) -> str:
    """The text for stdout ('' for nothing); problems go to stderr."""
    prompt = event.get("prompt") or ""
    session = event.get("session_id") or event.get("conversation_id") or kind
    if not isinstance(prompt, str) or not prompt.strip():
        return ""
    memdir = os.environ.get("MEMDIR_BIN", "memdir")
    transcript = event.get("transcript_path")
    # the harness's own record of the prompt: memdir trusts the turn only if it is there
    vouch = ["--transcript", transcript] if isinstance(transcript, str) and transcript else []
    if kind == "cursor":
        command = [
            memdir,
            "journal",
            "add",
            "--role",
            "user",
            "--session",
            str(session),
            *vouch,
            "-",
        ]
    else:
        budget = os.environ.get("MEMDIR_CONTEXT_BUDGET", "400")
        command = [memdir, "context", "--journal", str(session), "--budget", budget, *vouch, "-"]
        served = ask_service(command[1:], prompt)
        if served is not None:
            return served
    import subprocess  # only here: the served path does without it (~5 ms to import)

    try:
        done = subprocess.run(command, input=prompt.encode("utf-8"), capture_output=True,
                              timeout=float(os.environ.get("MEMDIR_HOOK_TIMEOUT", "8")),
                              check=False, env={**os.environ, "MEMDIR_ACTOR": "user"})  # fmt: skip
    except (OSError, ValueError, subprocess.TimeoutExpired) as error:
        print(f"memdir hook: could not run memdir ({error})", file=sys.stderr)
        return ""
    if done.returncode != 0:
        sys.stderr.write(done.stderr.decode("utf-8", "replace"))
        return ""
    return "" if kind == "cursor" else done.stdout.decode("utf-8", "replace")


def main() -> int:
    kind = client()
    os.environ["MEMDIR_NOW"] = os.environ.get("MEMDIR_NOW") or utc_now()
    try:
        event = json.load(sys.stdin)
        if not isinstance(event, dict):
            raise ValueError("not a JSON object")
        text = run(event, kind)
    except (ValueError, AttributeError) as error:
        print(f"memdir hook: unreadable hook input ({error})", file=sys.stderr)
        text = ""
    if kind == "cursor":
        text = json.dumps({"continue": True}) + "\n"
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
