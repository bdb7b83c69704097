"""DLPack both ways, without torch: ``p.from_dlpack(x)`` reads any producer (numpy,
torch, ...) and ``Tensor.__dlpack__`` lets any consumer read a p.Tensor.

Zero copy. A C-contiguous CPU buffer of a PyPTO dtype, aligned to its elements, becomes
a tensor whose bytes *are* the producer's memory: the library keeps the DLPack capsule's
owner alive for as long as anything (a tensor, a pending graph, a compiled program's
constants, a result sharing the buffer) refers to the bytes, and calls the producer's
deleter after that. The release is noticed at a Go garbage collection, forced after
every 256 MiB of external memory newly held (session/external.go), and acted on at the
next import or Python garbage collection. PyPTO never writes the bytes; a write by the
producer is seen by the tensor.

Everything else is copied, with a :class:`CopyWarning` that says why (strides, an
unaligned pointer, an integer width other than int8/int32/int64 stored as int32, a device other
than the CPU): ``copy=True`` copies without a warning, ``copy=False`` raises instead.

Export: ``Tensor.__dlpack__()`` realises the tensor and hands its bytes to the
consumer without a copy (the library pins them until the consumer's deleter runs).
The consumer sees PyPTO's buffer: PyPTO treats buffers as immutable and shares them
between tensors, so a write through the consumer's array changes this tensor and any
tensor sharing its buffer; clone it first to write.
"""

from __future__ import annotations

import ctypes
import gc
import itertools
import threading
import warnings
import weakref

import numpy as np

from .._core import lib as _lib
from .._core import validate as check
from .._core.dtypes import DType, as_dtype, bfloat16
from .._core.errors import DTypeError, PyptoValueError
from .._core.location import user_location
from ..tensor_level.tensor import Tensor, _from_host, host_array

__all__ = ["from_dlpack", "CopyWarning", "external_memory"]


class CopyWarning(UserWarning):
    """A from_dlpack / from_torch conversion had to copy the data; the message says why
    and how to avoid it (pass ``copy=True`` to copy without the warning)."""


# --- the DLPack ABI (dlpack.h, version 0.8: the unversioned managed tensor) --------------------


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", _DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", _DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class _DLManaged(ctypes.Structure):
    pass


_DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(_DLManaged))
_DLManaged._fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", _DELETER)]

_CPU = 1
_DEVICE_NAMES = {1: "CPU", 2: "CUDA", 3: "CUDA host", 4: "OpenCL", 7: "Vulkan", 8: "Metal", 10: "ROCm", 13: "CUDA managed", 14: "oneAPI"}
# (type code, bits) -> numpy dtype name; DLPack codes: 0 int, 1 uint, 2 float, 4 bfloat, 6 bool.
_DL_NUMPY = {
    (0, 8): "int8", (0, 16): "int16", (0, 32): "int32", (0, 64): "int64",
    (1, 8): "uint8", (1, 16): "uint16", (1, 32): "uint32", (1, 64): "uint64",
    (2, 16): "float16", (2, 32): "float32", (2, 64): "float64", (4, 16): "bfloat16", (6, 8): "bool",
}  # fmt: skip

_py = ctypes.pythonapi
_py.PyCapsule_IsValid.argtypes, _py.PyCapsule_IsValid.restype = [ctypes.py_object, ctypes.c_char_p], ctypes.c_int
_py.PyCapsule_GetPointer.argtypes, _py.PyCapsule_GetPointer.restype = [ctypes.py_object, ctypes.c_char_p], ctypes.c_void_p
_py.PyCapsule_SetName.argtypes, _py.PyCapsule_SetName.restype = [ctypes.py_object, ctypes.c_char_p], ctypes.c_int
_CAPSULE_DESTRUCTOR = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_py.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, _CAPSULE_DESTRUCTOR]
_py.PyCapsule_New.restype = ctypes.py_object
_NAME = ctypes.create_string_buffer(b"dltensor")  # a capsule keeps the pointer: keep the buffer
_USED_NAME = ctypes.create_string_buffer(b"used_dltensor")
_raw_valid = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)(("PyCapsule_IsValid", _py))
_raw_pointer = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)(("PyCapsule_GetPointer", _py))


