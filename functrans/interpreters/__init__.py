"""``jax.interpreters``: the rule tables through which libraries extend JAX's transformations
with their own primitives (:mod:`.ad`, :mod:`.batching`, :mod:`.mlir`,
:mod:`.partial_eval`), backed by functrans's own interpreters, and :mod:`.xla`'s dtype
handlers (imported with the package, as JAX's are: libraries reach them as attributes).

    >>> from functrans.interpreters import ad
    >>> from functrans.primitives import sin_p
    >>> sin_p in ad.primitive_jvps
    True
"""
from . import ad, batching, mlir, partial_eval, xla  # noqa: F401

__all__ = ["ad", "batching", "mlir", "partial_eval", "xla"]
