"""``jax._src.core``: JAX's private core module, which libraries import for names that
``jax.core`` also has (flax's fp8 ops: ``ShapedArray``, ``physical_aval``): the same objects
as :mod:`functrans.as_jax.jax_core`, and ``Primitive`` (jax-md defines its primitives from
here; JAX's public one is ``jax.extend.core.Primitive``, the same class). A name it lacks is a
clear ``AttributeError``.

    >>> from functrans.as_jax.jax_src import core
    >>> core.ShapedArray((2,), "float32").shape
    (2,)
"""
from __future__ import annotations

from functrans.as_jax.jax_core import *  # noqa: F401,F403
from functrans.core.avals import ShapedArray
from functrans.extend.core import Primitive  # noqa: F401


def physical_aval(aval):
    """The abstract value of the buffer that holds ``aval``. functrans's values all have
    NumPy dtypes, held as they are, so this is ``aval`` itself.

        >>> a = ShapedArray((2,), "float32")
        >>> physical_aval(a) is a
        True
    """
    if not isinstance(aval, ShapedArray):
        raise TypeError(f"physical_aval takes a ShapedArray, got {type(aval).__name__}")
    return aval


def trace_state_clean() -> bool:
    """Whether no transformation is tracing in this thread (values are computed eagerly):
    numpyro checks it before caching functions that could close over tracers.

        >>> import functrans as ft
        >>> trace_state_clean(), bool(ft.jit(lambda x: x * 0 + trace_state_clean())(1))
        (True, False)
    """
    from functrans.core.trace import EVAL_TRACE, current_trace
    return current_trace() is EVAL_TRACE


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    raise AttributeError(f"module 'jax._src.core' has no attribute {name!r}: functrans "
                         "provides only the names jax.core has here")
