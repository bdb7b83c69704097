"""PTO-AS export and import: executor.export_pto writes every kernel of a compiled
program in both forms with a manifest; p.load_pto reads a directory back into a
program that computes the same bytes in the same simulated cycles, and a kernel file
into a callable that runs like a block kernel. (The corpus with ptoas is
test_pto_as_corpus.py.)"""

import json
import os

import numpy as np
import pytest

import pypto as p


@pytest.fixture(autouse=True)
def _a2():
    before = p.get_device()
    p.set_device("a2")
    yield
    p.set_device(before)


def _mbr(x, w, b):
    return p.relu(p.matmul(x, w) + b)


def _softmax(x):
    return p.softmax(x, axis=-1)


def _inputs(seed, *shapes):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal(s) * 0.5).astype(np.float16) for s in shapes]


CASES = {
    "matmul_bias_relu": (_mbr, ((128, 256), (256, 128), (128,))),  # a mixed task: queues become GM buffers
    "softmax": (_softmax, ((96, 320),)),
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("form", ["auto", "manual"])
def test_an_export_loads_back_to_the_same_bytes_and_cycles(case, form, tmp_path):
    fn, shapes = CASES[case]
    xs = _inputs(3, *shapes)
    ex = p.compile(fn)
    want = ex(*xs).numpy()
    cycles = ex.last_cycles
    report = ex.export_pto(tmp_path)
    assert report.directory == str(tmp_path) and report and all(r["files"]["auto"].endswith(".pto") for r in report)
    prog = p.load_pto(tmp_path, form=form)
    got = prog(*xs).numpy()
    np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))
    assert prog.last_cycles == cycles
    assert [i["shape"] for i in prog.inputs] == [list(s) for s in shapes]


def test_the_files_and_the_manifest(tmp_path):
    w = np.random.default_rng(1).standard_normal((256, 128)).astype(np.float16)

    def f(x):  # w is captured: a constant buffer whose bytes the export writes
        return p.relu(p.matmul(x, w))

    ex = p.compile(f)
    x = _inputs(4, (64, 256))[0]
    want = ex(x).numpy()
    report = ex.export_pto(tmp_path)
    names = set(os.listdir(tmp_path))
    m = json.loads((tmp_path / "manifest.json").read_text())
    assert m["format"] == "pypto.pto-as/1" and m["ptoas"] == "0.1.1" and m["chip"] == "a2"
    consts = [b for b in m["buffers"] if b["role"] == "constant"]
    assert len(consts) == 1 and consts[0]["data"] in names
    assert np.array_equal(np.fromfile(tmp_path / consts[0]["data"], np.float16).reshape(256, 128), w)
    assert len(m["inputs"]) == 1, "the captured weight is not an input"
    for row, task in zip(report, m["tasks"]):
        assert {row["files"]["auto"], row["files"]["manual"]} <= names
        assert row["flags_ours"] > 0 and row["lines"]["auto"] > 0
        assert task["blocks"] >= 1 and task["functions"]
        for fn in task["functions"]:
            for a in fn["args"]:
                assert a["kind"] in ("gm", "queue", "scalar")
    text = (tmp_path / report[0]["files"]["auto"]).read_text()
    assert "func.func @" in text and '"pto.tload"' in text
    np.testing.assert_array_equal(p.load_pto(tmp_path)(x).numpy().view(np.uint16), want.view(np.uint16))


