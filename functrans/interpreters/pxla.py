"""``jax.interpreters.pxla``: JAX's lowering of sharded computations to XLA executables.
Importable (orbax imports it for its IFRT-proxy executables), every name XLA-only: reading one
raises ``AttributeError`` saying so::

    >>> from functrans.interpreters import pxla
    >>> pxla.global_avals_to_results_handler
    Traceback (most recent call last):
    ...
    AttributeError: jax.interpreters.pxla.global_avals_to_results_handler is not provided: XLA-only (pxla builds and runs XLA executables; functrans partitions programs without XLA)
"""
from __future__ import annotations

__all__: list[str] = []


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    raise AttributeError(f"jax.interpreters.pxla.{name} is not provided: XLA-only (pxla builds "
                         "and runs XLA executables; functrans partitions programs without XLA)")
