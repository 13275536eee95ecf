"""Forward-mode differentiation: the JVP trace, symbolic zeros and the JVP rule registry.

A JVPTracer carries a primal value and its tangent. Tangents that are known to be zero are
``Zero(aval)`` objects, so rules skip work for them, and primitives whose inputs all have
zero tangents run on the parent trace untouched::

    >>> from functrans.primitives import sin_p
    >>> sin_p in jvp_rules   # registered by the primitive family (elementwise.py)
    True
"""
from __future__ import annotations

import contextlib

from functrans.core import name_stack
from functrans.core.memo import cache_on_jaxpr
from functrans.core.avals import ShapedArray
from functrans.core.eval import eval_jaxpr
from functrans.core.staging import trace_to_jaxpr
from functrans.core.array import Array
from functrans.core.trace import (Trace, Tracer, _state, concrete_of, current_trace, get_aval,
                                  new_trace)

from .. import ops
from functrans.core.dtypes import kind as dtype_kind

jvp_rules: dict = {}


class Zero:
    """A symbolic zero tangent/cotangent of type ``aval``."""

    __slots__ = ("aval",)
    symbolic_zero = True  # vmap (below autodiff) passes symbolic zeros through, as JAX's

    def __init__(self, aval: ShapedArray):
        self.aval = aval

    def __repr__(self):
        return f"Zero({self.aval.str_short()})"


class SymbolicZero:
    """A zero tangent as custom JVP rules with ``symbolic_zeros=True`` see it (JAX's
    ``jax.custom_derivatives.SymbolicZero``): its type ``aval``, whose attributes (``shape``,
    ``dtype``, ...) it also answers. A rule may return one for a zero output tangent.

        >>> SymbolicZero(ShapedArray((3,), "float32")).shape
        (3,)
    """

    symbolic_zero = True

    def __init__(self, aval: ShapedArray):
        self.aval = aval

    def __repr__(self):
        return "SymbolicZero"

    def __getattr__(self, name):
        if name == "aval":  # not set yet (copying, unpickling): no recursion
            raise AttributeError(name)
        try:
            return getattr(self.aval, name)
        except AttributeError:
            raise AttributeError(f"SymbolicZero has no attribute {name}") from None

    def instantiate(self):
        """An array of zeros of its type."""
        return ops.zeros(self.aval)

    @staticmethod
    def from_primal_value(val) -> "SymbolicZero":
        """The symbolic zero tangent of the primal value ``val``."""
        return SymbolicZero(tangent_aval(get_aval(val)))


def is_zero(t) -> bool:
    """Whether ``t`` is a symbolic zero (tangents custom rules see included)."""
    return type(t) is Zero or type(t) is SymbolicZero


def tangent_aval(aval: ShapedArray) -> ShapedArray:
    """Tangents of floats (and complex numbers) have the primal's dtype; integers/bools only have zero tangents."""
    return aval.strip_weak_type() if dtype_kind(aval.dtype) in "fc" else aval


def instantiate(t, aval=None):
    """Materialize a symbolic zero as an array (other tangents pass through)."""
    if type(t) is Zero:
        return ops.zeros(t.aval.strip_weak_type())
    return t


def add_tangents(a, b):
    """Sum of two tangents, skipping symbolic zeros."""
    if type(a) is Zero:
        return b
    if type(b) is Zero:
        return a
    return ops.add_any(a, b)


class JVPTracer(Tracer):
    __slots__ = ("primal", "tangent", "_aval")

    def __init__(self, trace, primal, tangent):
        self._trace = trace
        self.primal = primal
        self.tangent = tangent
        self._aval = None

    @property
    def aval(self):
        a = self._aval
        if a is None:
            a = self._aval = get_aval(self.primal)
        return a

    def concrete_value(self):
        return concrete_of(self.primal)


