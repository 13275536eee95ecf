"""A run of equations as native code: kernels for its planned steps and a driver calling them.

The driver is one LLVM function per program signature. It receives the NumPy arrays of the
run's inputs and outputs (their ``PyObject*``: it reads each data pointer from the array
object itself, so a call from Python costs one ctypes call), allocates one arena for every
intermediate buffer (offsets planned ahead: a buffer is reused once every value in it is
dead), calls the kernels in order and frees the arena. Each kernel is its own compiled
function, shared by every step, program and process that generates the same text; kernels
on tiny arrays are instead inlined into the driver, where their sizes become constants.

    >>> jaxpr = ft.make_jaxpr(lambda x: fnp.sin(x) * 2.0)(np.zeros(4))
    >>> d = Driver(jaxpr.eqns, jaxpr.invars, jaxpr.outvars)
    >>> d.compile()
    >>> d.run([np.arange(4.0)])[0].round(3).tolist()
    [0.0, 1.683, 1.819, 0.282]
"""
from __future__ import annotations

import ctypes
import threading

import numpy as np

from functrans.core.ir import Jaxpr, Literal, Var
from functrans.transforms.lowering import blas  # noqa: F401  (registers the BLAS symbols)
from functrans.transforms.lowering.plan import Group, plan

from . import engine, harvest
from .groups import group_kernel
from .ir import Fn, Module, Val, const, mem_type, reg_type
from .ops import ALIASES, op_kernels

__all__ = ["Driver", "DATA_OFFSET", "Unsupported"]


class Unsupported(NotImplementedError):
    """Steps of a run the native backend cannot generate: ``eqns`` go to the Numba backend."""

    def __init__(self, eqns, reason):
        super().__init__(reason)
        self.eqns = eqns

ALIGN = 64


def _data_offset() -> int:
    """Where an ndarray object keeps its data pointer (after the object header)."""
    a = np.zeros(3)
    raw = ctypes.string_at(id(a), 64)
    ptr = a.ctypes.data
    for off in range(0, 64, 8):
        if int.from_bytes(raw[off:off + 8], "little") == ptr:
            return off
    raise RuntimeError("cannot locate an ndarray's data pointer")


DATA_OFFSET = _data_offset()


def _nbytes(aval) -> int:
    return max(1, int(np.prod(aval.shape))) * np.dtype(aval.dtype).itemsize


