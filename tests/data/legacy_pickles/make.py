"""Writes the pickles of tests/test_public_api.py. They were made once, by PyPTO 0.1.0
before its package was split into subpackages (python/pypto/ then held every module side
by side), so that the test proves pickles made by that layout still load. Running this
again writes pickles of the current layout, which is not what the test is for.

    cd tests && python data/legacy_pickles/make.py
"""

import os
import pickle
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
import ml_dtypes  # noqa: E402

import pypto as p  # noqa: E402
from legacy_pickle_fixtures import double_plus_one, triple_kernel  # noqa: E402


def objects():
    seq = p.symbol("seq")
    batch = p.symbol("batch")
    yield "tensor_f32", p.from_numpy(np.arange(12, dtype=np.float32).reshape(3, 4))
    yield "tensor_f16", p.from_numpy(np.linspace(-2, 2, 10, dtype=np.float16))
    yield "tensor_bf16", p.from_numpy(np.array([1.5, -3, 0.25], dtype=ml_dtypes.bfloat16))
    yield "tensor_i8", p.from_numpy(np.array([[-128, 0, 127]], dtype=np.int8))
    yield "tensor_i32", p.from_numpy(np.arange(-3, 3, dtype=np.int32))
    yield "tensor_i64", p.from_numpy(np.array([1 << 40, -5], dtype=np.int64))
    yield "tensor_bool", p.from_numpy(np.array([True, False, True]))
    yield "tensor_nz", p.layout_transform(p.from_numpy(np.arange(20 * 30, dtype=np.float16).reshape(20, 30)), p.NZ)
    yield "tensor_nchw", p.Tensor([1, 2, 3, 4], data=np.arange(24, dtype=np.float32).reshape(1, 2, 3, 4), layout=p.NCHW)
    yield "placeholder", p.Tensor([batch, 4], dtype=p.float16)
    yield "compile_config", p.CompileConfig(opt_level=1, disable_passes=("cse",), memory_pool_bytes=1 << 20, chip="tiny")
    yield "tile_config", p.TileConfig(shape=[64, None], layout=p.ND, format="NZ")
    yield "profile_config", p.ProfileConfig()
    yield "distributed_config", p.DistributedConfig(parallel_strategy="model_parallel", tensor_parallel_size=2)
    yield "mesh", p.distributed.make_mesh((4, 2), ("dp", "tp"))
    yield "dtypes", [p.float32, p.float16, p.bfloat16, p.int8, p.int32, p.int64, p.bool_]
    yield "layouts", [p.ND, p.NZ, p.NCHW, p.NHWC, p.CHWN]
    yield "dim", seq * 2 + 1
    yield "shape_error", p.ShapeError("shapes [2, 3] and [4] do not broadcast")
    yield "executor", p.compile(double_plus_one)
    yield "symbolic_executor", p.compile(double_plus_one, inputs=[p.Tensor([batch, 4])])
    yield "block_kernel", triple_kernel


if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    for name, obj in objects():
        with open(os.path.join(here, name + ".pickle"), "wb") as f:
            pickle.dump(obj, f, protocol=4)
        print("wrote", name)
