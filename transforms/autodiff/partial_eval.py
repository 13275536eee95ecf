"""Partial evaluation: run what is known now, stage what is not.

The partial-eval trace is a staging trace whose *known* values are ordinary values of its
parent trace: a primitive whose inputs are all known runs on the parent, a primitive with an
unknown input is recorded into a jaxpr. Known values used by recorded equations become that
jaxpr's constants, the *residuals*. ``linearize`` runs the JVP trace on top of it with known
primals and unknown tangents, which splits a JVP into primal work (done now) and a linear
tangent program (a jaxpr over the tangents)::

    >>> j = ft.make_jaxpr(lambda a, b: fnp.sin(a) * b)(1.0, 2.0)
    >>> jaxpr_known, jaxpr_unknown, out_unknowns, num_res = partial_eval_jaxpr(j, [False, True])
    >>> print(jaxpr_known)        # sin(a) runs now; its result is the residual
    { lambda ; a:f64[]. let b:f64[] = sin a in (b,) }
    >>> print(jaxpr_unknown)      # the staged rest: residual first, then b
    { lambda ; a:f64[] b:f64[]. let c:f64[] = mul a b in (c,) }
"""
from __future__ import annotations

from functrans.core.memo import cache_on_jaxpr
from functrans.core.eval import eval_jaxpr
from functrans.core.ir import Jaxpr, SourceInfo, Var, has_effects, source_info
from functrans.core.name_stack import NameStack, current as current_name_stack
from functrans.core.staging import StagingTrace, StagingTracer, trace_to_jaxpr
from functrans.core.trace import Tracer, current_trace, new_trace, set_current_trace

from .transpose import transpose_rules

# Rules for higher-order primitives with a mix of known and unknown inputs:
# rule(trace, prim, args, params) -> outputs (known values or the trace's tracers).
partial_eval_rules: dict = {}


class PartialEvalTrace(StagingTrace):
    """Stages only the computations that depend on an unknown input."""

    def __init__(self, parent, name="linearize"):
        super().__init__(parent, name)
        # The scopes open where the program is linearized: its equations' name stacks are
        # recorded below them (as a new jaxpr's are in JAX), so the backward pass, run under
        # those same scopes, does not name them twice.
        self.name_base = len(current_name_stack())

    def is_unknown(self, x) -> bool:
        return isinstance(x, StagingTracer) and x._trace is self

    def process_primitive(self, prim, args, params):
        for x in args:
            if type(x) is StagingTracer and x._trace is self:
                break
        else:  # all known: runs now, on the parent trace (prim.bind there, without repacking)
            return self.on_parent(prim, args, params)
        rule = partial_eval_rules.get(prim)
        if rule is not None:
            return rule(self, prim, args, params)
        return self.stage(prim, args, params)

    def eqn_source(self, prim):
        # A staged equation depends on an unknown (in linearize: a tangent), so reverse mode
        # transposes it; its line is only ever shown when it has no transpose rule. Finding
        # the user's frame costs a walk up a deep stack, so the others skip it, keeping only
        # the name stack (the backward pass names what it stages after it, as JAX does).
        if prim in transpose_rules:
            stack = current_name_stack()
            if len(stack) <= self.name_base:
                return None
            return SourceInfo("", 0, "", NameStack(stack.stack[self.name_base:]))
        return source_info()

    def stage(self, prim, args, params):
        """Record the equation (known inputs become residual constants)."""
        return StagingTrace.process_primitive(self, prim, args, params)

    def new_unknown(self, aval) -> StagingTracer:
        return self.new_arg(aval)


