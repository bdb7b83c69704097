"""The PTO assembler ``ptoas`` (``pip install 'pypto[ptoas]'``): finding it, making it
run, assembling PTO-AS into C++ for the tile library, and writing an export's files.

The ``ptoas`` wheel (0.1.1, the only release on PyPI) installs an executable that does
not start as installed: it asks for its bundled MLIR libraries by names the wheel
renamed (``libMLIRFoo.so.19.1`` is shipped as ``libMLIRFoo-1a2b3c4d.so.19.1``) and for
about 45 libraries the wheel leaves out, of which it uses no symbol. :func:`runnable`
builds, once, a directory of links under both names and an empty shared object for
each absent library (compiled from an empty C file, so it needs a C compiler), and
runs the executable with that directory on ``LD_LIBRARY_PATH``.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import re
import shutil
import struct
import subprocess
import tempfile
import time

from .._core.errors import PyptoError

__all__ = ["PtoasError", "ExportReport", "runnable", "assemble", "export", "VERSION"]

#: The ptoas release the exported PTO-AS is written for (the ``ptoas`` extra pins it).
VERSION = "0.1.1"


class PtoasError(PyptoError):
    """ptoas is missing or cannot run, or rejected a kernel (the message carries its
    diagnostic and the kernel's name)."""


def _distribution():
    try:
        return importlib.metadata.distribution("ptoas")
    except importlib.metadata.PackageNotFoundError:
        return None


def _executable() -> str:
    """The ptoas executable: $PYPTO_PTOAS, the wheel's, or one on PATH."""
    env = os.environ.get("PYPTO_PTOAS")
    if env:
        if not os.access(env, os.X_OK):
            raise PtoasError(f"PYPTO_PTOAS={env} is not an executable file")
        return env
    dist = _distribution()
    if dist is not None:
        for f in dist.files or []:
            if f.name == "ptoas" and f.parent.name == "bin":
                path = os.path.normpath(str(f.locate()))
                if os.access(path, os.X_OK):
                    return path
    found = shutil.which("ptoas")
    if found:
        return found
    raise PtoasError(
        "ptoas (the PTO assembler) is not installed",
        suggestions=[f"pip install 'pypto[ptoas]' (ptoas=={VERSION})", "or set PYPTO_PTOAS to a ptoas executable"],
    )


def _libs_dir(dist) -> str | None:
    """The wheel's directory of bundled libraries (ptoas.libs), if it has one."""
    if dist is None:
        return None
    for f in dist.files or []:
        parts = f.parts
        if len(parts) >= 2 and parts[0] == "ptoas.libs":
            return os.path.normpath(os.path.dirname(str(f.locate())))
    return None


def elf_needed(path: str) -> list:
    """The DT_NEEDED names of a 64-bit little-endian ELF file (its shared libraries)."""
    with open(path, "rb") as fh:
        data = fh.read()
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise PtoasError(f"{path} is not a 64-bit little-endian ELF file")
    phoff, = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    loads, dynamic = [], None
    for i in range(phnum):
        p_type, _flags, p_offset, p_vaddr, _paddr, p_filesz = struct.unpack_from("<IIQQQQ", data, phoff + i * phentsize)
        if p_type == 1:
            loads.append((p_vaddr, p_offset, p_filesz))
        elif p_type == 2:
            dynamic = (p_offset, p_filesz)
    if dynamic is None:
        return []

    def offset(vaddr):
        for va, off, size in loads:
            if va <= vaddr < va + size:
                return off + vaddr - va
        raise PtoasError(f"{path}: a dynamic-section address outside its segments")

    needed, strtab = [], None
    for i in range(dynamic[1] // 16):
        tag, val = struct.unpack_from("<qQ", data, dynamic[0] + 16 * i)
        if tag == 0:
            break
        if tag == 1:
            needed.append(val)
        elif tag == 5:
            strtab = offset(val)
    if strtab is None:
        return []
    return [data[strtab + n:data.index(b"\0", strtab + n)].decode() for n in needed]


def _system_libs() -> set:
    """Shared library names the system's loader finds without help."""
    names = set()
    try:
        out = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True, timeout=30).stdout
        names.update(line.split()[0] for line in out.splitlines()[1:] if line.strip())
    except (OSError, subprocess.SubprocessError):
        pass
    for d in ("/lib64", "/usr/lib64", "/lib", "/usr/lib", "/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu"):
        if os.path.isdir(d):
            names.update(os.listdir(d))
    return names


_HASHED = re.compile(r"^(?P<stem>.+)-[0-9a-f]{8}(?P<suffix>\.so(\..*)?)$")


def _cache_root() -> str:
    return os.environ.get("PYPTO_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "pypto")


def runnable() -> tuple:
    """The command and environment that run ptoas: ``(argv0, env)``. Builds, once, the
    library directory the wheel's executable needs (see the module's doc)."""
    exe = _executable()
    dist = _distribution()
    libs = _libs_dir(dist)
    env = dict(os.environ)
    if libs is None or os.environ.get("PYPTO_PTOAS"):
        return exe, env
    key = hashlib.sha256(f"{exe}:{libs}:{os.path.getmtime(exe)}".encode()).hexdigest()[:16]
    target = os.path.join(_cache_root(), f"ptoas-{dist.version}-{key}")
    if not os.path.isfile(os.path.join(target, ".complete")):
        _build_lib_dir(exe, libs, target)
    env["LD_LIBRARY_PATH"] = target + (os.pathsep + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    return exe, env


def _build_lib_dir(exe: str, libs: str, target: str) -> None:
    os.makedirs(os.path.dirname(target), exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=os.path.basename(target) + ".", dir=os.path.dirname(target))
    try:
        have = set()
        for name in sorted(os.listdir(libs)):
            src = os.path.join(libs, name)
            os.symlink(src, os.path.join(tmp, name))
            have.add(name)
            m = _HASHED.match(name)
            if m and m["stem"] + m["suffix"] not in have:
                plain = m["stem"] + m["suffix"]
                os.symlink(src, os.path.join(tmp, plain))
                have.add(plain)
        system = _system_libs()
        missing = [n for n in elf_needed(exe) if n not in have and n not in system]
        if missing:
            cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc") or shutil.which("clang")
            if cc is None:
                raise PtoasError(
                    f"ptoas needs {len(missing)} libraries its wheel does not ship ({', '.join(missing[:3])}, ...), "
                    "which PyPTO builds as empty shared objects, and there is no C compiler to build them",
                    suggestions=["install a C compiler (cc, gcc or clang), or set CC to one"],
                )
            empty = os.path.join(tmp, "empty.c")
            with open(empty, "w") as fh:
                fh.write("/* an empty library: ptoas lists it but uses no symbol of it */\n")
            for name in missing:
                r = subprocess.run([cc, "-shared", "-fPIC", f"-Wl,-soname,{name}", "-o", os.path.join(tmp, name), empty],
                                   capture_output=True, text=True)  # fmt: skip
                if r.returncode != 0:
                    raise PtoasError(f"building the empty library {name} with {cc} failed: {r.stderr.strip()[:500]}")
        open(os.path.join(tmp, ".complete"), "w").close()
        try:
            os.rename(tmp, target)
        except OSError:  # another process built it meanwhile
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


#: What ptoas 0.1.1 gets wrong that the export cannot work around: for each, a pattern
#: of its diagnostic (or of :func:`defects`' report) and what it is. docs/pto-as.md
#: lists them (tests/tools/test_ptoas.py --update writes the table, and with ptoas
#: installed checks that each is still so).
KNOWN_DEFECTS = [
    (r"'pto\.tcmps' op expects dst/src to be tilebuf", "tcmps",
     "rejected: its lowering leaves the op on memrefs, which its verifier refuses (compares of a tile with a scalar: masks, causal attention, where, argmax)"),
    (r"TCMP\(pto::CmpMode::", "tcmp",
     "miscompiled: written as TCMP(pto::CmpMode::EQ) without its tiles, whatever the predicate"),
    (r"pto\.tcolmax appears|pto\.tcolmin appears", "tcolmax, tcolmin",
     "miscompiled: written as TCOLEXPAND"),
    (r"rounding mode .*CAST_RINT whatever", "tcvt with a rounding mode",
     "miscompiled: the mode is dropped (CAST_RINT, into a bool variable)"),
    (r"'pto\.trowmin' op expects element type to be f16 or f32", "trowmin of integers",
     "rejected: its row minimum takes f16 and f32 only"),
    (r"'pto\.tdiv' op only supports f16/f32 element type", "tdiv of integers",
     "rejected: its division takes f16 and f32 only"),
    (r"'pto\.tmgather' op expects mem, idx and dst to be shaped types", "tmgather",
     "rejected: its verifier refuses the GM window it is given (gathers from GM: embeddings, index_select)"),
    (r"'pto\.tmrgsort' op expects src rows == 1", "tmrgsort of several rows",
     "rejected: it merges one row per op (sorts, topk)"),
]


def known_defect(message: str):
    """The KNOWN_DEFECTS entry a rejection's message matches, or None."""
    for pattern, what, effect in KNOWN_DEFECTS:
        if re.search(pattern, message):
            return what, effect
    return None


# ptoas 0.1.1 accepts some ops it then compiles wrongly; assemble() checks the C++ for
# them, so that an export never hands over C++ that computes something else.
_CALLS = {  # pto op -> the tile library call ptoas writes for it
    "tload": "TLOAD", "tstore": "TSTORE", "tmov": "TMOV", "textract": "TEXTRACT", "tmatmul": "TMATMUL",
    "tmatmul.acc": "TMATMUL_ACC", "tmatmul.bias": "TMATMUL_BIAS", "tadd": "TADD", "tsub": "TSUB", "tmul": "TMUL",
    "tdiv": "TDIV", "tmax": "TMAX", "tmin": "TMIN", "texp": "TEXP", "tlog": "TLOG", "tsqrt": "TSQRT",
    "trsqrt": "TRSQRT", "trecip": "TRECIP", "trelu": "TRELU", "tabs": "TABS", "tneg": "TNEG", "tadds": "TADDS",
    "tsubs": "TSUBS", "tmuls": "TMULS", "tdivs": "TDIVS", "tmins": "TMINS", "trowsum": "TROWSUM",
    "trowmax": "TROWMAX", "trowmin": "TROWMIN", "tcolsum": "TCOLSUM", "tcolmax": "TCOLMAX", "tcolmin": "TCOLMIN",
    "trowexpand": "TROWEXPAND", "tcolexpand": "TCOLEXPAND", "trowexpandsub": "TROWEXPANDSUB",
    "trowexpandmul": "TROWEXPANDMUL", "trowexpanddiv": "TROWEXPANDDIV", "tcvt": "TCVT", "texpands": "TEXPANDS",
    "tsel": "TSEL", "tcmp": "TCMP", "tgather": "TGATHER", "tscatter": "TSCATTER", "tand": "TAND", "tor": "TOR",
    "txor": "TXOR", "tnot": "TNOT", "tshl": "TSHL", "tshr": "TSHR", "tprelu": "TPRELU", "trem": "TREM",
    "trems": "TREMS", "tands": "TANDS", "txors": "TXORS", "tci": "TCI", "tfillpad": "TFILLPAD",
    "treshape": "TRESHAPE", "ttrans": "TTRANS", "tsort32": "TSORT32", "tmrgsort": "TMRGSORT", "taddc": "TADDC", "tsubc": "TSUBC",
}
_OP = re.compile(r'"pto\.([a-z0-9_.]+)"\(')


def defects(pto: str, cpp: str) -> list:
    """What ptoas 0.1.1 got wrong in cpp, the C++ it wrote for pto: ops whose call is
    missing or miscounted, the compare it writes without operands, and rounding modes
    it drops."""
    found = []
    want = {}
    for m in _OP.finditer(pto):
        want[m.group(1)] = want.get(m.group(1), 0) + 1
    for op, n in sorted(want.items()):
        call = _CALLS.get(op)
        if call is None:
            continue
        got = len(re.findall(r"\b" + re.escape(call) + r"\s*[<(]", cpp))
        if got < n:
            found.append(f"pto.{op} appears {n} times in the kernel and {call} {got} times in the C++ (ptoas 0.1.1 drops or renames it)")
    if re.search(r"TCMP\(pto::CmpMode::", cpp):
        found.append("pto.tcmp is written as TCMP(pto::CmpMode::...) without its tiles (a ptoas 0.1.1 defect)")
    modes = set(re.findall(r"round_mode ([A-Z_]+)>", pto)) - {"CAST_RINT"}
    if modes:
        found.append(f"tcvt with rounding mode {', '.join(sorted(modes))}: ptoas 0.1.1 writes CAST_RINT whatever the mode")
    return found


def assemble(pto_path: str, cpp_path: str, insert_sync: bool, kernel: str = "", timeout: float = 3600) -> dict:
    """Runs ptoas on a PTO-AS file (with ``--enable-insert-sync`` for the auto form)
    and writes its C++ to cpp_path. Returns ``{"ms", "flags"}`` (the time ptoas took,
    the set_flag calls in its C++); raises PtoasError carrying ptoas's diagnostic, or
    the defects of :func:`defects`, and the kernel's name (also when ptoas runs past
    timeout seconds: it is slow on kernels of tens of thousands of lines)."""
    exe, env = runnable()
    argv = [exe] + (["--enable-insert-sync"] if insert_sync else []) + [pto_path, "-o", cpp_path]
    start = time.perf_counter()
    try:
        r = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise PtoasError(f"ptoas on kernel {kernel} ({pto_path}) ran past {timeout:g} s") from None
    ms = (time.perf_counter() - start) * 1e3
    if r.returncode != 0:
        diag = [line for line in r.stderr.splitlines() if "error" in line.lower() or "assert" in line.lower() or "UNREACHABLE" in line]
        diag = diag or r.stderr.strip().splitlines()[-5:]
        if r.returncode < 0:
            diag.append(f"(ptoas died with signal {-r.returncode})")
        raise PtoasError(f"ptoas {VERSION} rejected kernel {kernel} ({os.path.basename(pto_path)}):\n" + "\n".join(diag[:8]))
    with open(pto_path) as fh:
        pto = fh.read()
    with open(cpp_path) as fh:
        cpp = fh.read()
    bad = defects(pto, cpp)
    if bad:
        raise PtoasError(f"ptoas {VERSION} accepted kernel {kernel} ({os.path.basename(pto_path)}) but its C++ is wrong:\n" + "\n".join(bad))
    return {"ms": ms, "flags": len(re.findall(r"\bset_flag\(", cpp))}


def write_export(directory: str, payload: dict, assemble_with: bool, errors: str = "raise") -> list:
    """Writes an export (the files of ``pypto_executor_export_pto``'s payload) into
    directory and, with assemble_with, runs ptoas on every kernel file, writing its C++
    beside it (``<kernel>.cpp``, ``<kernel>.manual.cpp``). Returns one dict per kernel:
    task, files, lines, flags_ours (the manual form's set_flags) and, when assembled,
    assembled (both forms), ptoas_ms and flags_ptoas (the set_flags ptoas inserted into
    the auto form). A rejection raises PtoasError, or with errors="record" is kept in
    the kernel's "error"."""
    import base64

    os.makedirs(directory, exist_ok=True)
    for name, data in payload["files"].items():
        if os.path.basename(name) != name:
            raise PtoasError(f"an export file named {name!r} is not a plain file name")
        with open(os.path.join(directory, name), "wb") as fh:
            fh.write(base64.b64decode(data))
    report = []
    for k in payload["kernels"]:
        row = {"task": k["Task"], "files": k["Files"], "lines": k["Lines"], "functions": k["Functions"], "flags_ours": k["Flags"]}
        if assemble_with:
            row.update(assembled=0, ptoas_ms=0.0, flags_ptoas=None)
            for form, name in sorted(k["Files"].items()):
                path = os.path.join(directory, name)
                cpp = os.path.splitext(path)[0] + ".cpp"
                try:
                    r = assemble(path, cpp, form == "auto", kernel=k["Task"])
                except PtoasError as e:
                    if errors != "record":
                        raise
                    row.setdefault("error", {})[form] = e.message
                    continue
                row["assembled"] += 1
                row["ptoas_ms"] += r["ms"]
                if form == "auto":
                    row["flags_ptoas"] = r["flags"]
        report.append(row)
    return report


class ExportReport(list):
    """What an export wrote: one dict per kernel (task, files, lines, functions,
    flags_ours; with ``assemble=True`` also assembled, ptoas_ms, flags_ptoas), and the
    directory and its manifest (``.directory``, ``.manifest``)."""

    def __init__(self, rows, directory, manifest):
        super().__init__(rows)
        self.directory, self.manifest = directory, manifest


def export(executor_handle: int, directory, assemble_with: bool, errors: str = "raise") -> ExportReport:
    """The work of ``Executor.export_pto``: the Go core writes the program of the
    executor's last run as PTO-AS; its files go into directory (see write_export)."""
    import json

    from .._core import lib as _lib

    directory = os.fspath(directory)
    payload = json.loads(_lib.call_string(_lib.lib.pypto_executor_export_pto, executor_handle))
    rows = write_export(directory, payload, assemble_with, errors)
    return ExportReport(rows, directory, payload["manifest"])
