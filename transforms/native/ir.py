"""A small builder for LLVM IR text: functions, blocks, loops, typed scalar values.

Mutable locals (loop counters, accumulators) live in ``alloca`` slots in the entry block;
LLVM's SROA pass turns them into SSA registers, so generated code never builds phi nodes.
Values are :class:`Val` pairs of an LLVM type and an operand (a register or a constant).

    >>> fn = Fn("f", [("i64", "%n")], ret="i64")
    >>> acc = fn.alloca("i64", "0")
    >>> with fn.loop("%n") as i:
    ...     fn.store(Val("i64", fn.op(f"add i64 {fn.load('i64', acc)}, {i}")), acc)
    >>> fn.ret(Val("i64", fn.load("i64", acc)))
    >>> "define i64 @f(i64 %n)" in fn.text()
    True
"""
from __future__ import annotations

import contextlib
import struct
from dataclasses import dataclass

import numpy as np

__all__ = ["Val", "Fn", "Module", "reg_type", "mem_type", "const", "FAST", "REDUCE"]

FAST = "nsz afn"
"""Fast-math flags on elementwise float arithmetic: approximate math functions (``afn``: the
SIMD routes) but no ``reassoc``, so that every + - * / rounds as NumPy's does, in the same
order, whatever LLVM inlines around it (with ``reassoc`` it may regroup a*2*3 or a sum of
terms differently in different programs, and a chaotic loop then diverges); no
``contract`` (no FMA fusion), no ``arcp``, no ``nnan``/``ninf``."""

REDUCE = "reassoc nsz afn"
"""Flags on reduction accumulators: ``reassoc`` lets LLVM vectorize them (the summation
order is then the vector lanes', within the documented sum bounds)."""

_INT = {1: "i8", 2: "i16", 4: "i32", 8: "i64"}
_LOOP_MARK = "\x00loop\x00"  # where a loop's latch branch may take unroll metadata


def reg_type(dtype) -> str:
    """The LLVM type holding one value of ``dtype`` in a register (bool: ``i1``)."""
    d = np.dtype(dtype)
    if d.kind == "b":
        return "i1"
    if d.kind in "iu":
        return _INT[d.itemsize]
    if d.kind == "f":
        return {2: "half", 4: "float", 8: "double"}[d.itemsize]
    if d.kind == "c":
        part = "float" if d.itemsize == 8 else "double"
        return f"{{{part}, {part}}}"
    raise NotImplementedError(f"no native type for {d}")


def mem_type(dtype) -> str:
    """The LLVM type of one element in memory (bool: a byte, as NumPy stores it)."""
    d = np.dtype(dtype)
    return "i8" if d.kind == "b" else reg_type(d)


def _float_text(v: float) -> str:
    # LLVM takes float and double constants as the bits of a double (exact for float32).
    return "0x" + struct.pack(">d", v).hex().upper()


def const(value, dtype) -> "Val":
    """A constant of ``dtype`` (converted as NumPy converts ``value``)."""
    d = np.dtype(dtype)
    ty = reg_type(d)
    if d.kind == "b":
        return Val(ty, "true" if bool(value) else "false")
    if d.kind in "iu":
        v = int(np.asarray(value).astype(d))
        if d.kind == "u" and v >= 1 << (8 * d.itemsize - 1):
            v -= 1 << (8 * d.itemsize)  # LLVM integers are written signed
        return Val(ty, str(v))
    if d.kind == "f":
        v = float(np.asarray(value).astype(d))
        return Val(ty, _float_text(v))
    if d.kind == "c":
        z = complex(np.asarray(value).astype(d))
        part = "float" if d.itemsize == 8 else "double"
        return Val(ty, f"{{ {part} {_float_text(z.real)}, {part} {_float_text(z.imag)} }}")
    raise NotImplementedError(f"no native constant of {d}")


