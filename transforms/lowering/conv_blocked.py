"""2-D convolutions cut into blocks of images on Numba's pool: each block's im2col (or
products) matrix is built and multiplied while it is in the core's cache, by one-thread BLAS
calls on the pool that jit's loops and products use (``native/blas_split.py``).

The unblocked drivers (``conv_drivers.py``) write the whole im2col matrix, the input times
the window's size, before one product reads it back: for a small CNN's 3x3 convolution of
32x14x14x16 values that is 3.6 MB, out of every cache, and its copy ran on one thread. Cut
per block of images (``BLOCK_BYTES`` of matrix), the copy and the product share the cores
and the matrix stays in L2. Measured on a 2-core AMD EPYC (flax's CNN in
benchmarks/bench_ecosystem.py): the step's convolutions took 4.7 ms of its 6.5.

A block's sums are the same products as the whole matrix's rows, so the results are those
of the unblocked drivers up to BLAS's choice of kernel; the weight gradient's sums over the
batch are split per thread, then added (a different order of additions).

    >>> x, w = np.ones((4, 3, 3, 4), np.float32), np.ones((2, 9 * 4), np.float32)
    >>> if usable():  # 2 images a block; the centre pixel sums 9 * 4 ones
    ...     assert conv2_im2col(x, w, 3, 3, 1, 1, 1, 1, 3, 3, 2)[4].tolist() == [36, 36]
"""
from __future__ import annotations

import numba
import numpy as np
from numba import prange, types
from numba.extending import overload

from . import blas_library
from .runtime import col2im2, im2col2

__all__ = ["BLOCK_BYTES", "conv2_im2col", "conv2_products_first", "conv2_weight_gradient",
           "images_per_block", "usable"]

BLOCK_BYTES = 1 << 18  # a block's matrix: about half this machine class's L2 per core


def usable() -> bool:
    """Whether the blocked drivers may run: jit's BLAS is its own one-thread copy with the
    products' wrappers installed (so the raw ``?gemm`` is safe to call from pool threads)."""
    return blas_library.split_products


def images_per_block(n: int, rows_per_image: int, width: int, itemsize: int) -> int:
    """Images per block: as many as fit ``BLOCK_BYTES`` of a ``width``-wide matrix, at least
    one, and few enough that every thread of the pool gets blocks.

        >>> images_per_block(32, 196, 144, 4)
        2
    """
    per = max(1, BLOCK_BYTES // max(1, rows_per_image * width * itemsize))
    return max(1, min(per, -(-n // (2 * numba.get_num_threads()))))


def _raw(dtype):
    i = types.int64 if blas_library.JIT.ilp64 else types.int32
    f = types.float32 if dtype == "s" else types.float64
    ptr = types.CPointer(f)
    sig = types.void(types.intc, types.intc, types.intc, i, i, i, f, ptr, i, ptr, i, f, ptr, i)
    return types.ExternalFunction(f"functrans_{dtype}gemm_blas", sig)


if blas_library.JIT is not None:
    _sgemm_raw, _dgemm_raw = _raw("s"), _raw("d")
_pjit = numba.njit(cache=True, error_model="numpy", nogil=True, parallel=True)


def _gemm(a, b, c, ta, tb, accumulate):
    """``c = op(a) @ op(b)`` (``+ c`` when ``accumulate``) on the calling thread, for
    C-contiguous matrices (compiled only: see the overload)."""
    raise NotImplementedError


@overload(_gemm)
def _gemm_typed(a, b, c, ta, tb, accumulate):
    routine = _sgemm_raw if c.dtype == types.float32 else _dgemm_raw
    real = np.float32 if c.dtype == types.float32 else np.float64

    def impl(a, b, c, ta, tb, accumulate):
        m, n = c.shape
        k = a.shape[0] if ta else a.shape[1]
        if m == 0 or n == 0:
            return
        if k == 0:
            if not accumulate:
                c[:] = 0
            return
        routine(101, 112 if ta else 111, 112 if tb else 111, m, n, k, real(1), a.ctypes,
                a.shape[1], b.ctypes, b.shape[1], real(1 if accumulate else 0), c.ctypes, n)
    return impl


@_pjit
def conv2_im2col(x, w, p0, p1, s0, s1, lo0, lo1, k0, k1, per):
    """``conv_drivers.conv2_im2col`` by blocks of ``per`` images: the (N * P0 * P1, O)
    products of ``x`` (N, S0, S1, C) with ``w`` (O, K0 * K1 * C). For every C: with the
    block in cache, ``im2col2``'s short runs beat the narrow driver's per-element copies
    (32x28x28x1 by 3x3x16: 0.27 ms against 0.73)."""
    n = x.shape[0]
    width = k0 * k1 * x.shape[3]
    rows = p0 * p1
    res = np.empty((n * rows, w.shape[0]), x.dtype)
    for blk in prange((n + per - 1) // per):
        i0 = blk * per
        i1 = min(n, i0 + per)
        cols = np.empty(((i1 - i0) * rows, width), x.dtype)
        im2col2(x[i0:i1], cols, (p0, p1), (s0, s1), (lo0, lo1), (k0, k1))
        _gemm(cols, w, res[i0 * rows:i1 * rows], False, True, False)
    return res


@_pjit
def conv2_products_first(x, wk, p0, p1, lo0, lo1, k0, k1, per):
    """``conv_drivers.conv2_products_first`` by blocks of ``per`` images (a window never
    reaches across images, so each block's sums need only its own products)."""
    n, s0, s1, c = x.shape
    o = wk.shape[1] // (k0 * k1)
    res = np.empty((n * p0 * p1, o), x.dtype)
    flat = x.reshape((n * s0 * s1, c))
    for blk in prange((n + per - 1) // per):
        i0 = blk * per
        i1 = min(n, i0 + per)
        prods = np.empty(((i1 - i0) * s0 * s1, wk.shape[1]), x.dtype)
        _gemm(flat[i0 * s0 * s1:i1 * s0 * s1], wk, prods, False, False, False)
        col2im2(prods, res[i0 * p0 * p1:i1 * p0 * p1], (s0, s1), (p0, p1), (lo0, lo1),
                (k0, k1))
    return res


@_pjit
def conv2_weight_gradient(lhs, rhs, p0, p1, lo0, lo1, per, parts):
    """``conv_drivers.conv2_weight_gradient`` with the sum over ``lhs``'s first dimension
    (the batch of the convolution it differentiates) cut in ``parts``, blocks of ``per``
    images each: each part adds its blocks' products into its own (P0 * P1 * B, O) sum,
    then the sums are added."""
    f, _, _, b = lhs.shape
    _, k0, k1, o = rhs.shape
    width = p0 * p1 * b
    blocks = (f + per - 1) // per
    sums = np.empty((parts, width, o), lhs.dtype)
    flat = rhs.reshape((f * k0 * k1, o))
    for t in prange(parts):
        first = True
        for blk in range(t, blocks, parts):
            i0 = blk * per
            i1 = min(f, i0 + per)
            cols = np.empty(((i1 - i0) * k0 * k1, width), lhs.dtype)
            im2col2(lhs[i0:i1], cols, (k0, k1), (1, 1), (lo0, lo1), (p0, p1))
            _gemm(cols, flat[i0 * k0 * k1:i1 * k0 * k1], sums[t], True, False, not first)
            first = False
    res = sums[0].copy()
    for t in range(1, parts):
        res += sums[t]
    return res
