"""``lax.reduce``: XLA's Reduce with JAX's signature: pytrees of operands and scalar init
values, a reducer ``computation(accumulated, elements)`` over pytrees of scalars.

    >>> x = fnp.array([[1.0, 5.0, 2.0], [4.0, 0.5, 3.0]])
    >>> lax.reduce(x, 0.0, lambda a, b: a + b * b, (1,))
    Array([30.  , 25.25], dtype=float64)
"""
from __future__ import annotations

import numpy as np

from ..core import dtypes
from ..core.api_util import fun_name
from ..core.staging import hoist_tracer_consts, trace_to_jaxpr
from ..core.trace import Tracer, concrete_of, get_aval
from ..core.tree import tree_flatten, tree_unflatten
from ..primitives.variadic_reduce import reduce_p
from . import ops

__all__ = ["reduce"]


def _identity(op, dtype):
    """The value ``init`` must have for ``op`` to be ``reduce_<op>`` (JAX's identities)."""
    kind = dtypes.kind(dtype)
    if op in ("max", "min"):
        sign = -1 if op == "max" else 1
        if kind in "fc":
            return sign * np.inf
        if kind == "b":
            return op == "min"
        info = np.iinfo(dtype)
        return info.min if op == "max" else info.max
    return {"sum": 0, "prod": 1, "or": 0, "and": np.array(-1).astype(dtype)}[op]


def _monoid_reducer(computation, init):
    """JAX's shortcut: ``lax.add``/``mul``/``max``/``min`` (and ``bitwise_and``/``or`` of
    ints and bools) with a concrete scalar init that is their identity are the dedicated
    reductions (``reduce_sum``, ...); None otherwise."""
    op = {ops.add: "sum", ops.mul: "prod", ops.max: "max", ops.min: "min",
          ops.bitwise_or: "or", ops.bitwise_and: "and"}.get(computation)
    if op is None:
        return None
    value = concrete_of(init) if isinstance(init, Tracer) else np.asarray(init)
    if value is None or value.shape != ():
        return None
    dtype = get_aval(init).dtype
    if op in ("or", "and") and dtypes.kind(dtype) not in "biu":
        return None
    if not np.equal(value, _identity(op, dtype)):
        return None
    return {"sum": ops.reduce_sum, "prod": ops.reduce_prod, "max": ops.reduce_max,
            "min": ops.reduce_min, "or": ops.reduce_or, "and": ops.reduce_and}[op]


def _reducer_jaxpr(computation, tree, init_avals):
    """The reducer as a jaxpr of ``2n`` scalars -> ``n`` scalars."""
    n = len(init_avals)
    store = {}

    def flat(*leaves):
        out = computation(tree_unflatten(tree, leaves[:n]), tree_unflatten(tree, leaves[n:]))
        out_leaves, store["tree"] = tree_flatten(out)
        return out_leaves

    jaxpr = trace_to_jaxpr(flat, list(init_avals) * 2, name=f"reduce ({fun_name(computation)})")
    if store["tree"] != tree:
        raise TypeError(f"reduce: the computation ({fun_name(computation)}) must return the "
                        f"init values' structure {tree}, got {store['tree']}")
    jaxpr, tracers = hoist_tracer_consts(jaxpr)
    if tracers:
        raise NotImplementedError(
            "Reduction computations can't close over Tracers (as in JAX): pass the value as "
            "an operand, or compute the reduction from a function of the closed-over value")
    return jaxpr


def reduce(operands, init_values, computation, dimensions, out_sharding=None):
    """Reduce ``operands`` over ``dimensions`` with ``computation``, starting from
    ``init_values`` (scalars with the operands' dtypes and pytree structure). Each result
    element is the left fold ``acc = computation(acc, x)`` over its elements in row-major
    order, as XLA's CPU backend computes it; ``init_values`` and ``computation`` should form
    a monoid (JAX's contract). ``lax.add``/``mul``/``max``/``min``/``bitwise_and``/
    ``bitwise_or`` with their identity are the dedicated reductions, as in JAX.
    Differentiable (forward and reverse), batchable, and compiled by jit as a loop.

    >>> x = fnp.array([3.0, 1.0, 2.0])
    >>> lax.reduce((x, fnp.arange(3)), (fnp.inf, 0),
    ...            lambda a, b: lax.cond(a[0] <= b[0], lambda: a, lambda: b), (0,))
    (Array(1., dtype=float64), Array(1, dtype=int64))
    """
    leaves, tree = tree_flatten(operands)
    init_leaves, init_tree = tree_flatten(init_values)
    if tree != init_tree:
        raise ValueError("Operands must have the same tree structure as init_values: "
                         f"{tree} vs. {init_tree}")
    if not leaves:
        raise ValueError("reduce needs at least one operand")
    if out_sharding is not None:
        from .sharding_ops import with_sharding_constraint
        return tree_unflatten(tree, [with_sharding_constraint(o, out_sharding) for o in
                                     tree_flatten(reduce(operands, init_values, computation,
                                                         dimensions))[0]])
    ndim = get_aval(leaves[0]).ndim
    dimensions = tuple(ops._axis(d, ndim, "reduce dimension") for d in dimensions)
    if len(leaves) == 1:
        reducer = _monoid_reducer(computation, init_leaves[0])
        if reducer is not None:
            x, init = leaves[0], init_leaves[0]
            out = reducer(x, dimensions)
            if ops._is_weak(x) and not ops._is_weak(init):  # weak only if both are (JAX)
                out = ops.convert_element_type(out, get_aval(out).dtype)
            return tree_unflatten(tree, [out])
    init_avals = [get_aval(v).update(weak_type=False) for v in init_leaves]
    jaxpr = _reducer_jaxpr(computation, init_tree, init_avals)
    out = reduce_p.bind_all(*leaves, *init_leaves, jaxpr=jaxpr, dimensions=dimensions)
    return tree_unflatten(tree, out)
