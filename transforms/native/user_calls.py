"""Users' Numba kernels (``numba_call``) as native kernels: called from the driver directly.

The kernel's native form (a wrapper taking data pointers and sizes, compiled by Numba; see
``primitives/kernel_code.py``) is linked into a small generated kernel, like a harvested
scalar rule, and called there: no Python, no ctypes trampoline, no copy. The generated
kernel fills the results with zeros (unless the call opts out), runs the sequential
``vmap`` loops around the call (each iteration passing pointers into the batched operands),
and checks the status Numba's calling convention returns: a kernel that raised reports
it through :func:`failed` and its program re-runs eagerly to raise the kernel's exception.

    >>> import functrans as ft
    >>> def inc(x, out):
    ...     for i in range(x.shape[0]):
    ...         out[i] = x[i] + 1
    >>> f = ft.jit(lambda v: ft.numba_call(inc, ft.ShapeDtypeStruct(v.shape, v.dtype), v))
    >>> f(np.arange(3.0, dtype="float32"))
    Array([1., 2., 3.], dtype=float32)
"""
from __future__ import annotations

import ctypes
import threading

import llvmlite.binding as llb
import numpy as np

from functrans.core.avals import ShapedArray
from functrans.core.errors import JaxRuntimeError
from functrans.core.eval import eval_jaxpr
from functrans.core.ir import Literal, walk_jaxprs

from . import harvest
from .ir import const, mem_type, product
from .kernel import Kernel

__all__ = ["numba_call_kernel", "FAILED", "check_failure", "calls_user_kernels",
           "FAILED_SYMBOL"]

FAILED_SYMBOL = "functrans_user_kernel_failed"
FAILED = [0]
"""The id of the thread on which a user kernel failed (0: none since it was checked).
Programs calling user kernels check it after each run: one list read."""


@ctypes.CFUNCTYPE(None, ctypes.c_int32)
def _record_failure(status):
    # Called on the thread running the program (user kernels run on the driver's thread).
    FAILED[0] = threading.get_ident()


llb.add_symbol(FAILED_SYMBOL, ctypes.cast(_record_failure, ctypes.c_void_p).value)


_runtime_ready = False


def ensure_numba_runtime() -> None:
    """Register the symbols Numba-compiled code calls (its runtime's allocation and reference
    counting, its helper library) with LLVM, so that such code loaded from the disk cache
    links in a process that has not compiled anything with Numba yet."""
    global _runtime_ready
    if _runtime_ready:
        return
    from numba.core.registry import cpu_target
    from numba.core.runtime import rtsys
    rtsys.initialize(cpu_target.target_context)
    _runtime_ready = True


def calls_user_kernels(eqns) -> bool:
    """Whether ``eqns`` (or the programs nested in them) call a user's kernel."""
    return any(e.prim.name == "numba_call" or
               any(calls_user_kernels(j.eqns) for j in walk_jaxprs(e.params)) for e in eqns)


def check_failure(jaxpr, ins) -> None:
    """After a run of ``jaxpr`` on ``ins``: if one of its user kernels failed on this thread,
    run it again eagerly, where the kernel's exception is raised as it is outside jit
    (naming the kernel), and raise that; a kernel that fails only when compiled (it reads
    memory it was not given) gets an error naming the program's kernels."""
    if FAILED[0] != threading.get_ident():
        return  # another thread's failure: it reports it itself
    FAILED[0] = 0
    eval_jaxpr(jaxpr, *ins)
    names = sorted({e.params["kernel"].name for e in jaxpr.eqns if e.prim.name == "numba_call"})
    raise JaxRuntimeError(f"numba_call: a kernel ({', '.join(names)}) failed in compiled code "
                          "but not when run again eagerly; run it with boundscheck=True")


