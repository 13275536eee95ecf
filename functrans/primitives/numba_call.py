"""``numba_call``: a user's Numba kernel as a step of a program.

The kernel is called as ``kernel(*operands, *results, **params)`` and writes its results in
place (they start as zeros unless ``zero_outputs=False``). Eagerly it runs as the compiled
Numba function; under ``jit`` the native code generator calls it from the program's driver
(``transforms/native/user_calls.py``). Under ``vmap`` it follows ``vmap_method`` as JAX's
``pure_callback`` does, with ``"sequential"`` a compiled loop (the equation's ``loops``);
differentiation needs rules (``custom_jvp``/``custom_vjp`` around it, or the shorthands of
``ft.numba_kernel``), and raises naming the kernel otherwise.

Equation params: ``kernel`` (a :class:`KernelCode`), ``out_avals`` (the results' types,
loop dimensions included), ``vmap_method``, ``loops`` (the sizes of the sequential loops
around the kernel, outermost first) and ``looped`` (per operand, which loops it carries as
its leading dimensions), ``batched_kernel`` (the user's batched form, or None).

    >>> def double(x, out):
    ...     for i in range(x.shape[0]):
    ...         out[i] = 2 * x[i]
    >>> code = KernelCode(double)
    >>> f32 = ShapedArray((3,), np.dtype("float32"))
    >>> numba_call_p.bind_all(np.ones(3, "float32"), kernel=code, out_avals=(f32,),
    ...                   vmap_method=None, loops=(), looped=((),), batched_kernel=None)
    [Array([2., 2., 2.], dtype=float32)]
"""
from __future__ import annotations

import itertools

import numpy as np

from ..core.avals import ShapedArray
from ..core import user_code
from ..core.trace import Primitive, get_aval
from ..transforms.autodiff.jvp import Zero, is_zero, jvp_rules
from ..transforms.batching import batching_rules, bdim_at_front, moveaxis
from .kernel_code import KernelCode, KernelTypingError
from .pure_callback import VMAP_METHODS, batched_operands

__all__ = ["numba_call_p", "VMAP_METHODS", "KernelCode", "KernelTypingError",
           "kernel_failure"]



def kernel_failure(kernel, err, source=None):
    """The error for a kernel that raised ``err`` (``core/user_code.py``)."""
    return user_code.kernel_failure(kernel.name, err, source)


def _operand_avals(in_avals, looped):
    """The operands' types as the kernel sees them: without their loop dimensions (one
    leading dimension per loop the operand carries: ``sum(lv)``, not ``len(lv)``, as an
    operand vmapped with in_axes=None carries none)."""
    return [ShapedArray(a.shape[sum(lv):], a.dtype) for a, lv in zip(in_avals, looped)]


def _inner(avals, n):
    return [ShapedArray(a.shape[n:], a.dtype) for a in avals]


def _c_array(a):
    # Not np.ascontiguousarray: it returns 0-d arrays as 1-d, which the kernel (compiled for
    # the 0-d operand jit and typing saw) cannot take.
    return np.asarray(a, order="C")


def _impl(*args, kernel, out_avals, vmap_method, loops, looped, batched_kernel):
    if kernel.launch is not None:  # a numba.cuda.jit kernel: launched on the device
        return user_code.device_kernels.run_eagerly(args, kernel, out_avals, loops, looped)
    outs = [(np.zeros if kernel.zero_outputs else np.empty)(a.shape, a.dtype)
            for a in out_avals]
    ins = [_c_array(a) for a in args]
    try:
        if not loops:
            kernel.eager(ins, outs)
        else:  # the sequential loops (compiled under jit; here, each call from Python)
            for idx in itertools.product(*(range(n) for n in loops)):
                sub_in = [a[tuple(i for i, on in zip(idx, lv) if on) + (Ellipsis,)]
                          for a, lv in zip(ins, looped)]
                kernel.eager([_c_array(a) for a in sub_in],
                             [o[idx + (Ellipsis,)] for o in outs])
    except KernelTypingError:
        raise
    except Exception as e:
        raise kernel_failure(kernel, e) from e
    return outs


