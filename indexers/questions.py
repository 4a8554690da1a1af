"""How much of a memory asks rather than tells: the share of its words in questions.

A question holds little of what it asks about: "What are your hobbies?" shares every word with
the query "What are Paola's hobbies?" and answers none of it. Recall therefore lowers the text
relevance of memories that are mostly questions (docs/RECALL.md §2, the `questions` weight).
The share is computed once per memory, at ingest, into the memory table (memorytable.py).
"""

from __future__ import annotations

import re

# at least this share of a memory's words in questions makes it "mostly questions"
MOSTLY = 0.5
_SENTENCE_BREAK = re.compile(r"(?<=[.!?…？！])\s+|\n+")
_QUESTION_MARKS = "?？"


def question_share(text: str) -> float:
    """The share of the text's words (whitespace-separated) in sentences that end with a
    question mark; 0 for a text without words. A "sentence" without a letter or digit (an emoji,
    a smiley) counts for neither side."""
    words = asked = 0
    for sentence in _SENTENCE_BREAK.split(text):
        if not any(char.isalnum() for char in sentence):
            continue
        count = len(sentence.split())
        words += count
        if _asks(sentence):
            asked += count
    return asked / words if words else 0.0


def _asks(sentence: str) -> bool:
    """Whether the sentence ends with a question mark, ignoring what follows its last letter or
    digit other than that ("really?!" and "you 😂?" ask)."""
    for char in reversed(sentence):
        if char in _QUESTION_MARKS:
            return True
        if char.isalnum():
            return False
    return False
