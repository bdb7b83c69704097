"""Writing files the user asked for (profiles, compilation pages, exports) so that none is
ever left looking complete when it is not: the bytes go to a temporary file beside the
destination, which replaces it (a rename) only once everything is written and synced.
A failure (a directory that cannot be written, a full disk, a file-size limit) leaves
the destination as it was, removes the temporary file, and raises PyptoIOError naming
the destination."""

from __future__ import annotations

import contextlib
import os
import tempfile

from .errors import PyptoIOError
from .location import user_location


def _fail(what: str, path: str, e: BaseException) -> PyptoIOError:
    reason = getattr(e, "strerror", None) or str(e) or type(e).__name__
    return PyptoIOError(f"{what}: cannot write {path}: {reason}", location=user_location(),
                        suggestions=["check that the directory exists and is writable, and that the disk has room"])


def make_dirs(directory: str, what: str) -> None:
    """os.makedirs(directory, exist_ok=True), its failure a PyptoIOError."""
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as e:
        raise _fail(what, directory, e) from None


@contextlib.contextmanager
def replacing(path, what: str):
    """Yields a temporary path beside ``path`` to write; when the block ends without an
    error the file there replaces ``path``. ``what`` names the write in errors."""
    path = os.fspath(path)
    directory, base = os.path.split(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{base}.", suffix=".partial", dir=directory or ".")
        os.close(fd)
    except OSError as e:
        raise _fail(what, path, e) from None
    try:
        yield tmp
        with open(tmp, "rb+") as f:  # what another writer (the Go core) put there, synced
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except OSError as e:
        _remove(tmp)
        raise _fail(what, path, e) from None
    except BaseException:
        _remove(tmp)
        raise


def write_text(path, text: str, what: str) -> None:
    """Writes text (UTF-8) to path as replacing() does."""
    with replacing(path, what) as tmp:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()


def _remove(tmp: str) -> None:
    with contextlib.suppress(OSError):
        os.remove(tmp)
