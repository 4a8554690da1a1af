"""`memdir stats --provenance` on a small scripted history, every number worked out by hand."""

from __future__ import annotations

import json

from conftest import memdir_main, succeeding

from memdir.archive_format.memdir import Memdir


def test_provenance_rates_and_decision_times_by_month_type_and_author(hashed: Memdir) -> None:
    root = str(hashed.root)
    ok = succeeding(hashed.root)

    tea = ok("infer", "the user likes tea", "--type", "FACT", now="2026-05-01T09:00:00Z")
    ok("confirm", tea, now="2026-05-01T11:00:00Z")  # 2 h
    rain = ok("infer", "the user hates rain", "--type", "FACT", "--by", "gpt-x",
              now="2026-05-01T10:00:00Z")  # fmt: skip
    ok("reject", rain, "--reason", "not so", now="2026-05-02T10:00:00Z")  # 24 h
    ok("infer", "the user jogs", "--type", "EVENT", "--ttl", "1d", now="2026-05-03T09:00:00Z")
    ok("infer", "the user reads at night", "--ttl", "30d", now="2026-06-01T09:00:00Z")
    walk = ok("infer", "the user walks to work", "--by", "gpt-x", now="2026-06-02T09:00:00Z")
    ok("confirm", walk, now="2026-06-02T15:00:00Z")  # 6 h
    ok("teach", "the user lives in Leeds", now="2026-06-03T09:00:00Z")  # not an inference
    gone = ok("infer", "the user owns a boat", now="2026-06-04T09:00:00Z")
    ok("forget", gone, now="2026-06-04T10:00:00Z")  # forgotten: no longer counted

    done = memdir_main("--dir", root, "stats", "--provenance", "--json", now="2026-06-10T00:00:00Z")
    assert done.code == 0, done
    report = json.loads(done.out)["provenance"]

    def summary(n, confirmed, rejected, expired, pending, median):
        def rate(count: int) -> float:
            return round(count / n, 4)

        return {"inferences": n, "confirmed": confirmed, "rejected": rejected,
                "expired": expired, "pending": pending, "confirmed_rate": rate(confirmed),
                "rejected_rate": rate(rejected), "expired_rate": rate(expired),
                "median_hours_to_decision": median}  # fmt: skip

    # five inferences: tea and walk confirmed, rain rejected, jogs expired, reads pending;
    # decisions after 2, 24 and 6 hours: median 6
    assert report["all"] == summary(5, 2, 1, 1, 1, 6.0)
    assert report["by_month"] == {
        "2026-05": summary(3, 1, 1, 1, 0, 13.0),  # median of 2 and 24
        "2026-06": summary(2, 1, 0, 0, 1, 6.0),
    }
    assert report["by_type"] == {
        "(none)": summary(2, 1, 0, 0, 1, 6.0),
        "FACT": summary(2, 1, 1, 0, 0, 13.0),
        "EVENT": summary(1, 0, 0, 1, 0, None),
    }
    assert report["by_author"] == {
        "assistant": summary(3, 1, 0, 1, 1, 2.0),
        "gpt-x": summary(2, 1, 1, 0, 0, 15.0),  # median of 24 and 6
    }
    plain = memdir_main("--dir", root, "stats", "--provenance", now="2026-06-10T00:00:00Z")
    assert plain.code == 0, plain
    first = plain.out.splitlines()[1].split()
    assert first[:2] == ["all", "5"] and "2" in first and "(40%)" in first
    assert "6 h" in plain.out and "by gpt-x" in plain.out