@dataclass(frozen=True)
class Val:
    """An LLVM operand and its type."""
    ty: str
    ref: str

    def __str__(self):
        return f"{self.ty} {self.ref}"


class Fn:
    """One function's IR, built line by line."""

    def __init__(self, name: str, params, ret: str = "void", attrs: str = "",
                 linkage: str = ""):
        self.name = name
        self.linkage = linkage
        self.params = params  # [(type-with-attributes, name)]; callers may append
        self.ret_type = ret
        self.attrs = attrs
        self.allocas: list = []
        self.lines: list = []
        self.count = 0
        self.labels = 0
        self.terminated = False

    # -- registers and lines ------------------------------------------------------------------
    def fresh(self, prefix="v") -> str:
        self.count += 1
        return f"%{prefix}{self.count}"

    def op(self, text: str, prefix="v") -> str:
        """Emit ``%r = text``; returns ``%r``."""
        r = self.fresh(prefix)
        self.lines.append(f"  {r} = {text}")
        return r

    def do(self, text: str) -> None:
        self.lines.append(f"  {text}")

    def alloca(self, ty: str, init: str | None = None, align: int | None = None) -> str:
        r = self.fresh("s")
        self.allocas.append(f"  {r} = alloca {ty}" + (f", align {align}" if align else ""))
        if init is not None:
            self.allocas.append(f"  store {ty} {init}, ptr {r}")
        return r

    def prologue(self, text: str, prefix: str = "e") -> str:
        """``%r = text`` in the entry block, before any other code; returns ``%r``."""
        r = self.fresh(prefix)
        self.allocas.append(f"  {r} = {text}")
        return r

    def load(self, ty: str, ptr: str) -> str:
        return self.op(f"load {ty}, ptr {ptr}")

    def store(self, v: Val, ptr: str) -> None:
        self.do(f"store {v}, ptr {ptr}")

    def gep(self, elem_ty: str, base: str, index: str) -> str:
        return self.op(f"getelementptr inbounds {elem_ty}, ptr {base}, i64 {index}", "p")

    # -- blocks ---------------------------------------------------------------------------------
    def label(self, hint="b") -> str:
        self.labels += 1
        return f"{hint}{self.labels}"

    def place(self, label: str) -> None:
        """Start block ``label`` (the previous block must have ended with a branch)."""
        self.lines.append(f"{label}:")

    def br(self, label: str) -> None:
        self.do(f"br label %{label}")

    def cbr(self, cond: str, yes: str, no: str) -> None:
        self.do(f"br i1 {cond}, label %{yes}, label %{no}")

    @contextlib.contextmanager
    def loop(self, stop: str, start: str = "0", hint: str = "i"):
        """``for i in range(start, stop)`` over i64; yields ``i``."""
        counter = self.alloca("i64")
        self.do(f"store i64 {start}, ptr {counter}")
        head, body, done = self.label(hint + "h"), self.label(hint + "b"), self.label(hint + "x")
        self.br(head)
        self.place(head)
        i = self.load("i64", counter)
        self.cbr(self.op(f"icmp slt i64 {i}, {stop}"), body, done)
        self.place(body)
        yield i
        self.do(f"store i64 {self.op(f'add nuw nsw i64 {i}, 1')}, ptr {counter}")
        self.do(f"br label %{head}{_LOOP_MARK}")
        self.place(done)

    @contextlib.contextmanager
    def when(self, cond: str, hint: str = "w"):
        """``if cond:`` (an i1); code emitted in the block runs only when it holds."""
        yes, done = self.label(hint + "t"), self.label(hint + "d")
        self.cbr(cond, yes, done)
        self.place(yes)
        yield
        self.br(done)
        self.place(done)

    def ret(self, v: Val | None = None) -> None:
        self.do("ret void" if v is None else f"ret {v}")

    def text(self, unroll_from: int | None = None) -> str:
        """The function's IR. With ``unroll_from``, every loop carries metadata asking LLVM
        to unroll it fully (numbered from that id: unique in the module), which it does even
        where the pipeline does not unroll (a kernel on tiny arrays, inlined where its trip
        counts are constants)."""
        params = ", ".join(f"{t} {n}" for t, n in self.params)
        attrs = f" {self.attrs}" if self.attrs else ""
        body = "\n".join(self.allocas + self.lines)
        link = f"{self.linkage} " if self.linkage else ""
        metadata = []
        if unroll_from is not None:
            parts = body.split(_LOOP_MARK)
            body = parts[0]
            for k, part in enumerate(parts[1:]):
                md = unroll_from + 2 * k
                body += f", !llvm.loop !{md}" + part
                metadata += [f"!{md} = distinct !{{!{md}, !{md + 1}}}",
                             f'!{md + 1} = !{{!"llvm.loop.unroll.full"}}']
        else:
            body = body.replace(_LOOP_MARK, "")
        text = (f"define {link}{self.ret_type} @{self.name}({params}){attrs} {{\nentry:\n"
                f"{body}\n}}\n")
        return text + "".join(m + "\n" for m in metadata)


