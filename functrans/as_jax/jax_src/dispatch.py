"""``jax._src.dispatch``: the part of JAX's dispatch that libraries touch. Equinox swaps
``wait_for_tokens`` out of ``atexit`` for a version that tolerates runtime errors; functrans
computes synchronously, so the only work left at exit is background compiles.

    >>> from functrans.as_jax.jax_src import dispatch
    >>> dispatch.wait_for_tokens()
"""
from __future__ import annotations

import atexit

from functrans.core import background


def wait_for_tokens() -> None:
    """Block until the effects of computations already dispatched are done: on functrans,
    until jit's background compiles end (every effect ran when its call returned).

        >>> wait_for_tokens()
    """
    background.wait_all()


# JAX registers it at import; libraries (equinox) unregister it, which needs it registered.
atexit.register(wait_for_tokens)
