"""Shape manipulation with NumPy's names: reshape, transpose, moveaxis, squeeze, broadcasting,
tile, repeat, flip, roll, pad, where, clip, diff, ... (joining and splitting live in
``joining``).

    >>> moveaxis(fnp.ones((2, 3, 4)), 0, -1).shape
    (3, 4, 2)
"""
from __future__ import annotations

import builtins
import math
import operator
import warnings

import numpy as np

from .. import lax
from .. import primitives as P
from ..core import dtypes
from ..core.shape_poly import DimExpr, as_dim
from ..core.trace import concrete_of, get_aval
from ._core import (_arraylike, check_arraylike, asarray, broadcast_operands, broadcast_shapes as _bshapes,
                    broadcast_to_shape, convert, normalize_axes, normalize_axis, promote,
                    unsupported_out)

__all__ = ["reshape", "ravel", "transpose", "permute_dims", "matrix_transpose", "moveaxis",
           "swapaxes", "squeeze", "expand_dims", "broadcast_to", "broadcast_arrays",
           "broadcast_shapes", "tile", "repeat", "flip", "fliplr", "flipud", "roll", "rot90",
           "pad", "where", "select", "clip", "shape", "ndim", "size", "diff", "ediff1d", "astype",
           "copy", "resize", "rollaxis"]

_JOINING = ("concatenate", "concat", "stack", "unstack", "vstack", "hstack", "dstack",
            "column_stack", "row_stack", "split", "array_split", "hsplit", "vsplit", "dsplit",
            "append", "atleast_1d", "atleast_2d", "atleast_3d")


