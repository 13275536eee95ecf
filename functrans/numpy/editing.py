"""Assembling, inserting, deleting and selecting: block, insert, delete, choose, compress,
extract, trim_zeros, unravel_index, ravel_multi_index, packbits, unpackbits.

Where NumPy's result layout depends only on static arguments (insert/delete positions,
shapes), the layout is worked out once by NumPy itself on element ids and applied with a
single gather, so every corner case (negative, repeated or boolean positions, broadcasting
of the inserted values) is NumPy's. Value-dependent sizes need a static ``size=`` when traced::

    >>> insert(fnp.array([1, 2, 3]), 1, 9)
    Array([1, 9, 2, 3], dtype=int64)
"""
from __future__ import annotations

import math

import numpy as np

from .. import lax
from .. import primitives as P
from ..core import dtypes
from ..core.array import Array
from ..core.trace import Tracer, get_aval
from ._core import check_arraylike, asarray, convert, normalize_axis
from . import joining, shape_ops, ufuncs

__all__ = ["block", "insert", "delete", "choose", "compress", "extract", "trim_zeros",
           "unravel_index", "ravel_multi_index", "packbits", "unpackbits"]


def _concrete(x):
    from .indexing import _concrete as c
    return c(x)


def _static(name, what, value):
    """A static (Python or concrete) value of an argument that shapes the result."""
    if isinstance(value, (Array, Tracer)):
        c = _concrete(value)
        if c is None:
            raise TypeError(f"fnp.{name}: {what} must be static (Python values or concrete "
                            "arrays): the result's shape depends on it")
        return c
    return value


def _gather_layout(arr, values, ids):
    """Elements of ``arr`` (ids >= 0, flat positions) and ``values`` (ids < 0, -1 - flat
    position) arranged as the NumPy id array ``ids`` says."""
    from .indexing import take
    flat = shape_ops.ravel(arr)
    if values is not None:
        flat = joining.concatenate([flat, shape_ops.ravel(values)])
    n = get_aval(arr).size
    src = np.where(ids >= 0, ids, n - 1 - ids).astype(np.int64)
    return shape_ops.reshape(take(flat, asarray(src.ravel()), mode="clip"), ids.shape)


# ---- block -------------------------------------------------------------------------------------------
def _block_depths(x, path=()):
    if type(x) is tuple:
        raise TypeError(f"fnp.block: arrays{''.join(f'[{i}]' for i in path)} is a tuple; only "
                        "lists can be used to arrange blocks")
    if type(x) is list:
        if not x:
            raise ValueError(f"fnp.block: list at arrays{''.join(f'[{i}]' for i in path)} "
                             "cannot be empty")
        depths = [_block_depths(v, path + (i,)) for i, v in enumerate(x)]
        first = depths[0][0]

        def where(i):
            return "arrays" + "".join(f"[{j}]" for j in path + (i,))
        for i, (d, _) in enumerate(depths):
            if d != first:
                raise ValueError(f"fnp.block: list depths are mismatched: {where(0)} has depth "
                                 f"{first - len(path) - 1} but {where(i)} has depth "
                                 f"{d - len(path) - 1}")
        return first, max(nd for _, nd in depths)
    return len(path), get_aval(asarray(x)).ndim


def block(arrays):
    """Assemble an array from nested lists of blocks: the innermost lists are joined along
    the last axis, the next ones along the second-to-last, and so on.

    >>> block([[fnp.ones((2, 2)), fnp.zeros((2, 1))], [fnp.zeros((1, 3))]]).shape
    (3, 3)
    """
    depth, max_ndim = _block_depths(arrays)
    ndim = max(depth, max_ndim)

    def assemble(x, level):
        if type(x) is list:
            parts = [assemble(v, level + 1) for v in x]
            return joining.concatenate(parts, axis=-(depth - level))
        x = asarray(x)
        s = get_aval(x).shape
        return shape_ops.reshape(x, (1,) * (ndim - len(s)) + s)
    return assemble(arrays, 0)


