"""``lax.reduce_window`` (pooling) with JAX's signature and semantics."""
from __future__ import annotations

import operator

import numpy as np

from .. import primitives as P
from ..core import tree as tree_util
from ..core.trace import Tracer, get_aval
from ..primitives.windowed import (check_window_params, identity, window_offsets,
                                   window_output_shape)
from . import ops
from .convolution import padtype_to_pads

__all__ = ["reduce_window", "reduce_window_shape_tuple"]

_MONOIDS = {"sum": P.reduce_window_sum_p, "max": P.reduce_window_max_p,
            "min": P.reduce_window_min_p}


def _monoid_kind(computation, init):
    """'sum'/'max'/'min' when ``computation`` is lax.add/max/min and ``init`` is a concrete
    identity of that reduction (as JAX recognizes them), else None."""
    kind = {ops.add: "sum", ops.max: "max", ops.min: "min"}.get(computation)
    if kind is None or isinstance(init, Tracer):
        return None
    try:
        value = np.asarray(init)
    except Exception:  # an array-like that is not concrete
        return None
    if value.shape != ():
        return None
    dtype = value.dtype
    if kind == "sum" and dtype == np.bool_:
        return None
    return kind if value == identity(kind, dtype) else None


def _int_tuple(vals, what, n):
    try:
        out = tuple(operator.index(v) for v in vals)
    except TypeError:
        raise TypeError(f"reduce_window: {what} must be a sequence of integers, got "
                        f"{vals!r}") from None
    if len(out) != n:
        raise ValueError(f"reduce_window: {what} needs one entry per operand dimension ({n}), "
                         f"got {vals!r}")
    return out


def _params(aval, window_dimensions, window_strides, padding, base_dilation, window_dilation):
    n = aval.ndim
    window_dimensions = _int_tuple(window_dimensions, "window_dimensions", n)
    window_strides = _int_tuple(window_strides, "window_strides", n)
    base_dilation = (1,) * n if base_dilation is None else _int_tuple(base_dilation,
                                                                     "base_dilation", n)
    window_dilation = (1,) * n if window_dilation is None else _int_tuple(
        window_dilation, "window_dilation", n)
    if isinstance(padding, str):
        dilated = [(d - 1) * b + 1 if d else 0 for d, b in zip(aval.shape, base_dilation)]
        window = [(w - 1) * d + 1 for w, d in zip(window_dimensions, window_dilation)]
        padding = padtype_to_pads(dilated, window, window_strides, padding)
    try:
        padding = tuple((operator.index(lo), operator.index(hi)) for lo, hi in padding)
    except (TypeError, ValueError):
        raise ValueError(f"reduce_window: padding should be a string or a sequence of "
                         f"(low, high) pairs, got {padding!r}") from None
    params = dict(window_dimensions=window_dimensions, window_strides=window_strides,
                  padding=padding, base_dilation=base_dilation, window_dilation=window_dilation)
    check_window_params("reduce_window", aval, **params)
    return params


def reduce_window(operand, init_value, computation, window_dimensions, window_strides,
                  padding, base_dilation=None, window_dilation=None):
    """Reduce each window of ``operand`` with ``computation``, starting from ``init_value``
    (XLA's ReduceWindow: padding and base-dilation holes hold ``init_value``).
    ``padding`` is ``'SAME'``, ``'SAME_LOWER'``, ``'VALID'`` or ``(low, high)`` pairs.

    ``lax.add``/``lax.max``/``lax.min`` with their identity as ``init_value`` become the
    reduce_window_sum/max/min primitives (sum and max pooling); any other binary function
    (and pytrees of operands) is folded over the window offsets from pads and strided
    slices, so it composes with every transformation too.

    >>> x = fnp.arange(16.0).reshape(4, 4)
    >>> lax.reduce_window(x, -fnp.inf, lax.max, (2, 2), (2, 2), "VALID")
    Array([[ 5.,  7.],
           [13., 15.]], dtype=float64)
    >>> lax.reduce_window(x, 1.0, lax.mul, (1, 2), (1, 2), "VALID")[0]
    Array([0., 6.], dtype=float64)
    """
    leaves, tree = tree_util.tree_flatten(operand)
    init_leaves, init_tree = tree_util.tree_flatten(init_value)
    if tree != init_tree:
        raise TypeError(f"reduce_window: operands {tree} and init values {init_tree} must "
                        f"have the same structure")
    if not leaves:
        raise TypeError("reduce_window needs at least one operand")
    avals = [get_aval(x) for x in leaves]
    if any(a.shape != avals[0].shape for a in avals):
        raise TypeError(f"reduce_window: operands must have the same shape, got "
                        f"{[a.str_short() for a in avals]}")
    params = _params(avals[0], window_dimensions, window_strides, padding, base_dilation,
                     window_dilation)
    if len(leaves) == 1:
        kind = _monoid_kind(computation, init_leaves[0])
        if kind is not None:
            x = leaves[0]
            dtype = np.asarray(init_leaves[0]).dtype
            if get_aval(x).dtype != dtype and not isinstance(init_leaves[0], (int, float)):
                raise TypeError(f"reduce_window: operand {get_aval(x).str_short()} and "
                                f"init_value of dtype {dtype} must have the same dtype")
            return _MONOIDS[kind].bind1(x, **params)
    out = _fold(leaves, init_leaves, tree, computation, params)
    return tree_util.tree_unflatten(tree, out)


def _fold(leaves, inits, tree, computation, params):
    """The general reduction: pad with init, then combine one strided slice per window
    offset into an accumulator that starts at init."""
    shape = get_aval(leaves[0]).shape
    out_shape = window_output_shape(shape, **params)
    config = [(lo, hi, b - 1) for (lo, hi), b in zip(params["padding"], params["base_dilation"])]
    padded, accs = [], []
    for x, init in zip(leaves, inits):
        dtype = get_aval(x).dtype
        init = ops.convert_element_type(init, dtype) if get_aval(init).dtype != dtype else init
        padded.append(x if all(c == (0, 0, 0) for c in config) else ops.pad(x, init, config))
        accs.append(ops.broadcast_in_dim(init, out_shape, ()))
    if any(d == 0 for d in out_shape):
        return accs
    for start, limit, strides in window_offsets(out_shape, params["window_dimensions"],
                                                params["window_strides"],
                                                params["window_dilation"]):
        pieces = [ops.slice(p, start, limit, strides) for p in padded]
        res = computation(tree_util.tree_unflatten(tree, accs),
                          tree_util.tree_unflatten(tree, pieces))
        res_leaves, res_tree = tree_util.tree_flatten(res)
        if res_tree != tree:
            raise TypeError(f"reduce_window: computation must return the structure {tree} of "
                            f"its operands, got {res_tree}")
        accs = res_leaves
    return accs


def reduce_window_shape_tuple(operand_shape, window_dimensions, window_strides, padding,
                              base_dilation=None, window_dilation=None):
    """Output shape of :func:`reduce_window` with explicit ``(low, high)`` padding.

    >>> lax.reduce_window_shape_tuple((4, 4), (2, 2), (2, 2), ((0, 0), (0, 1)))
    (2, 2)
    """
    n = len(operand_shape)
    ones = (1,) * n
    return window_output_shape(tuple(operand_shape), tuple(window_dimensions),
                               tuple(window_strides), tuple(tuple(p) for p in padding),
                               ones if base_dilation is None else tuple(base_dilation),
                               ones if window_dilation is None else tuple(window_dilation))
