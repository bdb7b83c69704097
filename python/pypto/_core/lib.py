"""Loading libpypto.so (the Go core, built with ``go build -buildmode=c-shared``) and
calling it.

The library is loaded with ``ctypes.CDLL``, which releases the GIL during every call, so
several Python threads run Go code in parallel (the Go side is thread-safe). Every
export but two returns a status: 0 for success, otherwise the handle of an error whose
details are fetched as JSON and raised as the matching :mod:`pypto.errors` exception.
"""

from __future__ import annotations

import atexit
import ctypes
import json
import os
import signal
import threading

from . import errors

#: The C ABI version this Python package was written against (capi/main.go abiVersion).
ABI_VERSION = 7

LIB_NAME = "libpypto.so"

_status = ctypes.c_size_t  # uintptr_t: 0 or an error handle
_handle = Handle = ctypes.c_size_t  # a handle, uintptr_t
_P = ctypes.POINTER
_i32, _i64, _vp, _cp = ctypes.c_int32, ctypes.c_int64, ctypes.c_void_p, ctypes.c_char_p
_str_out = (_P(_vp), _P(ctypes.c_size_t))

# name -> argtypes; every one returns a status unless listed in _RESTYPES.
_SIGNATURES = {
    "pypto_abi_version": (),
    "pypto_handle_free": (_handle,),
    "pypto_string_free": (_vp,),
    "pypto_error_json": (_handle, *_str_out),
    "pypto_from_host": (_i32, _i32, _P(_i64), _P(_i64), _vp, _P(_handle)),
    "pypto_zeros": (_i32, _i32, _P(_i64), _P(_handle)),
    "pypto_placeholder": (_i32, _i32, _P(_i64), _P(_handle)),
    "pypto_apply": (_cp, _P(_handle), _i32, _cp, _cp, _P(_handle)),
    "pypto_tensor_info": (_handle, _P(_i32), _P(_i32), _P(_i64), _i32, _P(_i32)),
    "pypto_realize": (_handle,),
    "pypto_copy_out": (_handle, _vp, _i32, _P(_i64)),
    "pypto_set_device": (_cp,),
    "pypto_get_device": _str_out,
    "pypto_last_stats_json": _str_out,
    "pypto_cache_info_json": _str_out,
    "pypto_cache_clear": (),
    "pypto_watch_interrupts": (_i32,),
    "pypto_interrupt": (),
    "pypto_executor_create": (_cp, _P(_handle), _i32, _P(_handle), _i32, _P(_handle)),
    "pypto_executor_create_config": (_cp, _P(_handle), _i32, _P(_handle), _i32, _cp, _P(_handle)),
    "pypto_config_check": (_cp,),
    "pypto_executor_num_outputs": (_handle, _P(_i32)),
    "pypto_executor_run": (_handle, _P(_handle), _i32, _P(_handle), _i32),
    "pypto_executor_last_stats": (_handle, _P(_i64), _P(ctypes.c_double), _P(_i32)),
    "pypto_executor_stats_json": (_handle, *_str_out),
    "pypto_executor_dump": (_handle, *_str_out),
    "pypto_executor_export_pto": (_handle, *_str_out),
    "pypto_kernel_export_pto": (_cp, _cp, _i32, _cp, *_str_out),
    "pypto_pto_program_load": (_cp, _cp, _cp, _P(_handle)),
    "pypto_pto_program_info": (_handle, *_str_out),
    "pypto_pto_program_run": (_handle, _P(_handle), _i32, _P(_handle), _i32, _i64, *_str_out),
    "pypto_pto_kernel_read": (_cp, _i32, *_str_out),
    "pypto_executor_visualization_json": (_handle, *_str_out),
    "pypto_op_names_json": _str_out,
    "pypto_lowered_ops_json": _str_out,
    "pypto_composite_ops_json": _str_out,
    "pypto_placeholder_type": (_cp, _P(_handle)),
    "pypto_tensor_type_json": (_handle, *_str_out),
    "pypto_with_layout": (_handle, _cp, _P(_handle)),
    "pypto_dim_canonical": (_cp, *_str_out),
    "pypto_executor_info_json": (_handle, *_str_out),
    "pypto_executor_run_profiled": (_handle, _P(_handle), _i32, _P(_handle), _i32),
    "pypto_executor_last_profile": (_handle, _P(_handle)),
    "pypto_profile_json": (_handle, *_str_out),
    "pypto_profile_trace": (_handle, _cp),
    "pypto_executor_debug": (_handle, _P(_handle), _i32, _P(_handle)),
    "pypto_debug_info_json": (_handle, *_str_out),
    "pypto_debug_next": (_handle, _P(_i32)),
    "pypto_debug_step": (_handle, _P(_i32), _P(_i32)),
    "pypto_debug_paused_json": (_handle, *_str_out),
    "pypto_debug_set_instr_breaks": (_handle, _cp),
    "pypto_debug_tile_json": (_handle, _cp, *_str_out),
    "pypto_debug_close": (_handle,),
    "pypto_debug_value": (_handle, _i32, _P(_handle)),
    "pypto_debug_results": (_handle, _P(_handle), _i32),
    "pypto_mesh_json": (_cp, *_str_out),
    "pypto_collective": (_cp, _P(_vp), _P(_vp), _i32, *_str_out),
    "pypto_realize_stats": (_handle, *_str_out),
    "pypto_progress_json": _str_out,
    "pypto_from_external": (_i32, _i32, _P(_i64), _vp, ctypes.c_uint64, _P(_handle)),
    "pypto_externals_released": (_i32, _P(_P(ctypes.c_uint64)), _P(_i64), _P(_i64)),
    "pypto_dlpack_export": (_handle, _P(_vp)),
    "pypto_dlpack_deleter": (_vp,),
    "pypto_track": (_handle, _P(_handle)),
    "pypto_is_tracked": (_handle, _P(_i32)),
    "pypto_detach": (_handle, _P(_handle)),
    "pypto_grad": (_handle, _P(_handle), _i32, _handle, _cp, _P(_handle)),
    "pypto_realize_all": (_P(_handle), _i32),
    "pypto_differentiable_ops_json": _str_out,
    "pypto_trace_create": (_cp, _P(_handle), _i32, _P(_handle), _i32, _P(_handle)),
    "pypto_trace_compile": (_handle, _cp, _handle, _P(_handle)),
    "pypto_trace_json": (_handle, *_str_out),
    "pypto_trace_constant": (_handle, _i32, _P(_handle)),
    "pypto_pool_create": (_i64, _P(_handle)),
    "pypto_pool_stats_json": (_handle, *_str_out),
    "pypto_executor_run_report": (_handle, _P(_handle), _i32, _P(_handle), _i32, _i32, *_str_out),
}
_RESTYPES = {"pypto_abi_version": _i32, "pypto_string_free": None, "pypto_dlpack_deleter": None}


