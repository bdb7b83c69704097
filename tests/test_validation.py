"""Every public function checks its arguments by kind: a bad value raises one of PyPTO's
errors naming the argument, at the caller's line, never a bare TypeError, ValueError or
AttributeError from inside the library, and never a silent loose conversion.

The table below gives each public function a valid call and the kind of each argument;
hypothesis draws bad values of every kind. A public function or argument missing from
the table fails the test, so new API is checked too."""

import atexit
import inspect
import math
import os
import re
import shutil
import tempfile

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import pypto as p
from pypto import _validate as check

X = np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 10  # a valid tensor argument
M = np.ones((4, 4), np.float32)
I = np.array([0, 1], np.int32)

_TILE = "!pto.tile_buf<loc=ub, dtype=f32, rows=32, cols=32, v_row=32, v_col=32, blayout=row_major, slayout=none_box, fractal=512, pad=0>"
_VIEW = "!pto.tile_view<32x32xf32>"
#: A PTO-AS kernel (a 32x32 f32 tile doubled) for p.load_pto's valid call.
_PTO_DIR = tempfile.mkdtemp(prefix="pypto-validation-")
atexit.register(shutil.rmtree, _PTO_DIR, True)
PTO_FILE = os.path.join(_PTO_DIR, "double.pto")
with open(PTO_FILE, "w") as _f:
    _f.write(f"""module {{
  func.func @double(%a: !pto.ptr<f32> {{pypto.elems = 1024 : i64}}, %b: !pto.ptr<f32> {{pypto.elems = 1024 : i64}}) attributes {{pypto.core = "vector"}} {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c32 = arith.constant 32 : index
    %v = pto.make_tensor_view %a, shape = [%c32, %c32] strides = [%c32, %c1] : !pto.tensor_view<2xf32>
    %w = pto.make_tensor_view %b, shape = [%c32, %c32] strides = [%c32, %c1] : !pto.tensor_view<2xf32>
    %sv = pto.subview %v, offsets = [%c0, %c0], sizes = [%c32, %c32] : !pto.tensor_view<2xf32> -> {_VIEW}
    %sw = pto.subview %w, offsets = [%c0, %c0], sizes = [%c32, %c32] : !pto.tensor_view<2xf32> -> {_VIEW}
    %t = pto.alloc_tile : {_TILE}
    pto.tload ins(%sv : {_VIEW}) outs(%t : {_TILE})
    pto.tadd ins(%t, %t : {_TILE}, {_TILE}) outs(%t : {_TILE})
    pto.tstore ins(%t : {_TILE}) outs(%sw : {_VIEW})
    return
  }}
}}
""")

try:  # torch is an optional extra: its functions are checked when it is installed
    import torch as _torch

    _TORCH_X = _torch.zeros(2, 3)
except ImportError:
    _TORCH_X = None
NEEDS_TORCH = {"from_torch", "to_torch"}


def _skip_without_torch(name):
    if name in NEEDS_TORCH and _TORCH_X is None:
        pytest.skip("PyTorch is not installed: pip install 'pypto[torch]'")


def _not_dtype(v):
    return not check.dtype_supported(v)


_text = st.text(max_size=8)
_floats = st.floats(allow_nan=True).filter(lambda f: not float(f).is_integer())
_junk = st.sampled_from([object(), {"a": 1}, {1, 2}, b"xy", 1j])

