"""The names people go by in their conversations: who is addressed as what.

People in a chat rarely use each other's account handles: "elise" is greeted as "Emily", the
handle "Emi" belongs to someone who signs as "Kate". In a session between exactly two authors,
a name one of them addresses the other by ("Hey Kate!", "Thanks, Kate.") is a name the other
goes by. Recall resolves such a name in a query to the speaker it means (recall/query.py).

A name becomes an alias only when it is addressed to the same person often enough
(`MIN_ADDRESSED` times, and at least `MIN_SHARE` of its uses), at least once right after a
greeting ("Houston, Texas." closes a sentence after a comma too, but nobody says "Hi Texas"), is
not another speaker's handle and is not a common word people address each other with ("guys",
"man", "dear").
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from .backends import speaker_of

MIN_ADDRESSED = 3
MIN_SHARE = 0.75

_NAME = r"([^\W\d_][^\W\d_'’-]*(?:-[^\W\d_]+)?)"
_GREETING = (
    r"hey|hi|hello|hiya|heya|yo|thanks|thank you|thx|ty|congrats|congratulations|"
    r"good morning|good night|good evening|morning|evening|night|bye|goodbye|see you|"
    r"sorry|welcome|dear|love you|miss you"
)
# a greeting, then the name: "Hey Kate", "Thanks, Kate!"; at the start of a sentence
_AFTER_GREETING = re.compile(
    rf"(?:^|[.!?…]\s+)(?:{_GREETING}),?\s+{_NAME}(?![\w'’])", re.IGNORECASE
)
# the name closing a sentence after a comma: "That sounds great, Kate!"
_CLOSING = re.compile(rf",\s*{_NAME}\s*(?:[.!?…]+|$)(?:\s|$)")
NOT_NAMES = frozenset(
    """all everyone everybody guys guy folks man dude bro buddy pal mate friend friends girl
    girls boy boys babe baby honey sweetie sweetheart love dear darling sir madam maam there
    again again lol haha so too though now then today tonight tomorrow yesterday you
    again much lot lots a i ok okay yes no oh wow well""".split()
)


def addressed_names(text: str, author: str) -> list[str]:
    """The names a memory's text addresses someone by (its author's `Name: ` prefix left out),
    capitalised words only; a name right after a greeting is marked with a trailing "!"."""
    speaker = speaker_of(author)
    if speaker and text.startswith(f"{speaker}:"):
        text = text[len(speaker) + 1 :]
    found: dict[str, bool] = {}
    for line in text.strip().splitlines():
        for pattern in (_AFTER_GREETING, _CLOSING):
            for match in pattern.finditer(line.strip()):
                name = match.group(1)
                if name[0].isupper() and name.lower() not in NOT_NAMES:
                    found[name] = found.get(name, False) or pattern is _AFTER_GREETING
    return [name + ("!" if greeted else "") for name, greeted in found.items()]


def aliases(
    rows: Iterable[tuple[str, str, list[str]]], authors: Iterable[tuple[str, str]]
) -> dict[str, str]:
    """{name as addressed, case-folded: the speaker it means} from each memory's (session,
    author, addressed names) and every (session, author) pair there is."""
    by_session: dict[str, set[str]] = {}
    for session, author in authors:
        by_session.setdefault(session, set()).add(author)
    speakers = {speaker_of(author) for people in by_session.values() for author in people}
    handles = {name.casefold() for name in speakers if name}
    counts: dict[tuple[str, str], int] = {}
    greeted: set[tuple[str, str]] = set()
    uses: dict[str, int] = {}
    for session, author, names in rows:
        others = by_session.get(session, set()) - {author}
        addressee = speaker_of(next(iter(others))) if len(others) == 1 else None
        for name in names:
            folded = name.rstrip("!").casefold()
            uses[folded] = uses.get(folded, 0) + 1
            if addressee and folded != addressee.casefold():
                counts[folded, addressee] = counts.get((folded, addressee), 0) + 1
                if name.endswith("!"):
                    greeted.add((folded, addressee))
    return {
        name: speaker
        for (name, speaker), count in sorted(counts.items())
        if count >= MIN_ADDRESSED and count >= MIN_SHARE * uses[name]
        and (name, speaker) in greeted and name not in handles
    }  # fmt: skip
