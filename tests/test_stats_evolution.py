"""`memdir stats --evolution` on a small scripted history, every number worked out by hand
from the rules in memdir/usecases/analytics.py's docstring."""

from __future__ import annotations

import json

from conftest import memdir_main, succeeding

from memdir.archive_format.memdir import Memdir


def test_evolution_counts_growth_and_churn_by_month(hashed: Memdir) -> None:
    root = str(hashed.root)
    ok = succeeding(hashed.root)

    # May: 3 teachings (one keyed), 2 inferences; one confirmed, a link
    rent = ok("teach", "rent is 1400", "--key", "rent", now="2026-05-01T09:00:00Z")
    ok("teach", "the kettle is blue", now="2026-05-02T09:00:00Z")
    note = ok("teach", "a note to forget", now="2026-05-03T09:00:00Z")
    tea = ok("infer", "the user likes tea", now="2026-05-04T09:00:00Z")
    ok("confirm", tea, now="2026-05-05T09:00:00Z")
    ok("infer", "the user jogs", "--ttl", "40d", now="2026-05-06T09:00:00Z")
    ok("link", tea, rent, "--type", "related", now="2026-05-07T09:00:00Z")
    # June: the rent replaced (a supersede), the note forgotten, the jog guess expires (16 June)
    ok("teach", "rent is 1450", "--key", "rent", now="2026-06-02T09:00:00Z")
    ok("forget", note, now="2026-06-03T09:00:00Z")
    # July: a guess rejected
    bad = ok("infer", "the user hates cats", now="2026-07-01T09:00:00Z")
    ok("reject", bad, "--reason", "no", now="2026-07-02T09:00:00Z")

    report = json.loads(ok("stats", "--evolution", "--json", now="2026-07-10T00:00:00Z"))
    months = {m["month"]: m for m in report["evolution"]["months"]}
    assert list(months) == ["2026-05", "2026-06", "2026-07"]
    may, june, july = months["2026-05"], months["2026-06"], months["2026-07"]
    # the forgotten note is written in May but by no source any more (its tombstone keeps none)
    assert (may["written"], may["teachings"], may["inferences"]) == (5, 2, 2)
    assert (may["confirmed"], may["links"], may["live_at_end"], may["churn"]) == (1, 1, 5, None)
    assert (june["written"], june["superseded"], june["forgotten"], june["expired"]) == (1, 1, 1, 1)
    assert june["live_at_end"] == 5 + 1 - 3
    assert june["churn"] == round(3 / 5, 4)  # three of the five live at its start left
    assert (july["written"], july["rejected"], july["live_at_end"]) == (1, 1, 3)
    assert july["churn"] == round(1 / 3, 4)
    assert report["evolution"]["live"] == july["live_at_end"] == 3
    plain = ok("stats", "--evolution", now="2026-07-10T00:00:00Z")
    assert "2026-06" in plain and "60%" in plain
    done = memdir_main("--dir", root, "stats", "--evolution", "--drift", now="2026-07-10T00:00:00Z")
    assert done.code == 8 and "three reports" in done.err and "Traceback" not in done.err
