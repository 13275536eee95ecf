"""conv_general_dilated: XLA's general convolution (strides, padding, lhs/rhs dilation,
feature and batch groups, any dimension order).

``dimension_numbers = (lhs_spec, rhs_spec, out_spec)``: tuples of dimension indices listing
(batch, feature, spatial...) for lhs and the output and (out feature, in feature, spatial...)
for the kernel; ``padding`` is one ``(low, high)`` pair per spatial dim (negative crops)::

    >>> y = conv_general_dilated_p.bind1(np.ones((1, 1, 4)), np.ones((1, 1, 2)),
    ...     window_strides=(1,), padding=((0, 0),), lhs_dilation=(1,), rhs_dilation=(1,),
    ...     dimension_numbers=((0, 1, 2), (0, 1, 2), (0, 1, 2)), feature_group_count=1,
    ...     batch_group_count=1, precision=None, preferred_element_type=np.dtype("float64"))
    >>> np.asarray(y)
    array([[[2., 2., 2.]]])
"""
from __future__ import annotations

__all__ = ["conv_general_dilated_p"]

import math

import numpy as np

from ..core import dtypes
from ..core.avals import ShapedArray
from ..core.shape_poly import is_symbolic_dim, max_dim
from ..core.trace import Primitive


def dilate_dim(d: int, dilation: int) -> int:
    """Size of a dimension of size ``d`` with ``dilation - 1`` holes between elements."""
    return 0 if d == 0 else 1 + dilation * (d - 1)


