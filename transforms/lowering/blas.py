"""Matrix multiply for generated kernels: BLAS ``?gemm`` (from the OpenBLAS that NumPy ships,
possibly a private copy running faster kernels: see :mod:`.blas_library`), called by symbol
from Numba (cacheable), with a loop fallback when no BLAS is found; small products as loops.

    >>> a, b, c = np.ones((2, 3)), np.ones((3, 2)), np.empty((2, 2))
    >>> dgemm(a, b, c)   # c[:] = a @ b for C-contiguous float64 matrices, also inside @njit
    >>> c
    array([[3., 3.],
           [3., 3.]])
"""
from __future__ import annotations

import numba
import numpy as np
from numba import types

from . import blas_library

_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112


AVAILABLE = blas_library.JIT is not None
COMPLEX_AVAILABLE = AVAILABLE and blas_library.JIT.has_complex


def _external(dtype):
    i = types.int64 if blas_library.JIT.ilp64 else types.int32
    f = {"s": types.float32, "d": types.float64, "c": types.complex64,
         "z": types.complex128}[dtype]
    ptr = types.CPointer(f)
    scalar = ptr if dtype in "cz" else f  # complex ?gemm takes alpha and beta by pointer
    sig = types.void(types.intc, types.intc, types.intc, i, i, i, scalar, ptr, i, ptr, i, scalar,
                     ptr, i)
    return types.ExternalFunction(f"functrans_{dtype}gemm", sig)


@numba.njit(cache=True, error_model="numpy", fastmath={"contract", "reassoc"})
def _gemm_loops(a, b, c, ta=False, tb=False):
    """c = op(a) @ op(b) with plain loops (op transposes when ta/tb)."""
    m, n = c.shape
    k = a.shape[0] if ta else a.shape[1]
    for i in range(m):
        for j in range(n):
            c[i, j] = 0
        for p in range(k):
            aip = a[p, i] if ta else a[i, p]
            for j in range(n):
                c[i, j] += aip * (b[j, p] if tb else b[p, j])


if AVAILABLE:
    _sgemm, _dgemm = _external("s"), _external("d")

    @numba.njit(cache=True)
    def sgemm(a, b, c, ta=False, tb=False):
        """c = op(a) @ op(b) for float32 C-contiguous matrices (op transposes if ta/tb)."""
        m, n = c.shape
        k = a.shape[0] if ta else a.shape[1]
        if m == 0 or n == 0:
            return
        if k == 0:
            c[:] = 0
            return
        _sgemm(_ROW_MAJOR, _TRANS if ta else _NO_TRANS, _TRANS if tb else _NO_TRANS, m, n, k,
               np.float32(1), a.ctypes, a.shape[1], b.ctypes, b.shape[1], np.float32(0),
               c.ctypes, n)

    @numba.njit(cache=True)
    def dgemm(a, b, c, ta=False, tb=False):
        """c = op(a) @ op(b) for float64 C-contiguous matrices (op transposes if ta/tb)."""
        m, n = c.shape
        k = a.shape[0] if ta else a.shape[1]
        if m == 0 or n == 0:
            return
        if k == 0:
            c[:] = 0
            return
        _dgemm(_ROW_MAJOR, _TRANS if ta else _NO_TRANS, _TRANS if tb else _NO_TRANS, m, n, k,
               1.0, a.ctypes, a.shape[1], b.ctypes, b.shape[1], 0.0, c.ctypes, n)
else:  # no BLAS found: plain loops (vectorized inner loop)
    sgemm = dgemm = _gemm_loops

if COMPLEX_AVAILABLE:
    _cgemm, _zgemm = _external("c"), _external("z")

    @numba.njit(cache=True)
    def gemm_c64(a, b, c, ta=False, tb=False):
        """c = op(a) @ op(b) for complex64 C-contiguous matrices (op transposes, never
        conjugates)."""
        m, n = c.shape
        k = a.shape[0] if ta else a.shape[1]
        if m == 0 or n == 0:
            return
        if k == 0:
            c[:] = 0
            return
        ab = np.array([1, 0], dtype=np.complex64)  # alpha, beta
        _cgemm(_ROW_MAJOR, _TRANS if ta else _NO_TRANS, _TRANS if tb else _NO_TRANS, m, n, k,
               ab[0:].ctypes, a.ctypes, a.shape[1], b.ctypes, b.shape[1], ab[1:].ctypes,
               c.ctypes, n)

    @numba.njit(cache=True)
    def gemm_c128(a, b, c, ta=False, tb=False):
        """c = op(a) @ op(b) for complex128 C-contiguous matrices (op transposes, never
        conjugates)."""
        m, n = c.shape
        k = a.shape[0] if ta else a.shape[1]
        if m == 0 or n == 0:
            return
        if k == 0:
            c[:] = 0
            return
        ab = np.array([1, 0], dtype=np.complex128)
        _zgemm(_ROW_MAJOR, _TRANS if ta else _NO_TRANS, _TRANS if tb else _NO_TRANS, m, n, k,
               ab[0:].ctypes, a.ctypes, a.shape[1], b.ctypes, b.shape[1], ab[1:].ctypes,
               c.ctypes, n)
