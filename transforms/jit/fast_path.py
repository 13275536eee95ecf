"""jit's fast path: a caller specialized to one argument signature of one compiled kernel.

Once a signature has run, ``Jitted.__call__`` keeps a runner for it and later calls with the
same fast signature go straight to it: ``api._fast_signature`` for leaves in plain containers,
``Jitted._tree_signature`` for leaves in any pytree (modules' custom nodes) beside static
arguments (equinox's ``filter_jit`` and ``nnx.jit`` call jit so); a hot plain signature's
runner also gets a guard (``guard.py``) that skips the lookup. The signature fixes each
leaf's kind (functrans Array, Python or NumPy scalar) and type, so the runner converts only
what the kernel cannot take as it is, and wraps the outputs without re-deriving their types.
The general caller (``Kernel.__call__``) stays for everything else.

    >>> inc = ft.jit(lambda v: v + 1)
    >>> _ = inc(1.0)          # traced, compiled, and the runner for a Python float kept
    >>> inc(2.0)              # the runner
    Array(3., dtype=float64, weak_type=True)
"""
from __future__ import annotations

import numpy as np

from functrans.core.array import Array
from functrans.core.mesh import SingleDeviceSharding
from functrans.core.tree import tree_unflatten, treedef_is_leaf

from ..lowering.compile import Kernel, _kernel_arg
from ..native.program import NativeProgram

_new = object.__new__
_FLOAT64 = np.dtype(np.float64)


def runner(executable, out_tree, device, leaves):
    """``run(leaves) -> outputs`` (in ``out_tree``'s structure) for jit's fast path."""
    if device is not None:
        sharding = SingleDeviceSharding(device)
        return lambda leaves: tree_unflatten(
            out_tree, [o._with_sharding(sharding) for o in executable(*leaves)])
    call = None
    if type(executable) is Kernel:
        call = _kernel_caller(executable, leaves)
    elif type(executable) is NativeProgram:
        whole = executable.fast_caller(leaves, out_tree)  # builds the output tree itself
        if whole is not None:
            return whole
        call = executable.fast_caller(leaves)
    if call is None:
        call = lambda leaves: executable(*leaves)  # noqa: E731
    if treedef_is_leaf(out_tree):
        return lambda leaves: call(leaves)[0]
    return lambda leaves: tree_unflatten(out_tree, call(leaves))


def _kernel_caller(kernel: Kernel, leaves):
    """``call(leaves) -> [Array, ...]`` running ``kernel``'s compiled code directly, or None
    where its general call is needed: before its first call (compile errors are reported
    there), around parallel regions (a lock may be needed), and with NumPy array leaves of
    rank >= 1 (outputs may alias the caller's buffers; a 0-d one reaches the kernel as a
    scalar, and the signature fixes the rank)."""
    if not kernel.checked or kernel.parallel or \
            any(type(x) is np.ndarray and x.ndim for x in leaves):
        return None
    convert = []
    for x, dtype in zip(leaves, kernel.in_dtypes):
        t = type(x)
        if t is float and dtype == _FLOAT64:
            convert.append(None)  # Numba types a Python float as float64, like np.float64
        elif isinstance(x, np.generic) and x.dtype == dtype:
            convert.append(None)  # a NumPy scalar's type fixes its dtype
        elif t is Array:
            convert.append(_array_arg)  # its dtype is the traced one (the signature says so)
        else:
            convert.append(lambda v, d=dtype: _kernel_arg(v, d))
    fn, consts = kernel.kernel, tuple(kernel.consts)
    wraps = [(a.dtype, a.weak_type) for a in kernel.out_avals]
    if all(c is None for c in convert):
        def args_of(leaves):
            return leaves
    elif len(convert) == 1:
        one = convert[0]

        def args_of(leaves):
            return (one(leaves[0]),)
    else:
        def args_of(leaves):
            return [x if c is None else c(x) for c, x in zip(convert, leaves)]

    def call(leaves):
        outs = fn(*args_of(leaves), *consts)
        result = []
        for o, (dtype, weak) in zip(outs, wraps):
            if type(o) is not np.ndarray or o.dtype is not dtype:
                o = np.asarray(o, dtype)
            o.setflags(write=False)
            r = _new(Array)  # Array._wrap, inlined
            r._value, r._weak, r._sharding = o, weak, None
            result.append(r)
        return result
    return call


def _array_arg(x):
    v = x._value
    if v.ndim and v.flags.c_contiguous:
        return v  # read-only already, as kernels are typed for
    return _kernel_arg(x)  # a scalar, or a read-only contiguous copy
