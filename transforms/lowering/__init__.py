"""Lowering of jaxprs to compiled code with Numba on CPU: the single-kernel code generator,
and the pieces the native one reuses (scalar rules, fast math, BLAS, the cache directory)."""
from .numba_cache import install as _guard_numba_cache

_guard_numba_cache()  # before any functrans function is loaded from Numba's cache
from . import compiler_rt  # noqa: E402,F401  (LLVM's powi helpers, before any code is linked)
