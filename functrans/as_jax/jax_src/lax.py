"""``jax._src.lax``: the package of JAX's ``lax`` implementation, whose module ``lax`` JAX's
primitives guide imports (``from jax._src.lax import lax``): here it is ``jax.lax``
(:mod:`functrans.lax`).

    >>> import functrans.as_jax.jax_src.lax as _src_lax
    >>> _src_lax.lax.add(_src_lax.lax.mul(2.0, 3.0), 1.0)
    Array(7., dtype=float64, weak_type=True)
"""
from __future__ import annotations

from functrans import lax

__all__ = ["lax"]
