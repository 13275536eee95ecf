"""``jax._src.checkify``: JAX's private checkify module, which libraries import for the
names ``jax.experimental.checkify`` also has (flax.nnx: ``checkify``, ``Error``,
``JaxException``, ``user_checks``) plus its type variable ``Out``: the same objects as
:mod:`functrans.experimental.checkify`.

    >>> from functrans.as_jax.jax_src import checkify
    >>> import functrans.experimental.checkify as public
    >>> checkify.checkify is public.checkify
    True
"""
from __future__ import annotations

from typing import TypeVar

from functrans.experimental.checkify import *  # noqa: F401,F403
from functrans.experimental.checkify import (Error, JaxException, checkify,  # noqa: F401
                                             user_checks)

Out = TypeVar("Out")
"""The type of a checkified function's outputs (for annotations)."""
