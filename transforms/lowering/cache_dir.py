"""Where compiled kernels (and jit's private BLAS copy) are cached: a per-user directory,
created with mode 0700, for this functrans version. Kept apart from ``compile.py`` so that
modules loaded while ``compile.py`` itself is being imported (the BLAS library choice) can
use it.

    >>> os.path.basename(cache_dir()).startswith("kernels-")
    True
"""
from __future__ import annotations

import os
import stat
import tempfile

from functrans._version import __version__

_private = None


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
