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
from ..core.shape_poly import broadcast_shapes
from ..core.trace import Primitive


def _index_shape(name, operand, indices, axes):
    if len(indices) != len(axes):
        raise TypeError(f"{name}: got {len(indices)} index arrays for axes {axes}")
    if len(set(axes)) != len(axes) or any(not 0 <= a < operand.ndim for a in axes):
        raise ValueError(f"{name}: axes {axes} must be distinct axes of {operand.str_short()}")
    for i in indices:
        if dtypes.kind(i.dtype) not in "iu":
            raise TypeError(f"{name}: indices must be integer arrays, got {i.str_short()}")
    try:
        batch = broadcast_shapes(*[i.shape for i in indices])
    except ValueError:
        raise TypeError(f"{name}: index arrays of shapes "
                        f"{', '.join(str(i.shape) for i in indices)} do not broadcast together"
                        ) from None
    rest = tuple(d for k, d in enumerate(operand.shape) if k not in axes)
    return batch + rest


def _default_fill(dtype):
    if dtypes.kind(dtype) == "f":
        return np.nan
    if dtypes.kind(dtype) == "b":
        return True
    info = np.iinfo(dtype)
    return info.min if dtypes.kind(dtype) == "i" else info.max


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


# ==== differentiation rules =======================================================================
from ..core.trace import get_aval  # noqa: E402
from ..transforms.autodiff.rules import (Zero, deflinear_in, instantiate,  # noqa: E402
                                         is_undefined, is_zero, jvp_rules)
from . import elementwise as E  # noqa: E402
from . import structural as S  # noqa: E402


def _gather_transpose(cts, operand, *indices, axes, mode, fill_value):
    ct = cts[0]
    nones = [None] * len(indices)
    if is_zero(ct):
        return [Zero(operand.aval)] + nones
    zeros = instantiate(Zero(operand.aval))
    scatter_mode = "clip" if mode == "clip" else "drop"
    return [scatter_add_p.bind1(zeros, ct, *indices, axes=axes, mode=scatter_mode)] + nones


deflinear_in(gather_p, (0,), _gather_transpose)


def _read(x, indices, axes, mode, fill=0):
    g_mode = "clip" if mode == "clip" else "fill"
    return gather_p.bind1(x, *indices, axes=axes, mode=g_mode,
                          fill_value=fill if g_mode == "fill" else None)


def _scatter_add_transpose(cts, operand, updates, *indices, axes, mode):
    ct = cts[0]
    nones = [None] * len(indices)
    upd_aval = updates.aval if is_undefined(updates) else get_aval(updates)
    if is_zero(ct):
        return [Zero(operand.aval) if is_undefined(operand) else None,
                Zero(upd_aval) if is_undefined(updates) else None] + nones
    return [ct if is_undefined(operand) else None,
            _read(ct, indices, axes, mode) if is_undefined(updates) else None] + nones


deflinear_in(scatter_add_p, (0, 1), _scatter_add_transpose)


def _last_writer_mask(operand_shape, updates_shape, indices, axes, mode):
    """True for the update rows whose write survives (the last writer of each position)."""
    n_rest = len(operand_shape) - len(axes)
    batch = updates_shape[:len(updates_shape) - n_rest]
    count = int(np.prod(batch)) if batch else 1
    # int32 ids: an int64 constant is narrowed to int32 when 64-bit values are off (JAX's
    # default), an int64 iota is not, and scatter needs one dtype.
    ids = S.reshape_p.bind1(S.iota_p.bind1(dtype=np.dtype(np.int32), shape=(count,), dimension=0),
                            new_sizes=batch)
    ids = S.broadcast_in_dim_p.bind1(ids, shape=tuple(updates_shape),
                                     broadcast_dimensions=tuple(range(len(batch))))
    start = S.broadcast_in_dim_p.bind1(np.asarray(-1, np.int32)[()], shape=tuple(operand_shape),
                                       broadcast_dimensions=())
    owner = scatter_p.bind1(start, ids, *indices, axes=axes, mode=mode)
    read = _read(owner, indices, axes, mode, fill=-2)
    return E.eq_p.bind1(read, ids)


