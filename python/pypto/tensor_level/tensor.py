"""p.Tensor: an eager but lazy tensor whose value lives in the Go core.

Ops on tensors build a pending graph; ``.numpy()``, ``print``, ``repr``, ``float()``,
``int()``, ``bool()`` and ``numpy.asarray`` realise it: the pending graph is compiled
(cached by structure) and run on the current simulated device.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import numbers
import operator
import threading

import numpy as np

from .._core import lib as _lib
from .._core import validate as check
from .._core.dtypes import DType, bool_, float32, from_code, int8, int32, int64
from .._core.errors import DTypeError, PyptoError, PyptoTypeError, PyptoValueError, ShapeError
from .._core.location import user_location, user_location_json
from .._core.symbolic import Dim, dim_text
from .layouts import ND, as_layout

__all__ = ["Tensor", "from_numpy"]

_MAX_NDIM = check.MAX_NDIM


# A thread may watch what its realisations cost: realize_observer.fn, when set, gets
# the statistics of every run a realisation in this thread makes (the ranks of
# p.shard_map charge them to their simulated clocks).
realize_observer = threading.local()

class Tensor:
    """A tensor on the simulated NPU.

    ``Tensor(shape, dtype=p.float32, data=None, layout=None)``:

    - ``data=None`` gives a **zero-filled** tensor;
    - ``data`` may be a numpy array, anything ``numpy.asarray`` accepts, a scalar
      (filled in) or another ``p.Tensor``; it is converted to ``dtype`` and must
      broadcast to ``shape``;
    - a ``shape`` with symbolic dims (``p.symbol``) gives a **symbolic placeholder**:
      a traced input without data, on which ops infer symbolic shapes (the input of
      ``p.compile(fn, inputs=[x])``);
    - ``layout`` (``p.ND`` by default, ``p.NCHW``, ``p.NHWC``, ``p.CHWN``, ``p.NZ``)
      names the axes; ``shape`` is given in the layout's order (for NZ, the fractal
      shape ``[..., K1, M1, 16, C0]``). See :mod:`pypto.layouts`.
    - ``requires_grad=True`` makes it a leaf that ``loss.backward()`` accumulates a
      gradient into (``.grad``); see :mod:`pypto.autograd`.

    Tensors are values: ``copy.copy``, ``copy.deepcopy`` and ``pickle`` (also across
    processes, e.g. a ``spawn`` multiprocessing worker's result) give a new tensor with
    the same values, dtype, shape and layout (a pending tensor is computed first). A
    symbolic placeholder copies and pickles as its description (dtype, symbolic shape,
    layout); a traced value inside ``p.compile`` has no value and refuses.
    """

    # _requires_grad and _grad are set by autodiff/gradients.py (requires_grad, .grad, backward).
    __slots__ = ("_handle", "_shape", "_dtype", "_type_info", "_requires_grad", "_grad", "__weakref__")

    # numpy must defer to our reflected operators (ndarray + Tensor -> Tensor.__radd__).
    __array_ufunc__ = None

    def __init__(self, shape, dtype=float32, data=None, layout=None, requires_grad=False):
        dt = check.dtype(dtype, "dtype", "p.Tensor", optional=True) or float32
        lay = as_layout(layout, "p.Tensor")
        requires_grad = check.flag(requires_grad, "requires_grad", "p.Tensor")
        shape = check.shape(shape, "shape", "p.Tensor")
        if any(isinstance(d, Dim) for d in shape):
            if data is not None:
                raise ShapeError(
                    f"a tensor of symbolic shape {list(shape)} cannot hold data",
                    location=user_location(),
                    suggestions=["symbolic shapes describe inputs of p.compile; give concrete sizes to create data"],
                )
            h = _lib.Handle()
            _lib.call(_lib.lib.pypto_placeholder_type, _type_text(dt, shape, lay).encode(), ctypes.byref(h))
            self._adopt(h.value)
            return
        if data is None:
            h = _lib.Handle()
            _lib.call(_lib.lib.pypto_zeros, dt.code, len(shape), _lib.int64_array(shape), ctypes.byref(h))
            handle = h.value
        else:
            if isinstance(data, Tensor):
                data = data.numpy()
            if _is_text_or_objects(data):
                raise check.fail("p.Tensor", "data", data, "numbers (an array, nested lists or a scalar), not text or objects")
            try:
                with np.errstate(all="ignore"):
                    values = np.asarray(data, dtype=dt.numpy)
            except (TypeError, ValueError, OverflowError) as e:
                raise check.fail("p.Tensor", "data", data, f"numbers convertible to {dt.name} ({e})", PyptoValueError) from None
            try:
                arr = np.broadcast_to(values, shape)
            except ValueError as e:
                raise ShapeError(
                    f"p.Tensor: data of shape {list(np.shape(values))} does not fit a tensor of shape {list(shape)}: {e}",
                    location=user_location(),
                ) from None
            handle = _from_host(arr, dt)
        if lay != ND:
            try:
                handle = _with_layout(handle, _layout_text(lay, shape, dt))
            except BaseException:
                _lib.free_handle(handle)
                raise
        self._adopt(handle)
        if requires_grad:
            self.requires_grad = True

    # --- construction helpers -----------------------------------------------------------

    @classmethod
    def _wrap(cls, handle: int) -> "Tensor":
        t = cls.__new__(cls)
        t._adopt(handle)
        return t

    def _adopt(self, handle: int) -> None:
        self._handle = handle
        code, ndim = ctypes.c_int32(), ctypes.c_int32()
        shape = (ctypes.c_int64 * _MAX_NDIM)()
        _lib.call(
            _lib.lib.pypto_tensor_info, handle, ctypes.byref(code), ctypes.byref(ndim), shape, _MAX_NDIM, None
        )
        dims = tuple(shape[: ndim.value])
        self._dtype = from_code(code.value)
        self._type_info = None
        if dims and min(dims) < 0:  # symbolic: the Go core marks those dims -1
            info = self._info()
            dims = tuple(d if isinstance(d, int) else Dim(d) for d in info["shape"])
        self._shape = dims

    def __del__(self, _free=_lib.free_handle):
        # A method rather than weakref.finalize: it costs a tenth as much per tensor,
        # which counts in eager loops of small ops. _free is bound now because module
        # globals may be gone when the interpreter shuts down.
        handle = getattr(self, "_handle", 0)  # unset when __init__ failed early
        if handle:
            self._handle = 0
            _free(handle)

    # --- properties -------------------------------------------------------------------------

    @property
    def shape(self) -> tuple:
        return self._shape

    @property
    def dtype(self) -> DType:
        return self._dtype

    @property
    def ndim(self) -> int:
        return len(self._shape)

    @property
    def size(self):
        """The number of elements (a Dim when the shape is symbolic)."""
        if any(isinstance(d, Dim) for d in self._shape):
            n = 1
            for d in self._shape:
                n = n * d
            return n
        return int(np.prod(self._shape, dtype=np.int64))

    @property
    def layout(self):
        """The tensor's layout: p.ND, p.NCHW, p.NHWC, p.CHWN or p.NZ."""
        return as_layout(self._info()["layout"])

    @property
    def nd_shape(self) -> tuple:
        """The shape ``p.layout_transform(x, p.ND)`` gives: for NZ, the matrix
        ``[..., M, K]`` the fractals hold; otherwise ``shape``."""
        info = self._info()
        if info["layout"] != "NZ":
            return self._shape
        return tuple(self._shape[:-4]) + (info.get("rows", 0), info.get("cols", 0))

    def _info(self) -> dict:
        """The Go core's description of the type (dtype, dims, layout); it never changes."""
        if self._type_info is None:
            self._type_info = json.loads(_lib.call_string(_lib.lib.pypto_tensor_type_json, self._handle))
        return self._type_info

    @property
    def is_pending(self) -> bool:
        """True while the value has not been computed yet."""
        code, ndim, pending = ctypes.c_int32(), ctypes.c_int32(), ctypes.c_int32()
        shape = (ctypes.c_int64 * _MAX_NDIM)()
        _lib.call(
            _lib.lib.pypto_tensor_info,
            self._handle,
            ctypes.byref(code),
            ctypes.byref(ndim),
            shape,
            _MAX_NDIM,
            ctypes.byref(pending),
        )
        return bool(pending.value)

    def __len__(self) -> int:
        if not self._shape:
            raise TypeError("len() of a 0-d tensor")
        return operator.index(self._shape[0])

    # --- realisation ----------------------------------------------------------------------

    def realize(self) -> "Tensor":
        """Computes the value now (compiling and running the pending graph); returns self."""
        observe = getattr(realize_observer, "fn", None)
        if observe is None:
            _lib.call(_lib.lib.pypto_realize, self._handle)
        else:
            stats = json.loads(_lib.call_string(_lib.lib.pypto_realize_stats, self._handle))
            if stats:
                observe(stats)
        return self

    def numpy(self) -> np.ndarray:
        """The value as a new numpy array (bfloat16 as ``ml_dtypes.bfloat16``)."""
        try:
            out = np.empty(self._shape, dtype=self._dtype.numpy)
        except TypeError:  # a symbolic shape (Dim entries)
            self.realize()  # raises: a symbolic tensor has no data
            raise
        if getattr(realize_observer, "fn", None) is not None:
            self.realize()  # the observer sees what computing the value cost
        # A new array is C-contiguous: no strides (NULL) to pass.
        _lib.call(_lib.lib.pypto_copy_out, self._handle, out.__array_interface__["data"][0], out.ndim, None)
        return out

    def __array__(self, dtype=None, copy=None):
        if copy is False:
            raise ValueError("a p.Tensor's value lives in the Go core: converting it to numpy always copies")
        arr = self.numpy()
        if dtype is not None and np.dtype(dtype) != arr.dtype:
            arr = arr.astype(dtype)
        return arr

    def item(self):
        return self._scalar("item()")

    def __float__(self) -> float:
        return float(self._scalar("float()"))

    def __int__(self) -> int:
        return int(self._scalar("int()"))

    def __bool__(self) -> bool:
        return bool(self._scalar("bool()"))

    def __index__(self) -> int:
        if self._dtype.is_floating:
            raise TypeError(f"only integer tensors can be used as an index, not {self._dtype.name}")
        return int(self._scalar("an index"))

    # --- copies and pickles: by value -----------------------------------------------------

    def __reduce__(self):
        if any(isinstance(d, Dim) for d in self._shape):
            return (_placeholder_from_text, (self._info()["text"],))
        try:
            arr = self.numpy()
        except PyptoValueError as e:
            if not _has_no_data(e):
                raise
            raise PyptoTypeError(
                "a traced tensor inside p.compile has no value to copy or pickle",
                location=user_location(),
                suggestions=["copy or pickle the inputs or the results of the compiled function instead"],
            ) from None
        text = self._info()["text"]
        return (_tensor_from_value, (arr, text.split("@", 1)[1] if "@" in text else ""))

    def __copy__(self) -> "Tensor":
        fn, args = self.__reduce__()
        return fn(*args)

    def __deepcopy__(self, memo) -> "Tensor":
        return self.__copy__()

    def _scalar(self, what: str):
        if self.size != 1:
            raise PyptoValueError(
                f"{what} needs a tensor with exactly one element, this one has shape {list(self._shape)}",
                location=user_location(),
            )
        return self.numpy().reshape(()).item()

    def __repr__(self) -> str:
        # Always returns (a notebook cell must show something): when the values cannot
        # be computed the repr says why instead of raising.
        try:
            arr = self.numpy()
        except Exception as e:  # noqa: BLE001
            if _has_no_data(e):  # a traced value inside p.compile, a symbolic placeholder
                return f"pypto.Tensor(shape={self._shape_text()}, dtype={self._dtype_text()}, traced)"
            return f"pypto.Tensor(shape={self._shape_text()}, dtype={self._dtype_text()}, values not shown: {_why(e)})"
        body = np.array2string(arr, separator=", ", prefix="pypto.Tensor(")
        return f"pypto.Tensor({body}, dtype={self._dtype.name})"

    def __str__(self) -> str:
        try:
            return str(self.numpy())
        except Exception as e:  # noqa: BLE001
            if _has_no_data(e):
                return f"<traced tensor of shape {self._shape_text()} and dtype {self._dtype_text()}>"
            return f"<tensor of shape {self._shape_text()} and dtype {self._dtype_text()}; values not shown: {_why(e)}>"

    def _shape_text(self) -> str:
        shape = getattr(self, "_shape", None)
        return "?" if shape is None else str(list(shape))

    def _dtype_text(self) -> str:
        dt = getattr(self, "_dtype", None)
        return "?" if dt is None else dt.name

    # --- operators ------------------------------------------------------------------------
    # Python scalars on either side keep the tensor's dtype (numpy 2 weak scalars).

    __hash__ = object.__hash__  # == builds a tensor, so hashing stays by identity

    def __add__(self, o):
        return _binary("add", self, o)

    def __radd__(self, o):
        return _binary("add", o, self)

    def __sub__(self, o):
        return _binary("sub", self, o)

    def __rsub__(self, o):
        return _binary("sub", o, self)

    def __mul__(self, o):
        return _binary("mul", self, o)

    def __rmul__(self, o):
        return _binary("mul", o, self)

    def __truediv__(self, o):
        return _binary("div", self, o)

    def __rtruediv__(self, o):
        return _binary("div", o, self)

    def __floordiv__(self, o):
        return _binary("floor_divide", self, o)

    def __rfloordiv__(self, o):
        return _binary("floor_divide", o, self)

    def __mod__(self, o):
        return _binary("mod", self, o)

    def __rmod__(self, o):
        return _binary("mod", o, self)

    def __pow__(self, o):
        return _binary("pow", self, o)

    def __rpow__(self, o):
        return _binary("pow", o, self)

    def __neg__(self):
        return apply("neg", [self])

    def __pos__(self):
        return self

    def __abs__(self):
        return apply("abs", [self])

    def __invert__(self):
        if self._dtype.name != "bool":
            raise PyptoTypeError(
                f"~ is logical not and needs a bool tensor, not {self._dtype.name} (bitwise ops are not supported)",
                location=user_location(),
            )
        return apply("logical_not", [self])

    def _logic(self, op, o, reflected=False):
        if not isinstance(o, (Tensor, np.ndarray, bool, np.bool_)):
            return NotImplemented
        for t in (self, o):
            dt = t.dtype if isinstance(t, Tensor) else None
            if dt is not None and dt.name != "bool":
                raise PyptoTypeError(
                    f"{op}: & | ^ are logical ops on bool tensors, not {dt.name} (bitwise ops are not supported)",
                    location=user_location(),
                )
        return apply(op, [o, self] if reflected else [self, o])

    def __and__(self, o):
        return self._logic("logical_and", o)

    def __rand__(self, o):
        return self._logic("logical_and", o, True)

    def __or__(self, o):
        return self._logic("logical_or", o)

    def __ror__(self, o):
        return self._logic("logical_or", o, True)

    def __xor__(self, o):
        return self._logic("logical_xor", o)

    def __rxor__(self, o):
        return self._logic("logical_xor", o, True)

    def __eq__(self, o):
        return _binary("equal", self, o)

    def __ne__(self, o):
        return _binary("not_equal", self, o)

    def __lt__(self, o):
        return _binary("less", self, o)

    def __le__(self, o):
        return _binary("less_equal", self, o)

    def __gt__(self, o):
        return _binary("greater", self, o)

    def __ge__(self, o):
        return _binary("greater_equal", self, o)

    def __iter__(self):
        if not self._shape:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self[i] for i in range(self._shape[0]))