# ---- insert / delete --------------------------------------------------------------------------------
def _axis_view(arr, axis):
    arr = asarray(arr)
    if axis is None:
        return shape_ops.ravel(arr), None
    normalize_axis(axis, get_aval(arr).ndim)
    return arr, axis


def insert(arr, obj, values, axis=None):
    """``arr`` with ``values`` inserted before the position(s) ``obj`` along ``axis``
    (flattened when None). ``obj`` is static; ``values`` may be traced and are cast to
    ``arr``'s dtype.

    >>> insert(fnp.array([[1, 2], [3, 4]]), 1, fnp.array([9, 8]), axis=1)
    Array([[1, 9, 2],
           [3, 8, 4]], dtype=int64)
    """
    check_arraylike("insert", arr, 0 if isinstance(obj, slice) else obj, values)
    arr, axis = _axis_view(arr, axis)
    obj = _static("insert", "obj", obj)
    values = convert(asarray(values), get_aval(arr).dtype)
    vshape = get_aval(values).shape
    ids = np.arange(get_aval(arr).size, dtype=np.int64).reshape(get_aval(arr).shape)
    vids = -1 - np.arange(math.prod(vshape), dtype=np.int64).reshape(vshape)
    try:
        layout = np.insert(ids, obj, vids, axis=axis)
    except (IndexError, ValueError, TypeError) as e:
        raise type(e)(f"fnp.insert: {e}") from None
    return _gather_layout(arr, values, layout)


def delete(arr, obj, axis=None):
    """``arr`` without the positions ``obj`` (static ints, a slice or a boolean mask) along
    ``axis`` (flattened when None).

    >>> delete(fnp.array([1, 2, 3, 4]), fnp.array([0, 2]))
    Array([2, 4], dtype=int64)
    """
    check_arraylike("delete", arr, *(() if isinstance(obj, slice) else (obj,)))
    arr, axis = _axis_view(arr, axis)
    obj = _static("delete", "obj", obj)
    ids = np.arange(get_aval(arr).size, dtype=np.int64).reshape(get_aval(arr).shape)
    try:
        layout = np.delete(ids, obj, axis=axis)
    except (IndexError, ValueError, TypeError) as e:
        raise type(e)(f"fnp.delete: {e}") from None
    return _gather_layout(arr, None, layout)


# ---- selection --------------------------------------------------------------------------------------
def choose(a, choices, out=None, mode="raise"):
    """``choices[a[i]][i]`` elementwise, the index array and choices broadcasting together;
    ``mode`` "raise" (concrete indices only), "wrap" or "clip".

    >>> choose(fnp.array([0, 1, 0]), [fnp.array([1, 2, 3]), fnp.array([10, 20, 30])])
    Array([ 1, 20,  3], dtype=int64)
    """
    from ._core import promote
    check_arraylike("choose", a)
    if out is not None:
        raise NotImplementedError("fnp.choose: out= is not supported; use the return value")
    a = asarray(a)
    if dtypes.kind(get_aval(a).dtype) not in "iub" or not np.can_cast(get_aval(a).dtype, np.intp):
        raise TypeError(f"fnp.choose: the index array must be integers that cast safely to "
                        f"int64, got {get_aval(a).dtype}")
    choices = list(choices) if not isinstance(choices, (Array, Tracer, np.ndarray)) else [
        asarray(choices)[i] for i in range(get_aval(asarray(choices)).shape[0])]
    if not choices:
        raise ValueError("fnp.choose: choices cannot be empty")
    n = len(choices)
    choices = promote(*choices)
    ops = shape_ops.broadcast_arrays(a, *choices)
    idx, cases = ops[0], ops[1:]
    idx = convert(idx, dtypes.default_int_dtype())
    if mode == "raise":
        c = _concrete(idx)
        if c is None:
            raise ValueError("fnp.choose: mode='raise' needs concrete indices; use mode='wrap' "
                             "or 'clip' in traced code")
        if c.size and (c.min() < 0 or c.max() >= n):
            raise ValueError(f"fnp.choose: invalid entry in choice array (indices must be in "
                             f"[0, {n}))")
    elif mode == "wrap":
        idx = ufuncs.remainder(idx, n)
    elif mode != "clip":
        raise ValueError(f"fnp.choose: clipmode must be one of 'clip', 'raise', or 'wrap', "
                         f"got {mode!r}")
    if n == 1:
        return cases[0]
    return P.select_n_p.bind1(idx, *cases)  # select_n clamps: "clip" semantics


