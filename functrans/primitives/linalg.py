"""dot_general: contraction over given dimensions with batch dimensions (matmul, einsum, ...).

``dimension_numbers = ((lhs_contract, rhs_contract), (lhs_batch, rhs_batch))``; the result's
dims are batch dims, then lhs free dims, then rhs free dims, as in XLA::

    >>> dot_general_p.bind1(np.ones((2, 3)), np.ones((3, 4)), dimension_numbers=(((1,), (0,)), ((), ())),
    ...                     precision=None, preferred_element_type=None).shape
    (2, 4)
"""
from __future__ import annotations

import math

import numpy as np

from ..core import dtypes
from ..core.avals import ShapedArray
from ..core.trace import Primitive


def _free(ndim, contract, batch):
    return [d for d in range(ndim) if d not in contract and d not in batch]


def _dot_general_abstract_eval(lhs, rhs, *, dimension_numbers, precision,
                               preferred_element_type):
    (lc, rc), (lb, rb) = dimension_numbers
    name = "dot_general"
    for dims, x, side in ((lc + lb, lhs, "lhs"), (rc + rb, rhs, "rhs")):
        if len(set(dims)) != len(dims) or any(not 0 <= d < x.ndim for d in dims):
            raise ValueError(f"{name}: invalid {side} dimensions {dims} for {x.str_short()}")
    if len(lc) != len(rc) or len(lb) != len(rb):
        raise TypeError(f"{name}: contracting/batch dimension lists must pair up, got "
                        f"{dimension_numbers}")
    for a, b in zip(lc + lb, rc + rb):
        if lhs.shape[a] != rhs.shape[b]:
            raise TypeError(f"{name}: lhs dimension {a} (size {lhs.shape[a]}) does not match rhs "
                            f"dimension {b} (size {rhs.shape[b]}) for {lhs.str_short()} and "
                            f"{rhs.str_short()}")
    if lhs.dtype != rhs.dtype:
        raise TypeError(f"{name} requires operands of the same dtype, got {lhs.str_short()} and "
                        f"{rhs.str_short()}")
    out_dtype = lhs.dtype if preferred_element_type is None else np.dtype(preferred_element_type)
    dtypes.canonicalize_dtype(out_dtype, what="dot_general preferred_element_type")
    shape = ([lhs.shape[d] for d in lb] + [lhs.shape[d] for d in _free(lhs.ndim, lc, lb)]
             + [rhs.shape[d] for d in _free(rhs.ndim, rc, rb)])
    return [ShapedArray(shape, out_dtype, lhs.weak_type and rhs.weak_type)]


def dot_general_numpy(lhs, rhs, dimension_numbers, out_dtype):
    """Batched matmul through NumPy's BLAS: (batch, free, contract) @ (batch, contract, free)."""
    (lc, rc), (lb, rb) = dimension_numbers
    lf, rf = _free(lhs.ndim, lc, lb), _free(rhs.ndim, rc, rb)
    if lhs.dtype != out_dtype:
        lhs, rhs = lhs.astype(out_dtype), rhs.astype(out_dtype)
    b = [lhs.shape[d] for d in lb]
    m, k, n = (math.prod(lhs.shape[d] for d in lf), math.prod(lhs.shape[d] for d in lc),
               math.prod(rhs.shape[d] for d in rf))
    a = lhs.transpose(list(lb) + lf + list(lc)).reshape(b + [m, k])
    c = rhs.transpose(list(rb) + list(rc) + rf).reshape(b + [k, n])
    out = np.matmul(a, c)
    return out.reshape(b + [lhs.shape[d] for d in lf] + [rhs.shape[d] for d in rf])


def _dot_general_impl(lhs, rhs, *, dimension_numbers, precision, preferred_element_type):
    out_dtype = lhs.dtype if preferred_element_type is None else np.dtype(preferred_element_type)
    with np.errstate(all="ignore"):
        return [dot_general_numpy(lhs, rhs, dimension_numbers, out_dtype)]


dot_general_p = Primitive("dot_general", impl=_dot_general_impl,
                          abstract_eval=_dot_general_abstract_eval)


# ==== differentiation rules =======================================================================
from ..core.trace import get_aval  # noqa: E402
from ..transforms.autodiff.rules import (Zero, add_tangents, is_undefined, is_zero,  # noqa: E402
                                         jvp_rules, transpose_rules)
from .structural import transpose_p  # noqa: E402


