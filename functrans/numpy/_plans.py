"""Per-signature plans: what a ``functrans.numpy`` function does, recorded once per argument
signature and replayed without re-running its Python logic.

A function such as ``fnp.sin`` resolves NumPy's loop dtypes, casts, broadcasts and binds one
or a few primitives; all of that depends only on its arguments' shapes, dtypes and weak
types, and on Python scalars' values (they become literals of the dtype chosen). The
first call with a signature runs the function normally (so bad inputs raise its own
errors); it is then traced once into a jaxpr, and later calls with that signature bind the
jaxpr's primitives directly (in whatever trace is current, so plans serve eager evaluation,
``grad``, ``vmap`` and ``jit`` tracing alike)::

    >>> x = fnp.ones(2)
    >>> y = fnp.sin(x)      # runs fnp.sin's Python code, then records its plan
    >>> fnp.sin(x)          # binds sin_p directly
    Array([0.84147098, 0.84147098], dtype=float64)
"""
from __future__ import annotations

import math

import numpy as np

from ..core.array import Array
from ..core.config import config
from ..core.eval import eval_jaxpr
from ..core.staging import trace_to_jaxpr
from ..core.trace import EVAL_TRACE, Tracer, _state, get_aval

_PY_SCALARS = (bool, int, float)
MAX_PLANS = 256  # per function; beyond that new signatures just take the general path


def signature(args):
    """A hashable key of the arguments' types (Python scalars by value: they become
    literals of the dtype the function chooses), or None for arguments that need the general
    path (lists, other objects)."""
    key = [config.enable_x64, config.jax_numpy_dtype_promotion, config.jax_numpy_rank_promotion,
           config.python_int_wraparound]
    for a in args:
        t = type(a)
        if t is Array:
            v = a._value
            key.append((v.shape, v.dtype, a._weak))
        elif isinstance(a, Tracer):
            av = a.aval
            key.append((av.shape, av.dtype, av.weak_type))
        elif t is int or t is bool:
            key.append((t, a))
        elif t is float:
            if a != a:  # NaN: never equal to itself, so never found again
                return None
            key.append((t, a) if a else (t, a, math.copysign(1.0, a)))  # -0.0 == 0.0
        elif t is np.ndarray:
            key.append((a.shape, a.dtype, None))
        else:
            return None
    return tuple(key)


class Plans:
    """The plans of one function: ``call(args)`` replays one if the signature has one."""

    __slots__ = ("slow", "name", "table")

    def __init__(self, slow, name):
        self.slow, self.name, self.table = slow, name, {}

    def record(self, key, args) -> None:
        """Trace ``slow`` for this signature (it just succeeded on ``args``) into a plan."""
        if len(self.table) >= MAX_PLANS:
            return
        dynamic = [i for i, a in enumerate(args) if type(a) not in _PY_SCALARS]
        avals = [get_aval(args[i]) for i in dynamic]

        def flat(*xs):
            full = list(args)
            for i, x in zip(dynamic, xs):
                full[i] = x
            return [self.slow(*full)]

        try:
            jaxpr = trace_to_jaxpr(flat, avals, name=f"fnp.{self.name}")
        except Exception:  # noqa: BLE001  (not traceable alone: the general path stays)
            self.table[key] = None
            return
        for eqn in jaxpr.eqns:  # shared by every caller: each replay records its caller's line
            eqn.source = None
        run = _replay(jaxpr)
        self.table[key] = None if run is None else (run, tuple(dynamic))


def _replay(jaxpr):
    """A function of the dynamic arguments running ``jaxpr`` in the current trace (None when
    the function returns an argument as it is: the general path makes it an array)."""
    if not jaxpr.eqns:
        return None
    if (len(jaxpr.eqns) == 1 and not jaxpr.constvars
            and jaxpr.eqns[0].inputs == jaxpr.invars and jaxpr.outvars == jaxpr.eqns[0].outputs):
        eqn = jaxpr.eqns[0]  # the common case: one primitive on the arguments as they are
        prim, params = eqn.prim, eqn.params
        return lambda xs: prim.bind_all(*xs, **params)[0]
    if jaxpr.outvars[0] in jaxpr.invars:
        return None
    return lambda xs: eval_jaxpr(jaxpr, *xs)[0]


def replay(plan, args):
    """Run a plan on ``args``. NumPy arrays are passed as they are when evaluating (the eager
    primitives never let a result alias them) and become Arrays (copies) when traced, so a
    traced program never holds a caller's mutable buffer."""
    run, dynamic = plan
    xs = [args[i] for i in dynamic]
    if _state.trace is not EVAL_TRACE:
        xs = [Array(x) if type(x) is np.ndarray else x for x in xs]
    out = run(xs)
    return Array(out) if type(out) is np.ndarray else out
