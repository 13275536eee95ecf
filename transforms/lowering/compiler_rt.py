"""The compiler-runtime helpers LLVM may call from generated code, made resolvable.

LLVM rewrites ``pow(x, sitofp(n))`` into ``llvm.powi(x, n)`` when the call allows approximate
functions (``afn``, part of the fast-math flags both code generators use), and code generation
turns ``llvm.powi`` into calls to ``__powisf2`` / ``__powidf2``. Those live in the compiler's
runtime library (libgcc or compiler-rt), which a JIT linker does not search: without them a
program such as ``jit(lambda n: fnp.float32(.9) ** n.astype(fnp.float32))`` aborted the process
("Symbol not found: __powisf2") or crashed it. Importing this module registers the helpers
with LLVM's process-wide symbol table, for Numba's code and the native generator's alike: the
system's own (libgcc_s, or the C library where it exports them), else a small LLVM IR definition
with compiler-rt's semantics (repeated squaring; a negative exponent takes the reciprocal).

    >>> import ctypes
    >>> ctypes.CFUNCTYPE(ctypes.c_double, ctypes.c_double, ctypes.c_int)(ADDRESSES["__powidf2"])(2.0, -2)
    0.25
"""
from __future__ import annotations

import ctypes
import ctypes.util

import llvmlite.binding as llb

SYMBOLS = {"__powisf2": "float", "__powidf2": "double"}

_IR_TEMPLATE = """
define {t} @{name}({t} %a, i32 %b) {{
entry:
  %recip = icmp slt i32 %b, 0
  br label %loop
loop:
  %r = phi {t} [1.0, %entry], [%r.next, %square]
  %x = phi {t} [%a, %entry], [%x.sq, %square]
  %n = phi i32 [%b, %entry], [%n.half, %square]
  %bit = and i32 %n, 1
  %odd = icmp ne i32 %bit, 0
  %rx = fmul {t} %r, %x
  %r.next = select i1 %odd, {t} %rx, {t} %r
  %n.half = sdiv i32 %n, 2
  %last = icmp eq i32 %n.half, 0
  br i1 %last, label %done, label %square
square:
  %x.sq = fmul {t} %x, %x
  br label %loop
done:
  %inv = fdiv {t} 1.0, %r.next
  %out = select i1 %recip, {t} %inv, {t} %r.next
  ret {t} %out
}}
"""


def _from_system() -> dict:
    """Addresses of the helpers in a loaded system library, if it has all of them."""
    for name in ("libgcc_s.so.1", ctypes.util.find_library("gcc_s"), None):
        try:
            lib = ctypes.CDLL(name)
            return {s: ctypes.cast(getattr(lib, s), ctypes.c_void_p).value for s in SYMBOLS}
        except (OSError, AttributeError):
            continue
    return {}


_engines = []  # keeps the fallback's machine code alive


def compile_fallback() -> dict:
    """Addresses of the helpers compiled from LLVM IR in this process."""
    ir = "".join(_IR_TEMPLATE.format(t=t, name=s) for s, t in SYMBOLS.items())
    llb.initialize_native_target()
    llb.initialize_native_asmprinter()
    module = llb.parse_assembly(ir)
    module.verify()
    machine = llb.Target.from_default_triple().create_target_machine()
    engine = llb.create_mcjit_compiler(module, machine)
    engine.finalize_object()
    _engines.append(engine)
    return {s: engine.get_function_address(s) for s in SYMBOLS}


def _register() -> dict:
    addresses = _from_system() or compile_fallback()
    for symbol, address in addresses.items():
        llb.add_symbol(symbol, address)
    return addresses


ADDRESSES = _register()
