"""``jax.experimental.colocated_python.func``: JAX's implementation module of colocated
functions (IFRT programs). Its names are XLA-only; reading one raises, saying so.

    >>> from functrans.experimental.colocated_python import func
    >>> hasattr(func, "make_callable")
    False
"""
from __future__ import annotations


def __getattr__(name: str):
    raise AttributeError(f"jax.experimental.colocated_python.func.{name} is XLA-only: "
                         "colocated Python functions are IFRT programs (functrans runs "
                         "without XLA)")
