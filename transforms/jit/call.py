"""The ``jit`` call primitive: ``outs = jit[name=f jaxpr={...}] *args``.

It carries a closed jaxpr. Under evaluation it compiles (see ``executable``) and runs; every
other interpreter transforms the jaxpr and binds ``jit`` again, so ``grad(jit(f))``,
``jit(vmap(f))``, ``vmap(jit(f))`` and jit inside jit all stay compiled::

    >>> print(ft.make_jaxpr(ft.jit(fnp.sin))(1.0))
    { lambda ; a:f64[]. let
        b:f64[] = jit[
          jaxpr={ lambda ; c:f64[]. let d:f64[] = sin c in (d,) }
          name=sin
        ] a
      in (b,) }
"""
from __future__ import annotations

from functrans.core.trace import Primitive

from ..autodiff.call_rules import CallRules


def _abstract_eval(*avals, jaxpr, name):
    for i, (a, b) in enumerate(zip(avals, jaxpr.in_avals)):
        if a.shape != b.shape or a.dtype != b.dtype:
            raise TypeError(f"jit[{name}]: argument {i} has type {a.str_short()}, but the traced "
                            f"function expects {b.str_short()}")
    return jaxpr.out_avals


def _impl(*args, jaxpr, name):
    from .executable import executable_for
    from ..partition.partitioner import mesh_and_specs, partitioned
    sharded = mesh_and_specs(jaxpr, args)
    if sharded is not None:  # arguments on a mesh: one program per shard
        return partitioned(jaxpr, *sharded, name)(*args)
    return executable_for(jaxpr, name)(*args)


jit_p = Primitive("jit", impl=_impl, abstract_eval=_abstract_eval)
jit_p.multiple_results = True
jit_p.higher_order = True


class _JitRules(CallRules):
    """Transformed programs stay jit calls, named after what was done to them."""

    def jvp_params(self, params, jaxpr, nonzeros, out_nonzeros):
        return dict(params, jaxpr=jaxpr, name=f"jvp({params['name']})")

    def transpose_params(self, params, jaxpr, linear):
        return dict(params, jaxpr=jaxpr, name=f"transpose({params['name']})")

    def batch_params(self, params, jaxpr):
        return dict(params, jaxpr=jaxpr, name=f"vmap({params['name']})")


_JitRules(jit_p)
