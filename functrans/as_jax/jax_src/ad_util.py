"""``jax._src.ad_util``: the autodiff utilities libraries import from JAX's internals.
lineax takes ``stop_gradient_p`` from here to give it a transpose rule; it is functrans's own
``stop_gradient`` primitive (the one ``lax.stop_gradient`` binds), so a rule registered on it
applies to every ``stop_gradient`` in a program. The other names are those of
:mod:`functrans.interpreters.ad` (JAX's ``ad_util`` holds them too).

    >>> from functrans.as_jax.jax_src import ad_util
    >>> from functrans import lax
    >>> ad_util.stop_gradient_p is lax.stop_gradient_p
    True
"""
from __future__ import annotations

from functrans.interpreters.ad import Zero, add_jaxvals, add_jaxvals_p, zeros_like_aval
from functrans.primitives import stop_gradient_p
from functrans.transforms.autodiff.jvp import SymbolicZero, instantiate

__all__ = ["stop_gradient_p", "Zero", "SymbolicZero", "add_jaxvals", "add_jaxvals_p",
           "zeros_like_aval", "instantiate"]


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    raise AttributeError(f"module 'jax._src.ad_util' has no attribute {name!r}: functrans "
                         "provides only the names libraries import from it")
