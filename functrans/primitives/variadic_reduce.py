"""``reduce``: XLA's Reduce with a user's reducer (what JAX's ``lax.reduce`` binds when the
computation is not one of the monoids that have their own primitive).

``outs = reduce[jaxpr=... dimensions=(...)] *operands *init_values``: ``n`` operands of one
shape, ``n`` scalar init values of their dtypes; ``jaxpr`` maps the scalars
``(acc_1..acc_n, x_1..x_n)`` to ``n`` scalars. Each output element is the left fold
``acc = jaxpr(acc, x)`` over its reduced elements in row-major order, starting from the init
values: the order XLA's CPU backend uses, so results match JAX's to the last bit where the
reducer is exact. (As in JAX, reducer and init values should form a monoid.)

Rules:

- the fold is a ``scan`` over the reduced elements (flattened to one axis) whose body is the
  reducer vmapped over the kept elements: it is the impl, and jit inlines it, so compiled
  programs run the loop natively;
- JVP: the JVP of that fold (scan's), so reverse mode is scan's transpose. JAX differentiates
  with respect to the operands only and raises for init values; their derivative here is
  the fold's;
- batching: batched operands with unbatched init values are one reduce over shifted
  dimensions, as in JAX; batched init values (which JAX does not batch) start each lane's
  fold from its own values.
"""
from __future__ import annotations

import math

from ..core.avals import ShapedArray
from ..core.trace import Primitive, get_aval
from ..transforms.autodiff.jvp import is_zero, jvp_flat, jvp_rules, Zero
from ..transforms.batching import AxisData, batch_jaxpr, batching_rules, bdim_at_front
from ..transforms.inline_lowerings import InlineLowering, lowering_rules
from .scan import scan_p
from .structural import broadcast_in_dim_p, reshape_p, transpose_p


def _abstract_eval(*avals, jaxpr, dimensions):
    n = len(avals) // 2
    operands, inits = avals[:n], avals[n:]
    if n == 0 or len(avals) != 2 * n:
        raise TypeError("reduce needs as many init values as operands, at least one")
    if any(a.shape != () for a in inits):
        raise ValueError(f"reduce found non-scalar initial value: {[a.shape for a in inits]}")
    shape = operands[0].shape
    if any(a.shape != shape for a in operands):
        raise TypeError(f"reduce operands must have one shape, got "
                        f"{', '.join(a.str_short() for a in operands)}")
    if [a.dtype for a in operands] != [a.dtype for a in inits]:
        raise TypeError(
            "reduce operand dtypes should match corresponding initial value dtypes, got "
            f"operands={[a.str_short() for a in operands]} and "
            f"initial_values={[a.str_short() for a in inits]}")
    if len(set(dimensions)) != len(dimensions) or any(
            not 0 <= d < len(shape) for d in dimensions):
        raise ValueError(f"reduce: dimensions {tuple(dimensions)} must be distinct axes of "
                         f"the operands' shape {shape}")
    scalars = [a.dtype for a in inits]
    if [(a.shape, a.dtype) for a in jaxpr.in_avals] != [((), d) for d in scalars * 2] or \
            [(a.shape, a.dtype) for a in jaxpr.out_avals] != [((), d) for d in scalars]:
        raise TypeError(
            "reduce: the computation must map two sets of scalars of the init values' types "
            f"({', '.join(a.str_short() for a in inits)}) to one, got "
            f"({', '.join(a.str_short() for a in jaxpr.in_avals)}) -> "
            f"({', '.join(a.str_short() for a in jaxpr.out_avals)})")
    out_shape = tuple(s for i, s in enumerate(shape) if i not in dimensions)
    return [ShapedArray(out_shape, o.dtype, o.weak_type and i.weak_type)
            for o, i in zip(operands, inits)]


def fold(operands, starts, jaxpr, dimensions) -> list:
    """The reduction as a left fold (a ``scan``) over the reduced elements in row-major
    order. ``starts`` are the init values: scalars, or arrays of the leading kept
    dimensions' shape (per-lane init values of a batched reduce)."""
    shape = get_aval(operands[0]).shape
    reduced = sorted(dimensions)
    kept = [d for d in range(len(shape)) if d not in dimensions]
    kept_shape = tuple(shape[d] for d in kept)
    n, m = math.prod(shape[d] for d in reduced), math.prod(kept_shape)
    perm = tuple(reduced + kept)
    xs = []
    for x in operands:
        if perm != tuple(range(len(shape))):
            x = transpose_p.bind1(x, permutation=perm)
        xs.append(reshape_p.bind1(x, new_sizes=(n, m)))
    carry = [reshape_p.bind1(broadcast_in_dim_p.bind1(
        s, shape=kept_shape, broadcast_dimensions=tuple(range(get_aval(s).ndim))),
        new_sizes=(m,)) for s in starts]
    k = len(operands)
    body, _ = batch_jaxpr(jaxpr, AxisData(None, m), [0] * (2 * k), [0] * k)
    outs = scan_p.bind_all(*carry, *xs, jaxpr=body, length=n, reverse=False, num_consts=0,
                           num_carry=k)
    return [reshape_p.bind1(o, new_sizes=kept_shape) for o in outs]


def _impl(*args, jaxpr, dimensions):
    n = len(args) // 2
    return fold(args[:n], args[n:], jaxpr, dimensions)


reduce_p = Primitive("reduce", impl=_impl, abstract_eval=_abstract_eval)
reduce_p.multiple_results = True
lowering_rules[reduce_p] = {None: InlineLowering(_impl, True)}


def _jvp(primals, tangents, *, jaxpr, dimensions):
    n = len(primals) // 2
    if all(is_zero(t) for t in tangents):
        outs = reduce_p.bind_all(*primals, jaxpr=jaxpr, dimensions=dimensions)
        return outs, [Zero(get_aval(o).strip_weak_type()) for o in outs]
    return jvp_flat(lambda *a: fold(a[:n], a[n:], jaxpr, dimensions), list(primals),
                    list(tangents), name="reduce")


jvp_rules[reduce_p] = _jvp


def _batch(axis, vals, dims, *, jaxpr, dimensions):
    n = len(vals) // 2
    operands = [bdim_at_front(x, d, axis.size) for x, d in zip(vals[:n], dims[:n])]
    shifted = tuple(d + 1 for d in dimensions)
    if all(d is None for d in dims[n:]):
        return reduce_p.bind_all(*operands, *vals[n:], jaxpr=jaxpr, dimensions=shifted), [0] * n
    starts = [bdim_at_front(s, d, axis.size) for s, d in zip(vals[n:], dims[n:])]
    return fold(operands, starts, jaxpr, shifted), [0] * n


batching_rules[reduce_p] = _batch
