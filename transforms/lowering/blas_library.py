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

The fastest kernels are not the same for every dtype. AMD's Zen 4 executes AVX-512 in two
256-bit halves: on it, OpenBLAS's AVX2 (Haswell) sgemm kernel ran jit's float32 products
4-20% faster than the SkylakeX one, by size (1024^3: 194-215 against 176-197 GFLOP/s;
128^3: 143-164 against 124-156; an MLP's value_and_grad 7% faster), while its dgemm was up to
6% slower. So where the private copy runs AVX-512 kernels, jit times both kernel sets on
float32 products once per CPU model (a few milliseconds, on one thread; the answer is kept in
the cache directory) and, where the AVX2 ones are clearly faster, its float32 products call a
second private copy on them (``SINGLE``); float64 and complex products and LAPACK stay on the
first (``JIT``).

Kernels call the chosen library through fixed symbol names (``functrans_sgemm``,
``functrans_dgemm``) registered in each process, so cached kernels link to whichever library
the process chose. ``FUNCTRANS_BLAS=numpy`` keeps NumPy's copy as it is;
``FUNCTRANS_BLAS_CORETYPE`` names the private copy's core for every dtype (``Haswell``: the
AVX2 kernels, as an AVX2-only CPU runs them).

    >>> sorted(info()) in ([], ["core", "float32_core", "path", "private"])
    True
"""
from __future__ import annotations

import ctypes
import ctypes.util
import functools
import glob
import hashlib
import os
import shutil
import sys
import time

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


def _private_copy(lib, core, tag=""):
    """A second copy of ``lib``'s file, loaded privately with ``core``'s kernels (None when
    that fails or the library does not take the core). Copies of different ``tag`` are
    different files, so they can be loaded side by side with different cores."""
    try:  # no cache directory: NumPy's copy it is
        st = os.stat(lib.path)
        directory = cache_dir()
        build = _build_id(lib.path)
    except OSError:
        return None
    copy = os.path.join(directory, f"{st.st_size}-{build}-{tag}{os.path.basename(lib.path)}")
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


@functools.lru_cache(maxsize=None)  # (read for each copy and for the answer's name)
def _build_id(path: str) -> str:
    """A name for the build of the library file at ``path``, the same in every install of
    it: a hash of its first 64 KiB (an ELF file's build ID note is there) and its last. A
    name from the file's modification time made a new 25 MB copy for every virtualenv."""
    with open(path, "rb") as f:
        head = f.read(1 << 16)
        f.seek(max(0, os.fstat(f.fileno()).st_size - (1 << 16)))
        tail = f.read()
    return hashlib.sha256(head + tail).hexdigest()[:16]


def _gemm_seconds(lib, letter: str, n: int = 256, reps: int = 7) -> list:
    """Times of ``reps`` n x n x n products of ``lib``'s ?gemm (``letter``: "s" or "d") on
    one thread."""
    dtype = np.float32 if letter == "s" else np.float64
    it = ctypes.c_int64 if lib.ilp64 else ctypes.c_int32
    scalar = ctypes.c_float if letter == "s" else ctypes.c_double
    fn = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_int, ctypes.c_int, it, it, it, scalar,
                          ctypes.c_void_p, it, ctypes.c_void_p, it, scalar, ctypes.c_void_p,
                          it)(lib.address(letter))
    a = np.random.default_rng(0).standard_normal((n, n)).astype(dtype)
    c = np.empty_like(a)
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn(101, 111, 111, n, n, n, 1.0, a.ctypes.data, n, a.ctypes.data, n, 0.0,
           c.ctypes.data, n)
        times.append(time.perf_counter() - t)
    return times


def _single_answer_path(lib, core) -> str:
    """Where the measured answer for this CPU model, library file and core is kept."""
    key = f"{_cpu_model()}|{os.stat(lib.path).st_size}|{_build_id(lib.path)}|{core}"
    return os.path.join(cache_dir(), "blas-float32-core-" +
                        hashlib.sha256(key.encode()).hexdigest()[:16])


