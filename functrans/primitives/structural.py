"""Shape primitives: broadcast_in_dim, reshape, transpose, squeeze, concatenate, pad, slice,
rev, dynamic_slice, dynamic_update_slice and iota. Their NumPy impls return views where
NumPy can (the buffers are read-only, so views are safe)::

    >>> transpose_p.bind1(np.ones((2, 3)), permutation=(1, 0)).shape
    (3, 2)
"""
from __future__ import annotations

import math

import numpy as np

from ..core import dtypes
from ..core.avals import ShapedArray
from ..core.shape_poly import is_symbolic_dim, max_dim
from ..core.trace import Primitive


def _ints(name, what, xs):
    if not all(isinstance(x, (int, np.integer)) for x in xs):
        raise TypeError(f"{name}: {what} must be integers, got {xs!r}")


def _dims(name, what, xs):
    """Sizes: integers or symbolic dimensions (shape polymorphism)."""
    if not all(isinstance(x, (int, np.integer)) or is_symbolic_dim(x) for x in xs):
        raise TypeError(f"{name}: {what} must be integers, got {xs!r}")


def _check_axes(name, axes, ndim, what="axes"):
    _ints(name, what, axes)
    for a in axes:
        if not 0 <= a < ndim:
            raise ValueError(f"{name}: axis {a} in {what}={tuple(axes)} is out of range for an "
                             f"array of rank {ndim}")
    if len(set(axes)) != len(axes):
        raise ValueError(f"{name}: repeated axis in {what}={tuple(axes)}")


# ---- broadcast_in_dim -----------------------------------------------------------------------------
def _broadcast_in_dim_abstract_eval(x, *, shape, broadcast_dimensions):
    name = "broadcast_in_dim"
    _dims(name, "shape", shape)
    if any(d < 0 for d in shape):
        raise ValueError(f"{name}: negative dimension in shape {shape}")
    if len(broadcast_dimensions) != x.ndim:
        raise TypeError(f"{name}: broadcast_dimensions {broadcast_dimensions} must have one entry "
                        f"per operand dimension of {x.str_short()}")
    _check_axes(name, broadcast_dimensions, len(shape), "broadcast_dimensions")
    if list(broadcast_dimensions) != sorted(broadcast_dimensions):
        raise ValueError(f"{name}: broadcast_dimensions {broadcast_dimensions} must be increasing")
    for i, d in enumerate(broadcast_dimensions):
        if x.shape[i] not in (1, shape[d]):
            raise TypeError(f"{name}: operand {x.str_short()} dimension {i} (size {x.shape[i]}) "
                            f"cannot broadcast to dimension {d} of shape {tuple(shape)}")
    return [ShapedArray(shape, x.dtype, x.weak_type)]


def _broadcast_in_dim_impl(x, *, shape, broadcast_dimensions):
    expanded = [1] * len(shape)
    for i, d in enumerate(broadcast_dimensions):
        expanded[d] = x.shape[i]
    return [np.broadcast_to(x.reshape(expanded), shape)]


broadcast_in_dim_p = Primitive(
    "broadcast_in_dim", impl=_broadcast_in_dim_impl,
    abstract_eval=_broadcast_in_dim_abstract_eval,
    # As in JAX, the target shape shows in the output type; empty dimensions are noise.
    print_params=lambda p: {k: v for k, v in p.items()
                            if k != "shape" and not (k == "broadcast_dimensions" and v == ())})


# ---- reshape --------------------------------------------------------------------------------------
def _reshape_abstract_eval(x, *, new_sizes):
    _dims("reshape", "new_sizes", new_sizes)
    if any(d < 0 for d in new_sizes) or math.prod(new_sizes) != x.size:
        raise TypeError(f"reshape: cannot reshape {x.str_short()} ({x.size} elements) to shape "
                        f"{tuple(new_sizes)}")
    return [ShapedArray(new_sizes, x.dtype, x.weak_type)]


reshape_p = Primitive("reshape", impl=lambda x, *, new_sizes: [x.reshape(new_sizes)],
                      abstract_eval=_reshape_abstract_eval)


# ---- transpose -------------------------------------------------------------------------------------
def _transpose_abstract_eval(x, *, permutation):
    if sorted(permutation) != list(range(x.ndim)):
        raise ValueError(f"transpose: permutation {tuple(permutation)} is not a permutation of "
                         f"the axes of {x.str_short()}")
    return [ShapedArray(tuple(x.shape[p] for p in permutation), x.dtype, x.weak_type)]


