"""Complex numbers in JAX's (and NumPy's) lexicographic order: real parts first, imaginary
parts on a tie. The implementations of max/min, their reductions and running extrema on
complex operands, computed as XLA computes them for JAX: ``max(x, y)`` is ``x if x > y else
y``, so a NaN in either part is not propagated (NumPy's ``maximum`` propagates it)::

    >>> maximum(np.array([1 + 2j, np.nan]), np.array([1 + 3j, 1]))
    array([1.+3.j, 1.+0.j])

The folds (reductions, running extrema) are Numba functions here, compiled on the first
complex fold and cached: the primitives' impls call them, and jit's kernels call the scalar
``cmax``/``cmin`` (as ``rt.cmax``, re-exported by ``transforms/lowering/runtime.py``), so eager
and compiled code compare alike.
"""
from __future__ import annotations

import numba
import numpy as np

_jit = numba.njit(cache=True, error_model="numpy", nogil=True)


def greater(x, y):
    """``x > y`` elementwise, lexicographically (a comparison with NaN is false)."""
    return np.where(x.real == y.real, x.imag > y.imag, x.real > y.real)


def less(x, y):
    """``x < y`` elementwise, lexicographically (a comparison with NaN is false)."""
    return np.where(x.real == y.real, x.imag < y.imag, x.real < y.real)


def maximum(x, y):
    """JAX's ``lax.max`` of complex arrays: ``x`` where it is greater, else ``y``."""
    return np.where(greater(x, y), x, y).astype(np.result_type(x, y))


def minimum(x, y):
    """JAX's ``lax.min`` of complex arrays: ``x`` where it is less, else ``y``."""
    return np.where(less(x, y), x, y).astype(np.result_type(x, y))


def identity(is_max: bool, dtype):
    """What reducing no elements gives, as in JAX: -inf (max) or +inf (min), imaginary 0."""
    return np.asarray(complex(-np.inf if is_max else np.inf, 0), dtype)[()]


@_jit
def cmax(x, y):
    """The larger of two complex numbers in JAX's lexicographic order (real parts, then
    imaginary parts): ``x`` if it compares greater, else ``y``. A comparison with NaN is
    false, so a NaN is not propagated: ``y`` is returned (XLA's select, as JAX computes it)."""
    if x.real == y.real:
        return x if x.imag > y.imag else y
    return x if x.real > y.real else y


@_jit
def cmin(x, y):
    """The smaller of two complex numbers in JAX's lexicographic order (see ``cmax``)."""
    if x.real == y.real:
        return x if x.imag < y.imag else y
    return x if x.real < y.real else y


@_jit
def cextremum_rows(x, is_max, init, out, cumulative):
    """Fold each row of the complex 2-D ``x`` with cmax (or cmin) from ``init``, in order:
    ``out[r]`` is the result (or ``out[r, j]`` the running one, if ``cumulative``). With
    NaNs the result depends on that order; it is XLA's on CPU for rows of up to 32."""
    for r in range(x.shape[0]):
        acc = init
        for j in range(x.shape[1]):
            acc = cmax(acc, x[r, j]) if is_max else cmin(acc, x[r, j])
            if cumulative:
                out[r, j] = acc
        if not cumulative:
            out[r, 0] = acc


def reduce(x, axes, is_max: bool):
    """JAX's ``reduce_max``/``reduce_min`` of a complex array over ``axes``: each output is
    the fold of its elements (in row-major order) with max/min, from :func:`identity`."""
    kept = [d for d in range(x.ndim) if d not in axes]
    out_shape = tuple(x.shape[d] for d in kept)
    n = int(np.prod([x.shape[d] for d in axes], dtype=np.int64))
    m = int(np.prod(out_shape, dtype=np.int64))
    rows = np.ascontiguousarray(np.transpose(x, kept + list(axes))).reshape(m, n)
    out = np.empty((rows.shape[0], 1), x.dtype)
    cextremum_rows(rows, is_max, identity(is_max, x.dtype), out, False)
    return out.reshape(out_shape)


def accumulate(x, axis, reverse, is_max: bool):
    """JAX's ``cummax``/``cummin`` of a complex array along ``axis``: the running fold from
    :func:`identity` (the first output is ``max(identity, x[0])``, as in JAX)."""
    moved = np.moveaxis(np.flip(x, axis) if reverse else x, axis, -1)
    rows = np.ascontiguousarray(moved).reshape(-1, moved.shape[-1]) if moved.size else moved
    out = np.empty_like(rows)
    if moved.size:
        cextremum_rows(rows, is_max, identity(is_max, x.dtype), out, True)
    out = np.moveaxis(out.reshape(moved.shape), -1, axis)
    return np.flip(out, axis) if reverse else out
