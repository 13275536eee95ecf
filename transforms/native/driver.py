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

from functrans.core.ir import Jaxpr, Var
from functrans.transforms.lowering import blas  # noqa: F401  (registers the BLAS symbols)
from functrans.transforms.lowering import blas_library

from functrans.transforms.lowering.compile import _NUMBA_ERRORS, describe_failure, parallel_regions
from functrans.transforms.lowering.emit import LoweringError
from functrans.transforms.lowering.emit import _calls_blas

from . import engine, harvest, parallel
from .scalar import FRAME_ATTRS
from .user_calls import FAILED, calls_user_kernels, check_failure
from .blocks import Emitter, Unsupported, module_text
from .ir import Fn, Module, mem_type

__all__ = ["Driver", "DATA_OFFSET", "Unsupported"]

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


def _tuple_items_offset() -> int:
    """Where a tuple object keeps its first item's pointer (after the object header)."""
    item = object()
    pack = (item,)
    raw = ctypes.string_at(id(pack), 64)
    for off in range(0, 64, 8):
        if int.from_bytes(raw[off:off + 8], "little") == id(item):
            return off
    raise RuntimeError("cannot locate a tuple's items")


# ctypes calls functions of at most 1024 parameters: a driver with more (a step updating
# hundreds of parameter arrays and their optimizer state) is entered by a trampoline taking
# one tuple of the arguments, which loads each one and calls the driver with all of them.
CTYPES_MAX_ARGS = 1024
TUPLE_ITEMS = _tuple_items_offset()


def trampoline_text(driver: str, params) -> str:
    """The LLVM IR of ``<driver>_packed(ptr %args)``: ``driver`` (whose parameters have the
    types ``params``) called with the items of the tuple ``%args``. Scalar parameters come
    as 0-d arrays there, whose value it loads."""
    lines, args = [], []
    for k, ty in enumerate(params):
        lines += [f"  %p{k} = getelementptr inbounds i8, ptr %args, i64 {TUPLE_ITEMS + 8 * k}",
                  f"  %o{k} = load ptr, ptr %p{k}"]
        if ty == "ptr":
            args.append(f"ptr %o{k}")
        else:
            lines += [f"  %d{k} = getelementptr inbounds i8, ptr %o{k}, i64 {DATA_OFFSET}",
                      f"  %a{k} = load ptr, ptr %d{k}", f"  %v{k} = load {ty}, ptr %a{k}"]
            args.append(f"{ty} %v{k}")
    return "\n".join([f"declare void @{driver}({', '.join(params)})",
                      f"define void @{driver}_packed(ptr %args) nounwind {{", "entry:", *lines,
                      f"  call void @{driver}({', '.join(args)})", "  ret void", "}", ""])