#: The pypto package's directory (this file is in its _core/).
PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def library_path() -> str:
    """Where the library is loaded from: $PYPTO_LIBRARY, else the package's directory
    (setup.py builds it there)."""
    return os.environ.get("PYPTO_LIBRARY") or os.path.join(PACKAGE_DIR, LIB_NAME)


def _load() -> ctypes.CDLL:
    path = library_path()
    rebuild = (
        "Reinstall PyPTO so that its Go library is built: `pip install .` (or `pip install -e .` "
        "in a source checkout); this needs Go 1.26 or newer and a C compiler (gcc)."
    )
    if not os.path.exists(path):
        raise ImportError(f"PyPTO's native library is missing: {path} does not exist. {rebuild}")
    try:
        lib = ctypes.CDLL(path)
    except OSError as e:
        raise ImportError(
            f"PyPTO's native library {path} cannot be loaded: {e}. "
            f"It needs glibc 2.34 or newer (musl-based systems are not supported). {rebuild}"
        ) from e
    try:
        version_fn = lib.pypto_abi_version
    except AttributeError:
        raise ImportError(f"{path} is not a PyPTO library (it has no pypto_abi_version). {rebuild}") from None
    version_fn.argtypes, version_fn.restype = [], _i32
    version = version_fn()
    if version != ABI_VERSION:
        raise ImportError(
            f"PyPTO's native library {path} has C ABI version {version}, but this Python package "
            f"needs version {ABI_VERSION}: the library and the Python code come from different "
            f"builds. {rebuild}"
        )
    missing = [name for name in _SIGNATURES if not hasattr(lib, name)]
    if missing:
        raise ImportError(f"PyPTO's native library {path} lacks {', '.join(missing)}. {rebuild}")
    for name, argtypes in _SIGNATURES.items():
        fn = getattr(lib, name)
        fn.argtypes = list(argtypes)
        fn.restype = _RESTYPES.get(name, _status)
    return lib


