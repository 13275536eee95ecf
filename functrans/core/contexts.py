"""JAX's top-level context managers: ``ensure_compile_time_eval``, ``named_scope`` and
``disable_jit``.

    >>> @ft.jit
    ... def f(x):
    ...     with ft.ensure_compile_time_eval():
    ...         scale = fnp.sqrt(4.0)         # a concrete Array, even while tracing
    ...     return x * float(scale)
    >>> f(1.5)
    Array(3., dtype=float64, weak_type=True)
"""
from __future__ import annotations

import contextlib
import functools

from . import name_stack
from .config import config
from .trace import EVAL_TRACE, Trace, Tracer, current_trace, set_current_trace

__all__ = ["debug_nans", "disable_jit", "enable_custom_prng", "enable_x64",
           "ensure_compile_time_eval", "named_call", "named_scope", "numpy_dtype_promotion",
           "numpy_rank_promotion"]


class _CompileTimeEvalTrace(Trace):
    """Evaluates primitives whose inputs are all concrete; hands the others to the trace
    that was current (so traced values are still traced, differentiated, batched)."""

    name = "ensure_compile_time_eval"

    def process_primitive(self, prim, args, params):
        for x in args:
            if isinstance(x, Tracer):
                return self.on_parent(prim, args, params)
        with set_current_trace(EVAL_TRACE):
            return EVAL_TRACE.process_primitive(prim, args, params)


@contextlib.contextmanager
def ensure_compile_time_eval():
    """Inside this context, operations whose inputs are all concrete values (arrays, Python
    scalars, results of such operations) run now and give concrete Arrays, even while a
    function is traced (by ``jit``, ``make_jaxpr``, ``vmap``, ...). Operations on traced values
    are traced as usual.

    Functions that only look at the current trace (not at their arguments) still see the
    enclosing transformation; values read from a traced argument stay traced.

    >>> def f(x):
    ...     with ft.ensure_compile_time_eval():
    ...         s = fnp.sqrt(fnp.sum(fnp.arange(5.0)) - 6.0)   # 2.0, known while tracing
    ...     return x * s
    >>> print(ft.make_jaxpr(f)(fnp.ones(2)))
    { lambda ; a:f64[2]. let b:f64[2] = mul a 2.0:f64[] in (b,) }
    """
    outer = current_trace()
    if outer is EVAL_TRACE:  # nothing is traced: everything is evaluated anyway
        yield
        return
    with set_current_trace(_CompileTimeEvalTrace(outer)):
        yield


@contextlib.contextmanager
def named_scope(name: str):
    """Name the operations recorded inside: equations staged here carry ``name`` in their
    ``source_info.name_stack`` (as JAX's, which tools such as haiku's jaxpr_info read).

    >>> def f(x):
    ...     with ft.named_scope("layer1"):
    ...         return fnp.sin(x)
    >>> str(ft.make_jaxpr(f)(1.0).eqns[0].source_info.name_stack)
    'layer1'
    """
    if not isinstance(name, str):
        raise TypeError(f"named_scope name argument must be a string, got "
                        f"{type(name).__name__} {name!r:.40}")
    with name_stack.extend(name):
        yield


def named_call(fun, *, name: str | None = None):
    """``fun`` run inside ``named_scope(name)`` (default name: the function's own). As in
    JAX, it only names: nothing is staged, so the traced program is ``fun``'s own and its
    arguments may be anything (haiku wraps every module method in it, passing Python flags
    such as BatchNorm's ``is_training`` that must stay concrete).

    >>> double = named_call(lambda x: x * 2, name="double")
    >>> double(3.0)
    6.0
    """
    if not callable(fun):
        raise TypeError(f"named_call: expected a callable, got {type(fun).__name__}")
    if name is None:
        name = getattr(fun, "__name__", type(fun).__name__)
    if not isinstance(name, str):
        raise TypeError(f"named_call: name must be a string, got {type(name).__name__}")

    @functools.wraps(fun)
    def call(*args, **kwargs):
        with named_scope(name):
            return fun(*args, **kwargs)
    return call


@contextlib.contextmanager
def disable_jit(disable: bool = True):
    """Run ``jit``-decorated functions eagerly (Python ``print`` and debuggers see values)
    while inside; ``disable=False`` re-enables ``jit`` within an outer ``disable_jit``.

    >>> with ft.disable_jit():
    ...     ft.jit(lambda x: print(float(x) + 1.0))(fnp.ones(()))  # x is concrete
    2.0
    """
    with config.override(disable_jit=bool(disable)):
        yield


@contextlib.contextmanager
def checking_leaks():
    """Check for leaked tracers while inside (``config.check_tracer_leaks``).

    >>> with ft.checking_leaks():
    ...     float(ft.jit(lambda x: x * 2.0)(1.0))
    2.0
    """
    with config.override(check_tracer_leaks=True):
        yield


@contextlib.contextmanager
def log_compiles(enable: bool = True):
    """Log each jit compile (program name, backend, seconds) to the ``functrans`` logger at
    WARNING level while inside (JAX's ``jax_log_compiles``).

    >>> with ft.log_compiles():
    ...     float(ft.jit(lambda x: x + 1.0)(1.0))
    2.0
    """
    old = config.jax_log_compiles
    config.update("jax_log_compiles", bool(enable))
    try:
        yield
    finally:
        config.update("jax_log_compiles", old)


@contextlib.contextmanager
def numpy_dtype_promotion(mode: str):
    """Promote dtypes in ``mode`` while inside (JAX's ``jax_numpy_dtype_promotion``):
    ``"standard"`` (implicit promotion, see :mod:`functrans.dtypes`) or ``"strict"``, where
    only Python scalars promote, to an array's type of their kind or a higher one, and two
    different array types raise ``TypePromotionError``.

    >>> with ft.numpy_dtype_promotion("standard"):
    ...     (fnp.ones(2, "float32") + 1.0).dtype
    dtype('float32')
    """
    with config.override(jax_numpy_dtype_promotion=mode):
        yield


@contextlib.contextmanager
def numpy_rank_promotion(mode: str):
    """Broadcast arrays of different ranks in ``mode`` while inside (JAX's
    ``jax_numpy_rank_promotion``): ``"allow"`` broadcasts as NumPy does; under ``"raise"``
    (``"warn"``) elementwise operations on operands of different non-zero ranks raise
    ``ValueError`` (warn).

    >>> with ft.numpy_rank_promotion("allow"):
    ...     (fnp.ones((2, 3)) + fnp.ones(3)).shape
    (2, 3)
    """
    with config.override(jax_numpy_rank_promotion=mode):
        yield


class _FlagState:
    """A flag of :data:`config` as JAX's config states (``jax.enable_x64``,
    ``jax.debug_nans``): ``.value`` reads it, ``state(new_val)`` is a context manager setting
    it (in this process) while inside.

        >>> with ft.enable_x64(False):
        ...     ft.enable_x64.value, fnp.ones(2).dtype
        (False, dtype('float32'))
        >>> with ft.debug_nans(True):
        ...     ft.debug_nans.value
        True
    """

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    @property
    def value(self) -> bool:
        return getattr(config, self.name)

    def __call__(self, new_val: bool = True):
        return config.override(**{self.name: bool(new_val)})

    def __repr__(self):
        return f"{self.name}(value={self.value})"


enable_x64 = _FlagState("enable_x64")
debug_nans = _FlagState("debug_nans")
enable_custom_prng = _FlagState("enable_custom_prng")
