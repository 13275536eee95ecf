"""Per-element LLVM code of elementwise primitives in native kernels.

``emit(fn, mod, name, args, in_avals, out_aval, params) -> Val`` computes one element.
Arithmetic, comparisons, selects, conversions, bitwise operations and rounding are written
here as LLVM instructions, with the semantics of the Numba backend's rules
(``lowering/scalar.py`` and ``lowering/runtime.py``: C-style integer division with x / 0 ==
0, NaN-propagating max/min, shifts past the bit width, Numba's casts). Transcendentals use
glibc's libmvec through vector-variant declarations where the fast-math route would (LLVM
then vectorizes them); every other rule (special functions, complex numbers, the portable
polynomials) is the Numba rule itself, compiled once and inlined (:mod:`.harvest`).
"""
from __future__ import annotations


import numpy as np

from functrans.primitives.elementwise import integer_pow_steps
from functrans.transforms.lowering import fastmath
from functrans.transforms.lowering import fastmath_libmvec as libmvec
from functrans.transforms.lowering.fastmath_ir import preferred_vector_width

from . import harvest
from .vector_math import libmvec_declarations
from .ir import FAST, Val, const, reg_type

__all__ = ["emit", "native_rules", "WIDE_ATTRS", "FRAME_ATTRS"]

_w = preferred_vector_width()
FRAME_ATTRS = "alignstack(64)"
"""A frame aligned to 64 bytes, for kernels, drivers and regions. LLVM spills vectors live
across a call (every vector register is the caller's to save) with unaligned moves at offsets
of the incoming stack pointer, which the ABI aligns to 16 bytes only: on a thread whose stack
sat at 16 mod 32, each spill in a loop calling vector sin and tanh split a cache line, and the
loop ran 1.8x slower (40 against 22 ms in ``bench_spmd``'s per-shard loop: always on threads,
on the main thread in one process of two, as ASLR placed its stack)."""

WIDE_ATTRS = (f'"prefer-vector-width"="{_w}" ' if _w else "") + FRAME_ATTRS
"""Kernels' function attributes: the widest useful vectors (AVX-512 hosts), an aligned frame."""

native_rules: dict = {}


def _kind(aval) -> str:
    return np.dtype(aval.dtype).kind


def _bits(aval) -> int:
    return 8 * np.dtype(aval.dtype).itemsize


def _rule(*names):
    def register(f):
        for n in names:
            native_rules[n] = f
        return f
    return register


def emit(fn, mod, name, args, in_avals, out_aval, params, eqn=None) -> Val:
    """One element of primitive ``name`` applied to ``args`` (Vals of the inputs' register
    types); a Val of the output's register type. ``eqn``, the equation computed, is named
    if compiling a harvested rule fails."""
    rule = native_rules.get(name)
    if rule is not None and not any(_kind(a) == "c" for a in list(in_avals) + [out_aval]):
        v = rule(fn, mod, args, in_avals, out_aval, **params)
        if v is not None:
            return v
    return _harvested(fn, mod, name, args, in_avals, out_aval, params, eqn)


def _harvested(fn, mod, name, args, in_avals, out_aval, params, eqn) -> Val:
    symbol, ptypes = harvest.scalar_function(name, in_avals, out_aval, params)
    mod.link(symbol, eqn)
    mod.declare(symbol, f"declare i32 @{symbol}(ptr, ptr, {', '.join(ptypes)})"
                if ptypes else f"declare i32 @{symbol}(ptr, ptr)")
    flat = []
    for v, a in zip(args, in_avals):
        d = np.dtype(a.dtype)
        if d.kind == "c":
            part = harvest.arg_types(d)[0]
            flat += [Val(part, fn.op(f"extractvalue {v}, {k}")) for k in (0, 1)]
        elif d.kind == "b":
            flat.append(Val("i8", fn.op(f"zext {v} to i8")))
        else:
            flat.append(v)
    rty = harvest.ret_type(out_aval.dtype)
    slot = fn.alloca(rty)
    exc = fn.alloca("ptr")
    call_args = ", ".join([f"ptr {slot}", f"ptr {exc}"] + [str(v) for v in flat])
    fn.do(f"call i32 @{symbol}({call_args}) #0")
    mod.declare("#0", "attributes #0 = { alwaysinline }")
    r = fn.load(rty, slot)
    if _kind(out_aval) == "b":
        return Val("i1", fn.op(f"icmp ne i8 {r}, 0"))
    return Val(rty, r)