def _as_shape(shape, op: str = "p.Tensor", name: str = "shape") -> tuple:
    """shape as a tuple of ints and symbolic Dims (p.constant 0-d tensors become ints)."""
    return check.shape(shape, name, op)


def _is_text_or_objects(data) -> bool:
    """Whether data holds strings or Python objects, which numpy would convert loosely
    ("1.5" to 1.5) or not at all."""
    if isinstance(data, (str, bytes)):
        return True
    try:
        arr = data if isinstance(data, np.ndarray) else np.asarray(data)
    except (TypeError, ValueError):
        return False  # the conversion reports it
    return arr.dtype.kind in "USOMm"


def _has_no_data(e: BaseException) -> bool:
    """Whether realising failed because the tensor is a traced value (inside p.compile)
    or a symbolic placeholder: it has no data, which is no fault."""
    return isinstance(e, PyptoValueError) and "no data" in e.message


def _why(e: BaseException) -> str:
    """An exception's first line, for a repr that cannot show values."""
    text = (getattr(e, "message", None) or str(e)).splitlines()
    return f"{type(e).__name__}: {text[0] if text else ''}"


def _tensor_from_value(arr: np.ndarray, layout_text: str) -> "Tensor":
    """A tensor rebuilt from its values and layout text (a pickle's or a copy's)."""
    dt = check.dtype(arr.dtype, "value", "pickle")
    handle = _from_host(arr, dt)
    if layout_text:
        try:
            handle = _with_layout(handle, layout_text)
        except BaseException:
            _lib.free_handle(handle)
            raise
    return Tensor._wrap(handle)


