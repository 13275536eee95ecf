"""Scalar expressions for elementwise primitives inside generated loops.

``scalar_rules[name](ctx, args, in_avals, out_aval, **params)`` returns a Python expression
(a string) computing one element from the argument expressions; it may add temporaries with
``ctx.tmp(expr)`` and typed constants with ``ctx.const(value, dtype)``. The emitter casts the
result to the output dtype (Numba widens small integer arithmetic to int64).

Transcendentals go through :mod:`.fastmath` (SIMD-vectorizable implementations); the integer
and NaN semantics match the primitives' NumPy impls.
"""
from __future__ import annotations

import numpy as np

from functrans.primitives.elementwise import integer_pow_steps

from . import fastmath

scalar_rules: dict = {}

_FM = set(fastmath.FUNCTIONS)
_MATH = {"exp": "exp", "log": "log", "log1p": "log1p", "expm1": "expm1", "tanh": "tanh",
         "sin": "sin", "cos": "cos", "tan": "tan", "asin": "asin", "acos": "acos",
         "atan": "atan", "sinh": "sinh", "cosh": "cosh", "asinh": "asinh", "acosh": "acosh",
         "atanh": "atanh", "erf": "erf", "erfc": "erfc", "lgamma": "lgamma"}


def dtype_ctor(dtype) -> str:
    """The Numba-callable constructor of a dtype's scalars: ``np.float32`` etc."""
    d = np.dtype(dtype)
    return "np.bool_" if d == np.bool_ else f"np.{d.name}"


def _kind(aval) -> str:
    return aval.dtype.kind


# Complex operands: Numba's cmath (the SIMD fast-math paths are real-only).
_CMATH = {"exp", "log", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh",
          "asinh", "acosh", "atanh", "sqrt"}
_COMPLEX_RT = {"log1p": "rt.clog1p", "expm1": "rt.cexpm1"}


def _math(name):
    fm_name = {"asin": "asin", "acos": "acos", "atan": "atan"}.get(name, name)

    def rule(ctx, args, in_avals, out_aval, **params):
        if _kind(out_aval) == "c":
            return _complex_math(name, args[0])
        if fm_name in _FM:
            return f"fm.{fm_name}({args[0]})"
        return f"math.{_MATH[name]}({args[0]})"
    return rule


def _complex_math(name, arg):
    if name in _CMATH:
        return f"cmath.{name}({arg})"
    return f"{_COMPLEX_RT[name]}({arg})"


