"""``jax.experimental.pallas``: importable, every name XLA-only.

Pallas kernels are compiled by XLA's Triton and Mosaic backends, which functrans does not
have. Libraries that ship an optional Pallas kernel beside a portable path (jax-md's UMA
model) import this module at their own import; so the import succeeds, and using any of its
names raises ``AttributeError`` saying it is XLA-only::

    >>> from functrans.experimental import pallas as pl
    >>> pl.pallas_call
    Traceback (most recent call last):
    ...
    AttributeError: jax.experimental.pallas.pallas_call is not provided: XLA-only (Pallas kernels compile through XLA's Triton/Mosaic backends; functrans runs without XLA)
"""
from __future__ import annotations

__all__: list[str] = []


def xla_only(module: str, name: str) -> AttributeError:
    """The error for ``module.name`` of a Pallas module (see the module's example)."""
    return AttributeError(f"{module}.{name} is not provided: XLA-only (Pallas kernels compile "
                          "through XLA's Triton/Mosaic backends; functrans runs without XLA)")


def __getattr__(name: str):
    if name.startswith("__") or name == "triton":
        raise AttributeError(name)
    raise xla_only("jax.experimental.pallas", name)
