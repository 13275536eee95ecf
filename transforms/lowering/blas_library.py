"""The BLAS library jit's matrix products call, and the kernels (core) it runs.

NumPy's wheels bundle an OpenBLAS built for many CPUs at once (``DYNAMIC_ARCH``) that picks
its kernels once, when it loads, from the CPU it detects. Detection lags new CPUs: an AMD Zen
5 (family 1Ah), for one, gets the AVX2 (Haswell) kernels although the library carries AVX-512
(SkylakeX) ones that run its float32 products about twice as fast. ``OPENBLAS_CORETYPE``
is read only while the library loads, so it cannot change NumPy's copy; nor can the time
its idle threads spin (``OPENBLAS_THREAD_TIMEOUT``), which takes the cores from a kernel's
parallel loops right after a product. So on Linux jit loads a second, private copy of the same
library file (copied into the kernel cache directory: the loader would hand back NumPy's copy
for the same file) whose idle threads stop spinning sooner (see ``_private_copy``), with the
SkylakeX kernels when the CPU has the AVX-512 subsets they use (F, CD, BW, DQ, VL, as the
kernel reports them in ``/proc/cpuinfo``) and NumPy's copy chose an older core, else with
NumPy's core. NumPy itself is left as it is, and so is an ``OPENBLAS_CORETYPE`` that chose
NumPy's core.

Kernels call the chosen library through fixed symbol names (``functrans_sgemm``,
``functrans_dgemm``) registered in each process, so cached kernels link to whichever library
the process chose. ``FUNCTRANS_BLAS=numpy`` keeps NumPy's copy as it is;
``FUNCTRANS_BLAS_CORETYPE`` names the private copy's core (``Haswell``: the AVX2 kernels,
as an AVX2-only CPU runs them).

    >>> sorted(info()) in ([], ["core", "path", "private"])
    True
"""
from __future__ import annotations

import ctypes
import ctypes.util
import glob
import os
import shutil
import sys

import numpy as np
from llvmlite import binding as llvm

from .cache_dir import cache_dir, warn_unwritable, write_atomically

_AVX512_CORES = {"skylakex", "cooperlake", "sapphirerapids"}
_SKYLAKEX_FLAGS = {"avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl"}
_GEMM_NAMES = (("scipy_cblas_{}gemm64_", True), ("cblas_{}gemm64_", True),
               ("scipy_cblas_{}gemm", False), ("cblas_{}gemm", False))
_THREAD_NAMES = (("scipy_openblas_get_num_threads64_", "scipy_openblas_set_num_threads64_"),
                 ("openblas_get_num_threads", "openblas_set_num_threads"))
_CORE_NAMES = ("scipy_openblas_get_corename64_", "scipy_openblas_get_corename",
               "openblas_get_corename")


class Library:
    """One loaded BLAS: its ?gemm entry points, thread count and core name (OpenBLAS)."""

    def __init__(self, path, handle, gemm, ilp64):
        self.path, self.handle, self.gemm, self.ilp64 = path, handle, gemm, ilp64
        self.private = False
        self._threads = None
        for get, put in _THREAD_NAMES:
            if hasattr(handle, get) and hasattr(handle, put):
                getter, setter = getattr(handle, get), getattr(handle, put)
                getter.restype, getter.argtypes = ctypes.c_int, []
                setter.restype, setter.argtypes = None, [ctypes.c_int]
                self._threads = getter, setter
                break
        self._core = None
        for name in _CORE_NAMES:
            if hasattr(handle, name):
                self._core = getattr(handle, name)
                self._core.restype, self._core.argtypes = ctypes.c_char_p, []
                break

    @property
    def has_complex(self) -> bool:
        """Whether it also has cgemm and zgemm."""
        return all(hasattr(self.handle, self.gemm.format(d)) for d in "cz")

    def address(self, dtype: str) -> int:
        return ctypes.cast(getattr(self.handle, self.gemm.format(dtype)), ctypes.c_void_p).value

    def core(self):
        return self._core().decode() if self._core else None

    def threads(self):
        return self._threads[0]() if self._threads else None

    def set_threads(self, n: int) -> None:
        if self._threads:
            self._threads[1](n)


def _open(path, mode=ctypes.DEFAULT_MODE):
    try:
        handle = ctypes.CDLL(path, mode=mode)
    except OSError:
        return None
    for name, ilp64 in _GEMM_NAMES:
        if hasattr(handle, name.format("s")) and hasattr(handle, name.format("d")):
            return Library(path, handle, name, ilp64)
    return None