#: kind -> a strategy of values that are not of that kind (or out of its range).
BAD = {
    "tensor": st.one_of(_text, st.none(), _junk, st.lists(_text, min_size=1, max_size=2)),
    "tensor?": st.one_of(_text, _junk, st.lists(_text, min_size=1, max_size=2)),
    "tensors": st.one_of(_text, st.none(), _junk, st.integers(), st.just([]), st.lists(_text, min_size=1, max_size=2)),
    "flag": st.one_of(_text, st.none(), st.integers(), st.floats(), st.lists(st.booleans(), max_size=2)),
    "flag?": st.one_of(_text, st.integers(), st.floats(), st.lists(st.booleans(), max_size=2)),
    "int": st.one_of(_floats, _text, st.none(), st.booleans(), st.lists(st.integers(), max_size=2), _junk),
    "int?": st.one_of(_floats, _text, st.booleans(), st.lists(st.integers(), max_size=2), _junk),
    "count": st.one_of(_floats, _text, st.none(), st.booleans(), st.integers(max_value=-1)),
    "axis": st.one_of(_floats, _text, st.none(), st.booleans(), st.lists(st.floats(), min_size=1, max_size=2),
                      st.integers(min_value=4), st.integers(max_value=-5)),
    "axis?": st.one_of(_floats, _text, st.booleans(), st.integers(min_value=4), st.integers(max_value=-5)),
    "axes": st.one_of(_floats, _text, st.booleans(), st.lists(_floats, min_size=1, max_size=2),
                      st.lists(_text, min_size=1, max_size=2), st.integers(min_value=4), st.just((0, 0)), _junk),
    "axes!": st.one_of(_floats, _text, st.none(), st.lists(_floats, min_size=1, max_size=2), st.integers(min_value=9)),
    "shape": st.one_of(_floats, _text, st.none(), st.lists(_floats, min_size=1, max_size=3),
                       st.lists(st.integers(max_value=-2), min_size=1, max_size=2), st.lists(_text, min_size=1, max_size=2),
                       st.just([[2, 3]]), _junk),
    "shape?": st.one_of(_floats, _text, st.lists(_floats, min_size=1, max_size=3),
                        st.lists(st.integers(max_value=-2), min_size=1, max_size=2), _junk),
    "dtype": st.one_of(st.sampled_from(["float64", "uint32", "complex64", "nope", np.float64, np.complex64, np.uint16,
                                        object, 3, 2.5, None]), _text.filter(_not_dtype)),
    "dtype?": st.one_of(st.sampled_from(["float64", "uint32", "complex64", "nope", np.float64, np.uint16, object, 3, 2.5]),
                        _text.filter(_not_dtype)),
    "number": st.one_of(_text, st.none(), st.lists(st.floats(), max_size=2), st.just(1j), st.just(math.nan),
                        st.just(math.inf), _junk),
    "number?": st.one_of(_text, st.lists(st.floats(), max_size=2), st.just(1j), st.just(math.nan), _junk),
    "anynumber": st.one_of(_text, st.none(), st.lists(st.floats(), max_size=2), st.just(1j), _junk),
    "layout": st.one_of(_text.filter(lambda s: s.upper() not in ("ND", "NCHW", "NHWC", "CHWN", "NZ")), st.integers(), _junk),
    "choice": st.one_of(_text.filter(lambda s: s not in ("none", "tanh", "vector", "cube", "mixed", "auto", "manual")), st.integers(),
                        st.none()),
    "choice?": st.one_of(_text.filter(lambda s: s not in ("none", "add")), st.integers()),
    "name": st.one_of(st.integers(), st.none(), _junk, st.just(""), st.just("1abc")),
    "name?": st.one_of(st.integers(), _junk, st.just("")),
    "callable": st.one_of(st.integers(), _text, _junk),
    "mesh": st.one_of(st.integers(), _text, st.none(), _junk),
    "specs": st.one_of(st.integers(), _text, _junk, st.lists(st.integers(), min_size=1, max_size=2)),
    "fn": st.one_of(st.integers(), st.none(), _junk),
    "attrs": st.one_of(st.integers(), _text, st.lists(st.integers(), max_size=2)),
    "passes": st.one_of(st.integers(), st.floats(), st.just([1]), st.none()),
    "chip": st.one_of(st.integers(), st.floats(), st.just(["a2"])),
    "pair": st.one_of(_floats, _text, st.none(), st.lists(st.integers(), min_size=3, max_size=3), st.integers(max_value=0), _junk),
    "pair?": st.one_of(_floats, _text, st.lists(st.integers(), min_size=3, max_size=3), st.integers(max_value=0), _junk),
    "pair0": st.one_of(_floats, _text, st.none(), st.lists(st.integers(), min_size=3, max_size=3), st.integers(max_value=-1), _junk),
    "padding": st.one_of(_floats, _text.filter(lambda t: t not in ("same", "valid")), st.none(), st.integers(max_value=-1), _junk),
    "starts": st.one_of(_floats, _text, st.none(), _junk, st.lists(_floats, min_size=1, max_size=2)),
    "indices": st.one_of(_text, st.integers(), st.none(), _junk, st.just(()), st.just(([0.5],))),
    "index": st.one_of(_text, st.integers(), st.none(), _junk, st.just([[0.5]])),
    "src": st.one_of(_text, st.none(), _junk, st.booleans()),
    "names?": st.one_of(st.integers(), st.floats(), st.just([1]), st.just(["a", "a"]), st.just("dp"), _junk),
    "path": st.one_of(st.integers(), st.floats(), st.none(), st.just(""), st.just(["k.pto"]), st.just("no/such.pto")),
    "dir": st.one_of(st.integers(), st.floats(), st.none(), st.just(""), st.just(["out"])),
    "count?": st.one_of(_floats, _text, st.booleans(), st.integers(max_value=0)),
    "data": st.one_of(_text, st.just({"a": 1}), st.just([object()]), st.just(["1.5", "2"])),
    "config?": st.one_of(st.integers(), _text, st.just({"opt_level": 1})),
    "tile_config?": st.one_of(st.integers(), _text, st.just([1.5, 2]), st.just([-3])),
    "array": st.one_of(st.none(), _text, st.just({"a": 1}), st.just([object()]), st.just(np.zeros(2))),
    "value": st.one_of(st.none(), _text, st.just({"a": 1}), st.just([object()])),
    "pad_width": st.one_of(_text, st.none(), _floats, st.just([1.5, 2]), st.just([[1, 2, 3]]), st.just(-1)),
    "sections": st.one_of(_text, st.none(), _floats, st.just([1.5]), st.just(["a"])),
    "tile_shape": st.one_of(_text, _floats, st.just([1.5, 2, 2]), st.just(["a", 1, 1]), st.just([0, 1, 1])),
    "index": st.one_of(_text, _floats, st.just({"a": 1}), st.just([1.5]), st.just(object())),
    "inputs?": st.one_of(st.integers(), _text, st.just([3]), st.just(np.zeros(2, np.float32))),
    "subscripts": st.one_of(st.integers(), st.none(), _junk, st.sampled_from(["ij,jk->ik", "iii->i", "i->", "ij", "ij1", "ijk->l"])),
    "pool?": st.one_of(st.integers(), _text, st.just({"size": 1})),
    "kernel": st.one_of(st.integers(), st.none(), _text.filter(lambda s: s not in p.registered_kernels())),
    "argnums": st.one_of(_floats, _text, st.none(), st.booleans(), st.just([]), st.just([1.5]), _junk),
    "donate": st.one_of(_floats, _text, st.none(), st.booleans(), st.just([-1]), st.just([1.5]), st.just([True]), _junk),
}  # fmt: skip


