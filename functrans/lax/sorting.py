"""lax's sorting functions with JAX's names: ``sort``, ``sort_key_val``, ``top_k`` and
``approx_max_k``/``approx_min_k`` (computed exactly: a valid approximation at any recall).

    >>> lax.top_k(fnp.array([1, 5, 3]), 2)
    (Array([5, 3], dtype=int64), Array([1, 2], dtype=int32))
"""
from __future__ import annotations

import numpy as np

from .. import primitives as P
from ..core import dtypes
from ..core.trace import get_aval
from .ops import (_axis, bitwise_not, broadcasted_iota, full_like, neg, slice, sub)


def sort(operand, dimension=-1, is_stable=True, num_keys=1):
    """Sort one array, or a sequence of arrays by the first ``num_keys`` of them.

    >>> lax.sort(fnp.array([3, 1, 2]))
    Array([1, 2, 3], dtype=int64)
    """
    single = not isinstance(operand, (list, tuple))
    ops = [operand] if single else list(operand)
    ndim = get_aval(ops[0]).ndim
    outs = P.sort_p.bind_all(*ops, dimension=_axis(dimension, ndim), is_stable=bool(is_stable),
                             num_keys=int(num_keys))
    return outs[0] if single else tuple(outs)


def sort_key_val(keys, values, dimension=-1, is_stable=True):
    """Sort ``keys`` and permute ``values`` alongside; returns ``(keys, values)``.

    >>> lax.sort_key_val(fnp.array([3, 1, 2]), fnp.array([30, 10, 20]))
    (Array([1, 2, 3], dtype=int64), Array([10, 20, 30], dtype=int64))
    """
    return sort((keys, values), dimension, is_stable, 1)


def _extreme_k(operand, k, dim, largest):
    """The ``k`` largest (or smallest) entries along ``dim`` and their int32 indices, ties
    broken by index: one stable sort of (keys, values, indices), sliced."""
    aval = get_aval(operand)
    idx = broadcasted_iota(dtypes.int32, aval.shape, dim)
    keys = operand
    if largest:  # descending by value, ascending by index for ties
        kind = dtypes.kind(aval.dtype)
        keys = neg(operand) if kind == "f" else bitwise_not(operand) \
            if kind == "i" else sub(full_like(operand, np.iinfo(aval.dtype).max), operand)
    _, vals, inds = sort((keys, operand, idx), dim, True, 1)
    start = (0,) * aval.ndim
    limit = aval.shape[:dim] + (k,) + aval.shape[dim + 1:]
    return slice(vals, start, limit), slice(inds, start, limit)


def top_k(operand, k):
    """The ``k`` largest entries along the last axis and their indices (stable).

    >>> lax.top_k(fnp.array([1, 5, 3]), 2)
    (Array([5, 3], dtype=int64), Array([1, 2], dtype=int32))
    """
    aval = get_aval(operand)
    if dtypes.kind(aval.dtype) == "c":
        raise ValueError("top_k is not compatible with complex inputs (as in JAX)")
    n = aval.shape[-1]
    if not 0 <= k <= n:
        raise ValueError(f"top_k: k={k} must be between 0 and the last dimension ({n})")
    return _extreme_k(operand, k, aval.ndim - 1, True)


def _approx_k(operand, k, reduction_dimension, recall_target, largest, name):
    aval = get_aval(operand)
    if dtypes.kind(aval.dtype) == "c":
        raise ValueError(f"{name} is not compatible with complex inputs (as in JAX)")
    if aval.ndim == 0:
        raise ValueError(f"{name}: the operand must have at least one dimension")
    dim = _axis(reduction_dimension, aval.ndim)
    n = aval.shape[dim]
    if not 0 <= k <= n:
        raise ValueError(f"{name}: k={k} must be between 0 and the reduction dimension ({n})")
    if not 0 < recall_target <= 1:
        raise ValueError(f"{name}: recall_target={recall_target} must be in (0, 1]")
    return _extreme_k(operand, k, dim, largest)


def approx_max_k(operand, k, reduction_dimension=-1, recall_target=0.95,
                 reduction_input_size_override=-1, aggregate_to_topk=True):
    """The ``k`` largest entries along ``reduction_dimension`` and their (int32) indices, as
    ``(values, indices)``. functrans computes them exactly (a valid approximation at any
    ``recall_target``), as ``top_k`` does, derivatives included; the approximation's tuning
    (``reduction_input_size_override``, ``aggregate_to_topk``) has nothing to change.

    >>> lax.approx_max_k(fnp.array([[1, 5, 3], [4, 2, 6]]), 1, reduction_dimension=0)
    (Array([[4, 5, 6]], dtype=int64), Array([[1, 0, 1]], dtype=int32))
    """
    return _approx_k(operand, k, reduction_dimension, recall_target, True, "approx_max_k")


def approx_min_k(operand, k, reduction_dimension=-1, recall_target=0.95,
                 reduction_input_size_override=-1, aggregate_to_topk=True):
    """The ``k`` smallest entries along ``reduction_dimension`` and their (int32) indices, as
    ``(values, indices)``, computed exactly (see ``approx_max_k``).

    >>> lax.approx_min_k(fnp.array([3.0, 1.0, 2.0]), 2)
    (Array([1., 2.], dtype=float64), Array([1, 2], dtype=int32))
    """
    return _approx_k(operand, k, reduction_dimension, recall_target, False, "approx_min_k")


__all__ = ["sort", "sort_key_val", "top_k", "approx_max_k", "approx_min_k"]