transpose_p = Primitive("transpose", impl=lambda x, *, permutation: [x.transpose(permutation)],
                        abstract_eval=_transpose_abstract_eval)


# ---- squeeze -------------------------------------------------------------------------------------
def _squeeze_abstract_eval(x, *, dimensions):
    _check_axes("squeeze", dimensions, x.ndim, "dimensions")
    for d in dimensions:
        if x.shape[d] != 1:
            raise ValueError(f"squeeze: dimension {d} of {x.str_short()} has size {x.shape[d]}, "
                             "not 1")
    shape = tuple(s for i, s in enumerate(x.shape) if i not in dimensions)
    return [ShapedArray(shape, x.dtype, x.weak_type)]


def _squeeze_impl(x, *, dimensions):
    return [x.reshape([s for i, s in enumerate(x.shape) if i not in dimensions])]


squeeze_p = Primitive("squeeze", impl=_squeeze_impl, abstract_eval=_squeeze_abstract_eval)


# ---- concatenate -----------------------------------------------------------------------------------
def _concatenate_abstract_eval(*xs, dimension):
    if not xs:
        raise TypeError("concatenate requires at least one operand")
    x0 = xs[0]
    _check_axes("concatenate", (dimension,), x0.ndim, "dimension")
    for x in xs[1:]:
        if x.dtype != x0.dtype:
            raise TypeError("concatenate requires operands of one dtype, got "
                            + ", ".join(a.str_short() for a in xs))
        if x.ndim != x0.ndim or any(a != b for i, (a, b) in enumerate(zip(x.shape, x0.shape))
                                    if i != dimension):
            raise TypeError(f"concatenate along dimension {dimension} requires equal shapes "
                            "elsewhere, got " + ", ".join(a.str_short() for a in xs))
    shape = list(x0.shape)
    shape[dimension] = sum(x.shape[dimension] for x in xs)
    return [ShapedArray(shape, x0.dtype, all(x.weak_type for x in xs))]


concatenate_p = Primitive(
    "concatenate", impl=lambda *xs, dimension: [np.concatenate(xs, axis=dimension)],
    abstract_eval=_concatenate_abstract_eval)


# ---- pad -------------------------------------------------------------------------------------------
def _pad_abstract_eval(x, padding_value, *, padding_config):
    if padding_value.shape or padding_value.dtype != x.dtype:
        raise TypeError(f"pad: padding value must be a scalar of the operand's dtype "
                        f"({x.dtype}), got {padding_value.str_short()}")
    if len(padding_config) != x.ndim:
        raise TypeError(f"pad: padding_config needs one (low, high, interior) per dimension of "
                        f"{x.str_short()}, got {padding_config}")
    shape = []
    for d, (lo, hi, interior) in zip(x.shape, padding_config):
        if interior < 0:
            raise ValueError(f"pad: interior padding must be >= 0, got {padding_config}")
        size = lo + hi + d + (max_dim(d - 1, 0) * interior if interior else 0)
        if size < 0:
            raise ValueError(f"pad: padding_config {padding_config} gives a negative size")
        shape.append(size)
    return [ShapedArray(shape, x.dtype, x.weak_type)]


def _pad_impl(x, padding_value, *, padding_config):
    # Interior padding first, then edge padding; negative edges crop.
    dilated_shape = [d + max(d - 1, 0) * i for d, (_, _, i) in zip(x.shape, padding_config)]
    dilated = np.full(dilated_shape, padding_value, dtype=x.dtype)
    dilated[tuple(slice(None, None, i + 1) for (_, _, i) in padding_config)] = x
    pads = [(max(lo, 0), max(hi, 0)) for lo, hi, _ in padding_config]
    out = np.pad(dilated, pads, constant_values=padding_value)
    crop = tuple(slice(-min(lo, 0), out.shape[k] + min(hi, 0))
                 for k, (lo, hi, _) in enumerate(padding_config))
    return [out[crop]]


pad_p = Primitive("pad", impl=_pad_impl, abstract_eval=_pad_abstract_eval)


