"""Loops on all cores: a kernel's outer loop split into units run by the work pool.

Kernels call ``functrans_parallel_for(fn, args, dims, steps, data, inner_ndim, array_count,
num_threads)`` (``work_pool.py``; Numba's threading layers have the same entry point,
``numba_parallel_for``, which their ``prange`` loops use). It runs the ``dims[0]`` units in
ranges, calling ``fn(args', dims', steps, data)`` for each on the pool's threads, where
``args'[0] = args[0] + steps[0] * start`` and ``dims'[0]`` is the range's length. A kernel
passes one null "array" of step 1, so a chunk reads its first unit as that pointer's value,
and all its own parameters through ``data`` (8 bytes each). The thread count is Numba's
(``numba.set_num_threads``: pmap's shards set their share).

Reductions over a flat parallel loop keep one partial per unit (at most ``groups.UNITS``),
combined in unit order after the loop, so results do not depend on the thread count nor on
which thread ran which unit.
"""
from __future__ import annotations

import threading

from .ir import Fn
from .scalar import WIDE_ATTRS

__all__ = ["ensure_threads", "chunk_function", "threads", "launch", "data_slot",
           "PARALLEL_MIN", "read_slots_ir", "write_slots_ir", "launch_ir"]

PARALLEL_MIN = 1 << 18  # loops over at least this many elements run on all cores
_started = threading.Lock()
_ready = False


def ensure_threads() -> None:
    """Start Numba's thread pool and register its entry points with the JIT (once)."""
    global _ready
    if _ready:
        return
    with _started:
        if not _ready:
            from numba.np.ufunc import parallel
            parallel._launch_threads()
            from . import work_pool
            work_pool.install()
            _ready = True


def chunk_function(params) -> tuple:
    """``(fn, start, count)``: the chunk function (named ``chunk``, internal to the kernel's
    module) whose prologue reads the kernel's ``params`` back from ``data``; ``start`` and
    ``count`` are its units."""
    fn = Fn("chunk", [("ptr", "%args"), ("ptr", "%dims"), ("ptr", "%steps"), ("ptr", "%data")],
            attrs=f"nounwind {WIDE_ATTRS}".strip(), linkage="internal")
    for k, (ty, name) in enumerate(params):
        slot = fn.prologue(f"getelementptr inbounds i64, ptr %data, i64 {k}", "q")
        fn.allocas.append(f"  {name} = load {ty.split()[0]}, ptr {slot}")
    first = fn.prologue("load ptr, ptr %args")
    start = fn.prologue(f"ptrtoint ptr {first} to i64")
    count = fn.prologue("load i64, ptr %dims")
    return fn, start, count


def threads(k) -> str:
    """The pool's thread count for this thread (i32), in kernel ``k``'s function."""
    k.mod.declare("get_num_threads", "declare i32 @get_num_threads()")
    return k.fn.op("call i32 @get_num_threads()")


def launch(k, units: str, nthreads: str) -> None:
    """Emit, in kernel ``k``'s function, the call running ``@chunk`` over ``units`` on
    ``nthreads`` threads. The data block holds the kernel's parameters, then more 8-byte
    slots the caller may fill before this call (``data_slot(k, len(k.params) + i)``)."""
    fn, mod = k.fn, k.mod
    mod.declare("functrans_parallel_for", "declare void @functrans_parallel_for(ptr, ptr, ptr, "
                                          "ptr, ptr, i64, i64, i32)")
    for i, (ty, name) in enumerate(k.params):
        fn.do(f"store {ty.split()[0]} {name}, ptr {data_slot(k, i)}")
    args = fn.alloca("ptr")
    fn.do(f"store ptr null, ptr {args}")
    steps = fn.alloca("i64")
    fn.do(f"store i64 1, ptr {steps}")
    dims = fn.alloca("i64")
    fn.do(f"store i64 {units}, ptr {dims}")
    fn.do(f"call void @functrans_parallel_for(ptr @chunk, ptr {args}, ptr {dims}, ptr {steps}, "
          f"ptr {_data(k)}, i64 0, i64 1, i32 {nthreads})")


def _data(k) -> str:
    if getattr(k, "_data", None) is None:
        k._data = k.fn.alloca(f"[{len(k.params) + 8} x i64]", align=16)
    return k._data


def data_slot(k, i: int) -> str:
    """The address of 8-byte slot ``i`` of kernel ``k``'s data block."""
    return k.fn.op(f"getelementptr inbounds i64, ptr {_data(k)}, i64 {i}")


# The same protocol for functions written as IR text (BLAS wrappers, convolution forwarders).
def read_slots_ir(fields) -> list:
    """IR lines loading ``fields`` (``(type, %name)`` pairs) from the 8-byte slots of
    ``%data``, in order: a chunk function's prologue."""
    lines = []
    for i, (ty, name) in enumerate(fields):
        lines += [f"  %slot{i} = getelementptr inbounds i64, ptr %data, i64 {i}",
                  f"  {name} = load {ty}, ptr %slot{i}"]
    return lines


def write_slots_ir(fields) -> list:
    """IR lines storing ``fields`` (``(type, value)`` pairs) into the slots of ``%data``."""
    lines = []
    for i, (ty, value) in enumerate(fields):
        lines += [f"  %put{i} = getelementptr inbounds i64, ptr %data, i64 {i}",
                  f"  store {ty} {value}, ptr %put{i}"]
    return lines


def launch_ir(units: str, nthreads: str) -> list:
    """IR lines running ``@chunk`` over ``units`` with the data block ``%data`` on
    ``nthreads`` threads: what :func:`launch` emits for a kernel."""
    return ["  %argp = alloca ptr", "  store ptr null, ptr %argp",
            "  %stepp = alloca i64", "  store i64 1, ptr %stepp",
            "  %dimp = alloca i64", f"  store i64 {units}, ptr %dimp",
            "  call void @functrans_parallel_for(ptr @chunk, ptr %argp, ptr %dimp, "
            f"ptr %stepp, ptr %data, i64 0, i64 1, i32 {nthreads})"]
