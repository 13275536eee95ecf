"""Convolutions as calls from native code: a program's host convolutions (``conv_host.py``)
become ``numba_call`` steps of its driver, calling the blocked drivers (``conv_blocked.py``)
as kernels, with transposes for their layouts.

A convolution the native generator leaves to the host splits the program: the driver runs
up to it and returns to Python, the host computes it (NumPy transposes, a call of a compiled
driver), and another driver runs after it. flax's CNN step (benchmarks/bench_ecosystem.py:
two convolutions, their gradients, pooling) ran as 10 runs, 0.4 ms of its 3 ms in Python
between and around them, and none of it on jit's fast path. Called from the driver, the
convolutions are steps like the user's Numba kernels (``native/user_calls.py``): one run,
the layout changes fused into the loops that make or read them, no Python.

The drivers take their strides and paddings as operands (0-d values), so one compiled kernel
per strategy and dtype serves every convolution; they run on the pool only once products
are cut there (``conv_blocked.usable``), and programs compiled otherwise keep host runs.

    >>> import functrans as ft
    >>> from functrans.transforms.native import blas_split
    >>> f = lambda x, w: ft.lax.conv_general_dilated(x, w, (1, 1), "SAME")
    >>> j = ft.make_jaxpr(f)(np.ones((2, 3, 8, 8), "f4"), np.ones((4, 3, 3, 3), "f4")).jaxpr
    >>> if blas_split.install("s"):
    ...     print([e.prim.name for e in convs_as_calls(j).eqns])
    ['transpose', 'transpose', 'numba_call', 'transpose']
"""
from __future__ import annotations

import numpy as np

from functrans.core.avals import ShapedArray
from functrans.core.ir import Eqn, Literal, Var

from functrans.primitives.kernel_code import KernelCode

from ..lowering import conv_blocked
from ..lowering.conv_host import HostConv, host_strategy

__all__ = ["convs_as_calls"]

_KERNELS: dict = {}  # strategy -> KernelCode
_INT = ShapedArray((), np.dtype(np.int64))


def _kernel(strategy):
    code = _KERNELS.get(strategy)
    if code is None:
        code = _KERNELS[strategy] = DriverCode(strategy)
    return code


class DriverCode(KernelCode):
    """A blocked driver as a kernel: eagerly its Numba function (``*_kernel``); from native
    code a forwarding function in the kernels' calling convention that calls the driver's
    C entry point (``conv_blocked.c_entry``: no program compiles the driver's code again)
    and runs its units (blocks of images, the weight gradient's parts) on the work pool."""

    parallel = True  # the drivers run their blocks on the pool

    def __init__(self, strategy):
        super().__init__(getattr(conv_blocked, f"{strategy}_kernel"), zero_outputs=False,
                         name=f"conv_{strategy}")
        self.strategy = strategy

    def native(self, in_avals, out_avals):
        from ..native.parallel import ensure_threads
        ensure_threads()  # functrans_parallel_for is registered with the pool
        entry = conv_blocked.c_entry(self.strategy, out_avals[0].dtype)
        text = _forwarding_ir(entry, self.strategy == "weight_gradient",
                              list(in_avals) + list(out_avals))
        return "\0".join(("conv-entry-v3", text)), lambda: ("forward", text)


