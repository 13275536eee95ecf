"""The LAPACK routines NumPy's ``np.linalg`` does not expose: ``?getrf`` (LU with partial
pivoting), ``?trsm`` (triangular solve) and ``?gtsv`` (tridiagonal solve), in their real
(s, d) and complex (c, z) variants, called through ctypes from the library jit's
kernels call: NumPy's bundled OpenBLAS (its symbols carry a ``scipy_`` prefix and a ``64_``
suffix for 64-bit integers) or jit's copy of it, or a system LAPACK. Each matrix is copied to
Fortran order, so the routines see it as written.

Which library that is, and whether kernels call it at all, is the backend's to say
(``transforms/lowering/lapack.py`` finds it and calls :func:`install` at its import): the
primitives know no backend, and eager results match jit's by using the same library. Without
an in-kernel LAPACK, cholesky, triangular_solve and lu run as host steps under jit
(:func:`in_kernels`).

    >>> lu, piv = getrf(np.array([[1.0, 2.0], [3.0, 4.0]]))
    >>> piv.tolist(), lu.tolist()
    ([1, 1], [[3.0, 4.0], [0.3333333333333333, 0.6666666666666667]])
"""
from __future__ import annotations

import ctypes

import numpy as np

_FOUND = None  # (library handle, symbol name pattern, integer type), from install()


def install(handle, pattern: str, ilp64: bool) -> None:
    """Called by the backend whose kernels call LAPACK library ``handle`` (symbols
    ``pattern.format("dgetrf_")``, 64-bit integers if ``ilp64``): the eager routines use it."""
    global _FOUND
    _FOUND = handle, pattern, ctypes.c_int64 if ilp64 else ctypes.c_int32


def in_kernels() -> bool:
    """Whether jit's kernels call LAPACK themselves (cholesky, triangular_solve and lu are
    then no host steps)."""
    return _FOUND is not None


def _routine(name):
    if _FOUND is None:
        raise RuntimeError(f"functrans needs LAPACK's {name} for this operation, but found no "
                           "LAPACK library exporting it (NumPy's bundled OpenBLAS or a "
                           "system liblapack)")
    lib, pattern, int_t = _FOUND
    return getattr(lib, pattern.format(name + "_")), int_t


def _ptr(x):
    return x.ctypes.data_as(ctypes.c_void_p)


_PREFIX = {np.dtype(np.float32): "s", np.dtype(np.float64): "d",
           np.dtype(np.complex64): "c", np.dtype(np.complex128): "z"}


def _typed_routine(name, dtype):
    """LAPACK's ``name`` (without its type letter) for ``dtype``: s/d/c/z."""
    prefix = _PREFIX.get(np.dtype(dtype))
    if prefix is None:
        raise TypeError(f"LAPACK's ?{name} has no variant for {np.dtype(dtype)} (float32, "
                        "float64, complex64 and complex128 have one)")
    return _routine(prefix + name)


def getrf(a):
    """LU factorization of one matrix ``a`` (m, n): ``(lu, pivots)``, LAPACK's packed result
    with 0-based pivots (row i was swapped with row ``pivots[i]``)."""
    fn, int_t = _typed_routine("getrf", a.dtype)
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


def trsm(a, b, *, left_side, lower, transpose_a, unit_diagonal, conjugate_a=False):
    """``op(a)^-1 b`` (left_side) or ``b op(a)^-1`` for triangular ``a``; one matrix each.
    ``op`` transposes when ``transpose_a``, conjugating too when ``conjugate_a`` (LAPACK's
    'C'; ``conjugate_a`` without ``transpose_a`` is not one of its operations)."""
    if conjugate_a and not transpose_a:
        raise ValueError("trsm: conjugate_a needs transpose_a (LAPACK solves with a, a^T or "
                         "a^H)")
    fn, int_t = _typed_routine("trsm", a.dtype)
    af = np.array(a, order="F", copy=True)
    x = np.array(b, order="F", copy=True)
    m, n = x.shape
    if m == 0 or n == 0:
        return np.ascontiguousarray(x)
    alpha = np.ones(1, a.dtype)
    trans = (b"C" if conjugate_a and a.dtype.kind == "c" else b"T") if transpose_a else b"N"
    chars = [ctypes.c_char_p(c) for c in (b"L" if left_side else b"R", b"L" if lower else b"U",
                                          trans,
                                          b"U" if unit_diagonal else b"N")]
    ones = [ctypes.c_size_t(1)] * 4  # Fortran's hidden lengths of the character arguments
    fn(*chars, ctypes.byref(int_t(m)), ctypes.byref(int_t(n)), _ptr(alpha), _ptr(af),
       ctypes.byref(int_t(max(af.shape[0], 1))), _ptr(x), ctypes.byref(int_t(max(m, 1))), *ones)
    return np.ascontiguousarray(x)


def gtsv(dl, d, du, b):
    """Solve the tridiagonal system with sub-, main and super-diagonals ``dl`` (n-1), ``d``
    (n), ``du`` (n-1) for the columns of ``b`` (n, k), by Gaussian elimination with partial
    pivoting (LAPACK's ``?gtsv``, which JAX calls on CPU). Returns ``(x, info)``: ``info > 0``
    when a pivot is exactly zero (the system is singular; ``x`` is then not a solution)."""
    fn, int_t = _typed_routine("gtsv", b.dtype)
    n, k = b.shape
    bands = [np.array(v, dtype=b.dtype, copy=True) for v in (dl, d, du)]
    x = np.array(b, order="F", copy=True)
    info = int_t(0)
    if n and k:
        fn(ctypes.byref(int_t(n)), ctypes.byref(int_t(k)), *(_ptr(v) for v in bands), _ptr(x),
           ctypes.byref(int_t(max(n, 1))), ctypes.byref(info))
    return np.ascontiguousarray(x), int(info.value)