def stride_dim(d: int, window: int, stride: int) -> int:
    """Number of windows of size ``window`` at ``stride`` that fit in ``d``."""
    if is_symbolic_dim(d) or is_symbolic_dim(window):  # none when the window is wider
        return max_dim((d - window) // stride + 1, 0)
    return 0 if d < window else (d - window) // stride + 1


def conv_output_shape(lhs_shape, rhs_shape, dimension_numbers, window_strides, padding,
                      lhs_dilation, rhs_dilation, batch_group_count):
    """The output shape (in the output's own dimension order)."""
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    spatial = []
    for k, (ld, rd) in enumerate(zip(lhs_spec[2:], rhs_spec[2:])):
        lo, hi = padding[k]
        padded = dilate_dim(lhs_shape[ld], lhs_dilation[k]) + lo + hi
        window = dilate_dim(rhs_shape[rd], rhs_dilation[k])
        spatial.append(stride_dim(padded, window, window_strides[k]))
    canon = [lhs_shape[lhs_spec[0]] // batch_group_count, rhs_shape[rhs_spec[0]]] + spatial
    out = [0] * len(canon)
    for j, d in enumerate(out_spec):
        out[d] = canon[j]
    return tuple(out)


def _check_params(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation,
                  dimension_numbers, feature_group_count, batch_group_count):
    name = "conv_general_dilated"
    if lhs.ndim != rhs.ndim or lhs.ndim < 2:
        raise ValueError(f"{name}: lhs and rhs must have the same rank (at least 2), got "
                         f"{lhs.str_short()} and {rhs.str_short()}")
    nd, ns = lhs.ndim, lhs.ndim - 2
    for spec, what in zip(dimension_numbers, ("lhs", "rhs", "out")):
        if sorted(spec) != list(range(nd)):
            raise ValueError(f"{name}: {what} dimension numbers {tuple(spec)} are not a "
                             f"permutation of range({nd})")
    for vals, what in ((window_strides, "window_strides"), (lhs_dilation, "lhs_dilation"),
                       (rhs_dilation, "rhs_dilation"), (padding, "padding")):
        if len(vals) != ns:
            raise ValueError(f"{name}: {what} needs one entry per spatial dimension ({ns}), "
                             f"got {tuple(vals)}")
    for vals, what in ((window_strides, "window_strides"), (lhs_dilation, "lhs_dilation"),
                       (rhs_dilation, "rhs_dilation")):
        if any(v < 1 for v in vals):
            raise ValueError(f"{name}: {what} must be positive, got {tuple(vals)}")
    for g, what in ((feature_group_count, "feature_group_count"),
                    (batch_group_count, "batch_group_count")):
        if g < 1:
            raise ValueError(f"{name}: {what} must be a positive integer, got {g}")
    if feature_group_count > 1 and batch_group_count > 1:
        raise ValueError(f"{name}: at most one of feature_group_count and batch_group_count may "
                         f"be > 1, got {feature_group_count} and {batch_group_count}")
    lhs_spec, rhs_spec, _ = dimension_numbers
    c, i, o = lhs.shape[lhs_spec[1]], rhs.shape[rhs_spec[1]], rhs.shape[rhs_spec[0]]
    if c % feature_group_count or c // feature_group_count != i:
        raise ValueError(f"{name}: the lhs feature dimension (size {c}) divided by "
                         f"feature_group_count={feature_group_count} must equal the rhs input "
                         f"feature dimension (size {i}); shapes {lhs.str_short()} and "
                         f"{rhs.str_short()}")
    for g, what in ((feature_group_count, "feature_group_count"),
                    (batch_group_count, "batch_group_count")):
        if o % g:
            raise ValueError(f"{name}: the rhs output feature dimension (size {o}) must be a "
                             f"multiple of {what}={g}")
    n = lhs.shape[lhs_spec[0]]
    if n % batch_group_count:
        raise ValueError(f"{name}: batch_group_count={batch_group_count} must divide the lhs "
                         f"batch dimension (size {n})")
    for k, (ld, (lo, hi)) in enumerate(zip(lhs_spec[2:], padding)):
        if dilate_dim(lhs.shape[ld], lhs_dilation[k]) + lo + hi < 0:
            raise ValueError(f"{name}: negative padding {(lo, hi)} is larger than spatial "
                             f"dimension {k} of the lhs (size {lhs.shape[ld]})")


def _conv_abstract_eval(lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
                        dimension_numbers, feature_group_count, batch_group_count, precision,
                        preferred_element_type):
    _check_params(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation,
                  dimension_numbers, feature_group_count, batch_group_count)
    if lhs.dtype != rhs.dtype:
        raise TypeError(f"conv_general_dilated requires operands of the same dtype, got "
                        f"{lhs.str_short()} and {rhs.str_short()}")
    out_dtype = lhs.dtype if preferred_element_type is None else np.dtype(preferred_element_type)
    dtypes.canonicalize_dtype(out_dtype, what="conv_general_dilated preferred_element_type")
    shape = conv_output_shape(lhs.shape, rhs.shape, dimension_numbers, window_strides, padding,
                              lhs_dilation, rhs_dilation, batch_group_count)
    return [ShapedArray(shape, out_dtype, lhs.weak_type and rhs.weak_type)]


def dilate_and_pad(x, first_spatial, dilation, padding, fill):
    """NumPy: the ``len(dilation)`` spatial dims of ``x`` from ``first_spatial`` on dilated
    (``fill`` in the holes) and padded with ``fill`` (negative padding crops)."""
    ns, fs = len(dilation), first_spatial
    shape = list(x.shape)
    for k in range(ns):
        lo, hi = padding[k]
        shape[fs + k] = dilate_dim(x.shape[fs + k], dilation[k]) + max(lo, 0) + max(hi, 0)
    out = np.full(shape, fill, x.dtype)
    dst = [slice(None)] * x.ndim
    crop = [slice(None)] * x.ndim
    for k in range(ns):
        lo, hi = padding[k]
        start = max(lo, 0)
        dst[fs + k] = slice(start, start + dilate_dim(x.shape[fs + k], dilation[k]), dilation[k])
        crop[fs + k] = slice(-min(lo, 0), shape[fs + k] + min(hi, 0))
    out[tuple(dst)] = x
    return out[tuple(crop)]


def window_view(x, first_spatial, window, strides, window_dilation):
    """NumPy: windows over the ``len(window)`` spatial dims of ``x`` from ``first_spatial``
    on: shape ``x.shape[:first_spatial] + out + x.shape[first_spatial + ns:] + window`` (a
    strided view, no copy)."""
    ns, fs = len(window), first_spatial
    full = [dilate_dim(w, d) for w, d in zip(window, window_dilation)]
    axes = tuple(range(fs, fs + ns))
    out = [stride_dim(x.shape[a], f, s) for a, f, s in zip(axes, full, strides)]
    if any(x.shape[a] < f for a, f in zip(axes, full)):  # no window fits: an empty result
        return np.zeros(x.shape[:fs] + tuple(out) + x.shape[fs + ns:] + tuple(window), x.dtype)
    v = np.lib.stride_tricks.sliding_window_view(x, full, axis=axes)
    sl = ([slice(None)] * fs + [slice(None, None, s) for s in strides]
          + [slice(None)] * (x.ndim - fs - ns) + [slice(None, None, d) for d in window_dilation])
    return v[tuple(sl)]


def channels_last(spec):
    """The permutation taking an array with dims ``(batch, feature, spatial...)`` at
    ``spec`` to (batch, spatial..., feature) order."""
    return (spec[0],) + tuple(spec[2:]) + (spec[1],)


def conv_numpy(lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
               dimension_numbers, feature_group_count, batch_group_count, out_dtype):
    """The convolution as an im2col matrix product through NumPy, channels last (rows are
    output positions, columns kernel positions times input features)."""
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    if lhs.dtype != out_dtype:
        lhs, rhs = lhs.astype(out_dtype), rhs.astype(out_dtype)
    x = lhs.transpose(channels_last(lhs_spec))  # N, S..., C
    w = rhs.transpose(channels_last(rhs_spec))  # O, K..., I
    n, c, o = x.shape[0], x.shape[-1], w.shape[0]
    ns = x.ndim - 2
    ksp = w.shape[1:-1]
    x = dilate_and_pad(x, 1, lhs_dilation, padding, 0)
    cols = window_view(x, 1, ksp, window_strides, rhs_dilation)  # N, out..., C, K...
    out_sp = cols.shape[1:1 + ns]
    cols = np.moveaxis(cols, 1 + ns, -1)  # N, out..., K..., C
    b, g = batch_group_count, feature_group_count
    nb, cg, od = n // b, c // g, o // (b * g)
    p, kk = math.prod(out_sp), math.prod(ksp)
    cols = cols.reshape(b, nb, p, kk, g, cg).transpose(0, 4, 1, 2, 3, 5)
    cols = cols.reshape(b, g, nb * p, kk * cg)
    wm = w.reshape(b, g, od, kk * cg).transpose(0, 1, 3, 2)
    if out_dtype == np.bool_:
        res = np.matmul(cols.astype(np.int64), wm.astype(np.int64)) != 0
    else:
        res = np.matmul(cols, wm)  # B, G, Nb*P, Od
    res = res.reshape(b, g, nb, p, od).transpose(2, 3, 0, 1, 4).reshape((nb,) + out_sp + (o,))
    return np.ascontiguousarray(res.transpose(np.argsort(channels_last(out_spec))))


def _conv_impl(lhs, rhs, *, precision, preferred_element_type, **params):
    out_dtype = lhs.dtype if preferred_element_type is None else np.dtype(preferred_element_type)
    with np.errstate(all="ignore"):
        return [conv_numpy(lhs, rhs, out_dtype=out_dtype, **params)]


conv_general_dilated_p = Primitive("conv_general_dilated", impl=_conv_impl,
                                   abstract_eval=_conv_abstract_eval)


# ==== differentiation rules =======================================================================
from ..core.trace import get_aval  # noqa: E402
from ..transforms.autodiff.rules import (Zero, add_tangents, is_undefined, is_zero,  # noqa: E402
                                         jvp_rules, transpose_rules)
from .elementwise import convert_element_type_p  # noqa: E402
from .structural import reshape_p, rev_p, transpose_p  # noqa: E402


def bind_conv(lhs, rhs, **params):
    return conv_general_dilated_p.bind1(lhs, rhs, **params)


def _conv_jvp(primals, tangents, **params):
    lhs, rhs = primals
    t_l, t_r = tangents
    out = bind_conv(lhs, rhs, **params)
    t = Zero(get_aval(out))
    if not is_zero(t_l):
        t = add_tangents(t, bind_conv(t_l, rhs, **params))
    if not is_zero(t_r):
        t = add_tangents(t, bind_conv(lhs, t_r, **params))
    return [out], [t]


def _moveaxis(x, src, dst):
    perm = [d for d in range(get_aval(x).ndim) if d != src]
    perm.insert(dst, src)
    return x if perm == sorted(perm) else transpose_p.bind1(x, permutation=tuple(perm))


def reshape_axis_into(src, dst, x):
    """Merge axis ``src`` into axis ``dst`` (``dst`` numbered without ``src``), ``src`` major."""
    shape = list(get_aval(x).shape)
    size = shape.pop(src)
    x = _moveaxis(x, src, dst)
    shape[dst] *= size
    return reshape_p.bind1(x, new_sizes=tuple(shape))


def reshape_axis_out_of(src, size1, x):
    """Split axis ``src`` into ``(size1, rest)``."""
    shape = list(get_aval(x).shape)
    shape[src:src + 1] = [size1, shape[src] // size1]
    return reshape_p.bind1(x, new_sizes=tuple(shape))


def _convert(x, dtype):
    if get_aval(x).dtype == dtype:
        return x
    return convert_element_type_p.bind1(x, new_dtype=np.dtype(dtype), weak_type=False)


def _spec_transpose(spec):
    return (spec[1], spec[0]) + tuple(spec[2:])


def _vjp_lhs_padding(in_shape, window, strides, out_shape, padding, lhs_dilation,
                     rhs_dilation):
    pads = []
    for i, k, s, o, (lo, _), ld, rd in zip(in_shape, window, strides, out_shape, padding,
                                           lhs_dilation, rhs_dilation):
        before = dilate_dim(k, rd) - lo - 1
        after = dilate_dim(i, ld) + dilate_dim(k, rd) - 1 - dilate_dim(o, s) - before
        pads.append((before, after))
    return tuple(pads)


def _vjp_rhs_padding(in_shape, window, strides, out_shape, padding, lhs_dilation,
                     rhs_dilation):
    pads = []
    for i, k, s, o, (lo, _), ld, rd in zip(in_shape, window, strides, out_shape, padding,
                                           lhs_dilation, rhs_dilation):
        hi = dilate_dim(o, s) - dilate_dim(i, ld) + dilate_dim(k, rd) - lo - 1
        pads.append((lo, hi))
    return tuple(pads)


def _transpose_lhs(ct, lhs_aval, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
                   dimension_numbers, feature_group_count, batch_group_count, precision,
                   preferred_element_type):
    """Cotangent of lhs: the convolution of ct with the spatially reversed kernel, feature
    dims swapped, strides becoming lhs dilation."""
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    rhs_shape = get_aval(rhs).shape
    if feature_group_count > 1 or batch_group_count > 1:
        groups = max(feature_group_count, batch_group_count)
        rhs = reshape_axis_out_of(rhs_spec[0], groups, rhs)
        rhs = reshape_axis_into(rhs_spec[0], rhs_spec[1], rhs)
    pads = _vjp_lhs_padding([lhs_aval.shape[d] for d in lhs_spec[2:]],
                            [rhs_shape[d] for d in rhs_spec[2:]], window_strides,
                            [get_aval(ct).shape[d] for d in out_spec[2:]], padding,
                            lhs_dilation, rhs_dilation)
    rhs = rev_p.bind1(rhs, dimensions=tuple(rhs_spec[2:]))
    rhs = _convert(rhs, get_aval(ct).dtype)
    out = bind_conv(ct, rhs, window_strides=tuple(lhs_dilation), padding=pads,
                    lhs_dilation=tuple(window_strides), rhs_dilation=tuple(rhs_dilation),
                    dimension_numbers=(tuple(out_spec), _spec_transpose(rhs_spec),
                                       tuple(lhs_spec)),
                    feature_group_count=max(feature_group_count, batch_group_count),
                    batch_group_count=1, precision=precision,
                    preferred_element_type=get_aval(ct).dtype)
    if batch_group_count > 1:
        out = reshape_axis_out_of(lhs_spec[1], batch_group_count, out)
        out = reshape_axis_into(lhs_spec[1], lhs_spec[0], out)
    return _convert(out, lhs_aval.dtype)


def _transpose_rhs(ct, lhs, rhs_aval, *, window_strides, padding, lhs_dilation, rhs_dilation,
                   dimension_numbers, feature_group_count, batch_group_count, precision,
                   preferred_element_type):
    """Cotangent of the kernel: a convolution of lhs with ct, batch and feature dims swapped
    (feature groups become batch groups and back)."""
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    pads = _vjp_rhs_padding([get_aval(lhs).shape[d] for d in lhs_spec[2:]],
                            [rhs_aval.shape[d] for d in rhs_spec[2:]], window_strides,
                            [get_aval(ct).shape[d] for d in out_spec[2:]], padding,
                            lhs_dilation, rhs_dilation)
    lhs = _convert(lhs, get_aval(ct).dtype)
    out = bind_conv(lhs, ct, window_strides=tuple(rhs_dilation), padding=pads,
                    lhs_dilation=tuple(lhs_dilation), rhs_dilation=tuple(window_strides),
                    dimension_numbers=(_spec_transpose(lhs_spec), _spec_transpose(out_spec),
                                       _spec_transpose(rhs_spec)),
                    feature_group_count=batch_group_count,
                    batch_group_count=feature_group_count, precision=precision,
                    preferred_element_type=get_aval(ct).dtype)
    return _convert(out, rhs_aval.dtype)


def _conv_transpose(cts, lhs, rhs, **params):
    ct = cts[0]
    if is_undefined(lhs) and is_undefined(rhs):
        raise TypeError("conv_general_dilated is not linear in both operands at once")
    if is_undefined(lhs):
        if is_zero(ct):
            return [Zero(lhs.aval), None]
        return [_transpose_lhs(ct, lhs.aval, rhs, **params), None]
    if is_zero(ct):
        return [None, Zero(rhs.aval)]
    return [None, _transpose_rhs(ct, lhs, rhs.aval, **params)]


jvp_rules[conv_general_dilated_p] = _conv_jvp
transpose_rules[conv_general_dilated_p] = _conv_transpose


# ==== batching rules ==============================================================================
from ..transforms.batching import batching_rules  # noqa: E402


def _conv_batch(axis, vals, dims, **params):
    """Fold the vmapped dim into the batch dim (lhs) or the output features (rhs); both
    batched: into lhs features and kernel output features as extra groups."""
    (lhs, rhs), (dl, dr) = vals, dims
    lhs_spec, rhs_spec, out_spec = params["dimension_numbers"]
    fg, bg = params["feature_group_count"], params["batch_group_count"]
    p = dict(params)
    if dl is not None and dr is not None:
        size = get_aval(lhs).shape[dl]
        if bg > 1:
            lhs = reshape_axis_into(dl, lhs_spec[0], lhs)
            p["batch_group_count"] = bg * size
        else:
            lhs = reshape_axis_into(dl, lhs_spec[1], lhs)
            p["feature_group_count"] = fg * size
        rhs = reshape_axis_into(dr, rhs_spec[0], rhs)
        out = bind_conv(lhs, rhs, **p)
        return [reshape_axis_out_of(out_spec[1], size, out)], [out_spec[1]]
    if dl is not None:
        size = get_aval(lhs).shape[dl]
        if bg == 1:
            lhs = reshape_axis_into(dl, lhs_spec[0], lhs)
        else:  # keep each batch group contiguous: the vmapped dim goes inside the groups
            lhs = reshape_axis_out_of(lhs_spec[0] + int(dl <= lhs_spec[0]), bg, lhs)
            lhs = reshape_axis_into(dl + int(lhs_spec[0] < dl), lhs_spec[0] + 1, lhs)
            lhs = reshape_axis_into(lhs_spec[0], lhs_spec[0], lhs)
        out = bind_conv(lhs, rhs, **p)
        return [reshape_axis_out_of(out_spec[0], size, out)], [out_spec[0]]
    size = get_aval(rhs).shape[dr]
    if fg == 1 and bg == 1:
        rhs = reshape_axis_into(dr, rhs_spec[0], rhs)
        out = bind_conv(lhs, rhs, **p)
        return [reshape_axis_out_of(out_spec[1], size, out)], [out_spec[1]]
    groups = max(fg, bg)
    rhs = reshape_axis_out_of(rhs_spec[0] + int(dr <= rhs_spec[0]), groups, rhs)
    rhs = reshape_axis_into(dr + int(rhs_spec[0] < dr), rhs_spec[0] + 1, rhs)
    rhs = reshape_axis_into(rhs_spec[0], rhs_spec[0], rhs)
    out = bind_conv(lhs, rhs, **p)
    out = reshape_axis_out_of(out_spec[1], groups, out)
    out = reshape_axis_out_of(out_spec[1] + 1, size, out)
    out = reshape_axis_into(out_spec[1], out_spec[1] + 1, out)
    return [out], [out_spec[1]]


batching_rules[conv_general_dilated_p] = _conv_batch
