"""``checkpoint`` (alias ``remat``): recompute a function's intermediates in the backward pass
instead of storing them as residuals.

Under linearization a ``checkpoint`` equation computes its primal outputs now and stages a
``checkpoint`` equation that recomputes the primal intermediates from the *inputs* next to the
tangent computation, so the residuals are the inputs only::

    >>> f = ft.checkpoint(lambda x: fnp.sin(fnp.sin(x)))
    >>> print(ft.make_jaxpr(ft.grad(f))(1.0))     # the backward pass recomputes sin(x)
    { lambda ; a:f64[]. let
        b:f64[] = sin a
        _:f64[] = sin b
        c:f64[] = checkpoint[
          differentiated=True
          jaxpr={ lambda ; d:f64[] e:f64[]. let
              f:f64[] = sin d
              g:f64[] = cos d
              h:f64[] = cos f
              i:f64[] = mul e h
              j:f64[] = mul i g
            in (j,) }
          prevent_cse=True
        ] a 1.0:f64[]
        k:f64[] = convert_element_type[new_dtype=float64 weak_type=True] c
      in (k,) }
"""
from __future__ import annotations

import functools

from functrans.core.api_util import fun_name
from functrans.core.eval import eval_jaxpr
from functrans.core.ir import Literal
from functrans.core.staging import hoist_tracer_consts, trace_to_jaxpr
from functrans.core.trace import EvalTrace, Primitive, current_trace, get_aval, set_current_trace
from functrans.core.tree import tree_flatten, tree_unflatten

from .call_rules import CallRules
from .partial_eval import dce_jaxpr, partial_eval_jaxpr


def checkpoint(fun, *, prevent_cse=True, policy=None, static_argnums=()):
    """Wrap ``fun`` so reverse-mode differentiation recomputes its intermediates.

    >>> g = ft.grad(ft.checkpoint(lambda x: fnp.sin(x) ** 2))
    >>> float(g(0.5)) == float(ft.grad(lambda x: fnp.sin(x) ** 2)(0.5))
    True
    """
    if policy is not None:
        raise NotImplementedError("checkpoint policies are not supported: every intermediate "
                                  "is recomputed")
    static_argnums = (static_argnums,) if isinstance(static_argnums, int) else \
        tuple(static_argnums)

    @functools.wraps(fun)
    def remat_fun(*args, **kwargs):
        if isinstance(current_trace(), EvalTrace):
            return fun(*args, **kwargs)  # nothing to differentiate: no need to stage
        static = {i: args[i] for i in static_argnums}
        dyn = [a for i, a in enumerate(args) if i not in static]
        leaves, in_tree = tree_flatten((dyn, kwargs))
        store = {}

        def flat(*xs):
            d, k = tree_unflatten(in_tree, xs)
            it = iter(d)
            full = [static[i] if i in static else next(it) for i in range(len(args))]
            out_leaves, store["tree"] = tree_flatten(fun(*full, **k))
            return out_leaves

        jaxpr = trace_to_jaxpr(flat, [get_aval(x) for x in leaves],
                               name=f"checkpoint({fun_name(fun)})")
        jaxpr, consts = hoist_tracer_consts(jaxpr)
        outs = remat_p.bind_all(*consts, *leaves, jaxpr=jaxpr, prevent_cse=prevent_cse,
                                differentiated=False)
        return tree_unflatten(store["tree"], outs)

    return remat_fun


remat = checkpoint

remat_p = Primitive(
    "checkpoint",
    impl=lambda *args, jaxpr, prevent_cse, differentiated: eval_jaxpr(jaxpr, *args),
    abstract_eval=lambda *avals, jaxpr, prevent_cse, differentiated: jaxpr.out_avals)
remat_p.multiple_results = True


def _remat_partial_eval(trace, prim, args, params):
    jaxpr = params["jaxpr"]
    unknowns = [trace.is_unknown(x) for x in args]
    jaxpr_k, _, out_unknowns, num_res = partial_eval_jaxpr(jaxpr, unknowns)
    n_known = len(jaxpr_k.outvars) - num_res
    # Known outputs now, without saving intermediates...
    jaxpr_k, _ = dce_jaxpr(jaxpr_k, [True] * n_known + [False] * num_res)
    with set_current_trace(trace.parent):
        known_outs = eval_jaxpr(jaxpr_k, *[x for x, u in zip(args, unknowns) if not u])
    # ...and the unknown outputs recomputed from all the inputs in the backward pass.
    jaxpr_u, used = dce_jaxpr(jaxpr, out_unknowns, prune_inputs=True)
    jaxpr_u = _inline_checkpoints(jaxpr_u)
    staged = trace.stage(remat_p, [x for x, u in zip(args, used) if u],
                         dict(params, jaxpr=jaxpr_u, differentiated=True))
    k, u = iter(known_outs), iter(staged)
    return [next(u) if unk else next(k) for unk in out_unknowns]


def _inline_checkpoints(jaxpr):
    """``jaxpr`` with its ``checkpoint`` equations replaced by their bodies. The staged
    program is recomputed whole in the backward pass, so an inner checkpoint saves nothing
    there; kept, one equation would mix the inner primal computation with its tangents, and
    the transpose would take the primal results for linear ones."""
    if not any(e.prim is remat_p for e in jaxpr.eqns):
        return jaxpr

    def run(*args):
        env = dict(zip(jaxpr.invars, args))
        env.update(zip(jaxpr.constvars, jaxpr.consts))
        read = lambda x: x.bound if type(x) is Literal else env[x]
        for eqn in jaxpr.eqns:
            ins = [read(x) for x in eqn.inputs]
            if eqn.prim is remat_p:
                outs = eval_jaxpr(_inline_checkpoints(eqn.params["jaxpr"]), *ins)
            else:
                outs = eqn.prim.bind_all(*ins, **eqn.params)
            env.update(zip(eqn.outputs, outs))
        return [read(v) for v in jaxpr.outvars]

    return trace_to_jaxpr(run, jaxpr.in_avals, name="checkpoint")


class _RematRules(CallRules):
    """Transformed programs stay checkpointed; once differentiated, they are marked so."""

    def transpose_params(self, params, jaxpr, linear):
        return dict(params, jaxpr=jaxpr, differentiated=True)

    def partial_eval(self, trace, prim, args, params):
        return _remat_partial_eval(trace, prim, args, params)


_RematRules(remat_p)
