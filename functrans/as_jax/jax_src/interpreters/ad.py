"""``jax._src.interpreters.ad``: the public ``jax.interpreters.ad`` names
(:mod:`functrans.interpreters.ad`) and ``CustomVJPException``, raised when a ``custom_vjp``
function closes over a value being differentiated.

    >>> from functrans.as_jax.jax_src.interpreters import ad
    >>> issubclass(ad.CustomVJPException, Exception)
    True
"""
from __future__ import annotations

from functrans.interpreters.ad import *  # noqa: F401,F403
from functrans.interpreters.ad import __all__ as _public
from functrans.transforms.autodiff.custom import CustomVJPException

__all__ = list(_public) + ["CustomVJPException"]


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    raise AttributeError(f"module 'jax._src.interpreters.ad' has no attribute {name!r}: "
                         "functrans provides jax.interpreters.ad's names and CustomVJPException")