class Driver:
    """Native code for equations ``eqns`` reading ``ins`` and producing ``outs`` (Vars)."""

    def __init__(self, eqns, ins, outs, name="program", calls_blas=None):
        self.ins = list(ins)
        # Outputs the driver writes: each produced Var once; others are the caller's job.
        produced = self.produced = {o for e in eqns for o in e.outputs}
        self.outs = []
        for v in outs:
            if isinstance(v, Var) and v in produced and v not in self.outs:
                self.outs.append(v)
        self.name = name
        fn = Fn("DRIVER", [], attrs=f"nounwind {FRAME_ATTRS}")
        mod = Module()

        def data(obj):  # the data pointer of an ndarray argument
            field = fn.prologue(f"getelementptr inbounds i8, ptr {obj}, i64 {DATA_OFFSET}")
            return fn.prologue(f"load ptr, ptr {field}")
        def scalar_slot(k, dtype):  # a scalar argument, passed by value, kept in a slot
            slot = fn.alloca(mem_type(dtype), align=16)
            fn.allocas.append(f"  store {mem_type(dtype)} %in{k}.val, ptr {slot}")
            return slot
        arena = data("%arena.obj")
        in_locs = [data(f"%in{k}.obj") if v.aval.shape else scalar_slot(k, v.aval.dtype)
                   for k, v in enumerate(self.ins)]
        out_locs = [data(f"%out{k}.obj") for k in range(len(self.outs))]
        em = Emitter(fn, mod, arena, data)
        # OpenBLAS's threads keep spinning after a product: loops on the pool would fight them
        # for the cores, so programs that call BLAS (anywhere: ``calls_blas`` is the whole
        # program's answer) leave the threading to BLAS, unless jit's BLAS runs on one
        # thread with its products cut on the pool (native/blas_split.py): then there are no
        # threads but the pool's, and the loops use it too.
        if calls_blas is None:
            calls_blas = program_calls_blas(Jaxpr([], [], self.ins, self.outs, list(eqns)))
        em.allow_parallel = not calls_blas or blas_library.split_products
        em.block(Jaxpr([], [], self.ins, self.outs, list(eqns)), in_locs, dests=out_locs)
        fn.ret()
        fn.params.extend([("ptr", f"%in{k}.obj") if v.aval.shape else
                          (mem_type(v.aval.dtype), f"%in{k}.val")
                          for k, v in enumerate(self.ins)]
                         + [("ptr", f"%out{k}.obj") for k in range(len(self.outs))]
                         + [("ptr", f"{c}.obj") for c in em.const_params]
                         + [("ptr", "%arena.obj")])
        self.consts = em.consts
        self.arena_size = em.arena.top
        self.kernels = list(em.kernels.values())
        self.parallel = any(k.parallel for k in self.kernels)
        self.inlined = em.inlined
        self.fn, self.mod = fn, mod
        self.regions = em.regions
        # Programs calling users' kernels check, after each run, whether one failed.
        self.user_kernels = calls_user_kernels(eqns)
        self.eqns = list(eqns)
        self.symbol, self.text = module_text(fn, mod, self.inlined, "ftp")
        self.entry = None
        self._lock = threading.Lock()

    def unbuilt_kernels(self) -> list:
        """The separately compiled kernels neither loaded nor in the disk cache."""
        return [k for k in self.kernels if not _built(k.symbol())]

    def built(self) -> bool:
        """Whether the driver and its regions are loaded or in the disk cache."""
        return all(_built(s) for s in [self.symbol] + [r.symbol for r in self.regions])

    def kernel_texts(self) -> list:
        """The separately compiled regions' and kernels' module texts (for ``as_text``)."""
        return [r.text for r in self.regions] + [k.final_text() for k in self.kernels]

    # -- compiling and running --------------------------------------------------------------------
    def compile(self) -> None:
        """Compile (or load from the caches) every kernel and the driver."""
        with self._lock:
            if self.entry is not None:
                return
            # Users' kernels may call Numba's threading layer (get_num_threads, prange):
            # its entry points are registered with LLVM when the pool starts, and code
            # loaded from the disk cache would otherwise call through unresolved symbols.
            if self.parallel or self.user_kernels:
                parallel.ensure_threads()
            # Kernels and the driver compile together (on two cores when there are several);
            # the driver is loaded last: it calls the kernels by name.
            units = [(k.symbol(), k.final_text, k.mod.links, KERNEL_OPT, True)
                     for k in self.kernels]
            units += [(r.symbol, (lambda r=r: r.text), r.mod.links, 2, False)
                      for r in self.regions]
            units.append((self.symbol, lambda: self.text, self.mod.links, 2, False))
            # Meanwhile, a thread maps the arena's pages in (a large arena's first use would
            # otherwise fault them in, page by page, inside the first call).
            prefault = threading.Thread(target=_prefault, args=(self.arena_size,), daemon=True)
            prefault.start()
            params = [ty for ty, _ in self.fn.params]
            packed = len(params) > CTYPES_MAX_ARGS
            if packed:
                text = trampoline_text(self.symbol, params)
                units.append((self.symbol + "_packed", lambda: text, {}, 2, False))
            addr = _ensure_all(units)[-1]
            prefault.join()
            obj = ctypes.py_object
            if packed:
                self.entry = _packed_entry(ctypes.CFUNCTYPE(None, obj)(addr), self.ins)
                return
            types = [obj if v.aval.shape else _CTYPES[np.dtype(v.aval.dtype)] for v in self.ins]
            types += [obj] * (len(self.outs) + len(self.consts) + 1)
            self.entry = ctypes.CFUNCTYPE(None, *types)(addr)

    def run(self, ins):
        """Run on ``ins`` (C-contiguous arrays of the traced dtypes; scalars for rank 0);
        returns fresh arrays for :attr:`outs`."""
        outs = [np.empty(v.aval.shape, v.aval.dtype) for v in self.outs]
        lock = parallel_regions.lock if self.parallel else None
        if lock is not None:  # see ParallelRegions: one pool region at a time
            with lock:
                self._run(ins, outs)
        else:
            self._run(ins, outs)
        return outs

    def _run(self, ins, outs):
        if not self.arena_size:
            self.entry(*ins, *outs, *self.consts, _NO_ARENA)
        else:
            arena = _take_arena(self.arena_size)
            try:
                self.entry(*ins, *outs, *self.consts, arena)
            finally:
                _give_arena(arena)
        if self.user_kernels and FAILED[0]:
            self.report_failure(ins)

    def report_failure(self, ins) -> None:
        """Raise the error of a user kernel that failed in the run on ``ins`` (if one did)."""
        check_failure(Jaxpr([], [], self.ins, self.outs, self.eqns), ins)


# ctypes types of scalar arguments (passed by value: no 0-d array per call)
_CTYPES = {np.dtype(k): v for k, v in (
    ("bool", ctypes.c_bool), ("int8", ctypes.c_int8), ("int16", ctypes.c_int16),
    ("int32", ctypes.c_int32), ("int64", ctypes.c_int64), ("uint8", ctypes.c_uint8),
    ("uint16", ctypes.c_uint16), ("uint32", ctypes.c_uint32), ("uint64", ctypes.c_uint64),
    ("float32", ctypes.c_float), ("float64", ctypes.c_double))}
_NO_ARENA = np.empty(0, np.uint8)


