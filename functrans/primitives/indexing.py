"""gather and scatter: integer-array indexing along chosen axes.

functrans uses a simpler form than XLA's general gather. ``gather(x, *indices, axes=...)``
indexes the operand axes ``axes`` with integer arrays that broadcast together to a shape B; the
result has shape ``B + (the other operand dims, in order)``, i.e. NumPy's
``moveaxis(x, axes, front)[indices]``. NumPy's indexing (basic, advanced, mixed) and ``.at[]``
updates are built from it plus slicing, and its rules stay short::

    >>> gather_p.bind1(np.arange(6).reshape(2, 3), np.array([2, 0]), axes=(1,), mode="clip",
    ...                fill_value=None).tolist()
    [[2, 5], [0, 3]]

``scatter*`` writes/accumulates ``updates`` (shape ``B + other dims``) at the same positions.
Modes: gather ``clip`` (indices clamped into range) or ``fill`` (out-of-range rows read
``fill_value``); scatter ``drop`` (out-of-range updates are skipped) or ``clip``.
"""
from __future__ import annotations

import numpy as np

from ..core import dtypes
from ..core.avals import ShapedArray
from ..core.trace import Primitive


def _index_shape(name, operand, indices, axes):
    if len(indices) != len(axes):
        raise TypeError(f"{name}: got {len(indices)} index arrays for axes {axes}")
    if len(set(axes)) != len(axes) or any(not 0 <= a < operand.ndim for a in axes):
        raise ValueError(f"{name}: axes {axes} must be distinct axes of {operand.str_short()}")
    for i in indices:
        if i.dtype.kind not in "iu":
            raise TypeError(f"{name}: indices must be integer arrays, got {i.str_short()}")
    try:
        batch = np.broadcast_shapes(*[i.shape for i in indices])
    except ValueError:
        raise TypeError(f"{name}: index arrays of shapes "
                        f"{', '.join(str(i.shape) for i in indices)} do not broadcast together"
                        ) from None
    rest = tuple(d for k, d in enumerate(operand.shape) if k not in axes)
    return batch + rest


def _default_fill(dtype):
    if dtype.kind == "f":
        return np.nan
    if dtype.kind == "b":
        return True
    info = np.iinfo(dtype)
    return info.min if dtype.kind == "i" else info.max


def _gather_abstract_eval(operand, *indices, axes, mode, fill_value):
    if mode not in ("clip", "fill"):
        raise ValueError(f"gather: mode must be 'clip' or 'fill', got {mode!r}")
    shape = _index_shape("gather", operand, indices, axes)
    return [ShapedArray(shape, operand.dtype, operand.weak_type)]


def _gather_impl(operand, *indices, axes, mode, fill_value):
    k = len(axes)
    moved = np.moveaxis(operand, axes, range(k))
    sizes = moved.shape[:k]
    batch = np.broadcast_shapes(*[i.shape for i in indices])
    if any(n == 0 for n in sizes) and 0 not in batch:
        fill = _default_fill(operand.dtype) if fill_value is None else fill_value
        return [np.full(batch + moved.shape[k:], fill if mode == "fill" else 0, operand.dtype)]
    safe = [np.clip(i, 0, n - 1) for i, n in zip(indices, sizes)]
    out = moved[tuple(safe)]
    if mode == "fill":
        bad = np.zeros(batch, bool)
        for i, n in zip(indices, sizes):
            bad |= (i < 0) | (i >= n)
        if bad.any():
            out = np.array(out)
            out[bad] = _default_fill(operand.dtype) if fill_value is None else fill_value
    return [out]


gather_p = Primitive("gather", impl=_gather_impl, abstract_eval=_gather_abstract_eval)


def _scatter_abstract_eval(name):
    def abstract_eval(operand, updates, *indices, axes, mode):
        if mode not in ("drop", "clip"):
            raise ValueError(f"{name}: mode must be 'drop' or 'clip', got {mode!r}")
        shape = _index_shape(name, operand, indices, axes)
        if updates.shape != shape or updates.dtype != operand.dtype:
            raise TypeError(f"{name}: updates must have shape {shape} and dtype "
                            f"{operand.dtype}, got {updates.str_short()}")
        if name == "scatter-mul" and operand.dtype == dtypes.bool_:
            raise TypeError("scatter-mul does not accept bool operands")
        return [ShapedArray(operand.shape, operand.dtype, operand.weak_type)]
    return abstract_eval


def _scatter_impl(combine):
    def impl(operand, updates, *indices, axes, mode):
        k = len(axes)
        out = np.array(operand)
        moved = np.moveaxis(out, axes, range(k))  # a view: writes land in `out`
        sizes = moved.shape[:k]
        batch = updates.shape[:updates.ndim - (operand.ndim - k)]
        idx = [np.broadcast_to(i, batch) for i in indices]
        if mode == "drop":
            ok = np.ones(batch, bool)
            for i, n in zip(idx, sizes):
                ok &= (i >= 0) & (i < n)
            if not ok.all():
                idx = [i[ok] for i in idx]
                updates = updates[ok]
        else:
            idx = [np.clip(i, 0, n - 1) for i, n in zip(idx, sizes)]
        if combine is None:
            moved[tuple(idx)] = updates
        else:
            combine.at(moved, tuple(idx), updates)
        return [out]
    return impl


def _scatter_prim(name, combine):
    return Primitive(name, impl=_scatter_impl(combine), abstract_eval=_scatter_abstract_eval(name))


scatter_p = _scatter_prim("scatter", None)
scatter_add_p = _scatter_prim("scatter-add", np.add)
scatter_mul_p = _scatter_prim("scatter-mul", np.multiply)
scatter_min_p = _scatter_prim("scatter-min", np.minimum)
scatter_max_p = _scatter_prim("scatter-max", np.maximum)
