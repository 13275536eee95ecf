"""Fast elementwise math for generated Numba kernels.

Numba compiles ``np.exp``/``math.tanh`` on scalars to scalar libm calls, and some of them
(tanh, log1p, expm1, erf) stop LLVM from vectorizing the loop at all. The functions here are
called like ``math.exp`` inside ``@njit`` code (``cache=True`` and ``parallel=True`` kernels
included) and let LLVM's loop vectorizer produce SIMD code, by one of three routes:

``libmvec``
    glibc's SIMD math library (x86-64 Linux, glibc >= 2.35 for tanh/erf/log1p/expm1),
    reached through vector-variant declarations (:mod:`.fastmath_libmvec`).
``portable``
    vectorizable polynomial approximations written in Numba (:mod:`.fastmath_poly`).
``stock``
    Numba's own math: correct everywhere, not vectorized.

Each function dispatches on float32/float64 (integers and booleans compute in float64) and
uses the best route available for that function and dtype: with ``FUNCTRANS_FASTMATH=auto``
(the default) libmvec where it has the function, else portable, else stock; ``libmvec`` and
``portable`` ask for that route first; ``off`` uses stock math only. The variable is read at
import; :func:`set_route` changes the choice for kernels compiled afterwards.

Example::

    import numba, numpy as np
    from functrans.transforms.lowering import fastmath as fm

    @numba.njit(**fm.kernel_options())
    def f(x, out):
        for i in range(x.size):
            v = x[i]
            out[i] = fm.tanh(v) * fm.sin(v) + v * v * np.float32(0.5)

Kernels should be compiled with :func:`kernel_options`. The functions also add LLVM's
``"prefer-vector-width"="512"`` hint to the function that calls them on AVX-512 hosts;
:func:`prefer_wide_vectors` does only that, for kernels without math calls.
"""
from __future__ import annotations

import math
import os
import warnings

import numba
import numpy as np
from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic

from functrans.transforms.lowering import fastmath_libmvec as _mv
from functrans.transforms.lowering import fastmath_poly as _poly
from functrans.transforms.lowering.fastmath_ir import (prefer_wide_vectors,
                                                       preferred_vector_width, tag_wide_vectors)

__all__ = [
    "FUNCTIONS", "ROUTES", "KERNEL_FASTMATH_FLAGS", "kernel_options", "prefer_wide_vectors",
    "preferred_vector_width", "route", "set_route", "get", "functions", "implementation",
    "has_simd", "libmvec_available",
    "exp", "exp2", "log", "log2", "log10", "log1p", "expm1", "tanh", "sin", "cos", "tan",
    "logistic", "sigmoid", "erf", "erfc", "sinh", "cosh", "asinh", "acosh", "atanh", "atan",
    "asin", "acos", "cbrt", "pow", "atan2", "hypot",
]

ROUTES = ("auto", "libmvec", "portable", "off")
"""Values of FUNCTRANS_FASTMATH and :func:`set_route`."""

KERNEL_FASTMATH_FLAGS = frozenset({"afn", "nsz", "reassoc"})
"""LLVM fast-math flags for kernels. Not ``fastmath=True``: its ``nnan``/``ninf`` flags let
LLVM assume no nan or inf exists, which breaks nan propagation and overflow to inf. Not
``arcp``: it turns 1/sqrt(x) and divisions into reciprocal estimates (1 ulp off, nan for 0
and inf). Not ``contract``: fusing a*b + c into one FMA rounds differently from NumPy, so
arithmetic would no longer match eager evaluation bit for bit (no measurable speed cost)."""


def kernel_options(**overrides) -> dict:
    """Keyword arguments for ``numba.njit`` that let kernels vectorize: ``error_model='numpy'``
    (the default 'python' model adds division checks that block vectorization) and the
    fast-math flag set :data:`KERNEL_FASTMATH_FLAGS`. Extra keywords (``parallel=True``,
    ``cache=True``) are merged in.

    Constants in kernels should be typed (``np.float32(0.5)``): a Python float promotes
    float32 arithmetic to float64. Reductions vectorize with ``reassoc``; summing blocks of
    a few thousand elements in the input precision and the blocks in float64 keeps them
    accurate at the same speed, provided the inner loop has a fixed trip count (full blocks,
    then the remainder): with a variable bound LLVM does not interleave it.

    >>> kernel_options(parallel=True)["error_model"]
    'numpy'
    """
    opts = {"error_model": "numpy", "fastmath": set(KERNEL_FASTMATH_FLAGS)}
    opts.update(overrides)
    return opts


# -- stock route: Numba's math, typed per dtype --------------------------------------------

_stock_jit = numba.njit(error_model="numpy", nogil=True)


def _stock_unary(fn, dt):
    if fn == "logistic":
        return _poly.make_logistic(dt, _stock_jit(lambda x: math.exp(x)))
    if fn == "exp2":
        two = dt(2)
        return _stock_jit(lambda x: two ** x)
    if fn == "cbrt":
        return _stock_jit(lambda x: np.cbrt(x))
    f = getattr(math, fn)
    return _stock_jit(lambda x: f(x))


