"""The public API as it was before the package was split into subpackages: the same
names in ``pypto``, ``pypto.distributed`` and ``pypto.optim`` (tests/data/
public_api_0.1.0.json, written by PyPTO 0.1.0) plus those added on purpose since
(ADDED), and pickles made by that version load (tests/data/legacy_pickles, written by
its make.py)."""

import json
import pathlib
import pickle

import ml_dtypes
import numpy as np
import pytest

import pypto as p

DATA = pathlib.Path(__file__).parent / "data"


def _api():
    return json.loads((DATA / "public_api_0.1.0.json").read_text())


#: Names added since 0.1.0, on purpose (each with what it is).
ADDED = {
    "pypto": {
        "PyptoIOError",  # a file PyPTO was asked to write could not be written
        "load_pto",  # a program exported as PTO-AS (and assembled by ptoas), loaded back
    },
}


@pytest.mark.parametrize("module", ["pypto", "pypto.distributed", "pypto.optim"])
def test_the_public_names_are_those_of_0_1_0(module):
    mod = {"pypto": p, "pypto.distributed": p.distributed, "pypto.optim": p.optim}[module]
    want = set(_api()[module]) | ADDED.get(module, set())
    got = set(mod.__all__)
    assert got - want == set(), f"{module} gained names; add them to ADDED on purpose"
    assert want - got == set(), f"{module} lost names"
    for name in want:
        assert hasattr(mod, name), f"{module}.{name} is listed but missing"


def test_old_module_names_still_import():
    from pypto.errors import ShapeError  # noqa: F401  (0.1.0's pypto/errors.py)
    import pypto.tensor
    import pypto.config

    assert pypto.tensor.Tensor is p.Tensor and pypto.config.CompileConfig is p.CompileConfig
    assert ShapeError is p.ShapeError
    # one module object under both names, which keeps its own spec
    assert pypto.tensor.__spec__.name == p.Tensor.__module__


def _load(name):
    with open(DATA / "legacy_pickles" / f"{name}.pickle", "rb") as f:
        return pickle.load(f)


TENSORS = {
    "tensor_f32": np.arange(12, dtype=np.float32).reshape(3, 4),
    "tensor_f16": np.linspace(-2, 2, 10, dtype=np.float16),
    "tensor_bf16": np.array([1.5, -3, 0.25], dtype=ml_dtypes.bfloat16),
    "tensor_i8": np.array([[-128, 0, 127]], dtype=np.int8),
    "tensor_i32": np.arange(-3, 3, dtype=np.int32),
    "tensor_i64": np.array([1 << 40, -5], dtype=np.int64),
    "tensor_bool": np.array([True, False, True]),
    "tensor_nchw": np.arange(24, dtype=np.float32).reshape(1, 2, 3, 4),
}


@pytest.mark.parametrize("name", sorted(TENSORS))
def test_tensors_pickled_by_0_1_0_load(name):
    t = _load(name)
    want = TENSORS[name]
    assert isinstance(t, p.Tensor) and t.shape == want.shape and t.dtype.name == np.dtype(want.dtype).name
    np.testing.assert_array_equal(t.numpy(), want)


def test_layouts_and_placeholders_pickled_by_0_1_0_load():
    nz = _load("tensor_nz")
    assert nz.layout == p.NZ and nz.nd_shape == (20, 30)
    np.testing.assert_array_equal(p.layout_transform(nz, p.ND).numpy(), np.arange(600, dtype=np.float16).reshape(20, 30))
    assert _load("tensor_nchw").layout == p.NCHW
    ph = _load("placeholder")
    assert ph.shape == (p.symbol("batch"), 4) and ph.dtype == p.float16


def test_configs_and_small_values_pickled_by_0_1_0_load():
    # 0.1.0 pickled its defaults then: the runtime's features off.
    assert _load("compile_config") == p.CompileConfig(opt_level=1, disable_passes=("cse",), memory_pool_bytes=1 << 20, chip="tiny", runtime_features=False)
    assert _load("tile_config") == p.TileConfig(shape=[64, None], layout=p.ND, format="NZ")
    assert _load("profile_config") == p.ProfileConfig()
    assert _load("distributed_config") == p.DistributedConfig(parallel_strategy="model_parallel", tensor_parallel_size=2)
    mesh = _load("mesh")
    assert isinstance(mesh, p.distributed.Mesh) and mesh.shape == (4, 2) and tuple(mesh.axis_names) == ("dp", "tp")
    assert _load("dtypes") == [p.float32, p.float16, p.bfloat16, p.int8, p.int32, p.int64, p.bool_]
    assert _load("layouts") == [p.ND, p.NZ, p.NCHW, p.NHWC, p.CHWN]
    assert _load("dim") == p.symbol("seq") * 2 + 1
    e = _load("shape_error")
    assert isinstance(e, p.ShapeError) and "do not broadcast" in str(e)


def test_executors_and_kernels_pickled_by_0_1_0_load():
    a = np.arange(8, dtype=np.float32).reshape(2, 4)
    for name in ("executor", "symbolic_executor"):
        f = _load(name)
        assert isinstance(f, p.Executor)
        np.testing.assert_array_equal(f.run(a).numpy(), a * 2 + 1)
    from legacy_pickle_fixtures import triple_kernel

    assert _load("block_kernel") is triple_kernel


def test_old_submodules_are_attributes_of_the_package():
    assert p.dtypes.as_dtype("float16") is p.float16
    assert "tile_matmul" in p.tile_ops.__all__
    with __import__("pytest").raises(AttributeError, match="no attribute 'no_such_module'"):
        p.no_such_module


def test_importing_an_old_module_name_keeps_the_function_of_that_name():
    # 0.1.0's pypto/compile.py defined p.compile; importing the old module name (as its
    # pickles do) must not make p.compile the module.
    import pypto.compile  # noqa: F401
    import pypto.tile  # noqa: F401
    import pypto.einsum  # noqa: F401

    assert callable(p.compile) and callable(p.tile) and callable(p.einsum)
    _load("executor")
    assert callable(p.compile)
