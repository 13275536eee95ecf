"""Matrix multiply for generated kernels: BLAS ``?gemm`` from the OpenBLAS that NumPy ships,
called by symbol from Numba (cacheable), with a loop fallback when no BLAS symbol is found.

    >>> a, b, c = np.ones((2, 3)), np.ones((3, 2)), np.empty((2, 2))
    >>> gemm64(a, b, c)   # c[:] = a @ b for C-contiguous float64 matrices, also inside @njit
    >>> c
    array([[3., 3.],
           [3., 3.]])
"""
from __future__ import annotations

import ctypes.util
import glob
import os

import numba
import numpy as np
from llvmlite import binding as llvm
from numba import types

_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112


_LOADED: list = []  # (path, library) of the cblas whose symbols kernels call


def _libraries():
    return [lib for _, lib in _LOADED]


def _find_blas():
    """(symbol prefix, suffix, 64-bit ints) of a loaded cblas, or None."""
    libs_dir = os.path.join(os.path.dirname(np.__file__), os.pardir, "numpy.libs")
    candidates = glob.glob(os.path.join(libs_dir, "libscipy_openblas64_*.so*"))
    candidates += glob.glob(os.path.join(libs_dir, "libopenblas*.so*"))
    system = ctypes.util.find_library("openblas") or ctypes.util.find_library("cblas")
    if system:
        candidates.append(system)
    for path in candidates:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for name, ilp64 in (("scipy_cblas_{}gemm64_", True), ("cblas_{}gemm64_", True),
                            ("scipy_cblas_{}gemm", False), ("cblas_{}gemm", False)):
            if hasattr(lib, name.format("s")) and hasattr(lib, name.format("d")):
                llvm.load_library_permanently(path)
                _LOADED.append((path, lib))
                return name, ilp64
    return None


_FOUND = _find_blas()
AVAILABLE = _FOUND is not None


def _external(dtype):
    name, ilp64 = _FOUND
    i = types.int64 if ilp64 else types.int32
    f = {"s": types.float32, "d": types.float64, "c": types.complex64,
         "z": types.complex128}[dtype]
    ptr = types.CPointer(f)
    # Complex ?gemm takes alpha and beta by pointer.
    scalar = ptr if dtype in "cz" else f
    sig = types.void(types.intc, types.intc, types.intc, i, i, i, scalar, ptr, i, ptr, i, scalar,
                     ptr, i)
    return types.ExternalFunction(name.format(dtype), sig)


def _has_complex_gemm():
    name, _ = _FOUND
    for lib in _libraries():
        if hasattr(lib, name.format("c")) and hasattr(lib, name.format("z")):
            return True
    return False


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
    def gemm32(a, b, c, ta=False, tb=False):
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
    def gemm64(a, b, c, ta=False, tb=False):
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
    gemm32 = gemm64 = _gemm_loops

COMPLEX_AVAILABLE = AVAILABLE and _has_complex_gemm()
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


def _thread_count_functions():
    """OpenBLAS's (get, set) of its thread count, if NumPy's BLAS is an OpenBLAS."""
    libs_dir = os.path.join(os.path.dirname(np.__file__), os.pardir, "numpy.libs")
    for path in glob.glob(os.path.join(libs_dir, "libscipy_openblas*.so*")) + \
            glob.glob(os.path.join(libs_dir, "libopenblas*.so*")):
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for get, put in (("scipy_openblas_get_num_threads64_", "scipy_openblas_set_num_threads64_"),
                         ("openblas_get_num_threads", "openblas_set_num_threads")):
            if hasattr(lib, get) and hasattr(lib, put):
                getter, setter = getattr(lib, get), getattr(lib, put)
                getter.restype, getter.argtypes = ctypes.c_int, []
                setter.restype, setter.argtypes = None, [ctypes.c_int]
                return getter, setter
    return None


_THREADS = _thread_count_functions()


def blas_threads():
    """OpenBLAS's current thread count (None when NumPy's BLAS is not an OpenBLAS)."""
    return _THREADS[0]() if _THREADS else None


def set_blas_threads(n: int) -> None:
    """Set OpenBLAS's thread count, process-wide. (Its per-thread setter also slows the other
    threads' matrix products down afterwards, so shards do not use it.)"""
    if _THREADS:
        _THREADS[1](n)