class JVPTrace(Trace):
    """Propagates tangents through primitives with their JVP rules."""

    name = "jvp"

    def __init__(self, parent, name="jvp"):
        super().__init__(parent)
        self.name = name

    def unpack(self, x):
        if isinstance(x, JVPTracer) and x._trace is self:
            return x.primal, x.tangent
        if isinstance(x, Tracer):
            self.check_foreign(x)
        return x, Zero(tangent_aval(get_aval(x)))

    def primal_of(self, x):
        """``x`` without its tangent (for auxiliary outputs, which are not differentiated)."""
        return x.primal if isinstance(x, JVPTracer) and x._trace is self else x

    def process_primitive(self, prim, args, params):
        primals, tangents, nonzero = [], [], False
        for x in args:
            if type(x) is JVPTracer and x._trace is self:
                p, t = x.primal, x.tangent
            else:
                p, t = self.unpack(x)
            primals.append(p)
            tangents.append(t)
            nonzero = nonzero or type(t) is not Zero
        prev = _state.trace
        _state.trace = self.parent  # rules bind on the parent trace
        try:
            if not nonzero:
                return prim.bind_all(*primals, **params)
            rule = jvp_rules.get(prim)
            if rule is None:
                raise NotImplementedError(
                    f"differentiation rule for '{prim.name}' is not implemented")
            primals_out, tangents_out = rule(primals, tangents, **params)
        finally:
            _state.trace = prev
        out = []
        for p, t in zip(primals_out, tangents_out):
            dtype = p._value.dtype if type(p) is Array else get_aval(p).dtype
            # Integer and boolean outputs are not differentiable; an output whose tangent is
            # a symbolic zero leaves this trace, as in JAX (equinox's filter_jvp tells outputs
            # that depend on the differentiated inputs by their being this trace's tracers).
            if type(t) is Zero or dtype_kind(dtype) not in "fc":
                out.append(p)
            else:
                out.append(JVPTracer(self, p, t))
        return out


def jvp_flat(fun, primals, tangents, name="jvp", transform_stack=False):
    """Run ``fun`` (flat list -> flat list) on JVP tracers; returns (primals_out, tangents_out)
    where tangents_out may contain symbolic Zeros. With ``transform_stack`` (the user-facing
    ``jvp``/``linearize``/``vjp``), what ``fun`` stages is named ``jvp(...)`` as in JAX."""
    trace = JVPTrace(current_trace(), name)
    with new_trace(trace), \
            name_stack.transform("jvp") if transform_stack else contextlib.nullcontext():
        ins = [JVPTracer(trace, p, t) for p, t in zip(primals, tangents)]
        outs = fun(*ins)
        pairs = [trace.unpack(o) for o in outs]
    return [p for p, _ in pairs], [t for _, t in pairs]


# ---- JVP of a jaxpr (used by higher-order primitives) -------------------------------------------
@cache_on_jaxpr
def jvp_jaxpr(jaxpr, nonzeros, instantiate_out=False):
    """A jaxpr computing ``(primals_out, tangents_out)`` from ``(primals, nonzero tangents)``.

    ``nonzeros[i]`` says whether input i has a (non-symbolic-zero) tangent input. Returns the
    jaxpr and, per output, whether its tangent output is nonzero (all True if
    ``instantiate_out``).
    """
    avals = jaxpr.in_avals
    tan_avals = [tangent_aval(a) for a, nz in zip(avals, nonzeros) if nz]
    out_nonzeros = []

    def fun(*args):
        primals, tans = args[:len(avals)], iter(args[len(avals):])
        tangents = [next(tans) if nz else Zero(tangent_aval(a)) for a, nz in zip(avals, nonzeros)]
        p_out, t_out = jvp_flat(lambda *xs: eval_jaxpr(jaxpr, *xs), primals, tangents)
        inst = instantiate_out if isinstance(instantiate_out, (list, tuple)) else \
            [instantiate_out] * len(t_out)
        nz = [not is_zero(t) or i for t, i in zip(t_out, inst)]
        out_nonzeros[:] = nz
        return list(p_out) + [instantiate(t) for t, n in zip(t_out, nz) if n]

    out = trace_to_jaxpr(fun, list(avals) + tan_avals, name="jvp")
    return out, out_nonzeros
