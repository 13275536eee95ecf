"""``jax.interpreters.batching``: batching (``vmap``) rules of primitives, in JAX's conventions.

A rule in ``primitive_batchers`` is ``rule(batched_args, batch_dims, **params) ->
(out, out_dim)`` (lists of outputs and dims for a primitive with ``multiple_results``); a
dim is an int or :data:`not_mapped` (the value is the same for the whole batch).
``axis_primitive_batchers`` rules also get the axis: ``rule(axis_size, axis_name,
trace_type, batched_args, batch_dims, **params)``, and ``fancy_primitive_batchers`` rules
``rule(axis_data, batched_args, batch_dims, **params)``. All three store the rule in
functrans's own table, which every ``vmap`` uses::

    >>> from functrans.extend.core import Primitive
    >>> total_p = Primitive("total")
    >>> _ = total_p.def_impl(lambda x: fnp.sum(x))
    >>> _ = total_p.def_abstract_eval(lambda a: a.update(shape=()))
    >>> def total_batch(args, dims):
    ...     (x,), (d,) = args, dims
    ...     return fnp.sum(x, axis=tuple(i for i in range(x.ndim) if i != d)), 0
    >>> primitive_batchers[total_p] = total_batch
    >>> ft.vmap(total_p.bind)(fnp.ones((3, 4)))
    Array([4., 4., 4.], dtype=float64)
"""
from __future__ import annotations

from typing import Any, NamedTuple

from functrans.core.trace import get_aval
from functrans.extend.core._primitive import jax_bind, multiple_results
from functrans.transforms import batching as _batching, ops
from functrans.transforms.batching import (AxisData as _AxisData, batch_elementwise,
                                           batching_rules)

from ._rule_table import RuleTable

__all__ = ["AxisData", "axis_primitive_batchers", "bdim_at_front", "broadcast",
           "defbroadcasting", "defvectorized", "fancy_primitive_batchers", "not_mapped",
           "primitive_batchers"]

not_mapped = None
"""The batch dim of a value that is the same for the whole batch."""


class AxisData(NamedTuple):
    """The batch axis a rule in ``fancy_primitive_batchers`` is given.

        >>> AxisData("i", 4).size
        4
    """

    name: Any
    size: int
    spmd_name: Any = None
    explicit_mesh_axis: Any = None


def _outs(p, out, dims, what):
    if not multiple_results(p):
        return [out], [dims]
    out, dims = list(out), list(dims)
    if len(out) != len(dims):
        raise TypeError(f"the {what} rule of '{p}' returned {len(out)} outputs and "
                        f"{len(dims)} batch dims")
    return out, dims


def _pair(p, res, what):
    if not (isinstance(res, (tuple, list)) and len(res) == 2):
        raise TypeError(f"the {what} rule of '{p}' must return a pair (out, out_dim), got "
                        f"{type(res).__name__}")
    return res


def _adapt(call):
    def adapt(p, rule):
        def batch(axis, vals, dims, **params):
            res = _pair(p, call(rule, axis, tuple(vals), tuple(dims), params), "batching")
            return _outs(p, *res, "batching")
        return batch
    return adapt


def _view(call_functrans):
    def view(p, rule):
        def jax_rule(*args, **params):
            axis, vals, dims = call_functrans(*args)
            out, out_dims = rule(axis, list(vals), list(dims), **params)
            return (out, out_dims) if multiple_results(p) else (out[0], out_dims[0])
        return jax_rule
    return view


def _elementwise(prim):
    # functrans batches its elementwise primitives without a table entry
    return batch_elementwise(prim) if "elementwise" in prim.traits else None


def _size_of(vals, dims):
    for v, d in zip(vals, dims):
        if d is not None:
            return get_aval(v).shape[d]
    raise ValueError("a batching rule was called with no batched argument")


primitive_batchers = RuleTable(
    "batching", batching_rules,
    _adapt(lambda rule, axis, vals, dims, params: rule(vals, dims, **params)),
    _view(lambda vals, dims: (_AxisData(None, _size_of(vals, dims)), vals, dims)), _elementwise)
"""Primitive -> ``rule(batched_args, batch_dims, **params) -> (out, out_dim)``."""

axis_primitive_batchers = RuleTable(
    "batching", batching_rules,
    _adapt(lambda rule, axis, vals, dims, params:
           rule(axis.size, axis.name, None, vals, dims, **params)),
    _view(lambda size, name, trace_type, vals, dims: (_AxisData(name, size), vals, dims)),
    _elementwise)
"""Primitive -> ``rule(axis_size, axis_name, trace_type, batched_args, batch_dims,
**params) -> (out, out_dim)``."""

