"""Named axes in scope: ``vmap(axis_name=...)`` and ``pmap`` bind a name to a size while they
trace, so collectives (psum, all_gather, axis_index, ...) can check and size their results::

    >>> with extend_axis_env("i", 4):
    ...     axis_size("i")
    4
"""
from __future__ import annotations

import threading


class _Env(threading.local):
    frames: tuple = ()


_env = _Env()


class extend_axis_env:
    """Context manager binding axis ``name`` to ``size`` (None binds nothing)."""

    __slots__ = ("name", "size", "prev")

    def __init__(self, name, size):
        self.name, self.size = name, size

    def __enter__(self):
        self.prev = _env.frames
        if self.name is not None:
            _env.frames = self.prev + ((self.name, self.size),)

    def __exit__(self, *exc):
        _env.frames = self.prev


def bound_axis_names() -> list:
    return [n for n, _ in _env.frames]


def axis_size(name) -> int:
    """Size of the innermost axis called ``name``; NameError listing the bound names if none."""
    if isinstance(name, (tuple, list)):
        size = 1
        for n in name:
            size *= axis_size(n)
        return size
    for n, s in reversed(_env.frames):
        if n == name:
            return s
    bound = bound_axis_names()
    raise NameError(f"unbound axis name {name!r}: "
                    + (f"the bound axis names are {bound}" if bound else
                       "no axis names are bound; collectives need an enclosing "
                       "vmap(..., axis_name=...) or pmap(..., axis_name=...)"))
