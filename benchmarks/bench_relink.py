"""Links sleep's relink writes per 1,000 memories, on two synthetic archives (no benchmark
data): 40 near-identical neutral fillers ("filler memory about gardening N"), and N varied
memories from templates with and without feeling. One sleep each, with the real embedder.

    .venv/bin/python benchmarks/bench_relink.py [N]
"""

from __future__ import annotations

import random
import sys
import tempfile
from collections import Counter
from datetime import datetime, timedelta, timezone
from pathlib import Path

from memdir.archive_format import lifecycle
from memdir.archive_format.memdir import init
from memdir.cli.usecases.sleep import sleep

T0 = datetime(2026, 5, 1, 9, 0, tzinfo=timezone.utc)
TOPICS = ["gardening", "the dentist", "my sister", "running", "the new job", "cooking pasta",
          "the trip to Lisbon", "our cat", "the bank loan", "learning Spanish"]  # fmt: skip
FRAMES = ["I love {t}", "I hate {t}", "I'm so worried about {t}", "Some notes on {t}",
          "I am thrilled about {t}!", "I do not like {t}", "{t} went fine today",
          "Thinking about {t} again", "I'm furious about {t}", "A quiet afternoon with {t}"]  # fmt: skip


def run(texts: list[str]) -> tuple[int, Counter[str]]:
    with tempfile.TemporaryDirectory() as folder:
        memdir, _ = init(Path(folder) / "memory", T0)
        for number, text in enumerate(texts):
            lifecycle.teach(memdir, text, T0 + timedelta(seconds=number))
        report = sleep(memdir, T0 + timedelta(days=1), dry_run=True)
        return len(report.links), Counter(link["type"] for link in report.links)


if __name__ == "__main__":
    size = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    fillers = [f"filler memory about gardening {n}" for n in range(40)]
    rng = random.Random(7)
    varied = [rng.choice(FRAMES).format(t=rng.choice(TOPICS)) + f" ({n})" for n in range(size)]
    for name, texts in (("40 fillers", fillers), (f"{size} varied", varied)):
        links, kinds = run(texts)
        print(
            f"{name:<14} {links:>6} links  {1000 * links / len(texts):>7.1f} per 1,000  {dict(kinds)}"
        )
