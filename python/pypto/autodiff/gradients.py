"""Gradients: ``p.grad``, ``p.value_and_grad``, and ``loss.backward()`` on tensors that
require grad.

The gradient of a lazy tensor is more lazy tensors: the Go core differentiates the
graph behind the value with the VJP rules of its op registry (core/vjp*.go) and returns
the backward nodes as pending tensors. Realising them compiles the backward graph for
the simulated NPU like any other graph; inside ``p.compile`` the backward nodes are
traced into the compiled program.
"""

from __future__ import annotations

import ctypes
import functools
import json
import weakref

from .._core import lib as _lib
from .._core import validate as check
from .._core.errors import DTypeError, PyptoTypeError, PyptoValueError
from .._core.location import user_location, user_location_json
from ..tensor_level.tensor import Tensor, as_tensor

__all__ = ["grad", "value_and_grad", "realize_all", "differentiable_ops"]

# The live tensors that require grad: backward() differentiates with respect to those
# its value depends on.
_leaves: "weakref.WeakSet[Tensor]" = weakref.WeakSet()


def _track(t: Tensor) -> Tensor:
    """A tensor of t's value that gradients are taken with respect to (t itself when it
    is a traced input)."""
    h = _lib.Handle()
    _lib.call(_lib.lib.pypto_track, t._handle, ctypes.byref(h))
    if h.value == t._handle:
        return t
    return Tensor._wrap(h.value)


def _is_tracked(t: Tensor) -> bool:
    out = ctypes.c_int32()
    _lib.call(_lib.lib.pypto_is_tracked, t._handle, ctypes.byref(out))
    return bool(out.value)


def _swap(t: Tensor, new: Tensor) -> None:
    """Makes the Python object t refer to new's Go tensor (an in-place update)."""
    if new is t:
        return
    old, t._handle = t._handle, new._handle
    new._handle = 0  # new gives its handle away
    _lib.free_handle(old)


def _gradients(out: Tensor, wrt: list, seed=None, op: str = "grad") -> list:
    """The gradient of out with respect to each tensor of wrt (None where out does not
    depend on it)."""
    if not out.dtype.is_floating:
        raise DTypeError(
            f"{op}: cannot differentiate a {out.dtype.name} value: gradients need a float result", location=user_location()
        )
    grads = (_lib.Handle * max(len(wrt), 1))()
    _lib.call(
        _lib.lib.pypto_grad,
        out._handle,
        _lib.handle_array(w._handle for w in wrt),
        len(wrt),
        seed._handle if seed is not None else 0,
        user_location_json(),
        grads,
    )
    return [Tensor._wrap(grads[i]) if grads[i] else None for i in range(len(wrt))]


def realize_all(tensors) -> None:
    """Computes the pending tensors of ``tensors`` (a non-empty list of p.Tensors) as
    one program, so that what they share (the forward pass behind several gradients)
    is computed once."""
    if isinstance(tensors, (Tensor, str, bytes)) or not isinstance(tensors, (list, tuple)) or not tensors:
        raise check.fail("p.realize_all", "tensors", tensors, "a non-empty list of p.Tensors")
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise check.fail("p.realize_all", f"tensors[{i}]", t, "a p.Tensor")
    _realize_all(tensors)


def _realize_all(ts) -> None:
    if ts:
        _lib.call(_lib.lib.pypto_realize_all, _lib.handle_array(t._handle for t in ts), len(ts))


def differentiable_ops() -> frozenset:
    """The ops gradients flow through: those with a VJP rule in the op registry, and
    composites whose decomposition is made of such ops (docs/ops.md, Gradients)."""
    return frozenset(json.loads(_lib.call_string(_lib.lib.pypto_differentiable_ops_json)))


# --- pytrees of tensors: an argument may be a tensor or a list/tuple/dict of them ------


def _flatten(x, path: str):
    if isinstance(x, Tensor):
        return [x], lambda leaves: leaves[0]
    if isinstance(x, (list, tuple)):
        parts = [_flatten(v, f"{path}[{i}]") for i, v in enumerate(x)]
        return _join(parts, lambda vals: type(x)(vals) if isinstance(x, list) else tuple(vals))
    if isinstance(x, dict):
        keys = list(x)
        parts = [_flatten(x[k], f"{path}[{k!r}]") for k in keys]
        return _join(parts, lambda vals: dict(zip(keys, vals)))
    raise check.fail("p.grad", path, x, "a p.Tensor, or a list, tuple or dict of them")


def _join(parts, build):
    counts = [len(leaves) for leaves, _ in parts]
    leaves = [t for ls, _ in parts for t in ls]

    def rebuild(vals):
        out, at = [], 0
        for (_, unflat), n in zip(parts, counts):
            out.append(unflat(vals[at : at + n]))
            at += n
        return build(out)

    return leaves, rebuild


def _argnums_form(argnums, fn_name: str):
    """(single, nums) of an argnums argument: an int, or a non-empty tuple/list of ints."""
    single = isinstance(argnums, int) and not isinstance(argnums, bool)
    nums = [argnums] if single else list(argnums) if isinstance(argnums, (list, tuple)) else None
    if nums is None or not nums or any(not isinstance(i, int) or isinstance(i, bool) for i in nums):
        raise check.fail(fn_name, "argnums", argnums, "an int or a non-empty tuple of ints")
    return single, nums


def _argnums(argnums, nargs: int, fn_name: str):
    single, nums = _argnums_form(argnums, fn_name)
    out = []
    for i in nums:
        if not -nargs <= i < nargs:
            raise PyptoValueError(
                f"{fn_name}: argnums {i} is out of range for a call with {nargs} positional argument(s)",
                location=user_location(),
            )
        out.append(i % nargs)
    return single, out