def unary(x=X):
    return {"x": x}, {"x": "tensor"}


def binary():
    return {"a": X, "b": X}, {"a": "tensor", "b": "tensor"}


def reduction(**extra):
    return {"x": X, "axis": 1, "keepdims": False, **{k: v[0] for k, v in extra.items()}}, {
        "x": "tensor", "axis": "axes", "keepdims": "flag", **{k: v[1] for k, v in extra.items()}
    }  # fmt: skip


def _profiled():
    ex = p.compile(lambda a: a + 1.0, p.CompileConfig(chip="tiny"))
    ex.run(np.ones((4, 4), np.float32), profile=True)
    return ex.get_profile_result()


_PROFILE = _profiled()


@p.block_kernel(out_shape=(16, 16))
def _kern(x, y):
    p.store(y, p.load(x))


p.register_kernel("validation_copy", _kern)

_UNARY = "abs ceil cos erf exp floor isfinite isnan log logical_not neg negative reciprocal relu rsqrt sigmoid silu sin sqrt tanh"
_UNARY += " erfc exp2 expm1 log1p log2 log10 trunc fix sign isinf isposinf isneginf"
_BINARY = (
    "add sub subtract mul multiply div divide true_divide floor_divide mod remainder pow power maximum minimum equal "
    "not_equal less less_equal greater greater_equal logical_and logical_or logical_xor"
    " logaddexp hypot atan2 arctan2"
)
_REDUCE = "sum prod max min amax amin mean reduce_sum reduce_prod reduce_max reduce_min reduce_mean"
_NO_ARGS = (
    "block_idx subblock_idx is_cube get_device last_stats cache_info clear_cache registered_kernels lowered_ops composite_ops"
    " last_fallbacks differentiable_ops"
)

