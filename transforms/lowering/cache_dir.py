"""Where compiled kernels (and jit's private BLAS copy) are cached: a per-user directory,
created with mode 0700, for this functrans version; and how entries are written into it.
Kept apart from ``compile.py`` so that modules loaded while ``compile.py`` itself is being
imported (the BLAS library choice) can use it.

    >>> os.path.basename(cache_dir()).startswith("kernels-")
    True
"""
from __future__ import annotations

import os
import stat
import tempfile
import threading
import warnings

from functrans._version import __version__

_private = None
_warned = False  # about a failed write, in this process
_warn_lock = threading.Lock()


class CacheWarning(RuntimeWarning):
    """A compiled-code cache entry was unreadable or corrupt (it is compiled again), or the
    cache could not be written (the process goes on without it)."""


def cache_dir() -> str:
    """The kernel cache directory, created with mode 0700. ``FUNCTRANS_CACHE_DIR`` overrides
    the default (``$XDG_CACHE_HOME/functrans`` or ``~/.cache/functrans``)."""
    base = os.environ.get("FUNCTRANS_CACHE_DIR")
    if not base:
        root = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        base = os.path.join(root, "functrans")
    path = os.path.join(base, "kernels-" + __version__)
    os.makedirs(path, mode=0o700, exist_ok=True)
    st = os.stat(path)
    if hasattr(os, "getuid") and (st.st_uid != os.getuid() or st.st_mode & (stat.S_IWGRP |
                                                                          stat.S_IWOTH)):
        # Someone else could plant code here: use a private directory for this process.
        return private_dir()
    return path


def private_dir() -> str:
    """A temporary directory of this process's own (made once)."""
    global _private
    if _private is None:
        _private = tempfile.mkdtemp(prefix="functrans-kernels-")
    return _private


def write_atomically(path: str, write) -> None:
    """Create ``path`` through a temporary file in its directory that ``write(file)`` fills
    (binary) and that then replaces ``path``: readers never see half a file, and processes
    writing the same entry all succeed. If anything fails, the temporary file is removed
    (on a full disk, a partial copy left by every run would keep the disk full) and the
    error raised."""
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=os.path.basename(path) + ".",
                               suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def warn_unwritable(directory: str, error: OSError) -> None:
    """Warn (once per process: later writes fail alike) that the cache in ``directory``
    could not be written, and why; the caller goes on without it."""
    global _warned
    with _warn_lock:
        if _warned:
            return
        _warned = True
    warnings.warn(f"functrans: cannot write the compiled-code cache in {directory} ({error}); "
                  "going on without caching there", CacheWarning, stacklevel=3)
