"""``functrans.dtypes``: JAX's dtype utilities (``jax.dtypes``).

    >>> import functrans.numpy as fnp
    >>> issubdtype(fnp.float32, fnp.floating), issubdtype("int8", fnp.inexact)
    (True, False)
    >>> result_type(fnp.ones(2, "float32"), 2.0)
    dtype('float32')
    >>> float0
    dtype([('float0', 'V')])

functrans's dtypes are NumPy's (bool, integers, float16/32/64, complex64/128) and, when the
``ml_dtypes`` package is installed, ``bfloat16`` and the float8 types (computed through
float32, as JAX does on CPU). Typed PRNG key arrays (``random.key``) have the extended dtype
``key<fry>``, a subtype of :class:`prng_key`; raw ``random.PRNGKey`` keys are ``uint32[2]``.
"""
from __future__ import annotations

from .core import dtype_api as _api
from .core.dtype_api import (THREEFRY_KEY, KeyDtype, TypePromotionError,  # noqa: F401
                             canonicalize_dtype, extended, finfo, float0, iinfo, issubdtype,
                             itemsize_bits, prng_key, result_type, scalar_type_of)

__all__ = ["TypePromotionError", "canonicalize_dtype", "extended", "finfo", "float0", "iinfo",
           "issubdtype", "itemsize_bits", "prng_key", "result_type", "scalar_type_of"]
if _api.has_bfloat16():
    __all__.append("bfloat16")


def __getattr__(name):
    return _api.module_getattr(__name__, name)  # bfloat16: imports ml_dtypes when asked for
