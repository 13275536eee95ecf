"""``jax.interpreters.xla``: the one table of JAX's XLA interpreter module that libraries
still fill at import (TFP's JAX substrate, distrax): :data:`canonicalize_dtype_handlers`.
functrans compiles without XLA; nothing else of the module is provided.

    >>> canonicalize_dtype(np.float32(1.5))
    array(1.5, dtype=float32)
"""
from __future__ import annotations

import numpy as np

from functrans.core import dtypes
from functrans.core.array import Array

__all__ = ["canonicalize_dtype", "canonicalize_dtype_handlers"]


def _canonicalize_ndarray_dtype(x):
    return np.asarray(x, dtypes.canonicalize_dtype(x.dtype))


def _canonicalize_python_scalar_dtype(x):
    return np.asarray(x, dtypes.canonicalize_dtype(dtypes.python_scalar_dtype(x)))


canonicalize_dtype_handlers: dict = {Array: lambda x: x, np.ndarray: _canonicalize_ndarray_dtype}
"""Python type -> function giving its value with a canonical dtype (64-bit types narrowed
while ``enable_x64`` is off), as JAX keeps for Python scalars, NumPy arrays and scalars and
its arrays. functrans's own conversions do not read it: a library's handler for its own type
is what :func:`canonicalize_dtype` uses.

    >>> canonicalize_dtype_handlers[int](3).dtype
    dtype('int64')
"""
canonicalize_dtype_handlers.update(
    {t: _canonicalize_python_scalar_dtype for t in (bool, int, float, complex)}
    | {t: _canonicalize_ndarray_dtype for t in np.sctypeDict.values()
       if issubclass(t, (np.number, np.bool_))})


def canonicalize_dtype(x):
    """``x`` with a canonical dtype, by the handler registered for its type (or one of its
    base types); ``TypeError`` if there is none.

        >>> canonicalize_dtype(True)
        array(True)
    """
    for t in type(x).__mro__:
        handler = canonicalize_dtype_handlers.get(t)
        if handler is not None:
            return handler(x)
    raise TypeError(f"No canonicalize_dtype handler for type: {type(x)}")
