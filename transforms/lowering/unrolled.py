"""Small arrays as scalars: values with at most ``SMALL`` elements are kept as one Numba scalar
per element ("unrolled"), so loops over small state (an ODE's 3-vector, a pair of carries)
allocate nothing per iteration and their arithmetic stays in registers. An unrolled value is
packed into an array only where an operation needs a buffer.

``unrolled_rules[name](em, eqn, ins) -> outs``: ``ins`` holds one list of element expressions
per input (rank-0 inputs: a one-element list); it returns one list per output.
"""
from __future__ import annotations

import itertools
import math

import numpy as np

from .scalar import extremum, scalar_rules

SMALL = 16
unrolled_rules: dict = {}


def is_small(aval) -> bool:
    return aval.ndim >= 1 and aval.size <= SMALL


def wants_unrolled(eqn) -> bool:
    """Handle ``eqn`` element by element: small array operands/results, a rule for it."""
    if eqn.prim.name not in unrolled_rules and "elementwise" not in eqn.prim.traits:
        return False
    if eqn.prim.name == "bitcast_convert_type":
        return False
    avals = [x.aval for x in eqn.inputs] + [o.aval for o in eqn.outputs]
    if any(a.ndim and not is_small(a) for a in avals):
        return False
    return any(a.ndim for a in avals)


def _indices(shape):
    return list(itertools.product(*[range(d) for d in shape]))


def _flat(index, shape):
    return int(np.ravel_multi_index(index, shape)) if shape else 0


def _elementwise(em, eqn, ins):
    out = eqn.outputs[0].aval
    n = out.size
    args = [x if len(x) == n else x * n for x in ins]  # rank-0 operands broadcast
    rule = scalar_rules[eqn.prim.name]
    in_avals = [x.aval for x in eqn.inputs]
    return [[em.tmp(em.typed(rule(em, [a[k] for a in args], in_avals, out, **eqn.params),
                             eqn)) for k in range(n)]]


def _broadcast_in_dim(em, eqn, ins):
    (x,), out = ins, eqn.outputs[0].aval
    src = eqn.inputs[0].aval.shape
    dims = eqn.params["broadcast_dimensions"]
    res = []
    for idx in _indices(out.shape):
        sidx = tuple(0 if src[k] == 1 else idx[d] for k, d in enumerate(dims))
        res.append(x[_flat(sidx, src)] if src else x[0])
    return [res]


def _reshape(em, eqn, ins):
    return [list(ins[0])]


def _transpose(em, eqn, ins):
    src = eqn.inputs[0].aval.shape
    perm = eqn.params["permutation"]
    res = []
    for idx in _indices(eqn.outputs[0].aval.shape):
        sidx = [0] * len(src)
        for k, d in enumerate(perm):
            sidx[d] = idx[k]
        res.append(ins[0][_flat(tuple(sidx), src)])
    return [res]


def _slice(em, eqn, ins):
    src = eqn.inputs[0].aval.shape
    p = eqn.params
    strides = p["strides"] or (1,) * len(src)
    return [[ins[0][_flat(tuple(s + i * st for s, i, st in zip(p["start_indices"], idx,
                                                              strides)), src)]
             for idx in _indices(eqn.outputs[0].aval.shape)]]


def _rev(em, eqn, ins):
    src = eqn.inputs[0].aval.shape
    dims = eqn.params["dimensions"]
    return [[ins[0][_flat(tuple(src[k] - 1 - i if k in dims else i
                                for k, i in enumerate(idx)), src)]
             for idx in _indices(src)]]


def _concatenate(em, eqn, ins):
    dim = eqn.params["dimension"]
    out_shape = eqn.outputs[0].aval.shape
    starts = np.cumsum([0] + [x.aval.shape[dim] for x in eqn.inputs])
    res = []
    for idx in _indices(out_shape):
        k = int(np.searchsorted(starts, idx[dim], side="right")) - 1
        sidx = list(idx)
        sidx[dim] -= starts[k]
        res.append(ins[k][_flat(tuple(sidx), eqn.inputs[k].aval.shape)])
    return [res]


def _pad(em, eqn, ins):
    (x, pv), src = ins, eqn.inputs[0].aval.shape
    config = eqn.params["padding_config"]
    res = []
    for idx in _indices(eqn.outputs[0].aval.shape):
        sidx = []
        for i, (lo, _, interior), n in zip(idx, config, src):
            j, r = divmod(i - lo, interior + 1)
            sidx.append(j if r == 0 and 0 <= j < n else None)
        res.append(pv[0] if None in sidx else x[_flat(tuple(sidx), src)])
    return [res]


def _iota(em, eqn, ins):
    p = eqn.params
    return [[em.const(idx[p["dimension"]], p["dtype"]) for idx in _indices(p["shape"])]]


_COMBINE = {"reduce_sum": "sum", "reduce_prod": "prod", "reduce_max": "max", "reduce_min": "min",
            "reduce_and": "and", "reduce_or": "or"}


def combine(kind, a, b, dkind):
    """Source text folding ``b`` into accumulator ``a`` for reduction ``kind``, of operands
    of dtype kind ``dkind`` (float max/min propagate NaN, complex ones compare
    lexicographically: :func:`extremum`)."""
    if kind == "sum":
        return f"{a} + {b}"
    if kind == "prod":
        return f"{a} * {b}"
    if kind in ("max", "min"):
        return extremum(kind, a, b, dkind)
    return f"{a} & {b}" if kind == "and" else f"{a} | {b}"


def _groups(shape, axes):
    """Output index -> list of flat input indices reduced into it (in order)."""
    kept = [d for d in range(len(shape)) if d not in axes]
    out: dict = {}
    for idx in _indices(shape):
        out.setdefault(tuple(idx[d] for d in kept), []).append(_flat(idx, shape))
    return out


