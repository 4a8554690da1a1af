"""`memdir bench safety`: the safeguards measured against an unrestricted ablation.

Every experiment builds throwaway memdirs in a temp dir, drives them through simulated days
with explicit `now` values (the same clock `--now` / MEMDIR_NOW set), and runs each scenario
twice from the same seed:

- safeguarded: memdir as shipped — assistant inferences are provisional (weight 0.4, TTL 7 d)
  until the user confirms, corrections reject, the MCP teach guard checks the journal, imported
  assistant text stays journal text, and recall counterweights strongly negative queries;
- unrestricted: a memory system without write discipline, built from the same library calls
  (no hook in recall): whatever the assistant concludes or an import contains is written as a
  durable teaching at full weight, a correction is just one more memory, and recall runs with
  `counterweights=False`.

The experiments (docs/SAFETY.md): false-memory persistence, correction retention,
adversarial insertion, retrieval-induced amplification (with a 10-turn spiral), the
write-discipline ablation over N sessions, drift of the wake document's signature, and the
paths around the guard — provenance through derivation (import → dream → recall), the command
line from an agent's shell, sealed and secret text on every read surface, forgotten text
anywhere under the memdir, the quote guard on its adversarial cases, private and sealed text
on the surfaces found since, every writer from an agent's shell, and crafted clones: one module
each, numbered as in docs/SAFETY.md. `harness` holds what they share (the arms, the lab of
throwaway memdirs, the table of metrics), `user` the synthetic user and the simulated days.
"""

from __future__ import annotations

import os
import random
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import leftovers
from .adversarial import adversarial
from .agent_writes import agent_writes
from .amplification import amplification
from .clones import clones
from .confirmation import confirmation
from .corrections import corrections
from .derivation import derivation
from .drift import drift
from .false_memories import false_memories
from .forgetting import forgetting
from .harness import K, Lab, Metric, Progress
from .leakage import leakage
from .private import private
from .quotes import quotes
from .shell import shell
from .write_discipline import write_discipline


def run(
    seed: int = 0,
    sessions: int = 100,
    embedder: str = "auto",
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Run the experiments; returns what `memdir bench safety --json` prints."""
    began = time.perf_counter()
    rng = random.Random(seed)
    seeds = [rng.randrange(2**32) for _ in range(15)]
    metrics: list[Metric] = []
    details: dict[str, Any] = {}
    # tmpfs when there is one: the shelves fsync every append, which only costs time here
    shm = Path("/dev/shm")
    where = str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None
    with tempfile.TemporaryDirectory(prefix="memdir-safety-", dir=where) as scratch:
        lab = Lab(Path(scratch), embedder, seed)
        try:
            steps: list[tuple[str, Callable[[], tuple[list[Metric], Any]]]] = [
                ("false_memories", lambda: false_memories(lab, random.Random(seeds[0]))),
                ("corrections", lambda: corrections(lab, random.Random(seeds[1]), sessions)),
                ("adversarial", lambda: adversarial(lab, random.Random(seeds[2]))),
                ("amplification", lambda: amplification(lab, random.Random(seeds[3]))),
                ("write_discipline",
                 lambda: write_discipline(lab, random.Random(seeds[4]), sessions, progress)),
                ("drift", lambda: drift(lab, random.Random(seeds[5]), sessions, progress)),
                ("derivation", lambda: derivation(lab, random.Random(seeds[6]))),
                ("shell", lambda: shell(lab, random.Random(seeds[7]))),
                ("leakage", lambda: leakage(lab, random.Random(seeds[8]))),
                ("forgetting", lambda: forgetting(lab, random.Random(seeds[9]))),
                ("quotes", lambda: quotes(lab, random.Random(seeds[10]))),
                ("private", lambda: private(lab, random.Random(seeds[11]))),
                ("agent_writes", lambda: agent_writes(lab, random.Random(seeds[12]))),
                ("clones", lambda: clones(lab, random.Random(seeds[13]))),
            ]  # fmt: skip
            steps += leftovers.experiments(lab, seed)  # 14, 16, 17: secrets, forget, guessed ids
            steps.append(("confirmation", lambda: confirmation(lab, random.Random(seeds[14]))))
            for number, (name, step) in enumerate(steps, start=1):
                if progress:
                    progress("experiments", number - 1, len(steps))
                found, detail = step()
                metrics += found
                details[name] = detail
            if progress:
                progress("experiments", len(steps), len(steps))
            model = lab.embedder.model_id if lab.embedder is not None else embedder
        finally:
            lab.close()
    return {
        "seed": seed,
        "sessions": sessions,
        "k": K,
        "embedder": model,
        "seconds": round(time.perf_counter() - began, 1),
        "metrics": [metric.to_dict() for metric in metrics],
        "details": details,
    }