def _forwarding_ir(entry: str, finish: bool, avals) -> str:
    """``forward(ret, exc, args...)``: the driver's plan, its units on the work pool (a chunk
    function reading the arguments back from the data block), then (``finish``) its finish,
    each a call of the C entry point ``entry`` with the step's number. A sums buffer the
    plan asks for is malloc'ed here; if that fails, the status is 1 (the program then reports
    the kernel as failed and runs it again eagerly, where the error is raised)."""
    from ..native.parallel import launch_ir, read_slots_ir, write_slots_ir
    args = []
    for k, a in enumerate(avals):
        args += [("ptr", f"%p{k}")] + [("i64", f"%d{k}_{j}") for j in range(len(a.shape))]
    passed = ", ".join(f"{t} {n}" for t, n in args)
    kept = args + [("i64", "%per"), ("i64", "%parts"), ("ptr", "%sums")]
    plan, units, finish_step = conv_blocked.PLAN, conv_blocked.UNITS, conv_blocked.FINISH

    def call(step, start, count, plan_ptr):
        return (f"  call void @{entry}({passed}, i64 {step}, i64 %per, i64 %parts, "
                f"ptr %sums, i64 {start}, i64 {count}, ptr {plan_ptr})")

    lines = [f"declare void @{entry}({', '.join(t for t, _ in args)}, i64, i64, i64, ptr, "
             "i64, i64, ptr)",
             "declare i32 @get_num_threads()", "declare ptr @malloc(i64)",
             "declare void @free(ptr)",
             "declare void @functrans_parallel_for(ptr, ptr, ptr, ptr, ptr, i64, i64, i32)",
             "", "define internal void @chunk(ptr %args, ptr %dims, ptr %steps, ptr %data) {",
             "  %first = load ptr, ptr %args", "  %start = ptrtoint ptr %first to i64",
             "  %count = load i64, ptr %dims", *read_slots_ir(kept),
             call(units, "%start", "%count", "null"), "  ret void", "}", "",
             f"define i32 @forward(ptr %ret, ptr %exc, {passed}) {{",
             "entry:", "  %plan = alloca [4 x i64], align 8",
             f"  call void @{entry}({passed}, i64 {plan}, i64 0, i64 0, ptr null, i64 0, "
             "i64 0, ptr %plan)"]
    for i, name in enumerate(("per", "units", "parts", "bytes")):
        lines += [f"  %q{i} = getelementptr inbounds i64, ptr %plan, i64 {i}",
                  f"  %{name} = load i64, ptr %q{i}"]
    lines += ["  %want = icmp sgt i64 %bytes, 0", "  br i1 %want, label %alloc, label %run",
              "alloc:", "  %buf = call ptr @malloc(i64 %bytes)",
              "  %none = icmp eq ptr %buf, null", "  br i1 %none, label %failed, label %run",
              "failed:", "  ret i32 1",
              "run:", "  %sums = phi ptr [ null, %entry ], [ %buf, %alloc ]",
              f"  %data = alloca [{len(kept)} x i64], align 16", *write_slots_ir(kept),
              "  %nt = call i32 @get_num_threads()", *launch_ir("%units", "%nt")]
    if finish:
        lines.append(call(finish_step, "0", "0", "null"))
    lines += ["  call void @free(ptr %sums)", "  ret i32 0", "}", ""]
    return "\n".join(lines)


def convs_as_calls(jaxpr):
    """``jaxpr`` with each host convolution at its top level a ``numba_call`` of a blocked
    driver (``jaxpr`` itself when there is none, or when the drivers may not run)."""
    if not conv_blocked.usable() or not any(host_strategy(e) for e in jaxpr.eqns):
        return jaxpr
    eqns = []
    for eqn in jaxpr.eqns:
        if host_strategy(eqn) is None:
            eqns.append(eqn)
        else:
            eqns += _call(eqn)
    return jaxpr.replace(eqns=eqns)


def _transposed(x, perm, eqns, source):
    if perm is None or list(perm) == list(range(len(perm))):
        return x
    from functrans.primitives import transpose_p
    shape = tuple(x.aval.shape[d] for d in perm)
    out = Var(ShapedArray(shape, x.aval.dtype))
    eqns.append(Eqn(transpose_p, [x], [out], {"permutation": tuple(perm)}, source))
    return out


def _call(eqn):
    from functrans.primitives import numba_call_p
    plan = HostConv(eqn)  # the strategy and layouts the host path would use
    lhs, rhs = eqn.inputs
    out = eqn.outputs[0]
    eqns: list = []
    lo = [Literal(v, _INT) for v in plan.lo]
    if plan.strategy == "weight_gradient":
        operands = [lhs, rhs] + lo
    else:
        x = _transposed(lhs, plan.lperm, eqns, eqn.source)
        w_perm = list(plan.rperm or range(4))
        if plan.strategy == "products_first":  # (O, K0, K1, I) -> (I, K0, K1, O)
            w_perm = [w_perm[d] for d in (3, 1, 2, 0)]
        w = _transposed(rhs, w_perm, eqns, eqn.source)
        operands = [x, w] + lo
        if plan.strategy == "im2col":
            operands = [x, w] + [Literal(v, _INT) for v in plan.strides] + lo
    held = out if plan.out_perm is None else Var(ShapedArray(plan.held_shape, out.aval.dtype))
    eqns.append(Eqn(numba_call_p, operands, [held],
                    {"kernel": _kernel(plan.strategy), "out_avals": (held.aval,),
                     "vmap_method": None, "loops": (), "looped": tuple(() for _ in operands),
                     "batched_kernel": None}, eqn.source))
    if held is not out:
        from functrans.primitives import transpose_p
        eqns.append(Eqn(transpose_p, [held], [out], {"permutation": plan.out_perm},
                        eqn.source))
    return eqns