lib = _load()

# --- Ctrl-C ----------------------------------------------------------------------------
# A ctypes call holds the main thread until it returns, and Python raises
# KeyboardInterrupt only after that, so a long run must be stopped from the Go side.
# Python's C-level signal handler writes each caught signal's number to the fd given to
# signal.set_wakeup_fd; Go watches the read end of that pipe and stops the runs in
# progress on SIGINT. The interrupted call reports an error of type "Interrupted",
# raised as KeyboardInterrupt. If the program already uses the wakeup fd (asyncio
# does while its loop runs), it is left alone: runs then end on their step budget.


def _watch_interrupts() -> None:
    if threading.current_thread() is not threading.main_thread():
        return
    r, w = os.pipe()
    os.set_blocking(w, False)
    try:
        old = signal.set_wakeup_fd(w, warn_on_full_buffer=False)
    except (ValueError, OSError):
        os.close(r)
        os.close(w)
        return
    if old != -1:
        signal.set_wakeup_fd(old)
        os.close(r)
        os.close(w)
        return
    st = lib.pypto_watch_interrupts(r)  # the library keeps r; w stays open for Python
    if st:
        lib.pypto_handle_free(st)
        os.close(r)


_watch_interrupts()

# --- fork safety ---------------------------------------------------------------------
# The Go runtime does not survive fork(): a child that calls into it would hang. Mark
# forked children and refuse every call there with a clear error instead.
_forked = False


def _mark_forked() -> None:
    global _forked
    _forked = True


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_mark_forked)

# At exit the process is ending: handles are not freed one by one any more.
_exiting = False


def _mark_exiting() -> None:
    global _exiting
    _exiting = True


atexit.register(_mark_exiting)


def _fork_error() -> errors.DeviceError:
    return errors.DeviceError(
        f"PyPTO cannot be used in a process forked after it was imported (this is process {os.getpid()})",
        causes=["the Go runtime inside PyPTO does not survive fork()"],
        suggestions=[
            "use multiprocessing with the 'spawn' start method: "
            "multiprocessing.set_start_method('spawn') or multiprocessing.get_context('spawn')"
        ],
    )


# --- calls -----------------------------------------------------------------------------


def call(fn, *args) -> None:
    """Calls an export that returns a status, raising the error it reports."""
    if _forked:
        raise _fork_error()
    st = fn(*args)
    if st:
        raise error_from_status(st)


def error_from_status(st: int) -> errors.PyptoError:
    """Fetches the details of an error handle, frees it and builds the exception."""
    out, n = _vp(), ctypes.c_size_t()
    st2 = lib.pypto_error_json(st, ctypes.byref(out), ctypes.byref(n))
    if st2:  # should not happen; do not recurse
        lib.pypto_handle_free(st2)
        lib.pypto_handle_free(st)
        return errors.InternalError(f"PyPTO could not describe error handle {st}")
    try:
        text = ctypes.string_at(out.value, n.value).decode("utf-8", "replace")
    finally:
        lib.pypto_string_free(out)
        lib.pypto_handle_free(st)
    d = json.loads(text)
    if d.get("type") == "Interrupted":
        return KeyboardInterrupt(d.get("message", ""))
    return errors.from_json_dict(d)


def call_string(fn, *args) -> str:
    """Calls an export that returns a C string (the last two arguments) and frees it."""
    out, n = _vp(), ctypes.c_size_t()
    call(fn, *args, ctypes.byref(out), ctypes.byref(n))
    try:
        return ctypes.string_at(out.value, n.value).decode("utf-8", "replace")
    finally:
        lib.pypto_string_free(out)


def free_handle(h: int) -> None:
    """Releases a handle; used by finalizers, so it never raises."""
    if _forked or _exiting or not h:
        return
    st = lib.pypto_handle_free(h)
    if st:
        lib.pypto_handle_free(st)


def int64_array(values):
    values = list(values)
    return (_i64 * len(values))(*values) if values else None


def handle_array(hs):
    hs = list(hs)
    return (_handle * max(len(hs), 1))(*hs)
