"""Several Python threads building and realising tensors at once (ctypes releases the
GIL, so the Go core really runs them concurrently)."""

import threading

import numpy as np

import pypto as p
from conftest import assert_elementwise_close, assert_matmul_close, rand


def test_threads_realise_concurrently():
    shared_a = rand((33, 48), p.float16, 1)
    shared_w = rand((48, 40), p.float16, 2)
    x_shared = p.from_numpy(shared_a)
    shared_pending = p.relu(x_shared @ p.from_numpy(shared_w))  # realised by every thread
    errors = []
    barrier = threading.Barrier(8)

    def worker(i):
        try:
            barrier.wait()
            for j in range(4):
                a = rand((16 + i, 24), p.bfloat16, 100 * i + j)
                b = rand((24, 8 + j), p.bfloat16, 100 * i + j + 50)
                got = (p.from_numpy(a) @ p.from_numpy(b)).numpy()
                assert_matmul_close(got, a, b)
                c = rand((16 + i, 24), p.bfloat16, 7 * i + j)
                s = (p.from_numpy(a) + p.from_numpy(c)).numpy()
                assert_elementwise_close(s, a.astype(np.float64) + c.astype(np.float64), p.bfloat16)
                mine = p.relu(x_shared * x_shared)  # a new tensor over a shared input
                assert_elementwise_close(mine.numpy(), shared_a.astype(np.float64) ** 2, p.float16)
                out = shared_pending.numpy()
                ref = shared_a.astype(np.float64) @ shared_w.astype(np.float64)
                np.testing.assert_allclose(out.astype(np.float64), np.maximum(ref, 0), rtol=4e-3, atol=4e-3)
        except BaseException as e:  # reported by the main thread
            errors.append((i, e))

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_threads_share_one_executor():
    w = p.from_numpy(rand((32, 16), p.float16, 3))
    f = p.compile(lambda x: p.relu(x @ w))
    wn = w.numpy().astype(np.float64)
    errors = []

    def worker(i):
        try:
            for j in range(5):
                x = rand((8, 32), p.float16, 1000 + 10 * i + j)
                got = f.run(x).numpy().astype(np.float64)
                ref = np.maximum(x.astype(np.float64) @ wn, 0)
                np.testing.assert_allclose(got, ref, rtol=4e-3, atol=4e-3)
        except BaseException as e:
            errors.append((i, e))

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert f.num_compiled == 1
