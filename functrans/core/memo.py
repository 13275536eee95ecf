"""Memoization keyed on a Jaxpr's identity (weakly, so transformed jaxprs die with theirs).

Transformations of sub-jaxprs (JVP, batching, partial evaluation, transposition) run again
each time a higher-order primitive is processed; caching them makes repeated calls (e.g. an
eager loop calling ``vmap(jit(f))``) reuse one transformed jaxpr and one compiled kernel::

    >>> @cache_on_jaxpr
    ... def transform(jaxpr, flag): ...
"""
from __future__ import annotations

import functools
import threading
import weakref


def cache_on_jaxpr(fn):
    """Memoize ``fn(jaxpr, *hashable_args)`` per jaxpr object."""
    table: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
    lock = threading.Lock()

    @functools.wraps(fn)
    def wrapper(jaxpr, *args):
        key = tuple(tuple(a) if isinstance(a, list) else a for a in args)
        with lock:
            per = table.get(jaxpr)
            if per is not None and key in per:
                return per[key]
        result = fn(jaxpr, *args)
        with lock:
            table.setdefault(jaxpr, {})[key] = result
        return result

    wrapper.cache_table = table
    return wrapper
