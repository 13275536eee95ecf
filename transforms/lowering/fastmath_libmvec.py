"""glibc libmvec route: scalar libm calls that LLVM's loop vectorizer turns into calls to
glibc's SIMD math (``libmvec.so.1``, x86-64 Linux).

Each function here is an intrinsic that calls the scalar libm symbol (``tanhf``, ``tanh``)
declared with its libmvec vector variants; vectorized loops call the variant matching the
chosen vector width, and scalar remainders call libm. Variants are listed only for the
instruction sets the target has, and only when the symbol exists in the loaded libmvec.
glibc documents libmvec accuracy as within 4 ulp.
"""
from __future__ import annotations

import ctypes
import ctypes.util

import llvmlite.binding as llb
from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic

from functrans.transforms.lowering.fastmath_ir import (declare_vector_variants, host_isa,
                                                       tag_wide_vectors)

__all__ = ["AVAILABLE", "FUNCTIONS", "get", "supported"]

# name -> (double-precision libm symbol, number of arguments); float32 adds the suffix "f".
FUNCTIONS = {
    "exp": ("exp", 1), "log": ("log", 1), "log1p": ("log1p", 1), "expm1": ("expm1", 1),
    "tanh": ("tanh", 1), "sin": ("sin", 1), "cos": ("cos", 1), "erf": ("erf", 1),
    "erfc": ("erfc", 1), "exp2": ("exp2", 1), "log2": ("log2", 1), "log10": ("log10", 1),
    "sinh": ("sinh", 1), "cosh": ("cosh", 1), "tan": ("tan", 1), "atan": ("atan", 1),
    "asin": ("asin", 1), "acos": ("acos", 1), "asinh": ("asinh", 1), "acosh": ("acosh", 1),
    "atanh": ("atanh", 1), "cbrt": ("cbrt", 1), "pow": ("pow", 2), "atan2": ("atan2", 2),
    "hypot": ("hypot", 2),
}

# x86-64 vector ABI ISA letters: b = SSE, c = AVX, d = AVX2, e = AVX-512.
_ISA_LETTERS = (("sse2", "b", 16), ("avx", "c", 32), ("avx2", "d", 32), ("avx512f", "e", 64))


def _load():
    """The libmvec handle (ctypes) or None. Loading it into the process makes its symbols
    resolvable by Numba's JIT linker, cached kernels included."""
    if not llb.get_process_triple().startswith("x86_64") or "linux" not in llb.get_process_triple():
        return None
    for name in ("libmvec.so.1", ctypes.util.find_library("mvec")):
        if not name:
            continue
        try:
            handle = ctypes.CDLL(name)
            llb.load_library_permanently(name)
            return handle
        except OSError:
            continue
    return None


_LIB = _load()
AVAILABLE = _LIB is not None


def _has_symbol(sym: str) -> bool:
    try:
        getattr(_LIB, sym)
        return True
    except AttributeError:
        return False


def _variants(scalar: str, nargs: int, dtype) -> list:
    """[(lanes, symbol)] usable on this target, widest per lane count."""
    if _LIB is None:
        return []
    isa = host_isa()
    elem = 4 if dtype == types.float32 else 8
    by_lanes = {}
    for feature, letter, nbytes in _ISA_LETTERS:
        if feature not in isa:
            continue
        lanes = nbytes // elem
        sym = f"_ZGV{letter}N{lanes}{'v' * nargs}_{scalar}"
        if _has_symbol(sym):
            by_lanes[lanes] = sym  # later (better) ISA letters replace earlier ones
    return sorted(by_lanes.items())


def _scalar_symbol(name: str, dtype) -> str:
    base = FUNCTIONS[name][0]
    return base + "f" if dtype == types.float32 else base


_VARIANTS = {}
for _name, (_base, _nargs) in FUNCTIONS.items():
    for _dt in (types.float32, types.float64):
        _v = _variants(_scalar_symbol(_name, _dt), _nargs, _dt)
        if _v:
            _VARIANTS[_name, _dt] = _v


def supported(name: str, dtype) -> bool:
    """Whether ``name`` has libmvec vector variants for ``dtype`` on this machine.

    >>> supported("tanh", types.float32) in (True, False)
    True
    """
    return (name, dtype) in _VARIANTS


def _make(name: str):
    nargs = FUNCTIONS[name][1]

    def typer(typingctx, *args):
        if len(args) != nargs or len({*args}) != 1:
            return None
        dt = args[0]
        if (name, dt) not in _VARIANTS:
            return None
        sym = _scalar_symbol(name, dt)
        variants = _VARIANTS[name, dt]

        def codegen(context, builder, sig, llargs):
            lty = context.get_value_type(dt)
            fn = cgutils.get_or_insert_function(builder.module,
                                                ir.FunctionType(lty, [lty] * nargs), sym)
            declare_vector_variants(builder.module, fn, variants)
            tag_wide_vectors(builder.function)
            return builder.call(fn, llargs)
        return dt(*args), codegen

    # intrinsic() needs a fixed signature
    if nargs == 1:
        def fn1(typingctx, x):
            return typer(typingctx, x)
        impl = fn1
    else:
        def fn2(typingctx, x, y):
            return typer(typingctx, x, y)
        impl = fn2
    impl.__name__ = f"libmvec_{name}"
    return intrinsic(impl)


_INTRINSICS = {name: _make(name) for name in FUNCTIONS}


def get(name: str):
    """The libmvec intrinsic for ``name`` (callable from njit code for the dtypes where
    :func:`supported` is true).

    >>> import numba, numpy as np
    >>> tanh = get("tanh")
    >>> if supported("tanh", types.float64):
    ...     f = numba.njit(lambda v: tanh(v))
    ...     assert abs(f(0.5) - np.tanh(0.5)) < 1e-15
    """
    return _INTRINSICS[name]