fancy_primitive_batchers = RuleTable(
    "batching", batching_rules,
    _adapt(lambda rule, axis, vals, dims, params:
           rule(AxisData(axis.name, axis.size), vals, dims, **params)),
    _view(lambda axis_data, vals, dims: (_AxisData(axis_data.name, axis_data.size), vals,
                                         dims)), _elementwise)
"""Primitive -> ``rule(axis_data, batched_args, batch_dims, **params) -> (out, out_dim)``."""


def bdim_at_front(x, bdim, size, mesh_axis=None):
    """``x`` with its batch dim first; an unbatched ``x`` (``bdim`` None) is broadcast
    along a new leading axis of ``size``.

        >>> bdim_at_front(fnp.ones((2, 3)), 1, 3).shape, bdim_at_front(1.0, None, 4).shape
        ((3, 2), (4,))
    """
    return _batching.bdim_at_front(x, bdim, size)


def broadcast(x, sz, axis, mesh_axis=None):
    """``x`` broadcast along a new axis of size ``sz`` at position ``axis``.

        >>> broadcast(fnp.ones((2, 3)), 4, 1).shape
        (2, 4, 3)
    """
    shape = list(get_aval(x).shape)
    keep = tuple(i for i in range(len(shape) + 1) if i != axis)
    shape.insert(axis, sz)
    return ops.broadcast(x, tuple(shape), keep)


def defvectorized(prim):
    """Batch a primitive that acts on each element (or each leading index) independently:
    it is bound on the batched operands as they are, whose batch dims must all agree.

        >>> from functrans.extend.core import Primitive
        >>> sq_p = Primitive("sq")
        >>> _ = sq_p.def_impl(lambda x: x * x)
        >>> _ = sq_p.def_abstract_eval(lambda a: a)
        >>> defvectorized(sq_p)
        >>> ft.vmap(sq_p.bind, in_axes=1)(fnp.ones((2, 3)) * 3)
        Array([[9., 9.],
               [9., 9.],
               [9., 9.]], dtype=float64)
    """
    def rule(axis_data, args, dims, **params):
        if any(d != dims[0] for d in dims[1:]):
            raise ValueError(f"vmap of '{prim}' (defvectorized) needs every operand batched "
                             f"along the same axis, got batch dims {list(dims)}")
        out = jax_bind(prim, *args, **params)
        return (out, [dims[0]] * len(out)) if multiple_results(prim) else (out, dims[0])
    fancy_primitive_batchers[prim] = rule


def defbroadcasting(prim):
    """Batch a primitive that broadcasts its operands against each other as NumPy does
    (size-1 axes stretch): batch dims are moved to the front, unbatched operands get a
    size-1 leading axis.

        >>> from functrans.extend.core import Primitive
        >>> from functrans.core.avals import ShapedArray
        >>> plus_p = Primitive("plus")
        >>> _ = plus_p.def_impl(lambda x, y: x + y)
        >>> _ = plus_p.def_abstract_eval(
        ...     lambda a, b: ShapedArray(np.broadcast_shapes(a.shape, b.shape), a.dtype))
        >>> defbroadcasting(plus_p)
        >>> ft.vmap(plus_p.bind, in_axes=(0, None))(fnp.ones((2, 3)), fnp.arange(3.0))
        Array([[1., 2., 3.],
               [1., 2., 3.]], dtype=float64)
    """
    def rule(axis_data, args, dims, **params):
        batched = [(get_aval(x).shape, d) for x, d in zip(args, dims) if d is not None]
        shape, dim = batched[0]
        if all(get_aval(x).ndim == 0 or (get_aval(x).shape == shape and d == dim)
               for x, d in zip(args, dims)):
            out = jax_bind(prim, *args, **params)
            return (out, [dim] * len(out)) if multiple_results(prim) else (out, dim)
        args = [bdim_at_front(x, d, 1) if get_aval(x).ndim else x for x, d in zip(args, dims)]
        ndim = max(get_aval(x).ndim for x in args)
        args = [_pad_trailing(x, ndim) if d is not None else x for x, d in zip(args, dims)]
        out = jax_bind(prim, *args, **params)
        return (out, [0] * len(out)) if multiple_results(prim) else (out, 0)
    fancy_primitive_batchers[prim] = rule


def _pad_trailing(x, ndim):
    shape = get_aval(x).shape
    if len(shape) == ndim:
        return x
    new = shape + (1,) * (ndim - len(shape))
    return ops.broadcast(x, new, tuple(range(len(shape))))


def __getattr__(name):
    raise AttributeError(f"module 'jax.interpreters.batching' has no attribute {name!r}: "
                         f"functrans does not provide jax.interpreters.batching.{name}")