def compress(condition, a, axis=None, out=None, *, size=None, fill_value=0):
    """The slices of ``a`` along ``axis`` where the 1-d ``condition`` is true. With a traced
    condition the result's length must be the static ``size`` (JAX's convention): extra
    slots are ``fill_value``, extra selections are dropped.

    >>> compress(fnp.array([True, False, True]), fnp.array([1, 2, 3]))
    Array([1, 3], dtype=int64)
    """
    from .indexing import take
    from .sorting import nonzero
    check_arraylike("compress", condition, a)
    if out is not None:
        raise NotImplementedError("fnp.compress: out= is not supported; use the return value")
    a = asarray(a)
    if axis is None:
        a, axis = shape_ops.ravel(a), 0
    axis = normalize_axis(axis, get_aval(a).ndim)
    n = get_aval(a).shape[axis]
    cond = asarray(condition)
    if get_aval(cond).ndim != 1:
        raise ValueError(f"fnp.compress: condition must be a 1-d array, got shape "
                         f"{get_aval(cond).shape}")
    c = _concrete(cond)
    if c is not None and size is None:
        idx = np.flatnonzero(c)
        if idx.size and idx[-1] >= n:
            raise IndexError(f"fnp.compress: index {idx[-1]} is out of bounds for axis {axis} "
                             f"with size {n}")
        return take(a, asarray(idx.astype(np.int64)), axis=axis)
    if size is None:
        raise TypeError("fnp.compress: a traced condition needs the static size= (the result's "
                        "length depends on its values)")
    m = get_aval(cond).shape[0]
    cond = cond if m <= n else cond[:n]
    (idx,) = nonzero(cond, size=size, fill_value=n)  # n: out of range -> fill_value
    return take(a, idx, axis=axis, mode="fill", fill_value=fill_value)


def extract(condition, arr, *, size=None, fill_value=0):
    """The elements of ``arr`` where ``condition`` is true (both flattened).

    >>> extract(fnp.array([[True, False], [False, True]]), fnp.array([[1, 2], [3, 4]]))
    Array([1, 4], dtype=int64)
    """
    check_arraylike("extract", condition, arr)
    cond = shape_ops.ravel(asarray(condition))
    cond = cond if get_aval(cond).dtype == dtypes.bool_ else ufuncs.not_equal(cond, 0)
    return compress(cond, shape_ops.ravel(asarray(arr)), size=size, fill_value=fill_value)


def trim_zeros(filt, trim="fb", axis=None):
    """``filt`` without its leading ('f') and/or trailing ('b') zeros (along every axis, or
    those in ``axis``). The result's shape depends on the values, so they must be concrete.

    >>> trim_zeros(fnp.array([0, 1, 2, 0]))
    Array([1, 2], dtype=int64)
    """
    check_arraylike("trim_zeros", filt)
    filt = asarray(filt)
    c = _concrete(filt)
    if c is None:
        raise TypeError("fnp.trim_zeros: the values must be concrete (the result's shape "
                        "depends on them)")
    c = np.ascontiguousarray(c)
    trimmed = np.trim_zeros(c, trim, axis=axis)
    if c.ndim == 0:
        return filt
    # NumPy returns a basic-slicing view: its byte offset gives the kept box's start.
    offset = (trimmed.__array_interface__["data"][0] - c.__array_interface__["data"][0]) // max(
        c.itemsize, 1)
    start = np.unravel_index(offset, c.shape) if c.size and offset < c.size else (0,) * c.ndim
    start = [min(int(st), d - k) for st, d, k in zip(start, c.shape, trimmed.shape)]
    return lax.slice(filt, start, [st + k for st, k in zip(start, trimmed.shape)])