def numba_call_kernel(eqn) -> Kernel:
    """The native kernel calling the user's kernel of ``numba_call`` equation ``eqn``."""
    code = eqn.params["kernel"]
    if code.launch is not None:
        raise NotImplementedError(f"kernel '{code.name}' is a CUDA kernel: it runs in "
                                  "jit(..., backend='cuda') programs")
    loops, looped = eqn.params["loops"], eqn.params["looped"]
    nl = len(loops)
    # An operand carries one leading dimension per loop it is batched in (sum(lv)): one
    # vmapped with in_axes=None carries none of the loops around it.
    inner_in = [ShapedArray(x.aval.shape[sum(lv):], x.aval.dtype)
                for x, lv in zip(eqn.inputs, looped)]
    inner_out = [ShapedArray(o.aval.shape[nl:], o.aval.dtype) for o in eqn.outputs]
    ident, compile_fn = code.native(inner_in, inner_out)
    symbol = harvest.compiled_function("ftu", ident, compile_fn)
    ensure_numba_runtime()  # the code may call Numba's runtime

    k = Kernel([])
    # A prange kernel runs on Numba's thread pool: the driver starts it (and registers its
    # entry points before code loaded from the disk cache links to them).
    k.parallel = code.parallel
    fn, mod = k.fn, k.mod
    operands = []  # (pointer, dims, number of loop levels carried, carried flags, dtype)
    for x, lv in zip(eqn.inputs, looped):
        if isinstance(x, Literal):
            if x.aval.shape:
                raise NotImplementedError("numba_call with a non-scalar literal operand")
            ptr = fn.alloca(mem_type(x.aval.dtype), init=const(x.val, x.aval.dtype).ref)
        else:
            ptr = k.buf(x, readonly=True, noalias=False)
        operands.append((ptr, k.dims(x.aval.shape), lv, x.aval.dtype))
    results = []
    for o in eqn.outputs:
        ptr = k.buf(o, readonly=False)
        results.append((ptr, k.dims(o.aval.shape), (True,) * nl, o.aval.dtype))

    if code.zero_outputs:
        mod.declare("llvm.memset", "declare void @llvm.memset.p0.i64(ptr, i8, i64, i1)")
        for ptr, dims, _, dt in results:
            nbytes = fn.op(f"mul i64 {product(fn, dims)}, {np.dtype(dt).itemsize}")
            fn.do(f"call void @llvm.memset.p0.i64(ptr {ptr}, i8 0, i64 {nbytes}, i1 false)")

    arg_types = []
    for _, dims, lv, _ in operands + results:
        arg_types += ["ptr"] + ["i64"] * (len(dims) - sum(lv))
    mod.link(symbol, eqn)
    mod.declare(symbol, f"declare i32 @{symbol}(ptr, ptr, {', '.join(arg_types)})")
    mod.declare(FAILED_SYMBOL, f"declare void @{FAILED_SYMBOL}(i32)")
    ret = fn.alloca("[16 x i8]", align=16)
    exc = fn.alloca("ptr")

    def call(index):
        args = [f"ptr {ret}", f"ptr {exc}"]
        for ptr, dims, lv, dt in operands + results:
            carried = [i for i, on in zip(index, lv) if on]
            lead, inner = dims[:len(carried)], dims[len(carried):]
            p = ptr
            if carried:  # the element of the batched operand this iteration sees
                lin = "0"
                for i, d in zip(carried, lead):
                    lin = i if lin == "0" else fn.op(f"add i64 {fn.op(f'mul i64 {lin}, {d}')}, {i}")
                p = fn.gep(mem_type(dt), ptr, fn.op(f"mul i64 {lin}, {product(fn, inner)}"))
            args += [f"ptr {p}"] + [f"i64 {d}" for d in inner]
        status = fn.op(f"call i32 @{symbol}({', '.join(args)})")
        with fn.when(fn.op(f"icmp ne i32 {status}, 0")):
            fn.do(f"call void @{FAILED_SYMBOL}(i32 {status})")
            fn.ret()
            fn.place(fn.label("dead"))  # unreachable: closes the block `when` ends

    if not nl:
        call([])
    else:
        loop_dims = results[0][1][:nl]

        def nest_(level, index):
            if level == nl:
                call(index)
                return
            with fn.loop(loop_dims[level], hint="q") as i:
                nest_(level + 1, index + [i])
        nest_(0, [])
    fn.ret()
    return k
