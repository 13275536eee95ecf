"""``jax.experimental.pallas.triton``: importable, every name XLA-only (Pallas's Triton
backend is XLA's; see :mod:`functrans.experimental.pallas`)::

    >>> from functrans.experimental.pallas import triton as plt
    >>> plt.load
    Traceback (most recent call last):
    ...
    AttributeError: jax.experimental.pallas.triton.load is not provided: XLA-only (Pallas kernels compile through XLA's Triton/Mosaic backends; functrans runs without XLA)
"""
from __future__ import annotations

from functrans.experimental.pallas import xla_only

__all__: list[str] = []


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    raise xla_only("jax.experimental.pallas.triton", name)
