"""Window reductions of small windows (``reduce_window_sum``/``max``/``min``: pooling layers
and the gradients of average pooling) as sums of strided slices, before jit optimizes a
program.

The slices are those the general ``lax.reduce_window`` folds (``window_offsets``). A
strided slice is an index map, so the native generator fuses the window's reduction into
the loops that make its operand and consume its result; a window primitive is compiled by
the Numba backend instead, as a run of its own (a call, a buffer, a pass over memory). The
flax CNN of benchmarks/bench_ecosystem.py spent 0.6 ms of its 4.2 ms step in its four
2x2 window sums that way (two poolings, two gradients). Padding and base dilation become
one ``pad`` with the reduction's identity, as the primitives define them. Windows of more
than ``MAX_WINDOW`` elements stay primitives (that many loads per output would not pay).

Each output is its window's elements combined in row-major window order, as the
primitives' loops combine them::

    >>> import functrans as ft
    >>> f = lambda x: ft.lax.reduce_window(x, 0.0, ft.lax.add, (2,), (2,), "VALID")
    >>> j = ft.make_jaxpr(f)(np.arange(4.0)).jaxpr
    >>> [e.prim.name for e in windows_as_slices(j).eqns[0].params["jaxpr"].eqns]
    ['slice', 'slice', 'add']
"""
from __future__ import annotations

import math

import numpy as np

from functrans.core.ir import Eqn, Jaxpr

from ..inline_lowerings import InlineLowering
from .call import jit_p

__all__ = ["MAX_WINDOW", "windows_as_slices"]

MAX_WINDOW = 16
_KINDS = {"reduce_window_sum": "sum", "reduce_window_max": "max", "reduce_window_min": "min"}


def windows_as_slices(jaxpr: Jaxpr) -> Jaxpr:
    """``jaxpr`` with each small window reduction replaced by a ``jit`` call of its slices'
    program (inlined by the optimizer), also inside control flow; ``jaxpr`` itself when there
    is none."""
    eqns, changed = [], False
    for eqn in jaxpr.eqns:
        new = _rewrite(eqn)
        changed = changed or new is not eqn
        eqns.append(new)
    return jaxpr.replace(eqns=eqns) if changed else jaxpr


def _rewrite(eqn):
    kind = _KINDS.get(eqn.prim.name)
    if kind is None or not _small(eqn):
        params, changed = {}, False
        for k, v in eqn.params.items():
            if isinstance(v, Jaxpr):
                e = windows_as_slices(v)
            elif isinstance(v, tuple) and any(isinstance(x, Jaxpr) for x in v):
                e = tuple(windows_as_slices(x) if isinstance(x, Jaxpr) else x for x in v)
                e = v if all(a is b for a, b in zip(e, v)) else e
            else:
                e = v
            changed = changed or e is not v
            params[k] = e
        return eqn.replace(params=params) if changed else eqn
    body = InlineLowering(lambda x, **p: _sliced(kind, x, **p), False).trace(
        eqn.prim, [eqn.inputs[0].aval], eqn.params)
    return Eqn(jit_p, eqn.inputs, eqn.outputs, {"jaxpr": body, "name": eqn.prim.name},
               eqn.source)


def _small(eqn) -> bool:
    p = eqn.params
    aval = eqn.inputs[0].aval
    return (math.prod(p["window_dimensions"]) <= MAX_WINDOW and aval.size > 0
            and eqn.outputs[0].aval.size > 0 and np.dtype(aval.dtype) != np.bool_
            and all(lo >= 0 and hi >= 0 for lo, hi in p["padding"]))


def _sliced(kind, x, *, window_dimensions, window_strides, padding, base_dilation,
            window_dilation):
    from functrans.primitives import add_p, max_p, min_p, pad_p, slice_p
    from functrans.primitives.windowed import identity, window_offsets, window_output_shape
    aval = x.aval
    out_shape = window_output_shape(aval.shape, window_dimensions, window_strides, padding,
                                    base_dilation, window_dilation)
    config = tuple((lo, hi, b - 1) for (lo, hi), b in zip(padding, base_dilation))
    if any(c != (0, 0, 0) for c in config):
        x = pad_p.bind1(x, identity(kind, aval.dtype), padding_config=config)
    combine = {"sum": add_p, "max": max_p, "min": min_p}[kind]
    out = None
    for start, limit, strides in window_offsets(out_shape, window_dimensions, window_strides,
                                                window_dilation):
        part = slice_p.bind1(x, start_indices=start, limit_indices=limit,
                             strides=None if all(s == 1 for s in strides) else strides)
        out = part if out is None else combine.bind1(out, part)
    return out