def _packed_entry(call, ins):
    """The entry of a driver with more parameters than ctypes takes: its arguments passed
    as one tuple to its trampoline, scalar inputs as 0-d arrays of their traced dtypes."""
    scalars = [(k, np.dtype(v.aval.dtype)) for k, v in enumerate(ins) if not v.aval.shape]

    def entry(*args):
        if scalars:
            args = list(args)
            for k, dtype in scalars:
                args[k] = np.asarray(args[k], dtype)
            args = tuple(args)
        call(args)
    return entry


_arenas: list = []  # free arenas (64-byte aligned uint8 arrays), guarded by _arenas_lock
_arenas_lock = threading.Lock()
_POOL = 8
# The arena given back last, outside the pool: a program called in a loop takes it again by
# a list pop, atomic without the lock. After a program has streamed megabytes, the pool's
# locked search ran with cold caches and cost 11-15 us per call (against 1-2 for a pop).
_hot_arenas: list = []


def _take_arena(size: int) -> np.ndarray:
    """A free arena of at least ``size`` bytes: the one given back last if it fits, else
    the smallest pooled one that fits, else new."""
    try:
        a = _hot_arenas.pop()
    except IndexError:
        return _take_pooled(size)
    return a if a.size >= size else _retake_arena(a, size)


def _retake_arena(a: np.ndarray, size: int) -> np.ndarray:
    """Pool ``a`` (too small for ``size`` bytes) and take one that fits."""
    _pool_arena(a)
    return _take_pooled(size)


def _take_pooled(size: int) -> np.ndarray:
    # Arenas are found by index, never by list.remove: that compares arrays with ==.
    with _arenas_lock:
        fits = [k for k, a in enumerate(_arenas) if a.size >= size]
        if fits:
            return _arenas.pop(min(fits, key=lambda k: _arenas[k].size))
    raw = np.empty(size + 64, np.uint8)
    off = (-raw.ctypes.data) % 64
    return raw[off:off + size]


def _prefault(size: int) -> None:
    """Put an arena of ``size`` bytes, its pages touched, in the pool."""
    if size >= 1 << 20:
        arena = _take_pooled(size)
        arena[::4096] = 0  # one write per page
        _pool_arena(arena)


def _give_arena(a: np.ndarray) -> None:
    """Give back an arena taken by :func:`_take_arena`."""
    if _hot_arenas:  # (two threads may both find it empty: it holds one per thread at most)
        _pool_arena(a)
    else:
        _hot_arenas.append(a)


def _pool_arena(a: np.ndarray) -> None:
    with _arenas_lock:
        _arenas.append(a)
        if len(_arenas) > _POOL:  # keep the pool small: drop the smallest
            _arenas.pop(min(range(len(_arenas)), key=lambda k: _arenas[k].size))


_compile_lock = threading.Lock()


def _built(symbol) -> bool:
    return engine.address(symbol) is not None or engine.has_cached(symbol)


def program_calls_blas(jaxpr) -> bool:
    """Whether running ``jaxpr`` calls BLAS (products, LAPACK, or convolutions: im2col and a
    product, in the Numba kernels that compute them)."""
    from functrans.core.ir import walk_jaxprs

    def has_conv(j):
        return any(e.prim.name == "conv_general_dilated" or
                   any(has_conv(sub) for sub in walk_jaxprs(e.params)) for e in j.eqns)
    return _calls_blas(jaxpr) or has_conv(jaxpr)
# LLVM's -O2 vectorizes loops as -O3 does (the pipeline tuning options ask for it) at about
# 70% of its compile time on these kernels; -O3's extra inlining finds nothing to inline.
KERNEL_OPT = 2
# Drivers: their inlined loops are short (small arrays, loop bodies): kept rolled, the code is
# a third the size and compiles in half the time, for no measurable loss.


def _harvested(links) -> dict:
    """The IR of the harvested functions a module links, compiling them (with Numba) on
    first use; a failure names the primitive and the user's line."""
    texts = {}
    for sym, eqn in links.items():
        try:
            texts[sym] = harvest.text(sym)
        except _NUMBA_ERRORS as e:
            raise LoweringError(describe_failure(e, [], 0, eqn=eqn)) from None
    return texts


def _ensure_all(units) -> list:
    """Addresses of ``units`` (symbol, text function, links, opt, unroll), each loaded from
    this process, the disk cache, or compiled (the missing ones together)."""
    with _compile_lock:
        objs, missing = {}, []
        local = set()  # units linking code valid in this process only: never on disk
        for symbol, text_fn, links, opt, unroll in units:
            if engine.address(symbol) is None and symbol not in objs:
                if harvest.process_specific(links):
                    local.add(symbol)
                obj = None if symbol in local else engine.cached_object(symbol)
                if obj is None:
                    missing.append((symbol, text_fn, links, opt, unroll))
                    objs[symbol] = None
                else:
                    objs[symbol] = obj
        if missing:
            jobs = [(text_fn(), _harvested(links), opt, unroll)
                    for _, text_fn, links, opt, unroll in missing]
            for (symbol, *_), obj in zip(missing, engine.compile_all(jobs)):
                if symbol not in local:
                    engine.store_object(symbol, obj)
                objs[symbol] = obj
        return [engine.address(symbol) or engine.load(symbol, objs[symbol])
                for symbol, *_ in units]
