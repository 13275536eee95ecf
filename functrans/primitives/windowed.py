"""Windowed reductions (pooling): reduce_window_sum / _max / _min, and the two linear
primitives that differentiate max/min pooling, select_and_gather_add (the tangent at each
window's selected element) and its transpose select_and_scatter_add.

Every primitive here takes ``window_dimensions``, ``window_strides``, ``padding`` (one
``(low, high)`` pair per dim), ``base_dilation`` and ``window_dilation``, as XLA's
ReduceWindow; padding and holes hold the reduction's identity::

    >>> y = reduce_window_max_p.bind1(np.array([1., 3., 2., 5.]), window_dimensions=(2,),
    ...     window_strides=(2,), padding=((0, 0),), base_dilation=(1,), window_dilation=(1,))
    >>> np.asarray(y)
    array([3., 5.])

The selection in a window picks the first maximal (minimal) element in row-major window
order, padding included (whose tangent is zero); NaN counts as the maximum and the minimum.
"""
from __future__ import annotations
from functrans.core.dtypes import kind as dtype_kind

__all__ = ["reduce_window_sum_p", "reduce_window_max_p", "reduce_window_min_p",
           "select_and_gather_add_p", "select_and_scatter_add_p"]

import itertools

import numpy as np

from ..core.avals import ShapedArray
from ..core.trace import Primitive
from .convolution import dilate_and_pad, dilate_dim, stride_dim, window_view

WINDOW_PARAMS = ("window_dimensions", "window_strides", "padding", "base_dilation",
                 "window_dilation")


def window_output_shape(shape, window_dimensions, window_strides, padding, base_dilation,
                        window_dilation):
    return tuple(stride_dim(dilate_dim(d, b) + lo + hi, dilate_dim(w, wd), s)
                 for d, w, s, (lo, hi), b, wd in zip(shape, window_dimensions, window_strides,
                                                     padding, base_dilation, window_dilation))


def window_offsets(out_shape, window_dimensions, window_strides, window_dilation):
    """Per window offset (row-major), ``(start, limit, strides)`` of the strided slice of the
    padded and dilated operand holding that offset's element of every window: a window
    reduction is these slices combined.

    >>> list(window_offsets((2,), (2,), (2,), (1,)))
    [((0,), (3,), (2,)), ((1,), (4,), (2,))]
    """
    for offset in itertools.product(*(range(w) for w in window_dimensions)):
        start = tuple(k * d for k, d in zip(offset, window_dilation))
        limit = tuple(s + (o - 1) * st + 1 for s, o, st in zip(start, out_shape, window_strides))
        yield start, limit, tuple(window_strides)


def check_window_params(name, aval, window_dimensions, window_strides, padding, base_dilation,
                        window_dilation):
    """Raise a clear error for window parameters that do not fit ``aval``."""
    nd = aval.ndim
    for vals, what in ((window_dimensions, "window_dimensions"),
                       (window_strides, "window_strides"), (padding, "padding"),
                       (base_dilation, "base_dilation"), (window_dilation, "window_dilation")):
        if len(vals) != nd:
            raise ValueError(f"{name}: {what} needs one entry per operand dimension ({nd} for "
                             f"{aval.str_short()}), got {tuple(vals)}")
    for vals, what in ((window_dimensions, "window_dimensions"),
                       (window_strides, "window_strides"), (base_dilation, "base_dilation"),
                       (window_dilation, "window_dilation")):
        if any(v < 1 for v in vals):
            raise ValueError(f"{name}: {what} must be positive, got {tuple(vals)}")
    for k, (d, (lo, hi), b) in enumerate(zip(aval.shape, padding, base_dilation)):
        if dilate_dim(d, b) + lo + hi < 0:
            raise ValueError(f"{name}: negative padding {(lo, hi)} is larger than dimension "
                             f"{k} of the operand {aval.str_short()}")


def identity(kind, dtype):
    """The value padding and holes hold for a ``sum``/``max``/``min`` window."""
    dtype = np.dtype(dtype)
    if kind == "sum":
        return np.zeros((), dtype)[()]
    if dtype == np.bool_:
        return np.bool_(kind == "min")
    if dtype_kind(dtype) == "f":
        return dtype.type(-np.inf if kind == "max" else np.inf)
    info = np.iinfo(dtype)
    return dtype.type(info.min if kind == "max" else info.max)


