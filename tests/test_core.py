"""`memdir core` through the real console script: what defines the person, within a budget."""

from __future__ import annotations

import json

from conftest import memdir_main

from memdir.archive_format.memdir import Memdir


def test_core_holds_the_hard_facts_and_milestones_within_its_budget(hashed: Memdir) -> None:
    root = str(hashed.root)

    def ok(*args: str, now: str = "2026-05-01T09:00:00Z") -> str:
        done = memdir_main("--dir", root, *args, now=now)
        assert done.code == 0, done
        assert "Traceback" not in done.err
        return done.out.strip()

    ok("self", "set", "name=Ada")
    pinned = ok("teach", "I always carry an inhaler", "--pin")  # no key: pinned alone
    rent = ok("teach", "my rent is 1450 euros a month", "--key", "rent", "--type", "FINANCIAL")
    wedding = ok("teach", "we married in Porto", "--temporal", "milestone", "--importance", "9")
    small = ok("teach", "a minor milestone", "--temporal", "milestone", "--importance", "3")
    plain = ok("teach", "the kettle is blue")
    guess = ok("infer", "the user likes rain", "--ttl", "30d")
    secret = ok("teach", "my pin code story", "--pin", "--visibility", "sealed")
    ok("teach", "my rent is 1500 euros a month", "--key", "rent", now="2026-05-02T09:00:00Z")

    # a year later: hard facts are kept at any age
    found = json.loads(ok("core", "--json", now="2027-05-01T09:00:00Z"))
    ids = [m["id"] for m in found["memories"]]
    assert pinned in ids and wedding in ids
    assert rent not in ids  # superseded by the newer rent
    assert not {small, plain, guess, secret} & set(ids)
    assert found["self"] == [{"field": "name", "value": "Ada", "by": "user"}]
    assert found["tokens"] <= found["budget"] == 600
    assert [m["why"] for m in found["memories"]][-1] == "milestone"  # hard facts first

    tight = json.loads(ok("core", "--json", "--budget", "20", now="2027-05-01T09:00:00Z"))
    assert tight["tokens"] <= 20 and tight["left_out"] >= 1
    assert len(tight["memories"]) < len(found["memories"])
    assert "we married in Porto" in ok("core", now="2027-05-01T09:00:00Z")
    bad = memdir_main("--dir", root, "core", "--budget", "0")
    assert bad.code == 2 and "Traceback" not in bad.err