# -- casts (as Numba casts: the Numba backend wraps rule results in np.<dtype>(...)) ----------

def cast(fn, v: Val, src_dtype, dst_dtype) -> Val:
    """``v`` (of ``src_dtype``) converted to ``dst_dtype`` as Numba's ``np.<dtype>(v)``, except
    floats to integers (see ``_float_to_int``)."""
    s, d = np.dtype(src_dtype), np.dtype(dst_dtype)
    ty = reg_type(d)
    if s == d:
        return v
    if d.kind == "b":
        if s.kind == "f":
            return Val("i1", fn.op(f"fcmp une {v}, 0.0"))
        return Val("i1", fn.op(f"icmp ne {v}, 0"))
    if s.kind == "b":
        if d.kind == "f":
            return Val(ty, fn.op(f"uitofp {v} to {ty}"))
        return Val(ty, fn.op(f"zext {v} to {ty}"))
    if s.kind in "iu" and d.kind in "iu":
        if s.itemsize == d.itemsize:
            return Val(ty, v.ref)
        if s.itemsize > d.itemsize:
            return Val(ty, fn.op(f"trunc {v} to {ty}"))
        return Val(ty, fn.op(f"{'sext' if s.kind == 'i' else 'zext'} {v} to {ty}"))
    if s.kind in "iu" and d.kind == "f":
        return Val(ty, fn.op(f"{'sitofp' if s.kind == 'i' else 'uitofp'} {v} to {ty}"))
    if s.kind == "f" and d.kind in "iu":
        return _float_to_int(fn, v, d)
    if s.kind == "f" and d.kind == "f":
        op = "fpext" if d.itemsize > s.itemsize else "fptrunc"
        return Val(ty, fn.op(f"{op} {v} to {ty}"))
    raise NotImplementedError(f"native cast {s} -> {d}")


def _float_to_int(fn, v: Val, d) -> Val:
    """A float converted to the integer dtype ``d`` as XLA converts: truncated toward zero,
    NaN to 0, values out of range to the nearest bound (the Numba backend's
    ``rt.to_<dtype>`` and the eager impl do the same). ``fptosi``/``fptoui`` give poison
    there, which the selects discard. LLVM's ``fptosi.sat`` means the same, but x86 code
    generation scalarizes it (8x slower on 1M floats); these compares vectorize with the
    conversion, at no measurable cost."""
    ty, info = reg_type(d), np.iinfo(d)
    if v.ty == "half":  # the bounds are beyond half's range (and exact in float)
        v = Val("float", fn.op(f"fpext {v} to float"))
    fty = np.float32 if v.ty == "float" else np.float64
    lo, hi = float(info.min), float(info.max) + 1.0  # 0 or powers of two: exact
    raw = fn.op(f"{'fptosi' if d.kind == 'i' else 'fptoui'} {v} to {ty}")
    small = fn.op(f"fcmp ole {v}, {const(lo, fty).ref}")
    big = fn.op(f"fcmp oge {v}, {const(hi, fty).ref}")
    nan = fn.op(f"fcmp uno {v}, {v.ref}")
    r = fn.op(f"select i1 {small}, {const(info.min, d)}, {ty} {raw}")
    r = fn.op(f"select i1 {big}, {const(info.max, d)}, {ty} {r}")
    return Val(ty, fn.op(f"select i1 {nan}, {ty} 0, {ty} {r}"))


# -- arithmetic --------------------------------------------------------------------------------

def _binop(fn, a, b, op_f, op_i, kind) -> Val:
    if kind == "f":
        return Val(a.ty, fn.op(f"{op_f} {FAST} {a}, {b.ref}"))
    return Val(a.ty, fn.op(f"{op_i} {a}, {b.ref}"))


@_rule("add", "add_any")
def _add(fn, mod, a, i, o):
    if _kind(o) == "b":
        return Val("i1", fn.op(f"or {a[0]}, {a[1].ref}"))
    return _binop(fn, a[0], a[1], "fadd", "add", _kind(o))


@_rule("sub")
def _sub(fn, mod, a, i, o):
    if _kind(o) == "b":
        return None
    return _binop(fn, a[0], a[1], "fsub", "sub", _kind(o))


@_rule("mul")
def _mul(fn, mod, a, i, o):
    if _kind(o) == "b":
        return Val("i1", fn.op(f"and {a[0]}, {a[1].ref}"))
    return _binop(fn, a[0], a[1], "fmul", "mul", _kind(o))


