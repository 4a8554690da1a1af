"""Text helpers the indexers and the library share: how text splits into words, which words
are too common to mean anything, which words negate.

The lists differ on purpose, each tuned for the one use it names (recall's results, the quote
guard's verdicts and sleep's supersedes depend on them as they are): they stand here together
so that a reader sees every one, and a change to one is a change to that use alone.
"""

from __future__ import annotations

import re
import unicodedata

# words -----------------------------------------------------------------------------------------
# A run of letters, digits and underscores: the terms of full-text search (PostgreSQL's and the
# in-memory index), the hashing embedder's unigrams, and the journal search's words.
WORD = re.compile(r"\w+")
# A word as quotes are compared word for word: a contraction or possessive ("don't", "user's")
# stays one word (the quote guard, provenance's checks of a quote against its turn).
QUOTE_WORD = re.compile(r"\w+(?:'\w+)*")
_QUOTES = str.maketrans({"’": "'", "‘": "'", "ʼ": "'", "“": '"', "”": '"'})


def fold(text: str) -> str:
    """`text` as quotes are compared: NFKC-normalised, typographic quotes made plain,
    case-folded."""
    return unicodedata.normalize("NFKC", text).translate(_QUOTES).casefold()


# stop words ------------------------------------------------------------------------------------
# Words of conversation too common to say what a turn or memory is about: dream's content words
# (which turns group together), the quote guard's content words.
CONVERSATION_STOP_WORDS = frozenset(
    """a about above after again against all also am an and any are as at be because been
    before being below between both but by can could did do does doing done down during each
    even ever every few for from further get got had has have having he her here hers him his
    how i if in into is it its itself just know let like made make many may me might more most
    much must my no nor not now of off oh ok okay on once one only or other our ours out over
    own really right said same say see she should so some still such sure than thank thanks
    that the their them then there these they thing things think this those though through to
    too under until up us very want was way we well were what when where which while who whom
    why will with would yeah yes yet you your yours going gonna today tomorrow yesterday""".split()
)
# Words a recall query holds without asking for them: left out of its full-text terms (the
# query's analysis, indexers/recall/query.py), and never taken for a name.
QUERY_STOP_WORDS = frozenset(
    """a about above after again against all am an and any are aren't as at be because been
    before being below between both but by can can't cannot could couldn't did didn't do does
    doesn't doing don't down during each few for from further had hadn't has hasn't have haven't
    having he he'd he'll he's her here here's hers herself him himself his how how's i i'd i'll
    i'm i've if in into is isn't it it's its itself let's me more most mustn't my myself no nor
    not of off on once only or other ought our ours ourselves out over own same shan't she she'd
    she'll she's should shouldn't so some such than that that's the their theirs them themselves
    then there there's these they they'd they'll they're they've this those through to too under
    until up very was wasn't we we'd we'll we're we've were weren't what what's when when's where
    where's which while who who's whom why why's will with won't would wouldn't you you'd you'll
    you're you've your yours yourself yourselves ever also""".split()
)
# Words `memdir journal search` does not match on (they are in nearly every turn).
JOURNAL_SEARCH_STOP_WORDS = frozenset(
    """a an and are at be did do for i in is it me my of on or the to was what when where who
    with you""".split()
)

# negation --------------------------------------------------------------------------------------
# Words that turn a quote's meaning: the quote guard counts them (with its negating phrases);
# provenance requires a quote to keep each one its turn has around the quoted words.
QUOTE_NEGATORS = frozenset(
    """not no never none nobody nothing neither nor without cannot hardly barely formerly
    stopped quit n't don't doesn't didn't isn't aren't wasn't weren't won't
    wouldn't can't couldn't shouldn't haven't hasn't hadn't mustn't ain't dont doesnt didnt
    isnt arent wasnt werent wont wouldnt cant couldnt shouldnt havent hasnt hadnt""".split()
)
# Words after which affect reads the next words' valence inverted (indexers/affect.py, with
# its NEGATION_SCOPE); a word ending in "n't" negates too.
AFFECT_NEGATORS = frozenset(
    """not no never nor neither nothing nobody none nowhere without cannot cant dont doesnt
    didnt isnt arent wasnt werent wont wouldnt couldnt shouldnt havent hasnt hadnt
    aint""".split()
)
# A negation in a memory's text: when one of two alike memories holds one and the other not,
# the newer does not restate the older (sleep's automatic supersede, indexers/distill.py).
RESTATEMENT_NEGATION = re.compile(
    r"\b(not|no|never|none|nothing|no longer|any ?more|stopped|quit|cannot|can't|don't|"
    r"doesn't|didn't|isn't|wasn't|aren't|won't|dont|doesnt|didnt|isnt|wasnt|wont)\b",
    re.IGNORECASE,
)