def _scatter_transpose(cts, operand, updates, *indices, axes, mode):
    ct = cts[0]
    nones = [None] * len(indices)
    upd_aval = updates.aval if is_undefined(updates) else get_aval(updates)
    if is_zero(ct):
        return [Zero(operand.aval) if is_undefined(operand) else None,
                Zero(upd_aval) if is_undefined(updates) else None] + nones
    ct_op = ct_upd = None
    if is_undefined(operand):
        ct_op = scatter_p.bind1(ct, instantiate(Zero(upd_aval)), *indices, axes=axes, mode=mode)
    if is_undefined(updates):
        mask = _last_writer_mask(get_aval(ct).shape, upd_aval.shape, indices, axes, mode)
        ct_upd = E.select_n_p.bind1(mask, instantiate(Zero(upd_aval)),
                                    _read(ct, indices, axes, mode))
    return [ct_op, ct_upd] + nones


deflinear_in(scatter_p, (0, 1), _scatter_transpose)


def _scatter_mul_jvp(primals, tangents, *, axes, mode):
    # d(op * prod_k u_k) with exclusive products from zero counts, so zeros are exact.
    op, upd, *idx = primals
    t_op, t_upd = tangents[0], tangents[1]
    out = scatter_mul_p.bind1(op, upd, *idx, axes=axes, mode=mode)
    dtype = get_aval(op).dtype
    t_out = Zero(get_aval(out))
    if not is_zero(t_op):
        t_out = scatter_mul_p.bind1(t_op, upd, *idx, axes=axes, mode=mode)
    if not is_zero(t_upd):
        zero = np.zeros((), dtype)[()]
        one = np.ones((), dtype)[()]
        is_z = E.eq_p.bind1(upd, zero)
        z_count = scatter_add_p.bind1(instantiate(Zero(get_aval(op))),
                                      E.convert_element_type_p.bind1(is_z, new_dtype=dtype,
                                                                     weak_type=False),
                                      *idx, axes=axes, mode=mode)
        nz_upd = E.select_n_p.bind1(is_z, upd, one)
        ones = S.broadcast_in_dim_p.bind1(one, shape=get_aval(op).shape, broadcast_dimensions=())
        nz_prod = scatter_mul_p.bind1(ones, nz_upd, *idx, axes=axes, mode=mode)
        zk = _read(z_count, idx, axes, "clip")
        pk = _read(nz_prod, idx, axes, "clip")
        opk = _read(op, idx, axes, "clip")
        others = E.select_n_p.bind1(
            is_z,
            E.select_n_p.bind1(E.eq_p.bind1(zk, zero), zero, E.div_p.bind1(pk, nz_upd)),
            E.select_n_p.bind1(E.eq_p.bind1(zk, one), zero, pk))
        contrib = E.mul_p.bind1(E.mul_p.bind1(opk, others), t_upd)
        part = scatter_add_p.bind1(instantiate(Zero(get_aval(op))), contrib, *idx, axes=axes,
                                   mode=mode)
        t_out = part if is_zero(t_out) else E.add_any_p.bind1(t_out, part)
    return [out], [t_out]


def _scatter_extremum_jvp(prim):
    # The tangent of each output is the mean tangent of the candidates achieving it.
    def rule(primals, tangents, *, axes, mode):
        op, upd, *idx = primals
        out = prim.bind1(op, upd, *idx, axes=axes, mode=mode)
        dtype = get_aval(op).dtype
        t_op, t_upd = instantiate(tangents[0]), instantiate(tangents[1])
        cvt = lambda b: E.convert_element_type_p.bind1(b, new_dtype=dtype,  # noqa: E731
                                                       weak_type=False)
        op_win = cvt(E.eq_p.bind1(op, out))
        upd_win = cvt(E.eq_p.bind1(upd, _read(out, idx, axes, "clip")))
        zeros = instantiate(Zero(get_aval(op)))
        count = E.add_p.bind1(op_win, scatter_add_p.bind1(zeros, upd_win, *idx, axes=axes,
                                                          mode=mode))
        total = E.add_p.bind1(E.mul_p.bind1(t_op, op_win), scatter_add_p.bind1(
            zeros, E.mul_p.bind1(t_upd, upd_win), *idx, axes=axes, mode=mode))
        return [out], [E.div_p.bind1(total, count)]
    return rule


