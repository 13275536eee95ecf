"""``jax.extend.core``: the core types libraries build on: :class:`Primitive` for their own
operations, and the program types (``Jaxpr``, ``ClosedJaxpr``, ``Var``, ``Literal``).

A functrans :class:`Jaxpr` carries its constants, so it is both JAX's ``Jaxpr`` and its
``ClosedJaxpr``: ``isinstance`` holds for both, ``.jaxpr`` is the program itself and
``.consts`` its constants; ``ClosedJaxpr(jaxpr, consts)`` gives the program with those
constants::

    >>> j = ft.make_jaxpr(lambda x: x * 2.0)(1.0)
    >>> isinstance(j, ClosedJaxpr), isinstance(j.jaxpr, Jaxpr)
    (True, True)
    >>> jaxpr_as_fun(ClosedJaxpr(j.jaxpr, j.consts))(3.0)
    [Array(6., dtype=float64, weak_type=True)]
"""
from __future__ import annotations

import functools
import weakref

import numpy as np

from functrans.core.array import Array
from functrans.core.check import check_jaxpr
from functrans.core.errors import ConcretizationTypeError
from functrans.core.eval import eval_jaxpr
from functrans.core.ir import DropVar, Eqn as JaxprEqn, Jaxpr, Literal, Var
from functrans.core.trace import (TraceTag, Tracer, current_trace, get_aval,
                                  set_current_trace as _set_current_trace, take_current_trace)
from functrans.core.dtype_api import float0
from functrans.extend.linear_util import DebugInfo

from . import primitives  # noqa: F401
from ._primitive import Primitive, no_effects
from functrans.core.dtypes import kind as dtype_kind

__all__ = ["ClosedJaxpr", "DebugInfo", "DropVar", "Effect", "Effects", "Jaxpr", "JaxprEqn",
           "Literal", "Primitive", "TraceTag", "Var", "array_types", "check_jaxpr",
           "concrete_or_error", "find_top_trace", "get_opaque_trace_state", "jaxpr_as_fun", "jaxprs_in_params",
           "mapped_aval", "no_effects", "primal_dtype_to_tangent_dtype", "primitives",
           "set_current_trace", "subjaxprs", "take_current_trace", "unmapped_aval",
           "valid_jaxtype"]


class _ClosedJaxprType(type):
    # Every functrans Jaxpr is closed: it is a ClosedJaxpr, and constructing one binds
    # the constants to a program's constvars.
    def __instancecheck__(cls, x):
        return isinstance(x, Jaxpr)

    def __subclasscheck__(cls, c):
        return isinstance(c, type) and issubclass(c, Jaxpr)

    def __call__(cls, jaxpr, consts):
        if not isinstance(jaxpr, Jaxpr):
            raise TypeError(f"ClosedJaxpr: expected a Jaxpr, got {type(jaxpr).__name__}")
        consts = list(consts)
        if len(consts) != len(jaxpr.constvars):
            raise TypeError(f"ClosedJaxpr: the jaxpr has {len(jaxpr.constvars)} constvars, "
                            f"got {len(consts)} consts")
        return jaxpr.replace(consts=consts)


class ClosedJaxpr(metaclass=_ClosedJaxprType):
    """A program with its constants: ``ClosedJaxpr(jaxpr, consts)`` is a functrans
    :class:`Jaxpr` (which always carries its constants) with ``consts`` bound to its
    constvars; every functrans ``Jaxpr`` is an instance.

        >>> c = np.ones(2)
        >>> j = ft.make_jaxpr(lambda x: x + c)(1.0)
        >>> ClosedJaxpr(j.jaxpr, [np.full(2, 5.0)]).consts
        [array([5., 5.])]
    """


class Effect:
    """Base class of the effects an abstract evaluation may declare
    (``def_effectful_abstract_eval``): a primitive with effects is never dropped as dead code.

        >>> class Logs(Effect):
        ...     pass
        >>> p = Primitive("log_it")
        >>> _ = p.def_effectful_abstract_eval(lambda a: (a, {Logs()}))
    """


Effects = set

array_types = frozenset({np.ndarray, Array, bool, int, float, complex}
                        | {t for t in np.sctypeDict.values() if issubclass(t, np.generic)})
"""Types of concrete array values."""


def jaxpr_as_fun(closed_jaxpr, *args):
    """``closed_jaxpr`` as a function of its inputs returning the list of its outputs
    (curried as JAX's: ``jaxpr_as_fun(j)(*args)``, or ``jaxpr_as_fun(j, *args)()``).

        >>> jaxpr_as_fun(ft.make_jaxpr(fnp.cos)(0.0))(0.0)
        [Array(1., dtype=float64, weak_type=True)]
    """
    return functools.partial(eval_jaxpr, closed_jaxpr, *args)