class _Arena:
    """First-fit offsets in one block, blocks reused once free."""

    def __init__(self):
        self.free: list = []  # (offset, size), sorted
        self.top = 0

    def alloc(self, size: int) -> int:
        size = -(-size // ALIGN) * ALIGN
        for k, (off, sz) in enumerate(self.free):
            if sz >= size:
                if sz == size:
                    del self.free[k]
                else:
                    self.free[k] = (off + size, sz - size)
                return off
        off, self.top = self.top, self.top + size
        return off

    def release(self, off: int, size: int) -> None:
        size = -(-size // ALIGN) * ALIGN
        self.free.append((off, size))
        self.free.sort()
        merged = []
        for o, s in self.free:
            if merged and merged[-1][0] + merged[-1][1] == o:
                merged[-1] = (merged[-1][0], merged[-1][1] + s)
            else:
                merged.append((o, s))
        self.free = merged


class Driver:
    """Native code for equations ``eqns`` reading ``ins`` and producing ``outs`` (Vars)."""

    def __init__(self, eqns, ins, outs, name="program"):
        self.ins = list(ins)
        # Outputs the driver writes: each produced Var once; others are the caller's job.
        produced = {o for e in eqns for o in e.outputs}
        self.outs = []
        for v in outs:
            if isinstance(v, Var) and v in produced and v not in self.outs:
                self.outs.append(v)
        self.name = name
        sub = Jaxpr([], [], self.ins, self.outs, list(eqns))
        self.steps, self.materialized = plan(sub)
        self.kernels = []  # per step: a Kernel, or None for aliases
        failed, reason = [], None
        for step in self.steps:
            try:
                if isinstance(step, Group):
                    self.kernels.append(group_kernel(step, self.materialized))
                elif step.eqn.prim.name in ALIASES:
                    self.kernels.append(None)
                else:
                    self.kernels.append(op_kernels[step.eqn.prim.name](step.eqn))
            except NotImplementedError as e:
                failed += step.eqns + step.reductions if isinstance(step, Group) else [step.eqn]
                reason = str(e)
        if failed:
            raise Unsupported(failed, reason)
        self._build_driver()
        self.entry = None
        self._lock = threading.Lock()

    # -- buffers --------------------------------------------------------------------------------
    def _step_io(self, step, kernel):
        """(inputs read, outputs written) Vars of a step."""
        if kernel is None:
            return [step.eqn.inputs[0]], [step.eqn.outputs[0]]
        ins = [a.value for a in kernel.args if a.kind in ("buf", "scalar")
               and isinstance(a.value, Var)]
        eqns = step.eqns + step.reductions if isinstance(step, Group) else [step.eqn]
        written = {o for e in eqns for o in e.outputs}
        return [v for v in ins if v not in written], [v for v in ins if v in written]

    def _plan_buffers(self):
        root: dict = {}

        def find(v):
            while v in root:
                v = root[v]
            return v

        ios = [self._step_io(s, k) for s, k in zip(self.steps, self.kernels)]
        for (s, k), (ins, outs) in zip(zip(self.steps, self.kernels), ios):
            if k is None:
                root[outs[0]] = ins[0]
        last: dict = {}
        for t, (ins, outs) in enumerate(ios):
            for v in ins + outs:
                last[find(v)] = t
        n = len(ios)
        out_slot = {v: k for k, v in enumerate(self.outs)}
        for v in self.outs:
            last[find(v)] = n  # live to the end
        arena = _Arena()
        where: dict = {}  # root var -> ("in", k) | ("out", k) | ("arena", offset)
        for k, v in enumerate(self.ins):
            where[v] = ("in", k)
        for t, ((ins, outs), kernel) in enumerate(zip(ios, self.kernels)):
            for v in outs:
                r = find(v)
                if r in where:
                    continue
                if r in out_slot and r is v:
                    where[r] = ("out", out_slot[r])
                else:
                    where[r] = ("arena", arena.alloc(_nbytes(r.aval)))
            for v in set(find(x) for x in ins + outs):
                if last.get(v) == t and where.get(v, ("in",))[0] == "arena":
                    arena.release(where[v][1], _nbytes(v.aval))
        self.arena_size = arena.top
        self.find, self.where = find, where

    # -- code -------------------------------------------------------------------------------------
    def _build_driver(self):
        self._plan_buffers()
        nin, nout = len(self.ins), len(self.outs)
        # The arena is an array too (the last argument), taken from a pool by the caller:
        # large blocks would otherwise be mapped and faulted in again at every call.
        nptr = nin + nout + (1 if self.arena_size else 0)
        params = [("ptr", f"%o{k}") for k in range(nptr)]
        fn = Fn("DRIVER", params, attrs="nounwind")
        mod = Module()
        data = []
        for k in range(nptr):
            p = fn.gep("i8", f"%o{k}", str(DATA_OFFSET))
            data.append(fn.load("ptr", p))
        arena = data[-1] if self.arena_size else "null"

        def ptr_of(v):
            kind, k = self.where[self.find(v)]
            if kind == "in":
                return data[k]
            if kind == "out":
                return data[nin + k]
            return fn.gep("i8", arena, str(k))

        def scalar_of(x):
            if isinstance(x, Literal):
                return const(x.val, x.aval.dtype)
            mt = mem_type(x.aval.dtype)
            v = fn.load(mt, ptr_of(x))
            if np.dtype(x.aval.dtype).kind == "b":
                return Val("i1", fn.op(f"icmp ne i8 {v}, 0"))
            return Val(reg_type(x.aval.dtype), v)

        self.inlined = {}
        for kernel in self.kernels:
            if kernel is None:
                continue
            args = []
            for (ty, _), a in zip(kernel.params, kernel.args):
                t = ty.split()[0]
                if a.kind == "buf":
                    args.append(f"ptr {ptr_of(a.value)}")
                elif a.kind == "scalar":
                    args.append(str(scalar_of(a.value)))
                else:
                    args.append(f"i64 {a.value}")
                assert args[-1].split()[0] == t or a.kind == "buf"
            sym = kernel.symbol()
            if kernel.small:
                self.inlined[sym] = kernel
                mod.decls.update(kernel.mod.decls)
                mod.links.update(kernel.mod.links)
            else:
                mod.declare(sym, kernel.signature())
            fn.do(f"call void @{sym}({', '.join(args)})")
        # Outputs whose value lives in another buffer (an alias of an input, say): copy.
        for k, v in enumerate(self.outs):
            if self.where[self.find(v)] != ("out", k):
                mod.declare("llvm.memcpy", "declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)")
                fn.do(f"call void @llvm.memcpy.p0.p0.i64(ptr {data[nin + k]}, ptr {ptr_of(v)}, "
                      f"i64 {_nbytes(v.aval)}, i1 false)")
        fn.ret()
        self.fn, self.mod = fn, mod
        body = mod.text([fn])
        for sym, kernel in self.inlined.items():
            body += kernel.fn.text().replace(
                "define void @KERNEL(", f"define internal void @{sym}(", 1).replace(
                ") nounwind", ") alwaysinline nounwind", 1)
        self._text = body
        self.symbol = engine.symbol_for("ftp", body + "\0" + "\0".join(sorted(mod.links)))
        self.text = body.replace("@DRIVER(", f"@{self.symbol}(", 1)

    def kernel_texts(self) -> list:
        """The separately compiled kernels' module texts (for ``as_text``)."""
        seen, out = set(), []
        for k in self.kernels:
            if k is not None and not k.small and k.symbol() not in seen:
                seen.add(k.symbol())
                out.append(k.final_text())
        return out

    # -- compiling and running --------------------------------------------------------------------
    def compile(self) -> None:
        """Compile (or load from the caches) every kernel and the driver."""
        with self._lock:
            if self.entry is not None:
                return
            for k in self.kernels:
                if k is None or k.small:
                    continue
                _ensure(k.symbol(), k.final_text, k.mod.links, opt=3)
            addr = _ensure(self.symbol, lambda: self.text, self.mod.links, opt=2)
            nargs = len(self.ins) + len(self.outs) + (1 if self.arena_size else 0)
            self.entry = ctypes.CFUNCTYPE(None, *([ctypes.py_object] * nargs))(addr)

    def run(self, ins):
        """Run on ``ins`` (C-contiguous arrays of the traced dtypes; 0-d for scalars);
        returns fresh arrays for :attr:`outs`."""
        outs = [np.empty(v.aval.shape, v.aval.dtype) for v in self.outs]
        if self.arena_size:
            arena = _take_arena(self.arena_size)
            try:
                self.entry(*ins, *outs, arena)
            finally:
                _give_arena(arena)
        else:
            self.entry(*ins, *outs)
        return outs


_arenas: list = []  # free arenas (64-byte aligned uint8 arrays); list ops are atomic
_POOL = 8


def _take_arena(size: int) -> np.ndarray:
    """A free arena of at least ``size`` bytes: the smallest pooled one that fits, else new."""
    best = None
    for a in list(_arenas):
        if a.size >= size and (best is None or a.size < best.size):
            best = a
    if best is not None:
        try:
            _arenas.remove(best)
            return best
        except ValueError:
            pass  # another thread took it
    raw = np.empty(size + 64, np.uint8)
    off = (-raw.ctypes.data) % 64
    return raw[off:off + size]


def _give_arena(a: np.ndarray) -> None:
    _arenas.append(a)
    if len(_arenas) > _POOL:  # keep the pool small: drop the smallest
        try:
            _arenas.remove(min(_arenas, key=lambda x: x.size))
        except ValueError:
            pass


_compile_lock = threading.Lock()


def _ensure(symbol, text_fn, links, opt) -> int:
    """Load ``symbol`` from this process, the disk cache, or by compiling ``text_fn()``."""
    addr = engine.address(symbol)
    if addr is not None:
        return addr
    with _compile_lock:
        addr = engine.address(symbol)
        if addr is not None:
            return addr
        obj = engine.cached_object(symbol)
        if obj is None:
            texts = {sym: harvest.text(sym) for sym in links}
            obj = engine.compile_ir(text_fn(), opt=opt, links=texts)
            engine.store_object(symbol, obj)
        return engine.load(symbol, obj)