#: name -> (valid keyword arguments, argument kinds). A name of the message may differ
#: from the parameter's: kind "k@name".
TABLE = {
    **{n: unary() for n in _UNARY.split()},
    **{n: binary() for n in _BINARY.split()},
    **{n: reduction() for n in _REDUCE.split()},
    **{n: reduction(ddof=(0, "number")) for n in ("var", "std", "reduce_var", "reduce_std")},
    "argmax": ({"x": X, "axis": 1}, {"x": "tensor", "axis": "axis?", "keepdims": "flag"}),
    "argmin": ({"x": X, "axis": 1}, {"x": "tensor", "axis": "axis?", "keepdims": "flag"}),
    "sort": ({"x": X}, {"x": "tensor", "axis": "axis", "descending": "flag"}),
    "argsort": ({"x": X}, {"x": "tensor", "axis": "axis", "descending": "flag"}),
    "cumsum": ({"x": X}, {"x": "tensor", "axis": "axis?"}),
    "softmax": ({"x": X}, {"x": "tensor", "axis": "axis", "dim": "axis?"}),
    "log_softmax": ({"x": X}, {"x": "tensor", "axis": "axis", "dim": "axis?"}),
    "topk": ({"x": X, "k": 2}, {"x": "tensor", "k": "count", "dim": "axis", "largest": "flag", "sorted": "flag"}),
    "astype": ({"x": X, "dtype": p.float16}, {"x": "tensor", "dtype": "dtype"}),
    "cast": ({"x": X, "dtype": p.float16}, {"x": "tensor", "dtype": "dtype"}),
    "round": ({"x": X}, {"x": "tensor", "decimals": "int"}),
    "nonzero": ({"x": X}, {"x": "tensor"}),
    "dropout": ({"x": X, "p": 0.5, "seed": 1}, {"x": "tensor", "p": "number", "training": "flag", "seed": "int?"}),
    "masked_select": ({"x": X, "mask": X > 1}, {"x": "tensor", "mask": "tensor"}),
    "masked_fill": ({"x": X, "mask": X > 1, "value": 0}, {"x": "tensor", "mask": "tensor", "value": "anynumber"}),
    "einsum": ({"subscripts": "ijk->kji", "operands": X}, {"subscripts": "subscripts", "operands": "tensor@operand 0"}),
    "gelu": ({"x": X}, {"x": "tensor", "approximate": "choice"}),
    "clip": ({"x": X, "min": 0, "max": 1}, {"x": "tensor", "min": "tensor?", "max": "tensor?"}),
    "clamp": ({"x": X, "min": 0, "max": 1}, {"x": "tensor", "min": "tensor?", "max": "tensor?"}),
    "where": ({"cond": X > 1, "a": X, "b": X}, {"cond": "tensor", "a": "tensor", "b": "tensor"}),
    "matmul": ({"a": M, "b": M}, {"a": "tensor", "b": "tensor", "transpose_a": "flag", "transpose_b": "flag",
                                  "tile_config": "tile_config?"}),
    "linear": ({"x": M, "weight": M}, {"x": "tensor", "weight": "tensor", "bias": "tensor?", "out_features": "int?",
                                       "dtype": "dtype?"}),
    "layer_norm": ({"x": X}, {"x": "tensor", "normalized_shape": "shape?", "weight": "tensor?", "bias": "tensor?",
                              "eps": "number", "axis": "axes!"}),
    "rms_norm": ({"x": X}, {"x": "tensor", "normalized_shape": "shape?", "weight": "tensor?", "eps": "number",
                            "axis": "axes!"}),
    "scaled_dot_product_attention": (
        {"query": X, "key": X, "value": X},
        {"query": "tensor", "key": "tensor", "value": "tensor", "attn_mask": "tensor?", "dropout_p": "number",
         "is_causal": "flag", "scale": "number?", "mask": "tensor?"},
    ),
    # shapes
    "reshape": ({"x": X, "shape": [6, 4]}, {"x": "tensor", "shape": "shape"}),
    "broadcast_to": ({"x": X, "shape": [2, 2, 3, 4]}, {"x": "tensor", "shape": "shape"}),
    "expand": ({"x": X, "sizes": [2, 3, 4]}, {"x": "tensor", "sizes": "shape"}),
    "transpose": ({"x": X, "axes": [2, 1, 0]}, {"x": "tensor", "axes": "axes"}),
    "permute": ({"x": X, "dims": [2, 1, 0]}, {"x": "tensor", "dims": "axes"}),
    "squeeze": ({"x": X}, {"x": "tensor", "axis": "axes"}),
    "unsqueeze": ({"x": X, "axis": 0}, {"x": "tensor", "axis": "axes!"}),
    "expand_dims": ({"x": X, "axis": 0}, {"x": "tensor", "axis": "axes!"}),
    "flatten": ({"x": X}, {"x": "tensor", "start_dim": "axis", "end_dim": "axis"}),
    "concat": ({"tensors": [X, X]}, {"tensors": "tensors", "axis": "axis"}),
    "concatenate": ({"tensors": [X, X]}, {"tensors": "tensors", "axis": "axis"}),
    "cat": ({"tensors": [X, X]}, {"tensors": "tensors", "axis": "axis"}),
    "stack": ({"tensors": [X, X]}, {"tensors": "tensors", "axis": "axis"}),
    "unstack": ({"x": X}, {"x": "tensor", "axis": "axis"}),
    "split": ({"x": X, "indices_or_sections": 2}, {"x": "tensor", "indices_or_sections": "sections", "axis": "axis"}),
    "pad": ({"x": X, "pad_width": 1}, {"x": "tensor", "pad_width": "pad_width", "constant_values": "anynumber"}),
    "getitem": ({"x": X, "key": 0}, {"x": "tensor", "key": "index@index"}),
    "take_along_axis": ({"x": X, "indices": np.zeros((2, 3, 4), np.int32), "axis": 1},
                        {"x": "tensor", "indices": "tensor", "axis": "axis"}),
    "gather": ({"x": X, "dim": 1, "index": np.zeros((2, 3, 4), np.int32)}, {"x": "tensor", "dim": "axis", "index": "tensor"}),
    "index_select": ({"x": X, "axis": 1, "index": I}, {"x": "tensor", "axis": "axis", "index": "tensor"}),
    "take": ({"x": X, "indices": I}, {"x": "tensor", "indices": "tensor", "axis": "axis?"}),
    "layout_transform": ({"x": X, "target_layout": p.ND}, {"x": "tensor", "target_layout": "layout"}),
    # creation
    "zeros": ({"shape": [2, 3]}, {"shape": "shape", "dtype": "dtype?"}),
    "empty": ({"shape": [2, 3]}, {"shape": "shape", "dtype": "dtype?"}),
    "ones": ({"shape": [2, 3]}, {"shape": "shape", "dtype": "dtype?"}),
    "randn": ({"shape": [2, 3]}, {"shape": "shape", "dtype": "dtype?"}),
    "rand": ({"shape": [2, 3]}, {"shape": "shape", "dtype": "dtype?"}),
    "full": ({"shape": [2, 3], "fill_value": 1.5}, {"shape": "shape", "fill_value": "anynumber", "dtype": "dtype?"}),
    "zeros_like": ({"x": X}, {"x": "tensor", "dtype": "dtype?"}),
    "ones_like": ({"x": X}, {"x": "tensor", "dtype": "dtype?"}),
    "full_like": ({"x": X, "fill_value": 2}, {"x": "tensor", "fill_value": "anynumber", "dtype": "dtype?"}),
    "constant": ({"value": [1, 2]}, {"value": "value", "dtype": "dtype?"}),
    "arange": ({"start": 0, "stop": 4}, {"start": "anynumber", "stop": "number?", "step": "anynumber", "dtype": "dtype?"}),
    "eye": ({"n": 3}, {"n": "count", "m": "int?", "k": "int", "dtype": "dtype?"}),
    "manual_seed": ({"seed": 1}, {"seed": "count"}),
    "randint": ({"low": 0, "high": 5, "size": [3]}, {"low": "int", "high": "int?", "size": "shape", "dtype": "dtype?"}),
    "from_numpy": ({"arr": X}, {"arr": "array"}),
    "from_dlpack": ({"x": X}, {"x": "tensor", "copy": "flag?"}),
    "from_torch": ({"obj": _TORCH_X}, {"obj": "tensor", "copy": "flag?", "config": "config?", "dynamic": "flag?"}),
    "to_torch": ({"x": X}, {"x": "tensor"}),
    "external_memory": ({}, {"collect": "flag"}),
    "promote_types": ({"a": p.float16, "b": p.int8}, {"a": "dtype", "b": "dtype"}),
    # tiles, compile, devices, kernels
    "tile": ({"x": M, "tile_shape": [2, 2]}, {"x": "tensor", "tile_shape": "tile_shape", "config": "tile_config?"}),
    "tile_concat": ({"tiles": [X, X]}, {"tiles": "tensors", "axis": "axis"}),
    "compile": ({"fn": p.exp}, {"fn": "callable", "config": "config?", "inputs": "inputs?", "dynamic": "flag?",
                                "profile_config": "config?", "memory_pool": "pool?", "donate_argnums": "donate"}),
    "Graph": ({"model": p.exp}, {"model": "callable", "inputs": "inputs?"}),
    "MemoryPool": ({"size": 1 << 20}, {"size": "count"}),
    "compare_profiles": ({"a": _PROFILE, "b": _PROFILE}, {"a": "fn", "b": "fn"}),
    "conv2d": ({"x": np.ones((1, 2, 5, 5), np.float32), "weight": np.ones((3, 2, 3, 3), np.float32)},
               {"x": "tensor", "weight": "tensor", "bias": "tensor?", "stride": "pair", "padding": "padding", "dilation": "pair",
                "groups": "count", "tile_config": "tile_config?"}),
    "conv_transpose2d": ({"x": np.ones((1, 2, 5, 5), np.float32), "weight": np.ones((2, 3, 3, 3), np.float32)},
                         {"x": "tensor", "weight": "tensor", "bias": "tensor?", "stride": "pair", "padding": "pair0",
                          "output_padding": "pair0", "groups": "count", "dilation": "pair"}),
    "max_pool2d": ({"x": np.ones((1, 2, 5, 5), np.float32), "kernel_size": 2},
                   {"x": "tensor", "kernel_size": "pair", "stride": "pair?", "padding": "pair0", "dilation": "pair", "ceil_mode": "flag"}),
    "avg_pool2d": ({"x": np.ones((1, 2, 5, 5), np.float32), "kernel_size": 2},
                   {"x": "tensor", "kernel_size": "pair", "stride": "pair?", "padding": "pair0", "ceil_mode": "flag",
                    "count_include_pad": "flag"}),
    "adaptive_avg_pool2d": ({"x": np.ones((1, 2, 5, 5), np.float32), "output_size": 2}, {"x": "tensor", "output_size": "pair"}),
    "batch_norm": ({"x": np.ones((2, 3, 4), np.float32), "running_mean": np.zeros(3, np.float32), "running_var": np.ones(3, np.float32)},
                   {"x": "tensor", "running_mean": "tensor", "running_var": "tensor", "weight": "tensor?", "bias": "tensor?",
                    "eps": "number"}),
    "slice_update": ({"x": M, "update": np.ones((2, 2), np.float32), "starts": [1, 1]},
                     {"x": "tensor", "update": "tensor", "starts": "starts", "axes": "axes"}),
    "index_put": ({"x": M, "indices": (np.array([0, 1]),), "values": np.ones((2, 4), np.float32)},
                  {"x": "tensor", "indices": "indices", "values": "tensor", "accumulate": "flag"}),
    "scatter": ({"x": M, "dim": 0, "index": np.array([[0, 1, 2, 3]]), "src": np.ones((1, 4), np.float32)},
                {"x": "tensor", "dim": "axis", "index": "index", "src": "src", "reduce": "choice?"}),
    "shard_map": ({"fn": p.exp, "mesh": p.distributed.Mesh((2,)), "in_specs": None, "out_specs": None},
                  {"fn": "callable", "mesh": "mesh", "in_specs": "specs", "out_specs": "specs", "backend": "choice",
                   "workers": "count?"}),
    "set_progress": ({}, {"enabled": "flag", "delay": "number"}),
    "grad": ({"fn": p.exp}, {"fn": "callable", "argnums": "argnums"}),
    "value_and_grad": ({"fn": p.exp}, {"fn": "callable", "argnums": "argnums"}),
    "realize_all": ({"tensors": [p.from_numpy(X)]}, {"tensors": "tensors"}),
    "recommend_tile": ({"op_or_fn": "add", "inputs": [X, X], "config": p.CompileConfig(chip="tiny")},
                       {"op_or_fn": "fn", "inputs": "inputs?", "attrs": "attrs", "config": "config?", "measure": "flag"}),
    "set_device": ({"name": "reference"}, {"name": "name"}),
    "load_pto": ({"path": PTO_FILE}, {"path": "path", "form": "choice", "device": "chip", "blocks": "count?"}),
    "symbol": ({"name": "n"}, {"name": "name"}),
    "range": ({"start": 4}, {"start": "int", "stop": "int?", "step": "int"}),
    "block_kernel": ({"fn": _kern.fn, "out_shape": (16, 16)},
                     {"fn": "callable", "grid": "count", "core": "choice", "vectors": "count", "out_shape": "shape?",
                      "out_dtype": "dtype?", "output_layout": "layout", "name": "name?"}),
    "register_kernel": ({"name": "validation_copy", "kernel": _kern}, {"name": "name?", "kernel": "kernel"}),
    "call_kernel": ({"kernel": "validation_copy", "tensors": [np.zeros((16, 16), np.float32)]},
                    {"kernel": "kernel", "tensors": "tensor@input 0", "out_shapes": "shape?", "out_dtypes": "dtype?"}),
    # constructors
    "Tensor": ({"shape": [2, 3]}, {"shape": "shape", "dtype": "dtype?", "data": "data", "layout": "layout",
                                   "requires_grad": "flag"}),
    "TileConfig": ({"shape": [16, 16]}, {"shape": "tile_shape", "layout": "layout", "format": "layout"}),
    "CompileConfig": ({}, {"opt_level": "count", "disable_passes": "passes", "memory_pool_bytes": "count?", "chip": "chip",
                       "deterministic": "flag", "max_steps": "count?", "max_cores": "count?", "per_size_programs": "flag", "concurrent_tasks": "flag?",
                       "overlap_launch": "flag?", "prefetch_l2": "flag?", "balance_blocks": "flag?", "early_start": "flag?",
                       "runtime_features": "flag", "enable_visualization": "flag", "visualization_dir": "dir"}),
    "ProfileConfig": ({}, {"enable_profiling": "flag", "profile_output_dir": "name?", "profile_metrics": "passes"}),
    "DistributedConfig": ({"device_mesh": [2]}, {"parallel_strategy": "choice", "device_mesh": "shape?", "tensor_parallel_size": "count?",
                          "pipeline_parallel_size": "count?", "data_parallel_size": "count?", "mesh_axis_names": "names?",
                          "num_microbatches": "count", "schedule": "choice", "preset": "chip", "backend": "choice",
                          "workers": "count?", "virtual_stages": "count", "bucket_cap_mb": "number",
                          "gradient_accumulation_steps": "count", "overlap_p2p_launch": "flag"}),
}  # fmt: skip

