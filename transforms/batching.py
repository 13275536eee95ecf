"""``vmap``: automatic batching. A batch tracer carries a value with one extra *batch
dimension* (or none, for values that don't vary across the batch); each primitive's batching
rule computes the batched result directly, so no Python loop runs::

    >>> ft.vmap(lambda x: x @ x)(fnp.ones((5, 3)))
    Array([3., 3., 3., 3., 3.], dtype=float64)
"""
from __future__ import annotations

import functools
from typing import NamedTuple

from functrans.core.memo import cache_on_jaxpr
from functrans.core.api_util import fun_name, match_prefix
from functrans.core.avals import ShapedArray
from functrans.core.axis_env import extend_axis_env
from functrans.core.eval import eval_jaxpr
from functrans.core.staging import trace_to_jaxpr
from functrans.core.trace import (Trace, Tracer, current_trace, get_aval, new_trace,
                                  set_current_trace)
from functrans.core.tree import tree_flatten, tree_unflatten

from . import ops

not_mapped = None
# rule(axis, vals, dims, **params) -> (outs, out_dims); dims are ints or None (not mapped).
batching_rules: dict = {}


class AxisData(NamedTuple):
    name: object
    size: int


class BatchTracer(Tracer):
    __slots__ = ("val", "bdim")

    def __init__(self, trace, val, bdim: int):
        self._trace = trace
        self.val = val
        self.bdim = bdim

    @property
    def aval(self):
        a = get_aval(self.val)
        shape = a.shape[:self.bdim] + a.shape[self.bdim + 1:]
        return ShapedArray(shape, a.dtype, a.weak_type)

    def concrete_value(self):
        return None  # a batch of values has no single concrete value


class BatchTrace(Trace):
    """Applies batching rules; values without a batch dimension pass through unchanged."""

    def __init__(self, parent, axis: AxisData):
        super().__init__(parent)
        self.axis = axis
        self.name = f"vmap(axis_size={axis.size}" + (
            f", axis_name={axis.name!r})" if axis.name is not None else ")")

    def unpack(self, x):
        if isinstance(x, BatchTracer) and x._trace is self:
            return x.val, x.bdim
        if isinstance(x, Tracer):
            self.check_foreign(x)
        return x, not_mapped

    def process_primitive(self, prim, args, params):
        vals, dims = [], []
        for x in args:
            v, d = self.unpack(x)
            vals.append(v)
            dims.append(d)
        if all(d is None for d in dims) and not getattr(prim, "named_axis_rule", False):
            with set_current_trace(self.parent):
                return prim.bind_all(*vals, **params)
        rule = batching_rules.get(prim)
        if rule is None:
            if "elementwise" in prim.traits:
                rule = batch_elementwise(prim)
            else:
                raise NotImplementedError(f"batching rule for '{prim.name}' is not implemented")
        with set_current_trace(self.parent):
            outs, out_dims = rule(self.axis, vals, dims, **params)
        return [o if d is None else BatchTracer(self, o, d) for o, d in zip(outs, out_dims)]


# ---- helpers for batching rules ------------------------------------------------------------
def moveaxis(x, src, dst):
    """Move the batch dim ``src`` of ``x`` to ``dst`` (no-op if equal)."""
    if src == dst:
        return x
    return ops.moveaxis(x, src, dst)


def bdim_at_front(x, bdim, size):
    """``x`` with its batch dim first; unbatched values are broadcast along a new front axis."""
    if bdim is None:
        shape = get_aval(x).shape
        return ops.broadcast(x, (size,) + shape, tuple(range(1, len(shape) + 1)))
    return moveaxis(x, bdim, 0)


def batch_elementwise(prim):
    """Elementwise primitives: batch dims to the front; rank-0 operands stay scalars unless
    batched, in which case they are broadcast to the full batched shape."""
    def rule(axis, vals, dims, **params):
        shapes = [get_aval(v).shape if d is None else
                  get_aval(v).shape[:d] + get_aval(v).shape[d + 1:] for v, d in zip(vals, dims)]
        out_shape = max(shapes, key=len)
        full = (axis.size,) + out_shape
        args = []
        for v, d, s in zip(vals, dims, shapes):
            if d is None and s == ():
                args.append(v)
            elif d is None:
                args.append(ops.broadcast(v, full, tuple(range(1, len(full)))))
            else:
                v = moveaxis(v, d, 0)
                if s != out_shape:
                    v = ops.broadcast(v, full, (0,))
                args.append(v)
        outs = prim.bind_all(*args, **params)
        return outs, [0] * len(outs)
    return rule


