"""2-D convolutions cut into blocks of images run on all cores: each block's im2col (or
products) matrix is built and multiplied while it is in the core's cache, by one-thread BLAS
calls. Called from jit's native code, the blocks are units of the work pool jit's loops and
products use (``native/work_pool.py``); called from Python (the host path, eagerly), they
are a Numba ``prange`` loop.

The unblocked drivers (``conv_drivers.py``) write the whole im2col matrix, the input times
the window's size, before one product reads it back: for a small CNN's 3x3 convolution of
32x14x14x16 values that is 3.6 MB, out of every cache, and its copy ran on one thread. Cut
per block of images (``BLOCK_BYTES`` of matrix), the copy and the product share the cores
and the matrix stays in L2. Measured on a 2-core AMD EPYC (flax's CNN in
benchmarks/bench_ecosystem.py): the step's convolutions took 4.7 ms of its 6.5.

A block's sums are the same products as the whole matrix's rows, so the results are those
of the unblocked drivers up to BLAS's choice of kernel; the weight gradient's sums over the
batch are split per thread, then added (a different order of additions).

Each driver writes a result it is given, in channels-last layouts; jit's programs call them
from native code as ``numba_call`` kernels (``*_kernel``, ``jit/conv_calls.py``), the host
path (``conv_host.py``) from Python.

    >>> x, w = np.ones((4, 3, 3, 4), np.float32), np.ones((2, 3, 3, 4), np.float32)
    >>> res = np.empty((4, 3, 3, 2), np.float32)
    >>> if usable():  # "SAME": the centre pixel sums 9 * 4 ones
    ...     conv2_im2col(x, w, res, 1, 1, 1, 1)
    ...     assert res[0, 1, 1].tolist() == [36, 36]
"""
from __future__ import annotations

import threading

import numba
import numpy as np
from numba import carray, prange, types
from numba.extending import overload

from . import blas_library
from .runtime import col2im2, im2col2

__all__ = ["BLOCK_BYTES", "conv2_im2col", "conv2_products_first", "conv2_weight_gradient",
           "images_per_block", "usable", "im2col_kernel", "products_first_kernel",
           "weight_gradient_kernel", "c_entry"]

BLOCK_BYTES = 1 << 18  # a block's matrix: about half this machine class's L2 per core


def usable() -> bool:
    """Whether the blocked drivers may run: jit's BLAS is its own one-thread copy with the
    products' wrappers installed (so the raw ``?gemm`` is safe to call from pool threads)."""
    return blas_library.split_products