def _zeros_like(t: Tensor) -> Tensor:
    from ..tensor_level.creation import zeros

    return zeros(t.shape, dtype=t.dtype)


def value_and_grad(fn, argnums=0):
    """Returns a function that calls ``fn`` and returns ``(value, gradient)``: the value
    of ``fn`` (a single-element float p.Tensor, e.g. a loss) and its gradient with
    respect to the positional argument(s) ``argnums`` (an int: that argument's
    gradient; a tuple: a tuple of them). An argument may be a tensor or a list, tuple or
    dict of tensors (the gradient has the same structure). An input the value does
    not depend on gets zeros. Works eagerly and inside ``p.compile`` (the backward pass
    is then part of the compiled program)."""
    if not callable(fn):
        raise check.fail("p.value_and_grad", "fn", fn, "a function")
    _argnums_form(argnums, "p.value_and_grad")
    name = getattr(fn, "__name__", "fn")

    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        single, nums = _argnums(argnums, len(args), "p.grad")
        args = list(args)
        flat, rebuilds = [], {}
        for i in nums:
            a = args[i]
            if not isinstance(a, (Tensor, list, tuple, dict)):
                a = as_tensor(a, "p.grad", f"argument {i}")
            leaves, rebuild = _flatten(a, f"argument {i}")
            tracked = [_track(t) for t in leaves]
            args[i] = rebuild(tracked)
            rebuilds[i] = (len(flat), len(tracked), rebuild)
            flat += tracked
        out = fn(*args, **kwargs)
        if not isinstance(out, Tensor):
            raise PyptoTypeError(
                f"p.grad: {name} must return a p.Tensor (a single-element float value), got {type(out).__name__}",
                location=user_location(),
            )
        gs = _gradients(out, flat)
        gs = [g if g is not None else _zeros_like(t) for g, t in zip(gs, flat)]
        per = [rebuilds[i][2](gs[rebuilds[i][0] : rebuilds[i][0] + rebuilds[i][1]]) for i in nums]
        return out, (per[0] if single else tuple(per))

    return wrapped


def grad(fn, argnums=0):
    """Returns a function computing the gradient of ``fn`` (which returns a
    single-element float p.Tensor) with respect to its positional argument(s)
    ``argnums``; see :func:`value_and_grad`."""
    if not callable(fn):
        raise check.fail("p.grad", "fn", fn, "a function")
    _argnums_form(argnums, "p.grad")
    vg = value_and_grad(fn, argnums)

    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        return vg(*args, **kwargs)[1]

    return wrapped


# --- Tensor: requires_grad, .grad, backward() ------------------------------------------


def _get_requires_grad(self) -> bool:
    """Whether gradients flow to this tensor: set on a leaf (``x.requires_grad = True``
    or ``p.Tensor(...).requires_grad_()``); true for results of ops on such tensors."""
    return getattr(self, "_requires_grad", False) or _is_tracked(self)


def _set_requires_grad(self, flag) -> None:
    flag = check.flag(flag, "requires_grad", "Tensor.requires_grad")
    if flag:
        if not self.dtype.is_floating:
            raise DTypeError(
                f"only float tensors can require grad, this one is {self.dtype.name}",
                location=user_location(),
                suggestions=["cast it first: x = x.astype(p.float32)"],
            )
        if not getattr(self, "_requires_grad", False):
            _swap(self, _track(self))
            self._requires_grad = True
            _leaves.add(self)
    elif getattr(self, "_requires_grad", False):
        self._requires_grad = False
        _leaves.discard(self)


def _requires_grad_(self, requires_grad=True) -> Tensor:
    """Sets requires_grad in place; returns self."""
    _set_requires_grad(self, requires_grad)
    return self


def _get_grad(self):
    """The gradient accumulated by ``backward()`` (None before any); a lazy tensor."""
    return getattr(self, "_grad", None)


def _set_grad(self, g) -> None:
    if g is not None:
        g = as_tensor(g, "Tensor.grad", "grad")
        if tuple(g.shape) != tuple(self.shape):
            raise PyptoValueError(
                f"Tensor.grad: a gradient of shape {list(g.shape)} for a tensor of shape {list(self.shape)}",
                location=user_location(),
            )
    self._grad = g


def _backward(self, gradient=None) -> None:
    """Accumulates into ``.grad`` of every live tensor that requires grad the gradient
    of this value (a single-element value, or any value with ``gradient`` the
    cotangent of its shape). The gradients are lazy: they are computed when read, or
    all at once by an optimiser's step."""
    if not _is_tracked(self):
        raise PyptoValueError(
            "backward(): this value does not depend on any tensor that requires grad",
            location=user_location(),
            suggestions=["set requires_grad=True on the parameters before computing the value: w.requires_grad_()"],
        )
    leaves = [t for t in list(_leaves) if getattr(t, "_requires_grad", False)]
    seed = None if gradient is None else as_tensor(gradient, "backward", "gradient")
    for t, g in zip(leaves, _gradients(self, leaves, seed, "backward")):
        if g is None:
            continue
        prev = getattr(t, "_grad", None)
        t._grad = g if prev is None else prev + g


def _detach(self) -> Tensor:
    """A tensor of the same value (computed now, its data shared) through which no
    gradient flows."""
    h = _lib.Handle()
    _lib.call(_lib.lib.pypto_detach, self._handle, ctypes.byref(h))
    return Tensor._wrap(h.value)


Tensor.requires_grad = property(_get_requires_grad, _set_requires_grad)
Tensor.requires_grad_ = _requires_grad_
Tensor.grad = property(_get_grad, _set_grad)
Tensor.backward = _backward
Tensor.detach = _detach