# ---- batching of a jaxpr (for higher-order primitives) -------------------------------------------
@cache_on_jaxpr
def batch_jaxpr(jaxpr, axis: AxisData, in_dims, out_dims_wanted=None):
    """A jaxpr computing the batched ``jaxpr``; inputs carry batch dims ``in_dims``.

    Returns ``(batched_jaxpr, out_dims)``. With ``out_dims_wanted`` (a list of ints/None, or an
    int for all outputs) outputs are moved/broadcast to those dims.
    """
    in_avals = []
    for a, d in zip(jaxpr.in_avals, in_dims):
        if d is None:
            in_avals.append(a)
        else:
            shape = list(a.shape)
            shape.insert(d, axis.size)
            in_avals.append(ShapedArray(shape, a.dtype, a.weak_type))
    out_dims_box = []

    def fun(*args):
        trace = BatchTrace(current_trace(), axis)
        with extend_axis_env(axis.name, axis.size), new_trace(trace):
            ins = [a if d is None else BatchTracer(trace, a, d) for a, d in zip(args, in_dims)]
            outs = eval_jaxpr(jaxpr, *ins)
            pairs = [trace.unpack(o) for o in outs]
        vals, dims = [v for v, _ in pairs], [d for _, d in pairs]
        if out_dims_wanted is not None:
            wanted = out_dims_wanted if isinstance(out_dims_wanted, (list, tuple)) else \
                [out_dims_wanted] * len(vals)
            vals = [match_dim(v, d, w, axis.size) for v, d, w in zip(vals, dims, wanted)]
            dims = list(wanted)
        out_dims_box[:] = dims
        return vals

    batched = trace_to_jaxpr(fun, in_avals, name="vmap")
    return batched, out_dims_box


def match_dim(x, bdim, want, size):
    """Move ``x``'s batch dim to ``want`` (broadcasting unbatched values; ``want`` None requires
    an unbatched value)."""
    if want is None:
        if bdim is not None:
            raise ValueError("a batched value was required to be unbatched")
        return x
    if bdim is None:
        shape = get_aval(x).shape
        out_shape = shape[:want] + (size,) + shape[want:]
        return ops.broadcast(x, out_shape, tuple(i for i in range(len(out_shape)) if i != want))
    return moveaxis(x, bdim, want)


# ---- the public API ------------------------------------------------------------------------------
def _leaf_labels(fun, args, kwargs):
    """A readable name for each flattened argument leaf: ``argument 'x'`` / ``argument 1[2]``."""
    try:
        import inspect
        names = [p.name for p in inspect.signature(fun).parameters.values()]
    except (TypeError, ValueError):
        names = []
    labels = []
    for i, a in enumerate(args):
        base = f"argument {names[i]!r}" if i < len(names) else f"argument {i}"
        n = len(tree_flatten(a)[0])
        labels.extend([base] if n == 1 else [f"{base}[leaf {k}]" for k in range(n)])
    for k in sorted(kwargs):
        n = len(tree_flatten(kwargs[k])[0])
        labels.extend([f"keyword argument {k!r}"] * n)
    return labels


def _describe_leaf(label, x, ax):
    return f"axis {ax} of {label} of type {get_aval(x).str_short()}"


