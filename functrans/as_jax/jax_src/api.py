"""``jax._src.api``: where JAX defines its top-level transformations (``jit``, ``grad``,
``jvp``, ``vmap``, ...); JAX's primitives guide imports them from here. Each name is
functrans's own function of that name (the one ``jax.<name>`` is).

    >>> import functrans.as_jax.jax_src.api as api
    >>> float(api.grad(lambda x: x * x)(3.0))
    6.0
"""
from __future__ import annotations

import functrans as _ft


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    try:
        return getattr(_ft, name)
    except AttributeError:
        raise AttributeError(f"module 'jax._src.api' has no attribute {name!r}: functrans "
                             f"provides jax._src.api's public names (those of jax)") from None