def jaxprs_in_params(params):
    """The programs held by an equation's params (a tuple's too).

        >>> j = ft.make_jaxpr(ft.jit(fnp.sin))(1.0)
        >>> [len(sub.eqns) for sub in jaxprs_in_params(j.eqns[0].params)]
        [1]
    """
    for v in params.values():
        for x in (v if isinstance(v, tuple) else (v,)):
            if isinstance(x, Jaxpr):
                yield x


def subjaxprs(jaxpr):
    """The programs held by the params of ``jaxpr``'s equations (not recursively).

        >>> len(list(subjaxprs(ft.make_jaxpr(ft.jit(fnp.sin))(1.0))))
        1
    """
    for eqn in jaxpr.eqns:
        yield from jaxprs_in_params(eqn.params)


def mapped_aval(size, axis, aval):
    """The type of one element of a batch: ``aval`` without its axis ``axis`` (of ``size``);
    ``axis`` None leaves it unchanged.

        >>> from functrans.core.avals import ShapedArray
        >>> mapped_aval(3, 1, ShapedArray((2, 3), "float32"))
        ShapedArray(f32[2])
    """
    if axis is None:
        return aval
    if not -aval.ndim <= axis < aval.ndim or aval.shape[axis] != size:
        raise ValueError(f"mapped_aval: {aval.str_short()} has no axis {axis} of size {size}")
    axis %= aval.ndim
    return aval.update(shape=aval.shape[:axis] + aval.shape[axis + 1:])


def unmapped_aval(size, axis, aval, explicit_mesh_axis=None):
    """The type of a batch of ``size`` values of type ``aval`` stacked along ``axis``
    (``axis`` None: not batched, unchanged).

        >>> from functrans.core.avals import ShapedArray
        >>> unmapped_aval(3, 0, ShapedArray((2,), "float32"))
        ShapedArray(f32[3,2])
    """
    if axis is None:
        return aval
    if not 0 <= axis <= aval.ndim:
        raise ValueError(f"unmapped_aval: axis {axis} is out of range for {aval.str_short()}")
    return aval.update(shape=aval.shape[:axis] + (size,) + aval.shape[axis:])


class OpaqueTraceState:
    """Which transformation is current, comparable with ``==`` and nothing else (see
    :func:`get_opaque_trace_state`)."""

    __slots__ = ("_trace",)

    def __init__(self, trace):
        self._trace = weakref.ref(trace)

    def __eq__(self, other):
        # Tokens of transformations that have ended are equal only to themselves.
        if self is other:
            return True
        mine = self._trace()
        return (isinstance(other, OpaqueTraceState) and mine is not None
                and mine is other._trace())

    __hash__ = None


def get_opaque_trace_state(convention=None):
    """A token for the current transformation: equal tokens were taken in the same one.

        >>> get_opaque_trace_state() == get_opaque_trace_state()
        True
    """
    trace = current_trace()
    try:  # one token per transformation: libraries ask at every variable access (nnx)
        return trace._opaque_state
    except AttributeError:
        token = trace._opaque_state = OpaqueTraceState(trace)
        return token


def set_current_trace(trace, check_leaks=False):
    """Context manager: make ``trace`` the current trace while inside (JAX's; with a trace
    from :func:`take_current_trace`, primitives bound inside go to it). ``check_leaks`` is
    accepted; functrans checks leaks when a transformation ends (``checking_leaks``).

        >>> with take_current_trace() as t:
        ...     with set_current_trace(t):
        ...         float(fnp.sin(0.0))
        0.0
    """
    del check_leaks
    return _set_current_trace(trace)


def find_top_trace(xs):
    """The current transformation (JAX's: ``xs`` is not consulted).

        >>> find_top_trace([1.0]).name
        'eager evaluation'
    """
    return current_trace()


def primal_dtype_to_tangent_dtype(primal_dtype):
    """The dtype of tangents of values of ``primal_dtype``: itself for floating and complex
    dtypes, ``float0`` (no tangent) otherwise.

        >>> primal_dtype_to_tangent_dtype(np.float32)
        dtype('float32')
        >>> primal_dtype_to_tangent_dtype(np.int32) == float0
        True
    """
    dtype = np.dtype(primal_dtype)
    return dtype if dtype_kind(dtype) in "fc" else float0


def valid_jaxtype(x) -> bool:
    """Whether ``x`` is an array value functrans accepts (arrays, tracers, scalars).

        >>> valid_jaxtype(1.0), valid_jaxtype("a")
        (True, False)
    """
    try:
        get_aval(x)
    except TypeError:
        return False
    return True


def concrete_or_error(force, val, context=""):
    """``force(val)`` on ``val``'s concrete value; a ``ConcretizationTypeError`` naming
    ``context`` if ``val`` is a tracer whose value is unknown.

        >>> concrete_or_error(int, fnp.array(3))
        3
    """
    force = force if force is not None else (lambda x: x)
    if isinstance(val, Tracer):
        v = val.concrete_value()
        if v is None:
            raise ConcretizationTypeError(val, context)
        return force(v)
    return force(val)

