"""LAPACK inside generated kernels: Cholesky (``?potrf``), triangular solves (``?trsm``) and LU
(``?getrf``), real and complex (s, d, c, z), called by symbol from the OpenBLAS that NumPy ships (or a system LAPACK), as
``blas.py`` calls ``?gemm``. A host step costs tens of microseconds per call; these cost what
LAPACK costs. Arrays are C-contiguous batches ``(B, rows, cols)``; a row-major matrix is its
transpose to Fortran, so Cholesky and triangular solves work in place on the transposed
problem, and LU factors a transposed copy.

    >>> L = cholesky(np.array([[[4.0, 2.0], [2.0, 5.0]]]))   # also inside @njit
    >>> L[0].tolist()
    [[2.0, 0.0], [1.0, 2.0]]
"""
from __future__ import annotations

import ctypes
import ctypes.util
import glob
import os
from typing import NamedTuple

import numba
import numpy as np
from llvmlite import binding as llvm
from numba import types

from functrans.primitives import lapack as host_lapack

from .blas_library import JIT


class Lapack(NamedTuple):
    handle: ctypes.CDLL
    path: str
    pattern: str  # symbol names: pattern.format("dgetrf_")
    ilp64: bool  # 64-bit integer arguments


_PATTERNS = (("scipy_{}64_", True), ("{}64_", True), ("scipy_{}", False), ("{}", False))
_SYMBOLS = [k + r + "_" for r in ("potrf", "trsm", "getrf") for k in "sdcz"]  # what kernels call


def _with_routines(handle, path):
    for pattern, ilp64 in _PATTERNS:
        if all(hasattr(handle, pattern.format(n)) for n in _SYMBOLS):
            return Lapack(handle, path, pattern, ilp64)
    return None


def find_lapack():
    """The :class:`Lapack` with ?getrf, ?potrf and ?trsm that kernels call, or None: the
    library jit's matrix products use (``blas_library.JIT``) when it has them, else NumPy's
    bundled OpenBLAS or a system LAPACK. One library for both keeps one OpenBLAS thread pool
    per kernel: with a private copy for GEMM and NumPy's for LAPACK, the two pools' threads
    contend for the cores (a 256x256 solve after a product ran 8-16x slower)."""
    if JIT is not None:
        found = _with_routines(JIT.handle, JIT.path)
        if found is not None:
            return found
    libs_dir = os.path.join(os.path.dirname(np.__file__), os.pardir, "numpy.libs")
    candidates = glob.glob(os.path.join(libs_dir, "libscipy_openblas*.so*"))
    candidates += glob.glob(os.path.join(libs_dir, "libopenblas*.so*"))
    candidates += [p for p in (ctypes.util.find_library(n) for n in ("openblas", "lapack")) if p]
    for path in candidates:
        try:
            found = _with_routines(ctypes.CDLL(path), path)
        except OSError:
            continue
        if found is not None:
            return found
    return None


FOUND = find_lapack()
AVAILABLE = FOUND is not None