@_CAPSULE_DESTRUCTOR
def _destroy_capsule(capsule):
    # Runs when an exported capsule is freed: if no consumer took it (renamed it
    # "used_dltensor"), its managed tensor is still ours to release.
    if _raw_valid(capsule, _NAME):
        _lib.lib.pypto_dlpack_deleter(_raw_pointer(capsule, _NAME))


# --- external memory: owners kept alive while the library refers to their bytes ----------------

_owners: dict = {}
# (address, dtype code, shape) -> the live tensor wrapping that memory, so that wrapping
# the same memory again (a module's weights on every torch.compile call) reuses it.
_live: dict = {}
_owners_lock = threading.Lock()
_ids = itertools.count(1)


class _Consumed:
    """A consumed DLPack managed tensor: calls the producer's deleter when dropped."""

    __slots__ = ("_managed",)

    def __init__(self, managed):
        self._managed = managed

    def __del__(self):
        m, self._managed = self._managed, None
        if m and m.contents.deleter:
            m.contents.deleter(m)


def _forget(key) -> None:
    ref = _live.get(key)
    if ref is not None and ref() is None:
        del _live[key]


def _release_done(collect: bool = False) -> int:
    """Drops the owners of buffers the library no longer refers to; returns the bytes of
    external memory it still refers to."""
    ids = ctypes.POINTER(ctypes.c_uint64)()
    n, live = ctypes.c_int64(), ctypes.c_int64()
    _lib.call(_lib.lib.pypto_externals_released, int(collect), ctypes.byref(ids), ctypes.byref(n), ctypes.byref(live))
    if n.value:
        done = ids[: n.value]
        _lib.lib.pypto_string_free(ctypes.cast(ids, ctypes.c_void_p))
        with _owners_lock:
            dropped = [_owners.pop(i, None) for i in done]
        del dropped  # deleters run here, outside the lock
    return live.value


def _on_gc(phase, info):
    if phase == "stop" and _owners:
        _release_done()


gc.callbacks.append(_on_gc)


def external_memory(collect: bool = True) -> dict:
    """What PyPTO holds of other libraries' memory: ``{"buffers": owners kept alive,
    "bytes": bytes still referred to}``. ``collect`` first runs the Go garbage collector,
    so buffers nothing refers to any more are released now."""
    live = _release_done(check.flag(collect, "collect", "external_memory"))
    with _owners_lock:
        return {"buffers": len(_owners), "bytes": live}


def _wrap_external(owner, ptr: int, shape, dt: DType) -> Tensor:
    """A tensor over ptr's bytes, keeping owner alive until the library lets them go."""
    _release_done()
    i = next(_ids)
    with _owners_lock:
        _owners[i] = owner
    h = _lib.Handle()
    try:
        _lib.call(_lib.lib.pypto_from_external, dt.code, len(shape), _lib.int64_array(shape), ptr, i, ctypes.byref(h))
    except BaseException:
        with _owners_lock:
            _owners.pop(i, None)
        raise
    return Tensor._wrap(h.value)


# --- import -----------------------------------------------------------------------------------


def from_dlpack(x, copy=None) -> Tensor:
    """A p.Tensor of ``x``, any object with ``__dlpack__`` (a numpy array, a torch
    tensor, ...) or a DLPack capsule.

    - ``copy=None``: shares the memory when it is C-contiguous, on the CPU, aligned and
      of a PyPTO dtype; otherwise copies with a :class:`CopyWarning` saying why.
    - ``copy=True``: always copies (no warning); ``copy=False``: never copies (raises
      where a copy would be needed).

    int64 is shared like the others; other integer widths (int16, uint8, ...) are
    copied into int32 when every value fits (else a
    ValueError names the first that does not); float64 raises DTypeError: convert first.
    See the module's documentation for how long the producer's memory is kept."""
    return import_dlpack(x, None if copy is None else check.flag(copy, "copy", "from_dlpack"), "from_dlpack")


