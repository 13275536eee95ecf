"""Scalar rules compiled by Numba and inlined into native kernels as LLVM IR.

The Numba backend's scalar rules (``lowering/scalar.py``: special functions, complex
arithmetic, the fast-math routes...) define each elementwise primitive's semantics once.
For the rules the native backend does not write itself, the rule's expression is compiled
by Numba as a one-line scalar function with an explicit signature, and the LLVM IR of the
result (Numba's final module: libmvec vector-variant declarations included) is linked into
the kernel and inlined at the call, where LLVM vectorizes it like any other code. Each
function is compiled once per machine: its IR is kept in memory and in the on-disk cache,
so later processes never start Numba for it.

    >>> from functrans.core.avals import ShapedArray
    >>> f32 = ShapedArray((), np.dtype("float32"))
    >>> sym, params = scalar_function("lgamma", [f32], f32, {})
    >>> params, "define" in text(sym)
    (['float'], True)
"""
from __future__ import annotations

import hashlib
import os
import re
import threading
import warnings

import numba
import numpy as np
from numba import types

from functrans.transforms.lowering import fastmath
from functrans.transforms.lowering.cache_dir import warn_unwritable, write_atomically
from functrans.transforms.lowering.emit import const_text
from functrans.transforms.lowering.scalar import dtype_ctor, result_typed, scalar_rules

from . import engine, vector_math
from .ir import mem_type, reg_type

__all__ = ["scalar_function", "compiled_function", "text", "arg_types", "ret_type"]

_HEADER = """\
import cmath
import math

import numpy as np

from functrans.primitives import special_impls as sp
from functrans.transforms.lowering import fastmath as fm
from functrans.transforms.lowering import runtime as rt
from functrans.core.user_code import lookup as user_function
"""

_lock = threading.Lock()
_requests: dict = {}  # (source, signature, route) -> (symbol, params)
_pending: dict = {}  # symbol -> what to compile
_texts: dict = {}  # symbol -> IR text
_MAGIC = "; functrans harvested scalar function\n"


class _RuleContext:
    """What scalar rules expect of the emitter: typed constants and temporaries."""

    def __init__(self):
        self.const_lines: list = []
        self.const_values: dict = {}
        self.lines: list = []
        self.count = 0

    def const(self, value, dtype):
        dtype = np.dtype(dtype)
        v = np.asarray(value).astype(dtype)[()]
        name = f"_c{len(self.const_lines)}"
        self.const_lines.append(f"{name} = {const_text(v, dtype)}")
        self.const_values[name] = v
        return name

    def tmp(self, expr):
        self.count += 1
        name = f"t{self.count}"
        self.lines.append(f"    {name} = {expr}")
        return name

    def cast(self, expr, dtype):
        return f"{dtype_ctor(dtype)}({expr})"


def _numba_type(dtype):
    return numba.from_dtype(np.dtype(dtype))


def arg_types(dtype) -> list:
    """LLVM parameter types of one argument of ``dtype`` in Numba's calling convention
    (complex numbers are passed as their two parts, booleans as bytes)."""
    d = np.dtype(dtype)
    if d.kind == "c":
        part = "float" if d.itemsize == 8 else "double"
        return [part, part]
    return [mem_type(d)]


def ret_type(dtype) -> str:
    """The LLVM type Numba writes through the return pointer."""
    return mem_type(dtype)


def _source(name, in_avals, out_aval, params):
    ctx = _RuleContext()
    args = [f"a{k}" for k in range(len(in_avals))]
    expr = scalar_rules[name](ctx, args, in_avals, out_aval, **params)
    if not result_typed(name, in_avals, out_aval):
        expr = ctx.cast(expr, out_aval.dtype)
    body = "\n".join(ctx.lines + [f"    return {expr}"])
    consts = "\n".join(ctx.const_lines)
    return f"{_HEADER}\n{consts}\n\n\ndef scalar({', '.join(args)}):\n{body}\n"


def _compile(source, in_avals, out_aval):
    namespace: dict = {}
    exec(compile(source, "<functrans scalar rule>", "exec"), namespace)
    sig = _numba_type(out_aval.dtype)(*[_numba_type(a.dtype) for a in in_avals])
    opts = fastmath.kernel_options(no_cpython_wrapper=True, no_cfunc_wrapper=True)
    dispatcher = numba.njit(sig, **opts)(namespace["scalar"])
    cres = dispatcher.overloads[sig.args]
    return cres.fndesc.llvm_func_name, cres.library.get_llvm_str()


def _localize(text: str, mangled: str, symbol: str) -> str:
    """Rename the function to ``symbol`` and make the other definitions (helpers, globals;
    not the vector-variant keep-alive globals) internal. The function itself stays external
    so that a kernel's declaration links to it; ``engine.compile_ir`` internalizes it after
    linking, so kernels linking the same function don't clash."""
    text = re.sub(r'@"?' + re.escape(mangled) + r'"?(?=[\s(,])', "@" + symbol, text)
    out = []
    for line in text.splitlines():
        if line.startswith("define ") and f"@{symbol}(" not in line and \
                not any(f" {w} " in line for w in ("internal", "private", "linkonce_odr",
                                                   "weak_odr", "weak", "linkonce")):
            line = "define internal " + line[len("define "):]
        elif line.startswith("@") and " = " in line and "__functrans_keep" not in line:
            lhs, rhs = line.split(" = ", 1)
            if rhs.startswith("external "):
                # A declaration (no initializer: e.g. Python's exception objects, which
                # users' kernels refer to on error paths): made internal it would be a
                # definition without a value, which LLVM refuses. It stays external and
                # resolves to the process's symbol when loaded.
                out.append(line)
                continue
            rhs = re.sub(r"^(common |external |dso_local )*", "", rhs)
            if not rhs.startswith(("internal ", "private ", "linkonce", "weak")):
                rhs = "internal " + rhs
            rhs = rhs.replace("internal common ", "internal ")
            line = f"{lhs} = {rhs}"
        out.append(line)
    return "\n".join(out) + "\n"


