"""``jax.extend.source_info_util``: where functrans records the user's line for each
equation (:func:`functrans.core.ir.source_info`). Libraries mark their own source files as
internal, so the recorded line is their caller's.

    >>> from functrans.extend import source_info_util
    >>> source_info_util.register_exclusion("/srv/mylib/")
"""
from __future__ import annotations

from functrans.core import ir

__all__ = ["register_exclusion", "current"]


def register_exclusion(path: str) -> None:
    """Treat source files under ``path`` (a file, or a directory prefix) as library code,
    skipped when functrans records the user's line.

        >>> register_exclusion(__file__)
    """
    ir.register_internal_path(path)


def current():
    """The user's source position now (file, line, function), or None outside user code.

        >>> current() is None or current().lineno > 0
        True
    """
    return ir.source_info()