def _placeholder_from_text(type_text: str) -> "Tensor":
    """A placeholder rebuilt from its type text, e.g. f16[batch,4]@NHWC."""
    h = _lib.Handle()
    _lib.call(_lib.lib.pypto_placeholder_type, type_text.encode(), ctypes.byref(h))
    return Tensor._wrap(h.value)


_SHORT = {"float32": "f32", "float16": "f16", "bfloat16": "bf16", "int8": "i8", "int32": "i32", "int64": "i64", "bool": "bool"}


def _type_text(dt: DType, shape, layout) -> str:
    """A type in the Go core's text syntax: f16[batch,seq*2,1024]@NHWC."""
    text = _SHORT[dt.name] + "[" + ",".join(dim_text(d) for d in shape) + "]"
    if layout.name != "ND":
        text += "@" + _layout_text(layout, shape, dt)
    return text


def _layout_text(layout, shape, dt: DType) -> str:
    """A layout's text; NZ carries the matrix size its fractal shape holds in full."""
    if layout.name != "NZ":
        return layout.name
    if len(shape) < 4 or any(isinstance(d, Dim) for d in shape[-4:-2]):
        return "NZ(0,0)"  # the Go core explains the shape NZ needs
    c0 = 32 // dt.itemsize
    return f"NZ({shape[-3] * 16},{shape[-4] * c0})"


