"""p.optim.SGD and p.optim.AdamW against torch.optim, step by step, on the same
parameters and gradients (gradients are given, so each step compares the update rule
alone). The updates are float32 elementwise chains of a few ops, rounded at each; torch
rounds at each op too but in its own order, so ``|got - ref| <= 1e-5 * (1 + |ref|)``."""

import numpy as np
import pytest

import pypto as p

torch = pytest.importorskip("torch", reason="the optimiser tests compare with torch.optim: pip install pypto[torch]")

SGD_CASES = [
    dict(lr=0.1),
    dict(lr=0.05, momentum=0.9),
    dict(lr=0.05, momentum=0.9, dampening=0.1, weight_decay=0.01),
    dict(lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.1),
    dict(lr=0.01, maximize=True),
]
ADAMW_CASES = [
    dict(),
    dict(lr=0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1),
    dict(lr=0.01, amsgrad=True),
    dict(lr=0.003, weight_decay=0.0, maximize=True),
]


def _run(p_cls, t_cls, kwargs, steps=6):
    rng = np.random.default_rng(0)
    shapes = [(3, 4), (4,)]
    init = [rng.uniform(-1, 1, s).astype(np.float32) for s in shapes]
    pp = [p.from_numpy(a.copy()) for a in init]
    tp = [torch.tensor(a.copy(), requires_grad=True) for a in init]
    popt, topt = p_cls(pp, **kwargs), t_cls(tp, **kwargs)
    for step in range(steps):
        grads = [rng.uniform(-1, 1, s).astype(np.float32) for s in shapes]
        for x, g in zip(pp, grads):
            x.grad = p.from_numpy(g)
        for x, g in zip(tp, grads):
            x.grad = torch.tensor(g)
        popt.step()
        topt.step()
        for i, (x, y) in enumerate(zip(pp, tp)):
            ref = y.detach().numpy()
            got = x.numpy()
            assert np.all(np.abs(got - ref) <= 1e-5 * (1 + np.abs(ref))), f"step {step} param {i}: {got} vs {ref}"
    popt.zero_grad()
    assert all(x.grad is None for x in pp)


@pytest.mark.parametrize("kwargs", SGD_CASES, ids=lambda k: ",".join(f"{a}={b}" for a, b in k.items()))
def test_sgd_matches_torch(kwargs):
    _run(p.optim.SGD, torch.optim.SGD, kwargs)


@pytest.mark.parametrize("kwargs", ADAMW_CASES, ids=lambda k: ",".join(f"{a}={b}" for a, b in k.items()) or "defaults")
def test_adamw_matches_torch(kwargs):
    _run(p.optim.AdamW, torch.optim.AdamW, kwargs)


def test_training_loop_with_backward():
    """backward() then step(): a least-squares fit converges, eagerly on the chip."""
    rng = np.random.default_rng(1)
    a = rng.uniform(-1, 1, (16, 3)).astype(np.float32)
    true = np.array([[0.5], [-1.0], [2.0]], np.float32)
    b = a @ true
    w = p.Tensor([3, 1], requires_grad=True)
    opt = p.optim.SGD([w], lr=0.5, momentum=0.5)
    for _ in range(60):
        opt.zero_grad()
        loss = p.mean((p.from_numpy(a) @ w - p.from_numpy(b)) ** 2.0)
        loss.backward()
        opt.step()
    np.testing.assert_allclose(w.numpy(), true, atol=1e-3)
    assert w.requires_grad and not w.is_pending


def test_optimizer_argument_errors():
    w = p.Tensor([2], requires_grad=True)
    with pytest.raises(p.PyptoTypeError, match="params"):
        p.optim.SGD(w)
    with pytest.raises(p.PyptoValueError, match="empty"):
        p.optim.AdamW([])
    with pytest.raises(p.PyptoValueError, match="nesterov"):
        p.optim.SGD([w], nesterov=True)
    with pytest.raises((p.PyptoValueError, p.PyptoTypeError), match="betas"):
        p.optim.AdamW([w], betas=(0.9, 1.0))
