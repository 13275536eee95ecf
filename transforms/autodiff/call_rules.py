"""The rules of call-like primitives, written once: ``jit``, ``checkpoint`` and ``shard_map``
each carry a jaxpr run on their operands, so every transformation transforms that jaxpr and
binds the primitive again. A primitive's ``CallRules`` subclass only says how its params
change (and overrides a rule where its semantics differ, as shard_map's transpose does)::

    >>> jaxpr = ft.make_jaxpr(ft.grad(ft.jit(fnp.sin)))(1.0)
    >>> [e.params["name"] for e in jaxpr.eqns if e.prim.name == "jit"]
    ['jvp(sin)', 'transpose(jvp(sin))']
"""
from __future__ import annotations

import contextlib

from functrans.core.trace import get_aval

from ..batching import batch_jaxpr, batching_rules
from .jvp import Zero, instantiate, is_zero, jvp_jaxpr, jvp_rules, tangent_aval
from .partial_eval import call_partial_eval, partial_eval_rules
from .transpose import is_undefined, transpose_jaxpr, transpose_rules


class CallRules:
    """JVP, transpose, batching and partial evaluation of a call-like primitive ``prim``."""

    def __init__(self, prim):
        self.prim = prim
        jvp_rules[prim] = self.jvp
        transpose_rules[prim] = self.transpose
        batching_rules[prim] = self.batch
        partial_eval_rules[prim] = self.partial_eval

    # -- how params change; subclasses override -----------------------------------------
    def retrace(self, params):
        """A context in which the jaxpr may be re-traced (e.g. with its named axes bound)."""
        return contextlib.nullcontext()

    def jvp_params(self, params, jaxpr, nonzeros, out_nonzeros) -> dict:
        return dict(params, jaxpr=jaxpr)

    def transpose_params(self, params, jaxpr, linear) -> dict:
        return dict(params, jaxpr=jaxpr)

    def batch_params(self, params, jaxpr) -> dict:
        return dict(params, jaxpr=jaxpr)

    # -- the rules ---------------------------------------------------------------------
    def jvp(self, primals, tangents, **params):
        nonzeros = [not is_zero(t) for t in tangents]
        with self.retrace(params):
            jvp_j, out_nz = jvp_jaxpr(params["jaxpr"], nonzeros)
        outs = self.prim.bind_all(*primals, *[t for t in tangents if not is_zero(t)],
                                  **self.jvp_params(params, jvp_j, nonzeros, out_nz))
        n = len(out_nz)
        it = iter(outs[n:])
        return outs[:n], [next(it) if nz else Zero(tangent_aval(get_aval(p)))
                          for p, nz in zip(outs[:n], out_nz)]

    def transpose(self, cts, *args, **params):
        linear = [is_undefined(x) for x in args]
        with self.retrace(params):
            t_jaxpr = transpose_jaxpr(params["jaxpr"], linear)
        nonlin = [x for x in args if not is_undefined(x)]
        ct_in = self.prim.bind_all(*nonlin, *[instantiate(ct) for ct in cts],
                                   **self.transpose_params(params, t_jaxpr, linear))
        it = iter(ct_in)
        return [next(it) if lin else None for lin in linear]

    def batch(self, axis, vals, dims, **params):
        with self.retrace(params):
            batched, out_dims = batch_jaxpr(params["jaxpr"], axis, dims)
        return self.prim.bind_all(*vals, **self.batch_params(params, batched)), list(out_dims)

    def partial_eval(self, trace, prim, args, params):
        return call_partial_eval(trace, prim, args, params)