def _with_layout(handle: int, layout_text: str) -> int:
    h = _lib.Handle()
    try:
        _lib.call(_lib.lib.pypto_with_layout, handle, layout_text.encode(), ctypes.byref(h))
    except PyptoError as e:
        e.location = e.location or user_location()
        raise
    _lib.free_handle(handle)
    return h.value


# Handles that ``x[key] = value`` must not free when it rebinds x: the placeholders of
# a function being traced, whose handles the trace is built from afterwards.
_pinned_handles: set = set()


def _from_host(arr: np.ndarray, dt) -> int:
    """Copies a numpy array (any strides) into a new Go tensor of dtype dt (None: the
    array's own, which must be supported); returns its handle."""
    if dt is None:
        dt = check.dtype(arr.dtype, "arr", "from_numpy")
    if not arr.dtype.isnative:
        arr = arr.astype(arr.dtype.newbyteorder("="))
    h = _lib.Handle()
    _lib.call(
        _lib.lib.pypto_from_host,
        dt.code,
        arr.ndim,
        _lib.int64_array(arr.shape),
        _lib.int64_array(arr.strides),
        arr.ctypes.data,
        ctypes.byref(h),
    )
    return h.value


def from_numpy(arr) -> Tensor:
    """A tensor holding a copy of a numpy array (any dtype PyPTO supports, bfloat16 as
    ``ml_dtypes.bfloat16``; non-contiguous, transposed and negatively strided views are
    fine). int64 arrays (numpy's default integer) stay int64; other integer arrays
    (int16, uint8, ...) become int32 when every value fits, else raise naming the first
    value that does not; float64 arrays raise DTypeError: convert them explicitly."""
    return Tensor._wrap(_from_host(host_array(arr, "from_numpy", "arr"), None))


