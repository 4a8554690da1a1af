"""A year of one scripted person's memdir, through the CLI (issue 26): hard facts,
appointments, medication, a preference that changes, people, feelings, ephemera, an
inference confirmed and one rejected, a forget, a sleep every week — and questions asked at many
dates with `--now`, each expectation written from docs/RECALL.md and docs/CONTINUITY.md:

- a hard fact (a keyed memory, a pinned one, a FINANCIAL or MEDICATION teaching) is recalled at
  every date after it was taught (the cut-offs exempt it); a keyed one gives the current value;
- an appointment is recalled until a week after the day it names, and not after;
- a feeling is gone after 48 h, an ephemeral note after 24 h (the cut-offs);
- a forgotten or rejected memory is never recalled;
- milestones take recall's guaranteed slots only from a query they bear on;
- no teaching changes status silently: each one superseded is either replaced by the user's
  own key or listed in `memdir review`'s automatic supersedes;
- wake keeps every current hard fact and pinned memory at any age (docs/CONTINUITY.md, "Kept
  at any age") and shows nothing recall's cut-offs drop, in any section;
- a week of chats dreamt into conversation summaries is one line of `memdir review` and of
  wake's review queue, never one question each, and never a "Needs your decision" entry;
- a detail said in the middle of an imported conversation (a ChatGPT export on day 20) is
  found by `recall --include-journal` at every later date, in the journal group, whatever
  dream kept of the conversation — and the per-prompt block (`memdir context`), which no memory
  answers, carries that turn;
- the per-prompt block carries the hard fact its prompt names and the current tea, and no
  health fact rides along with a prompt about tea.

    .venv/bin/python -m benchmarks.year_of_life       # the whole year: 52 weekly sleeps

The result goes to benchmarks/results/year.json (--result elsewhere).
tests/test_year.py runs the fast part (a sleep a month, fewer dates).
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

START = datetime(2026, 1, 5, 9, 0, tzinfo=timezone.utc)


@dataclass
class Year:
    """The outcome: every check made and every one that failed."""

    checks: int = 0
    failures: list[str] = field(default_factory=list)

    def expect(self, ok: bool, what: str) -> None:
        self.checks += 1
        if not ok:
            self.failures.append(what)


class Person:
    """One memdir driven through `memdir.cli.main.main`, in-process."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def run(self, when: datetime, *args: str) -> str:
        from memdir.cli.main import main

        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = main(["--dir", str(self.root), *args, "--now", when.isoformat()])
        if code != 0:
            raise RuntimeError(f"memdir {' '.join(args)} exited {code}: {out.getvalue()}")
        return out.getvalue().strip()

    def recalled(self, when: datetime, query: str, *extra: str) -> list[str]:
        found = json.loads(self.run(when, "recall", query, "--json", "--no-record", *extra))
        return [row["id"] for row in found["results"]]

    def block(self, when: datetime, prompt: str) -> dict:
        """What the per-prompt hook would put before the prompt (`context --json`)."""
        return json.loads(self.run(when, "context", prompt, "--json", "--no-record"))

    def journalled(self, when: datetime, query: str) -> list[str]:
        """The texts of recall's journal group for `query`."""
        found = json.loads(self.run(when, "recall", query, "--json", "--no-record",
                                    "--include-journal"))  # fmt: skip
        return [turn["text"] for turn in found["journal"]["turns"]]


def days(number: float) -> timedelta:
    return timedelta(days=number)


IMPORTED_AT = 20  # the day a ChatGPT export is imported
VALENCIA = "We found a flat in Valencia near the old riverbed park."