@cache_on_jaxpr
def partial_eval_jaxpr(jaxpr: Jaxpr, in_unknowns, instantiate=False):
    """Split ``jaxpr`` by which inputs are unknown.

    Returns ``(jaxpr_known, jaxpr_unknown, out_unknowns, num_res)``: ``jaxpr_known`` maps the
    known inputs to the known outputs followed by ``num_res`` residuals; ``jaxpr_unknown`` maps
    the residuals followed by the unknown inputs to the unknown outputs. ``instantiate`` (bool
    or per-output list) forces outputs to be unknown.
    """
    in_avals = jaxpr.in_avals
    known_avals = [a for a, u in zip(in_avals, in_unknowns) if not u]
    unknown_avals = [a for a, u in zip(in_avals, in_unknowns) if u]
    n_out = len(jaxpr.outvars)
    inst = list(instantiate) if isinstance(instantiate, (list, tuple)) else [instantiate] * n_out
    result = {}

    def known_fun(*known_args):
        pe = PartialEvalTrace(current_trace(), "partial_eval")
        with new_trace(pe):
            unknown_args = [pe.new_arg(a) for a in unknown_avals]
            k, u = iter(known_args), iter(unknown_args)
            outs = eval_jaxpr(jaxpr, *[next(u) if unk else next(k) for unk in in_unknowns])
            out_unknowns = [pe.is_unknown(o) or i for o, i in zip(outs, inst)]
            jaxpr_u = pe.to_jaxpr([o for o, unk in zip(outs, out_unknowns) if unk])
        # Residuals that are values of this staging trace become outputs of the known jaxpr;
        # concrete constants stay constants of the unknown jaxpr.
        res_vars, res_vals, const_vars, const_vals = [], [], [], []
        for v, c in zip(jaxpr_u.constvars, jaxpr_u.consts):
            if isinstance(c, Tracer):
                res_vars.append(v)
                res_vals.append(c)
            else:
                const_vars.append(v)
                const_vals.append(c)
        result["unknown"] = jaxpr_u.replace(constvars=const_vars, consts=const_vals,
                                            invars=res_vars + jaxpr_u.invars)
        result["out_unknowns"] = out_unknowns
        result["num_res"] = len(res_vals)
        return [o for o, unk in zip(outs, out_unknowns) if not unk] + res_vals

    jaxpr_known = trace_to_jaxpr(known_fun, known_avals, name="partial_eval")
    return jaxpr_known, result["unknown"], result["out_unknowns"], result["num_res"]


def dce_jaxpr(jaxpr: Jaxpr, used_outputs, prune_inputs=False):
    """Drop equations whose outputs are unused (no primitive has side effects).

    Returns ``(jaxpr, used_inputs)``; with ``prune_inputs`` unused inputs are removed too.
    """
    outvars = [v for v, u in zip(jaxpr.outvars, used_outputs) if u]
    live = {v for v in outvars if isinstance(v, Var)}
    kept = []
    for eqn in reversed(jaxpr.eqns):
        if any(o in live for o in eqn.outputs) or has_effects(eqn):
            kept.append(eqn)
            live.update(x for x in eqn.inputs if isinstance(x, Var))
    kept.reverse()
    used_inputs = [v in live for v in jaxpr.invars]
    invars = [v for v, u in zip(jaxpr.invars, used_inputs) if u] if prune_inputs else jaxpr.invars
    keep_c = [v in live for v in jaxpr.constvars]
    return jaxpr.replace(constvars=[v for v, k in zip(jaxpr.constvars, keep_c) if k],
                         consts=[c for c, k in zip(jaxpr.consts, keep_c) if k],
                         invars=invars, outvars=outvars, eqns=kept), used_inputs


def call_partial_eval(trace: PartialEvalTrace, prim, args, params, *, jaxpr_param="jaxpr",
                      make_params=lambda params, jaxpr: dict(params, jaxpr=jaxpr)):
    """Partial eval of a call-like primitive (its params hold one jaxpr run on the args):
    bind the known half on the parent now, stage the unknown half."""
    jaxpr = params[jaxpr_param]
    unknowns = [trace.is_unknown(x) for x in args]
    jaxpr_k, jaxpr_u, out_unknowns, num_res = partial_eval_jaxpr(jaxpr, unknowns)
    known_args = [x for x, u in zip(args, unknowns) if not u]
    with set_current_trace(trace.parent):
        known_outs = prim.bind_all(*known_args, **make_params(params, jaxpr_k))
    n_known = len(known_outs) - num_res
    residuals = known_outs[n_known:]
    unknown_args = [x for x, u in zip(args, unknowns) if u]
    unknown_outs = trace.stage(prim, residuals + unknown_args, make_params(params, jaxpr_u))
    k, u = iter(known_outs[:n_known]), iter(unknown_outs)
    return [next(u) if unk else next(k) for unk in out_unknowns]
