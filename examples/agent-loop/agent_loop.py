"""A plain Python agent loop with a long-term memory, through memdir's Python API.

No network and no LLM: `model` is a stub that echoes, so the loop runs anywhere (a test runs
it: tests/test_api.py). Swap in a real model call and nothing else changes.

Per turn the loop
1. journals the user's message verbatim, as the user: the loop got it from the user's own
   keyboard, so it is the user's path (`actor="user"`, like a client's prompt hook);
2. asks for the context block of what memdir remembers about it, for the prompt;
3. calls the model with the block and the message;
4. journals the reply, as the assistant;
5. teaches what the user said about themselves, as the assistant: memdir's teaching guard
   stores it as a teaching only because the text quotes the user's journaled words; anything
   the model made up would be stored as an unconfirmed inference instead.

Two handles, two actors: the model's side never holds the user's handle, so it cannot write
as the user. Run it:  python examples/agent-loop/agent_loop.py ~/memory  (then type; an empty line ends)
"""

from __future__ import annotations

import re
import sys
import uuid
from pathlib import Path

import memdir


def model(prompt: str) -> str:
    """A stand-in for an LLM: it echoes the first remembered line it was given, or the
    message."""
    remembered = [line for line in prompt.splitlines() if line.startswith("- ")]
    message = prompt.rsplit("User: ", 1)[-1]
    return f"(echo) {remembered[0][2:] if remembered else message}"


def statements_about_the_user(message: str) -> list[str]:
    """The sentences of the user's message worth remembering: first-person statements (not
    questions), word for word, so that the teaching guard finds them in the journal."""
    sentences = re.split(r"(?<=[.!?])\s+", message.strip())
    return [
        sentence.rstrip(".!").strip()
        for sentence in sentences
        if re.match(r"(?:I|My|I'm)\b", sentence) and not sentence.endswith("?")
    ]


def run(home: Path, messages: list[str], session: str | None = None) -> list[str]:
    """Run the loop over `messages` (what the user types), with the memdir at `home`."""
    session = session or f"chat-{uuid.uuid4().hex[:8]}"
    users_path = memdir.open(home, actor="user")  # only ever records what the user typed
    assistant = memdir.open(home, actor="assistant")  # everything the model's side does
    replies = []
    for message in messages:
        users_path.journal_add(message, role="user", session=session)
        block = assistant.context(message).markdown()
        reply = model(f"{block}\nUser: {message}")
        assistant.journal_add(reply, role="assistant", session=session)
        for statement in statements_about_the_user(message):
            assistant.teach(statement, session=session)  # a teaching only if quoted
        replies.append(reply)
    return replies


def main() -> None:
    home = Path(sys.argv[1] if len(sys.argv) > 1 else "memory")
    if not home.joinpath("memdir.yaml").is_file():
        memdir.init(home, actor="user")
    session = f"chat-{uuid.uuid4().hex[:8]}"
    for message in iter(lambda: input("you> "), ""):
        print(run(home, [message], session)[0])


if __name__ == "__main__":
    main()