def _cache_path(symbol):
    return os.path.join(engine._dir(), symbol + ".ll")


def _read_cached(symbol):
    try:
        with open(_cache_path(symbol), encoding="utf-8") as f:
            data = f.read()
    except (OSError, UnicodeDecodeError):
        return None
    head, _, text = data.partition("\n")
    if data.startswith(_MAGIC) and text:
        digest, _, body = text.partition("\n")
        if hashlib.sha256(body.encode()).hexdigest() == digest:
            return body
    warnings.warn(f"functrans: discarding a corrupt compiled-code cache entry "
                  f"({_cache_path(symbol)}); it is compiled again", engine.CacheWarning,
                  stacklevel=3)
    try:
        os.unlink(_cache_path(symbol))
    except OSError:
        pass
    return None


def _write_cached(symbol, body):
    text = _MAGIC + hashlib.sha256(body.encode()).hexdigest() + "\n" + body
    directory = None
    try:  # as engine.store_object: nothing left behind, a warning once
        directory = engine._dir()
        write_atomically(_cache_path(symbol), lambda f: f.write(text.encode("utf-8")))
    except OSError as e:
        warn_unwritable(directory or e.filename, e)


def scalar_function(name, in_avals, out_aval, params):
    """``(symbol, param_types)`` of the Numba-compiled scalar rule of primitive ``name`` for
    these types and params. Nothing is compiled yet: :func:`text` gives the function's LLVM
    IR (Numba's calling convention: ``i32 symbol(ptr ret, ptr excinfo, args...)``) when the
    kernel using it is compiled."""
    source = _source(name, in_avals, out_aval, params)
    sig = (str(out_aval.dtype),) + tuple(str(a.dtype) for a in in_avals)
    key = (source, sig, fastmath.route())
    hit = _requests.get(key)
    if hit is None:
        symbol = engine.symbol_for("fth", "\0".join((source,) + sig + (fastmath.route(),)))
        params_ = [t for a in in_avals for t in arg_types(a.dtype)]
        hit = _requests[key] = (symbol, params_)
        _pending[symbol] = (source, in_avals, out_aval)
    return hit


def compiled_function(prefix: str, ident: str, compile_fn) -> str:
    """The symbol of a function another module compiles with Numba (a user's kernel):
    ``compile_fn()`` returns ``(Numba's name for it, its final LLVM IR)``, and is called the
    first time its text is needed on this machine (then it is read from the disk cache).
    ``ident`` says what the code depends on besides the target machine."""
    # "v2": texts cached before _localize kept external declarations were invalid IR.
    symbol = engine.symbol_for(prefix, "v2\0" + ident)
    with _lock:
        if symbol not in _texts:
            _pending[symbol] = compile_fn
    return symbol


def text(symbol: str) -> str:
    """The LLVM IR defining harvested function ``symbol`` (compiled by Numba on first use on
    this machine, then read from the disk cache)."""
    body = _texts.get(symbol)
    if body is not None:
        return body
    with _lock:
        body = _texts.get(symbol)
        if body is None:
            body = _read_cached(symbol)
            if body is not None and _PROCESS_ADDRESS in body:
                body = None  # written before such code was kept out of the cache
            if body is None:
                pending = _pending[symbol]
                mangled, raw = pending() if callable(pending) else _compile(*pending)
                body = _localize(raw, mangled, symbol)
                if _PROCESS_ADDRESS in body:
                    _volatile.add(symbol)
                else:
                    _write_cached(symbol, body)
            if user_code(symbol):
                body = vector_math.with_vector_variants(body)
            _texts[symbol] = body
        return body


# Numba bakes the addresses of some C functions it loads at run time (its threading layer's
# get_num_threads, ...) into the IR as constants: such code is right in this process only,
# and neither it nor object code linking it may be cached on disk (another process crashed
# calling through the stale address).
_PROCESS_ADDRESS = "@numba.dynamic.globals."
_volatile: set = set()


def user_code(symbol) -> bool:
    """Whether ``symbol`` holds users' code (a kernel, or a rule calling a scalar kernel),
    whose math calls Numba left scalar (functrans's own rules choose their routes)."""
    pending = _pending.get(symbol)
    return callable(pending) or "user_function(" in (pending[0] if pending else "")


def process_specific(links) -> bool:
    """Whether code linking harvested functions ``links`` holds addresses valid only in this
    process (then it is compiled in each process, never cached on disk). Only users' code
    can: functrans's own rules are checked when written."""
    for sym in links:
        if user_code(sym):
            text(sym)
            if sym in _volatile:
                return True
    return False