if AVAILABLE:
    # The primitives' eager ?getrf/?trsm call this library too, and their cholesky,
    # triangular_solve and lu stop being host steps (functrans/primitives/lapack.py).
    host_lapack.install(FOUND.handle, FOUND.pattern, FOUND.ilp64)
    # Only the routines the kernels call are made visible to LLVM, by address: loading the
    # whole library with global visibility would let another OpenBLAS loaded later (SciPy's,
    # with 32-bit integers) bind its internal driver symbols to this one, and SciPy's LAPACK
    # would then compute garbage.
    for _name in _SYMBOLS:
        _symbol = FOUND.pattern.format(_name)
        llvm.add_symbol(_symbol, ctypes.cast(getattr(FOUND.handle, _symbol), ctypes.c_void_p).value)
    _I = types.int64 if FOUND.ilp64 else types.int32
    _INT = np.int64 if FOUND.ilp64 else np.int32
    _ip, _cp, _vp, _len = types.CPointer(_I), types.CPointer(types.uint8), types.voidptr, \
        types.uint64

    def _ext(name, *args):
        return types.ExternalFunction(FOUND.pattern.format(name + "_"), types.void(*args))

    _potrf = {k: _ext(k + "potrf", _cp, _ip, _vp, _ip, _ip, _len) for k in "sdcz"}
    _trsm = {k: _ext(k + "trsm", _cp, _cp, _cp, _cp, _ip, _ip, _vp, _vp, _ip, _vp, _ip,
                     _len, _len, _len, _len) for k in "sdcz"}
    _getrf = {k: _ext(k + "getrf", _ip, _ip, _vp, _ip, _ip, _ip) for k in "sdcz"}
    _spotrf, _dpotrf, _cpotrf, _zpotrf = (_potrf[k] for k in "sdcz")
    _strsm, _dtrsm, _ctrsm, _ztrsm = (_trsm[k] for k in "sdcz")
    _sgetrf, _dgetrf, _cgetrf, _zgetrf = (_getrf[k] for k in "sdcz")

    @numba.njit(cache=True)
    def cholesky(a):
        """Lower Cholesky factors of the (B, n, n) batch ``a`` (lower triangles read); NaN
        where a matrix is not positive definite."""
        out = a.copy()
        nb, n = a.shape[0], a.shape[1]
        uplo = np.full(1, 85, np.uint8)  # 'U' of the transposed (Fortran) view = our lower
        dims = np.full(1, max(n, 1), _INT)
        info = np.zeros(1, _INT)
        nn = np.full(1, n, _INT)
        for b in range(nb):
            m = out[b]
            if n == 0:
                continue
            # Complex: Fortran sees conj(H) for the Hermitian H our lower triangle defines;
            # its factor U (conj(H) = U^H U), read row-major, is U^T = L with L L^H = H.
            if np.iscomplexobj(a):
                if a.itemsize == 16:
                    _zpotrf(uplo.ctypes, nn.ctypes, m.ctypes, dims.ctypes, info.ctypes, 1)
                else:
                    _cpotrf(uplo.ctypes, nn.ctypes, m.ctypes, dims.ctypes, info.ctypes, 1)
            elif a.itemsize == 8:
                _dpotrf(uplo.ctypes, nn.ctypes, m.ctypes, dims.ctypes, info.ctypes, 1)
            else:
                _spotrf(uplo.ctypes, nn.ctypes, m.ctypes, dims.ctypes, info.ctypes, 1)
            if info[0] != 0:
                m[:] = np.nan
            else:
                for i in range(n):
                    for j in range(i + 1, n):
                        m[i, j] = 0
        return out

    @numba.njit(cache=True)
    def triangular_solve(a, b, left_side, lower, transpose_a, unit_diagonal):
        """``op(a)^-1 b`` or ``b op(a)^-1`` for the batches ``a`` (B, k, k), ``b`` (B, m, n).
        In Fortran's view every matrix is transposed: the left solve becomes a right one with
        the other triangle, and vice versa."""
        x = b.copy()
        nb, m, n = b.shape[0], b.shape[1], b.shape[2]
        k = a.shape[1]
        if m == 0 or n == 0:
            return x
        side = np.full(1, 82 if left_side else 76, np.uint8)   # 'R' / 'L'
        uplo = np.full(1, 85 if lower else 76, np.uint8)        # 'U' / 'L'
        trans = np.full(1, 84 if transpose_a else 78, np.uint8)  # 'T' / 'N'
        diag = np.full(1, 85 if unit_diagonal else 78, np.uint8)  # 'U' / 'N'
        rows, cols = np.full(1, n, _INT), np.full(1, m, _INT)    # x^T is (n, m) in Fortran
        lda, ldb = np.full(1, max(k, 1), _INT), np.full(1, max(n, 1), _INT)
        alpha = np.ones(1, a.dtype)
        for q in range(nb):
            if np.iscomplexobj(a):
                if a.itemsize == 16:
                    _ztrsm(side.ctypes, uplo.ctypes, trans.ctypes, diag.ctypes, rows.ctypes,
                           cols.ctypes, alpha.ctypes, a[q].ctypes, lda.ctypes, x[q].ctypes,
                           ldb.ctypes, 1, 1, 1, 1)
                else:
                    _ctrsm(side.ctypes, uplo.ctypes, trans.ctypes, diag.ctypes, rows.ctypes,
                           cols.ctypes, alpha.ctypes, a[q].ctypes, lda.ctypes, x[q].ctypes,
                           ldb.ctypes, 1, 1, 1, 1)
            elif a.itemsize == 8:
                _dtrsm(side.ctypes, uplo.ctypes, trans.ctypes, diag.ctypes, rows.ctypes,
                       cols.ctypes, alpha.ctypes, a[q].ctypes, lda.ctypes, x[q].ctypes,
                       ldb.ctypes, 1, 1, 1, 1)
            else:
                _strsm(side.ctypes, uplo.ctypes, trans.ctypes, diag.ctypes, rows.ctypes,
                       cols.ctypes, alpha.ctypes, a[q].ctypes, lda.ctypes, x[q].ctypes,
                       ldb.ctypes, 1, 1, 1, 1)
        return x

    @numba.njit(cache=True)
    def lu(a):
        """LU with partial pivoting of the batch ``a`` (B, m, n): packed factors, 0-based
        pivots (int32) and the permutation they apply (int32)."""
        nb, m, n = a.shape[0], a.shape[1], a.shape[2]
        k = min(m, n)
        out = np.empty_like(a)
        pivots = np.zeros((nb, k), np.int32)
        perm = np.empty((nb, m), np.int32)
        mm, nn, ld = np.full(1, m, _INT), np.full(1, n, _INT), np.full(1, max(m, 1), _INT)
        ipiv = np.zeros(max(k, 1), _INT)
        info = np.zeros(1, _INT)
        for q in range(nb):
            t = np.ascontiguousarray(a[q].T)  # Fortran order of a[q]
            if k:
                if np.iscomplexobj(a):
                    if a.itemsize == 16:
                        _zgetrf(mm.ctypes, nn.ctypes, t.ctypes, ld.ctypes, ipiv.ctypes,
                                info.ctypes)
                    else:
                        _cgetrf(mm.ctypes, nn.ctypes, t.ctypes, ld.ctypes, ipiv.ctypes,
                                info.ctypes)
                elif a.itemsize == 8:
                    _dgetrf(mm.ctypes, nn.ctypes, t.ctypes, ld.ctypes, ipiv.ctypes, info.ctypes)
                else:
                    _sgetrf(mm.ctypes, nn.ctypes, t.ctypes, ld.ctypes, ipiv.ctypes, info.ctypes)
            out[q] = t.T
            for i in range(m):
                perm[q, i] = i
            for i in range(k):
                p = ipiv[i] - 1
                pivots[q, i] = p
                perm[q, i], perm[q, p] = perm[q, p], perm[q, i]
        return out, pivots, perm