class Module:
    """What a module needs besides its function definitions: declarations (by symbol) and
    the symbols of Numba-compiled functions to link in (see harvest.py)."""

    def __init__(self):
        self.decls: dict = {}
        self.links: dict = {}

    def declare(self, symbol: str, text: str) -> None:
        self.decls.setdefault(symbol, text)

    def link(self, symbol: str, eqn=None) -> None:
        """Link the harvested function ``symbol`` in (its IR is fetched at compile time);
        ``eqn`` is the equation it computes, for error messages."""
        if self.links.get(symbol) is None:
            self.links[symbol] = eqn

    def text(self, functions) -> str:
        """The module's IR: declarations, then the function definitions ``functions``.
        Linked symbols are declared here and their definitions linked in when compiled."""
        return "\n".join(list(self.decls.values()) + [f.text() for f in functions]) + "\n"


# -- array elements and loop nests -------------------------------------------------------------

def load_elem(fn: Fn, ptr: str, dtype, index: str) -> Val:
    """Element ``index`` of the ``dtype`` array at ``ptr``, in a register."""
    mt = mem_type(dtype)
    v = fn.load(mt, fn.gep(mt, ptr, index))
    if np.dtype(dtype).kind == "b":
        return Val("i1", fn.op(f"icmp ne i8 {v}, 0"))
    return Val(mt, v)


def store_elem(fn: Fn, v: Val, ptr: str, dtype, index: str) -> None:
    mt = mem_type(dtype)
    if np.dtype(dtype).kind == "b":
        v = Val("i8", fn.op(f"zext {v} to i8"))
    fn.store(v, fn.gep(mt, ptr, index))


def strides(fn: Fn, dims) -> list:
    """Row-major element strides of an array of sizes ``dims`` (operands)."""
    out, s = [], "1"
    for d in reversed(list(dims)):
        out.append(s)
        s = d if s == "1" else fn.op(f"mul i64 {s}, {d}")
    return out[::-1]


def linear(fn: Fn, index, strides_) -> str:
    """Sum of ``index[k] * strides_[k]``."""
    lin = "0"
    for i, s in zip(index, strides_):
        t = i if s == "1" else fn.op(f"mul i64 {i}, {s}")
        lin = t if lin == "0" else fn.op(f"add i64 {lin}, {t}")
    return lin


def product(fn: Fn, dims) -> str:
    out = "1"
    for d in dims:
        out = d if out == "1" else fn.op(f"mul i64 {out}, {d}")
    return out


@contextlib.contextmanager
def nest(fn: Fn, dims, hint: str = "i"):
    """Loops over every index of ``dims`` (row-major order); yields the index list."""
    stack = contextlib.ExitStack()
    with stack:
        idx = [stack.enter_context(fn.loop(d, hint=hint)) for d in dims]
        yield idx
