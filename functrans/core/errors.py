"""Errors raised at the user's call, with messages that say what went wrong and where."""
from __future__ import annotations

from .ir import source_info


def _where() -> str:
    info = source_info()
    return f" at {info}" if info is not None else ""


class ConcretizationTypeError(TypeError):
    """A traced (abstract) value was used where Python needs a concrete one."""

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


class TracerArrayConversionError(TypeError):
    """A traced value was passed to NumPy (np.asarray, np.sin, ...)."""

    def __init__(self, tracer):
        super().__init__(
            f"The traced {tracer.aval.str_short()} value{_where()} was converted to a NumPy array. "
            f"Inside {tracer._trace.describe()} values are abstract: use functrans.numpy "
            "(fnp.sin, ...) instead of numpy (np.sin, ...) on traced values.")


class UnexpectedTracerError(RuntimeError):
    """A tracer escaped the transformation that created it (e.g. stored in a global)."""

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


class ShardError(RuntimeError):
    """An exception raised by the code of one shard of a pmap/shard_map, re-raised in the
    caller with the shard's index (the original exception is its ``__cause__``)."""
