"""Users' ``numba.cuda.jit`` kernels as steps of programs (``numba_call(..., launch=...)``).

A CUDA kernel is launched as ``kernel[blocks, threads_per_block](*operands, *results,
*params)``:

* **results** are device arrays of the declared shapes and dtypes, filled with zeros on the
  device first (a kernel may accumulate into them, with ``cuda.atomic.add`` for instance),
  unless ``zero_outputs=False``;
* **params** (numba_call's static keyword arguments) follow the results positionally, in the
  order the kernel's own signature declares them: they are matched by name, as a CPU kernel
  receives them as keywords (a kernel launch takes no keywords). A parameter the call does
  not give takes the kernel's default; a param the kernel does not declare is an error. They
  reach the kernel as ordinary arguments (numba-cuda compiles one kernel per argument types,
  not per value);
* **launch** is ``(blocks, threads_per_block)``, each an int or a tuple of 1-3 ints (a 2-D or
  3-D grid), or a function called with the operands' shapes (one tuple per operand, in
  order) returning such a pair. Under ``vmap`` it sees the shapes the kernel is launched on:
  one element of the batch for ``"sequential"``, the batched operands for ``"expand_dims"``
  and ``"broadcast_all"``. A function may return 0 blocks (for empty operands): nothing is
  launched then.

Operands reach the kernel as they are on the device (buffers of earlier steps or of the
program's arguments): a kernel must not write into them.

Eagerly, :func:`run_eagerly` copies the operands to the current device, launches, and copies
the results back. In ``jit(..., backend="cuda")`` programs, :func:`run` launches the kernel on
the device buffers the program already holds and its results stay there for the next step
(no copy to the host in between). ``vmap_method="sequential"`` launches once per batch
element, on views of the batched buffers. The cpu backend refuses programs calling CUDA
kernels (:func:`refuse_on_cpu`); a CPU kernel in a CUDA program runs on the host between the
device steps, its operands copied to the host and its results back.

numba.cuda is imported only when a CUDA kernel runs (these checks work without numba-cuda)::

    >>> normalize_launch((4, (8, 8)), "k")
    ((4,), (8, 8))
"""
from __future__ import annotations

import inspect
import itertools
import math
import threading

import numpy as np

from functrans.core.user_code import device_kernels, kernel_failure

__all__ = ["is_cuda_kernel", "checked_launch", "normalize_launch", "check_call",
           "launch_config", "run", "run_eagerly", "refuse_on_cpu"]

_LAUNCH_FORMS = ("launch=(blocks, threads_per_block), each an int or a tuple of 1 to 3 ints, "
                 "or a function of the operands' shapes returning that pair")


def is_cuda_kernel(fn) -> bool:
    """Whether ``fn`` is a ``numba.cuda.jit`` dispatcher (the simulator's included)."""
    module = type(fn).__module__ or ""
    return module.startswith(("numba.cuda.", "numba_cuda.")) and hasattr(fn, "py_func") \
        and hasattr(type(fn), "__getitem__")


def _is_device_function(fn) -> bool:
    return bool(getattr(fn, "_device", False) or
                (getattr(fn, "targetoptions", None) or {}).get("device"))


def _dims(value):
    if isinstance(value, (list, tuple)) and 1 <= len(value) <= 3:
        dims = tuple(value)
    else:
        dims = (value,)
    if all(isinstance(d, (int, np.integer)) and not isinstance(d, (bool, np.bool_))
           for d in dims):
        return tuple(int(d) for d in dims)
    return None


def normalize_launch(launch, name, allow_empty=False):
    """``launch`` as ``(blocks, threads)`` tuples of ints; a TypeError naming kernel ``name``
    for anything else (a ValueError for sizes below 1)."""
    pair = tuple(launch) if isinstance(launch, (list, tuple)) and len(launch) == 2 else None
    dims = None if pair is None else [_dims(p) for p in pair]
    if dims is None or None in dims:
        raise TypeError(f"numba_call: kernel '{name}' got launch={launch!r}; a CUDA kernel "
                        f"needs {_LAUNCH_FORMS}")
    blocks, threads = dims
    if min(threads) < 1 or min(blocks) < (0 if allow_empty else 1):
        raise ValueError(f"numba_call: kernel '{name}' got launch={launch!r}; blocks and "
                         "threads per block must be at least 1")
    return blocks, threads