@numba.njit(cache=True, nogil=True)
def images_per_block(n: int, rows_per_image: int, width: int, itemsize: int,
                     threads: int) -> int:
    """Images per block: as many as fit ``BLOCK_BYTES`` of a ``width``-wide matrix, at least
    one, and few enough that each of ``threads`` gets blocks.

        >>> images_per_block(32, 196, 144, 4, 2)
        2
    """
    per = max(1, BLOCK_BYTES // max(1, rows_per_image * width * itemsize))
    return max(1, min(per, -(-n // (2 * threads))))


def _raw(dtype):
    i = types.int64 if blas_library.JIT.ilp64 else types.int32
    f = types.float32 if dtype == "s" else types.float64
    ptr = types.CPointer(f)
    sig = types.void(types.intc, types.intc, types.intc, i, i, i, f, ptr, i, ptr, i, f, ptr, i)
    return types.ExternalFunction(f"functrans_{dtype}gemm_blas", sig)


if blas_library.JIT is not None:
    _sgemm_raw, _dgemm_raw = _raw("s"), _raw("d")
# The calling thread's share of the pool, read when a driver runs (pmap's shards get theirs):
# the pool's own entry point, named, so the drivers stay cacheable on disk (Numba's
# ``get_num_threads`` is a pointer it cannot cache); typed as Numba's parallel loops declare it.
_threads = types.ExternalFunction("get_num_threads", types.intp())
_pjit = numba.njit(cache=True, error_model="numpy", nogil=True, parallel=True)
_inline = numba.njit(inline="always", error_model="numpy", nogil=True)


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
def conv2_im2col(x, w, res, s0, s1, lo0, lo1, per=0):
    """``res`` (N, P0, P1, O): the products of the windows of ``x`` (N, S0, S1, C) with ``w``
    (O, K0, K1, C), as ``conv_drivers.conv2_im2col`` computes them, by blocks of ``per``
    images (0: ``images_per_block``'s choice). For every C: with the block in cache,
    ``im2col2``'s short runs beat the narrow driver's per-element copies (32x28x28x1 by
    3x3x16: 0.27 ms against 0.73)."""
    _im2col(x, w, res, s0, s1, lo0, lo1, per)


@_pjit
def conv2_products_first(x, wk, res, lo0, lo1, per=0):
    """``res`` (N, P0, P1, O) of ``x`` (N, S0, S1, C) and ``wk`` (C, K0, K1, O) (stride 1),
    as ``conv_drivers.conv2_products_first`` computes it, by blocks of ``per`` images (a
    window never reaches across images, so each block's sums need only its own products)."""
    _products_first(x, wk, res, lo0, lo1, per)


@_pjit
def conv2_weight_gradient(lhs, rhs, res, lo0, lo1, per=0, parts=0):
    """``res`` (P0, P1, B, O): ``conv_drivers.conv2_weight_gradient`` of ``lhs`` (F, S0, S1,
    B) and ``rhs`` (F, K0, K1, O), with the sum over F (the batch of the convolution it
    differentiates) cut in ``parts`` (0: one per thread), blocks of ``per`` images each
    (0: ``images_per_block``'s choice): each part adds its blocks' products into its own
    (P0 * P1 * B, O) sum, then the sums are added."""
    _weight_gradient(lhs, rhs, res, lo0, lo1, per, parts)


# The drivers as numba_call kernels (jit/conv_calls.py): operands, then the result; the
# strides and paddings arrive as 0-d arrays, values the program passes at run time, so one
# compiled kernel serves every convolution of a dtype. Eagerly they run as these Numba
# functions; from native code, through the C entry points below.
@_pjit
def im2col_kernel(x, w, s0, s1, lo0, lo1, res):
    _im2col(x, w, res, s0[()], s1[()], lo0[()], lo1[()], 0)


@_pjit
def products_first_kernel(x, wk, lo0, lo1, res):
    _products_first(x, wk, res, lo0[()], lo1[()], 0)


@_pjit
def weight_gradient_kernel(lhs, rhs, lo0, lo1, res):
    _weight_gradient(lhs, rhs, res, lo0[()], lo1[()], 0, 0)


# The C entry points: each 4-d array as its data pointer and sizes, each 0-d value as a
# pointer, in the kernel's order (numba_call's native calling convention, less its status
# and exception slots). A program links to them by name, not to their code: the blocked
# drivers' IR would be optimized again in every program's kernel, seconds on a cold cache.
# Natively a driver runs in three steps (jit/conv_calls.py), one C entry point per strategy
# and dtype taking the step's number: ``PLAN`` writes the block size, the number of units
# (blocks, or the weight gradient's parts), the parts and the bytes of their sums; ``UNITS``
# runs a range of units, called by the work pool's threads (native/work_pool.py: a late
# thread's units run on the caller); ``FINISH`` adds the weight gradient's parts. (One entry
# point, not three: each loads from Numba's cache at a program's first compile.)
PLAN, UNITS, FINISH = 0, 1, 2


@numba.njit(inline="always")
def _arrays(x, x0, x1, x2, x3, w, w0, w1, w2, w3, r, r0, r1, r2, r3):
    return (carray(x, (x0, x1, x2, x3)), carray(w, (w0, w1, w2, w3)),
            carray(r, (r0, r1, r2, r3)))


def _im2col_c(x, x0, x1, x2, x3, w, w0, w1, w2, w3, s0, s1, lo0, lo1, r, r0, r1, r2, r3,
              step, per, parts, sums, start, count, plan):
    xa, wa, ra = _arrays(x, x0, x1, x2, x3, w, w0, w1, w2, w3, r, r0, r1, r2, r3)
    if step == PLAN:
        per, blocks = _im2col_plan(xa, wa, ra, 0)
        _write_plan(plan, per, blocks, 0, 0)
    elif step == UNITS:
        _im2col_units(xa, wa, ra, s0[0], s1[0], lo0[0], lo1[0], per, start, start + count)


def _products_first_c(x, x0, x1, x2, x3, w, w0, w1, w2, w3, lo0, lo1, r, r0, r1, r2, r3,
                      step, per, parts, sums, start, count, plan):
    xa, wa, ra = _arrays(x, x0, x1, x2, x3, w, w0, w1, w2, w3, r, r0, r1, r2, r3)
    if step == PLAN:
        per, blocks = _products_first_plan(xa, wa, 0)
        _write_plan(plan, per, blocks, 0, 0)
    elif step == UNITS:
        _products_first_units(xa, wa, ra, lo0[0], lo1[0], per, start, start + count)


def _weight_gradient_c(x, x0, x1, x2, x3, w, w0, w1, w2, w3, lo0, lo1, r, r0, r1, r2, r3,
                       step, per, parts, sums, start, count, plan):
    xa, wa, ra = _arrays(x, x0, x1, x2, x3, w, w0, w1, w2, w3, r, r0, r1, r2, r3)
    if step == PLAN:
        per, blocks, parts = _weight_gradient_plan(xa, wa, ra, 0, 0)
        _write_plan(plan, per, parts, parts, parts * r0 * r1 * r2 * r3 * xa.itemsize)
        return
    sa = carray(sums, (parts, r0 * r1 * r2, r3))
    if step == UNITS:
        _weight_gradient_units(xa, wa, ra, sa, lo0[0], lo1[0], per, start, start + count)
    else:
        _weight_gradient_finish(sa, ra)


_C_FUNCTIONS = {"im2col": (_im2col_c, 4), "products_first": (_products_first_c, 2),
                "weight_gradient": (_weight_gradient_c, 2)}
_c_entries: dict = {}  # (strategy, dtype name) -> the CFunc (kept alive: LLVM calls it)
_c_lock = threading.Lock()


def c_entry(strategy: str, dtype) -> str:
    """The symbol of ``strategy``'s C entry point for ``dtype`` (float32 or float64):
    ``(arrays and values..., step, per, parts, sums, start, count, plan)``, compiled (or
    loaded from Numba's disk cache) and registered with LLVM on first use in this process."""
    dt = np.dtype(dtype)
    symbol = f"functrans_conv_{strategy}_{dt.name}"
    with _c_lock:
        if (strategy, dt.name) not in _c_entries:
            from llvmlite import binding as llvm
            fn, scalars = _C_FUNCTIONS[strategy]
            data = types.CPointer(numba.from_dtype(dt))
            array = [data] + [types.int64] * 4
            i64 = types.int64
            sig = types.void(*array, *array, *[types.CPointer(i64)] * scalars, *array,
                             i64, i64, i64, data, i64, i64, types.CPointer(i64))
            entry = numba.cfunc(sig, cache=True, nogil=True, error_model="numpy")(fn)
            llvm.add_symbol(symbol, entry.address)
            _c_entries[(strategy, dt.name)] = entry
    return symbol


@numba.njit(inline="always")
def _write_plan(plan, per, units, parts, sums_bytes):
    plan[0], plan[1], plan[2], plan[3] = per, units, parts, sums_bytes


# The bodies, inlined into each caller. A driver is a plan, then its units (blocks of
# images; the weight gradient's parts), which the Numba drivers run as a parallel loop.
@_inline
def _im2col_plan(x, w, res, per):
    o, k0, k1, c = w.shape
    if per <= 0:
        per = images_per_block(x.shape[0], res.shape[1] * res.shape[2], k0 * k1 * c,
                               x.itemsize, _threads())
    return per, (x.shape[0] + per - 1) // per


@_inline
def _im2col_units(x, w, res, s0, s1, lo0, lo1, per, start, stop):
    n = x.shape[0]
    o, k0, k1, c = w.shape
    p0, p1 = res.shape[1], res.shape[2]
    width = k0 * k1 * c
    rows = p0 * p1
    w2 = w.reshape((o, width))
    out = res.reshape((n * rows, o))
    for blk in range(start, stop):
        i0 = blk * per
        i1 = min(n, i0 + per)
        cols = np.empty(((i1 - i0) * rows, width), x.dtype)
        im2col2(x[i0:i1], cols, (p0, p1), (s0, s1), (lo0, lo1), (k0, k1))
        _gemm(cols, w2, out[i0 * rows:i1 * rows], False, True, False)


@_inline
def _im2col(x, w, res, s0, s1, lo0, lo1, per):
    per, blocks = _im2col_plan(x, w, res, per)
    for blk in prange(blocks):
        _im2col_units(x, w, res, s0, s1, lo0, lo1, per, blk, blk + 1)


@_inline
def _products_first_plan(x, wk, per):
    n, s0, s1, c = x.shape
    _, k0, k1, o = wk.shape
    if per <= 0:
        per = images_per_block(n, s0 * s1, k0 * k1 * o, x.itemsize, _threads())
    return per, (n + per - 1) // per


@_inline
def _products_first_units(x, wk, res, lo0, lo1, per, start, stop):
    n, s0, s1, c = x.shape
    _, k0, k1, o = wk.shape
    p0, p1 = res.shape[1], res.shape[2]
    flat = x.reshape((n * s0 * s1, c))
    wk2 = wk.reshape((c, k0 * k1 * o))
    out = res.reshape((n * p0 * p1, o))
    for blk in range(start, stop):
        i0 = blk * per
        i1 = min(n, i0 + per)
        prods = np.empty(((i1 - i0) * s0 * s1, k0 * k1 * o), x.dtype)
        _gemm(flat[i0 * s0 * s1:i1 * s0 * s1], wk2, prods, False, False, False)
        col2im2(prods, out[i0 * p0 * p1:i1 * p0 * p1], (s0, s1), (p0, p1), (lo0, lo1),
                (k0, k1))


@_inline
def _products_first(x, wk, res, lo0, lo1, per):
    per, blocks = _products_first_plan(x, wk, per)
    for blk in prange(blocks):
        _products_first_units(x, wk, res, lo0, lo1, per, blk, blk + 1)


@_inline
def _weight_gradient_plan(lhs, rhs, res, per, parts):
    f, _, _, b = lhs.shape
    _, k0, k1, o = rhs.shape
    width = res.shape[0] * res.shape[1] * b
    if per <= 0:
        per = images_per_block(f, k0 * k1, width, lhs.itemsize, _threads())
    blocks = (f + per - 1) // per
    if parts <= 0:
        parts = min(_threads(), blocks)
    return per, blocks, parts


@_inline
def _weight_gradient_units(lhs, rhs, res, sums, lo0, lo1, per, start, stop):
    # Part t adds the products of blocks t, t + parts, ... into sums[t].
    f, _, _, b = lhs.shape
    _, k0, k1, o = rhs.shape
    p0, p1 = res.shape[0], res.shape[1]
    width = p0 * p1 * b
    blocks = (f + per - 1) // per
    parts = sums.shape[0]
    flat = rhs.reshape((f * k0 * k1, o))
    for t in range(start, stop):
        first = True
        for blk in range(t, blocks, parts):
            i0 = blk * per
            i1 = min(f, i0 + per)
            cols = np.empty(((i1 - i0) * k0 * k1, width), lhs.dtype)
            im2col2(lhs[i0:i1], cols, (k0, k1), (1, 1), (lo0, lo1), (p0, p1))
            _gemm(cols, flat[i0 * k0 * k1:i1 * k0 * k1], sums[t], True, False, not first)
            first = False
        if first:  # no block (an empty batch)
            sums[t][:] = 0


@_inline
def _weight_gradient_finish(sums, res):
    out = res.reshape((sums.shape[1], sums.shape[2]))
    if sums.shape[0] == 0:
        out[:] = 0
        return
    out[:] = sums[0]
    for t in range(1, sums.shape[0]):
        out += sums[t]


@_inline
def _weight_gradient(lhs, rhs, res, lo0, lo1, per, parts):
    per, blocks, parts = _weight_gradient_plan(lhs, rhs, res, per, parts)
    width = res.shape[0] * res.shape[1] * lhs.shape[3]
    sums = np.empty((parts, width, rhs.shape[3]), lhs.dtype)
    for t in prange(parts):
        _weight_gradient_units(lhs, rhs, res, sums, lo0, lo1, per, t, t + 1)
    _weight_gradient_finish(sums, res)
