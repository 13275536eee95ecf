"""sort: sort several operands together along one dimension by their first ``num_keys``
operands (lexicographically), NaNs last, as NumPy and JAX do::

    >>> [v.tolist() for v in sort_p.bind_all(np.array([3, 1, 2]), np.array([0, 1, 2]), dimension=0,
    ...                                  is_stable=True, num_keys=1)]
    [[1, 2, 3], [1, 2, 0]]
"""
from __future__ import annotations

import numpy as np

from ..core.trace import Primitive
from .structural import _check_axes


def _sort_abstract_eval(*operands, dimension, is_stable, num_keys):
    if not operands:
        raise TypeError("sort requires at least one operand")
    shape = operands[0].shape
    if any(o.shape != shape for o in operands):
        raise TypeError("sort requires operands of one shape, got "
                        + ", ".join(o.str_short() for o in operands))
    _check_axes("sort", (dimension,), len(shape), "dimension")
    if not 1 <= num_keys <= len(operands):
        raise ValueError(f"sort: num_keys={num_keys} must be between 1 and {len(operands)}")
    return list(operands)


def sort_permutation(keys, dimension):
    """Indices that sort ``keys`` (a list of arrays, most significant first) along a dim."""
    if len(keys) == 1:
        return np.argsort(keys[0], axis=dimension, kind="stable")
    moved = [np.moveaxis(k, dimension, -1) for k in keys]
    perm = np.lexsort(moved[::-1], axis=-1)
    return np.moveaxis(perm, -1, dimension)


def _sort_impl(*operands, dimension, is_stable, num_keys):
    if operands[0].ndim == 0:
        return list(operands)
    perm = sort_permutation(operands[:num_keys], dimension)
    return [np.take_along_axis(o, perm, axis=dimension) for o in operands]


sort_p = Primitive("sort", impl=_sort_impl, abstract_eval=_sort_abstract_eval)
sort_p.multiple_results = True


# ==== differentiation rules =======================================================================
from ..core.trace import get_aval  # noqa: E402
from ..transforms.autodiff.rules import Zero, is_zero, jvp_rules  # noqa: E402
from .indexing import gather_p  # noqa: E402
from .structural import iota_p  # noqa: E402


def take_permutation(x, perm, dimension):
    """``x`` reordered along ``dimension`` by the index array ``perm`` (take_along_axis)."""
    shape = get_aval(x).shape
    idx = [perm if d == dimension else iota_p.bind1(dtype=get_aval(perm).dtype, shape=shape,
                                                     dimension=d)
           for d in range(len(shape))]
    return gather_p.bind1(x, *idx, axes=tuple(range(len(shape))), mode="clip", fill_value=None)


def _sort_jvp(primals, tangents, *, dimension, is_stable, num_keys):
    shape = get_aval(primals[0]).shape
    iota = iota_p.bind1(dtype=np.dtype(np.int64), shape=shape, dimension=dimension)
    *outs, perm = sort_p.bind_all(*primals, iota, dimension=dimension, is_stable=is_stable,
                                  num_keys=num_keys)
    t_out = [Zero(get_aval(o)) if is_zero(t) else take_permutation(t, perm, dimension)
             for o, t in zip(outs, tangents)]
    return outs, t_out


jvp_rules[sort_p] = _sort_jvp


# ==== batching rules ==============================================================================
from ..transforms.batching import batching_rules, bdim_at_front  # noqa: E402


def _sort_batch(axis, vals, dims, *, dimension, is_stable, num_keys):
    xs = [bdim_at_front(x, d, axis.size) for x, d in zip(vals, dims)]
    outs = sort_p.bind_all(*xs, dimension=dimension + 1, is_stable=is_stable, num_keys=num_keys)
    return outs, [0] * len(outs)


batching_rules[sort_p] = _sort_batch