#: Functions only usable inside a kernel being traced (test_kernel_only_arguments).
KERNEL_ONLY = {"load", "store", "push", "pop"}
#: Public callables that are not functions with arguments to check.
NOT_FUNCTIONS = {"Dim", "Layout", "DType", "TopK", "Tile", "TileGrid", "TileChoice", "BlockKernel", "Executor", "DistributedExecutor",
                 "ErrorInfo", "Location", "ProfileResult", "Visualization", "RunReport", "GraphNode", "GraphEdge"} | set(_NO_ARGS.split())  # fmt: skip


def _public():
    out = {}
    for name in p.__all__:
        obj = getattr(p, name)
        if isinstance(obj, type) and issubclass(obj, BaseException):
            continue
        if callable(obj) and name not in NOT_FUNCTIONS and name not in KERNEL_ONLY:
            out[name] = obj
    return out


def _params(name, fn):
    """The checked parameters of fn: tile ops add tile_config to their tensor op's."""
    if name.startswith("tile_") and name in p.tile_ops.__all__:
        base = p.tile_ops._FAMILIES[name][0]
        return [*inspect.signature(base).parameters, "tile_config"]
    return list(inspect.signature(fn).parameters)


def _entry(name):
    if name.startswith("tile_") and name in p.tile_ops.__all__:
        args, kinds = TABLE[p.tile_ops._FAMILIES[name][0].__name__]
        return args, {**kinds, "tile_config": "tile_config?"}
    return TABLE[name]