def host_array(arr, op: str, name: str) -> np.ndarray:
    """arr as a numpy array of a dtype PyPTO supports: integer arrays of other widths are
    converted to int32 when their values fit; anything else that is not supported is an
    error naming the argument."""
    if arr is None or isinstance(arr, (str, bytes, dict, set)):
        raise check.fail(op, name, arr, "a numpy array (or nested lists of numbers)")
    try:
        a = np.asarray(arr)
    except (TypeError, ValueError) as e:
        raise check.fail(op, name, arr, f"a numpy array (or nested lists of numbers): {e}") from None
    if a.dtype.kind in "iu" and not check.dtype_supported(a.dtype):
        return _to_int32(a, op, name)
    if a.dtype.kind not in "biuf" and not check.dtype_supported(a.dtype):
        raise check.fail(op, name, arr, "an array of numbers (float32, float16, bfloat16, int8, int32, int64 or bool)", DTypeError)
    check.dtype(a.dtype, name, op)
    return a


def _to_int32(a: np.ndarray, op: str, name: str) -> np.ndarray:
    info = np.iinfo(np.int32)
    bad = (a < info.min) | (a > info.max)
    if bad.any():
        where = np.unravel_index(int(np.argmax(bad)), a.shape) if a.ndim else ()
        raise PyptoValueError(
            f"{op}: {name} is a {a.dtype} array whose value {a[where]} at index {list(int(i) for i in where)} "
            f"does not fit int32, which PyPTO converts {a.dtype} to",
            location=user_location(),
            suggestions=["keep values in [-2**31, 2**31 - 1], convert to int64 (arr.astype(numpy.int64)) or to float32"],
        )
    return a.astype(np.int32)