def _numpy_library():
    """The cblas NumPy uses (its bundled OpenBLAS), else a system one."""
    libs_dir = os.path.join(os.path.dirname(np.__file__), os.pardir, "numpy.libs")
    candidates = glob.glob(os.path.join(libs_dir, "libscipy_openblas64_*.so*"))
    candidates += glob.glob(os.path.join(libs_dir, "libscipy_openblas*.so*"))
    candidates += glob.glob(os.path.join(libs_dir, "libopenblas*.so*"))
    system = ctypes.util.find_library("openblas") or ctypes.util.find_library("cblas")
    if system:
        candidates.append(system)
    for path in candidates:
        lib = _open(path)
        if lib is not None:
            return lib
    return None


def cpu_flags() -> set:
    """The CPU's feature flags as the kernel reports them (empty where unknown)."""
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def _private_core(lib) -> str | None:
    """The core a private copy of ``lib`` should run, or None to keep NumPy's copy (not an
    OpenBLAS, not Linux, or ``FUNCTRANS_BLAS=numpy``)."""
    if os.environ.get("FUNCTRANS_BLAS", "").lower() == "numpy" or \
            not sys.platform.startswith("linux"):
        return None
    core = lib.core()
    if core is None:
        return None
    forced = os.environ.get("FUNCTRANS_BLAS_CORETYPE")
    if forced:  # a chosen core (CI runs the suite with AVX2 kernels forced on AVX-512 CPUs)
        return forced
    # OPENBLAS_CORETYPE configures NumPy's copy (it may well be set for another program);
    # jit only ever picks kernels the CPU reports it can run.
    if (core.lower() not in _AVX512_CORES
            and hasattr(lib.handle, "gotoblas_SKYLAKEX")  # the build carries those kernels
            and _SKYLAKEX_FLAGS <= cpu_flags()):
        return "SkylakeX"
    return core


def _private_copy(lib, core):
    """A second copy of ``lib``'s file, loaded privately with ``core``'s kernels (None when
    that fails or the library does not take the core)."""
    try:  # no cache directory: NumPy's copy it is
        st = os.stat(lib.path)
        directory = cache_dir()
    except OSError:
        return None
    copy = os.path.join(directory, f"{st.st_size}-{st.st_mtime_ns}-{os.path.basename(lib.path)}")
    if not os.path.exists(copy) or os.path.getsize(copy) != st.st_size:
        try:  # a full disk: NumPy's copy, and no partial copy left behind
            with open(lib.path, "rb") as src:
                write_atomically(copy, lambda f: shutil.copyfileobj(src, f))
        except OSError as e:
            warn_unwritable(directory, e)
            return None
    # Both are read once, while the library loads. A kernel often runs parallel loops right
    # after a product; OpenBLAS's threads, which by default spin for 2^28 cycles (~0.1 s)
    # once their work is done, would take the cores from those loops (conv + bias + relu ran
    # 3-6x slower; 4.3x with NumPy's copy's Haswell kernels on an AVX-512 machine). This copy's threads spin for 2^16 cycles (tens of microseconds, which
    # keeps back-to-back products as fast: measured against 2^4, 2^12, 2^18 and 2^21) unless
    # the user chose a value.
    settings = {"OPENBLAS_CORETYPE": core,
                "OPENBLAS_THREAD_TIMEOUT": os.environ.get("OPENBLAS_THREAD_TIMEOUT", "16")}
    saved = {k: os.environ.get(k) for k in settings}
    os.environ.update(settings)
    try:
        private = _open(copy, mode=os.RTLD_LOCAL)
    finally:
        for k, v in saved.items():
            if v is None:
                del os.environ[k]
            else:
                os.environ[k] = v
    if private is None or (private.core() or "").lower() != core.lower():
        return None
    private.private = True
    if lib.threads() is not None:
        private.set_threads(lib.threads())
    return private


def _choose():
    numpy_lib = _numpy_library()
    if numpy_lib is None:
        return None, None
    core = _private_core(numpy_lib)
    chosen = (_private_copy(numpy_lib, core) if core else None) or numpy_lib
    for dtype in "sdcz" if chosen.has_complex else "sd":
        llvm.add_symbol(f"functrans_{dtype}gemm", chosen.address(dtype))
        # (the library's own entry, for native/blas_split.py's wrappers, which replace the
        # first name once installed)
        llvm.add_symbol(f"functrans_{dtype}gemm_blas", chosen.address(dtype))
    return chosen, numpy_lib


JIT, NUMPY = _choose()
split_products = False
"""Whether jit's real products run cut into blocks on Numba's pool, with ``JIT`` on one
thread (``transforms/native/blas_split.py`` sets it)."""


def info() -> dict:
    """Which BLAS jit calls: ``path``, ``core`` (OpenBLAS's kernel set) and whether it is a
    ``private`` copy (see the module docstring); empty without a BLAS."""
    if JIT is None:
        return {}
    return {"path": JIT.path, "core": JIT.core(), "private": JIT.private}
