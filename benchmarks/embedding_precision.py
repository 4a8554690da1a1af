"""Which lower precision keeps MiniLM's vectors: the encoder's four weight products per layer
in simulated int8 (per-tensor or per-row activations, SmoothQuant, some layers kept in float32),
bfloat16 or float16, against the float32 numpy path, by cosine on the fixture sentences and on
synthetic chat sentences.

Simulated ("fake quantisation"): each product rounds its operands as the kernel would, then
multiplies in float64, so the integer sums are exact; the speed of a variant is not measured
here (bench_embedding.py measures the bfloat16 layers). The encoder is embedding.py's own:
the weights are wrapped in an array type whose ``x @ weight`` rounds first.
Usage: python -m benchmarks.embedding_precision [--sentences 2000]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from collections.abc import Callable
from typing import Any

import numpy as np  # noqa: TID253 (a benchmark may load numpy eagerly)

from benchmarks.bench_embedding import FIXTURES, chat_sentences, minilm_dir
from benchmarks.common import machine, started, table
from memdir.indexers.embedding import MiniLMEmbedder

PRODUCTS = ("qkv_weight", "attention_out_weight", "intermediate_weight", "output_weight")
CALIBRATION_SEED = 7  # the chat sentences SmoothQuant's scales are taken from (not measured)
# (input, weight) -> the product as the simulated kernel computes it
Product = Callable[[np.ndarray, np.ndarray], np.ndarray]


class RoundedWeight(np.ndarray):
    """A weight whose products ``x @ weight`` go through ``product`` (Python asks a right
    operand's subclass first), so embedding.py's encoder runs unchanged."""

    product: Product

    def __rmatmul__(self, values: Any) -> np.ndarray:
        return self.product(np.asarray(values), np.asarray(self)).astype(np.float32)


def with_products(model: Any, choose: Callable[[int, str], Product | None]) -> Any:
    """A copy of the model whose weight products are `choose(layer, name)` (None: float32)."""
    layers = []
    for index, layer in enumerate(model.layers):
        changes = {}
        for name in PRODUCTS:
            product = choose(index, name)
            if product is not None:
                weight = getattr(layer, name).view(RoundedWeight)
                weight.product = product
                changes[name] = weight
        layers.append(dataclasses.replace(layer, **changes))
    return dataclasses.replace(model, layers=tuple(layers))


def embed(model: Any, texts: list[str]) -> np.ndarray:
    """MiniLMEmbedder.embed on this model (its float32 layers)."""
    embedder = MiniLMEmbedder.__new__(MiniLMEmbedder)
    embedder._model, embedder.exact = model, True
    return embedder.embed(texts)


def int8_weight(weight: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric int8 per output channel (column)."""
    scale = np.abs(weight).max(axis=0) / 127.0
    scale[scale == 0] = 1.0
    return np.clip(np.round(weight / scale), -127, 127), scale


def int8_activations(values: np.ndarray, per_row: bool, signed: bool) -> np.ndarray:
    """The activations after quantising (dequantised back): uint8 with a zero point over the
    range including 0 (onnxruntime's DynamicQuantizeLinear when per tensor), or symmetric int8;
    one scale for the whole tensor or one per row (token)."""
    axis = 1 if per_row else None
    if signed:
        scale = np.abs(values).max(axis=axis, keepdims=True) / 127.0
        scale = np.where(scale == 0, 1.0, scale)
        return np.clip(np.round(values / scale), -127, 127) * scale
    low = np.minimum(values.min(axis=axis, keepdims=True), 0.0)
    high = np.maximum(values.max(axis=axis, keepdims=True), 0.0)
    scale = (high - low) / 255.0
    scale = np.where(scale == 0, 1.0, scale)
    zero = np.clip(np.round(-low / scale), 0, 255)
    return (np.clip(np.round(values / scale) + zero, 0, 255) - zero) * scale


def int8_product(
    per_row: bool, signed: bool = False, smooth: np.ndarray | None = None,
    outliers: np.ndarray | None = None,
) -> Product:  # fmt: skip
    """x @ w in int8; `smooth` divides x's input channels and multiplies w's rows (SmoothQuant,
    exact before rounding); `outliers` are input channels multiplied in float instead."""

    def product(values: np.ndarray, weight: np.ndarray) -> np.ndarray:
        values, weight = values.astype(np.float64), weight.astype(np.float64)
        kept = 0.0
        if outliers is not None:
            kept = values[:, outliers] @ weight[outliers]
            values, weight = values.copy(), weight.copy()
            values[:, outliers], weight[outliers] = 0.0, 0.0
        if smooth is not None:
            values, weight = values / smooth, weight * smooth[:, None]
        quantised, scale = int8_weight(weight)
        return (int8_activations(values, per_row, signed) @ quantised) * scale + kept

    return product


def float_product(dtype: Any, weights_only: bool = False) -> Product:
    """x @ w with the operands rounded to `dtype` (float16, or ml_dtypes-free bfloat16 below)
    and summed in float32 or wider."""

    def product(values: np.ndarray, weight: np.ndarray) -> np.ndarray:
        return (values if weights_only else dtype(values)) @ dtype(weight)

    return product


def to_bfloat16(values: np.ndarray) -> np.ndarray:
    """float32 rounded to the nearest bfloat16 (ties to even), kept as float32."""
    bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return bits.astype(np.uint32).view(np.float32)


def to_float16(values: np.ndarray) -> np.ndarray:
    return values.astype(np.float16).astype(np.float32)


def input_ranges(model: Any, texts: list[str]) -> dict[tuple[int, str], np.ndarray]:
    """Each product's largest |input| per input channel over texts (calibration)."""
    ranges: dict[tuple[int, str], np.ndarray] = {}

    def recorder(index: int, name: str) -> Product:
        def product(values: np.ndarray, weight: np.ndarray) -> np.ndarray:
            seen = np.abs(values).max(axis=0)
            ranges[index, name] = np.maximum(ranges.get((index, name), 0.0), seen)
            return values @ weight

        return product

    embed(with_products(model, recorder), texts)
    return ranges


def variants(model: Any, ranges: dict[tuple[int, str], np.ndarray]) -> dict[str, Callable]:
    """Each variant's choice of product per (layer, weight)."""

    def smooth(index: int, name: str, alpha: float) -> np.ndarray:
        weight_range = np.abs(getattr(model.layers[index], name)).max(axis=1)
        activation = np.maximum(ranges[index, name], 1e-5) ** alpha
        return activation / np.maximum(weight_range, 1e-5) ** (1 - alpha)

    def top(index: int, name: str, count: int) -> np.ndarray:
        return np.argsort(-ranges[index, name])[:count]

    ffn_kept = ("qkv_weight", "attention_out_weight", "intermediate_weight")
    return {
        "int8, per-tensor uint8 activations (onnxruntime's stock dynamic)": lambda i, n: (
            int8_product(per_row=False)
        ),
        "int8, per-row uint8": lambda i, n: int8_product(per_row=True),
        "int8, per-row symmetric int8": lambda i, n: int8_product(per_row=True, signed=True),
        "int8, per-row uint8, SmoothQuant α 0.5": lambda i, n: int8_product(
            True, smooth=smooth(i, n, 0.5)
        ),
        "int8, per-row uint8, SmoothQuant α 0.75": lambda i, n: int8_product(
            True, smooth=smooth(i, n, 0.75)
        ),
        "int8, per-row uint8, feed-forward output kept float32": lambda i, n: (
            int8_product(True) if n in ffn_kept else None
        ),
        "int8, per-row uint8, SmoothQuant 0.5, feed-forward output float32": lambda i, n: (
            int8_product(True, smooth=smooth(i, n, 0.5)) if n in ffn_kept else None
        ),
        "int8, per-row uint8, 8 largest input channels float32": lambda i, n: int8_product(
            True, outliers=top(i, n, 8)
        ),
        "int8, per-row uint8, SmoothQuant 0.5 + 8 channels float32": lambda i, n: int8_product(
            True, smooth=smooth(i, n, 0.5), outliers=top(i, n, 8)
        ),
        "bfloat16 operands, float32 sums": lambda i, n: float_product(to_bfloat16),
        "bfloat16 weights only": lambda i, n: float_product(to_bfloat16, weights_only=True),
        "float16 operands, float32 sums": lambda i, n: float_product(to_float16),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sentences", type=int, default=2000)
    args, result = started(parser, "embedding_precision")
    model = MiniLMEmbedder(minilm_dir())._model
    fixture = json.loads((FIXTURES / "minilm_reference.json").read_text())["sentences"]
    sets = {
        "fixture": [entry["text"] for entry in fixture],
        "chat": chat_sentences(args.sentences),
    }
    exact = {name: embed(model, texts) for name, texts in sets.items()}
    ranges = input_ranges(model, chat_sentences(300, seed=CALIBRATION_SEED))
    print(machine())
    rows, figures = [], {}
    for name, choose in variants(model, ranges).items():
        changed = with_products(model, choose)
        cosines = {key: np.sum(embed(changed, texts) * exact[key], axis=1)
                   for key, texts in sets.items()}  # fmt: skip
        figures[name] = {f"{key} {which}": float(getattr(values, which)())
                         for key, values in cosines.items() for which in ("min", "mean")}  # fmt: skip
        rows.append([name] + [f"{cosines[key].min():.5f} / {cosines[key].mean():.6f}"
                              for key in sets])  # fmt: skip
        print(rows[-1], flush=True)
    print()
    print(table(["all 24 weight products in", f"{len(sets['fixture'])} fixture sentences: worst /"
                 f" mean cosine", f"{args.sentences} chat sentences: worst / mean"], rows))  # fmt: skip
    result.save(figures)


if __name__ == "__main__":
    main()
