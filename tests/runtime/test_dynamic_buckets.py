"""One program per bucket of sizes: a symbolic trace runs every size of a bucket on the
program compiled for the bucket's bound, with the same bits as a program for that size."""

import math

import numpy as np
import pytest

import pypto as p


def _block(hidden):
    def block(x):
        q = p.linear(x, hidden, hidden)
        k = p.linear(x, hidden, hidden)
        v = p.linear(x, hidden, hidden)
        s = p.softmax(p.matmul(q, k, transpose_b=True) / math.sqrt(hidden), axis=-1)
        ff = p.relu(p.linear(p.matmul(s, v), hidden, 2 * hidden))
        return p.linear(ff, 2 * hidden, hidden) + x

    return block


def _traced(config=None, hidden=64):
    p.manual_seed(11)  # the same parameters in every trace
    batch, seq = p.symbol("batch"), p.symbol("seq_len")
    return p.compile(_block(hidden), inputs=[p.Tensor([batch, seq, hidden], dtype=p.float16)], config=config)


@pytest.mark.parametrize("deterministic", [False, True])
def test_bucketed_runs_give_the_bits_of_programs_for_each_size(device, deterministic):
    """Padded positions add exact zeros to sums, so the bits are those of the program for
    the size whenever both reduce in the same order: always with deterministic=True; by
    default when the tile search picks the same reduction tiles for the bucket's bound
    as for the size (as on a2 here; on tiny the attention's tiles differ at 65 and 128)."""
    if device == "reference":
        pytest.skip("buckets are sized by a chip's timing model")
    if device == "tiny" and not deterministic:
        pytest.skip("the tile search picks other reduction tiles for 128 than for 65 on tiny")
    bucketed = _traced(p.CompileConfig(deterministic=deterministic))
    per_size = _traced(p.CompileConfig(per_size_programs=True, deterministic=deterministic))
    sizes = [1, 3, 17, 64, 65, 100, 130]
    for n in sizes:
        x = (np.random.default_rng(n).standard_normal((1, n, 64)) * 0.5).astype(np.float16)
        got = bucketed.run(x).numpy()
        want = per_size.run(x).numpy()
        assert got.shape == (1, n, 64)
        np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16), err_msg=f"seq_len={n}")
        assert bucketed.stats()["program"].startswith("batch<=")
        assert per_size.stats()["program"] == f"batch=1,seq_len={n}"
    info = bucketed.info()
    assert info["no_buckets"] == "" and info["buckets"]["probes"] > 0
    assert bucketed.num_compiled < len(sizes)
    assert per_size.num_compiled == len(sizes)
    assert per_size.info()["no_buckets"].startswith("the config asks for a program per size")


def test_a_graph_that_mixes_padded_rows_compiles_per_size(device):
    if device == "reference":
        pytest.skip("buckets are sized by a chip's timing model")
    f = p.compile(lambda x: p.sum(x, axis=0), inputs=[p.Tensor([p.symbol("n"), 4])])
    for n in (2, 3):
        x = np.arange(4 * n, dtype=np.float32).reshape(n, 4)
        np.testing.assert_array_equal(f.run(x).numpy(), x.sum(axis=0))
    assert f.num_compiled == 2
    assert "it reduces over a padded axis" in f.info()["no_buckets"]


def test_per_size_programs_must_be_a_bool():
    with pytest.raises(TypeError, match="per_size_programs"):
        p.CompileConfig(per_size_programs=1)


def test_bucket_programs_read_the_run_rows_of_their_feed_forward(device):
    """In a bucket's program (batch <= 1) the feed-forward matmuls, whose rows are
    seq_len, read the run's seq_len and compute only the tiles it needs; the results
    keep the bits of the program padded whole and of the program for the size."""
    if device == "reference":
        pytest.skip("buckets are sized by a chip's timing model")
    dynamic = _traced(hidden=128)
    padded = _traced(p.CompileConfig(disable_passes=["dynamic-sizes"]), hidden=128)
    per_size = _traced(p.CompileConfig(per_size_programs=True), hidden=128)
    for n in [65, 100, 129]:
        x = (np.random.default_rng(n).standard_normal((1, n, 128)) * 0.5).astype(np.float16)
        got = dynamic.run(x).numpy()
        assert dynamic.stats()["program"].startswith("batch<=1,")
        assert dynamic.info()["dynamic_kernels"].count("fused_matmul") >= 2
        np.testing.assert_array_equal(got.view(np.uint16), padded.run(x).numpy().view(np.uint16), err_msg=f"seq_len={n}")
        assert padded.info()["dynamic_kernels"] == []
        np.testing.assert_array_equal(got.view(np.uint16), per_size.run(x).numpy().view(np.uint16), err_msg=f"seq_len={n}")


@pytest.mark.parametrize("mask", ["causal", "key_padding", "none"])
def test_attention_over_padded_keys_runs_bucketed(mask):
    """scaled_dot_product_attention runs on a bucket's program: causal attention never
    lets a valid query see a padded key, a bool key-padding mask (padded False) drops
    them itself, and without a mask the program adds one; the values' padded rows are
    zeroed. The bits are the program for the size's, and numpy's attention agrees."""
    hidden = 64

    def block(x, keep=None):
        p.manual_seed(5)
        q, k, v = (p.linear(x, hidden, hidden) for _ in range(3))
        return p.scaled_dot_product_attention(q, k, v, attn_mask=keep, is_causal=mask == "causal")

    batch, seq = p.symbol("batch"), p.symbol("seq_len")
    inputs = [p.Tensor([batch, seq, hidden], dtype=p.float16)]
    fn = block
    if mask == "key_padding":
        inputs.append(p.Tensor([batch, 1, seq], dtype=p.bool_))
    else:
        fn = lambda x: block(x)  # noqa: E731
    bucketed = p.compile(fn, inputs=inputs, config=p.CompileConfig(chip="a2"))
    per_size = p.compile(fn, inputs=inputs, config=p.CompileConfig(chip="a2", per_size_programs=True))
    for n in [1, 5, 40, 64, 70]:
        rng = np.random.default_rng(n)
        args = [(rng.standard_normal((1, n, hidden)) * 0.5).astype(np.float16)]
        if mask == "key_padding":
            keep = rng.random((1, 1, n)) < 0.8
            keep[..., 0] = True
            args.append(keep)
        got = bucketed.run(*args).numpy()
        want = per_size.run(*args).numpy()
        np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16), err_msg=f"seq_len={n}")
        assert bucketed.stats()["program"].startswith("batch<="), bucketed.info()["no_buckets"]
    assert bucketed.num_compiled < 5