def _stock_binary(fn):
    f = getattr(math, fn)
    return _stock_jit(lambda x, y: f(x, y))


_UNARY = ("exp", "exp2", "log", "log2", "log10", "log1p", "expm1", "tanh", "sin", "cos", "tan",
          "logistic", "erf", "erfc", "sinh", "cosh", "asinh", "acosh", "atanh", "atan", "asin",
          "acos", "cbrt")
_BINARY = ("pow", "atan2", "hypot")
FUNCTIONS = _UNARY + _BINARY
"""Names of the functions provided (``sigmoid`` is an alias of ``logistic``)."""

_DTYPES = (types.float32, types.float64)
_STOCK = {}
for _name in _UNARY:
    for _dt, _npdt in zip(_DTYPES, (np.float32, np.float64)):
        _STOCK[_name, _dt] = _stock_unary(_name, _npdt)
for _name in _BINARY:
    _f = _stock_binary(_name)
    for _dt in _DTYPES:
        _STOCK[_name, _dt] = _f


# -- libmvec route: the intrinsics, plus logistic built on libmvec exp ----------------------

def _libmvec_impls():
    impls = {}
    for name in FUNCTIONS:
        for dt in _DTYPES:
            if name in _mv.FUNCTIONS and _mv.supported(name, dt):
                impls[name, dt] = _mv.get(name)
    for dt, npdt in zip(_DTYPES, (np.float32, np.float64)):
        if ("exp", dt) in impls:
            impls["logistic", dt] = _poly.make_logistic(npdt, _mv.get("exp"))
    return impls


_IMPLS = {"libmvec": _libmvec_impls(), "portable": dict(_poly.IMPLS), "stock": _STOCK}


def libmvec_available() -> bool:
    """Whether glibc's libmvec was found and loaded.

    >>> libmvec_available() in (True, False)
    True
    """
    return _mv.AVAILABLE


def _as_numba_dtype(dtype):
    if isinstance(dtype, types.Type):
        return dtype
    return numba.from_dtype(np.dtype(dtype))


def _order(setting: str):
    if setting == "off":
        return ("stock",)
    if setting == "portable":
        return ("portable", "stock")
    return ("libmvec", "portable", "stock")  # "auto" and "libmvec"


def implementation(name: str, dtype, route: str | None = None) -> str:
    """Which implementation ``name`` uses for ``dtype`` under ``route`` (default: the current
    setting): ``'libmvec'``, ``'portable'`` or ``'stock'``.

    >>> implementation("exp", "float32", route="off")
    'stock'
    """
    name = "logistic" if name == "sigmoid" else name
    if name not in FUNCTIONS:
        raise KeyError(f"unknown fast-math function {name!r}")
    dt = _as_numba_dtype(dtype)
    for r in _order(_check_route(route or _current)):
        if (name, dt) in _IMPLS[r]:
            return r
    raise TypeError(f"{name} has no implementation for {dtype}")


def has_simd(name: str, dtype, route: str | None = None) -> bool:
    """Whether ``name`` on ``dtype`` vectorizes on this machine under ``route`` (default: the
    current setting).

    >>> has_simd("tanh", "float32", route="portable")
    True
    >>> has_simd("tanh", "float32", route="off")
    False
    """
    return implementation(name, dtype, route) != "stock"


# -- entries: one intrinsic per function and route setting ---------------------------------

def _make_entry(name: str, setting: str):
    nargs = 2 if name in _BINARY else 1
    table = {dt: _IMPLS[implementation(name, dt, setting)][name, dt] for dt in _DTYPES}

    def typer(typingctx, *args):
        if len(args) != nargs:
            return None
        if not all(isinstance(a, (types.Float, types.Integer, types.Boolean)) for a in args):
            return None
        floats = [a for a in args if isinstance(a, types.Float)]
        dt = types.float32 if floats and all(a == types.float32 for a in floats) \
            and len(floats) == nargs else types.float64
        if any(isinstance(a, types.Float) and a not in _DTYPES for a in args):
            return None
        impl = table[dt]
        fnty = typingctx.resolve_value_type(impl)
        impl_sig = fnty.get_call_type(typingctx, (dt,) * nargs, {})

        def codegen(context, builder, sig, llargs):
            cast = [context.cast(builder, v, t, dt) for v, t in zip(llargs, sig.args)]
            tag_wide_vectors(builder.function)
            call = context.get_function(fnty, impl_sig)
            block, start, nblocks = builder.block, len(builder.block.instructions), \
                len(builder.function.blocks)
            res = context.cast(builder, call(builder, cast), impl_sig.return_type, dt)
            # Helpers are separate functions; inline them whatever their size so that the
            # loop around this call can be vectorized.
            new = block.instructions[start:] + [
                i for b in builder.function.blocks[nblocks:] for i in b.instructions]
            for instr in new:
                if _is_external_call(instr):
                    instr.attributes.add("alwaysinline")
            return res
        return dt(*args), codegen

    if nargs == 1:
        def entry(typingctx, x):
            return typer(typingctx, x)
    else:
        def entry(typingctx, x, y):
            return typer(typingctx, x, y)
    entry.__name__ = entry.__qualname__ = name
    return intrinsic(entry)