def windows(x, fill, *, window_dimensions, window_strides, padding, base_dilation,
            window_dilation):
    """NumPy: ``out_shape + window`` view of ``x`` dilated and padded with ``fill``."""
    xp = dilate_and_pad(x[None], 1, base_dilation, padding, fill)
    return window_view(xp, 1, window_dimensions, window_strides, window_dilation)[0]


def _reduce_window(kind):
    reducer = {"sum": np.sum, "max": np.max, "min": np.min}[kind]
    name = f"reduce_window_{kind}"

    def impl(x, **params):
        v = windows(x, identity(kind, x.dtype), **params)
        axes = tuple(range(x.ndim, 2 * x.ndim))
        if v.size == 0:
            return [np.full(v.shape[:x.ndim], identity(kind, x.dtype), x.dtype)]
        with np.errstate(all="ignore"):
            return [np.asarray(reducer(v, axis=axes), dtype=x.dtype)]

    def abstract_eval(x, **params):
        check_window_params(name, x, **params)
        if kind == "sum" and x.dtype == np.bool_:
            raise TypeError(f"{name} does not accept booleans, got {x.str_short()}")
        return [ShapedArray(window_output_shape(x.shape, **params), x.dtype, x.weak_type)]
    return Primitive(name, impl=impl, abstract_eval=abstract_eval)


reduce_window_sum_p = _reduce_window("sum")
reduce_window_max_p = _reduce_window("max")
reduce_window_min_p = _reduce_window("min")


def selected_positions(operand, select_prim, **params):
    """NumPy: for each window, the flat window index of its selected element."""
    kind = "max" if select_prim == "ge" else "min"
    v = windows(operand, identity(kind, operand.dtype), **params)
    out_shape = v.shape[:operand.ndim]
    if v.size == 0:  # no windows (every window has at least one element)
        return np.zeros(out_shape, np.int64), out_shape
    flat = v.reshape(out_shape + (-1,))
    pos = np.argmax(flat, -1) if kind == "max" else np.argmin(flat, -1)
    return pos, out_shape


def _select_and_gather_add_impl(tangents, operand, *, select_prim, **params):
    pos, out_shape = selected_positions(operand, select_prim, **params)
    t = windows(tangents, np.zeros((), tangents.dtype)[()], **params)
    if t.size == 0:
        return [np.zeros(out_shape, tangents.dtype)]
    flat = t.reshape(out_shape + (-1,))
    return [np.take_along_axis(flat, pos[..., None], -1)[..., 0]]


def _select_and_scatter_add_impl(source, operand, *, select_prim, window_dimensions,
                                 window_strides, padding, base_dilation, window_dilation):
    """Adds each window's source value at its selected element (none if that is padding)."""
    params = dict(window_dimensions=window_dimensions, window_strides=window_strides,
                  padding=padding, base_dilation=base_dilation, window_dilation=window_dilation)
    pos, out_shape = selected_positions(operand, select_prim, **params)
    out = np.zeros(operand.shape, source.dtype)
    if source.size == 0 or operand.size == 0:
        return [out]
    nd = operand.ndim
    win = np.unravel_index(pos, window_dimensions)
    outs = np.indices(out_shape)
    idx, ok = [], np.ones(out_shape, bool)
    for k in range(nd):
        lo = padding[k][0]
        p = outs[k] * window_strides[k] + win[k] * window_dilation[k] - lo  # dilated coords
        i = p // base_dilation[k]
        ok &= (p >= 0) & (p % base_dilation[k] == 0) & (i < operand.shape[k])
        idx.append(i)
    np.add.at(out, tuple(i[ok] for i in idx), source[ok])
    return [out]


def _select_abstract_eval(name, out_is_operand):
    def rule(values, operand, *, select_prim, **params):
        check_window_params(name, operand, **params)
        if select_prim not in ("ge", "le"):
            raise ValueError(f"{name}: select_prim must be 'ge' or 'le', got {select_prim!r}")
        out_shape = window_output_shape(operand.shape, **params)
        want = operand.shape if not out_is_operand else out_shape
        if values.shape != tuple(want):
            raise TypeError(f"{name}: expected values of shape {tuple(want)}, got "
                            f"{values.str_short()}")
        shape = operand.shape if out_is_operand else out_shape
        return [ShapedArray(shape, values.dtype, values.weak_type)]
    return rule


select_and_gather_add_p = Primitive(
    "select_and_gather_add", impl=_select_and_gather_add_impl,
    abstract_eval=_select_abstract_eval("select_and_gather_add", False))
