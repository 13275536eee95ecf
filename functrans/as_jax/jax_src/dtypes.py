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

import numpy as _np

DType = _np.dtype
"""The type of a (NumPy) dtype, as JAX's annotations name it."""


class ExtendedDType:
    """Base of a library's own parameterised dtypes (JAX's extended dtypes: a ``type``, a
    ``name`` and lowering ``_rules``). Libraries may define and compare them; functrans's
    arrays cannot hold them, so using one as an array's dtype raises a clear error.

        >>> class meta(ExtendedDType):
        ...     type = extended
        ...     name = "meta"
        >>> issubdtype(meta().type, extended)
        True
    """

    type: type
    name: str
    _rules: type


def supports_inf(dtype) -> bool:
    """Whether ``dtype`` (a floating or complex dtype) can represent infinity: every float
    dtype but the float8 formats without infinities (``float8_e4m3fn``, ...).

        >>> supports_inf("float32"), supports_inf("int32")
        (True, False)
    """
    d = _np.dtype(dtype)
    if d.kind not in "fcV":
        return False
    try:
        return bool(_np.isinf(_np.array(_np.inf, d)))
    except (TypeError, ValueError, OverflowError):
        return False


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    raise AttributeError(f"module 'jax._src.dtypes' has no attribute {name!r}: functrans "
                         "provides only the names jax.dtypes has here")
