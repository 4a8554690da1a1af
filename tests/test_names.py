"""The names people are addressed by in their conversations (indexers/names.py)."""

from __future__ import annotations

from memdir.indexers.names import addressed_names, aliases


def test_addressed_names_after_a_greeting_or_closing_a_sentence() -> None:
    assert addressed_names("elise: Hey Kate!", "chat:elise") == ["Kate!"]
    assert addressed_names("Thanks, Kate. See you soon", "chat:elise") == ["Kate!"]
    assert addressed_names("That sounds lovely, Kate!", "chat:elise") == ["Kate"]
    assert addressed_names("Good morning Emily how are you?", "chat:Emi") == ["Emily!"]
    # neither a greeting nor a closing vocative; common words are not names
    assert addressed_names("Kate said hi to me", "chat:elise") == []
    assert addressed_names("Hey guys! Thanks, man.", "chat:elise") == []
    assert addressed_names("Wow, That is great", "chat:elise") == []


def test_a_place_closing_sentences_is_no_alias() -> None:
    """'Houston, Texas.' closes a sentence after a comma like a vocative, but nobody greets
    Texas: an alias needs a greeting at least once, and enough uses for the one addressee."""
    authors = [("s", "chat:Ann"), ("s", "chat:Bo")]
    texas = [("s", "chat:Ann", addressed_names("I live in Houston, Texas.", "chat:Ann"))] * 5
    assert aliases(texas, authors) == {}
    kate = [("s", "chat:Ann", ["Kate!"]), ("s", "chat:Ann", ["Kate"]), ("s", "chat:Ann", ["Kate"])]
    assert aliases(kate, authors) == {"kate": "Bo"}
    assert aliases(kate[:2], authors) == {}  # fewer than MIN_ADDRESSED
    # said to someone else as often: not this one's name
    others = [("t", "chat:Ann", ["Kate!"])] * 3
    assert aliases(kate + others, authors + [("t", "chat:Ann"), ("t", "chat:Cy")]) == {}


def test_a_handle_is_no_alias_of_someone_else() -> None:
    authors = [("s", "chat:Ann"), ("s", "chat:Bo"), ("t", "chat:Cy"), ("t", "chat:Bo")]
    rows = [("s", "chat:Ann", ["Cy!"])] * 3
    assert aliases(rows, authors) == {}
