"""Device functions that the CPU backend's scalar expressions call (``fm.``, ``rt.``,
``np.``), re-made for CUDA kernels, so the elementwise lowering rules serve both backends.

They are modules, because Numba resolves ``module.function`` in kernels; transcendentals
map to CUDA's libdevice through ``math``; the integer and NaN semantics match the NumPy impls.
"""
from __future__ import annotations

import math
import types

import numpy as np
from numba import cuda


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
def exp(x): return math.exp(x)  # noqa: E704
def exp2(x): return math.pow(2.0, x)  # noqa: E704
def log(x): return math.log(x)  # noqa: E704
def log2(x): return math.log2(x)  # noqa: E704
def log10(x): return math.log10(x)  # noqa: E704
def log1p(x): return math.log1p(x)  # noqa: E704
def expm1(x): return math.expm1(x)  # noqa: E704
def tanh(x): return math.tanh(x)  # noqa: E704
def sin(x): return math.sin(x)  # noqa: E704
def cos(x): return math.cos(x)  # noqa: E704
def tan(x): return math.tan(x)  # noqa: E704
def erf(x): return math.erf(x)  # noqa: E704
def erfc(x): return math.erfc(x)  # noqa: E704
def sinh(x): return math.sinh(x)  # noqa: E704
def cosh(x): return math.cosh(x)  # noqa: E704
def asinh(x): return math.asinh(x)  # noqa: E704
def acosh(x): return math.acosh(x)  # noqa: E704
def atanh(x): return math.atanh(x)  # noqa: E704
def atan(x): return math.atan(x)  # noqa: E704
def asin(x): return math.asin(x)  # noqa: E704
def acos(x): return math.acos(x)  # noqa: E704
def atan2(y, x): return math.atan2(y, x)  # noqa: E704
def hypot(x, y): return math.hypot(x, y)  # noqa: E704


def cbrt(x):
    r = math.pow(abs(x), 1.0 / 3.0)
    return -r if x < 0 else r


def pow(x, y):  # noqa: A001 - the name the scalar rules use
    return math.pow(x, y)


def logistic(x):
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


sigmoid = logistic

fm = _module("fm", [exp, exp2, log, log2, log10, log1p, expm1, tanh, sin, cos, tan, erf, erfc,
                    sinh, cosh, asinh, acosh, atanh, atan, asin, acos, atan2, hypot, cbrt, pow,
                    logistic])
fm.sigmoid = fm.logistic


# ---- rt: exact integer and NaN semantics ------------------------------------------------------
def idiv(x, y):
    if y == 0:
        return x - x
    q = x // y
    if (x % y != 0) and ((x < 0) != (y < 0)):
        q += 1
    return q


def irem(x, y):
    if y == 0:
        return x - x
    r = x % y
    if r != 0 and ((r < 0) != (x < 0)):
        r -= y
    return r


def fmax(x, y):
    if x != x:
        return x
    if y != y:
        return y
    return x if x >= y else y


def fmin(x, y):
    if x != x:
        return x
    if y != y:
        return y
    return x if x <= y else y


def round_away(x):
    if not math.isfinite(x):
        return x
    t = float(math.trunc(x))
    if abs(x - t) >= 0.5:
        return t + math.copysign(1.0, x)
    return t


def fma(x, y, z):
    return x * y + z  # CUDA contracts this to one fused multiply-add


def logaddexp(x, y):
    if x == y:
        return x + math.log(2.0) if math.isfinite(x) else x
    m = x if x > y else y
    if m != m or (x != x) or (y != y):
        return x + y
    return m + math.log1p(math.exp(-abs(x - y)))


rt = _module("rt", [idiv, irem, fmax, fmin, round_away, fma, logaddexp])
rt.logistic = fm.logistic


# ---- np: the NumPy scalar functions the rules use ---------------------------------------------
def floor(x):
    return x if not math.isfinite(x) else float(math.floor(x))


def ceil(x):
    return x if not math.isfinite(x) else float(math.ceil(x))


def rint(x):
    if not math.isfinite(x):
        return x
    f = float(math.floor(x))
    d = x - f
    if d > 0.5 or (d == 0.5 and f % 2.0 != 0.0):
        return f + 1.0
    return f


def isfinite(x):
    return math.isfinite(x)


def fmod(x, y):
    return math.fmod(x, y)


np_shim = _module("np", [floor, ceil, rint, isfinite, fmod], extra=[
    (name, getattr(np, name)) for name in (
        "bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
        "float32", "float64")])

NAMESPACES = {"fm": fm, "rt": rt, "np": np_shim, "math": math}
