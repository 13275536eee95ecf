"""``functrans.typing``: JAX's annotations for array arguments and dtypes (``jax.typing``).

* :data:`ArrayLike`: anything functrans accepts as an array: :class:`functrans.Array` (traced
  values included), ``numpy.ndarray``, NumPy scalars and Python's ``bool``/``int``/``float``/
  ``complex``.
* :data:`DTypeLike`: anything that names a dtype: strings (``"float32"``), scalar types
  (``float``, ``np.float32``), ``np.dtype`` objects and objects with a ``dtype`` attribute
  (``functrans.numpy.float32``).

Both are ``typing.Union`` s. ``ArrayLike`` also works with ``isinstance`` (for concrete
values: a Union checks the value's class, and a tracer's class is not a subclass of Array,
so traced values are not instances, as in JAX); ``DTypeLike`` contains ``type[Any]``, which
``isinstance`` only gets past for strings (as in JAX)::

    >>> import functrans.numpy as fnp
    >>> def half(x: ArrayLike) -> ft.Array:
    ...     if not isinstance(x, ArrayLike):
    ...         raise TypeError(f"expected an array-like value, got {type(x).__name__}")
    ...     return fnp.asarray(x) / 2
    >>> half(fnp.array([1.0, 3.0]))
    Array([0.5, 1.5], dtype=float64)
    >>> isinstance([1.0], ArrayLike), isinstance("float32", DTypeLike)
    (False, True)
"""
from __future__ import annotations

import typing
from typing import Any, Protocol, Union

import numpy as np

from .core.array import Array

__all__ = ["ArrayLike", "DTypeLike"]


@typing.runtime_checkable
class _SupportsDType(Protocol):
    """Has a ``dtype`` attribute (``functrans.numpy.float32``, arrays)."""

    @property
    def dtype(self) -> np.dtype: ...


ArrayLike = Union[Array, np.ndarray, np.bool_, np.number, bool, int, float, complex]

DTypeLike = Union[str, type[Any], np.dtype, _SupportsDType]
