"""``jax.experimental.pjit``: JAX's ``pjit`` is ``jit`` (the older name of partitioned jit).

    >>> from functrans.experimental.pjit import pjit
    >>> pjit(lambda x: x * 2)(fnp.arange(3.0))
    Array([0., 2., 4.], dtype=float64)
"""
from __future__ import annotations

from ..lax.sharding_ops import with_sharding_constraint  # noqa: F401
from ..transforms.jit import jit

__all__ = ["pjit", "with_sharding_constraint"]


def pjit(fun, in_shardings=None, out_shardings=None, static_argnums=None,
         static_argnames=None, donate_argnums=None, donate_argnames=None,
         keep_unused: bool = False, device=None, backend=None, inline: bool = False,
         abstracted_axes=None, compiler_options=None):
    """``jit(fun, ...)`` with the same arguments (``in_shardings``/``out_shardings`` place the
    arguments and results as jit's do). ``abstracted_axes`` (JAX's dynamic shapes) and
    ``compiler_options`` (XLA's) are not supported.

    >>> from functrans.experimental.pjit import pjit
    >>> pjit(lambda x, n: x * n, static_argnums=1)(fnp.ones(2), 3)
    Array([3., 3.], dtype=float64)
    """
    if abstracted_axes is not None:
        raise NotImplementedError("pjit: abstracted_axes (dynamic shapes) is not supported")
    if compiler_options:
        raise NotImplementedError("pjit: compiler_options are XLA's (functrans compiles "
                                  "without XLA)")
    return jit(fun, in_shardings=in_shardings, out_shardings=out_shardings,
               static_argnums=static_argnums, static_argnames=static_argnames,
               donate_argnums=donate_argnums, donate_argnames=donate_argnames,
               keep_unused=keep_unused, device=device, backend=backend, inline=inline)