@_rule("div")
def _div(fn, mod, a, i, o):
    k = _kind(o)
    if k == "f":
        return _binop(fn, a[0], a[1], "fdiv", None, "f")
    if k not in "iu":
        return None
    return _int_divrem(fn, a[0], a[1], k, "div", _bits(o))


@_rule("rem")
def _rem(fn, mod, a, i, o):
    k = _kind(o)
    if k == "f":
        return Val(a[0].ty, fn.op(f"frem {a[0]}, {a[1].ref}"))
    if k not in "iu":
        return None
    return _int_divrem(fn, a[0], a[1], k, "rem", _bits(o))


def _int_divrem(fn, x, y, kind, what, bits) -> Val:
    """C semantics (truncating), x / 0 == x % 0 == 0; MIN / -1 wraps to MIN (and MIN % -1 is
    0) instead of trapping."""
    ty = x.ty
    zero = fn.op(f"icmp eq {y}, 0")
    bad = zero
    if kind == "i":
        lo = -(1 << (bits - 1))
        over = fn.op(f"and i1 {fn.op(f'icmp eq {x}, {lo}')}, {fn.op(f'icmp eq {y}, -1')}")
        bad = fn.op(f"or i1 {zero}, {over}")
    safe = fn.op(f"select i1 {bad}, {ty} 1, {y}")
    op = {("i", "div"): "sdiv", ("u", "div"): "udiv", ("i", "rem"): "srem",
          ("u", "rem"): "urem"}[kind, what]
    q = fn.op(f"{op} {x}, {safe}")
    if kind == "i" and what == "div":
        q = fn.op(f"select i1 {over}, {x}, {ty} {q}")  # MIN / -1 == MIN (wrapped)
    if kind == "i" and what == "rem":
        q = fn.op(f"select i1 {over}, {ty} 0, {ty} {q}")
    return Val(ty, fn.op(f"select i1 {zero}, {ty} 0, {ty} {q}"))


@_rule("neg")
def _neg(fn, mod, a, i, o):
    k = _kind(o)
    if k == "f":
        return Val(a[0].ty, fn.op(f"fneg {FAST} {a[0]}"))
    if k in "iu":
        return Val(a[0].ty, fn.op(f"sub {a[0].ty} 0, {a[0].ref}"))
    return None


@_rule("square")
def _square(fn, mod, a, i, o):
    if _kind(o) == "b":
        return None
    return _binop(fn, a[0], a[0], "fmul", "mul", _kind(o))


@_rule("stop_gradient")
def _identity(fn, mod, a, i, o):
    return a[0]


def _minmax(which):
    def rule(fn, mod, a, i, o):
        x, y = a
        k = _kind(o)
        if k == "f":
            # NaN-propagating (np.maximum): x if x is nan, else y if y is nan, else the pick;
            # ties keep x (so max(0.0, -0.0) is 0.0, as the Numba rule).
            keep_x = fn.op(f"fcmp {'oge' if which == 'max' else 'ole'} {x}, {y.ref}")
            x_nan = fn.op(f"fcmp uno {x}, {x.ref}")
            y_nan = fn.op(f"fcmp uno {y}, {y.ref}")
            pick = fn.op(f"select i1 {keep_x}, {x}, {y}")
            pick = fn.op(f"select i1 {y_nan}, {y}, {x.ty} {pick}")
            return Val(x.ty, fn.op(f"select i1 {x_nan}, {x}, {x.ty} {pick}"))
        if k == "b":
            return Val("i1", fn.op(f"{'or' if which == 'max' else 'and'} {x}, {y.ref}"))
        cmp = {"max": {"i": "sge", "u": "uge"}, "min": {"i": "sle", "u": "ule"}}[which][k]
        return Val(x.ty, fn.op(f"select i1 {fn.op(f'icmp {cmp} {x}, {y.ref}')}, {x}, {y}"))
    return rule


native_rules["max"] = _minmax("max")
native_rules["min"] = _minmax("min")


def _intrinsic(fn, mod, name, v: Val) -> Val:
    suffix = {"float": "f32", "double": "f64"}.get(v.ty, v.ty)
    sym = f"llvm.{name}.{suffix}"
    mod.declare(sym, f"declare {v.ty} @{sym}({v.ty})")
    return Val(v.ty, fn.op(f"call {FAST if v.ty in ('float', 'double') else ''} "
                           f"{v.ty} @{sym}({v})".replace("call  ", "call ")))