def vmap(fun, in_axes=0, out_axes=0, axis_name=None, axis_size=None, spmd_axis_name=None):
    """Vectorize ``fun`` over a new leading (or ``in_axes``) axis of its arguments.

    ``in_axes``/``out_axes``: an int (negative allowed), None (not mapped), or a pytree prefix
    of the arguments/outputs made of those. ``axis_name`` names the axis for collectives
    (``lax.psum(x, axis_name)``); ``axis_size`` is needed when no argument is mapped.

    >>> ft.vmap(lambda x, y: x * y, in_axes=(0, None))(fnp.arange(3.0), 2.0)
    Array([0., 2., 4.], dtype=float64)
    """
    what = f"vmap({fun_name(fun)})"
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)
    _check_axes_spec(in_axes, what, "in_axes")
    _check_axes_spec(out_axes, what, "out_axes")

    @functools.wraps(fun)
    def vmapped(*args, **kwargs):
        leaves, in_tree = tree_flatten((args, kwargs))
        # References are passed by value and written back (as jit's; ``_is_ref`` marks them).
        refs = {i: x for i, x in enumerate(leaves) if getattr(x, "_is_ref", False)}
        leaves = [refs[i]._check(f"passing to {what}") if i in refs else x
                  for i, x in enumerate(leaves)]
        # Keyword arguments are always mapped along axis 0, as in JAX.
        axes = match_prefix((in_axes, 0), (args, kwargs), what, "in_axes", "arguments")
        labels = _leaf_labels(fun, args, kwargs)
        axes = [_normalize_in_axis(a, x, lab, what) for a, x, lab in zip(axes, leaves, labels)]
        size = _axis_size(leaves, axes, labels, axis_size, what)
        flat_args = leaves
        out_store = {}

        def flat_fun(*xs):
            inner = {i: type(r)(xs[i], current_trace()) for i, r in refs.items()}
            a, k = tree_unflatten(in_tree, [inner.get(i, x) for i, x in enumerate(xs)])
            out = fun(*a, **k)
            out_leaves, out_store["tree"] = tree_flatten(out)
            return out_leaves + [r._value for r in inner.values()]

        vals, dims = batch_flat(flat_fun, flat_args, axes, AxisData(axis_name, size))
        if refs:
            n = len(vals) - len(refs)
            for (i, r), v, d in zip(refs.items(), vals[n:], dims[n:]):
                if axes[i] is None and d is not None:
                    raise ValueError(f"{what}: a Ref passed unmapped (in_axes None) was written "
                                     "with values that vary across the batch")
                r._value = v if axes[i] is None else match_dim(v, d, axes[i], size)
            vals, dims = vals[:n], dims[:n]
        out_tree = out_store["tree"]
        o_axes = match_prefix(out_axes, tree_unflatten(out_tree, vals), what, "out_axes",
                              "outputs")
        outs = []
        for i, (v, d, o) in enumerate(zip(vals, dims, o_axes)):
            if d is None and getattr(type(v), "symbolic_zero", False):
                # A symbolic zero (autodiff's: an aval, no value) a function returns, as
                # equinox's batched JVP rules do for integer outputs: as it is, as in JAX.
                outs.append(v)
                continue
            if o is None and d is not None:
                raise ValueError(f"{what}: output leaf {i} is mapped over the batch but out_axes "
                                 "is None for it (it varies across the batch)")
            if o is not None:
                nd = get_aval(v).ndim + (1 if d is None else 0)
                if not -nd <= o < nd:
                    raise ValueError(f"{what}: out_axes {o} is out of range for output leaf {i} "
                                     f"of rank {nd}")
                o %= nd
            outs.append(match_dim(v, d, o, size))
        return tree_unflatten(out_tree, outs)

    return vmapped


def batch_flat(fun, args, in_dims, axis: AxisData):
    """Run ``fun`` on batch tracers; returns (values, batch dims) of the outputs."""
    trace = BatchTrace(current_trace(), axis)
    with extend_axis_env(axis.name, axis.size), new_trace(trace):
        ins = [x if d is None else BatchTracer(trace, x, d) for x, d in zip(args, in_dims)]
        outs = fun(*ins)
        pairs = [trace.unpack(o) for o in outs]
    return [v for v, _ in pairs], [d for _, d in pairs]


def _check_axes_spec(spec, what, name):
    leaves = tree_flatten(spec, is_leaf=lambda x: x is None)[0]
    for a in leaves:
        if a is not None and not isinstance(a, int):
            raise TypeError(f"{what}: {name} must be ints, None, or pytrees of them, got "
                            f"{a!r} of type {type(a).__name__}")


def _normalize_in_axis(ax, x, label, what):
    if ax is None:
        return None
    nd = get_aval(x).ndim
    if not -nd <= ax < nd:
        raise ValueError(f"{what} was asked to map {label} along axis {ax}, which "
                         f"needs rank >= {ax + 1 if ax >= 0 else -ax}, but it has shape "
                         f"{get_aval(x).shape}")
    return ax % nd


def _axis_size(leaves, axes, labels, axis_size, what):
    sizes = {}
    for x, ax, label in zip(leaves, axes, labels):
        if ax is not None:
            sizes.setdefault(get_aval(x).shape[ax], []).append(_describe_leaf(label, x, ax))
    if axis_size is not None:
        if sizes and set(sizes) != {axis_size}:
            raise ValueError(f"{what}: axis_size={axis_size} does not match the mapped sizes "
                             f"{sorted(sizes)}")
        return axis_size
    if not sizes:
        raise ValueError(f"{what} needs axis_size= when no argument is mapped (in_axes has no "
                         "non-None entry for any array)")
    if len(sizes) > 1:
        lines = "\n".join(f"  * size {s}: {', '.join(d)}" for s, d in sizes.items())
        # JAX's words ("vmap got inconsistent sizes for array axes to be mapped"), which
        # libraries' tests match, then which function
        raise ValueError(f"{what.split('(')[0]} got inconsistent sizes for array axes to be "
                         f"mapped, in {what}:\n{lines}")
    return next(iter(sizes))


__all__ = ["vmap", "batching_rules", "BatchTrace", "BatchTracer", "AxisData", "batch_jaxpr",
           "batch_flat", "bdim_at_front", "moveaxis", "match_dim", "not_mapped"]