def as_tensor(x, op: str, name: str = "x") -> Tensor:
    """An op's tensor argument: a p.Tensor, a numpy array (converted as from_numpy does)
    or a Python scalar (a 0-d tensor of its weak dtype)."""
    if isinstance(x, Tensor):
        return x
    if isinstance(x, np.ndarray):
        return Tensor._wrap(_from_host(host_array(x, op, name), None))
    if is_scalar(x):
        return scalar_tensor(x, scalar_dtype(x, None, op))
    raise check.fail(op, name, x, "a p.Tensor, a numpy array or a Python scalar")


# --- applying ops ---------------------------------------------------------------------------

_RANK = {"bool": 0, "int8": 1, "int32": 2, "int64": 3, "bfloat16": 4, "float16": 4, "float32": 5}


def promote_types(a: DType, b: DType) -> DType:
    """The dtype of a binary elementwise op on tensors of dtypes a and b (the table in
    docs/api.md; the Go core's PromoteTypes)."""
    if not isinstance(a, DType) or not isinstance(b, DType):
        a, b = check.dtype(a, "a", "promote_types"), check.dtype(b, "b", "promote_types")
    if a == b:
        return a
    if {a.name, b.name} == {"float16", "bfloat16"}:
        return float32
    return a if _RANK[a.name] >= _RANK[b.name] else b


def is_scalar(x) -> bool:
    """A real Python or numpy scalar (bools, ints, floats; not complex numbers)."""
    return isinstance(x, (numbers.Real, np.bool_, np.integer, np.floating))


def scalar_dtype(value, anchor, op: str = "", exact_compare: bool = False) -> DType:
    """The dtype a Python scalar takes beside tensors of dtype anchor (None: no tensor).

    numpy 2's weak scalars (NEP 50): a Python scalar does not widen a tensor's dtype.
    bool takes the tensor's dtype; int takes it unless the tensor is bool (then int32);
    float takes it when it is a float, else float32. An int that does not fit an integer
    tensor's dtype is an OverflowError, as in numpy, except in comparisons, which
    compare the exact values (in int32 or float32)."""
    if isinstance(value, np.generic) and not isinstance(value, (np.float64, np.int64, np.bool_)):
        return check.dtype(value.dtype, "operand", op)  # numpy scalars of a supported dtype are typed, not weak
    if isinstance(value, (bool, np.bool_)):
        return anchor if anchor is not None else bool_
    if isinstance(value, numbers.Integral):
        v = int(value)
        if anchor is None or anchor == bool_:
            return int32 if -(2**31) <= v < 2**31 else int64 if -(2**63) <= v < 2**63 else float32
        if anchor.is_floating:
            return anchor
        lo, hi = {int8: (-128, 127), int64: (-(2**63), 2**63 - 1)}.get(anchor, (-(2**31), 2**31 - 1))
        if not lo <= v <= hi:
            if exact_compare:
                return int32 if -(2**31) <= v < 2**31 else int64 if -(2**63) <= v < 2**63 else float32
            raise OverflowError(f"{op}: Python integer {v} out of bounds for {anchor.name}")
        return anchor
    if isinstance(value, numbers.Real):
        return anchor if anchor is not None and anchor.is_floating else float32
    raise check.fail(op, "operand", value, "a p.Tensor, a numpy array or a Python scalar")


def scalar_tensor(value, dt: DType) -> Tensor:
    """A 0-d concrete tensor holding value converted to dt. It enters the graph as a
    bound input, so graphs that differ only in a scalar's value share one compiled
    program."""
    with np.errstate(all="ignore"):
        arr = np.asarray(value).astype(dt.numpy)
    return Tensor._wrap(_from_host(arr.reshape(()), dt))