@p.block_kernel(grid=2, out_shape=lambda x: x.shape, out_dtype=lambda x: x.dtype)
def scale_rows(x, y):
    rows = x.shape[0] // 2
    for i in p.range(rows // 8):
        r = p.block_idx() * rows + i * 8
        p.store(y[r:r + 8, :], p.maximum(p.load(x[r:r + 8, :]) * 2.0, 0.5))


def test_a_block_kernel_exports_and_its_file_runs_like_the_kernel(tmp_path):
    x = np.random.default_rng(2).standard_normal((64, 32)).astype(np.float32)
    want = p.call_kernel(scale_rows, x).numpy()
    report = scale_rows.export_pto(tmp_path, x)
    k = p.load_pto(tmp_path / report[0]["files"]["auto"])
    assert k.grid == 2 and k.core == "vector" and [q["name"] for q in k.params] == ["x", "y"]
    np.testing.assert_array_equal(k(x, out_shape=x.shape).numpy(), want)
    got = k.run(x, out_shape=x.shape, profile=True)
    np.testing.assert_array_equal(got.numpy(), want)
    assert k.last_cycles > 0
    assert k.get_profile_result() is not None
    dbg = k.debug(x)
    assert dbg is not None
    # The manual form (the machine program: its flags and tile addresses) too.
    km = p.load_pto(tmp_path / report[0]["files"]["manual"])
    assert km.form == "manual"
    np.testing.assert_array_equal(km(x, out_shape=x.shape).numpy(), want)


HAND_WRITTEN = """\
// twice: y = 2x over 64 float32, two blocks of 32, written by hand
!v = !pto.tile_buf<loc=ub, dtype=f32, rows=1, cols=32, v_row=1, v_col=32, blayout=row_major, slayout=none_box, fractal=512, pad=0>
module {
  func.func @twice(%x: !pto.ptr<f32> {pypto.elems = 64 : i64}, %y: !pto.ptr<f32> {pypto.elems = 64 : i64}) attributes {pypto.blocks = 2 : i64} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c32 = arith.constant 32 : index
    %two = arith.constant 2.0 : f32
    %b = "pto.get_block_idx"() : () -> i64
    %bi = emitc.cast %b : i64 to index
    %col = arith.muli %bi, %c32 : index
    %xv = pto.make_tensor_view %x, shape = [%c1, %c32] strides = [%c32, %c1] : !pto.tensor_view<2xf32>
    %yv = pto.make_tensor_view %y, shape = [%c1, %c32] strides = [%c32, %c1] : !pto.tensor_view<2xf32>
    %t = pto.alloc_tile : !v
    %sx = pto.subview %xv, offsets = [%c0, %col], sizes = [%c1, %c32] : !pto.tensor_view<2xf32> -> !pto.tile_view<1x32xf32>
    pto.tload ins(%sx : !pto.tile_view<1x32xf32>) outs(%t : !v)
    pto.tmuls ins(%t, %two : !v, f32) outs(%t : !v)
    %sy = pto.subview %yv, offsets = [%c0, %col], sizes = [%c1, %c32] : !pto.tensor_view<2xf32> -> !pto.tile_view<1x32xf32>
    pto.tstore ins(%t : !v) outs(%sy : !pto.tile_view<1x32xf32>)
    return
  }
}
"""


def test_hand_written_pto_as_runs(tmp_path):
    f = tmp_path / "twice.pto"
    f.write_text(HAND_WRITTEN)
    k = p.load_pto(f)
    x = np.arange(64, dtype=np.float32)
    np.testing.assert_array_equal(k(x).numpy(), 2 * x)
    np.testing.assert_array_equal(k.run(x).numpy(), 2 * x)


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda s: s.replace("pto.tmuls ins(%t, %two : !v, f32) outs(%t : !v)", "pto.tfoo ins(%t : !v) outs(%t : !v)"), "twice.pto:17:5: op pto.tfoo has no PyPTO instruction"),
        (lambda s: s.replace("strides = [%c32, %c1] : !pto.tensor_view<2xf32>\n    %yv", "strides = [%c32, %c1 : !pto.tensor_view<2xf32>\n    %yv"), "twice.pto:12:77: expected ',' between operands"),
        (lambda s: s.replace("{pypto.elems = 64 : i64}, %y", "{pypto.elems = 48 : i64}, %y"), "twice.pto:16:5:"),  # window outside x
        (lambda s: s.replace("pto.tmuls ins(%t, %two : !v, f32) outs(%t : !v)", 'pto.wait_flag[<PIPE_MTE2>, <PIPE_V>, <EVENT_ID0>]'), "twice.pto:17:5:"),
    ],
)
def test_bad_pto_as_is_an_error_at_its_line(tmp_path, edit, message):
    f = tmp_path / "twice.pto"
    f.write_text(edit(HAND_WRITTEN))
    with pytest.raises(p.PyptoError) as e:
        p.load_pto(f)
    assert message in str(e.value)


def test_load_pto_argument_errors(tmp_path):
    with pytest.raises(p.PyptoValueError, match="neither a .pto file nor a directory"):
        p.load_pto(tmp_path / "nothing.pto")
    with pytest.raises(p.PyptoValueError, match="no manifest.json"):
        p.load_pto(tmp_path)
    with pytest.raises(p.PyptoError, match="form"):
        p.load_pto(tmp_path, form="fast")
    two = HAND_WRITTEN.replace("pto.tstore ins(%t : !v) outs(%sy", "pto.tstore ins(%t : !v) outs(%sx : !pto.tile_view<1x32xf32>)\n    pto.tstore ins(%t : !v) outs(%sy")
    f = tmp_path / "two.pto"
    f.write_text(two)
    with pytest.raises(p.PyptoValueError, match="writes 2 params"):
        p.load_pto(f)


def test_export_before_anything_is_compiled():
    ex = p.compile(_softmax)
    with pytest.raises(RuntimeError, match="not been run"):
        ex.export_pto("/nonexistent")
