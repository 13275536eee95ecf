"""Where the arguments of the jit program being traced were placed: the shardings shard_map
infers its ``in_specs`` from inside jit (JAX reads them from the arguments' types).

    >>> argument_sharding(1.0) is None
    True
"""
from __future__ import annotations

import contextlib
import threading

from .mesh import Mesh, NamedSharding

__all__ = ["traced_sharding", "traced_arguments_placed", "tracing_arguments",
           "argument_sharding"]


# By the traced argument's variable.
class _TracedArguments(threading.local):
    by_var: dict = {}


_traced_arguments = _TracedArguments()


def traced_sharding(x):
    """The NamedSharding of ``x`` when it is (or, in a derivative, carries as its primal) a
    traced argument of the jit program being traced whose value was placed on a mesh; else
    None."""
    table = _traced_arguments.by_var
    if not table:
        return None
    while getattr(x, "primal", None) is not None:  # (a JVP tracer: its primal's placement)
        x = x.primal
    return table.get(getattr(x, "_var", None))


def traced_arguments_placed() -> bool:
    """Whether the jit program being traced has arguments placed on a mesh."""
    return bool(_traced_arguments.by_var)


@contextlib.contextmanager
def tracing_arguments(tracers, shardings):
    """While a jit program is traced: its argument ``tracers`` were placed as ``shardings``
    say (None: unplaced)."""
    previous = _traced_arguments.by_var
    table = {t._var: s for t, s in zip(tracers, shardings)
             if s is not None and getattr(t, "_var", None) is not None}
    _traced_arguments.by_var = table
    try:
        yield
    finally:
        _traced_arguments.by_var = previous


def argument_sharding(x):
    """The NamedSharding a jit argument brings to the trace: a placed Array's, or a traced
    argument's of an enclosing jit (None otherwise)."""
    s = getattr(x, "_sharding", None)
    if type(s) is NamedSharding and isinstance(s.mesh, Mesh) and s.mesh.size > 1:
        return s
    return traced_sharding(x) if _traced_arguments.by_var else None
