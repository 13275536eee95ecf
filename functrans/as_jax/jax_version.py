"""``jax.version`` under :mod:`functrans.as_jax`: the JAX API version functrans follows.

    >>> from functrans.as_jax import jax_version
    >>> jax_version._version
    '0.10.2'
"""
from . import JAX_API_VERSION

__version__ = _version = JAX_API_VERSION
__version_info__ = _version_as_tuple = tuple(int(p) for p in JAX_API_VERSION.split("."))
_minimum_jaxlib_version = JAX_API_VERSION
_minimum_jaxlib_version_info = __version_info__