def _binary(op: str, a, b):
    for x in (a, b):
        if not isinstance(x, (Tensor, np.ndarray, numbers.Number, np.generic)):
            return NotImplemented
    return apply(op, [a, b])


#: The Tile level's tile for the next ops of some names: (op names, tile attributes),
#: set by tiled_ops around one tensor op (p.tile_matmul(..., tile_config=)).
op_tile = threading.local()

#: How a ``tile_config`` argument becomes op attributes: ``fn(config, what) -> dict``.
#: The Tile level (tile_level/config.py, above this one) registers it when imported.
_tile_attrs = None


def register_tile_attrs(fn) -> None:
    global _tile_attrs
    _tile_attrs = fn


@contextlib.contextmanager
def tiled_ops(names, config, what: str):
    """Inside, the ops named (by their Go names) carry config's tile attributes: a
    tensor op's ``tile_config=`` (a p.TileConfig or a shape list)."""
    if config is None:
        yield
        return
    attrs = _tile_attrs(config, what)
    saved = getattr(op_tile, "attrs", None)
    op_tile.attrs = (frozenset(names), attrs)
    try:
        yield
    finally:
        op_tile.attrs = saved

_COMPARISONS = {"equal", "not_equal", "less", "less_equal", "greater", "greater_equal"}


def apply(op: str, inputs, attrs=None, scalar_anchor=None, names=None) -> Tensor:
    """Applies a registered Go op, recording the user's location. Python scalars among
    the inputs become 0-d tensors typed by scalar_dtype against the promotion of the
    tensor inputs (or of those listed in scalar_anchor). The result is pending; its
    shape and dtype are known (and checked) now. ``names`` are the inputs' argument
    names, for errors (default: "operand <i>")."""

    ins = inputs
    for x in inputs:
        if not isinstance(x, Tensor):  # arrays and scalars to convert (tensors alone: the eager fast path)
            ins = _tensor_inputs(op, inputs, scalar_anchor, names)
            break
    tile = getattr(op_tile, "attrs", None)
    if tile is not None and op in tile[0]:
        attrs = {**(attrs or {}), **tile[1]}
    loc = user_location_json()
    attrs_json = _json_attrs(attrs) if attrs else None
    h = _lib.Handle()
    _lib.call(
        _lib.lib.pypto_apply,
        op.encode(),
        _lib.handle_array([t._handle for t in ins]),
        len(ins),
        attrs_json,
        loc,
        ctypes.byref(h),
    )
    return Tensor._wrap(h.value)


def _tensor_inputs(op: str, inputs, scalar_anchor, names) -> list:
    """apply's inputs as tensors: numpy arrays copied in, Python scalars as 0-d tensors."""

    def name(i):
        return names[i] if names and i < len(names) else f"operand {i}"

    inputs = [as_tensor(x, op, name(i)) if isinstance(x, np.ndarray) else x for i, x in enumerate(inputs)]
    if any(not isinstance(x, Tensor) for x in inputs):
        for i, x in enumerate(inputs):
            if not isinstance(x, (Tensor, np.ndarray)) and not is_scalar(x):
                raise check.fail(op, name(i), x, "a p.Tensor, a numpy array or a Python scalar")
        anchor = None
        picks = inputs if scalar_anchor is None else [inputs[i] for i in scalar_anchor]
        for x in picks:
            if isinstance(x, Tensor):
                d = x.dtype
                anchor = d if anchor is None else promote_types(anchor, d)
        inputs = [
            x if not is_scalar(x) else scalar_tensor(x, scalar_dtype(x, anchor, op, op in _COMPARISONS))
            for x in inputs
        ]
    return [x if isinstance(x, Tensor) else as_tensor(x, op, name(i)) for i, x in enumerate(inputs)]


def _json_attrs(attrs: dict) -> bytes:
    def conv(v):
        if isinstance(v, (bool, np.bool_)):
            return bool(v)
        if isinstance(v, numbers.Integral):
            return int(v)
        if isinstance(v, numbers.Real):
            return float(v)
        if isinstance(v, (list, tuple)):
            return [e._text if isinstance(e, Dim) else int(e) for e in v]
        return v

    return json.dumps({k: conv(v) for k, v in attrs.items()}).encode()