def test_every_public_function_and_argument_is_in_the_table():
    missing = []
    for name, fn in _public().items():
        if name not in TABLE and not (name.startswith("tile_") and name in p.tile_ops.__all__):
            missing.append(name)
            continue
        kinds = _entry(name)[1]
        missing += [f"{name}({a})" for a in _params(name, fn) if a not in kinds]
    assert not missing, f"add these to TABLE with their kinds: {missing}"


def _call(name, fn, args):
    """fn called with args: positionally up to and including a *args parameter (of the
    tensor op, for a tile op), by keyword after."""
    sig_fn = p.tile_ops._FAMILIES[name][0] if name in p.tile_ops.__all__ else fn
    params = list(inspect.signature(sig_fn).parameters.values())
    var = next((i for i, q in enumerate(params) if q.kind == q.VAR_POSITIONAL), None)
    pos, kw = [], {}
    for i, q in enumerate(params):
        if q.name not in args:
            continue
        v = args[q.name]
        if var is not None and i < var:
            pos.append(v)
        elif i == var:
            pos.extend(v) if name == "call_kernel" else pos.append(v)
        else:
            kw[q.name] = v
    kw.update({k: v for k, v in args.items() if k not in [q.name for q in params]})  # tile_config
    return fn(*pos, **kw)


