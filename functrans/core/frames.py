"""Which stack frames are the user's: the frame-exclusion registry (JAX's
``jax._src.traceback_util``, re-exported there by :mod:`functrans.as_jax.jax_src.traceback_util`).

Libraries (flax, equinox, jaxtyping) register their own source files so that the lines
functrans records for errors and jaxprs (:func:`functrans.core.ir.source_info`) and the
frames ``debug.breakpoint`` shows are their users', not the library's.

    >>> register_exclusion("/srv/mylib/")
    >>> "/srv/mylib/" in _exclude_paths
    True
"""
from __future__ import annotations

import os

from . import ir

__all__ = ["register_exclusion", "path_starts_with", "include_frame"]

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