def chatgpt_export(path: Path, when: datetime) -> Path:
    """A ChatGPT `conversations.json`: one conversation about a move, the detail mid-way."""
    said = ["I need help planning a move next spring.", "Happy to help. Where to?", VALENCIA,
            "Lovely choice.", "Mostly I worry about the paperwork.", "Let's make a list."]  # fmt: skip
    start = int(when.timestamp())
    mapping = {
        f"n{n}": {"id": f"n{n}", "parent": f"n{n - 1}" if n else None,
                  "children": [f"n{n + 1}"] if n < len(said) - 1 else [],
                  "message": {"id": f"n{n}", "author": {"role": ("user", "assistant")[n % 2]},
                              "create_time": start + 60 * n,
                              "content": {"content_type": "text", "parts": [text]}}}
        for n, text in enumerate(said)
    }  # fmt: skip
    path.write_text(json.dumps([{"id": "c0000000-0000-4000-8000-0000000000aa", "title": "Move",
                                 "create_time": start, "mapping": mapping,
                                 "current_node": f"n{len(said) - 1}"}]))  # fmt: skip
    return path


def live_year(root: Path, sleep_every: int = 7, ask_every: int = 7) -> Year:
    """Run the year (a sleep every `sleep_every` days, the standing questions every `ask_every`
    days) and return the checks."""
    from memdir.archive_format.memdir import init

    init(root, START, settings={"embedder": {"kind": "hashing"}})
    me = Person(root)
    year = Year()
    t = START
    rent = me.run(t, "teach", "My rent is 1450 euros a month", "--type", "FINANCIAL",
                  "--key", "rent")  # fmt: skip
    pill = me.run(t, "teach", "I take 50 mg of sertraline every morning", "--type", "MEDICATION")
    allergy = me.run(t, "teach", "I am allergic to penicillin", "--pin", "--importance", "9")
    tea = me.run(t, "teach", "I drink green tea every afternoon", "--key", "tea")
    anna = me.run(t, "teach", "My sister Anna lives in Krakow")
    anna_work = me.run(t + days(1), "teach", "My sister Anna works in Krakow as a nurse")
    mood = me.run(t, "teach", "I feel anxious about the new job", "--type", "EMOTION")
    parked = me.run(t, "teach", "I parked on level 3", "--temporal", "ephemeral")
    dentist = me.run(t, "teach", "My dentist appointment is on 3 March", "--type",
                     "DATE:appointment")  # fmt: skip
    wedding = me.run(t, "teach", "We got married in Lisbon", "--temporal", "milestone")
    born = me.run(t, "teach", "Our son Leo was born in March", "--temporal", "milestone")
    guess = me.run(t, "infer", "The user may be vegetarian")
    secret_code = me.run(t, "teach", "The garage code is 4471")
    me.run(t + days(2), "reject", guess, "--reason", "not true")
    me.run(t + days(3), "forget", secret_code)
    oolong: str | None = None
    standing = {  # query → the memory that must be recalled from the day it was taught
        "how much is my rent": rent,
        "what medication do I take": pill,
        "am I allergic to anything": allergy,
        "where does Anna work": anna_work,
    }
    dentist_day = datetime(2026, 3, 3, tzinfo=timezone.utc)
    for day in range(1, 366):
        now = START + days(day)
        if day == IMPORTED_AT:
            export = chatgpt_export(root.parent / "conversations.json", now - days(3))
            me.run(now, "import", str(export))
        if day == IMPORTED_AT + 1:  # no memory holds the detail yet: the journal's turn does
            said = me.block(now, "Where was the flat we found in Valencia?")
            year.expect([e["kind"] for e in said["entries"] if VALENCIA in e["text"]] == ["journal"],
                        f"day {day}: the imported turn not in the per-prompt block")  # fmt: skip
        if day == CHATS_DAY:
            _a_week_of_chats(me, now, year)
        if day % NOTE_EVERY == 0:  # everyday notes: the console ring moves on
            me.run(now, "teach", f"Diary {day}: a quiet walk by the river", "--type", "EVENT")
        if day == 60:  # a preference that changes, with the user's key
            oolong = me.run(now, "teach", "I drink oolong tea every afternoon now", "--key", "tea")
        if day % sleep_every == 0:
            me.run(now, "sleep", "--json")
            _no_silent_supersede(me, now, year)
        if day % ask_every:
            continue
        for query, wanted in standing.items():
            year.expect(wanted in me.recalled(now, query), f"day {day}: {query!r} lost {wanted}")
        drinks = me.recalled(now, "what tea do I drink")
        current = oolong if oolong else tea
        year.expect(current in drinks, f"day {day}: the current tea ({current}) not recalled")
        if oolong:
            year.expect(tea not in drinks, f"day {day}: the replaced tea still recalled")
        appointment = me.recalled(now, "when is my dentist appointment")
        due = now <= dentist_day + days(8)
        year.expect((dentist in appointment) == due,
                    f"day {day}: the appointment {'lost' if due else 'kept'}")  # fmt: skip
        year.expect(mood not in me.recalled(now, "how do I feel about the new job"),
                    f"day {day}: a feeling past 48 h")  # fmt: skip
        year.expect(parked not in me.recalled(now, "where did I park"),
                    f"day {day}: an ephemeral note past 24 h")  # fmt: skip
        year.expect(guess not in me.recalled(now, "is the user vegetarian"),
                    f"day {day}: a rejected inference recalled")  # fmt: skip
        year.expect(secret_code not in me.recalled(now, "garage code"),
                    f"day {day}: a forgotten memory recalled")  # fmt: skip
        year.expect(anna in me.recalled(now, "where does my sister Anna live"),
                    f"day {day}: a true teaching about Anna lost")  # fmt: skip
        if day > IMPORTED_AT:
            year.expect(VALENCIA in me.journalled(now, "where was the flat in Valencia?"),
                        f"day {day}: the imported detail not in recall's journal group")  # fmt: skip
            # the per-prompt block carries it: the journal's turn while no memory holds it, the
            # memories dream kept of the user's words once it has run (docs/MCP.md)
            said = me.block(now, "Where was the flat we found in Valencia?")
            year.expect(any(VALENCIA in e["text"] for e in said["entries"]),
                        f"day {day}: the imported detail not in the per-prompt block")  # fmt: skip
        # the per-prompt block: the hard fact the prompt names, the current tea, and no health
        # fact riding along with a prompt about tea (docs/MCP.md)
        shown = [e["id"] for e in me.block(now, "how much is my rent?")["entries"]]
        year.expect(rent in shown, f"day {day}: the rent not in the block for its question")
        shown = [
            e["id"] for e in me.block(now, "Which tea do I drink in the afternoon?")["entries"]
        ]
        year.expect(current in shown and (not oolong or tea not in shown),
                    f"day {day}: the block's tea is not the current one: {shown}")  # fmt: skip
        year.expect(pill not in shown and allergy not in shown,
                    f"day {day}: a health fact rides along with a prompt about tea")  # fmt: skip
        # milestones take a guaranteed slot only from a query they bear on (docs/RECALL.md §5)
        top3 = me.recalled(now, "how much is my rent", "-k", "3")
        year.expect(rent in top3 and wedding not in top3 and born not in top3,
                    f"day {day}: milestones crowd the rent out of 3 slots: {top3}")  # fmt: skip
        year.expect(wedding in me.recalled(now, "when did we get married", "-k", "3"),
                    f"day {day}: a milestone not recalled for its own question")  # fmt: skip
        document = json.loads(me.run(now, "wake", "--json"))
        in_wake = {str(item.get("id")) for section in document["sections"].values()
                   for item in section["items"]}  # fmt: skip
        kept = {"rent": rent, "medication": pill, "pinned allergy": allergy, "tea": current}
        for name, wanted in kept.items():
            year.expect(wanted in in_wake, f"day {day}: wake lost the {name} ({wanted})")
        gone = {"feeling past 48 h": mood, "ephemeral note": parked, "rejected inference": guess,
                "forgotten memory": secret_code, "replaced tea": tea if oolong else None}  # fmt: skip
        for name, unwanted in gone.items():
            if unwanted:
                year.expect(unwanted not in document["markdown"],
                            f"day {day}: wake shows the {name} ({unwanted})")  # fmt: skip
    return year


