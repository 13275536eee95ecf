"""Corrupt entries in Numba's on-disk cache are rebuilt, not fatal.

Numba caches the machine code of functrans's ``cache=True`` functions (the runtime helpers,
the fast-math routes, the kernels of equations the native backend leaves to Numba) in index
and data files it unpickles when a process first needs them. A truncated or flipped file
makes that unpickling (or rebuilding the object code) raise, and the process dies inside
Numba. :func:`install` wraps Numba's cache loader so that, for functions defined by
functrans (its package or its kernel cache directory), such an entry is deleted with a
warning and compiled again; other code's caches are left to Numba's own behaviour. Saving
such a function's entry can fail too (a full disk): Numba then raises out of the compile,
although the code is built; the process goes on without the entry, with a
:class:`CacheWarning` (once; Numba removes its temporary file itself).

    >>> install()   # idempotent
"""
from __future__ import annotations

import inspect
import os
import warnings

from numba.core import caching

from .cache_dir import CacheWarning, warn_unwritable

__all__ = ["install", "CacheWarning"]

_PACKAGE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _ours(cache) -> bool:
    from .cache_dir import cache_dir
    try:
        path = os.path.abspath(inspect.getfile(cache._py_func))
    except (TypeError, AttributeError):
        return False
    roots = [os.path.abspath(_PACKAGE), os.path.abspath(cache_dir())]
    here = os.path.abspath(os.path.dirname(__file__))  # an installed copy of transforms/
    return any(path.startswith(root + os.sep) for root in roots + [os.path.dirname(here)])


def _discard(cache) -> None:
    files = getattr(cache, "_cache_file", None)
    paths = [getattr(files, "_index_path", None)]
    try:
        directory = os.path.dirname(paths[0])
        base = os.path.basename(paths[0])[:-len(".nbi")]
        paths += [os.path.join(directory, f) for f in os.listdir(directory)
                  if f.startswith(base) and f.endswith(".nbc")]
    except (TypeError, OSError):
        pass
    for p in paths:
        if p:
            try:
                os.unlink(p)
            except OSError:
                pass


def install() -> None:
    """Make corrupt cache entries of functrans's functions a rebuild with a warning, and
    failures to save them a warning."""
    if getattr(caching.Cache.load_overload, "_functrans_guard", False):
        return
    original, original_save = caching.Cache.load_overload, caching.Cache.save_overload

    def load_overload(self, sig, target_context):
        try:
            return original(self, sig, target_context)
        except Exception as e:  # unpickling, truncated object code, ...
            if not _ours(self):
                raise
            where = getattr(getattr(self, "_cache_file", None), "_index_path", "")
            warnings.warn(f"functrans: discarding a corrupt Numba cache entry ({where}: "
                          f"{type(e).__name__}); it is compiled again", CacheWarning,
                          stacklevel=2)
            _discard(self)
            return None

    def save_overload(self, sig, data):
        try:
            original_save(self, sig, data)
        except OSError as e:
            if not _ours(self):
                raise
            warn_unwritable(getattr(self, "_cache_path", ""), e)

    load_overload._functrans_guard = True
    caching.Cache.load_overload = load_overload
    caching.Cache.save_overload = save_overload
