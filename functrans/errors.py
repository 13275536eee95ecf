"""``functrans.errors``: JAX's public error classes (``jax.errors``), as the classes functrans
raises, so ``except functrans.errors.X`` catches what functrans raises::

    >>> import functrans as ft
    >>> try:
    ...     ft.jit(lambda x: 1.0 if x > 0 else 2.0)(1.0)
    ... except ft.errors.TracerBoolConversionError as e:
    ...     print(type(e).__name__, isinstance(e, ft.errors.ConcretizationTypeError))
    TracerBoolConversionError True

What raises each:

* :class:`ConcretizationTypeError`: a traced value used where Python needs a concrete one
  (``int()``, ``float()``, ``.item()``, ...); :class:`TracerBoolConversionError` for ``bool()``
  and :class:`TracerIntegerConversionError` for ``__index__`` are its subclasses.
* :class:`TracerArrayConversionError`: a traced value passed to NumPy (``np.asarray``).
* :class:`UnexpectedTracerError`: a tracer used after its transformation finished.
* :class:`NonConcreteBooleanIndexError`: ``x[mask]`` with a traced boolean ``mask``.
* :class:`JaxRuntimeError`: a failure while a computation runs away from the caller's thread
  (one shard of ``pmap``/``shard_map``: :class:`functrans.core.errors.ShardError`).
* :class:`JaxprTypeError`: ``check_jaxpr`` on an ill-typed program.
* :class:`InconclusiveDimensionOperation`: a comparison of symbolic dimension sizes (shape
  polymorphism, ``export.symbolic_shape``) whose answer depends on the dimension variables.
* :class:`KeyReuseError`: never raised (functrans does not track PRNG key reuse); defined so
  that handlers work.
"""
from .core.check import JaxprTypeError
from .core.errors import (ConcretizationTypeError, InconclusiveDimensionOperation,
                          JAXIndexError, JaxRuntimeError, JAXTypeError, KeyReuseError,
                          TracerArrayConversionError, TracerBoolConversionError,
                          TracerIntegerConversionError, UnexpectedTracerError)
from .numpy.indexing import NonConcreteBooleanIndexError

__all__ = ["ConcretizationTypeError", "InconclusiveDimensionOperation", "JAXIndexError",
           "JAXTypeError", "JaxRuntimeError", "JaxprTypeError", "KeyReuseError",
           "NonConcreteBooleanIndexError", "TracerArrayConversionError",
           "TracerBoolConversionError", "TracerIntegerConversionError", "UnexpectedTracerError"]
