"""p.dropout: the mask against an independent Philox-4x32-10 written here from the
published definition (checked on its known-answer vectors), the same bits on every
device, chip preset and optimisation level, and the statistics (keep rate, scaling)."""

import numpy as np
import pytest

import pypto as p
from conftest import FLOAT_DTYPES, rand

M0, M1, W0, W1 = 0xD2511F53, 0xCD9E8D57, 0x9E3779B9, 0xBB67AE85
MASK32 = 0xFFFFFFFF


def philox4x32_10(ctr, key):
    """Philox-4x32-10 (Salmon et al., SC 2011) over arrays of counters: ctr is four
    uint64 arrays of 32-bit words, key two ints."""
    c = [np.asarray(w, np.uint64) for w in ctr]
    k0, k1 = key
    for _ in range(10):
        p0 = c[0] * np.uint64(M0)  # below 2**64: exact
        p1 = c[2] * np.uint64(M1)
        c = [(p1 >> np.uint64(32)) ^ c[1] ^ np.uint64(k0), p1 & np.uint64(MASK32),
             (p0 >> np.uint64(32)) ^ c[3] ^ np.uint64(k1), p0 & np.uint64(MASK32)]  # fmt: skip
        k0, k1 = (k0 + W0) & MASK32, (k1 + W1) & MASK32
    return c


def test_the_reference_philox_matches_its_known_answers():
    # Random123's kat_vectors for philox4x32_10
    for ctr, key, want in [
        ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
        ((MASK32,) * 4, (MASK32, MASK32), (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
        ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0), (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
    ]:
        assert [int(w) for w in philox4x32_10([np.uint64(v) for v in ctr], key)] == list(want)


def expected_keep(shape, seed, rate):
    n = int(np.prod(shape, dtype=np.int64))
    i = np.arange(n, dtype=np.uint64)
    z = np.zeros(n, np.uint64)
    w0 = philox4x32_10([i, z, z, z], (seed & MASK32, (seed >> 32) & MASK32))[0]
    u = (w0 >> np.uint64(8)).astype(np.float64) * 2.0**-24
    return (u >= np.float32(rate)).reshape(shape)


@pytest.mark.parametrize("shape", [(5, 300), (7, 33), (1000,), (2, 3, 50), ()])
@pytest.mark.parametrize("dt", FLOAT_DTYPES)
def test_mask_is_philox_and_kept_values_are_scaled(device, shape, dt):
    x = rand(shape, dt, 1, 0.5, 2)
    seed = 0x1234_5678_9ABC
    got = p.dropout(x, p=0.3, seed=seed).numpy()
    keep = expected_keep(shape, seed, 0.3)
    want = np.where(keep, (x.astype(np.float32) * np.float32(1 / 0.7)).astype(x.dtype), 0).astype(x.dtype)
    assert got.dtype == x.dtype
    np.testing.assert_array_equal(got, want)


def test_same_bits_on_every_device_preset_and_opt_level():
    x = rand((6, 257), p.float16, 2, 0.5, 2)
    ref = expected_keep(x.shape, 99, 0.5)
    prev = p.get_device()
    try:
        for dev in ("reference", "tiny", "a2"):
            p.set_device(dev)
            np.testing.assert_array_equal(p.dropout(x, 0.5, seed=99).numpy() != 0, ref, err_msg=dev)
            for level in (0, 1, 2, 3):
                f = p.compile(lambda t: p.relu(p.dropout(t, 0.5, seed=99)) * 2, config=p.CompileConfig(opt_level=level))
                np.testing.assert_array_equal(f(x).numpy() != 0, ref, err_msg=f"{dev} O{level}")
    finally:
        p.set_device(prev)


@pytest.mark.parametrize("rate", [0.1, 0.5, 0.9])
def test_keep_rate_and_scaling_statistics(rate):
    # on the reference device, fast at this size; the tests above show every device's
    # bits are the same
    n = 1 << 18
    x = np.ones((64, n // 64), np.float32)
    prev = p.get_device()
    p.set_device("reference")
    try:
        out = p.dropout(x, rate, seed=2024).numpy()
    finally:
        p.set_device(prev)
    kept = out != 0
    sigma = np.sqrt(rate * (1 - rate) / n)
    assert abs(kept.mean() - (1 - rate)) < 5 * sigma
    np.testing.assert_array_equal(out[kept], np.float32(1 / (1 - rate)))
    assert abs(out.mean() - 1) < 5 * sigma / (1 - rate)  # the expectation is kept
    # neighbours are independent: the keep rate of pairs is the product
    pairs = (kept[:, :-1] & kept[:, 1:]).mean()
    assert abs(pairs - (1 - rate) ** 2) < 6 * np.sqrt((1 - rate) ** 2 / n)


def test_seeds_differ_and_the_default_follows_manual_seed():
    x = np.ones((4, 256), np.float32)
    a, b = (p.dropout(x, 0.5, seed=s).numpy() for s in (1, 2))
    assert (a != b).any()
    p.manual_seed(7)
    c = p.dropout(x, 0.5).numpy()
    p.manual_seed(7)
    np.testing.assert_array_equal(p.dropout(x, 0.5).numpy(), c)


def test_identity_and_edge_rates():
    x = rand((3, 40), p.float32, 3)
    t = p.from_numpy(x)
    assert p.dropout(t, 0.5, training=False) is t
    assert p.dropout(t, 0.0, seed=1) is t
    np.testing.assert_array_equal(p.dropout(x, 1.0, seed=1).numpy(), np.zeros_like(x))


def test_bad_arguments():
    x = np.ones(4, np.float32)
    with pytest.raises(p.PyptoValueError, match="dropout: p must be a probability in"):
        p.dropout(x, 1.5)
    with pytest.raises(p.PyptoTypeError, match="dropout: training must be True or False"):
        p.dropout(x, 0.5, training="yes")
    with pytest.raises(p.PyptoTypeError, match="dropout: seed must be an int"):
        p.dropout(x, 0.5, seed=1.5)
    with pytest.raises(p.DTypeError, match="dropout: x must be a float tensor"):
        p.dropout(np.ones(4, np.int32), 0.5, seed=1)
