"""Whole 2-D convolutions as compiled functions (cached on disk like every helper), one per
strategy, so a convolution run from the host (``conv_host.py``) costs one call: the im2col or
col2im copy and the product, with the sizes as plain integers.

    >>> x, w = np.ones((1, 3, 3, 4), np.float32), np.ones((2, 9 * 4), np.float32)
    >>> conv2_im2col(x, w, 3, 3, 1, 1, 1, 1, 3, 3)[4]   # the centre pixel: 9 * 4 ones
    array([36., 36.], dtype=float32)
"""
from __future__ import annotations

import numba
import numpy as np
from numba.core import types
from numba.extending import overload

from . import blas
from .runtime import col2im2, im2col2, im2col3

_jit = numba.njit(cache=True, error_model="numpy", nogil=True)


def _gemm(a, b, c, ta, tb):
    """``c = op(a) @ op(b)`` with the BLAS routine of c's dtype (chosen when compiling)."""
    (blas.sgemm if c.dtype == np.float32 else blas.dgemm)(a, b, c, ta, tb)


@overload(_gemm)
def _gemm_typed(a, b, c, ta, tb):
    routine = blas.sgemm if c.dtype == types.float32 else blas.dgemm
    return lambda a, b, c, ta, tb: routine(a, b, c, ta, tb)


@_jit
def conv2_im2col(x, w, p0, p1, s0, s1, lo0, lo1, k0, k1):
    """``x`` (N, S0, S1, C) with ``w`` (O, K0 * K1 * C): the (N * P0 * P1, O) products of
    the im2col matrix (strides s, padding lo) with ``w`` transposed."""
    n, c = x.shape[0], x.shape[3]
    cols = np.empty((n * p0 * p1, k0 * k1 * c), x.dtype)
    im2col2(x, cols, (p0, p1), (s0, s1), (lo0, lo1), (k0, k1))
    res = np.empty((n * p0 * p1, w.shape[0]), x.dtype)
    _gemm(cols, w, res, False, True)
    return res


@_jit
def conv2_im2col_narrow(x, w, p0, p1, s0, s1, lo0, lo1, k0, k1):
    """``conv2_im2col`` for inputs of fewer than 4 features, whose pixels are too short a
    run for ``im2col2``'s copies: ``im2col3``'s per-element copies into zeros."""
    n, h, wd, c = x.shape
    cols = np.zeros((1, 1, n * p0 * p1, k0 * k1 * c), x.dtype)
    im2col3(x.reshape((n, h, wd, 1, c)), cols, n, c, (p0, p1, 1), (s0, s1, 1), (lo0, lo1, 0),
            (1, 1, 1), (1, 1, 1), (k0, k1, 1))
    res = np.empty((n * p0 * p1, w.shape[0]), x.dtype)
    _gemm(cols[0, 0], w, res, False, True)
    return res


@_jit
def conv2_products_first(x, wk, p0, p1, lo0, lo1, k0, k1):
    """``x`` (N, S0, S1, C) with ``wk`` (C, K0 * K1 * O), stride 1: every pixel's products
    with every kernel offset, then each output position's sum over its window
    (N * P0 * P1, O)."""
    n, s0, s1, c = x.shape
    o = wk.shape[1] // (k0 * k1)
    prods = np.empty((n * s0 * s1, wk.shape[1]), x.dtype)
    _gemm(x.reshape((n * s0 * s1, c)), wk, prods, False, False)
    res = np.empty((n * p0 * p1, o), x.dtype)
    col2im2(prods, res, (s0, s1), (p0, p1), (lo0, lo1), (k0, k1))
    return res


@_jit
def conv2_weight_gradient(lhs, rhs, p0, p1, lo0, lo1):
    """``lhs`` (F, S0, S1, B) and ``rhs`` (F, K0, K1, O) (see
    ``window_ops._weight_gradient_form``): the (P0 * P1 * B, O) products of lhs's forward
    im2col, windows and outputs trading places, with rhs."""
    f, _, _, b = lhs.shape
    _, k0, k1, o = rhs.shape
    cols = np.empty((f * k0 * k1, p0 * p1 * b), lhs.dtype)
    im2col2(lhs, cols, (k0, k1), (1, 1), (lo0, lo1), (p0, p1))
    res = np.empty((p0 * p1 * b, o), lhs.dtype)
    _gemm(cols, rhs.reshape((f * k0 * k1, o)), res, True, False)
    return res
