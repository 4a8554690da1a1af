#!/usr/bin/env python3
"""Claude Code UserPromptSubmit hook: record what the user typed in memdir's raw journal.

This is memdir's *trusted path* for user turns: the words come from Claude Code itself, not
from the model, so an MCP `teach` or `confirm` may later quote them. The hook reads the hook
input (JSON on stdin: session_id, prompt, ...) and runs

    memdir journal add --role user --session SESSION_ID -

with the prompt on stdin. It prints nothing on stdout (Claude Code would add that to the
model's context) and never blocks the prompt: on any failure it says why on stderr and exits 0.

It runs memdir with MEMDIR_ACTOR=user: Claude Code marks the shells it starts (CLAUDECODE=1,
and the recipe's settings.json sets MEMDIR_ACTOR=assistant for the model's own commands), and
memdir takes a command run there as the assistant's — which may not record user turns. These
words are the user's, handed over by Claude Code, so the hook says so.

Which memdir: $MEMDIR (set it in the hook's command or your environment), else the one that
`memdir` finds from the project directory. $MEMDIR_BIN overrides the `memdir` executable.
"""

import json
import os
import subprocess
import sys


def main() -> int:
    try:
        event = json.load(sys.stdin)
        prompt = event.get("prompt") or ""
        session = event.get("session_id") or "claude-code"
    except (ValueError, AttributeError) as error:
        print(f"memdir hook: unreadable hook input ({error})", file=sys.stderr)
        return 0
    if not prompt.strip():
        return 0
    command = [os.environ.get("MEMDIR_BIN", "memdir"), "journal", "add",
               "--role", "user", "--session", session, "-"]  # fmt: skip
    try:
        done = subprocess.run(command, input=prompt.encode("utf-8"), stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, timeout=10, check=False,
                              env={**os.environ, "MEMDIR_ACTOR": "user"})  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as error:
        print(f"memdir hook: could not run memdir ({error})", file=sys.stderr)
        return 0
    if done.returncode != 0:
        sys.stderr.write(done.stderr.decode("utf-8", "replace"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
