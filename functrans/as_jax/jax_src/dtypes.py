"""``jax._src.dtypes``: JAX's private dtype module, which libraries import for names that
``jax.dtypes`` also has (equinox's ``TypePromotionError``): the same objects as
:mod:`functrans.dtypes`. A name it lacks is a clear ``AttributeError``.

    >>> from functrans.as_jax.jax_src import dtypes
    >>> import functrans
    >>> dtypes.TypePromotionError is functrans.dtypes.TypePromotionError
    True
"""
from __future__ import annotations

from functrans.dtypes import *  # noqa: F401,F403  (JAX's public dtype names live here too)
from functrans.dtypes import TypePromotionError  # noqa: F401  (named for readers)


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    raise AttributeError(f"module 'jax._src.dtypes' has no attribute {name!r}: functrans "
                         "provides only the names jax.dtypes has here")
