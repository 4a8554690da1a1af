"""What the user meant: whether the user's quoted words, read where they sit in their turn,
express one operation on one memory (docs/MCP.md, "The teaching guard").

An assistant that writes on the user's behalf (teach, confirm, reject, forget, link, people,
self, and MCP `show` of a private memory) backs the write with a quote from a trusted user
turn. Finding the quote is provenance.py's job; this module reads it. It is deliberately a
reader of grammar and of a few stated lexicons, never of particular sentences, and it fails
closed: whatever it cannot decide it refuses, so that the assistant asks the user.

The rules, in the order they are applied (`judge`):

1. *Frames that suspend what a sentence asserts.* The quote's sentence (and, for a frame, the
   turn up to it) must not be
   - a question — it ends with '?' or opens with an auxiliary or a wh-word (a polite request,
     "could you please forget…?", is a request, not a question, and counts only for forget);
   - hypothetical (`HYPOTHETICAL`: "imagine", "suppose", "pretend", "let's say", "what if",
     "would", "wish", …) — such a frame anywhere before the quote in the turn covers it;
   - conditional (`CONDITIONAL`: "if", "unless", "in case", "whether", …) or hedged
     (`HEDGES`: "maybe", "probably", "I think", …) outside the quoted words;
   - reported (`REPORTING`: "told", "said", "says", "asked", "thinks", "wants me to",
     "according to", …) when the reporter is anyone but the user ("I said…" is the user's
     own word; "my friend told me to…" and "you said…" are not);
   - marked as sarcasm or a joke anywhere in the turn (`SARCASM`: "yeah right", "as if",
     "/s", "jk", "lol", an eye-roll emoji, …).
2. *Negation and its scope.* Idioms that hold a negative word without negating anything
   (`NOT_NEGATING`: "no doubt", "not only", "no problem", …) are read as plain words first.
   A negator (`QUOTE_NEGATORS`) or a denying frame (`DENYING`: "it is false that", "it's a lie
   that", "I never said", …) in the quote's clause but outside the quote turns its meaning:
   "like tea" out of "I don't like tea" says nothing the user said.
3. *The operation itself, in the quoted words.*
   - teach, people, self: the quote is a statement — at least three words, one of them a
     content word (a single word — "penicillin" — asserts nothing);
   - confirm: an affirmation (`AFFIRM`) not negated and not qualified by a following "but",
     "except", "only", …, or a restatement of the memory with the same polarity; and no clause
     of the turn about the memory negates it;
   - reject: a denial (`DENY`) not itself negated, or a restatement with the opposite
     polarity;
   - forget: a forget verb (`FORGET`) in a request — an imperative, a request frame ("can
     you", "please", "I want you to", …) or "I want it deleted" — and not negated ("don't
     forget" asks to remember);
   - link: the user's words name a change (`CHANGE`, for superseded-by/supersedes) or a
     denial (for contradicts), and the turn refers to both memories;
   - show: the turn asks about the memory (a question is fine here).
4. *This memory.* The quote's sentence names the memory's id (an id prefix of at least 6
   characters) or shares at least min(2, n) of its n content words, or the operation's object
   — the content words the request itself names, "forget *my PIN*" — is a non-empty part of
   the memory. One shared word beside an affirmation ("Yes, the meeting is fine" against
   "prefers morning meetings") is not enough.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memdir.indexers.text import CONVERSATION_STOP_WORDS, QUOTE_NEGATORS, QUOTE_WORD, fold

OPERATIONS = ("teach", "people", "self", "confirm", "reject", "forget", "link", "show")
ASSERTING = ("teach", "people", "self")

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
# clause boundaries: punctuation, dashes, and the conjunctions that start a new claim
_CLAUSE_BREAK = re.compile(r"[,;:()\[\]—–]+|\s-+\s")
CONTRAST = frozenset("but although though however whereas except yet only".split())

# the lexicons, stated as such (the negators, QUOTE_NEGATORS, with the other word lists in
# indexers/text.py) --------------------------------------------------------------------------
# phrases that negate as one ("no longer" is one negation, not two)
NEGATING_PHRASES = ("no longer", "used to")
# frames that deny the proposition they introduce
DENYING = (
    "false", "untrue", "a lie", "lie that", "lies", "not true", "not the case", "myth",
    "nonsense", "rubbish", "deny", "denies", "doubt that", "i doubt", "never said",
    "didn't say", "did not say", "made up", "fake", "bogus", "mistaken", "wrong",
    "incorrect", "not right", "not correct",
)  # fmt: skip
# idioms that hold a negative word but negate nothing: read as their plain sense
NOT_NEGATING = (
    "no doubt", "without a doubt", "without doubt", "not only", "not just", "no wonder",
    "no problem", "no worries", "no question", "never mind", "nevertheless", "nonetheless",
    "not least", "no matter",
)  # fmt: skip
HYPOTHETICAL = (
    "imagine", "imagining", "suppose", "supposing", "pretend", "pretending", "let's say",
    "lets say", "say that", "what if", "hypothetically", "hypothetical", "assume", "assuming",
    "picture this", "in a story", "in my story", "in the story", "fiction", "fictional",
    "roleplay", "role play", "my character", "as a character", "play a game", "a game",
    "let's play", "scenario", "fantasy", "dream of", "i dreamt", "i dreamed", "in my dream",
    "wish", "would", "if i were", "were i", "in theory", "theoretically", "as if",
)  # fmt: skip
CONDITIONAL = (
    "if", "unless", "in case", "provided", "as long as", "whether", "whenever", "once",
    "otherwise", "in the event",
)  # fmt: skip
HEDGES = (
    "maybe", "perhaps", "possibly", "probably", "might", "i think", "i guess", "i suppose",
    "i believe", "not sure", "unsure", "kind of", "sort of", "could be", "i wonder", "wonder",
    "likely", "seems", "apparently",
)  # fmt: skip
# a reporting word with a reporter other than the user marks someone else's words
REPORTING = frozenset(
    """told tells tell telling said says say saying asked asks ask asking claims claimed
    claim claiming thinks thought thinking believes believed believing reckons reckoned
    insists insisted insisting suggested suggests suggesting wants wanted warned warns
    advised advises recommended recommends heard read writes wrote swears swore
    mentioned mentions""".split()
)
REPORTED = ("according to", "was told", "were told", "supposedly", "allegedly", "rumour",
            "rumor", "they say", "people say", "i heard", "i read")  # fmt: skip
SARCASM_WORDS = ("yeah right", "yeah yeah", "as if", "oh sure", "oh yeah", "oh great",
                 "oh wonderful", "oh joy", "sure sure", "lol", "lmao", "rofl", "haha",
                 "hehe", "jk", "just kidding", "kidding", "joking", "said no one",
                 "big surprise", "what a surprise")  # fmt: skip
SARCASM_SIGNS = ("/s", "🙄", "😏", "😒", "😂", "🤣", "😜", "😉", ";)", ";-)", ":p", "not!")
AUXILIARIES = frozenset(
    """do does did is are was were am can could would will should shall may might have has
    had must isn't aren't don't doesn't didn't won't wouldn't can't couldn't shouldn't""".split()
)
WH_WORDS = frozenset("what why how who whom whose which".split())
PRONOUNS = frozenset(
    "i you we he she it they my your the there this that his her our their".split()
)
# an answer word says yes only where it opens a clause ("Correct, …"; not "turn right")
AFFIRM_WORDS = frozenset(
    """yes yeah yep yup correct right true exactly indeed absolutely definitely agreed
    confirmed accurate precisely affirmative certainly sure bingo""".split()
)
AFFIRM = ("that's right", "that is right", "you're right", "you are right", "that's correct",
          "that is correct", "that's true", "that is true", "it's true", "quite right",
          "i agree", "i confirm", "that's me", "keep it", "keep that", "of course", "spot on",
          "that's it", "all correct")  # fmt: skip
FILLERS = frozenset("oh well um uh ok okay and so ah hmm".split())
DENY = ("no", "nope", "nah", "wrong", "incorrect", "false", "untrue", "not true",
        "not right", "not correct", "mistaken", "a mistake", "never said", "didn't say",
        "did not say", "made up", "not me", "reject", "that's not", "that is not", "isn't",
        "not so")  # fmt: skip
FORGET = ("forget", "delete", "remove", "erase", "purge", "wipe", "drop", "unlearn", "scrub",
          "get rid of", "discard", "stop remembering", "stop storing", "stop keeping",
          "don't remember", "do not remember", "don't keep", "do not keep", "don't store",
          "do not store")  # fmt: skip
FORGOTTEN = ("forgotten", "deleted", "removed", "erased", "gone", "wiped", "purged")
# words a request may open with before its verb
DISCOURSE = frozenset(
    """please pls plz kindly and so also ok okay now just then oh hey well actually yes yeah
    alright right honestly seriously really go ahead thanks thank you finally both""".split()
)
REQUEST_FRAMES = (
    "can you", "could you", "would you", "will you", "i want you to", "i'd like you to",
    "i would like you to", "i need you to", "i'm asking you to", "i am asking you to",
    "i ask you to", "you should", "you can", "you may", "you must", "you need to",
    "make sure you", "make sure to", "be sure to", "you have to", "go ahead and", "i'd like to",
    "i want to", "i would like to", "let's", "time to", "i need to", "help me",
)  # fmt: skip
CHANGE = ("now", "anymore", "any more", "no longer", "moved", "changed", "switched", "instead",
          "new", "since", "replaced", "updated", "not anymore", "these days", "nowadays",
          "stopped", "quit", "became", "used to")  # fmt: skip
STEM = 5  # letters a content word is compared on
# where a memory is kept: named beside a request ("from your memory"), never its object
STORAGE = frozenset(
    """memory memories notes note records record files file database mind head list lists
    journal history system storage""".split()
)
META_WORDS = frozenset({"user", "user's", "users", "assistant", "assistant's"})
_ID_MENTION = re.compile(r"\bm-[0-9a-f]{4,16}\b")


@dataclass(frozen=True)
class Verdict:
    """Whether the quote expresses the operation on this memory; why not, when it does not."""

    accept: bool
    reason: str = ""

    def __bool__(self) -> bool:
        return self.accept


ACCEPT = Verdict(True)


def words_of(text: str) -> list[str]:
    """The words of `text`, case-folded, typographic apostrophes made plain."""
    return QUOTE_WORD.findall(fold(text))


def _phrase_in(phrases: tuple[str, ...] | frozenset[str], flat: str) -> list[str]:
    """Which of `phrases` occur in the space-joined words `flat` as whole words."""
    padded = f" {flat} "
    return [phrase for phrase in phrases if f" {phrase} " in padded]


def _plain(words: list[str]) -> list[str]:
    """`words` with the non-negating idioms ("no doubt", "not only") read as plain words."""
    flat = f" {' '.join(words)} "
    for idiom in NOT_NEGATING:
        flat = flat.replace(f" {idiom} ", " " + idiom.replace(" ", "_").replace("'", "") + " ")
    return flat.split()


def negations(words: list[str]) -> int:
    """How many negations `words` hold: negators and negating phrases, each phrase once,
    idioms read as plain words."""
    flat = f" {' '.join(_plain(words))} "
    for phrase in NEGATING_PHRASES:
        flat = flat.replace(f" {phrase} ", " <neg> ")
    return sum(1 for word in flat.split()
               if word == "<neg>" or word in QUOTE_NEGATORS or word.endswith("n't"))  # fmt: skip


def _denying_frame(words: list[str]) -> list[str]:
    return _phrase_in(DENYING, " ".join(_plain(words)))


def content_words(text: str) -> set[str]:
    """The content words of `text` as stems: plural and possessive endings removed, then stop
    words (dream's), 'user'/'assistant' and words of two letters left out, and each cut to
    its first `STEM` letters ("allergy" and "allergic" are one word)."""
    stems = set()
    for word in words_of(text):
        word = word.removesuffix("'s")
        if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
        if len(word) > 2 and word not in CONVERSATION_STOP_WORDS and word not in META_WORDS:
            if not word.endswith("n't"):
                stems.add(word[:STEM])
    return stems


@dataclass(frozen=True)
class Sentence:
    text: str  # case-folded
    words: list[str]
    clauses: list[list[str]]
    start: int  # index of its first word in the turn's words


def sentences(turn: str) -> list[Sentence]:
    """The turn as sentences, each with its clauses, in word positions of the whole turn."""
    found: list[Sentence] = []
    position = 0
    for piece in _SENTENCE_END.split(fold(turn)):
        said = QUOTE_WORD.findall(piece)
        if not said:
            continue
        clauses = []
        for part in _CLAUSE_BREAK.split(piece):
            current: list[str] = []
            for word in QUOTE_WORD.findall(part):
                if word in CONTRAST and current:
                    clauses.append(current)
                    current = []
                current.append(word)
            if current:
                clauses.append(current)
        found.append(Sentence(piece.strip(), said, clauses, position))
        position += len(said)
    return found


@dataclass(frozen=True)
class Place:
    """One occurrence of the quote in the turn."""

    sentence: Sentence
    begin: int  # word offsets within the sentence
    end: int
    before: list[str]  # the turn's words before the quote's sentence
    after: list[str]  # the turn's words after it
    turn: tuple[Sentence, ...]  # every sentence of the turn

    @property
    def quoted(self) -> list[str]:
        return self.sentence.words[self.begin : self.end]

    def left_out(self) -> list[str]:
        """The words of the quote's clauses that the quote leaves out."""
        offset, touched = 0, []
        for clause in self.sentence.clauses:
            span = range(offset, offset + len(clause))
            if span.start < self.end and self.begin < span.stop:
                touched.append(span)
            offset += len(clause)
        return [self.sentence.words[i] for span in touched for i in span
                if not self.begin <= i < self.end]  # fmt: skip

    def clause(self) -> list[str]:
        """The words of the quote's clauses, the quote's own included."""
        return self.left_out() + self.quoted

    def prefix(self) -> list[str]:
        """The sentence's words before the quote."""
        return self.sentence.words[: self.begin]


def places(turn: str, quote: str) -> list[Place]:
    """Every occurrence of the quote's words as whole words of one sentence of the turn."""
    wanted = words_of(quote)
    if not wanted:
        return []
    parts = sentences(turn)
    flat = [word for sentence in parts for word in sentence.words]
    found = []
    for number, sentence in enumerate(parts):
        size = len(wanted)
        for begin in range(len(sentence.words) - size + 1):
            if sentence.words[begin : begin + size] == wanted:
                before = flat[: sentence.start]
                after = [w for later in parts[number + 1 :] for w in later.words]
                found.append(Place(sentence, begin, begin + size, before, after, tuple(parts)))
    return found


# the frames -----------------------------------------------------------------------------------
def sarcastic(turn: str) -> str:
    """A sarcasm or joke marker anywhere in the turn, or ''."""
    folded = fold(turn)
    for sign in SARCASM_SIGNS:
        if sign in folded:
            return sign
    found = _phrase_in(SARCASM_WORDS, " ".join(words_of(turn)))
    return found[0] if found else ""


def request_question(words: list[str]) -> bool:
    """A polite request put as a question: "(please) can/could/would/will you (please) …"."""
    rest = _after_discourse(words)
    return len(rest) >= 2 and rest[0] in ("can", "could", "would", "will") and rest[1] == "you"


def asks(sentence: Sentence) -> bool:
    """The sentence is a question: it ends with '?' or opens with an auxiliary or a wh-word."""
    if sentence.text.rstrip().endswith("?"):
        return True
    opening = _after_discourse(sentence.words)
    if len(opening) < 2:
        return False
    first, second = opening[0], opening[1]
    if first in AUXILIARIES:  # an inversion: "should I …", "is it …"
        return second in PRONOUNS or second in ("anyone", "someone", "everyone")
    return first in WH_WORDS and (
        second in AUXILIARIES or second in PRONOUNS or second in ("happens", "happened", "if",
                                                                   "about", "else", "come")
    )  # fmt: skip


def _after_discourse(words: list[str]) -> list[str]:
    index = 0
    while index < len(words) and words[index] in DISCOURSE:
        index += 1
    return words[index:]


def reported(words: list[str], allow_own: bool = True) -> str:
    """A reporting word whose reporter is not the user ("my friend told me", "you said"), or a
    reporting phrase, in `words`; ''."""
    flat = " ".join(words)
    phrases = _phrase_in(REPORTED, flat)
    if phrases:
        return phrases[0]
    for index, word in enumerate(words):
        if word not in REPORTING:
            continue
        subject = [w for w in words[max(0, index - 3) : index]
                   if w not in ("once", "always", "just", "also", "never", "already", "then",
                                "have", "had", "has", "did", "do", "really")]  # fmt: skip
        if allow_own and subject and subject[-1] in ("i", "i've", "i'd", "i'm"):
            continue
        if word in ("read", "heard") and not subject:
            continue  # an imperative ("read this") reports nothing
        if word in ("tell", "say", "ask") and (not subject or subject[-1] in ("to", "please")):
            continue  # an imperative or an infinitive: "tell me", "please say"
        return word
    return ""


def frame(place: Place, operation: str) -> str:
    """Why the quote's sentence does not assert (or request) what it says, or ''."""
    sentence = place.sentence
    turn_before = place.before + place.prefix()
    flat_before = " ".join(turn_before)
    whole = " ".join(sentence.words)
    if asks(sentence) and operation != "show":
        if not (operation == "forget" and request_question(sentence.words)):
            return "it is a question"
    polite = operation == "forget" and request_question(sentence.words)
    hypothetical = _phrase_in(HYPOTHETICAL, flat_before) + _phrase_in(HYPOTHETICAL, whole)
    if polite:  # "would you …" is politeness, not a hypothetical
        hypothetical = [word for word in hypothetical if word != "would"]
    if hypothetical:
        return f'it is hypothetical ("{hypothetical[0]}")'
    outside = place.prefix() + sentence.words[place.end :]
    conditional = _phrase_in(CONDITIONAL, " ".join(sentence.words))
    if conditional:
        return f'it is conditional ("{conditional[0]}")'
    hedge = _phrase_in(HEDGES, " ".join(outside))
    if operation in ("confirm", "reject", "forget", "link"):
        hedge += _phrase_in(HEDGES, " ".join(place.quoted))
    if hedge:
        return f'it is hedged ("{hedge[0]}")'
    speech = reported(sentence.words)
    if speech:
        return f'it reports someone else\'s words ("{speech}")'
    return ""


# the operations -------------------------------------------------------------------------------
def clause_starts(sentence: Sentence) -> set[int]:
    """The word positions (in the sentence) where a clause opens, fillers ("oh", "well")
    skipped."""
    starts, offset = set(), 0
    for clause in sentence.clauses:
        skip = 0
        while skip < len(clause) - 1 and clause[skip] in FILLERS:
            skip += 1
        starts.add(offset + skip)
        offset += len(clause)
    return starts


def _affirmation(place: Place) -> int | None:
    """The position (in the quote) of an affirmation the quote holds, that nothing negates:
    an answer word opening a clause, or an affirming phrase. None: there is none."""
    words = place.quoted
    for start in sorted(clause_starts(place.sentence)):
        index = start - place.begin
        if 0 <= index < len(words) and words[index] in AFFIRM_WORDS:
            if not negations(words[max(0, index - 3) : index]):
                return index
    flat = " ".join(words)
    for phrase in AFFIRM:
        for match in re.finditer(rf"(?:^| ){re.escape(phrase)}(?= |$)", flat):
            index = len(flat[: match.start()].split())
            if not negations(words[max(0, index - 3) : index]):
                return index
    return None


def _denial(words: list[str]) -> bool:
    """A denial in `words` that is not itself negated ("not wrong")."""
    plain = _plain(words)
    flat = " ".join(plain)
    for phrase in DENY:
        for match in re.finditer(rf"(?:^| ){re.escape(phrase)}(?= |$)", flat):
            index = len(flat[: match.start()].split())
            earlier = plain[max(0, index - 2) : index]
            if phrase not in ("no", "nope", "nah", "not true", "not right", "not correct",
                              "that's not", "that is not", "isn't", "not so", "not me") and (
                set(earlier) & QUOTE_NEGATORS
            ):  # fmt: skip
                continue
            return True
    return False


def answer_words(sentence: Sentence, begin: int = 0, end: int | None = None) -> list[str]:
    """The sentence's words in [begin, end) with each "no" that is not an answer marked as a
    determiner ("no sugar" denies nothing): an answer "no" is a clause of its own ("No, …",
    "… no.") or is followed by what only an answer is ("no way", "no, not …")."""
    out, offset = [], 0
    for clause in sentence.clauses:
        for index, word in enumerate(clause):
            if word == "no":
                rest = [w for w in clause[index + 1 :] if w not in FILLERS]
                answer = not rest or rest[0] in {"way", "not", "never", "no"}
                word = word if answer else "no-determiner"
            out.append(word)
        offset += len(clause)
    return out[begin:end]


def forget_request(words: list[str]) -> str:
    """Why `words` (the quote's sentence) do not request a forget, or '' when they do: a forget
    verb as an imperative, after a request frame, or in "I want it deleted", not negated."""
    flat = " ".join(words)
    for phrase in FORGET:
        for match in re.finditer(rf"(?:^| ){re.escape(phrase)}(?= |$)", flat):
            index = len(flat[: match.start()].split())
            clause_start = max(
                (i + 1 for i in range(index) if words[i] in CONTRAST | {"and", "then", "so"}),
                default=0,
            )
            before = words[clause_start:index]
            if phrase.startswith(("don't", "do not")) or phrase.startswith("stop"):
                opener = _after_discourse(before)
                if not opener or " ".join(opener) in REQUEST_FRAMES:
                    return ""
                continue
            if negations(before):
                continue
            opener = _after_discourse(before)
            if not opener:
                return ""
            head = " ".join(opener)
            if any(head == frame or head == f"{frame} please" or head == f"{frame} just"
                   or head == f"please {frame}" for frame in REQUEST_FRAMES):  # fmt: skip
                if head.startswith(("i'd like to", "i want to", "i would like to", "i need to")):
                    continue  # the user's own plan, not a request to the assistant
                return ""
    # "I want it deleted", "I'd like that removed"
    wanting = re.search(r"(?:^| )(?:i want|i'd like|i would like|i need) (?:\S+ ){1,4}?"
                        r"(?:" + "|".join(FORGOTTEN) + r")(?= |$)", flat)  # fmt: skip
    if wanting and not negations(flat[: wanting.end()].split()):
        return ""
    return "the quoted words do not ask to forget it"


def _object_words(words: list[str], anchors: tuple[str, ...]) -> set[str]:
    """The content words of the clause after the operation's word (what it is about)."""
    flat = " ".join(words)
    for phrase in anchors:
        match = re.search(rf"(?:^| ){re.escape(phrase)}(?= |$)", flat)
        if match:
            index = len(flat[: match.end()].split())
            rest = []
            for word in words[index:]:
                if word in CONTRAST:
                    break
                if word not in DISCOURSE and word not in STORAGE:
                    rest.append(word)  # "forget my PIN from your memory, please": "my PIN"
            return content_words(" ".join(rest))
    return set()


def refers(
    words: list[str],
    memory: str,
    memory_id: str = "",
    object_: frozenset[str] | set[str] = frozenset(),
    raw: str = "",
) -> bool:
    """Whether `words` are about this memory: they name its id (a prefix of at least 6
    characters), share at least min(2, n) of its n content words, or the operation's object is
    a non-empty part of it."""
    flat = " ".join(words)
    mentioned = _ID_MENTION.findall(fold(raw) if raw else flat)
    if memory_id and any(memory_id.startswith(found) and len(found) >= 6 for found in mentioned):
        return True
    wanted = content_words(memory)
    if not wanted:
        return False
    if len(wanted & content_words(flat)) >= min(2, len(wanted)):
        return True
    return bool(object_) and object_ <= wanted


def judge(operation: str, turn: str, quote: str, memory: str, memory_id: str = "",
          other: str = "", other_id: str = "", link_type: str = "related") -> Verdict:  # fmt: skip
    """Whether `quote`, read where it sits in the user's `turn` (their own words only), says
    `operation` on the memory whose text is `memory` (for link, from `memory` to `other`).
    For teach, people and self `memory` is the text to be stored."""
    if operation not in OPERATIONS:
        raise ValueError(f"unknown operation {operation!r}")
    found = places(turn, quote)
    if not found:
        return Verdict(False, "the turn does not hold the quoted words within one sentence")
    marker = sarcastic(turn)
    if marker:
        return Verdict(False, f'the turn is marked as sarcasm or a joke ("{marker}")')
    reasons = []
    for place in found:
        verdict = _judge_place(operation, place, memory, memory_id, other, other_id, link_type)
        if verdict:
            return verdict
        reasons.append(verdict.reason)
    return Verdict(False, reasons[-1])


def _judge_place(operation: str, place: Place, memory: str, memory_id: str, other: str,
                 other_id: str, link_type: str) -> Verdict:  # fmt: skip
    why = frame(place, operation)
    if why:
        return Verdict(False, why)
    sentence, quoted = place.sentence.words, place.quoted
    left_out = place.left_out()
    turned = negations(left_out) or _denying_frame(left_out)
    if operation in ASSERTING:
        if turned:
            return Verdict(False, "the quote leaves out words that turn its meaning")
        if len(quoted) < 3 or not content_words(" ".join(quoted)):
            return Verdict(
                False,
                "the quote is a fragment, not a statement (fewer than three "
                "words, or no content word)",
            )
        return ACCEPT
    if operation == "show":
        about = _object_words(sentence, ("about", "show", "see"))
        if refers(sentence, memory, memory_id, about, place.sentence.text):
            return ACCEPT
        return Verdict(False, "the user's words are not about this memory")
    if operation == "confirm":
        return _confirms(place, memory, memory_id, bool(turned))
    if operation == "reject":
        return _rejects(place, memory, memory_id, bool(turned))
    if operation == "forget":
        if not _phrase_in(FORGET + FORGOTTEN, " ".join(quoted)):
            return Verdict(False, "the quoted words do not ask to forget it")
        why = forget_request(sentence)
        if why:
            return Verdict(False, why)
        named = _object_words(sentence, FORGET)
        if not refers(sentence, memory, memory_id, named, place.sentence.text):
            return Verdict(False, "the user's words are not about this memory")
        return ACCEPT
    return _links(place, memory, memory_id, other, other_id, link_type, bool(turned))


def _polarity(words: list[str]) -> int:
    return (negations(words) + len(_denying_frame(words))) % 2


def _restates(quoted: list[str], memory: str) -> bool:
    wanted = content_words(memory)
    return bool(wanted) and len(wanted & content_words(" ".join(quoted))) >= min(
        max(2, -(-len(wanted) * 6 // 10)), len(wanted)
    )


def _confirms(place: Place, memory: str, memory_id: str, turned: bool) -> Verdict:
    sentence, quoted = place.sentence.words, place.quoted
    if turned:
        return Verdict(False, "the quote leaves out words that turn its meaning")
    if _denial(answer_words(place.sentence)) or _denying_frame(sentence):
        return Verdict(False, "the user's words deny it")
    for clause in (clause for other in place.turn for clause in other.clauses):
        if negations(clause) and content_words(" ".join(clause)) & content_words(memory):
            if _polarity(clause) != _polarity(words_of(memory)):
                return Verdict(False, "the turn negates part of it")
    said = _affirmation(place)
    if said is not None:
        later = sentence[place.begin + said + 1 :]
        if set(later) & CONTRAST:
            return Verdict(False, "the affirmation is qualified (a following but/except/only)")
        named = _object_words(sentence, AFFIRM)
        if refers(sentence, memory, memory_id, named, place.sentence.text):
            return ACCEPT
        return Verdict(False, "the user's words are not about this memory")
    if _restates(quoted, memory) and _polarity(place.clause()) == _polarity(words_of(memory)):
        return ACCEPT
    return Verdict(False, "the quoted words do not affirm it")


def _rejects(place: Place, memory: str, memory_id: str, turned: bool) -> Verdict:
    sentence, quoted = place.sentence.words, place.quoted
    if _restates(quoted, memory):
        if _polarity(place.clause()) != _polarity(words_of(memory)):
            return ACCEPT
        return Verdict(False, "the quoted words restate it rather than deny it")
    if turned:
        return Verdict(False, "the quote leaves out words that turn its meaning")
    if not (_denial(answer_words(place.sentence, place.begin, place.end))
            or _denying_frame(quoted)):  # fmt: skip
        return Verdict(False, "the quoted words do not say it is wrong")
    if refers(sentence, memory, memory_id, raw=place.sentence.text):
        return ACCEPT
    return Verdict(False, "the user's words are not about this memory")


def _links(place: Place, memory: str, memory_id: str, other: str, other_id: str,
           link_type: str, turned: bool) -> Verdict:  # fmt: skip
    sentence, quoted = place.sentence.words, place.quoted
    if turned:
        return Verdict(False, "the quote leaves out words that turn its meaning")
    raw = place.sentence.text
    if not (
        refers(sentence, memory, memory_id, raw=raw) and refers(sentence, other, other_id, raw=raw)
    ):
        return Verdict(False, "the user's words are not about both memories")
    flat = " ".join(quoted)
    if link_type in ("superseded-by", "supersedes") and not _phrase_in(CHANGE, flat):
        return Verdict(False, "the quoted words do not say that something changed")
    if link_type == "contradicts" and not (
        _denial(answer_words(place.sentence, place.begin, place.end)) or negations(quoted)
    ):
        return Verdict(False, "the quoted words do not say that one contradicts the other")
    return ACCEPT
