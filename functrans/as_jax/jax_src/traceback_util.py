"""``jax._src.traceback_util``: libraries (flax, equinox, jaxtyping) register their own source
files here so that the lines functrans records for errors and jaxprs are their users' lines,
not the library's.

    >>> from functrans.as_jax.jax_src import traceback_util
    >>> traceback_util.register_exclusion("/srv/mylib/")
    >>> "/srv/mylib/" in traceback_util._exclude_paths
    True
"""
from __future__ import annotations

import functools
import os

from functrans.core import ir

_exclude_paths: list[str] = []
"""The paths registered, as JAX lists them (flax edits this list directly)."""


def register_exclusion(path: str) -> None:
    """Treat code in ``path`` (a file or a directory prefix) as library code.

        >>> register_exclusion(__file__)
    """
    _exclude_paths.append(path)
    ir.register_internal_path(path)


def path_starts_with(path: str, prefix: str) -> bool:
    """Whether ``path`` is ``prefix`` or lies under it."""
    return os.path.abspath(path).startswith(os.path.abspath(prefix))


def include_frame(frame) -> bool:
    """Whether ``frame`` is user code: outside functrans and every registered path.

        >>> import sys
        >>> include_frame(sys._getframe())
        True
    """
    filename = frame.f_code.co_filename
    return (not ir._is_internal(filename)
            and not any(path_starts_with(filename, p) for p in _exclude_paths))


def api_boundary(fun=None, **_options):
    """Mark ``fun`` as a library entry point. functrans filters no tracebacks, so ``fun`` is
    returned as it is (also as ``@api_boundary(repro_api_name=...)``).

        >>> api_boundary(len) is len
        True
    """
    if fun is None:
        return functools.partial(api_boundary, **_options)
    return fun
