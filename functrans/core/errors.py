"""Errors raised at the user's call, with messages that say what went wrong and where.

The classes follow JAX's hierarchy (``jax.errors``), so code written against JAX catches what
functrans raises: converting a traced value to ``bool`` raises
:class:`TracerBoolConversionError`, a :class:`ConcretizationTypeError`::

    >>> issubclass(TracerBoolConversionError, ConcretizationTypeError)
    True
"""
from __future__ import annotations

from .ir import source_info


def _where() -> str:
    info = source_info()
    return f" at {info}" if info is not None else ""


class JAXTypeError(TypeError):
    """Base of the type errors about traced values (JAX's ``jax.errors.JAXTypeError``)."""


class JAXIndexError(IndexError):
    """Base of the index errors about traced values (JAX's ``jax.errors.JAXIndexError``)."""


class ConcretizationTypeError(JAXTypeError):
    """A traced (abstract) value was used where Python needs a concrete one.

    Raised as its subclass :class:`TracerBoolConversionError` for ``bool()`` and
    :class:`TracerIntegerConversionError` for ``__index__``, as JAX does: the raise sites only
    say what the value was needed for, so the class is chosen here.
    """

    def __new__(cls, tracer=None, what: str = "", *args, **kwargs):
        if cls is ConcretizationTypeError:
            if what == "bool()":
                cls = TracerBoolConversionError
            elif what.endswith("(__index__)"):
                cls = TracerIntegerConversionError
        return super().__new__(cls)

    def __init__(self, tracer, what: str):
        aval = tracer.aval.str_short()
        msg = (
            f"Abstract tracer value encountered where a concrete value is expected: {what} of a "
            f"traced {aval} value{_where()}.\n"
            f"The value depends on the arguments of a function transformed by "
            f"{tracer._trace.describe()}, so it is not known while tracing.\n"
            "- For value-dependent branching use lax.cond, lax.switch or fnp.where; for loops "
            "lax.while_loop, lax.fori_loop or lax.scan.\n"
            "- If the value only depends on a Python argument, mark that argument static "
            "(static_argnums= / static_argnames= in jit).")
        super().__init__(msg)


class TracerBoolConversionError(ConcretizationTypeError):
    """``bool()`` of a traced value (``if x > 0`` on a traced ``x``)."""


class TracerIntegerConversionError(ConcretizationTypeError):
    """A traced value used as a Python integer index (``__index__``: ``range(x)``,
    ``lst[x]``). JAX's class is not a ConcretizationTypeError; here it is one as well, so
    handlers written for either catch it."""


class TracerArrayConversionError(JAXTypeError):
    """A traced value was passed to NumPy (np.asarray, np.sin, ...)."""

    def __init__(self, tracer):
        super().__init__(
            f"The traced {tracer.aval.str_short()} value{_where()} was converted to a NumPy array. "
            f"Inside {tracer._trace.describe()} values are abstract: use functrans.numpy "
            "(fnp.sin, ...) instead of numpy (np.sin, ...) on traced values.")


class UnexpectedTracerError(JAXTypeError, RuntimeError):
    """A tracer escaped the transformation that created it (e.g. stored in a global).

    A TypeError as in JAX, and a RuntimeError as functrans raised it before."""

    def __init__(self, tracer, held_by: str | None = None):
        escape = ("A tracer escapes when a transformed function stores an intermediate value "
                  "outside itself (a global, a closure, an attribute)")
        if held_by is not None:  # found by check_tracer_leaks when its trace finished
            super().__init__(
                f"Leaked tracer {tracer.aval.str_short()} of {tracer._trace.describe()}, held "
                f"by {held_by} after that transformation finished{_where()} "
                f"(check_tracer_leaks is on). {escape}. Return such values as outputs instead.")
            return
        super().__init__(
            f"Encountered a leaked tracer {tracer.aval.str_short()}{_where()}: it was created by "
            f"{tracer._trace.describe()}, which has already finished. {escape} and later code "
            "uses it. Return such values as outputs instead.")


class KeyReuseError(JAXTypeError):
    """A PRNG key used twice (JAX raises it under ``jax_debug_key_reuse``). functrans does not
    track key reuse, so it never raises this; it exists so that handlers for it work."""


class JaxRuntimeError(RuntimeError):
    """A failure while a computation runs (JAX's runtime error). functrans raises it for work
    that failed away from the caller's thread: a shard of pmap/shard_map (:class:`ShardError`)."""


class InconclusiveDimensionOperation(Exception):
    """An operation on symbolic dimensions whose result is not known (``a >= b`` for
    dimension variables ``a``, ``b``); raised as its subclass in ``core/shape_poly.py``."""


class ShardError(JaxRuntimeError):
    """An exception raised by the code of one shard of a pmap/shard_map, re-raised in the
    caller with the shard's index (the original exception is its ``__cause__``)."""


class ShardingTypeError(Exception):
    """An operation whose operands' shardings (on ``Explicit`` mesh axes, where shardings are
    part of the types) give no well-defined result sharding (``jax._src.core``'s)."""
