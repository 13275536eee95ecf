"""JAX's call primitives ``closed_call_p`` and ``call_p``: apply a jaxpr to operands.

functrans's own programs never contain them (its calls are ``jit`` equations), but libraries
bind them and look for them in jaxprs, so they exist, defined with the extension API like any
library primitive. Differentiating or batching one evaluates its program in the enclosing
transformation (as inlining would), and ``jit`` inlines it::

    >>> j = ft.make_jaxpr(lambda x: fnp.sin(x) * 2)(1.0)
    >>> closed_call_p.bind(0.5, call_jaxpr=j)
    [Array(0.95885108, dtype=float64, weak_type=True)]
    >>> ft.grad(lambda x: closed_call_p.bind(x, call_jaxpr=j)[0])(0.0)
    Array(2., dtype=float64, weak_type=True)
"""
from __future__ import annotations

from functrans.core.eval import eval_jaxpr
from functrans.core.staging import hoist_tracer_consts, trace_to_jaxpr
from functrans.core.trace import get_aval
from functrans.transforms.autodiff.jvp import jvp_flat, jvp_rules
from functrans.transforms.batching import AxisData, batch_flat, batching_rules
from functrans.transforms.jit.lowerings import InlineLowering, lowering_rules

from ._primitive import Primitive

__all__ = ["call_p", "closed_call_p"]


def _run(*args, call_jaxpr):
    return eval_jaxpr(call_jaxpr, *args)


def _abstract_eval(*avals, call_jaxpr):
    for i, (a, b) in enumerate(zip(avals, call_jaxpr.in_avals)):
        if a.shape != b.shape or a.dtype != b.dtype:
            raise TypeError(f"call: operand {i} has type {a.str_short()}, but call_jaxpr "
                            f"takes {b.str_short()}")
    if len(avals) != len(call_jaxpr.invars):
        raise TypeError(f"call: {len(avals)} operands for a call_jaxpr taking "
                        f"{len(call_jaxpr.invars)}")
    return call_jaxpr.out_avals, frozenset()


def _jvp(primals, tangents, *, call_jaxpr):
    return jvp_flat(lambda *xs: eval_jaxpr(call_jaxpr, *xs), primals, tangents)


def _batch(axis, vals, dims, *, call_jaxpr):
    return batch_flat(lambda *xs: eval_jaxpr(call_jaxpr, *xs), vals, dims,
                      AxisData(axis.name, axis.size))


def _define(p):
    p.multiple_results = True
    p.call_primitive = True
    p.def_impl(_run)
    p.def_effectful_abstract_eval(_abstract_eval)
    core = p._core
    jvp_rules[core] = _jvp  # functrans's conventions already (lists)
    batching_rules[core] = _batch
    lowering_rules[core] = {None: InlineLowering(_run, multiple_results=True)}
    return p


class _CallPrimitive(Primitive):
    """``call_p``: JAX binds it with the function to call first, ``bind(f, *args)``."""

    def bind(self, *args, **params):
        if args and callable(args[0]) and "call_jaxpr" not in params:
            fun, args = args[0], args[1:]
            call = getattr(fun, "call_wrapped", fun)
            jaxpr = trace_to_jaxpr(lambda *xs: list(call(*xs)), [get_aval(a) for a in args],
                                   name="call")
            jaxpr, consts = hoist_tracer_consts(jaxpr)
            return super().bind(*consts, *args, call_jaxpr=jaxpr, **params)
        return super().bind(*args, **params)


closed_call_p = _define(Primitive("closed_call"))
call_p = _define(_CallPrimitive("call"))
