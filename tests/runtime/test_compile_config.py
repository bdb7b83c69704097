"""p.CompileConfig: optimisation levels, disabled passes, the memory pool, the chip."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pypto as p
from conftest import rand


def _block(x, w):
    y = p.relu(x @ w) * 1.0
    return p.exp(y - p.max(y, axis=-1, keepdims=True)) + p.sum(x, axis=-1, keepdims=True)


@pytest.mark.parametrize("chip", ["tiny", "a2"])
def test_every_level_gives_the_same_values(chip):
    x, w = rand((24, 40), p.float32, 1), rand((40, 24), p.float32, 2)
    outs, tasks = [], []
    for level in (0, 1, 2, 3):
        f = p.compile(_block, p.CompileConfig(opt_level=level, chip=chip))
        outs.append(f.run(x, w).numpy())
        tasks.append(f.stats()["tasks"])
        assert f.info()["opt_level"] == level and f.info()["device"] == chip
    for o in outs[1:]:
        np.testing.assert_array_equal(o, outs[0])
    assert tasks[0] > tasks[2], f"fusion at O2 runs fewer kernels than O0: {tasks}"


def test_disable_passes():
    x = rand((16, 64), p.float32, 3)
    base = p.compile(lambda a: p.relu(p.exp(a) + 1.0)).run(x)
    f = p.compile(lambda a: p.relu(p.exp(a) + 1.0), p.CompileConfig(disable_passes=("fuse-elementwise",)))
    np.testing.assert_array_equal(f.run(x).numpy(), base.numpy())
    assert f.stats()["tasks"] == 3 and f.info()["disable_passes"] == ["fuse-elementwise"]


def test_bad_options_raise_with_the_choices():
    with pytest.raises(p.PyptoValueError, match="no pass of that name") as e:
        p.compile(lambda a: a + a, p.CompileConfig(disable_passes=("fusion",)))
    assert "fuse-elementwise" in str(e.value)
    with pytest.raises(p.PyptoValueError, match="needs it to produce a program"):
        p.compile(lambda a: a + a, p.CompileConfig(disable_passes=("tile",)))
    with pytest.raises(p.PyptoValueError, match="unknown device"):
        p.compile(lambda a: a + a, p.CompileConfig(chip="a9"))
    for bad in (4, -1, 2.0, True, "2"):
        with pytest.raises(ValueError, match="opt_level"):
            p.CompileConfig(opt_level=bad)
    for bad in (0, -5, 1.5):
        with pytest.raises(ValueError, match="memory_pool_bytes"):
            p.CompileConfig(memory_pool_bytes=bad)
    with pytest.raises(TypeError, match="enable_typo"):
        p.CompileConfig(enable_typo=True)
    with pytest.raises(TypeError, match="CompileConfig"):
        p.compile(lambda a: a, {"opt_level": 1})


def test_memory_plan_is_reported_and_the_pool_enforced():
    def chain(a):
        return p.exp(p.exp(p.exp(a)))

    x = np.ones((64, 64), np.float32)  # 16 KiB
    f = p.compile(chain, p.CompileConfig(opt_level=0, chip="tiny"))
    f.run(x)
    m = f.info()["memory"]
    assert m == {
        "input_bytes": 16384,
        "constant_bytes": 0,
        "output_bytes": 16384,
        "workspace_bytes": 32768,
        "workspace_no_reuse_bytes": 32768,
        "prepared_bytes": 0,
        "peak_bytes": 65536,
    }
    assert f.stats()["memory"] == m
    assert "peak 65536 bytes" in f.dump()

    ok = p.compile(chain, p.CompileConfig(opt_level=0, chip="tiny", memory_pool_bytes=65536))
    ok.run(x)
    small = p.compile(chain, p.CompileConfig(opt_level=0, chip="tiny", memory_pool_bytes=40000))
    with pytest.raises(p.CompileError, match="needs 65536 bytes of device memory, but the memory pool holds 40000") as e:
        small.run(x)
    info = e.value.get_detailed_info()
    assert any("at least 65536" in s for s in info.suggestions)
    assert info.location is not None and info.location.line > 0
    fused = p.compile(chain, p.CompileConfig(chip="tiny", memory_pool_bytes=40000))
    np.testing.assert_array_equal(fused.run(x).numpy(), ok.run(x).numpy())
    assert fused.info()["memory"]["workspace_bytes"] == 0


def test_the_compile_cache_tells_configs_apart():
    shape = (3, 29)  # a shape no other test uses
    x = rand(shape, p.float32, 4)
    before = p.cache_info()["compiles"]
    for level in (0, 2, 0, 2):
        p.compile(lambda a: p.relu(a) + 1.0, p.CompileConfig(opt_level=level), inputs=[p.Tensor(shape, dtype=p.float32)]).run(x)
    assert p.cache_info()["compiles"] == before + 2, "each level compiles once, then hits"


_UNARY = {"neg": p.neg, "abs": p.abs, "exp": p.exp, "floor": p.floor}
_BINARY = {"add": p.add, "sub": p.sub, "mul": p.mul, "maximum": p.maximum, "div": p.div}


@st.composite
def _programs(draw):
    """A random program over x [r, c] and y [c]: steps of unary and binary ops (some
    with constants 1, -0.0, 0.0, ..., which reach the compiler as bound inputs, as every
    Python value does), transposes there and back, repeated steps, and a max over the
    last axis broadcast back."""
    steps = draw(st.lists(st.tuples(st.integers(0, 4), st.integers(0, 4), st.integers(0, 5)), min_size=1, max_size=8))
    consts = [1.0, -0.0, 0.0, 2.0, 0.5]

    def program(x, y):
        vals = [x, y]
        for kind, a, b in steps:
            u, v = vals[a % len(vals)], vals[b % len(vals)]
            if kind == 0:
                vals.append(list(_UNARY.values())[b % len(_UNARY)](u))
            elif kind == 1:
                vals.append(list(_BINARY.values())[b % len(_BINARY)](u, v))
            elif kind == 2:
                vals.append(list(_BINARY.values())[a % 3](u, p.full((), consts[b % len(consts)], dtype=u.dtype)))
            elif kind == 3 and len(u.shape) == 2:
                vals.append(u.transpose(1, 0).transpose(1, 0))
            elif len(u.shape) == 2:
                vals.append(u - p.max(u, axis=-1, keepdims=True))
        return vals[-1] + vals[0]

    return program


@settings(max_examples=12, deadline=None)
@given(_programs(), st.integers(1, 6), st.integers(1, 40), st.sampled_from([p.float32, p.float16]))
def test_random_programs_agree_at_every_level(program, rows, cols, dtype):
    x, y = rand((rows, cols), dtype, rows), rand((cols,), dtype, cols)
    ref = p.compile(program, p.CompileConfig(chip="reference")).run(x, y).numpy()
    for level in (0, 1, 2, 3):
        got = p.compile(program, p.CompileConfig(opt_level=level, chip="tiny")).run(x, y).numpy()
        np.testing.assert_array_equal(got, ref, err_msg=f"opt_level={level}")


def test_deterministic_gives_the_same_bits_at_every_level():
    x, w = rand((128, 16384), p.float16, 5), rand((16384, 128), p.float16, 6)
    s = rand((16, 1000), p.float16, 7)
    bits = []
    for chip in ("tiny", "a2"):
        for level in (0, 1, 2, 3):
            cfg = p.CompileConfig(opt_level=level, chip=chip, deterministic=True)
            mm = p.compile(lambda a, b: a @ b, cfg).run(x, w).numpy()
            sm = p.compile(lambda a: p.softmax(a, axis=-1), cfg).run(s).numpy()
            bits.append((chip, level, mm.tobytes(), sm.tobytes()))
    for chip, level, mm, sm in bits:
        assert mm == bits[0][2], f"matmul on {chip} at O{level} differs from tiny at O0"
        assert sm == bits[0][3], f"softmax on {chip} at O{level} differs from tiny at O0"
    with pytest.raises(TypeError, match="deterministic"):
        p.CompileConfig(deterministic=1)


@pytest.mark.parametrize("max_cores", [1, 3, 8])
def test_max_cores_limits_every_kernel(max_cores):
    """p.CompileConfig(max_cores=N): every kernel runs on at most N AI cores (N cube
    cores, 2N vector cores on a2), with the values of the whole chip's run; fewer cores
    take longer."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((512, 256)).astype(np.float16)
    w = rng.standard_normal((256, 1024)).astype(np.float16)

    def fn(x, w):
        return p.softmax(p.matmul(x, w), axis=-1)

    whole = p.compile(fn, p.CompileConfig(chip="a2"))
    want = whole.run(x, w).numpy()
    limited = p.compile(fn, p.CompileConfig(chip="a2", max_cores=max_cores))
    got = limited.run(x, w, profile=True).numpy()
    np.testing.assert_array_equal(got, want)
    r = limited.get_profile_result()
    for t in r.tasks:
        cap = max_cores if t.core == "cube" else 2 * max_cores
        assert t.active_cores <= cap, (t.op, t.core, t.active_cores)
        assert all(c["task_core"] < cap for c in t.cores), (t.op, t.cores)
    assert limited.last_time_ms > whole.last_time_ms


@pytest.mark.parametrize("bad,err", [(0, p.PyptoValueError), (-2, p.PyptoValueError), (2.5, p.PyptoTypeError),
                                     ("4", p.PyptoTypeError), (True, p.PyptoTypeError)])  # fmt: skip
def test_max_cores_is_validated(bad, err):
    with pytest.raises(err, match="max_cores"):
        p.CompileConfig(max_cores=bad)


def test_max_cores_above_the_chips_cores_is_an_error_at_compile():
    f = p.compile(lambda x: x + 1.0, p.CompileConfig(chip="a2", max_cores=25))
    with pytest.raises(p.PyptoValueError, match=r"has 24 AI cores.*max_cores=25|max_cores=25.*24 AI cores") as e:
        f.run(np.zeros((64, 64), np.float32))
    assert any("between 1 and 24" in s for s in e.value.suggestions)