for _name in ("exp", "log", "log1p", "expm1", "tanh", "sin", "cos", "tan", "asin", "acos",
              "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "erf", "erfc"):
    scalar_rules[_name] = _math(_name)
scalar_rules["lgamma"] = lambda ctx, a, i, o: f"math.lgamma({a[0]})"
scalar_rules["exp2"] = lambda ctx, a, i, o: (
    f"cmath.exp({a[0]} * {ctx.const(np.log(2), o.dtype)})" if _kind(o) == "c" else
    f"fm.exp2({a[0]})" if "exp2" in _FM else f"({ctx.const(2, o.dtype)} ** {a[0]})")
scalar_rules["logistic"] = lambda ctx, a, i, o: f"fm.logistic({a[0]})"
scalar_rules["cbrt"] = lambda ctx, a, i, o: f"fm.cbrt({a[0]})"
scalar_rules["sqrt"] = lambda ctx, a, i, o: f"{'c' * (_kind(o) == 'c')}math.sqrt({a[0]})"
scalar_rules["rsqrt"] = lambda ctx, a, i, o: (
    f"({ctx.const(1, o.dtype)} / {'c' * (_kind(o) == 'c')}math.sqrt({a[0]}))")
scalar_rules["erf_inv"] = lambda ctx, a, i, o: f"sp.erf_inv_scalar({a[0]})"
scalar_rules["digamma"] = lambda ctx, a, i, o: f"sp.digamma_scalar({a[0]})"
scalar_rules["polygamma"] = lambda ctx, a, i, o: f"sp.polygamma_scalar({a[0]}, {a[1]})"
scalar_rules["zeta"] = lambda ctx, a, i, o: f"sp.zeta_scalar({a[0]}, {a[1]})"
scalar_rules["square"] = lambda ctx, a, i, o: f"({a[0]} * {a[0]})"
scalar_rules["neg"] = lambda ctx, a, i, o: f"(-{a[0]})"
scalar_rules["stop_gradient"] = lambda ctx, a, i, o: a[0]


def _user_scalar(ctx, args, in_avals, out_aval, *, code):
    """A user's scalar kernel (``numba_vectorize``): a call of its Numba function, found by
    key when the generated module is loaded (``core.user_code.lookup``)."""
    name = "_uf_" + code.lookup_key
    line = f"{name} = user_function({code.lookup_key!r})"
    if line not in ctx.const_lines:
        ctx.const_lines.append(line)
    return f"{name}({', '.join(args)})"


scalar_rules["numba_vectorize"] = _user_scalar
scalar_rules["floor"] = lambda ctx, a, i, o: f"np.floor({a[0]})"
scalar_rules["ceil"] = lambda ctx, a, i, o: f"np.ceil({a[0]})"
scalar_rules["is_finite"] = lambda ctx, a, i, o: f"np.isfinite({a[0]})"


def _round(ctx, a, i, o, *, rounding_method):
    return f"np.rint({a[0]})" if rounding_method == 1 else f"rt.round_away({a[0]})"


def _abs(ctx, a, i, o):
    return a[0] if _kind(o) in "ub" else f"abs({a[0]})"


def _sign(ctx, a, i, o):
    if _kind(o) == "c":
        return f"rt.csign({a[0]})"
    x = ctx.tmp(a[0])
    if _kind(o) == "f":
        one, zero = ctx.const(1, o.dtype), ctx.const(0, o.dtype)
        return f"({x} if {x} != {x} else ({one} if {x} > {zero} else (-{one} if {x} < {zero} " \
               f"else {zero})))"
    if _kind(o) == "u":
        return f"({x} > 0)"
    return f"(({x} > 0) - ({x} < 0))"


def _not(ctx, a, i, o):
    return f"(not {a[0]})" if _kind(o) == "b" else f"(~{a[0]})"


def _popcount(ctx, a, i, o):
    bits = 8 * o.dtype.itemsize
    mask = ctx.const((1 << bits) - 1, np.uint64)
    return f"rt.popcount64(np.uint64({a[0]}) & {mask})"


def _integer_pow(ctx, a, i, o, *, y):
    acc = None
    base = ctx.tmp(a[0])
    for step in integer_pow_steps(y):
        if step == "square":
            base = ctx.tmp(f"{ctx.cast(f'{base} * {base}', o.dtype)}")
        elif step == "set":
            acc = base
        else:
            acc = ctx.tmp(ctx.cast(f"{acc} * {base}", o.dtype))
    if acc is None:
        return ctx.const(1, o.dtype)
    if y < 0:
        return f"({ctx.const(1, o.dtype)} / {acc})"
    return acc


scalar_rules.update(round=_round, abs=_abs, sign=_sign, integer_pow=_integer_pow,
                    population_count=_popcount)
scalar_rules["not"] = _not


def _add(ctx, a, i, o):
    return f"({a[0]} | {a[1]})" if _kind(o) == "b" else f"({a[0]} + {a[1]})"


def _mul(ctx, a, i, o):
    return f"({a[0]} & {a[1]})" if _kind(o) == "b" else f"({a[0]} * {a[1]})"


def _div(ctx, a, i, o):
    return f"({a[0]} / {a[1]})" if _kind(o) in "fc" else f"rt.idiv({a[0]}, {a[1]})"


def _rem(ctx, a, i, o):
    return f"np.fmod({a[0]}, {a[1]})" if _kind(o) == "f" else f"rt.irem({a[0]}, {a[1]})"


def extremum(which, a, b, kind):
    """Source text of ``which`` ("max" or "min") of ``a`` and ``b``, of dtype kind ``kind``:
    NaN-propagating for floats, JAX's lexicographic order for complex numbers (no NaN
    propagation: runtime.cmax), Python's max/min for integers and booleans.

    >>> extremum("max", "x", "y", "c")
    'rt.cmax(x, y)'
    """
    if kind in "fc":
        return f"rt.{kind}{which}({a}, {b})"
    return f"{which}({a}, {b})"


def _max(ctx, a, i, o):
    return extremum("max", a[0], a[1], _kind(o))


def _min(ctx, a, i, o):
    return extremum("min", a[0], a[1], _kind(o))


def _nextafter(ctx, a, i, o):
    fn = "nextafter32" if o.dtype == np.float32 else "nextafter64"
    return f"rt.{fn}({a[0]}, {a[1]})"


def _binary_fm(name, op):
    def rule(ctx, a, i, o):
        if name in _FM and _kind(o) != "c":
            return f"fm.{name}({a[0]}, {a[1]})"
        return op.format(*a)
    return rule


def _known(ctx, expr):
    """The value of ``expr`` when it names one of the emitter's constants, else None."""
    return getattr(ctx, "const_values", {}).get(expr)


def _shift(kind):
    def rule(ctx, a, i, o):
        bits = 8 * o.dtype.itemsize
        amount = _known(ctx, a[1])
        if amount is not None and 0 <= int(amount) < bits:
            # A constant in-range amount needs no range check: no branch, so no extra basic
            # blocks (a PRNG's rotations are thousands of these; branches make Numba's compile
            # time grow faster than the code).
            if kind == "left":
                return f"({a[0]} << {a[1]})"
            if kind == "arith":
                sx = f"{dtype_ctor(f'i{o.dtype.itemsize}')}({a[0]})" if _kind(o) == "u" else a[0]
                return f"({sx} >> {a[1]})"
            u = dtype_ctor(f"u{o.dtype.itemsize}")
            return f"({u}({a[0]}) >> {u}({a[1]}))"
        x, s = ctx.tmp(a[0]), ctx.tmp(a[1])
        ok = f"(({s} >= 0) and ({s} < {bits}))"
        if kind == "left":
            return f"({x} << {s} if {ok} else {ctx.const(0, o.dtype)})"
        if kind == "arith":  # on the signed view: unsigned operands fill with their top bit
            sx = ctx.tmp(f"{dtype_ctor(f'i{o.dtype.itemsize}')}({x})") if _kind(o) == "u" else x
            return f"({sx} >> {s} if {ok} else ({sx} >> {bits - 1}))"
        u = dtype_ctor(f"u{o.dtype.itemsize}")
        # Both branches unsigned: Numba unifies uint64 with int64 as float64, which rounds.
        zero = ctx.const(0, f"u{o.dtype.itemsize}")
        return f"({u}({x}) >> {u}({s}) if {ok} else {zero})"
    return rule


scalar_rules.update({
    "add": _add, "add_any": _add, "sub": lambda ctx, a, i, o: f"({a[0]} - {a[1]})",
    "mul": _mul, "div": _div, "rem": _rem, "max": _max, "min": _min,
    "pow": _binary_fm("pow", "({0} ** {1})"), "atan2": _binary_fm("atan2", "math.atan2({0}, {1})"),
    "nextafter": _nextafter,
    "and": lambda ctx, a, i, o: f"({a[0]} & {a[1]})",
    "or": lambda ctx, a, i, o: f"({a[0]} | {a[1]})",
    "xor": lambda ctx, a, i, o: f"({a[0]} ^ {a[1]})",
    "shift_left": _shift("left"), "shift_right_arithmetic": _shift("arith"),
    "shift_right_logical": _shift("logical"),
    "eq": lambda ctx, a, i, o: f"({a[0]} == {a[1]})",
    "ne": lambda ctx, a, i, o: f"({a[0]} != {a[1]})",
    "lt": lambda ctx, a, i, o: f"({a[0]} < {a[1]})",
    "le": lambda ctx, a, i, o: f"({a[0]} <= {a[1]})",
    "gt": lambda ctx, a, i, o: f"({a[0]} > {a[1]})",
    "ge": lambda ctx, a, i, o: f"({a[0]} >= {a[1]})",
})


def _select_n(ctx, a, i, o):
    which, cases = a[0], a[1:]
    if len(cases) == 1:
        return cases[0]
    if i[0].dtype == np.bool_:
        return f"rt.select({which}, {cases[1]}, {cases[0]})"
    w = ctx.tmp(which)
    expr = cases[-1]
    for k in range(len(cases) - 2, -1, -1):
        expr = f"rt.select({w} <= {k}, {cases[k]}, {expr})"
    return expr


def _convert(ctx, a, i, o, *, new_dtype, weak_type):
    src, dst = i[0].dtype, np.dtype(new_dtype)
    if dst == np.bool_:
        return f"({a[0]} != {ctx.const(0, src)})"
    x = f"({a[0]}).real" if src.kind == "c" and dst.kind != "c" else a[0]  # the real part
    if src.kind in "fc" and dst.kind in "iu":
        return f"rt.to_{dst.name}({x})"  # NaN to 0, saturated (Numba's cast: poison)
    return x  # the emitter's cast does the conversion


scalar_rules["select_n"] = _select_n
scalar_rules["fma"] = lambda ctx, a, i, o: f"rt.fma({a[0]}, {a[1]}, {a[2]})"
scalar_rules["convert_element_type"] = _convert
scalar_rules["real"] = lambda ctx, a, i, o: f"({a[0]}).real"
scalar_rules["imag"] = lambda ctx, a, i, o: f"({a[0]}).imag"
scalar_rules["conj"] = lambda ctx, a, i, o: f"({a[0]}).conjugate()"
scalar_rules["complex"] = lambda ctx, a, i, o: f"complex({a[0]}, {a[1]})"


_SAME_FLOAT = {"add", "add_any", "sub", "mul", "div", "neg"}
_COMPARE = {"eq", "ne", "lt", "le", "gt", "ge"}


def result_typed(name, in_avals, out_aval) -> bool:
    """Does the rule's expression already have the output's Numba type, so that the emitter
    need not wrap it in a cast? Each cast is a call Numba must type and lower (about a
    millisecond of compile time each). True for comparisons (Numba gives a boolean), float
    arithmetic on operands of the output's dtype (float32 stays float32), and selects among
    cases of the output's dtype. Integer arithmetic is not: Numba widens it to 64 bits."""
    d = out_aval.dtype
    if name in _COMPARE:
        return True
    if name in _SAME_FLOAT:
        return d.kind == "f" and all(a.dtype == d for a in in_avals)
    if name == "select_n":
        return all(a.dtype == d for a in in_avals[1:])
    if name == "convert_element_type":  # floats to integers: rt.to_<dtype>
        return d.kind in "iu" and in_avals[0].dtype.kind in "fc"
    return False