select_and_scatter_add_p = Primitive(
    "select_and_scatter_add", impl=_select_and_scatter_add_impl,
    abstract_eval=_select_abstract_eval("select_and_scatter_add", True))


# ==== differentiation rules =======================================================================
from ..transforms.autodiff.rules import (Zero, deflinear, deflinear_in, is_zero,  # noqa: E402
                                         jvp_rules)
from ..core.trace import get_aval  # noqa: E402
from .structural import pad_p  # noqa: E402


def _window_params(params):
    return {k: params[k] for k in WINDOW_PARAMS}


def _reduce_window_sum_transpose(cts, x, *, window_dimensions, window_strides, padding,
                                 base_dilation, window_dilation):
    """The cotangent spread back over each window: ct padded (strides become holes) and
    summed over windows with base dilation as the stride."""
    ct = cts[0]
    shape = x.aval.shape
    if is_zero(ct):
        return [Zero(x.aval)]
    from .convolution import _vjp_lhs_padding
    pads = _vjp_lhs_padding(shape, window_dimensions, window_strides, get_aval(ct).shape,
                            padding, base_dilation, window_dilation)
    config = tuple((lo, hi, s - 1) for (lo, hi), s in zip(pads, window_strides))
    zero = np.zeros((), get_aval(ct).dtype)
    padded = pad_p.bind1(ct, zero, padding_config=config)
    ones = (1,) * len(shape)
    res = reduce_window_sum_p.bind1(padded, window_dimensions=tuple(window_dimensions),
                                    window_strides=tuple(base_dilation),
                                    padding=((0, 0),) * len(shape), base_dilation=ones,
                                    window_dilation=tuple(window_dilation))
    return [res]


deflinear(reduce_window_sum_p, _reduce_window_sum_transpose)


def _chooser_jvp(prim, select_prim):
    def rule(primals, tangents, **params):
        (x,), (t,) = primals, tangents
        out = prim.bind1(x, **params)
        if is_zero(t):
            return [out], [Zero(get_aval(out))]
        return [out], [select_and_gather_add_p.bind1(t, x, select_prim=select_prim, **params)]
    jvp_rules[prim] = rule


_chooser_jvp(reduce_window_max_p, "ge")
_chooser_jvp(reduce_window_min_p, "le")


def _gather_transpose(cts, t, operand, *, select_prim, **params):
    ct = cts[0]
    if is_zero(ct):
        return [Zero(t.aval), None]
    return [select_and_scatter_add_p.bind1(ct, operand, select_prim=select_prim, **params),
            None]


def _scatter_transpose(cts, source, operand, *, select_prim, **params):
    ct = cts[0]
    if is_zero(ct):
        return [Zero(source.aval), None]
    return [select_and_gather_add_p.bind1(ct, operand, select_prim=select_prim, **params),
            None]


deflinear_in(select_and_gather_add_p, (0,), _gather_transpose)
deflinear_in(select_and_scatter_add_p, (0,), _scatter_transpose)


# ==== batching rules ==============================================================================
from ..transforms.batching import batching_rules, bdim_at_front  # noqa: E402


def _with_unit_window(bdim, params):
    """Window parameters for an operand with an extra dim at ``bdim`` (a window of 1)."""
    p = dict(params)
    for k, v in (("window_dimensions", 1), ("window_strides", 1), ("padding", (0, 0)),
                 ("base_dilation", 1), ("window_dilation", 1)):
        vals = list(params[k])
        vals.insert(bdim, v)
        p[k] = tuple(vals)
    return p


def _reduce_window_batch(prim):
    def rule(axis, vals, dims, **params):
        (x,), (d,) = vals, dims
        return [prim.bind1(x, **_with_unit_window(d, params))], [d]
    batching_rules[prim] = rule


for _p in (reduce_window_sum_p, reduce_window_max_p, reduce_window_min_p):
    _reduce_window_batch(_p)


def _select_batch(prim):
    def rule(axis, vals, dims, *, select_prim, **params):
        values, operand = (bdim_at_front(v, d, axis.size) for v, d in zip(vals, dims))
        return [prim.bind1(values, operand, select_prim=select_prim,
                           **_with_unit_window(0, params))], [0]
    batching_rules[prim] = rule


_select_batch(select_and_gather_add_p)
_select_batch(select_and_scatter_add_p)
