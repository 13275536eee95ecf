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

from ..autodiff.jvp import Zero, instantiate, is_zero, jvp_jaxpr, jvp_rules, tangent_aval
from ..autodiff.partial_eval import call_partial_eval, partial_eval_rules
from ..autodiff.transpose import is_undefined, transpose_jaxpr, transpose_rules
from ..batching import batch_jaxpr, batching_rules


def _abstract_eval(*avals, jaxpr, name):
    for i, (a, b) in enumerate(zip(avals, jaxpr.in_avals)):
        if a.shape != b.shape or a.dtype != b.dtype:
            raise TypeError(f"jit[{name}]: argument {i} has type {a.str_short()}, but the traced "
                            f"function expects {b.str_short()}")
    return jaxpr.out_avals


def _impl(*args, jaxpr, name):
    from .executable import executable_for
    return executable_for(jaxpr, name)(*args)


jit_p = Primitive("jit", impl=_impl, abstract_eval=_abstract_eval)
jit_p.higher_order = True


def _jit_jvp(primals, tangents, *, jaxpr, name):
    nonzeros = [not is_zero(t) for t in tangents]
    jvp_j, out_nz = jvp_jaxpr(jaxpr, nonzeros)
    outs = jit_p.bind(*primals, *[t for t in tangents if not is_zero(t)], jaxpr=jvp_j,
                      name=f"jvp({name})")
    n = len(jaxpr.outvars)
    t_iter = iter(outs[n:])
    t_out = [next(t_iter) if nz else Zero(tangent_aval(a))
             for a, nz in zip(jaxpr.out_avals, out_nz)]
    return outs[:n], t_out


def _jit_transpose(cts, *args, jaxpr, name):
    linear = [is_undefined(x) for x in args]
    t_jaxpr = transpose_jaxpr(jaxpr, linear)
    nonlin = [x for x in args if not is_undefined(x)]
    ct_in = jit_p.bind(*nonlin, *[instantiate(ct) for ct in cts], jaxpr=t_jaxpr,
                       name=f"transpose({name})")
    it = iter(ct_in)
    return [next(it) if lin else None for lin in linear]


def _jit_batch(axis, vals, dims, *, jaxpr, name):
    batched, out_dims = batch_jaxpr(jaxpr, axis, dims)
    return jit_p.bind(*vals, jaxpr=batched, name=f"vmap({name})"), list(out_dims)


jvp_rules[jit_p] = _jit_jvp
transpose_rules[jit_p] = _jit_transpose
batching_rules[jit_p] = _jit_batch
partial_eval_rules[jit_p] = call_partial_eval