else:
    gemm_c64 = gemm_c128 = _gemm_loops

gemm_loops = _gemm_loops

# Small products (the matrix-vector steps and outer products of an RNN) as loops specialized
# to the operands' memory orders, so that the innermost loop always walks contiguous memory
# and vectorizes; ``a`` is stored (m, k) or, transposed, (k, m); ``b`` (k, n) or (n, k).
_FLAGS = dict(cache=True, error_model="numpy", fastmath={"contract", "reassoc"})


@numba.njit(**_FLAGS)
def _row_updates(a, b, c, ta, acc):
    """c = acc + op(a) @ b (acc: an array, or None for zero), each row of ``c`` a sum of rows
    of ``b`` (four at a time: fewer passes over the row of ``c``); ``a`` is read transposed
    when ``ta``. ``acc`` may be ``c`` itself."""
    m, n = c.shape
    k = b.shape[0]
    if k == 0:
        if acc is None:
            c[:] = 0
        else:
            c[:] = acc
        return
    for i in range(m):
        ci, b0 = c[i], b[0]
        x0 = a[0, i] if ta else a[i, 0]
        if acc is None:
            for j in range(n):
                ci[j] = x0 * b0[j]
        else:
            ai = acc[i]
            for j in range(n):
                ci[j] = ai[j] + x0 * b0[j]
        p = 1
        while p + 4 <= k:
            if ta:
                x0, x1, x2, x3 = a[p, i], a[p + 1, i], a[p + 2, i], a[p + 3, i]
            else:
                x0, x1, x2, x3 = a[i, p], a[i, p + 1], a[i, p + 2], a[i, p + 3]
            b0, b1, b2, b3 = b[p], b[p + 1], b[p + 2], b[p + 3]
            for j in range(n):
                ci[j] += x0 * b0[j] + x1 * b1[j] + x2 * b2[j] + x3 * b3[j]
            p += 4
        while p < k:
            x0 = a[p, i] if ta else a[i, p]
            b0 = b[p]
            for j in range(n):
                ci[j] += x0 * b0[j]
            p += 1


@numba.njit(**_FLAGS)
def small_nn(a, b, c, acc=None):
    """c = acc + a @ b for small C-contiguous matrices (acc None: zero)."""
    _row_updates(a, b, c, False, acc)


@numba.njit(**_FLAGS)
def small_nt(a, b, c, acc=None):
    """c = acc + a @ b.T: each element is a dot product of two contiguous rows."""
    m, n = c.shape
    for i in range(m):
        for j in range(n):
            s = c.dtype.type(0) if acc is None else acc[i, j]
            for p in range(a.shape[1]):
                s += a[i, p] * b[j, p]
            c[i, j] = s


@numba.njit(**_FLAGS)
def small_tn(a, b, c, acc=None):
    """c = acc + a.T @ b (``a`` stored (k, m))."""
    _row_updates(a, b, c, True, acc)


@numba.njit(**_FLAGS)
def small_tt(a, b, c, acc=None):
    """c = acc + a.T @ b.T, with ``b`` transposed once into rows."""
    _row_updates(a, np.ascontiguousarray(b.T), c, True, acc)


@numba.njit(**_FLAGS)
def small_outer(a, b, c, acc=None):
    """c = acc + a @ b for a column ``a`` (m, 1) and a row ``b`` (1, n): an outer product."""
    m, n = c.shape
    b0 = b[0]
    for i in range(m):
        x, ci = a[i, 0], c[i]
        if acc is None:
            for j in range(n):
                ci[j] = x * b0[j]
        else:
            ai = acc[i]
            for j in range(n):
                ci[j] = ai[j] + x * b0[j]


SMALL_KERNELS = {(False, False): "small_nn", (False, True): "small_nt",
                 (True, False): "small_tn", (True, True): "small_tt"}


def blas_threads():
    """The thread count of the OpenBLAS jit calls (None when it is not an OpenBLAS)."""
    return blas_library.JIT.threads() if AVAILABLE else None


def set_blas_threads(n: int) -> None:
    """Set OpenBLAS's thread count, process-wide, in the library jit calls and in NumPy's.
    (Its per-thread setter also slows the other threads' matrix products down afterwards, so
    shards do not use it.)"""
    # (Products cut on Numba's pool keep jit's copy on one thread.)
    libs = (blas_library.NUMPY,) if blas_library.split_products else \
        (blas_library.JIT, blas_library.SINGLE, blas_library.NUMPY)
    for lib in {id(x): x for x in libs if x}.values():
        lib.set_threads(n)