@_rule("abs")
def _abs(fn, mod, a, i, o):
    k = _kind(o)
    if k in "ub":
        return a[0]
    if k == "f":
        return _intrinsic(fn, mod, "fabs", a[0])
    x = a[0]
    neg = fn.op(f"icmp slt {x}, 0")
    return Val(x.ty, fn.op(f"select i1 {neg}, {x.ty} {fn.op(f'sub {x.ty} 0, {x.ref}')}, {x}"))


@_rule("sign")
def _sign(fn, mod, a, i, o):
    k, x = _kind(o), a[0]
    if k == "f":
        one, zero = const(1, o.dtype), const(0, o.dtype)
        mone = const(-1, o.dtype)
        r = fn.op(f"select i1 {fn.op(f'fcmp olt {x}, {zero.ref}')}, {mone}, {zero}")
        r = fn.op(f"select i1 {fn.op(f'fcmp ogt {x}, {zero.ref}')}, {one}, {x.ty} {r}")
        return Val(x.ty, fn.op(f"select i1 {fn.op(f'fcmp uno {x}, {x.ref}')}, {x}, {x.ty} {r}"))
    if k == "u":
        return Val(x.ty, fn.op(f"zext i1 {fn.op(f'icmp ugt {x}, 0')} to {x.ty}"))
    if k == "i":
        pos = fn.op(f"zext i1 {fn.op(f'icmp sgt {x}, 0')} to {x.ty}")
        neg = fn.op(f"zext i1 {fn.op(f'icmp slt {x}, 0')} to {x.ty}")
        return Val(x.ty, fn.op(f"sub {x.ty} {pos}, {neg}"))
    return None


def _float_intrinsic(name):
    def rule(fn, mod, a, i, o):
        if _kind(o) != "f" or _kind(i[0]) != "f":
            return None
        return _intrinsic(fn, mod, name, a[0])
    return rule


native_rules["floor"] = _float_intrinsic("floor")
native_rules["ceil"] = _float_intrinsic("ceil")
native_rules["sqrt"] = _float_intrinsic("sqrt")


@_rule("round")
def _round(fn, mod, a, i, o, *, rounding_method):
    if _kind(o) != "f":
        return None
    return _intrinsic(fn, mod, "roundeven" if rounding_method == 1 else "round", a[0])


@_rule("rsqrt")
def _rsqrt(fn, mod, a, i, o):
    if _kind(o) != "f":
        return None
    s = _intrinsic(fn, mod, "sqrt", a[0])
    return Val(s.ty, fn.op(f"fdiv {FAST} {const(1, o.dtype)}, {s.ref}"))


@_rule("is_finite")
def _is_finite(fn, mod, a, i, o):
    if _kind(i[0]) != "f":
        return None
    ax = _intrinsic(fn, mod, "fabs", a[0])
    return Val("i1", fn.op(f"fcmp olt {ax}, {const(np.inf, i[0].dtype).ref}"))


@_rule("integer_pow")
def _integer_pow(fn, mod, a, i, o, *, y):
    k = _kind(o)
    if k == "b":
        return None
    acc, base = None, a[0]
    for step in integer_pow_steps(y):
        if step == "square":
            base = _binop(fn, base, base, "fmul", "mul", k)
        elif step == "set":
            acc = base
        else:
            acc = _binop(fn, acc, base, "fmul", "mul", k)
    if acc is None:
        return const(1, o.dtype)
    if y < 0:
        if k != "f":
            return None
        return Val(acc.ty, fn.op(f"fdiv {FAST} {const(1, o.dtype)}, {acc.ref}"))
    return acc


@_rule("fma")
def _fma(fn, mod, a, i, o):
    if _kind(o) != "f":
        return None
    ty = a[0].ty
    sym = f"llvm.fma.{'f32' if ty == 'float' else 'f64'}"
    mod.declare(sym, f"declare {ty} @{sym}({ty}, {ty}, {ty})")
    return Val(ty, fn.op(f"call {ty} @{sym}({a[0]}, {a[1]}, {a[2]})"))


@_rule("population_count")
def _popcount(fn, mod, a, i, o):
    if _kind(o) not in "iu":
        return None
    ty = a[0].ty
    sym = f"llvm.ctpop.{ty}"
    mod.declare(sym, f"declare {ty} @{sym}({ty})")
    return Val(ty, fn.op(f"call {ty} @{sym}({a[0]})"))