def _dot_general_jvp(primals, tangents, *, dimension_numbers, precision,
                     preferred_element_type):
    lhs, rhs = primals
    t_l, t_r = tangents
    kw = dict(dimension_numbers=dimension_numbers, precision=precision,
              preferred_element_type=preferred_element_type)
    out = dot_general_p.bind1(lhs, rhs, **kw)
    t = Zero(get_aval(out))
    if not is_zero(t_l):
        t = add_tangents(t, dot_general_p.bind1(t_l, rhs, **kw))
    if not is_zero(t_r):
        t = add_tangents(t, dot_general_p.bind1(lhs, t_r, **kw))
    return [out], [t]


def _ranges(*lengths):
    start, out = 0, []
    for n in lengths:
        out.append(list(range(start, start + n)))
        start += n
    return out


def _transpose_lhs(ct, x_ndim, y, y_ndim, dimension_numbers, pet, swap_ans):
    """Cotangent of the lhs: contract ct with y over y's free dims, then permute into x's
    dimension order."""
    (x_contract, y_contract), (x_batch, y_batch) = dimension_numbers
    x_kept = _free(x_ndim, x_contract, x_batch)
    y_kept = _free(y_ndim, y_contract, y_batch)
    if swap_ans:
        ans_batch, ans_y, _ = _ranges(len(x_batch), len(y_kept), len(x_kept))
    else:
        ans_batch, _, ans_y = _ranges(len(x_batch), len(x_kept), len(y_kept))
    dims = ((tuple(ans_y), tuple(y_kept)), (tuple(ans_batch), tuple(y_batch)))
    order = np.argsort(y_contract) if y_contract else []
    x_contract_by_y = [x_contract[i] for i in order]
    out_axes = np.argsort(list(x_batch) + x_kept + x_contract_by_y)
    r = dot_general_p.bind1(ct, y, dimension_numbers=dims, precision=None,
                            preferred_element_type=pet)
    perm = tuple(int(i) for i in out_axes)
    return transpose_p.bind1(r, permutation=perm) if perm != tuple(range(len(perm))) else r


def _dot_general_transpose(cts, lhs, rhs, *, dimension_numbers, precision,
                           preferred_element_type):
    ct = cts[0]
    (lc, rc), (lb, rb) = dimension_numbers
    if is_undefined(lhs) and is_undefined(rhs):
        raise TypeError("dot_general is not linear in both operands at once")
    if is_undefined(lhs):
        if is_zero(ct):
            return [Zero(lhs.aval), None]
        pet = lhs.aval.dtype
        return [_transpose_lhs(ct, lhs.aval.ndim, rhs, get_aval(rhs).ndim, dimension_numbers,
                               pet, False), None]
    if is_zero(ct):
        return [None, Zero(rhs.aval)]
    swapped = ((rc, lc), (rb, lb))
    pet = rhs.aval.dtype
    return [None, _transpose_lhs(ct, rhs.aval.ndim, lhs, get_aval(lhs).ndim, swapped, pet,
                                 True)]


jvp_rules[dot_general_p] = _dot_general_jvp
transpose_rules[dot_general_p] = _dot_general_transpose


# ==== batching rules ==============================================================================
from ..transforms.batching import batching_rules, moveaxis  # noqa: E402


def _dot_general_batch(axis, vals, dims, *, dimension_numbers, precision,
                       preferred_element_type):
    (lhs, rhs), (dl, dr) = vals, dims
    (lc, rc), (lb, rb) = dimension_numbers
    kw = dict(precision=precision, preferred_element_type=preferred_element_type)
    shift = lambda ds: tuple(d + 1 for d in ds)  # noqa: E731
    if dl is not None and dr is not None:
        lhs, rhs = moveaxis(lhs, dl, 0), moveaxis(rhs, dr, 0)
        dn = ((shift(lc), shift(rc)), ((0,) + shift(lb), (0,) + shift(rb)))
        return [dot_general_p.bind1(lhs, rhs, dimension_numbers=dn, **kw)], [0]
    if dl is not None:  # the batch dim is a free lhs dim: first of them in the output
        lhs = moveaxis(lhs, dl, 0)
        dn = ((shift(lc), rc), (shift(lb), rb))
        return [dot_general_p.bind1(lhs, rhs, dimension_numbers=dn, **kw)], [len(lb)]
    rhs = moveaxis(rhs, dr, 0)
    dn = ((lc, shift(rc)), (lb, shift(rb)))
    n_lhs_free = get_aval(lhs).ndim - len(lc) - len(lb)
    return [dot_general_p.bind1(lhs, rhs, dimension_numbers=dn, **kw)], [len(lb) + n_lhs_free]


batching_rules[dot_general_p] = _dot_general_batch
