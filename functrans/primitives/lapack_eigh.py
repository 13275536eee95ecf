"""Symmetric/Hermitian eigendecomposition by LAPACK's divide and conquer (``?syevd`` /
``?heevd``), called through ctypes from the library :mod:`functrans.primitives.lapack` uses,
on the Fortran layout of each matrix and with LAPACK's minimal workspaces, as JAX's CPU kernel
calls them. ``np.linalg.eigh`` reaches the same routines by another path and returns other
signs for some eigenvectors; programs that sample along eigenvectors (CMA-ES) then diverge
from JAX with the same keys.

    >>> w, v = eigh(np.array([[2.0, 1.0], [1.0, 2.0]]), lower=True)
    >>> w.tolist()
    [1.0, 3.0]
"""
from __future__ import annotations

import ctypes

import numpy as np

from . import lapack

__all__ = ["available", "eigh"]

_PREFIX = {np.dtype(np.float32): "s", np.dtype(np.float64): "d",
           np.dtype(np.complex64): "c", np.dtype(np.complex128): "z"}


def available() -> bool:
    """Whether a LAPACK library was found (else callers use ``np.linalg.eigh``).

        >>> isinstance(available(), bool)
        True
    """
    return lapack.in_kernels()


def _one(a, lower, fn, int_t):
    n = a.shape[0]
    v = np.array(a, order="F", copy=True)
    real = np.empty(0, a.dtype).real.dtype
    w = np.zeros(n, real)
    if n == 0:
        return w, np.ascontiguousarray(v)
    int_np = np.int64 if int_t is ctypes.c_int64 else np.int32
    liwork = 3 + 5 * n
    iwork = np.zeros(liwork, int_np)
    info = int_t(0)
    chars = [ctypes.c_char_p(b"V"), ctypes.c_char_p(b"L" if lower else b"U")]
    dims = [ctypes.byref(int_t(n)), lapack._ptr(v), ctypes.byref(int_t(n)), lapack._ptr(w)]
    lens = [ctypes.c_size_t(1)] * 2  # Fortran's hidden lengths of the character arguments
    if a.dtype.kind == "c":
        lwork, lrwork = 2 * n + n * n, 1 + 5 * n + 2 * n * n
        work, rwork = np.zeros(lwork, a.dtype), np.zeros(lrwork, real)
        fn(*chars, *dims, lapack._ptr(work), ctypes.byref(int_t(lwork)), lapack._ptr(rwork),
           ctypes.byref(int_t(lrwork)), lapack._ptr(iwork), ctypes.byref(int_t(liwork)),
           ctypes.byref(info), *lens)
    else:
        lwork = 1 + 6 * n + 2 * n * n
        work = np.zeros(lwork, a.dtype)
        fn(*chars, *dims, lapack._ptr(work), ctypes.byref(int_t(lwork)), lapack._ptr(iwork),
           ctypes.byref(int_t(liwork)), ctypes.byref(info), *lens)
    if info.value != 0:  # no convergence (NaN input): NaN results, as JAX's kernel gives
        w[:] = np.nan
        v[:] = np.nan
    return w, np.ascontiguousarray(v)


def eigh(a, lower: bool):
    """``(w, v)`` of the batch ``a`` (..., n, n): ascending eigenvalues and the eigenvectors
    as columns, reading the lower (or upper) triangle; NaN where LAPACK does not converge.

        >>> w, v = eigh(np.diag([3.0, 1.0]).astype(np.float32), lower=False)
        >>> w.tolist(), np.abs(v).tolist()
        ([1.0, 3.0], [[0.0, 1.0], [1.0, 0.0]])
    """
    dtype = np.dtype(a.dtype)
    if dtype not in _PREFIX:
        raise TypeError(f"eigh: LAPACK has no eigendecomposition for {dtype}")
    fn, int_t = lapack._routine(_PREFIX[dtype] + ("heevd" if dtype.kind == "c" else "syevd"))
    batch, n = a.shape[:-2], a.shape[-1]
    flat = a.reshape((int(np.prod(batch)), n, n))
    pairs = [_one(m, lower, fn, int_t) for m in flat]
    real = np.empty(0, dtype).real.dtype
    w = np.stack([p[0] for p in pairs]) if pairs else np.zeros((0, n), real)
    v = np.stack([p[1] for p in pairs]) if pairs else np.zeros((0, n, n), dtype)
    return w.reshape(batch + (n,)), v.reshape(batch + (n, n))