NOTE_EVERY = 5  # days between everyday notes (30 of them push the first teachings off the ring)
CHATS_DAY = 30  # a week of chats before it, dreamt by the sleep that day


def _a_week_of_chats(me: Person, now: datetime, year: Year) -> None:
    """Six days of chats about the garden (user and assistant turns) dreamt into conversation
    summaries awaiting confirmation, beside one inference of the assistant's: the person is
    asked about the inference, and the summaries are one line, in review and in wake."""
    for back in range(6, 0, -1):
        when = now - days(back)
        me.run(when, "journal", "add", "--role", "user", "--session", f"chat-{back}",
               f"Let us plan the garden beds, tomatoes and basil, for week {back}")  # fmt: skip
        me.run(when + timedelta(minutes=1), "journal", "add", "--role", "assistant", "--session",
               f"chat-{back}", "Tomatoes need full sun; basil grows well beside them")  # fmt: skip
    me.run(now, "sleep", "--json")
    hobby = me.run(now, "infer", "The user may enjoy gardening")
    later = now + timedelta(hours=1)
    found = json.loads(me.run(later, "review", "--json"))
    summaries = {row["id"] for row in found["queue"] if row["author"] == "memdir"}
    year.expect(len(summaries) >= 3, f"day {CHATS_DAY}: {len(summaries)} summaries dreamt")
    text = me.run(later, "review")
    asked = [line for line in text.splitlines() if any(i in line for i in summaries)]
    year.expect(not asked, f"day {CHATS_DAY}: review asks about {len(asked)} summaries one by one")
    year.expect(hobby in text, f"day {CHATS_DAY}: review lost the assistant's inference")
    document = json.loads(me.run(later, "wake", "--json"))
    listed = json.dumps(document["sections"]["review"]["items"])
    year.expect(hobby in listed, f"day {CHATS_DAY}: wake's review queue lost the inference")
    decisions = json.dumps(document["sections"]["decisions"]["items"])
    year.expect(not any(i in decisions for i in summaries),
                f"day {CHATS_DAY}: summaries in wake's Needs your decision")  # fmt: skip
    single = [
        line for line in document["markdown"].splitlines() if any(i in line for i in summaries)
    ]
    year.expect(len(single) <= 1, f"day {CHATS_DAY}: wake names {len(single)} summary lines")