# ---- index arithmetic -------------------------------------------------------------------------------
def unravel_index(indices, shape, order="C"):
    """Coordinate arrays of flat ``indices`` into an array of ``shape``. NumPy raises for
    out-of-range indices; traced indices cannot be checked and are clipped into range.

    >>> unravel_index(fnp.array([5, 7]), (3, 4))
    (Array([1, 1], dtype=int64), Array([1, 3], dtype=int64))
    """
    check_arraylike("unravel_index", indices)
    shape = tuple(int(d) for d in np.atleast_1d(shape))
    if order not in ("C", "F"):
        raise ValueError(f"fnp.unravel_index: only 'C' or 'F' order is permitted, got {order!r}")
    idx = asarray(indices)
    if dtypes.kind(get_aval(idx).dtype) not in "iu":
        raise TypeError(f"fnp.unravel_index: indices must be integers, got "
                        f"{get_aval(idx).dtype}")
    size = math.prod(shape)
    c = _concrete(idx)
    if c is not None and c.size and (c.min() < 0 or c.max() >= size):
        bad = c[(c < 0) | (c >= size)].flat[0]
        raise ValueError(f"fnp.unravel_index: index {bad} is out of bounds for array with size "
                         f"{size}")
    d = dtypes.default_int_dtype()
    idx = shape_ops.clip(convert(idx, d), 0, max(size - 1, 0))
    dims = shape if order == "C" else shape[::-1]
    out = []
    for k in range(len(dims)):
        stride = math.prod(dims[k + 1:])
        coord = ufuncs.floor_divide(idx, stride) if stride != 1 else idx
        out.append(ufuncs.remainder(coord, dims[k]) if k else coord)
    return tuple(out if order == "C" else out[::-1])


def ravel_multi_index(multi_index, dims, mode="raise", order="C"):
    """Flat indices of coordinate arrays into an array of shape ``dims``; ``mode`` "raise"
    (concrete coordinates only), "wrap" or "clip" (a tuple gives one mode per dimension).

    >>> ravel_multi_index((fnp.array([1, 2]), fnp.array([3, 0])), (3, 4))
    Array([7, 8], dtype=int64)
    """
    check_arraylike("ravel_multi_index", *multi_index)
    dims = tuple(int(d) for d in np.atleast_1d(dims))
    coords = [asarray(c) for c in multi_index]
    if len(coords) != len(dims):
        raise ValueError(f"fnp.ravel_multi_index: parameter multi_index must be a sequence of "
                         f"length {len(dims)}")
    modes = (mode,) * len(dims) if isinstance(mode, str) else tuple(mode)
    if order not in ("C", "F"):
        raise ValueError(f"fnp.ravel_multi_index: only 'C' or 'F' order is permitted, got "
                         f"{order!r}")
    d = dtypes.default_int_dtype()
    coords = shape_ops.broadcast_arrays(*coords)
    total = None
    strides = [math.prod(dims[k + 1:]) for k in range(len(dims))] if order == "C" else \
        [math.prod(dims[:k]) for k in range(len(dims))]
    for c, n, m, st in zip(coords, dims, modes, strides):
        if dtypes.kind(get_aval(c).dtype) not in "iu":
            raise TypeError(f"fnp.ravel_multi_index: coordinates must be integers, got "
                            f"{get_aval(c).dtype}")
        c = convert(c, d)
        if m == "raise":
            cc = _concrete(c)
            if cc is None:
                raise ValueError("fnp.ravel_multi_index: mode='raise' needs concrete "
                                 "coordinates; use 'wrap' or 'clip' in traced code")
            if cc.size and (cc.min() < 0 or cc.max() >= n):
                raise ValueError("fnp.ravel_multi_index: invalid entry in coordinates array")
        elif m == "wrap":
            c = ufuncs.remainder(c, n)
        elif m == "clip":
            c = shape_ops.clip(c, 0, n - 1)
        else:
            raise ValueError(f"fnp.ravel_multi_index: clipmode must be one of 'clip', 'raise', "
                             f"or 'wrap', got {m!r}")
        term = ufuncs.multiply(c, st)
        total = term if total is None else ufuncs.add(total, term)
    return total


