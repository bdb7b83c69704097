"""Optimisers: ``p.optim.SGD`` and ``p.optim.AdamW``, with torch.optim's semantics.

``opt = p.optim.AdamW(params, lr=1e-3)`` over tensors that require grad; after
``loss.backward()`` (or after assigning ``param.grad``), ``opt.step()`` updates every
parameter that has a gradient in place, computing all the updates as one program on
the simulated NPU, and ``opt.zero_grad()`` clears the gradients.
"""

from __future__ import annotations

from .._core import validate as check
from .._core.errors import PyptoValueError
from .._core.location import user_location
from ..tensor_level.tensor import Tensor
from .gradients import _realize_all, _swap, _track

__all__ = ["Optimizer", "SGD", "AdamW"]


class Optimizer:
    """What SGD and AdamW share: the parameters, their state, step() and zero_grad()."""

    def __init__(self, params, name: str):
        if isinstance(params, dict):
            params = list(params.values())
        if isinstance(params, Tensor):
            raise check.fail(name, "params", params, "an iterable of p.Tensors (a list of parameters), not one tensor")
        params = list(params)
        if not params:
            raise PyptoValueError(f"{name}: params is empty", location=user_location())
        for i, t in enumerate(params):
            if not isinstance(t, Tensor):
                raise check.fail(name, f"params[{i}]", t, "a p.Tensor")
            if not t.dtype.is_floating:
                raise check.fail(name, f"params[{i}]", t, "a float tensor")
            if not t.requires_grad:
                t.requires_grad_()
        self.params = params
        self.state = [dict() for _ in params]

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clears every parameter's gradient (torch's default, set_to_none=True; False
        sets them to zeros)."""
        for t in self.params:
            t.grad = None if set_to_none else t * 0

    def step(self) -> None:
        """Updates every parameter that has a gradient, in place."""
        news, states = [], []
        for t, st in zip(self.params, self.state):
            g = t.grad
            if g is None:
                continue
            new_p, new_state = self._update(t.detach() if t.is_pending else t, g, st)
            news.append((t, new_p))
            states.append((st, new_state))
        _realize_all([p for _, p in news] + [v for _, s in states for v in s.values() if isinstance(v, Tensor)])
        for t, new_p in news:
            _swap(t, _track(new_p.detach()))
        for st, new_state in states:
            st.update({k: v.detach() if isinstance(v, Tensor) else v for k, v in new_state.items()})

    def _update(self, p, g, state):  # pragma: no cover - each optimiser defines it
        raise NotImplementedError


class SGD(Optimizer):
    """Stochastic gradient descent, torch.optim.SGD's update: with ``g`` the gradient
    plus ``weight_decay * p``, the momentum buffer ``b = momentum * b + (1 - dampening)
    * g`` (``b = g`` on the first step), ``g = g + momentum * b`` when nesterov else
    ``b``, then ``p -= lr * g`` (``+=`` with maximize)."""

    def __init__(self, params, lr: float = 1e-3, momentum: float = 0.0, dampening: float = 0.0,
                 weight_decay: float = 0.0, nesterov: bool = False, maximize: bool = False):  # fmt: skip
        op = "p.optim.SGD"
        self.lr = check.number(lr, "lr", op, lo=0)
        self.momentum = check.number(momentum, "momentum", op, lo=0)
        self.dampening = check.number(dampening, "dampening", op)
        self.weight_decay = check.number(weight_decay, "weight_decay", op, lo=0)
        self.nesterov = check.flag(nesterov, "nesterov", op)
        self.maximize = check.flag(maximize, "maximize", op)
        if self.nesterov and (self.momentum <= 0 or self.dampening != 0):
            raise PyptoValueError(f"{op}: nesterov needs a momentum above 0 and dampening 0", location=user_location())
        super().__init__(params, op)

    def _update(self, p, g, state):
        if self.maximize:
            g = -g
        if self.weight_decay:
            g = g + p * self.weight_decay
        new = {}
        if self.momentum:
            buf = state.get("momentum_buffer")
            buf = g if buf is None else buf * self.momentum + g * (1 - self.dampening)
            new["momentum_buffer"] = buf
            g = g + buf * self.momentum if self.nesterov else buf
        return p - g * self.lr, new


class AdamW(Optimizer):
    """Adam with decoupled weight decay, torch.optim.AdamW's update: ``p *= 1 - lr *
    weight_decay``; ``m = b1 m + (1 - b1) g``; ``v = b2 v + (1 - b2) g^2`` (with amsgrad,
    the running maximum of v is used); ``p -= lr / (1 - b1^t) * m / (sqrt(v) /
    sqrt(1 - b2^t) + eps)``."""

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, amsgrad: bool = False, maximize: bool = False):  # fmt: skip
        op = "p.optim.AdamW"
        self.lr = check.number(lr, "lr", op, lo=0)
        if not isinstance(betas, (tuple, list)) or len(betas) != 2:
            raise check.fail(op, "betas", betas, "a pair of numbers in [0, 1)")
        self.betas = tuple(check.number(b, "betas", op, lo=0) for b in betas)
        if any(b >= 1 for b in self.betas):
            raise check.fail(op, "betas", betas, "a pair of numbers in [0, 1)")
        self.eps = check.number(eps, "eps", op, lo=0)
        self.weight_decay = check.number(weight_decay, "weight_decay", op, lo=0)
        self.amsgrad = check.flag(amsgrad, "amsgrad", op)
        self.maximize = check.flag(maximize, "maximize", op)
        super().__init__(params, op)

    def _update(self, p, g, state):
        b1, b2 = self.betas
        if self.maximize:
            g = -g
        t = state.get("step", 0) + 1
        p = p * (1 - self.lr * self.weight_decay)
        m = state.get("exp_avg")
        v = state.get("exp_avg_sq")
        m = g * (1 - b1) if m is None else m * b1 + g * (1 - b1)
        v = g * g * (1 - b2) if v is None else v * b2 + g * g * (1 - b2)
        new = {"step": t, "exp_avg": m, "exp_avg_sq": v}
        if self.amsgrad:
            vmax = state.get("max_exp_avg_sq")
            v = v if vmax is None else vmax.maximum(v)
            new["max_exp_avg_sq"] = v
        step_size = self.lr / (1 - b1**t)
        denom = v.sqrt() * (1 / (1 - b2**t) ** 0.5) + self.eps
        return p - m / denom * step_size, new