# -- bitwise, shifts, comparisons, selects ------------------------------------------------------

def _bitwise(op):
    def rule(fn, mod, a, i, o):
        return Val(a[0].ty, fn.op(f"{op} {a[0]}, {a[1].ref}"))
    return rule


native_rules["and"] = _bitwise("and")
native_rules["or"] = _bitwise("or")
native_rules["xor"] = _bitwise("xor")


@_rule("not")
def _not(fn, mod, a, i, o):
    return Val(a[0].ty, fn.op(f"xor {a[0]}, {'true' if a[0].ty == 'i1' else '-1'}"))


def _shift(kind):
    def rule(fn, mod, a, i, o):
        if _kind(o) not in "iu":
            return None
        x, s = a
        bits = _bits(o)
        op = {"left": "shl", "arith": "ashr", "logical": "lshr"}[kind]
        in_range = fn.op(f"icmp ult {s}, {bits}")  # unsigned: negative amounts are out too
        safe = fn.op(f"select i1 {in_range}, {s}, {x.ty} 0")
        shifted = fn.op(f"{op} {x}, {safe}")
        if kind == "arith":  # past the width: every bit is the sign bit
            fill = fn.op(f"ashr {x}, {bits - 1}")
        else:
            fill = "0"
        return Val(x.ty, fn.op(f"select i1 {in_range}, {x.ty} {shifted}, {x.ty} {fill}"))
    return rule


native_rules["shift_left"] = _shift("left")
native_rules["shift_right_arithmetic"] = _shift("arith")
native_rules["shift_right_logical"] = _shift("logical")

_FCMP = {"eq": "oeq", "ne": "une", "lt": "olt", "le": "ole", "gt": "ogt", "ge": "oge"}
_ICMP = {"eq": ("eq", "eq"), "ne": ("ne", "ne"), "lt": ("slt", "ult"), "le": ("sle", "ule"),
         "gt": ("sgt", "ugt"), "ge": ("sge", "uge")}


def _compare(name):
    def rule(fn, mod, a, i, o):
        k = _kind(i[0])
        if k == "f":
            return Val("i1", fn.op(f"fcmp {_FCMP[name]} {a[0]}, {a[1].ref}"))
        pred = _ICMP[name][0 if k == "i" else 1]
        return Val("i1", fn.op(f"icmp {pred} {a[0]}, {a[1].ref}"))
    return rule


for _name in _FCMP:
    native_rules[_name] = _compare(_name)


@_rule("select_n")
def _select_n(fn, mod, a, i, o):
    which, cases = a[0], a[1:]
    if len(cases) == 1:
        return cases[0]
    if _kind(i[0]) == "b":
        return Val(cases[0].ty, fn.op(f"select i1 {which.ref}, {cases[1]}, {cases[0]}"))
    expr = cases[-1]
    signed = _kind(i[0]) == "i"
    for k in range(len(cases) - 2, -1, -1):
        le = fn.op(f"icmp {'sle' if signed else 'ule'} {which}, {k}")
        expr = Val(expr.ty, fn.op(f"select i1 {le}, {cases[k]}, {expr}"))
    return expr


@_rule("convert_element_type")
def _convert(fn, mod, a, i, o, *, new_dtype, weak_type):
    return cast(fn, a[0], i[0].dtype, o.dtype)


@_rule("bitcast_convert_type")
def _bitcast(fn, mod, a, i, o, **params):
    if np.dtype(i[0].dtype).itemsize != np.dtype(o.dtype).itemsize or \
            "b" in (_kind(i[0]), _kind(o)):
        return None
    return Val(reg_type(o.dtype), fn.op(f"bitcast {a[0]} to {reg_type(o.dtype)}"))


# -- transcendentals: libmvec where the fast-math route would use it -----------------------------

_MV_NAMES = {"exp", "log", "log1p", "expm1", "tanh", "sin", "cos", "tan", "asin", "acos",
             "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "erf", "erfc", "exp2", "cbrt",
             "pow", "atan2"}


def _libmvec_used(name, o, i) -> bool:
    """Whether ``name`` of these operand and result types is libmvec's."""
    d = np.dtype(o.dtype)
    if d.kind != "f" or any(np.dtype(x.dtype) != d for x in i):
        return False
    return (fastmath.implementation(name, d) == "libmvec"
            and libmvec.supported(name, harvest._numba_type(d)))