def _no_silent_supersede(me: Person, now: datetime, year: Year) -> None:
    """Every superseded teaching is replaced by a key the user gave, or listed with its undo."""
    listed = {row["old"]["id"] for row in
              json.loads(me.run(now, "review", "--json"))["automatic_supersedes"]}  # fmt: skip
    rows = json.loads(me.run(now, "list", "--status", "superseded", "--json"))
    for row in rows:
        keyed = bool(row.get("key"))
        year.expect(keyed or row["id"] in listed,
                    f"{now:%Y-%m-%d}: {row['id']} superseded without a word")  # fmt: skip


def main() -> None:
    import argparse

    from benchmarks.common import started

    _, result = started(argparse.ArgumentParser(description=__doc__.splitlines()[0]), "year")
    began = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="memdir-year-") as scratch:
        outcome = live_year(Path(scratch) / "me")
    seconds = time.perf_counter() - began
    print(f"{outcome.checks} checks, {len(outcome.failures)} failed, {seconds:.0f} s")
    for failure in outcome.failures:
        print(f"  {failure}")
    result.save({"a year of life, 52 weekly sleeps": {"checks": outcome.checks,
                 "failed": len(outcome.failures), "seconds": round(seconds)}},
                {"failures": outcome.failures})  # fmt: skip
    sys.exit(1 if outcome.failures else 0)


if __name__ == "__main__":
    main()
