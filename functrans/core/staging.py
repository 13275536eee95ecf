"""Staging: record every primitive applied to tracers into a Jaxpr (omnistaging).

    >>> jaxpr = trace_to_jaxpr(lambda x: [x * x], [ShapedArray((3,), np.dtype("float32"))])
    >>> print(jaxpr)
    { lambda ; a:f32[3]. let b:f32[3] = mul a a in (b,) }
"""
from __future__ import annotations

from .avals import ShapedArray
from .config import config
from .shape_poly import DimExpr
from .ir import Eqn, Jaxpr, Literal, Var, replay, source_info
from .trace import Trace, Tracer, current_trace, get_aval, new_trace, to_numpy, type_rule


class StagingTracer(Tracer):
    """A value whose computation is being recorded; ``_var`` names it in the jaxpr (not
    ``var``, which is the array method ``x.var()``)."""

    __slots__ = ("aval", "_var")

    def __init__(self, trace, aval: ShapedArray, var: Var):
        self._trace = trace
        self.aval = aval
        self._var = var


class StagingTrace(Trace):
    """Builds a Jaxpr. Values from outside (arrays, outer tracers) become constants:
    scalars inline as Literals, everything else as constvars."""

    def __init__(self, parent, name="make_jaxpr"):
        super().__init__(parent)
        self.name = name
        self.invars: list[Var] = []
        self.eqns: list[Eqn] = []
        self.constvars: list[Var] = []
        self.consts: list = []
        self._const_atoms: dict[int, Var] = {}

    def describe(self):
        return self.name

    def new_arg(self, aval: ShapedArray) -> StagingTracer:
        var = Var(aval)
        self.invars.append(var)
        return StagingTracer(self, aval, var)

    def atom(self, x) -> Var | Literal:
        """The jaxpr atom standing for ``x`` (this trace's tracer, or a new constant)."""
        if isinstance(x, StagingTracer) and x._trace is self:
            return x._var
        atom = self._const_atoms.get(id(x))
        if atom is not None:
            return atom
        if isinstance(x, Tracer):
            self.check_foreign(x)
            aval = x.aval
        else:
            aval = get_aval(x)
            if not aval.shape:
                return Literal(to_numpy(x, aval), aval)
        var = Var(aval)
        self.constvars.append(var)
        self.consts.append(x)  # keeps x alive, so id(x) stays unique while we trace
        self._const_atoms[id(x)] = var
        return var

    def process_primitive(self, prim, args, params):
        atoms, sig = [], []
        for x in args:
            if type(x) is StagingTracer and x._trace is self:  # atom(x), inlined
                atom, a = x._var, x.aval
            else:
                atom = self.atom(x)
                a = atom.aval
            atoms.append(atom)
            sig.append((a.shape, a.dtype, a.weak_type))
        out_avals = type_rule(prim, sig, params)
        outs = [StagingTracer(self, a, Var(a)) for a in out_avals]
        self.eqns.append(Eqn(prim, atoms, [o._var for o in outs], params,
                             self.eqn_source(prim)))
        return outs

    def eqn_source(self, prim):
        """Where the user's code applied ``prim`` (for error messages about the equation)."""
        return source_info()

    def to_jaxpr(self, outs) -> Jaxpr:
        outvars = [self.atom(x) for x in outs]
        return Jaxpr(self.constvars, self.consts, self.invars, outvars, self.eqns)


def trace_to_jaxpr(fun, in_avals, name="make_jaxpr") -> Jaxpr:
    """Trace ``fun`` (flat list of tracers -> flat list of outputs) into a Jaxpr.

    Constants may be concrete arrays or tracers of enclosing traces (closure capture);
    see :func:`hoist_tracer_consts`.
    """
    trace = StagingTrace(current_trace(), name)
    outer, replay.source = replay.source, None  # fun may be user code: its own lines count
    try:
        with new_trace(trace):
            args = [trace.new_arg(a) for a in in_avals]
            outs = fun(*args)
            # a symbolic size returned as a result: the program computes its value
            outs = [o.dimension_as_value() if type(o) is DimExpr else o for o in outs]
            jaxpr = trace.to_jaxpr(outs)
    finally:
        replay.source = outer
    if config.check_jaxprs:
        from .check import check_jaxpr
        check_jaxpr(jaxpr)
    return jaxpr


def hoist_tracer_consts(jaxpr: Jaxpr) -> tuple[Jaxpr, list]:
    """Turn constvars bound to tracers into leading invars; returns (jaxpr, those tracers).

    Higher-order primitives pass the returned tracers as explicit arguments, so enclosing
    transformations see every value that flows into the sub-program.
    """
    keep_vars, keep_vals, lift_vars, lift_vals = [], [], [], []
    for v, c in zip(jaxpr.constvars, jaxpr.consts):
        if isinstance(c, Tracer):
            lift_vars.append(v)
            lift_vals.append(c)
        else:
            keep_vars.append(v)
            keep_vals.append(c)
    if not lift_vars:
        return jaxpr, []
    return jaxpr.replace(constvars=keep_vars, consts=keep_vals,
                         invars=lift_vars + jaxpr.invars), lift_vals
