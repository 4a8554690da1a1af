"""Generated text files (documents/boot.md, documents/wake.md, journal entries).

A reader (a person with `cat`, an assistant reading its boot document) must never see half a
file, so every document is written with `atomic.write_text`.
"""

from __future__ import annotations


def estimate_tokens(text: str) -> int:
    """A rough token count (≈ 4 characters a token): enough to keep recall results and the wake
    document inside a prompt budget."""
    return max(1, (len(text) + 3) // 4)