def checked_launch(fn, launch, name):
    """``launch`` as a :class:`KernelCode` keeps it: None for CPU kernels, a normalized pair
    or a function for CUDA kernels; a TypeError when the kernel and ``launch`` disagree."""
    cuda_kernel = is_cuda_kernel(fn)
    if launch is None:
        if cuda_kernel:
            raise TypeError(f"numba_call: kernel '{name}' is a numba.cuda.jit kernel: give "
                            f"its launch configuration, {_LAUNCH_FORMS}")
        return None
    if not cuda_kernel:
        raise TypeError(f"numba_call: launch= is for numba.cuda.jit kernels, and kernel "
                        f"'{name}' is a {type(fn).__name__} (a CPU kernel, which takes no "
                        "launch configuration); decorate a CUDA kernel with @cuda.jit")
    if _is_device_function(fn):
        raise TypeError(f"numba_call: '{name}' is a CUDA device function "
                        "(cuda.jit(device=True)); numba_call launches kernels")
    if callable(launch):
        return launch
    return normalize_launch(launch, name)


def launch_config(code, shapes):
    """``(blocks, threads)`` for operands of ``shapes`` (``code.launch`` called if a
    function)."""
    if not callable(code.launch):
        return code.launch
    try:
        got = code.launch(*shapes)
    except Exception as e:
        raise TypeError(f"numba_call: the launch function of kernel '{code.name}' raised "
                        f"{type(e).__name__}: {e} (it is called with the operands' shapes, "
                        f"one tuple per operand: here {', '.join(map(str, shapes)) or 'none'})"
                        ) from e
    return normalize_launch(got, code.name, allow_empty=True)


_params_cache: dict = {}
_params_lock = threading.Lock()


def param_values(code, n_arrays: int) -> tuple:
    """The static params as the positional arguments after the kernel's ``n_arrays``
    operands and results, in the order its signature declares them."""
    key = (code, n_arrays)
    hit = _params_cache.get(key)
    if hit is not None:
        return hit
    given = dict(code.params)
    try:
        sig = inspect.signature(code.fn.py_func)
    except (TypeError, ValueError):
        sig = None
    if sig is None or any(p.kind is p.VAR_POSITIONAL for p in sig.parameters.values()):
        values = tuple(v for _, v in code.params)  # *args: in sorted-name order
    else:
        rest = list(sig.parameters.values())[n_arrays:]
        names = [p.name for p in rest]
        unknown = sorted(set(given) - set(names))
        if unknown:
            raise TypeError(
                f"numba_call: kernel '{code.name}' declares no parameter "
                f"{', '.join(unknown)} after its {n_arrays} operands and results (there it "
                f"declares: {', '.join(names) or 'nothing'}); static params reach a CUDA "
                "kernel positionally after its results, matched by name")
        values = []
        for p in rest:
            if p.name in given:
                values.append(given[p.name])
            elif p.default is not p.empty:
                values.append(p.default)
            else:
                raise TypeError(f"numba_call: kernel '{code.name}' takes parameter "
                                f"{p.name!r} after its {n_arrays} operands and results; "
                                f"give it as a static param ({p.name}=...)")
        values = tuple(values)
    with _params_lock:
        _params_cache[key] = values
    return values


def check_call(code, in_avals, out_avals, loops, looped):
    """At tracing (the type rule): the params match the kernel's signature and the launch
    configuration is valid for these operands, so errors name the user's call."""
    param_values(code, len(in_avals) + len(out_avals))
    launch_config(code, [tuple(a.shape[sum(lv):]) for a, lv in zip(in_avals, looped)])


