"""Device functions that the CPU backend's scalar expressions call (``fm.``, ``rt.``,
``np.``), re-made for CUDA kernels, so the elementwise lowering rules serve both backends.

They are modules, because Numba resolves ``module.function`` in kernels; transcendentals
map to CUDA's libdevice through ``math``; the integer and NaN semantics match the NumPy impls.
"""
from __future__ import annotations

import cmath
import math
import types

import numba
import numpy as np
from numba import cuda

from ..lowering import runtime as _cpu_runtime


def _simulator_math() -> types.ModuleType:
    """``math`` as a GPU computes it, for the simulator: NaN/inf on domain errors instead of
    Python's exceptions (NumPy's scalar functions, or math guarded where NumPy has none)."""
    m = types.ModuleType("functrans_cuda_simmath")

    def quiet(fn):
        def f(*args):
            with np.errstate(all="ignore"):
                return fn(*args)
        return f

    for name in ("exp", "log", "log1p", "expm1", "tanh", "sin", "cos", "tan", "sinh", "cosh",
                 "sqrt", "log2", "log10", "floor", "ceil", "trunc", "isfinite", "isnan",
                 "isinf", "fmod", "hypot", "copysign"):
        setattr(m, name, quiet(getattr(np, name)))
    for name, np_name in (("asin", "arcsin"), ("acos", "arccos"), ("atan", "arctan"),
                          ("asinh", "arcsinh"), ("acosh", "arccosh"), ("atanh", "arctanh"),
                          ("atan2", "arctan2"), ("pow", "power")):
        setattr(m, name, quiet(getattr(np, np_name)))

    def guarded(fn, bad):
        def f(x):
            try:
                return type(x)(fn(float(x))) if isinstance(x, np.floating) else fn(x)
            except (ValueError, OverflowError):
                return bad(x)
        return f

    m.erf, m.erfc = guarded(math.erf, lambda x: np.nan), guarded(math.erfc, lambda x: np.nan)
    m.lgamma = guarded(math.lgamma, lambda x: np.inf)
    return m


# Device code calls ``M.f``: libdevice through ``math`` on a GPU, IEEE-quiet NumPy in the
# simulator (whose kernels are plain Python).
M = _simulator_math() if numba.config.ENABLE_CUDASIM else math


def _device(fn):
    return cuda.jit(device=True)(fn)


def _module(name, fns, extra=()) -> types.ModuleType:
    m = types.ModuleType(f"functrans_cuda_{name}")
    for f in fns:
        setattr(m, f.__name__, _device(f))
    for k, v in extra:
        setattr(m, k, v)
    return m


# ---- fm: the transcendentals (libdevice) ----------------------------------------------------
def exp(x): return M.exp(x)  # noqa: E704
def exp2(x): return M.pow(2.0, x)  # noqa: E704
def log(x): return M.log(x)  # noqa: E704
def log2(x): return M.log2(x)  # noqa: E704
def log10(x): return M.log10(x)  # noqa: E704
def log1p(x): return M.log1p(x)  # noqa: E704
def expm1(x): return M.expm1(x)  # noqa: E704
def tanh(x): return M.tanh(x)  # noqa: E704
def sin(x): return M.sin(x)  # noqa: E704
def cos(x): return M.cos(x)  # noqa: E704
def tan(x): return M.tan(x)  # noqa: E704
def erf(x): return M.erf(x)  # noqa: E704
def erfc(x): return M.erfc(x)  # noqa: E704
def sinh(x): return M.sinh(x)  # noqa: E704
def cosh(x): return M.cosh(x)  # noqa: E704
def asinh(x): return M.asinh(x)  # noqa: E704
def acosh(x): return M.acosh(x)  # noqa: E704
def atanh(x): return M.atanh(x)  # noqa: E704
def atan(x): return M.atan(x)  # noqa: E704
def asin(x): return M.asin(x)  # noqa: E704
def acos(x): return M.acos(x)  # noqa: E704
def atan2(y, x): return M.atan2(y, x)  # noqa: E704
def hypot(x, y): return M.hypot(x, y)  # noqa: E704


def cbrt(x):
    r = M.pow(abs(x), 1.0 / 3.0)
    return -r if x < 0 else r


def pow(x, y):  # noqa: A001 - the name the scalar rules use
    return M.pow(x, y)


fm = _module("fm", [exp, exp2, log, log2, log10, log1p, expm1, tanh, sin, cos, tan, erf, erfc,
                    sinh, cosh, asinh, acosh, atanh, atan, asin, acos, atan2, hypot, cbrt, pow,
                    _cpu_runtime.logistic.py_func])
fm.sigmoid = fm.logistic


# ---- rt: exact integer and NaN semantics ------------------------------------------------------
# The CPU backend's helpers are plain Python under their njit: compiled again for the device.
_SHARED = [getattr(_cpu_runtime, name).py_func
           for name in ("idiv", "irem", "fmax", "fmin", "logaddexp")]


def round_away(x):
    if not M.isfinite(x):
        return x
    t = x - M.fmod(x, 1.0)
    if abs(x - t) >= 0.5:
        return t + M.copysign(1.0, x)
    return t


def fma(x, y, z):
    return x * y + z  # CUDA contracts this to one fused multiply-add


def select(which, on_true, on_false):
    return on_true if which else on_false  # the CPU's branch-free intrinsic, as a device fn


def _float_to_int(name):
    """``rt.to_<name>``: a float to that integer type as the CPU's intrinsic converts it
    (truncated toward zero, NaN to 0, out of range to the nearest bound)."""
    info, ctor = np.iinfo(name), getattr(np, name)
    lo, hi = float(info.min), float(info.max) + 1.0  # 0 or powers of two: exact
    zero, low, top = ctor(0), ctor(info.min), ctor(info.max)

    def to_int(x):
        if x != x:
            return zero
        if x >= hi:
            return top
        if x <= lo:
            return low
        return ctor(x)
    to_int.__name__ = f"to_{name}"
    return to_int


rt = _module("rt", _SHARED + [round_away, fma, select] + [
    getattr(_cpu_runtime, name).py_func for name in ("clog1p", "cexpm1", "csign")] + [
    _float_to_int(f"{sign}int{bits}") for sign in ("", "u") for bits in (8, 16, 32, 64)])
rt.logistic = fm.logistic


# ---- np: the NumPy scalar functions the rules use ---------------------------------------------
def floor(x):
    if not M.isfinite(x):
        return x
    r = M.fmod(x, 1.0)
    if r < 0:
        r += 1.0
    return x - r


def ceil(x):
    if not M.isfinite(x):
        return x
    r = M.fmod(x, 1.0)
    if r > 0:
        r -= 1.0
    return x - r


def rint(x):
    if not M.isfinite(x):
        return x
    r = M.fmod(x, 1.0)
    if r < 0:
        r += 1.0
    f = x - r
    if r > 0.5 or (r == 0.5 and M.fmod(f, 2.0) != 0.0):
        return f + 1.0
    return f


def isfinite(x):
    return M.isfinite(x)


def fmod(x, y):
    return M.fmod(x, y)


np_shim = _module("np", [floor, ceil, rint, isfinite, fmod], extra=[
    (name, getattr(np, name)) for name in (
        "bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
        "float32", "float64", "complex64", "complex128")])

NAMESPACES = {"fm": fm, "rt": rt, "np": np_shim, "math": M, "cmath": cmath}
