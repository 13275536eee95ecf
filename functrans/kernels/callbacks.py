"""``pure_callback`` and ``io_callback``: call host Python (NumPy, SciPy, ...) from inside
traced programs (public as ``functrans.pure_callback`` and
``functrans.experimental.io_callback``): users' own code as a step of a program, as their
Numba kernels are, but run by the Python interpreter on NumPy values.

    >>> def host_sin(x):
    ...     return np.sin(x)  # any NumPy code
    >>> f = ft.jit(lambda x: ft.pure_callback(host_sin, ft.ShapeDtypeStruct(x.shape, x.dtype), x))
    >>> f(fnp.zeros(3))
    Array([0., 0., 0.], dtype=float64)
"""
from __future__ import annotations

import numpy as np

from ..core import dtypes
from ..core.avals import ShapedArray
from ..primitives.io_callback import IOCallback, io_callback_p
from ..primitives.pure_callback import VMAP_METHODS, PureCallback, pure_callback_p
from ..core.tree import tree_flatten, tree_unflatten


def pure_callback(callback, result_shape_dtypes, *args, sharding=None, vmap_method=None,
                  **kwargs):
    """Call ``callback(*args, **kwargs)`` on NumPy values and return its results as arrays.

    ``result_shape_dtypes`` is a pytree of objects with ``shape`` and ``dtype`` (e.g.
    ``ShapeDtypeStruct``) describing what ``callback`` returns; the results are checked
    against it. The callback must be pure: calls whose results are unused may be removed.
    Under ``jit`` it runs on the host between compiled kernels. Under ``vmap``,
    ``vmap_method`` says how it is batched, as in JAX: ``"sequential"`` calls it once per
    batch element; ``"expand_dims"`` calls it once, batched arguments with the batch axis in
    front and unbatched ones with a new axis of size 1; ``"broadcast_all"`` likewise but with
    unbatched arguments broadcast to the batch size; the results must have the batch axis in
    front. Without ``vmap_method`` vmap raises. Differentiating it raises: wrap the caller in
    ``custom_jvp``/``custom_vjp``.

    >>> g = lambda x: ft.pure_callback(lambda v: v * 2, x, x, vmap_method="expand_dims")
    >>> ft.vmap(g)(fnp.arange(3.0))
    Array([0., 2., 4.], dtype=float64)
    """
    if vmap_method is not None and vmap_method not in VMAP_METHODS:
        raise ValueError(f"pure_callback: vmap_method must be one of "
                         f"{', '.join(map(repr, VMAP_METHODS))} or None, got {vmap_method!r}")
    return _bind("pure_callback", pure_callback_p, PureCallback, callback, result_shape_dtypes,
                 args, kwargs, sharding, vmap_method=vmap_method)


def io_callback(callback, result_shape_dtypes, *args, sharding=None, ordered=False, **kwargs):
    """Call the impure ``callback(*args, **kwargs)`` on arrays and return its results as
    arrays (``jax.experimental.io_callback``).

    ``result_shape_dtypes`` is a pytree of objects with ``shape`` and ``dtype`` (or None for
    no results); the results are checked against it. Unlike :func:`pure_callback` the call is
    an effect: it runs every time the program reaches it, even if its results are unused, and
    calls are never merged. functrans runs a program's steps in order, so every callback is
    ordered; ``ordered=True`` additionally refuses ``vmap`` (as in JAX), which otherwise calls
    the callback once per batch element, in order. Differentiating through it raises.

    >>> seen = []
    >>> def record(x):
    ...     seen.append(int(x))
    ...     return x + 1
    >>> ft.jit(lambda x: io_callback(record, ft.ShapeDtypeStruct((), "int32"), x))(
    ...     fnp.int32(4)), seen
    (Array(5, dtype=int32), [4])
    """
    return _bind("io_callback", io_callback_p, IOCallback, callback, result_shape_dtypes,
                 args, kwargs, sharding, ordered=bool(ordered))


def _bind(api, prim, wrapper, callback, result_shape_dtypes, args, kwargs, sharding, **params):
    """Check a callback call, bind ``prim`` on its flattened arguments, rebuild its results."""
    if not callable(callback):
        raise TypeError(f"{api}: expected a callable, got {type(callback).__name__}")
    if sharding is not None:
        raise NotImplementedError(f"{api}: sharding= is not supported; the callback runs on "
                                  "the host with whole arrays")
    out_avals, out_tree = result_avals(api, result_shape_dtypes)
    flat, in_tree = tree_flatten((args, kwargs))
    cb = wrapper(callback, in_tree, out_tree, out_avals)
    return tree_unflatten(out_tree, prim.bind_all(*flat, callback=cb, **params))


def result_avals(api, result_shape_dtypes):
    """The flat ShapedArrays ``result_shape_dtypes`` declares, and its tree."""
    specs, out_tree = tree_flatten(result_shape_dtypes)
    out_avals = []
    for i, s in enumerate(specs):
        if not (hasattr(s, "shape") and hasattr(s, "dtype")):
            raise TypeError(f"{api}: result_shape_dtypes leaf {i} must have .shape and "
                            f".dtype (e.g. ft.ShapeDtypeStruct), got {type(s).__name__}")
        dtype = dtypes.canonicalize_dtype(np.dtype(s.dtype), what=f"{api} result dtype")
        out_avals.append(ShapedArray(tuple(s.shape), dtype))
    return out_avals, out_tree