def refuse_on_cpu(jaxpr, name) -> None:
    """A cpu-backend program calling a CUDA kernel: a TypeError naming the kernel."""
    from functrans.core.ir import walk_jaxprs
    for eqn in jaxpr.eqns:
        if eqn.prim.name == "numba_call":
            for code in (eqn.params["kernel"], eqn.params["batched_kernel"]):
                if code is not None and code.launch is not None:
                    where = f" (called from {eqn.source})" if eqn.source else ""
                    raise TypeError(
                        f"numba_call: kernel '{code.name}' is a numba.cuda.jit kernel, which "
                        f"runs on a CUDA device, but jit({name}) compiles for the cpu "
                        f"backend{where}; use jit(..., backend='cuda'), or call it outside "
                        "jit")
        for sub in walk_jaxprs(eqn.params):
            refuse_on_cpu(sub, name)


# ---- launching --------------------------------------------------------------------------
def _view(buffer, shape, offset=0):
    """The part of flat device ``buffer`` at ``offset`` as an array of ``shape``."""
    n = math.prod(shape)
    return buffer[offset:offset + n].reshape(shape)


def _launch(code, config, args):
    blocks, threads = config
    if 0 in blocks:
        return
    try:
        code.fn[blocks, threads](*args)
    except Exception as e:  # the kernel's exception (simulator) or the driver's error
        raise kernel_failure(code.name, e) from e


def run(code, vals, in_avals, out_avals, loops=(), looped=None):
    """Launch CUDA kernel ``code`` on flat device buffers ``vals`` (operands of types
    ``in_avals``, carrying the ``loops`` dimensions in front where ``looped`` says); returns
    the results as flat device buffers (zero-filled on the device first)."""
    from numba import cuda

    from . import kernels as K
    from .executable import _flat_size
    looped = looped if looped is not None else tuple(() for _ in in_avals)
    outs = [cuda.device_array(_flat_size(a), a.dtype) for a in out_avals]
    if code.zero_outputs:
        for o, a in zip(outs, out_avals):
            blocks, threads = K.launch_shape(o.size)
            K.zero(a.dtype)[blocks, threads](o)
    nl = len(loops)
    in_shapes = [tuple(a.shape[sum(lv):]) for a, lv in zip(in_avals, looped)]
    out_shapes = [tuple(a.shape[nl:]) for a in out_avals]
    config = launch_config(code, in_shapes)
    params = param_values(code, len(in_avals) + len(out_avals))
    if not nl:
        _launch(code, config, [_view(v, s) for v, s in zip(vals, in_shapes)] +
                [_view(o, s) for o, s in zip(outs, out_shapes)] + list(params))
        return outs
    in_sizes = [math.prod(s) for s in in_shapes]
    out_sizes = [math.prod(s) for s in out_shapes]
    for index in itertools.product(*(range(n) for n in loops)):
        args = []
        for v, s, n, lv in zip(vals, in_shapes, in_sizes, looped):
            carried = [(i, d) for i, d, on in zip(index, loops, lv) if on]
            row = 0
            for i, d in carried:
                row = row * d + i
            args.append(_view(v, s, row * n))
        row = 0
        for i, d in zip(index, loops):
            row = row * d + i
        args += [_view(o, s, row * n) for o, s, n in zip(outs, out_shapes, out_sizes)]
        _launch(code, config, args + list(params))
    return outs


def run_eagerly(args, code, out_avals, loops, looped):
    """``numba_call`` of CUDA kernel ``code`` outside jit: host arrays ``args`` copied to the
    device, the kernel launched, the results copied back (NumPy arrays)."""
    from functrans.core.avals import ShapedArray
    from functrans.core.devices import get_backend
    why = get_backend("cuda").unavailable_reason()
    if why:
        raise RuntimeError(f"numba_call: kernel '{code.name}' is a numba.cuda.jit kernel and "
                           f"needs a CUDA device: {why}")
    from . import executable as E
    avals = [ShapedArray(np.shape(a), np.asarray(a).dtype) for a in args]
    vals = [E.to_device(a, aval) for a, aval in zip(args, avals)]
    outs = run(code, vals, avals, out_avals, loops, looped)
    return [E.to_host(o, a) for o, a in zip(outs, out_avals)]


# numba_call (a primitive, which knows no backend) reaches CUDA kernels through these hooks.
device_kernels.checked_launch = checked_launch
device_kernels.check_call = check_call
device_kernels.run_eagerly = run_eagerly