def _measure_single(lib, other, path) -> bool:
    """Whether ``other`` (the AVX2 kernels) runs float32 products faster than ``lib`` (its
    AVX-512 ones) here: best of 21 alternating 256^3 products each, on one thread; the
    answer is kept at ``path``. AMD's Zen 4 executes AVX-512 in two 256-bit halves, and
    there OpenBLAS's AVX2 sgemm kernel is 4-20% faster than its AVX-512 one (its dgemm is
    not: up to 6% slower); on Intel's AVX-512 CPUs the AVX-512 kernels are the faster."""
    saved = lib.threads(), other.threads()
    lib.set_threads(1)
    other.set_threads(1)
    try:
        mine, theirs = [], []
        for _ in range(3):  # alternating: a drifting machine touches both alike
            mine += _gemm_seconds(lib, "s")
            theirs += _gemm_seconds(other, "s")
    finally:
        lib.set_threads(saved[0])
        other.set_threads(saved[1])
    faster = min(theirs) < 0.97 * min(mine)  # (a clear margin, else one copy is enough)
    try:
        write_atomically(path, lambda f: f.write(b"avx2" if faster else b"same"))
    except OSError as e:
        warn_unwritable(os.path.dirname(path), e)
    return faster


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as f:
            fields = dict(line.split(":", 1) for line in f.read().split("\n\n")[0].splitlines()
                          if ":" in line)
        return "|".join(fields.get(k, "").strip() for k in
                        ("vendor_id", "cpu family", "model", "model name", "stepping"))
    except OSError:
        return ""


def _single_library(chosen, numpy_lib):
    """The library for jit's float32 products: ``chosen``, or a second private copy of
    ``numpy_lib`` on the AVX2 (Haswell) kernels where those measured faster on this CPU
    model (once; the answer is cached, and the copy is loaded only where it is used)."""
    if not chosen.private or os.environ.get("FUNCTRANS_BLAS_CORETYPE") or \
            (chosen.core() or "").lower() not in _AVX512_CORES or \
            not hasattr(chosen.handle, "gotoblas_HASWELL"):
        return chosen
    try:
        path = _single_answer_path(numpy_lib, chosen.core())
    except OSError:
        return chosen
    known = _read_answer(path)
    if known == "same":
        return chosen
    other = _private_copy(numpy_lib, "Haswell", tag="float32-")
    if other is None:
        return chosen
    if known is None:
        # One process measures; others starting meanwhile (test workers, a job's ranks) wait
        # for its answer, so that every process runs the same kernels (the same bits).
        import fcntl  # (Linux only, as private copies are)
        try:
            with open(path + ".lock", "a") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                known = _read_answer(path)
                if known is None:
                    known = "avx2" if _measure_single(chosen, other, path) else "same"
        except OSError:
            known = "avx2" if _measure_single(chosen, other, path) else "same"
    return other if known == "avx2" else chosen


def _read_answer(path: str) -> str | None:
    try:
        with open(path, encoding="ascii") as f:
            return f.read().strip() or None
    except OSError:
        return None


def _choose():
    numpy_lib = _numpy_library()
    if numpy_lib is None:
        return None, None, None
    core = _private_core(numpy_lib)
    chosen = (_private_copy(numpy_lib, core) if core else None) or numpy_lib
    single = _single_library(chosen, numpy_lib)
    for dtype in "sdcz" if chosen.has_complex else "sd":
        lib = single if dtype == "s" else chosen
        llvm.add_symbol(f"functrans_{dtype}gemm", lib.address(dtype))
        # (the library's own entry, for native/blas_split.py's wrappers, which replace the
        # first name once installed)
        llvm.add_symbol(f"functrans_{dtype}gemm_blas", lib.address(dtype))
    return chosen, single, numpy_lib


JIT, SINGLE, NUMPY = _choose()
"""``JIT``: the library of jit's products (float64, complex) and LAPACK calls; ``SINGLE``:
of its float32 products (``JIT`` itself, or a second private copy with other kernels);
``NUMPY``: NumPy's."""
split_products = False
"""Whether jit's real products run cut into blocks on Numba's pool, with ``JIT`` and
``SINGLE`` on one thread (``transforms/native/blas_split.py`` sets it)."""


def info() -> dict:
    """Which BLAS jit calls: ``path``, ``core`` (OpenBLAS's kernel set), whether it is a
    ``private`` copy (see the module docstring) and the core of its float32 products
    (``float32_core``); empty without a BLAS."""
    if JIT is None:
        return {}
    return {"path": JIT.path, "core": JIT.core(), "private": JIT.private,
            "float32_core": SINGLE.core()}
