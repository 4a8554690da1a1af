"""The encoder's layers in bfloat16 through OpenVINO, for CPUs that multiply bfloat16 natively.

The numpy encoder (embedding.py) spends three quarters of its time in float32 matrix products,
and float32 numpy is capped near 1.85x today's speed by this machine's GEMM peak. On a CPU with
AVX512-BF16 or AMX-BF16 (Intel Xeons since Cooper Lake and Sapphire Rapids, among others),
OpenVINO runs the same layers with bfloat16 products accumulated in float32, compiled into one
graph (GELU, LayerNorm and softmax fused): about 4x the numpy encoder's sentences per second, at
a cosine of 0.99995 or better with its vectors (BENCHMARKS.md, "Embeddings in bfloat16").

It is optional (the `bf16` extra) and only a speed-up: the vectors stay in MiniLM's (or MPNet's)
space, so the model id, and with it every index, is unchanged. ``compiled`` returns None, and
the exact numpy path runs, when OpenVINO is missing, the CPU has no bfloat16 products, or
$MEMDIR_EMBED_BF16 is 0. Compiling takes about a second (importing OpenVINO as long again), so
embedding.py asks for it only for calls of many texts, and once per process and model.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

    from .embedding import _EncoderModel

ENV_SWITCH = "MEMDIR_EMBED_BF16"  # "0" keeps every text on the exact numpy path
_HEAD_COUNT = 12
# (hidden (batch, length, width), key bias broadcastable to (batch, head, length, length))
# -> hidden after every layer
LayerStack = Callable[["np.ndarray", "np.ndarray"], "np.ndarray"]

_COMPILED: dict[str, LayerStack | None] = {}  # by model id
_LOCK = threading.Lock()


def enabled() -> bool:
    """Whether the bfloat16 path may be tried: not switched off, and OpenVINO is installed
    (found without importing it)."""
    if os.environ.get(ENV_SWITCH, "").strip() == "0":
        return False
    try:
        return importlib.util.find_spec("openvino") is not None
    except (ImportError, ValueError):
        return False


def supports_bfloat16(capabilities: list[str]) -> bool:
    """Whether OpenVINO's CPU plugin reports native bfloat16 products (its
    OPTIMIZATION_CAPABILITIES list "BF16" only on CPUs with AVX512-BF16 or AMX-BF16)."""
    return "BF16" in capabilities


def compiled(model: _EncoderModel) -> LayerStack | None:
    """The model's layers compiled for bfloat16 (once per process and model), or None where
    that is not to be had here: the caller then runs its own float32 layers."""
    if not enabled():
        return None
    with _LOCK:
        if model.model_id not in _COMPILED:
            _COMPILED[model.model_id] = _compile(model)
        return _COMPILED[model.model_id]


def import_openvino() -> Any:
    """OpenVINO's runtime without its model converter.

    ``import openvino`` also imports ``openvino.tools.ovc``, and importing that sends a usage
    event to Google Analytics (openvino-telemetry, on unless the user opted out) and writes
    ~/intel/. memdir converts no models and makes no network calls, so the converter's module
    is held unimportable while openvino loads: its __init__ skips the converter on ImportError.
    """
    import sys

    converter = "openvino.tools.ovc"
    held = "openvino" not in sys.modules and converter not in sys.modules
    if held:
        sys.modules[converter] = None  # type: ignore[assignment]  # "import fails", by spec
    try:
        import openvino
    finally:
        if held and sys.modules.get(converter, "") is None:
            del sys.modules[converter]  # a user's own import of the converter still works
    return openvino


def _compile(model: _EncoderModel) -> LayerStack | None:
    try:
        openvino = import_openvino()
    except ImportError:
        return None
    core = openvino.Core()
    if not supports_bfloat16(list(core.get_property("CPU", "OPTIMIZATION_CAPABILITIES"))):
        return None
    # Explicit precision: on ARM the plugin's default is float16, which is not this path.
    config = {"INFERENCE_PRECISION_HINT": "bf16", "PERFORMANCE_HINT": "LATENCY"}
    network = core.compile_model(_graph(model), "CPU", config)
    request = network.create_infer_request()
    lock = threading.Lock()

    def run(hidden: np.ndarray, key_bias: np.ndarray) -> np.ndarray:
        with lock:  # one request: calls from several threads take turns
            output: np.ndarray = request.infer({0: hidden, 1: key_bias})[0]
            return output.copy()  # the request's buffer is reused by the next call

    return run


def _graph(model: _EncoderModel) -> Any:
    """The transformer layers as an OpenVINO model, weights shared with the numpy encoder's
    (the same folded biases and pre-scaled queries, so both compute the same function)."""
    import numpy as np
    import openvino.opset13 as ops

    openvino = import_openvino()

    width = model.width
    head_dim = width // _HEAD_COUNT

    def const(values: Any) -> Any:
        return ops.constant(np.ascontiguousarray(values, dtype=np.float32))

    def ints(*values: int) -> Any:
        return ops.constant(np.array(values, dtype=np.int64))

    def dense(values: Any, weight: np.ndarray, bias: np.ndarray | None = None) -> Any:
        product = ops.matmul(values, const(weight), False, False)
        return product if bias is None else ops.add(product, const(bias))

    def layer_norm(values: Any, weight: np.ndarray, bias: np.ndarray) -> Any:
        normal = ops.mvn(values, ints(-1), True, model.eps, "inside_sqrt")
        return ops.add(ops.multiply(normal, const(weight)), const(bias))

    def heads(values: Any, order: tuple[int, ...]) -> Any:
        split = ops.reshape(values, ints(0, 0, _HEAD_COUNT, head_dim), True)
        return ops.transpose(split, ints(*order))

    hidden = ops.parameter([-1, -1, width], np.float32, name="hidden")
    key_bias = ops.parameter([-1, -1, -1, -1], np.float32, name="key_bias")
    values = hidden
    for layer in model.layers:
        qkv = layer.qkv_weight
        query = heads(dense(values, qkv[:, :width], layer.query_bias), (0, 2, 1, 3))
        key_t = heads(dense(values, qkv[:, width : 2 * width]), (0, 2, 3, 1))
        value = heads(dense(values, qkv[:, 2 * width :]), (0, 2, 1, 3))
        scores = ops.add(ops.matmul(query, key_t, False, False), key_bias)
        context = ops.matmul(ops.softmax(scores, -1), value, False, False)
        context = ops.reshape(ops.transpose(context, ints(0, 2, 1, 3)), ints(0, 0, width), True)
        attended = ops.add(
            dense(context, layer.attention_out_weight, layer.attention_out_bias), values
        )
        attended = layer_norm(attended, layer.attention_norm_weight, layer.attention_norm_bias)
        intermediate = ops.gelu(
            dense(attended, layer.intermediate_weight, layer.intermediate_bias), "erf"
        )
        output = ops.add(dense(intermediate, layer.output_weight, layer.output_bias), attended)
        values = layer_norm(output, layer.output_norm_weight, layer.output_norm_bias)
    return openvino.Model([values], [hidden, key_bias], "encoder")
