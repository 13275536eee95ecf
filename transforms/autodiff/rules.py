"""Helpers primitive families use to define their JVP and transpose rules.

Used by the primitive families, e.g. (elementwise.py)::

    defjvp(sin_p, lambda g, ans, x: mul(g, cos(x)))       # d sin = cos
    deflinear(neg_p, lambda cts, x: [neg(cts[0])])         # linear: JVP + transpose
"""
from __future__ import annotations

from functrans.core.array import Array
from functrans.core.trace import get_aval

from .. import ops
from .jvp import Zero, add_tangents, instantiate, is_zero, jvp_rules
from .transpose import is_undefined, transpose_rules


def broadcast_to_aval(t, aval):
    """A rank-0 tangent/cotangent broadcast to ``aval``'s shape (elementwise ops mix ranks)."""
    if get_aval(t).shape != aval.shape:
        return ops.broadcast(t, aval.shape, ())
    return t


def unbroadcast(ct, aval):
    """Sum a cotangent down to a rank-0 operand that was broadcast in an elementwise op."""
    if is_zero(ct):
        return Zero(aval)
    if aval.shape == () and get_aval(ct).shape != ():
        return ops.reduce_sum(ct, tuple(range(len(get_aval(ct).shape))))
    return ct


def defjvp(prim, *derivs):
    """JVP of a single-output primitive from per-input derivative functions.

    ``derivs[i](g, ans, *primals, **params)`` gives the output tangent contributed by input
    i's tangent ``g``; None marks an input without a derivative (e.g. indices).
    """
    def rule(primals, tangents, **params):
        ans = prim.bind1(*primals, **params)
        shape, out = _shape(ans), None
        for d, t in zip(derivs, tangents):
            if d is None or type(t) is Zero:
                continue
            part = d(t, ans, *primals, **params)
            if _shape(part) != shape:  # a rank-0 operand's tangent
                part = ops.broadcast(part, shape, ())
            out = part if out is None else ops.add_any(out, part)
        return [ans], [Zero(get_aval(ans)) if out is None else out]
    jvp_rules[prim] = rule


def _shape(x):
    return x._value.shape if type(x) is Array else get_aval(x).shape


def defjvp_zero(prim):
    """The outputs have zero derivative (rounding, comparisons, integer results)."""
    def rule(primals, tangents, **params):
        outs = prim.bind_all(*primals, **params)
        return outs, [Zero(get_aval(o)) for o in outs]
    jvp_rules[prim] = rule


def deflinear(prim, transpose):
    """A primitive linear in all its array inputs: its JVP applies it to the tangents, and
    ``transpose(cts, *args, **params)`` is its transpose."""
    def rule(primals, tangents, **params):
        outs = prim.bind_all(*primals, **params)
        return outs, prim.bind_all(*[instantiate(t) for t in tangents], **params)
    jvp_rules[prim] = rule
    transpose_rules[prim] = transpose


def deflinear_in(prim, linear_argnums, transpose):
    """A primitive linear in the inputs ``linear_argnums`` (others are indices/params): the
    JVP applies it to those tangents with the other inputs' primal values."""
    linear_argnums = tuple(linear_argnums)

    def rule(primals, tangents, **params):
        outs = prim.bind_all(*primals, **params)
        args = [(instantiate(t) if i in linear_argnums else p)
                for i, (p, t) in enumerate(zip(primals, tangents))]
        return outs, prim.bind_all(*args, **params)
    jvp_rules[prim] = rule
    transpose_rules[prim] = transpose


__all__ = ["defjvp", "defjvp_zero", "deflinear", "deflinear_in", "broadcast_to_aval",
           "unbroadcast", "is_undefined", "is_zero", "instantiate", "Zero", "jvp_rules",
           "transpose_rules", "add_tangents"]
