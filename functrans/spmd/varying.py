"""Which manual mesh axes a value inside ``shard_map`` varies over (JAX's "varying manual
axes", ``jax.typeof(x).manual_axis_type.varying``), for ``typeof`` to show.

An argument varies over the axes its ``in_spec`` splits it on; an operation's result over
the union of its operands' axes, except that ``psum``/``pmax``/``pmin``/``all_gather`` over
an axis make it equal in every member of that axis and ``axis_index`` makes it vary over
its axis. It is computed from the per-shard program recorded so far when ``typeof`` asks;
the values themselves are never affected.

    >>> with ft.set_mesh(ft.make_mesh((2,), ("i",))):
    ...     ft.shard_map(lambda x: print(ft.typeof(lax.psum(x, "i")), ft.typeof(x)) or x,
    ...                  in_specs=P("i"), out_specs=P("i"))(fnp.arange(2.0))  # doctest: +ELLIPSIS
    float64[1] float64[1]{V:i}
    Array(...)
"""
from __future__ import annotations

import contextlib
import threading

from functrans.core.avals import VaryingShapedArray
from functrans.core.ir import Literal
from functrans.core.values import varying_axes_hooks, varying_casts

_REDUCING = ("psum", "pmax", "pmin", "all_gather")


class _Bodies(threading.local):
    stack: list = []


_bodies = _Bodies()


@contextlib.contextmanager
def shard_body(tracers, specs, axis_names):
    """While ``shard_map``'s per-shard function is traced: its arguments ``tracers`` vary
    over the axes their canonical ``specs`` name."""
    trace = next((getattr(t, "_trace", None) for t in tracers), None)
    known = {t._var: frozenset(n for names in s for n in names)
             for t, s in zip(tracers, specs) if getattr(t, "_var", None) is not None}
    _bodies.stack = _bodies.stack + [(trace, known, tuple(axis_names), [0])]
    try:
        yield
    finally:
        _bodies.stack = _bodies.stack[:-1]


def _names(axis_name):
    return set(axis_name) if isinstance(axis_name, (tuple, list)) else {axis_name}


def _walk(trace, known, done):
    """Extend ``known`` over the equations recorded since the last walk."""
    eqns = trace.eqns
    for eqn in eqns[done[0]:]:
        ins = set()
        for x in eqn.inputs:
            if type(x) is not Literal:
                ins |= known.get(x, frozenset())
        name = eqn.prim.name
        if name in _REDUCING:
            ins -= _names(eqn.params["axis_name"])
        elif name == "axis_index":
            ins |= _names(eqn.params["axis_name"])
        for o in eqn.outputs:
            known[o] = frozenset(ins)
    done[0] = len(eqns)


def varying_type(x, aval):
    """``aval`` with the manual axes ``x`` varies over, when ``x`` is a value of the
    per-shard function being traced; else None."""
    if not _bodies.stack:
        return None
    trace, known, axis_names, done = _bodies.stack[-1]
    while getattr(x, "primal", None) is not None:
        x = x.primal
    if trace is None or getattr(x, "_trace", None) is not trace:
        return None
    _walk(trace, known, done)
    vma = known.get(getattr(x, "_var", None), frozenset())
    return VaryingShapedArray(aval.shape, aval.dtype, aval.weak_type,
                              [n for n in axis_names if n in vma])


def cast_varying(x, axes):
    """``x`` made to vary over ``axes`` too (``lax.pcast(x, axes, to='varying')`` inside the
    per-shard function being traced): a new value, equal to ``x``."""
    if not _bodies.stack:
        return x
    trace, known, axis_names, done = _bodies.stack[-1]
    if trace is None or getattr(x, "_trace", None) is not trace:
        return x
    from functrans import lax
    _walk(trace, known, done)
    before = known.get(x._var, frozenset())
    y = lax.mul(x, lax.full((), 1, x.dtype))  # (the same value, as a value of its own)
    _walk(trace, known, done)
    known[y._var] = before | frozenset(axes)
    return y


varying_axes_hooks.append(varying_type)
varying_casts.append(cast_varying)