# ---- slice -----------------------------------------------------------------------------------------
def _slice_abstract_eval(x, *, start_indices, limit_indices, strides):
    strides = strides or (1,) * x.ndim
    if not (len(start_indices) == len(limit_indices) == len(strides) == x.ndim):
        raise TypeError(f"slice: start/limit/strides need one entry per dimension of "
                        f"{x.str_short()}")
    shape = []
    for d, lo, hi, st in zip(x.shape, start_indices, limit_indices, strides):
        if not (0 <= lo <= hi <= d) or st < 1:
            raise ValueError(f"slice: invalid start {start_indices} / limit {limit_indices} / "
                             f"strides {strides} for {x.str_short()}")
        shape.append((hi - lo + st - 1) // st)
    return [ShapedArray(shape, x.dtype, x.weak_type)]


def _slice_impl(x, *, start_indices, limit_indices, strides):
    strides = strides or (1,) * x.ndim
    return [x[tuple(slice(a, b, c) for a, b, c in zip(start_indices, limit_indices, strides))]]


slice_p = Primitive("slice", impl=_slice_impl, abstract_eval=_slice_abstract_eval)


# ---- rev -------------------------------------------------------------------------------------------
def _rev_abstract_eval(x, *, dimensions):
    _check_axes("rev", dimensions, x.ndim, "dimensions")
    return [x]


rev_p = Primitive("rev", impl=lambda x, *, dimensions: [np.flip(x, dimensions)],
                  abstract_eval=_rev_abstract_eval)


# ---- dynamic_slice / dynamic_update_slice -------------------------------------------------------------
def _check_starts(name, x, starts):
    if len(starts) != x.ndim:
        raise TypeError(f"{name}: needs one start index per dimension of {x.str_short()}, got "
                        f"{len(starts)}")
    for s in starts:
        if s.shape or dtypes.kind(s.dtype) not in "iu":
            raise TypeError(f"{name}: start indices must be integer scalars, got {s.str_short()}")


def _dynamic_slice_abstract_eval(x, *starts, slice_sizes):
    _check_starts("dynamic_slice", x, starts)
    if len(slice_sizes) != x.ndim or any(not 0 <= s <= d for s, d in zip(slice_sizes, x.shape)):
        raise TypeError(f"dynamic_slice: slice_sizes {tuple(slice_sizes)} do not fit in "
                        f"{x.str_short()}")
    return [ShapedArray(slice_sizes, x.dtype, x.weak_type)]


def clamp_starts(starts, shape, sizes):
    """XLA semantics: start indices are clamped so the slice lies inside the array."""
    return [int(min(max(int(s), 0), d - k)) for s, d, k in zip(starts, shape, sizes)]


def _dynamic_slice_impl(x, *starts, slice_sizes):
    st = clamp_starts(starts, x.shape, slice_sizes)
    return [x[tuple(slice(s, s + k) for s, k in zip(st, slice_sizes))]]


dynamic_slice_p = Primitive("dynamic_slice", impl=_dynamic_slice_impl,
                            abstract_eval=_dynamic_slice_abstract_eval)


def _dynamic_update_slice_abstract_eval(x, update, *starts):
    _check_starts("dynamic_update_slice", x, starts)
    if update.dtype != x.dtype or update.ndim != x.ndim or any(
            u > d for u, d in zip(update.shape, x.shape)):
        raise TypeError(f"dynamic_update_slice: update {update.str_short()} must have the "
                        f"operand's dtype and rank and fit inside {x.str_short()}")
    return [ShapedArray(x.shape, x.dtype, x.weak_type)]


def _dynamic_update_slice_impl(x, update, *starts):
    st = clamp_starts(starts, x.shape, update.shape)
    out = np.array(x)
    out[tuple(slice(s, s + k) for s, k in zip(st, update.shape))] = update
    return [out]


dynamic_update_slice_p = Primitive("dynamic_update_slice", impl=_dynamic_update_slice_impl,
                                   abstract_eval=_dynamic_update_slice_abstract_eval)


# ---- iota ------------------------------------------------------------------------------------------
def _iota_abstract_eval(*, dtype, shape, dimension):
    dtypes.canonicalize_dtype(dtype, what="iota")
    if dtype == dtypes.bool_:
        raise TypeError("iota does not accept dtype bool")
    _check_axes("iota", (dimension,), len(shape), "dimension")
    return [ShapedArray(shape, dtype)]


def _iota_impl(*, dtype, shape, dimension):
    r = np.arange(shape[dimension], dtype=dtype)
    expanded = [1] * len(shape)
    expanded[dimension] = shape[dimension]
    return [np.broadcast_to(r.reshape(expanded), shape)]


iota_p = Primitive("iota", impl=_iota_impl, abstract_eval=_iota_abstract_eval)


# ==== differentiation rules =======================================================================
from ..core.trace import get_aval  # noqa: E402
from ..transforms.autodiff.rules import (Zero, deflinear, deflinear_in, instantiate,  # noqa: E402
                                         is_undefined, is_zero)


def _zero_or(ct, aval, fn):
    return Zero(aval) if is_zero(ct) else fn(ct)


def _reduce_sum(x, axes):
    from .reductions import reduce_sum_p
    return reduce_sum_p.bind1(x, axes=tuple(axes)) if axes else x


def _broadcast_in_dim_transpose(cts, x, *, shape, broadcast_dimensions):
    def fn(ct):
        # Sum over the new dims and over the operand's size-1 dims that were stretched.
        new = [d for d in range(len(shape)) if d not in broadcast_dimensions]
        stretched = [broadcast_dimensions[i] for i, s in enumerate(x.aval.shape)
                     if s == 1 and shape[broadcast_dimensions[i]] != 1]
        summed = _reduce_sum(ct, sorted(new + stretched))
        return reshape_p.bind1(summed, new_sizes=x.aval.shape) \
            if get_aval(summed).shape != x.aval.shape else summed
    return [_zero_or(cts[0], x.aval, fn)]


deflinear(broadcast_in_dim_p, _broadcast_in_dim_transpose)
deflinear(reshape_p, lambda cts, x, *, new_sizes: [_zero_or(
    cts[0], x.aval, lambda ct: reshape_p.bind1(ct, new_sizes=x.aval.shape))])
deflinear(transpose_p, lambda cts, x, *, permutation: [_zero_or(
    cts[0], x.aval, lambda ct: transpose_p.bind1(
        ct, permutation=tuple(int(i) for i in np.argsort(permutation))))])
deflinear(squeeze_p, lambda cts, x, *, dimensions: [_zero_or(
    cts[0], x.aval, lambda ct: reshape_p.bind1(ct, new_sizes=x.aval.shape))])
deflinear(rev_p, lambda cts, x, *, dimensions: [_zero_or(
    cts[0], x.aval, lambda ct: rev_p.bind1(ct, dimensions=dimensions))])


def _concatenate_transpose(cts, *xs, dimension):
    ct = cts[0]
    out, start = [], 0
    for x in xs:
        aval = x.aval if is_undefined(x) else get_aval(x)
        size = aval.shape[dimension]
        if is_undefined(x):
            if is_zero(ct):
                out.append(Zero(aval))
            else:
                lo = [0] * aval.ndim
                hi = list(get_aval(ct).shape)
                lo[dimension], hi[dimension] = start, start + size
                out.append(slice_p.bind1(ct, start_indices=tuple(lo), limit_indices=tuple(hi),
                                         strides=None))
        else:
            out.append(None)
        start += size
    return out


deflinear(concatenate_p, _concatenate_transpose)


def _pad_transpose(cts, x, padding_value, *, padding_config):
    ct = cts[0]
    if is_zero(ct):
        return [Zero(x.aval) if is_undefined(x) else None,
                Zero(padding_value.aval) if is_undefined(padding_value) else None]
    # Undo edge padding (negative edges re-pad with zeros), then take every (interior+1)-th.
    unpad = tuple((-lo, -hi, 0) for lo, hi, _ in padding_config)
    zero = np.zeros((), get_aval(ct).dtype)[()]
    t = pad_p.bind1(ct, zero, padding_config=unpad)
    shape = get_aval(t).shape
    t_x = slice_p.bind1(t, start_indices=(0,) * len(shape), limit_indices=shape,
                        strides=tuple(i + 1 for _, _, i in padding_config))
    out = [t_x if is_undefined(x) else None]
    if is_undefined(padding_value):
        total = _reduce_sum(ct, range(len(get_aval(ct).shape)))
        inner = _reduce_sum(t_x, range(len(shape)))
        from .elementwise import sub_p
        out.append(sub_p.bind1(total, inner))
    else:
        out.append(None)
    return out


deflinear(pad_p, _pad_transpose)


def _slice_transpose(cts, x, *, start_indices, limit_indices, strides):
    def fn(ct):
        strides_ = strides or (1,) * x.aval.ndim
        out_shape = get_aval(ct).shape
        real_limits = [s + (n - 1) * st + 1 if n else s
                       for s, n, st in zip(start_indices, out_shape, strides_)]
        config = tuple((s, d - r, st - 1) if n else (s, d - s, 0)
                       for s, r, d, st, n in zip(start_indices, real_limits, x.aval.shape,
                                                 strides_, out_shape))
        zero = np.zeros((), x.aval.dtype)[()]
        if any(n == 0 for n in out_shape):
            return broadcast_in_dim_p.bind1(zero, shape=x.aval.shape, broadcast_dimensions=())
        return pad_p.bind1(ct, zero, padding_config=config)
    return [_zero_or(cts[0], x.aval, fn)]


deflinear(slice_p, _slice_transpose)


def _dynamic_slice_transpose(cts, x, *starts, slice_sizes):
    ct = cts[0]
    if is_zero(ct):
        return [Zero(x.aval)] + [None] * len(starts)
    zeros = instantiate(Zero(x.aval))
    return [dynamic_update_slice_p.bind1(zeros, ct, *starts)] + [None] * len(starts)


def _dynamic_update_slice_transpose(cts, x, update, *starts):
    ct = cts[0]
    upd_aval = update.aval if is_undefined(update) else get_aval(update)
    if is_zero(ct):
        return [Zero(x.aval) if is_undefined(x) else None,
                Zero(upd_aval) if is_undefined(update) else None] + [None] * len(starts)
    ct_x = dynamic_update_slice_p.bind1(ct, instantiate(Zero(upd_aval)), *starts) \
        if is_undefined(x) else None
    ct_u = dynamic_slice_p.bind1(ct, *starts, slice_sizes=upd_aval.shape) \
        if is_undefined(update) else None
    return [ct_x, ct_u] + [None] * len(starts)


deflinear_in(dynamic_slice_p, (0,), _dynamic_slice_transpose)
deflinear_in(dynamic_update_slice_p, (0, 1), _dynamic_update_slice_transpose)


# ==== batching rules ==============================================================================
from ..transforms.batching import batching_rules, bdim_at_front, moveaxis  # noqa: E402


def _front(x, d):
    return moveaxis(x, d, 0)


def _broadcast_in_dim_batch(axis, vals, dims, *, shape, broadcast_dimensions):
    (x,), (d,) = vals, dims
    return [broadcast_in_dim_p.bind1(_front(x, d), shape=(axis.size,) + tuple(shape),
                                     broadcast_dimensions=(0,) + tuple(
                                         b + 1 for b in broadcast_dimensions))], [0]


def _reshape_batch(axis, vals, dims, *, new_sizes):
    (x,), (d,) = vals, dims
    return [reshape_p.bind1(_front(x, d), new_sizes=(axis.size,) + tuple(new_sizes))], [0]


def _transpose_batch(axis, vals, dims, *, permutation):
    (x,), (d,) = vals, dims
    perm = (0,) + tuple(p + 1 for p in permutation)
    return [transpose_p.bind1(_front(x, d), permutation=perm)], [0]


def _squeeze_batch(axis, vals, dims, *, dimensions):
    (x,), (d,) = vals, dims
    return [squeeze_p.bind1(_front(x, d), dimensions=tuple(k + 1 for k in dimensions))], [0]


def _rev_batch(axis, vals, dims, *, dimensions):
    (x,), (d,) = vals, dims
    return [rev_p.bind1(_front(x, d), dimensions=tuple(k + 1 for k in dimensions))], [0]


def _concatenate_batch(axis, vals, dims, *, dimension):
    xs = [bdim_at_front(x, d, axis.size) for x, d in zip(vals, dims)]
    return [concatenate_p.bind1(*xs, dimension=dimension + 1)], [0]


def _slice_batch(axis, vals, dims, *, start_indices, limit_indices, strides):
    (x,), (d,) = vals, dims
    strides = None if strides is None else (1,) + tuple(strides)
    return [slice_p.bind1(_front(x, d), start_indices=(0,) + tuple(start_indices),
                          limit_indices=(axis.size,) + tuple(limit_indices),
                          strides=strides)], [0]


def _pad_batch(axis, vals, dims, *, padding_config):
    (x, pv), (dx, dpv) = vals, dims
    config = ((0, 0, 0),) + tuple(padding_config)
    x = bdim_at_front(x, dx, axis.size)
    if dpv is None:
        return [pad_p.bind1(x, pv, padding_config=config)], [0]
    # A batched padding value: pad with zeros, then select the value where padding went.
    from .elementwise import select_n_p
    dtype = get_aval(x).dtype
    zero = np.zeros((), dtype)[()]
    padded = pad_p.bind1(x, zero, padding_config=config)
    ones = broadcast_in_dim_p.bind1(np.ones((), np.bool_)[()], shape=get_aval(x).shape,
                                    broadcast_dimensions=())
    mask = pad_p.bind1(ones, np.zeros((), np.bool_)[()], padding_config=config)
    out_shape = get_aval(padded).shape
    pvb = broadcast_in_dim_p.bind1(moveaxis(pv, dpv, 0), shape=out_shape, broadcast_dimensions=(0,))
    return [select_n_p.bind1(mask, pvb, padded)], [0]


def _window_indices(axis, starts, start_dims, operand_shape, sizes):
    """Per-dim index arrays of shape (B, *sizes) for windows at (possibly batched) starts,
    clamped like dynamic_slice."""
    from .elementwise import add_p, max_p, min_p
    out_shape = (axis.size,) + tuple(sizes)
    idx = []
    for k, (s, ds, n, size) in enumerate(zip(starts, start_dims, operand_shape, sizes)):
        dt = get_aval(s).dtype
        s = max_p.bind1(min_p.bind1(s, np.asarray(n - size, dt)[()]), np.zeros((), dt)[()])
        s = broadcast_in_dim_p.bind1(s, shape=out_shape,
                                     broadcast_dimensions=() if ds is None else (0,))
        offs = iota_p.bind1(dtype=dt, shape=out_shape, dimension=k + 1)
        idx.append(add_p.bind1(s, offs))
    return idx


def _batch_iota(axis, rank):
    return iota_p.bind1(dtype=np.dtype(np.int64), shape=(axis.size,) + (1,) * rank, dimension=0)


def _dynamic_slice_batch(axis, vals, dims, *, slice_sizes):
    x, *starts = vals
    dx, *dstarts = dims
    if all(d is None for d in dstarts):
        zero = np.zeros((), get_aval(starts[0]).dtype if starts else np.int64)[()]
        return [dynamic_slice_p.bind1(_front(x, dx), zero, *starts,
                                      slice_sizes=(axis.size,) + tuple(slice_sizes))], [0]
    from .indexing import gather_p
    shape = get_aval(x).shape if dx is None else \
        get_aval(x).shape[:dx] + get_aval(x).shape[dx + 1:]
    idx = _window_indices(axis, starts, dstarts, shape, slice_sizes)
    if dx is None:
        return [gather_p.bind1(x, *idx, axes=tuple(range(len(shape))), mode="clip",
                               fill_value=None)], [0]
    x = _front(x, dx)
    bidx = _batch_iota(axis, len(shape))
    return [gather_p.bind1(x, bidx, *idx, axes=tuple(range(len(shape) + 1)), mode="clip",
                           fill_value=None)], [0]


def _dynamic_update_slice_batch(axis, vals, dims):
    x, upd, *starts = vals
    dx, du, *dstarts = dims
    xb = bdim_at_front(x, dx, axis.size)
    ub = bdim_at_front(upd, du, axis.size)
    if all(d is None for d in dstarts):
        zero = np.zeros((), get_aval(starts[0]).dtype if starts else np.int64)[()]
        return [dynamic_update_slice_p.bind1(xb, ub, zero, *starts)], [0]
    from .indexing import scatter_p
    shape = get_aval(xb).shape[1:]
    sizes = get_aval(ub).shape[1:]
    idx = _window_indices(axis, starts, dstarts, shape, sizes)
    bidx = _batch_iota(axis, len(shape))
    return [scatter_p.bind1(xb, ub, bidx, *idx, axes=tuple(range(len(shape) + 1)),
                            mode="clip")], [0]


batching_rules.update({
    broadcast_in_dim_p: _broadcast_in_dim_batch, reshape_p: _reshape_batch,
    transpose_p: _transpose_batch, squeeze_p: _squeeze_batch, rev_p: _rev_batch,
    concatenate_p: _concatenate_batch, slice_p: _slice_batch, pad_p: _pad_batch,
    dynamic_slice_p: _dynamic_slice_batch,
    dynamic_update_slice_p: _dynamic_update_slice_batch,
})