def _libmvec(name):
    def rule(fn, mod, a, i, o):
        d = np.dtype(o.dtype)
        if not _libmvec_used(name, o, i):
            return None
        nd = harvest._numba_type(d)
        base, nargs = libmvec.FUNCTIONS[name]
        sym = base + ("f" if d == np.float32 else "")
        ty = reg_type(d)
        for key, text in libmvec_declarations(sym, ty, nargs, nd):
            mod.declare(key, text)
        # Without afn on pow: LLVM would rewrite pow(x, n + 0.5) as powi(x, n) * sqrt(x),
        # which is NaN instead of inf or 0 at x = 0 and x = inf (a safe-norm gradient at 0
        # came out NaN). The call still vectorizes to libmvec through its variants.
        flags = "nsz" if name == "pow" else FAST
        return Val(ty, fn.op(f"call {flags} {ty} @{sym}({', '.join(str(v) for v in a)})"))
    return rule


for _name in _MV_NAMES:
    native_rules[_name] = _libmvec(_name)

# exp's input below which its result is subnormal (libmvec then computes that lane with the
# scalar libm exp and its underflow handling: a masked softmax's -1e9 made exp 13x slower,
# 521 us against 40 for 64k float32 values), and below which it rounds to +0.
_EXP_SUBNORMAL = {np.dtype(np.float32): -87.0, np.dtype(np.float64): -708.0}
_EXP_ZERO = {np.dtype(np.float32): -104.0, np.dtype(np.float64): -746.0}


@_rule("exp")
def _exp(fn, mod, a, i, o):
    """libmvec's exp, with inputs whose result is subnormal computed as exp(x/2)^2 (both in
    range: no scalar fallback; a subnormal result is within one of its units) and inputs
    below the zero threshold clamped to it (whose square rounds to +0). NaN passes through:
    the comparisons are ordered."""
    d = np.dtype(o.dtype)
    vector_exp = _libmvec("exp")
    if d not in _EXP_ZERO or not _libmvec_used("exp", o, i):
        return vector_exp(fn, mod, a, i, o)
    x = a[0]
    low = fn.op(f"fcmp olt {x}, {const(_EXP_ZERO[d], d).ref}")
    xc = Val(x.ty, fn.op(f"select i1 {low}, {const(_EXP_ZERO[d], d)}, {x}"))
    small = fn.op(f"fcmp olt {xc}, {const(_EXP_SUBNORMAL[d], d).ref}")
    half = fn.op(f"fmul {xc}, {const(0.5, d).ref}")
    h = Val(x.ty, fn.op(f"select i1 {small}, {x.ty} {half}, {xc}"))
    e = vector_exp(fn, mod, [h], i, o)
    sq = fn.op(f"fmul {e}, {e.ref}")
    return Val(x.ty, fn.op(f"select i1 {small}, {x.ty} {sq}, {e}"))


@_rule("logistic")
def _logistic(fn, mod, a, i, o):
    """1 / (1 + exp(-x)) as the fast-math route computes it on libmvec's exp: e / (1 + e)
    with e = exp(-|x|) for x < 0, so neither tail overflows or cancels."""
    d = np.dtype(o.dtype)
    if d.kind != "f" or fastmath.implementation("logistic", d) != "libmvec":
        return None
    x = a[0]
    ax = _intrinsic(fn, mod, "fabs", x)
    e = native_rules["exp"](fn, mod, [Val(x.ty, fn.op(f"fneg {FAST} {ax}"))], i, o)
    if e is None:
        return None
    one = const(1, d)
    num = fn.op(f"select i1 {fn.op(f'fcmp oge {x}, 0.0')}, {one}, {e}")
    den = fn.op(f"fadd {FAST} {one}, {e.ref}")
    return Val(x.ty, fn.op(f"fdiv {FAST} {x.ty} {num}, {den}"))


@_rule("lgamma")
def _lgamma(fn, mod, a, i, o):
    """libm's lgamma, as Numba's math.lgamma calls it (float64; others are harvested)."""
    if np.dtype(o.dtype) != np.float64 or np.dtype(i[0].dtype) != np.float64:
        return None
    mod.declare("lgamma", "declare double @lgamma(double)")
    return Val("double", fn.op(f"call {FAST} double @lgamma({a[0]})"))