def _cases():
    for name, fn in sorted(_public().items()):
        if name not in TABLE and not name.startswith("tile_"):
            continue
        args, kinds = _entry(name)
        for param in _params(name, fn):
            if param in kinds:
                yield pytest.param(name, param, id=f"{name}-{param}")


@pytest.mark.parametrize("name", sorted(n for n in _public() if n in TABLE or n.startswith("tile_")))
def test_the_valid_call_works(name):
    _skip_without_torch(name)
    fn = getattr(p, name)
    args = dict(_entry(name)[0])
    prev = p.get_device()
    try:
        _call(name, fn, args)
    finally:
        p.set_device(prev)


@pytest.mark.parametrize("name,param", list(_cases()))
@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(data=st.data())
def test_bad_values_raise_pypto_errors_naming_the_argument(name, param, data):
    _skip_without_torch(name)
    fn = getattr(p, name)
    args, kinds = _entry(name)
    kind = kinds[param]
    kind, _, label = kind.partition("@")
    label = label or param
    bad = data.draw(BAD[kind], label=f"{name}({param}=...)")
    call = dict(args)
    call[param] = [bad] if name == "call_kernel" and param == "tensors" else bad
    prev = p.get_device()
    try:
        with pytest.raises(p.PyptoError) as e:
            _call(name, fn, call)
    finally:
        p.set_device(prev)
    info = e.value.get_detailed_info()
    msg = info.message
    assert re.search(rf"(^|[\s:(\[]){re.escape(label)}([\s:)\[\]]|$)", msg), f"{name}({param}={bad!r}): {msg}"
    assert info.location is not None and info.location.file == __file__, (msg, info.location)