def import_dlpack(x, copy, op: str) -> Tensor:
    """from_dlpack for the function op (named in messages)."""
    capsule, holder = _capsule_of(x, op)
    managed = ctypes.cast(_py.PyCapsule_GetPointer(capsule, _NAME), ctypes.POINTER(_DLManaged))
    t = managed.contents.dl_tensor
    view, why = _host_view(t)
    if why is None and copy is not True:
        dt = as_dtype(view.dtype)
        ptr = (t.data or 0) + t.byte_offset
        key = (ptr, dt.code, view.shape)
        ref = _live.get(key)
        same = ref() if ref is not None else None
        if same is not None:
            # Memory PyPTO already wraps: its first owner is alive (the tensor holds it),
            # so this is the same memory; the new capsule is left to free itself.
            return same
        _py.PyCapsule_SetName(capsule, _USED_NAME)  # ours now: the capsule no longer frees it
        out = _wrap_external(_Consumed(managed), ptr, view.shape, dt)
        _live[key] = weakref.ref(out, lambda _, k=key: _forget(k))
        return out
    if copy is False:
        raise PyptoValueError(
            f"{op}: cannot share this memory without a copy: {why}",
            location=user_location(),
            suggestions=["pass copy=None (copy with a warning) or copy=True"],
        )
    if why is not None and copy is None:
        warnings.warn(f"{op} copies the data: {why}", CopyWarning, stacklevel=_stacklevel())
    arr = host_array(view, op, "x")  # int widths -> int32 (range-checked)
    out = Tensor._wrap(_from_host(arr, None))
    del holder  # the producer's memory was read: the capsule may go
    return out


def _stacklevel() -> int:
    """The stack level of the user's call for a warning (past pypto's frames)."""
    import sys

    f, level = sys._getframe(1), 1
    while f is not None and f.f_globals.get("__name__", "").startswith("pypto"):
        f, level = f.f_back, level + 1
    return level


def _capsule_of(x, op: str):
    """x's DLPack capsule (legacy, unconsumed) and what keeps its memory alive."""
    if type(x).__name__ == "PyCapsule":
        if not _py.PyCapsule_IsValid(x, _NAME):
            raise PyptoValueError("from_dlpack: the capsule is not an unconsumed 'dltensor' capsule (it may have been used already)", location=user_location())
        return x, x
    if not hasattr(x, "__dlpack__"):
        raise check.fail(
            op, "x", x, "an object with __dlpack__ (a numpy array, a torch tensor, ...) or a DLPack capsule",
            suggestions=["p.from_numpy takes lists and scalars"],
        )
    device = getattr(x, "__dlpack_device__", None)
    if device is not None:
        kind = device()[0]
        if int(kind) != _CPU:
            raise PyptoValueError(
                f"from_dlpack: the data is on a {_DEVICE_NAMES.get(int(kind), f'device of DLPack type {int(kind)}')} device; PyPTO reads host (CPU) memory",
                location=user_location(),
                suggestions=["move it to the CPU first, e.g. t.cpu() for a torch tensor"],
            )
    try:
        capsule = x.__dlpack__()
    except (RuntimeError, TypeError, BufferError) as e:
        raise PyptoValueError(f"from_dlpack: {type(x).__name__}.__dlpack__() refused: {e}", location=user_location()) from None
    if not _py.PyCapsule_IsValid(capsule, _NAME):
        raise PyptoValueError("from_dlpack: the producer did not return a 'dltensor' capsule", location=user_location())
    return capsule, capsule