def _reduce(em, eqn, ins):
    shape = eqn.inputs[0].aval.shape
    kind = _COMBINE[eqn.prim.name]
    out = eqn.outputs[0].aval
    dkind = out.dtype.kind
    res = []
    for _, members in sorted(_groups(shape, eqn.params["axes"]).items()):
        if not members:
            continue
        acc = ins[0][members[0]]
        if dkind == "c" and kind in ("max", "min"):  # folds from the identity, as in JAX
            from .emit import reduction_identity
            acc = em.tmp(combine(kind, em.const(reduction_identity(kind, out.dtype), out.dtype),
                                 acc, dkind))
        for m in members[1:]:
            acc = em.tmp(em.cast(combine(kind, acc, ins[0][m], dkind), out.dtype))
        res.append(acc)
    if not res:  # reducing an empty axis gives the identity
        from .emit import _Reduction
        r = _Reduction(em, eqn, len(shape))
        return [[r.identity(out.dtype)] * out.size]
    return [res]


def _arg_reduce(em, eqn, ins):
    shape = eqn.inputs[0].aval.shape
    axis = eqn.params["axes"][0]
    better = ">" if eqn.prim.name == "argmax" else "<"
    idt = eqn.params["index_dtype"]
    res = []
    for _, members in sorted(_groups(shape, (axis,)).items()):
        best, bi = ins[0][members[0]], em.const(0, idt)
        for pos, m in enumerate(members[1:], 1):
            v = ins[0][m]
            take = em.tmp(f"(({v} {better} {best}) or ({v} != {v} and {best} == {best}))")
            best = em.tmp(f"{v} if {take} else {best}")
            bi = em.tmp(f"{em.const(pos, idt)} if {take} else {bi}")
        res.append(bi)
    return [res]


def _cumulative(em, eqn, ins):
    shape = eqn.inputs[0].aval.shape
    axis, reverse = eqn.params["axis"], eqn.params["reverse"]
    kind = {"cumsum": "sum", "cumprod": "prod", "cummax": "max", "cummin": "min"}[eqn.prim.name]
    dt = eqn.outputs[0].aval.dtype
    res = [None] * math.prod(shape)
    for _, members in _groups(shape, (axis,)).items():
        order = members[::-1] if reverse else members
        acc = None
        for m in order:
            if acc is None and dt.kind == "c" and kind in ("max", "min"):  # as in JAX
                from .emit import reduction_identity
                acc = em.const(reduction_identity(kind, dt), dt)
            acc = ins[0][m] if acc is None else em.tmp(em.cast(
                combine(kind, acc, ins[0][m], dt.kind), dt))
            res[m] = acc
    return [res]


def _dot_general(em, eqn, ins):
    (lhs, rhs), (la, ra) = ins, (eqn.inputs[0].aval, eqn.inputs[1].aval)
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    out = eqn.outputs[0].aval
    lf = [d for d in range(la.ndim) if d not in lc and d not in lb]
    rf = [d for d in range(ra.ndim) if d not in rc and d not in rb]
    contract = _indices([la.shape[d] for d in lc])
    res = []
    for idx in _indices(out.shape):
        b, li, ri = idx[:len(lb)], idx[len(lb):len(lb) + len(lf)], idx[len(lb) + len(lf):]
        acc = None
        for c in contract:
            lidx, ridx = [0] * la.ndim, [0] * ra.ndim
            for d, v in zip(lb, b):
                lidx[d] = v
            for d, v in zip(rb, b):
                ridx[d] = v
            for d, v in zip(lf, li):
                lidx[d] = v
            for d, v in zip(rf, ri):
                ridx[d] = v
            for d, e, v in zip(lc, rc, c):
                lidx[d], ridx[e] = v, v
            prod = f"{lhs[_flat(tuple(lidx), la.shape)]} * {rhs[_flat(tuple(ridx), ra.shape)]}"
            if out.dtype.kind == "b":
                prod = f"({lhs[_flat(tuple(lidx), la.shape)]} and " \
                       f"{rhs[_flat(tuple(ridx), ra.shape)]})"
            acc = em.tmp(em.cast(prod if acc is None else (
                f"{acc} or {prod}" if out.dtype.kind == "b" else f"{acc} + {prod}"), out.dtype))
        res.append(acc if acc is not None else em.const(0, out.dtype))
    return [res]


unrolled_rules.update({
    "broadcast_in_dim": _broadcast_in_dim, "reshape": _reshape, "squeeze": _reshape,
    "transpose": _transpose, "slice": _slice, "rev": _rev, "concatenate": _concatenate,
    "pad": _pad, "iota": _iota, "argmax": _arg_reduce, "argmin": _arg_reduce,
    "dot_general": _dot_general,
})
for _name in _COMBINE:
    unrolled_rules[_name] = _reduce
for _name in ("cumsum", "cumprod", "cummax", "cummin"):
    unrolled_rules[_name] = _cumulative


def emit_unrolled(em, eqn):
    """Emit ``eqn`` element by element; records its outputs' elements on the emitter."""
    ins = [em.elements(x) for x in eqn.inputs]
    rule = unrolled_rules.get(eqn.prim.name, _elementwise)
    outs = rule(em, eqn, ins)
    for o, elems in zip(eqn.outputs, outs):
        if o.aval.ndim:
            em.set_elements(o, elems)
        else:
            em.line(f"{em.name(o)} = {elems[0]}")


__all__ = ["SMALL", "is_small", "wants_unrolled", "emit_unrolled", "unrolled_rules"]