def test_the_examples_of_loose_conversion():
    a = p.from_numpy(M)
    x = p.from_numpy(X)
    for fn, name in [
        (lambda: p.matmul(a, a, transpose_a="no"), "transpose_a"),
        (lambda: p.topk(x, 2.7), "k"),
        (lambda: p.sum(x, axis="12"), "axis"),
        (lambda: p.sum(x, axis=1.5), "axis"),
        (lambda: p.reshape(x, "2,3"), "shape"),
        (lambda: x.reshape("2,3"), "shape"),
        (lambda: x.sum(keepdims="yes"), "keepdims"),
        (lambda: p.softmax(x, axis=None), "axis"),
        (lambda: p.zeros([2, 3], dtype="float64"), "dtype"),
        (lambda: p.compile(p.exp).run("abc"), "input 0"),
        (lambda: p.compile(p.exp).run(np.zeros(2), np.zeros(2)), "input 0"),
        (lambda: p.Tensor([2], data="1.5"), "data"),
        (lambda: x[::0], "index"),
        (lambda: p.compile(lambda t: t + 1).run(), "input"),
        (lambda: p.compile(lambda t: t + 1).run(X, X), "input"),
        (lambda: p.compile(lambda t: t + 1, inputs=[p.Tensor([2, 3, 4])]).run(X, X), "inputs"),
        (lambda: x.item(), "item"),
    ]:
        with pytest.raises(p.PyptoError, match=rf"\b{name}\b") as e:
            fn()
        assert not isinstance(e.value, AttributeError) and e.value.get_detailed_info().location.file == __file__
    with pytest.raises(p.PyptoTypeError, match=r"transpose_a must be True or False, got 'no' \(str\)"):
        p.matmul(a, a, transpose_a="no")
    with pytest.raises(p.PyptoTypeError, match=r"axis must be an int, a tuple of ints or None, got '12' \(str\)"):
        p.sum(x, axis="12")
    # what stays accepted: numpy ints and bools, p.constant sizes, tuples of axes
    np.testing.assert_allclose(p.sum(x, axis=(np.int64(1), 2), keepdims=np.bool_(True)).numpy(), X.sum((1, 2), keepdims=True), rtol=1e-6)
    assert p.reshape(x, [p.constant(6), -1]).shape == (6, 4)
    assert p.topk(x, np.int32(2)).values.shape == (2, 3, 2)


def test_kernel_only_arguments():
    seen = []

    @p.block_kernel(core="mixed", out_shape=(16, 16))
    def k(x, y):
        for fn, name in [
            (lambda: p.load("x"), "view"),
            (lambda: p.store(y, "t"), "tile"),
            (lambda: p.store("y", p.load(x)), "view"),
            (lambda: p.pop([16, 16], p.float32, queue="a"), "queue"),
            (lambda: p.pop([16, -16], p.float32), "shape"),
            (lambda: p.pop([16, 16], "float64"), "dtype"),
            (lambda: p.push(p.load(x), queue=1.5), "queue"),
            (lambda: p.push("t"), "tile"),
            (lambda: p.zeros([16, "a"]), "shape"),
        ]:
            with pytest.raises(p.PyptoError, match=rf"\b{name}\b") as e:
                fn()
            seen.append(e.value.get_detailed_info().location.file == __file__)
        p.store(y, p.load(x)) if not p.is_cube() else None

    p.call_kernel(k, np.zeros((16, 16), np.float32))
    assert seen and all(seen)
