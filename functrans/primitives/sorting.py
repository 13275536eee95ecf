"""sort: sort several operands together along one dimension by their first ``num_keys``
operands (lexicographically), NaNs last, as NumPy and JAX do::

    >>> [v.tolist() for v in sort_p.bind(np.array([3, 1, 2]), np.array([0, 1, 2]), dimension=0,
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