def _scatter_mul_transpose(cts, operand, updates, *indices, axes, mode):
    # Linear in the operand only (each position is scaled by the product of its updates).
    if is_undefined(updates):
        raise TypeError("scatter-mul is not linear in its updates")
    ct = cts[0]
    nones = [None] * len(indices)
    if is_zero(ct):
        return [Zero(operand.aval), None] + nones
    return [scatter_mul_p.bind1(ct, updates, *indices, axes=axes, mode=mode), None] + nones


jvp_rules[scatter_mul_p] = _scatter_mul_jvp
from ..transforms.autodiff.rules import transpose_rules  # noqa: E402

transpose_rules[scatter_mul_p] = _scatter_mul_transpose
jvp_rules[scatter_min_p] = _scatter_extremum_jvp(scatter_min_p)
jvp_rules[scatter_max_p] = _scatter_extremum_jvp(scatter_max_p)


# ==== batching rules ==============================================================================
from ..transforms.batching import batching_rules, bdim_at_front, moveaxis  # noqa: E402


def _batched_indices(axis, indices, dims):
    """Index arrays with the batch as a new leading broadcast dim: (B or 1, *index shape)."""
    shapes = [get_aval(i).shape if d is None else
              get_aval(i).shape[:d] + get_aval(i).shape[d + 1:] for i, d in zip(indices, dims)]
    rank = max((len(s) for s in shapes), default=0)
    out = []
    for i, d, s in zip(indices, dims, shapes):
        full = (1,) * (rank - len(s)) + s
        if d is None:
            out.append(S.reshape_p.bind1(i, new_sizes=(1,) + full))
        else:
            i = moveaxis(i, d, 0)
            out.append(S.reshape_p.bind1(i, new_sizes=(axis.size,) + full)
                       if get_aval(i).shape != (axis.size,) + full else i)
    return out, rank


def _gather_batch(axis, vals, dims, *, axes, mode, fill_value):
    x, *indices = vals
    dx, *didx = dims
    if all(d is None for d in didx):
        x = moveaxis(x, dx, 0)
        n_batch = len(broadcast_shapes(*[get_aval(i).shape for i in indices])) \
            if indices else 0
        out = gather_p.bind1(x, *indices, axes=tuple(a + 1 for a in axes), mode=mode,
                             fill_value=fill_value)
        return [out], [n_batch]
    idx, rank = _batched_indices(axis, indices, didx)
    if dx is None:
        return [gather_p.bind1(x, *idx, axes=axes, mode=mode, fill_value=fill_value)], [0]
    x = moveaxis(x, dx, 0)
    bidx = S.iota_p.bind1(dtype=np.dtype(np.int64), shape=(axis.size,) + (1,) * rank,
                          dimension=0)
    out = gather_p.bind1(x, bidx, *idx, axes=(0,) + tuple(a + 1 for a in axes), mode=mode,
                         fill_value=fill_value)
    return [out], [0]


def _scatter_batch(prim):
    def rule(axis, vals, dims, *, axes, mode):
        x, upd, *indices = vals
        dx, du, *didx = dims
        x = bdim_at_front(x, dx, axis.size)
        idx, rank = _batched_indices(axis, indices, didx)
        bidx = S.iota_p.bind1(dtype=np.dtype(np.int64), shape=(axis.size,) + (1,) * rank,
                              dimension=0)
        # Updates already have the batched index shape: (B, *index shape, *window dims).
        upd = bdim_at_front(upd, du, axis.size)
        out = prim.bind1(x, upd, bidx, *idx, axes=(0,) + tuple(a + 1 for a in axes), mode=mode)
        return [out], [0]
    return rule


batching_rules[gather_p] = _gather_batch
for _p in (scatter_p, scatter_add_p, scatter_mul_p, scatter_min_p, scatter_max_p):
    batching_rules[_p] = _scatter_batch(_p)
