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