def _host_view(t: _DLTensor):
    """A numpy view of a DLTensor's memory and why it cannot be shared as it is (None:
    it can)."""
    if t.device.device_type != _CPU:
        name = _DEVICE_NAMES.get(t.device.device_type, f"device of DLPack type {t.device.device_type}")
        raise PyptoValueError(f"from_dlpack: the data is on a {name} device; PyPTO reads host (CPU) memory", location=user_location())
    if t.dtype.lanes != 1 or (t.dtype.code, t.dtype.bits) not in _DL_NUMPY:
        raise DTypeError(
            f"from_dlpack: unsupported DLPack dtype (code {t.dtype.code}, {t.dtype.bits} bits, {t.dtype.lanes} lanes)",
            location=user_location(),
        )
    name = _DL_NUMPY[(t.dtype.code, t.dtype.bits)]
    npdt = bfloat16.numpy if name == "bfloat16" else np.dtype(name)
    if name == "float64":
        raise DTypeError(
            "from_dlpack: float64 is not a PyPTO dtype",
            location=user_location(),
            suggestions=["convert first: t.float() for a torch tensor, arr.astype(numpy.float32) for numpy"],
        )
    shape = tuple(t.shape[i] for i in range(t.ndim))
    item = npdt.itemsize
    strides = tuple(t.strides[i] * item for i in range(t.ndim)) if t.strides else None
    ptr = (t.data or 0) + t.byte_offset
    view = _array_at(ptr, shape, strides, npdt)
    why = None
    if view.size and not view.flags.c_contiguous:
        why = f"its strides {[s // item for s in view.strides]} (elements) are not C-contiguous for shape {list(shape)}"
    elif view.size and ptr % item:
        why = f"its data pointer {ptr:#x} is not aligned to {item}-byte elements"
    elif not _supported(npdt):
        why = f"{name} is stored as int32 (values are range-checked)"
    return view, why


def _supported(npdt) -> bool:
    try:
        as_dtype(npdt)
        return True
    except DTypeError:
        return False


def _array_at(ptr: int, shape, strides, npdt) -> np.ndarray:
    """A numpy array over memory at ptr (no copy)."""
    size = int(np.prod(shape, dtype=np.int64)) if shape else 1
    if size == 0:
        return np.empty(shape, dtype=npdt)
    if strides is None:
        lo, hi = 0, size * npdt.itemsize
    else:
        lo = sum(min(0, (d - 1) * s) for d, s in zip(shape, strides))
        hi = sum(max(0, (d - 1) * s) for d, s in zip(shape, strides)) + npdt.itemsize
    buf = (ctypes.c_char * (hi - lo)).from_address(ptr + lo)
    return np.ndarray(shape, dtype=npdt, buffer=buf, offset=-lo, strides=strides)


# --- export -----------------------------------------------------------------------------------


def tensor_dlpack(self: Tensor, *, stream=None, max_version=None, dl_device=None, copy=None):
    """A DLPack capsule sharing this tensor's bytes (realised first): what
    ``numpy.from_dlpack(t)`` and ``torch.from_dlpack(t)`` call. ``copy=True`` shares a
    new copy instead; the device is always the CPU."""
    if stream is not None:
        raise BufferError("a p.Tensor is host memory: __dlpack__ takes no stream")
    if dl_device is not None and tuple(int(v) for v in dl_device) != (_CPU, 0):
        raise BufferError(f"a p.Tensor is host (CPU) memory and cannot be exported to DLPack device {tuple(dl_device)}")
    src = Tensor._wrap(_from_host(self.numpy(), None)) if copy is True else self
    ptr = ctypes.c_void_p()
    _lib.call(_lib.lib.pypto_dlpack_export, src._handle, ctypes.byref(ptr))
    try:
        return _py.PyCapsule_New(ptr.value, _NAME, _destroy_capsule)
    except BaseException:
        _lib.lib.pypto_dlpack_deleter(ptr.value)
        raise


def tensor_dlpack_device(self: Tensor):
    """(DLPack device type, id): (1, 0), the CPU."""
    return (_CPU, 0)


Tensor.__dlpack__ = tensor_dlpack
Tensor.__dlpack_device__ = tensor_dlpack_device