def __getattr__(name):
    # The joining functions moved to ``joining``; importing them lazily avoids a cycle.
    if name in _JOINING:
        from . import joining
        return getattr(joining, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _concatenate(*args, **kwargs):
    from .joining import concatenate
    return concatenate(*args, **kwargs)


def _warn_not_arraylike(name, a):
    # JAX still answers for lists, None and other non-arrays as NumPy does, with a warning
    # (TensorFlow Probability asks for the shape of optional arguments left as None).
    if not _arraylike(a):
        warnings.warn(f"{name} requires ndarray or scalar arguments, got {type(a)} at "
                      "position 0. In a future JAX release this will be an error.",
                      DeprecationWarning, stacklevel=3)


def shape(a):
    """Shape of ``a`` as a tuple: its ``shape`` attribute, else NumPy's answer (with JAX's
    DeprecationWarning for values that are not arrays or scalars, such as lists or None).

    >>> shape(fnp.ones((2, 3))), shape(2.0)
    ((2, 3), ())
    """
    if hasattr(a, "shape"):
        return a.shape
    _warn_not_arraylike("shape", a)
    return np.shape(a)


def ndim(a):
    """Rank of ``a``: its ``ndim`` attribute, else NumPy's answer (with JAX's
    DeprecationWarning for values that are not arrays or scalars).

    >>> ndim(fnp.ones((2, 3)))
    2
    """
    if hasattr(a, "ndim"):
        return a.ndim
    _warn_not_arraylike("ndim", a)
    return np.ndim(a)


def size(a, axis=None):
    """Number of elements (along ``axis`` if given).

    >>> size(fnp.ones((2, 3)), axis=1)
    3
    """
    s = shape(a)
    return math.prod(s) if axis is None else s[normalize_axis(axis, len(s))]


def _shape_arg(newshape, total):
    if isinstance(newshape, (int, np.integer, DimExpr)):
        newshape = (newshape,)
    newshape = [as_dim(d) for d in newshape]
    if newshape.count(-1) > 1:
        raise ValueError("can only specify one unknown dimension (-1)")
    if -1 in newshape:
        known = math.prod(d for d in newshape if d != -1)
        if known == 0 or total // known * known != total:
            raise ValueError(f"cannot reshape array of size {total} into shape "
                             f"{tuple(newshape)}")
        newshape[newshape.index(-1)] = total // known
    if math.prod(newshape) != total:
        raise ValueError(f"cannot reshape array of size {total} into shape {tuple(newshape)}")
    return tuple(newshape)


def reshape(a, shape=None, order="C", *, newshape=None, copy=None, out_sharding=None):
    """Reshape (row-major; ``-1`` infers one dimension); ``out_sharding`` as
    :func:`lax.reshape`'s.

    >>> reshape(fnp.arange(6), (2, -1)).shape
    (2, 3)
    """
    check_arraylike("reshape", a)
    if order != "C":
        raise NotImplementedError("fnp.reshape supports only order='C'")
    shape = newshape if shape is None else shape
    a = asarray(a)
    return lax.reshape(a, _shape_arg(shape, get_aval(a).size), out_sharding=out_sharding)


def ravel(a, order="C"):
    """Flatten to 1-D (row-major).

    >>> ravel(fnp.array([[1, 2], [3, 4]]))
    Array([1, 2, 3, 4], dtype=int64)
    """
    check_arraylike("ravel", a)
    a = asarray(a)
    return reshape(a, (get_aval(a).size,), order)


def transpose(a, axes=None):
    """Permute dimensions (reverse them by default).

    >>> transpose(fnp.ones((2, 3))).shape
    (3, 2)
    """
    check_arraylike("transpose", a)
    a = asarray(a)
    nd = get_aval(a).ndim
    if axes is None:
        axes = tuple(range(nd))[::-1]
    axes = tuple(normalize_axis(ax, nd) for ax in axes)
    if sorted(axes) != list(range(nd)):
        raise ValueError(f"axes {axes} don't match array of rank {nd}")
    return lax.transpose(a, axes)


def permute_dims(a, axes):
    """Permute dimensions to ``axes`` (Array-API name of :func:`transpose`).

    >>> permute_dims(fnp.ones((2, 3, 4)), (2, 0, 1)).shape
    (4, 2, 3)
    """
    check_arraylike("permute_dims", a)
    return transpose(a, axes)


def matrix_transpose(x):
    """Swap the last two axes.

    >>> matrix_transpose(fnp.ones((5, 2, 3))).shape
    (5, 3, 2)
    """
    check_arraylike("matrix_transpose", x)
    x = asarray(x)
    nd = get_aval(x).ndim
    if nd < 2:
        raise ValueError(f"matrix_transpose needs rank >= 2, got {nd}")
    return swapaxes(x, -1, -2)


def moveaxis(a, source, destination):
    """Move axes ``source`` to positions ``destination``.

    >>> moveaxis(fnp.ones((2, 3, 4)), 0, -1).shape
    (3, 4, 2)
    """
    check_arraylike("moveaxis", a)
    a = asarray(a)
    nd = get_aval(a).ndim
    src = [normalize_axis(s, nd, "source") for s in np.atleast_1d(source).tolist()]
    dst = [normalize_axis(d, nd, "destination") for d in np.atleast_1d(destination).tolist()]
    if len(src) != len(dst):
        raise ValueError("moveaxis: source and destination need the same number of elements")
    order = [n for n in range(nd) if n not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return lax.transpose(a, order)


def rollaxis(a, axis, start=0):
    """Move ``axis`` to position ``start`` (prefer :func:`moveaxis`).

    >>> rollaxis(fnp.ones((2, 3, 4)), 2).shape
    (4, 2, 3)
    """
    check_arraylike("rollaxis", a)
    a = asarray(a)
    nd = get_aval(a).ndim
    axis = normalize_axis(axis, nd)
    start = start + nd if start < 0 else start
    if axis < start:
        start -= 1
    return moveaxis(a, axis, start)


def swapaxes(a, axis1, axis2):
    """Swap two axes.

    >>> swapaxes(fnp.ones((2, 3, 4)), 0, 2).shape
    (4, 3, 2)
    """
    check_arraylike("swapaxes", a)
    a = asarray(a)
    nd = get_aval(a).ndim
    perm = list(range(nd))
    i, j = normalize_axis(axis1, nd), normalize_axis(axis2, nd)
    perm[i], perm[j] = perm[j], perm[i]
    return lax.transpose(a, perm)


def squeeze(a, axis=None):
    """Remove size-1 axes (all of them, or those in ``axis``).

    >>> squeeze(fnp.ones((1, 3, 1))).shape
    (3,)
    """
    check_arraylike("squeeze", a)
    a = asarray(a)
    s = get_aval(a).shape
    if axis is None:
        axes = [i for i, d in enumerate(s) if d == 1]
    else:
        axes = list(normalize_axes(axis, len(s)))
        for ax in axes:
            if s[ax] != 1:
                raise ValueError("cannot select an axis to squeeze out which has size not equal "
                                 f"to one (axis {ax} of shape {s})")
    return lax.squeeze(a, axes)


def expand_dims(a, axis):
    """Insert size-1 axes at positions ``axis`` of the result.

    >>> expand_dims(fnp.ones(3), (0, -1)).shape
    (1, 3, 1)
    """
    check_arraylike("expand_dims", a)
    a = asarray(a)
    axes = axis if isinstance(axis, (tuple, list, range)) else (axis,)
    return lax.expand_dims(a, tuple(axes))


def broadcast_to(array, shape):
    """Broadcast to ``shape`` with NumPy's rules.

    >>> broadcast_to(fnp.arange(3), (2, 3)).shape
    (2, 3)
    """
    check_arraylike("broadcast_to", array)
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    return broadcast_to_shape(asarray(array), shape)


def broadcast_shapes(*shapes):
    """The shape NumPy broadcasting gives these shapes.

    >>> broadcast_shapes((2, 1), (3,))
    (2, 3)
    """
    return _bshapes("broadcast_shapes", *shapes)


def broadcast_arrays(*args):
    """Broadcast arrays against each other.

    >>> [a.shape for a in broadcast_arrays(fnp.ones(3), fnp.ones((2, 1)))]
    [(2, 3), (2, 3)]
    """
    check_arraylike("broadcast_arrays", *args)
    arrays = [asarray(a) for a in args]
    shape = _bshapes("broadcast_arrays", *[get_aval(a).shape for a in arrays])
    return [broadcast_to_shape(a, shape) for a in arrays]


def tile(A, reps):
    """Repeat the whole array ``reps`` times along each axis.

    >>> tile(fnp.array([1, 2]), 2)
    Array([1, 2, 1, 2], dtype=int64)
    """
    check_arraylike("tile", A)
    a = asarray(A)
    reps = (reps,) if isinstance(reps, (int, np.integer)) else tuple(reps)
    s = get_aval(a).shape
    nd = builtins.max(len(s), len(reps))
    s = (1,) * (nd - len(s)) + s
    reps = (1,) * (nd - len(reps)) + tuple(reps)
    a = reshape(a, s)
    # Broadcast into (r0, s0, r1, s1, ...) and merge pairs.
    b_shape = tuple(v for r, d in zip(reps, s) for v in (r, d))
    b = lax.broadcast_in_dim(a, b_shape, tuple(range(1, 2 * nd, 2)))
    return reshape(b, tuple(r * d for r, d in zip(reps, s)))


def repeat(a, repeats, axis=None, *, total_repeat_length=None):
    """Repeat each element ``repeats`` times (an int or one count per element).

    Counts known at trace time give the exact NumPy result; traced counts need the static
    ``total_repeat_length`` (JAX's convention): extra output is cut off, and a short total
    repeats the last element.

    >>> repeat(fnp.array([1, 2]), fnp.array([1, 2]))
    Array([1, 2, 2], dtype=int64)
    """
    from .indexing import _concrete, take
    check_arraylike("repeat", a, repeats)
    a = asarray(a)
    if axis is None:
        a = ravel(a)
        axis = 0
    s = get_aval(a).shape
    axis = normalize_axis(axis, len(s))
    n = s[axis]
    if isinstance(repeats, (int, np.integer)):
        r = int(repeats)
        if r < 0:
            raise ValueError(f"fnp.repeat: negative repeats {r}")
        b = lax.broadcast_in_dim(a, s[:axis + 1] + (r,) + s[axis + 1:],
                                 tuple(range(axis + 1)) + tuple(range(axis + 2, len(s) + 1)))
        out = reshape(b, s[:axis] + (n * r,) + s[axis + 1:])
        if total_repeat_length is not None and total_repeat_length != n * r:
            raise ValueError(f"fnp.repeat: total_repeat_length={total_repeat_length} but the "
                             f"static repeats give {n * r}")
        return out
    counts = _concrete(repeats if isinstance(repeats, (list, tuple)) else asarray(repeats))
    if counts is not None:
        counts = np.asarray(counts)
        if counts.size == 0:
            counts = counts.astype(np.int64)
        if dtypes.kind(counts.dtype) not in "iu":
            raise TypeError(f"fnp.repeat: repeats must be integers, got dtype {counts.dtype}")
        if (counts < 0).any():
            raise ValueError("fnp.repeat: repeats may not contain negative values")
        try:
            counts = np.broadcast_to(counts, (n,))
        except ValueError:
            raise ValueError(f"fnp.repeat: operands could not be broadcast together with shape "
                             f"({n},) (axis {axis} of {s}) and repeats of shape "
                             f"{counts.shape}") from None
        idx = np.repeat(np.arange(n), counts)
        if total_repeat_length is not None:
            if total_repeat_length < 0:
                raise ValueError("fnp.repeat: total_repeat_length must be non-negative")
            idx = idx[:total_repeat_length]
            if len(idx) < total_repeat_length:
                idx = np.concatenate([idx, np.full(total_repeat_length - len(idx),
                                                   idx[-1] if len(idx) else n - 1)])
        return take(a, asarray(idx.astype(np.int64)), axis=axis)
    if total_repeat_length is None:
        raise ValueError("fnp.repeat with traced repeats needs the static total_repeat_length= "
                         "(the output's size depends on the repeats' values)")
    from .reductions import cumsum
    counts = broadcast_to(asarray(repeats), (n,))
    ends = cumsum(counts)  # output position j comes from the first element whose end > j
    d = get_aval(ends).dtype
    pos = lax.iota(d, total_repeat_length)
    if n:  # positions past the total repeat the last output element
        last = P.max_p.bind1(P.sub_p.bind1(lax.index_in_dim(ends, n - 1, keepdims=False),
                                           lax.full((), 1, d)), lax.full((), 0, d))
        pos = P.min_p.bind1(pos, last)
    idx = P.reduce_sum_p.bind1(convert(P.le_p.bind1(
        lax.broadcast_in_dim(ends, (total_repeat_length, n), (1,)),
        lax.broadcast_in_dim(pos, (total_repeat_length, n), (0,))), get_aval(ends).dtype),
        axes=(1,))
    idx = P.min_p.bind1(idx, lax.full_like(idx, builtins.max(n - 1, 0)))
    return take(a, idx, axis=axis)


def flip(m, axis=None):
    """Reverse the order of elements along ``axis`` (all axes by default).

    >>> flip(fnp.array([1, 2, 3]))
    Array([3, 2, 1], dtype=int64)
    """
    check_arraylike("flip", m)
    m = asarray(m)
    return lax.rev(m, normalize_axes(axis, get_aval(m).ndim))


def fliplr(m):
    """Reverse the order of columns (axis 1).

    >>> fliplr(fnp.array([[1, 2], [3, 4]]))
    Array([[2, 1],
           [4, 3]], dtype=int64)
    """
    check_arraylike("fliplr", m)
    return flip(m, 1)


def flipud(m):
    """Reverse the order of rows (axis 0).

    >>> flipud(fnp.array([[1, 2], [3, 4]]))
    Array([[3, 4],
           [1, 2]], dtype=int64)
    """
    check_arraylike("flipud", m)
    return flip(m, 0)


def roll(a, shift, axis=None):
    """Roll elements cyclically by ``shift`` along ``axis``. A traced ``shift`` (inside
    jit or vmap: jraph rolls each graph's senders by its own count) rolls by a dynamic slice
    of the array joined to itself, as JAX does.

    >>> roll(fnp.array([1, 2, 3, 4]), 1)
    Array([4, 1, 2, 3], dtype=int64)
    >>> ft.vmap(roll)(fnp.array([[1, 2, 3], [4, 5, 6]]), fnp.array([1, -1]))
    Array([[3, 1, 2],
           [5, 6, 4]], dtype=int64)
    """
    check_arraylike("roll", a)
    a = asarray(a)
    if axis is None:
        return reshape(roll(ravel(a), shift, 0), get_aval(a).shape)
    static = _concrete_shifts(shift)
    if static is None:
        return _roll_dynamic(a, shift, axis)
    shifts, axes = np.broadcast_arrays(static, np.atleast_1d(axis).tolist())
    for sh, ax in zip(shifts.tolist(), axes.tolist()):
        ax = normalize_axis(ax, get_aval(a).ndim)
        n = get_aval(a).shape[ax]
        if n == 0:
            continue
        k = int(sh) % n
        if k:
            a = _concatenate([lax.slice_in_dim(a, n - k, n, 1, ax),
                             lax.slice_in_dim(a, 0, n - k, 1, ax)], ax)
    return a


def _concrete_shifts(shift):
    """``shift``'s values as a list of ints if they are known now, else None."""
    items = shift if isinstance(shift, (list, tuple)) else [shift]
    values = []
    for item in items:
        v = concrete_of(item)
        if v is None:
            return None
        values.extend(np.atleast_1d(v).tolist())
    if not isinstance(shift, (list, tuple)) and np.ndim(concrete_of(shift)) == 0:
        return values[:1]
    return values


def _roll_dynamic(a, shift, axis):
    """``roll`` by traced shifts: each axis's shift reduced modulo its length, then a
    length-``n`` window of ``a`` joined to itself, starting at ``n - shift``."""
    shift = asarray(shift)
    axes = np.atleast_1d(axis)
    b_shape = np.broadcast_shapes(get_aval(shift).shape, axes.shape)
    if len(b_shape) > 1:
        raise ValueError("roll: shift and axis must be scalars or 1-D sequences")
    shifts = broadcast_to(shift, b_shape) if b_shape else shift
    for i, ax in enumerate(np.broadcast_to(axes, b_shape).reshape(-1).tolist()):
        ax = normalize_axis(ax, get_aval(a).ndim)
        n = get_aval(a).shape[ax]
        if n == 0:
            continue
        x = lax.convert_element_type(shifts[i] if b_shape else shifts, np.int32)
        x = lax.rem(lax.add(lax.rem(x, np.int32(n)), np.int32(n)), np.int32(n))
        a = lax.dynamic_slice_in_dim(_concatenate([a, a], ax), lax.sub(np.int32(n), x), n,
                                     axis=ax)
    return a


def rot90(m, k=1, axes=(0, 1)):
    """Rotate by 90 degrees ``k`` times in the plane of ``axes``.

    >>> rot90(fnp.array([[1, 2], [3, 4]]))
    Array([[2, 4],
           [1, 3]], dtype=int64)
    """
    check_arraylike("rot90", m)
    m = asarray(m)
    k %= 4
    ax0, ax1 = (normalize_axis(x, get_aval(m).ndim) for x in axes)
    if ax0 == ax1:
        raise ValueError("rot90: axes must be different")
    if k == 0:
        return m
    if k == 2:
        return flip(flip(m, ax0), ax1)
    perm = list(range(get_aval(m).ndim))
    perm[ax0], perm[ax1] = perm[ax1], perm[ax0]
    return lax.transpose(flip(m, ax1), perm) if k == 1 else flip(lax.transpose(m, perm), ax1)


def _as_pairs(name, value, nd):
    """NumPy's (before, after) pairs per axis from a scalar, a pair or one pair per axis."""
    try:
        return np.broadcast_to(np.asarray(value), (nd, 2))
    except ValueError:
        raise ValueError(f"fnp.pad: {name} {value!r} does not give (before, after) pairs for "
                         f"the {nd} axes") from None


def pad(array, pad_width, mode="constant", *, constant_values=0):
    """Pad with a constant (``mode="constant"``), or ``edge``/``reflect``/``symmetric``/``wrap``.

    >>> pad(fnp.array([1, 2]), (1, 2), constant_values=9)
    Array([9, 1, 2, 9, 9], dtype=int64)
    """
    check_arraylike("pad", array)
    a = asarray(array)
    nd = get_aval(a).ndim
    if dtypes.kind(np.asarray(pad_width).dtype) not in "iu":
        raise TypeError(f"fnp.pad: `pad_width` must be of integral type, got {pad_width!r}")
    pw = _as_pairs("pad_width", pad_width, nd)
    if (pw < 0).any():
        raise ValueError(f"fnp.pad: pad_width can't contain negative values, got {pad_width!r}")
    if mode == "constant":
        _as_pairs("constant_values", constant_values, nd)
    if nd == 0:
        return a  # NumPy: nothing to pad
    if mode == "constant":
        cv = _as_pairs("constant_values", constant_values, nd)
        if np.all(cv == cv.flat[0]):
            value = convert(asarray(cv.flat[0].item()), get_aval(a).dtype)
            return lax.pad(a, value, [(int(lo), int(hi), 0) for lo, hi in pw])
        for ax in range(nd):
            for side in (0, 1):
                value = convert(asarray(cv[ax, side].item()), get_aval(a).dtype)
                cfg = [(0, 0, 0)] * nd
                cfg[ax] = (int(pw[ax, 0]), 0, 0) if side == 0 else (0, int(pw[ax, 1]), 0)
                a = lax.pad(a, value, cfg)
        return a
    if mode not in ("edge", "reflect", "symmetric", "wrap"):
        raise NotImplementedError(f"fnp.pad mode {mode!r} is not supported")
    for ax in range(nd):
        lo, hi = int(pw[ax, 0]), int(pw[ax, 1])
        n = get_aval(a).shape[ax]
        if n == 0 and (lo or hi):
            raise ValueError(f"fnp.pad: can't extend empty axis {ax} using modes other than "
                             "'constant' or 'empty'")
        if not (lo or hi):
            continue
        idx = np.arange(-lo, n + hi)
        if mode == "edge":
            idx = np.clip(idx, 0, n - 1)
        elif mode == "wrap":
            idx = idx % n
        elif mode == "reflect":
            period = 2 * (n - 1) if n > 1 else 1
            idx = np.abs(idx) % period
            idx = np.where(idx >= n, period - idx, idx)
        else:  # symmetric
            period = 2 * n
            idx = idx % period
            idx = np.where(idx >= n, period - 1 - idx, idx)
        from .indexing import take
        a = take(a, asarray(idx), axis=ax)
    return a


def where(condition, x=None, y=None, /, *, size=None, fill_value=None):
    """``x`` where ``condition`` else ``y`` (broadcasting, NumPy promotion). With one argument,
    ``nonzero(condition)``.

    >>> where(fnp.array([True, False]), 1.0, 0.0)
    Array([1., 0.], dtype=float64, weak_type=True)
    """
    for key in (x, y):
        if getattr(key, "_is_key_array", False):  # typed PRNG keys (random._keys: above numpy)
            return key._where(condition, x, y)
    check_arraylike("where", condition, x, y, allow_none=True)
    if x is None and y is None:
        from .sorting import nonzero
        return nonzero(condition, size=size, fill_value=fill_value)
    if x is None or y is None:
        raise ValueError("either both or neither of x and y should be given")
    c = asarray(condition)
    if get_aval(c).dtype != dtypes.bool_:
        c = P.ne_p.bind1(c, lax.ops._convert_weak(0, get_aval(c).dtype))
    x, y = _wrap_int_scalars(x, y)
    x, y = promote(x, y)
    c, x, y = broadcast_operands("where", [c, x, y])
    shape = _bshapes("where", *[get_aval(v).shape for v in (c, x, y)])
    if get_aval(c).shape != shape:
        c = broadcast_to_shape(c, shape)
    if shape and (not get_aval(x).shape or not get_aval(y).shape):
        x, y = broadcast_to_shape(x, shape), broadcast_to_shape(y, shape)
    return P.select_n_p.bind1(c, y, x)


def _wrap_int_scalars(x, y):
    """NumPy's where casts a Python int beyond the other operand's integer dtype unsafely
    (uint8 with -1 gives 255) instead of raising."""
    out = [x, y]
    for i, (v, other) in enumerate(((x, y), (y, x))):
        if type(v) is int and type(other) not in (bool, int, float):
            d = get_aval(asarray(other)).dtype
            if dtypes.kind(d) in "iu" and not np.iinfo(d).min <= v <= np.iinfo(d).max and (
                    -2**63 <= v < 2**64):
                wide = np.array(v, np.int64 if v < 2**63 else np.uint64)
                out[i] = asarray(wide.astype(d))
    return out


def select(condlist, choicelist, default=0):
    """The first choice whose condition holds, elementwise (else ``default``).

    >>> select([fnp.array([True, False]), fnp.array([False, True])], [1, 2], default=0)
    Array([1, 2], dtype=int64, weak_type=True)
    """
    check_arraylike("select", *condlist, *choicelist, default)
    if len(condlist) != len(choicelist):
        raise ValueError("list of cases must be same length as list of conditions")
    out = default
    for c, v in reversed(list(zip(condlist, choicelist))):
        out = where(c, v, out)
    return asarray(out)


def clip(a, a_min=None, a_max=None, out=None, *, min=None, max=None):
    """Limit values to ``[a_min, a_max]`` (either may be None).

    >>> clip(fnp.array([-1, 5, 10]), 0, 6)
    Array([0, 5, 6], dtype=int64)
    """
    from .ufuncs import maximum, minimum
    check_arraylike("clip", a)
    unsupported_out("clip", out)
    lo = a_min if min is None else min
    hi = a_max if max is None else max
    for bound in (lo, hi):  # each on its own, as JAX
        check_arraylike("clip", bound, allow_none=True)
    a = asarray(a)
    aval = get_aval(a)
    if any(b is not None and dtypes.kind(get_aval(b).dtype) == "c" for b in (a, lo, hi)):
        raise ValueError(  # JAX's refusal and wording (NumPy clips lexicographically)
            "Clip received a complex value either through the input or the min/max keywords. "
            "Complex values have no ordering and cannot be clipped. Please convert to a real "
            "value or array by taking the real or imaginary components via "
            "functrans.numpy.real/imag respectively.")
    if dtypes.kind(aval.dtype) in "iu" and not aval.weak_type:
        # As NumPy: Python int bounds beyond the dtype's range clip nothing (no overflow).
        info = np.iinfo(aval.dtype)
        if type(lo) is int and lo <= info.min:
            lo = None
        if type(hi) is int and hi >= info.max:
            hi = None
    if lo is not None:
        a = maximum(a, lo)
    if hi is not None:
        a = minimum(a, hi)
    return a


def diff(a, n=1, axis=-1, prepend=None, append=None):
    """n-th discrete difference along ``axis``.

    >>> diff(fnp.array([1, 4, 9, 16]))
    Array([3, 5, 7], dtype=int64)
    """
    from .ufuncs import not_equal, subtract
    for v in (a, prepend, append):  # each on its own, as JAX
        check_arraylike("diff", v, allow_none=v is not a)
    a = asarray(a)
    if get_aval(a).ndim == 0:
        raise ValueError("fnp.diff requires input that is at least one dimensional")
    axis = normalize_axis(axis, get_aval(a).ndim)
    if n < 0:
        raise ValueError(f"fnp.diff: order must be non-negative but got {n}")
    if n == 0:
        return a  # NumPy ignores prepend/append then
    parts = []
    # NumPy turns prepend/append into arrays: Python scalars are not weak here.
    strong = (lambda v: convert(v, get_aval(v).dtype))
    if prepend is not None:
        p = strong(asarray(prepend))
        if get_aval(p).ndim == 0:
            shp = list(get_aval(a).shape)
            shp[axis] = 1
            p = broadcast_to(p, tuple(shp))
        parts.append(p)
    parts.append(a)
    if append is not None:
        q = strong(asarray(append))
        if get_aval(q).ndim == 0:
            shp = list(get_aval(a).shape)
            shp[axis] = 1
            q = broadcast_to(q, tuple(shp))
        parts.append(q)
    a = _concatenate(parts, axis) if len(parts) > 1 else a
    op = not_equal if get_aval(a).dtype == dtypes.bool_ else subtract
    for _ in range(n):
        m = get_aval(a).shape[axis]
        a = op(lax.slice_in_dim(a, builtins.min(1, m), m, 1, axis),
               lax.slice_in_dim(a, 0, builtins.max(m - 1, 0), 1, axis))
    return a


def ediff1d(ary, to_end=None, to_begin=None):
    """Differences of the flattened array, with optional values before and after; the result
    keeps ``ary``'s dtype (the extra values must cast to it with ``same_kind``).

    >>> ediff1d(fnp.array([1, 4, 9]), to_begin=0)
    Array([0, 3, 5], dtype=int64)
    """
    # As JAX: each argument is checked on its own (every error says position 0).
    for v in (ary, to_end, to_begin):
        check_arraylike("ediff1d", v, allow_none=v is not ary)
    ary = ravel(asarray(ary))
    d = diff(ary) if get_aval(ary).size else ary
    dtype = get_aval(ary).dtype

    def extra(v, name):
        v = ravel(asarray(v))
        if not np.can_cast(get_aval(v).dtype, dtype, "same_kind"):
            raise TypeError(f"fnp.ediff1d: dtype of `{name}` ({get_aval(v).dtype}) must be "
                            f"compatible with input `ary` ({dtype}) under the `same_kind` rule")
        return convert(v, dtype)
    parts = ([extra(to_begin, "to_begin")] if to_begin is not None else []) + [d] + (
        [extra(to_end, "to_end")] if to_end is not None else [])
    return _concatenate(parts) if len(parts) > 1 else d


def astype(x, dtype, /, *, copy=False):
    """Cast to ``dtype``.

    >>> astype(fnp.array([1.7, -1.7]), 'int32')
    Array([ 1, -1], dtype=int32)
    """
    if getattr(x, "_is_key_array", False):
        return x.astype(dtype)
    check_arraylike("astype", x)
    return convert(asarray(x), dtypes.canonicalize_dtype(dtype))


def copy(a, order=None):
    """A copy of ``a`` (arrays are immutable, so this is ``a`` itself).

    >>> copy(fnp.array([1, 2]))
    Array([1, 2], dtype=int64)
    """
    check_arraylike("copy", a)
    return asarray(a)


def resize(a, new_shape):
    """Repeat ``a`` cyclically to fill ``new_shape``.

    >>> resize(fnp.array([1, 2, 3]), (2, 2))
    Array([[1, 2],
           [3, 1]], dtype=int64)
    """
    check_arraylike("resize", a)
    a = ravel(asarray(a))
    new_shape = (new_shape,) if isinstance(new_shape, (int, np.integer)) else tuple(new_shape)
    total = math.prod(new_shape)
    n = get_aval(a).size
    if n == 0:
        return lax.full(new_shape, 0, get_aval(a).dtype)
    reps = -(-total // n)
    return reshape(lax.slice_in_dim(tile(a, reps), 0, total), new_shape)