def _abstract_eval(*avals, kernel, out_avals, vmap_method, loops, looped, batched_kernel):
    for a, lv in zip(avals, looped):
        if tuple(a.shape[:sum(lv)]) != tuple(n for n, on in zip(loops, lv) if on):
            raise TypeError(f"numba_call ({kernel.name}): operand {a.str_short()} does not "
                            f"carry the loop dimensions {loops}")
    if kernel.launch is not None:  # a CUDA kernel's params and launch configuration
        user_code.device_kernels.check_call(kernel, avals, out_avals, loops, looped)
    return [ShapedArray(a.shape, a.dtype) for a in out_avals]


def _print_params(p):
    shown = {"kernel": p["kernel"]}
    shown.update((k, p[k]) for k in ("vmap_method", "loops", "batched_kernel") if p[k])
    if p["loops"]:
        shown["looped"] = p["looped"]
    return shown


numba_call_p = Primitive("numba_call", impl=_impl, abstract_eval=_abstract_eval,
                         print_params=_print_params)
numba_call_p.multiple_results = True


def _jvp(primals, tangents, **params):
    outs = numba_call_p.bind_all(*primals, **params)
    if all(is_zero(t) for t in tangents):
        return outs, [Zero(get_aval(o)) for o in outs]
    name = params["kernel"].name
    raise TypeError(
        f"numba_call: kernel '{name}' has no derivative rule, so it cannot be "
        f"differentiated (grad, jvp, jacfwd...). Give it one: ft.numba_kernel(..., "
        f"jvp=...) or vjp=(fwd, bwd) (rules written as other kernels or as functrans code), "
        f"or wrap the function calling it in ft.custom_jvp / ft.custom_vjp")


def _batch(axis, vals, dims, *, kernel, out_avals, vmap_method, loops, looped,
           batched_kernel):
    size = axis.size
    if batched_kernel is not None and not loops and vmap_method != "sequential":
        # The user's batched form: every operand with the batch axis in front.
        args = [bdim_at_front(v, d, size) for v, d in zip(vals, dims)]
        new_out = tuple(ShapedArray((size,) + a.shape, a.dtype) for a in out_avals)
        _check_kernel_types(batched_kernel, args, new_out)
        outs = numba_call_p.bind_all(*args, kernel=batched_kernel, out_avals=new_out,
                                     vmap_method="sequential", loops=(),
                                     looped=tuple(() for _ in args), batched_kernel=None)
        return outs, [0] * len(outs)
    if vmap_method not in VMAP_METHODS:
        raise NotImplementedError(
            f"vmap of numba_call (kernel '{kernel.name}') needs vmap_method= (one of "
            f"{', '.join(map(repr, VMAP_METHODS))}) or a batched kernel; it was called with "
            f"{vmap_method!r}")
    new_out = tuple(ShapedArray((size,) + a.shape, a.dtype) for a in out_avals)
    if vmap_method == "sequential" or loops:
        # A loop around the kernel (compiled under jit): the new batch axis is the
        # outermost loop, carried by the batched operands only.
        args = [moveaxis(v, d, 0) if d is not None else v for v, d in zip(vals, dims)]
        new_looped = tuple((d is not None,) + tuple(lv) for d, lv in zip(dims, looped))
        outs = numba_call_p.bind_all(*args, kernel=kernel, out_avals=new_out,
                                     vmap_method=vmap_method, loops=(size,) + tuple(loops),
                                     looped=new_looped, batched_kernel=batched_kernel)
        return outs, [0] * len(outs)
    args = batched_operands(vmap_method, vals, dims, size)
    _check_kernel_types(kernel, args, new_out)
    outs = numba_call_p.bind_all(*args, kernel=kernel, out_avals=new_out, vmap_method=vmap_method,
                                 loops=(), looped=tuple(() for _ in args),
                                 batched_kernel=batched_kernel)
    return outs, [0] * len(outs)


def _check_kernel_types(kernel, args, out_avals):
    """Compile for the batched types now, so a kernel that cannot take them fails here."""
    from ..core.ir import source_info
    src = source_info()
    kernel.typed([get_aval(a) for a in args], list(out_avals), src and str(src))


jvp_rules[numba_call_p] = _jvp
batching_rules[numba_call_p] = _batch