def _is_external_call(instr) -> bool:
    return (isinstance(instr, ir.CallInstr) and isinstance(instr.callee, ir.Function)
            and instr.callee.is_declaration and not instr.callee.name.startswith("llvm."))


_DOCS = {
    "exp": "e**x", "exp2": "2**x", "log": "natural logarithm", "log2": "base-2 logarithm",
    "log10": "base-10 logarithm", "log1p": "log(1 + x), accurate for small x",
    "expm1": "exp(x) - 1, accurate for small x", "tanh": "hyperbolic tangent",
    "sin": "sine", "cos": "cosine", "tan": "tangent", "logistic": "1 / (1 + exp(-x))",
    "erf": "error function", "erfc": "complementary error function",
    "sinh": "hyperbolic sine", "cosh": "hyperbolic cosine", "asinh": "inverse hyperbolic sine",
    "acosh": "inverse hyperbolic cosine", "atanh": "inverse hyperbolic tangent",
    "atan": "arc tangent", "asin": "arc sine", "acos": "arc cosine", "cbrt": "cube root",
    "pow": "x**y", "atan2": "arc tangent of y/x in the right quadrant (args y, x)",
    "hypot": "sqrt(x*x + y*y) without overflow",
}

_ENTRIES: dict = {}


def get(name: str, route: str | None = None):
    """The njit-callable function ``name`` for ``route`` (default: the current setting).

    Generated code can bind these under any name; tests use it to reach one route while
    another is the default.

    >>> import numba, numpy as np
    >>> exp = get("exp", "portable")
    >>> f = numba.njit(lambda v: exp(v))
    >>> bool(abs(f(np.float32(1.0)) - np.float32(np.e)) <= 2.4e-7)
    True
    """
    name = "logistic" if name == "sigmoid" else name
    setting = _check_route(route or _current)
    key = (name, setting)
    if key not in _ENTRIES:
        if name not in FUNCTIONS:
            raise KeyError(f"unknown fast-math function {name!r}")
        entry = _make_entry(name, setting)
        args = "x, y" if name in _BINARY else "x"
        call_args = "x[i], y[i]" if name in _BINARY else "x[i]"
        entry.__doc__ = (f"{name}({args}): {_DOCS[name]}, for float32/float64 inside njit code "
                         f"(route setting {setting!r}).\n\n"
                         f"    @numba.njit(**kernel_options())\n"
                         f"    def k(x, out):\n"
                         f"        for i in range(x.size):\n"
                         f"            out[i] = fastmath.{name}({call_args})\n")
        _ENTRIES[key] = entry
    return _ENTRIES[key]


def functions(route: str | None = None) -> dict:
    """``{name: function}`` for ``route`` (default: the current setting), ``sigmoid``
    included: the globals a code generator gives its kernels.

    >>> sorted(functions())[:3]
    ['acos', 'acosh', 'asin']
    """
    table = {name: get(name, route) for name in FUNCTIONS}
    table["sigmoid"] = table["logistic"]
    return table


def _check_route(setting: str) -> str:
    if setting not in ROUTES:
        raise ValueError(f"fast-math route must be one of {ROUTES}, not {setting!r}")
    return setting


def route() -> str:
    """The current route setting, one of :data:`ROUTES`.

    >>> route() in ROUTES
    True
    """
    return _current


def set_route(setting: str) -> str:
    """Use route ``setting`` for the module-level functions (``fastmath.exp``...) in kernels
    compiled from now on; returns the previous setting.

    Kernels already compiled keep their code, and so do ``cache=True`` kernels loaded from
    disk: code generators should bind :func:`get` results with the route in their cache key.

    >>> old = set_route("portable"); _ = set_route(old)
    """
    global _current
    previous = _current
    _current = _check_route(setting)
    globals().update(functions())
    return previous


def _initial_route() -> str:
    setting = os.environ.get("FUNCTRANS_FASTMATH", "auto").strip().lower() or "auto"
    if setting not in ROUTES:
        warnings.warn(f"FUNCTRANS_FASTMATH={setting!r} is not one of {ROUTES}; using 'auto'",
                      RuntimeWarning, stacklevel=2)
        setting = "auto"
    if setting == "libmvec" and not _mv.AVAILABLE:
        warnings.warn("FUNCTRANS_FASTMATH=libmvec but glibc's libmvec was not found; "
                      "using the portable approximations", RuntimeWarning, stacklevel=2)
    return setting


_current = _initial_route()

# Bound by set_route; listed for readers and linters.
exp = exp2 = log = log2 = log10 = log1p = expm1 = tanh = sin = cos = tan = logistic = \
    sigmoid = erf = erfc = sinh = cosh = asinh = acosh = atanh = atan = asin = acos = cbrt = \
    pow = atan2 = hypot = None  # noqa: E305
globals().update(functions())
