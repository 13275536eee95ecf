"""The two LAPACK routines NumPy's ``np.linalg`` does not expose: ``?getrf`` (LU with partial
pivoting) and ``?trsm`` (triangular solve), called through ctypes from the library jit's
kernels call (``transforms/lowering/lapack.py``): NumPy's bundled OpenBLAS (its symbols carry
a ``scipy_`` prefix and a ``64_`` suffix for 64-bit integers) or jit's copy of it, or a system
LAPACK. Each matrix
is copied to Fortran order, so the routines see it as written.

    >>> lu, piv = getrf(np.array([[1.0, 2.0], [3.0, 4.0]]))
    >>> piv.tolist(), lu.tolist()
    ([1, 1], [[3.0, 4.0], [0.3333333333333333, 0.6666666666666667]])
"""
from __future__ import annotations

import ctypes

import numpy as np

from ..transforms.lowering.lapack import FOUND as _KERNELS_LAPACK


def _find():
    """(library, name pattern, integer type) of the LAPACK the kernels use, or None."""
    if _KERNELS_LAPACK is None:
        return None
    lib = _KERNELS_LAPACK
    return lib.handle, lib.pattern, ctypes.c_int64 if lib.ilp64 else ctypes.c_int32


_FOUND = _find()
AVAILABLE = _FOUND is not None


def _routine(name):
    if _FOUND is None:
        raise RuntimeError(f"functrans needs LAPACK's {name} for this operation, but found no "
                           "LAPACK library exporting it (NumPy's bundled OpenBLAS or a "
                           "system liblapack)")
    lib, pattern, int_t = _FOUND
    return getattr(lib, pattern.format(name + "_")), int_t


def _ptr(x):
    return x.ctypes.data_as(ctypes.c_void_p)


def getrf(a):
    """LU factorization of one matrix ``a`` (m, n): ``(lu, pivots)``, LAPACK's packed result
    with 0-based pivots (row i was swapped with row ``pivots[i]``)."""
    fn, int_t = _routine("dgetrf" if a.dtype == np.float64 else "sgetrf")
    m, n = a.shape
    lu = np.array(a, order="F", copy=True)
    k = min(m, n)
    ipiv = np.zeros(max(k, 1), dtype=np.int64 if int_t is ctypes.c_int64 else np.int32)
    info = int_t(0)
    if k:
        fn(ctypes.byref(int_t(m)), ctypes.byref(int_t(n)), _ptr(lu), ctypes.byref(int_t(max(m, 1))),
           _ptr(ipiv), ctypes.byref(info))
    # info > 0 reports an exactly zero pivot: the factorization is still complete (as LAPACK
    # documents), and solves with it give inf/nan as NumPy's would.
    return np.ascontiguousarray(lu), (ipiv[:k] - 1).astype(np.int32)


def trsm(a, b, *, left_side, lower, transpose_a, unit_diagonal):
    """``op(a)^-1 b`` (left_side) or ``b op(a)^-1`` for triangular ``a``; one matrix each."""
    fn, int_t = _routine("dtrsm" if a.dtype == np.float64 else "strsm")
    af = np.array(a, order="F", copy=True)
    x = np.array(b, order="F", copy=True)
    m, n = x.shape
    if m == 0 or n == 0:
        return np.ascontiguousarray(x)
    alpha = (ctypes.c_double if a.dtype == np.float64 else ctypes.c_float)(1.0)
    chars = [ctypes.c_char_p(c) for c in (b"L" if left_side else b"R", b"L" if lower else b"U",
                                          b"T" if transpose_a else b"N",
                                          b"U" if unit_diagonal else b"N")]
    ones = [ctypes.c_size_t(1)] * 4  # Fortran's hidden lengths of the character arguments
    fn(*chars, ctypes.byref(int_t(m)), ctypes.byref(int_t(n)), ctypes.byref(alpha), _ptr(af),
       ctypes.byref(int_t(max(af.shape[0], 1))), _ptr(x), ctypes.byref(int_t(max(m, 1))), *ones)
    return np.ascontiguousarray(x)