# ---- bit packing ------------------------------------------------------------------------------------
def _bit_weights(bitorder):
    if bitorder not in ("big", "little"):
        raise ValueError(f"fnp.packbits: 'order' must be either 'little' or 'big', got "
                         f"{bitorder!r}")
    w = 1 << np.arange(8, dtype=np.uint8)
    return w[::-1] if bitorder == "big" else w


def packbits(a, axis=None, bitorder="big"):
    """Pack the truth values of ``a`` into uint8 bytes along ``axis`` (flattened when None),
    padding the last byte with zeros.

    >>> packbits(fnp.array([1, 0, 1, 1, 0, 0, 0, 1, 1]))
    Array([177, 128], dtype=uint8)
    """
    check_arraylike("packbits", a)
    a = asarray(a)
    if dtypes.kind(get_aval(a).dtype) not in "biu":
        raise TypeError(f"fnp.packbits: expected an input array of integer or boolean data "
                        f"type, got {get_aval(a).dtype}")
    w = _bit_weights(bitorder)
    if axis is None:
        a, axis = shape_ops.ravel(a), 0
    axis = normalize_axis(axis, get_aval(a).ndim)
    bits = convert(ufuncs.not_equal(a, 0), dtypes.uint8)
    n = get_aval(bits).shape[axis]
    nbytes = -(-n // 8)
    pad = [(0, 0, 0)] * get_aval(bits).ndim
    pad[axis] = (0, nbytes * 8 - n, 0)
    bits = lax.pad(bits, lax.full((), 0, dtypes.uint8), pad)
    s = get_aval(bits).shape
    grouped = shape_ops.reshape(bits, s[:axis] + (nbytes, 8) + s[axis + 1:])
    wshape = [1] * len(get_aval(grouped).shape)
    wshape[axis + 1] = 8
    weighted = ufuncs.multiply(grouped, asarray(w.reshape(wshape)))
    from .reductions import sum as sum_
    return sum_(weighted, axis=axis + 1, dtype=dtypes.uint8)


def unpackbits(a, axis=None, count=None, bitorder="big"):
    """The bits of uint8 ``a`` as 0/1 uint8 values along ``axis`` (flattened when None);
    ``count`` keeps that many (negative: drops from the end; more: pads with zeros).

    >>> unpackbits(fnp.array([177], "uint8"))
    Array([1, 0, 1, 1, 0, 0, 0, 1], dtype=uint8)
    """
    check_arraylike("unpackbits", a)
    a = asarray(a)
    if get_aval(a).dtype != dtypes.uint8:
        raise TypeError(f"fnp.unpackbits: expected an input array of unsigned byte data type, "
                        f"got {get_aval(a).dtype}")
    w = _bit_weights(bitorder)
    if axis is None:
        a, axis = shape_ops.ravel(a), 0
    axis = normalize_axis(axis, get_aval(a).ndim)
    s = get_aval(a).shape
    expanded = shape_ops.expand_dims(a, axis + 1)
    wshape = [1] * (len(s) + 1)
    wshape[axis + 1] = 8
    bits = ufuncs.not_equal(ufuncs.bitwise_and(expanded, asarray(w.reshape(wshape))), 0)
    bits = shape_ops.reshape(convert(bits, dtypes.uint8), s[:axis] + (8 * s[axis],) + s[axis + 1:])
    if count is None:
        return bits
    total = 8 * s[axis]
    if count < -total:
        raise ValueError(f"fnp.unpackbits: -count larger than number of elements ({-count} > "
                         f"{total})")
    keep = count if count >= 0 else total + count
    if keep <= total:
        return lax.slice_in_dim(bits, 0, keep, 1, axis)
    pad = [(0, 0, 0)] * len(s)
    pad[axis] = (0, keep - total, 0)
    return lax.pad(bits, lax.full((), 0, dtypes.uint8), pad)
