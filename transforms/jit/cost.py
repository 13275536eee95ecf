"""``cost_analysis`` of a traced program: its floating-point operations, transcendental
functions and the bytes its arguments and results occupy, counted from the jaxpr as XLA's
cost analysis counts them (an elementwise operation costs one flop per element, a dot
``2*M*N*K``, a reduction one per element folded in; a transcendental function counts as a
transcendental, not a flop)::

    >>> from functrans.core.tracing import make_jaxpr
    >>> cost_analysis(make_jaxpr(lambda x, y: 2 * x + y)(1.0, 2.0))["flops"]
    2.0
"""
from __future__ import annotations

import math

import numpy as np

__all__ = ["cost_analysis"]

TRANSCENDENTAL = frozenset({
    "exp", "exp2", "log", "log1p", "expm1", "sin", "cos", "tan", "asin", "acos", "atan",
    "atan2", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "logistic", "erf", "erfc",
    "erf_inv", "lgamma", "digamma", "pow", "sqrt", "rsqrt", "cbrt", "igamma", "igammac",
    "bessel_i0e", "bessel_i1e", "polygamma", "zeta", "random_gamma_grad", "regularized_incomplete_beta",
})

ELEMENTWISE = frozenset({
    "add", "sub", "mul", "div", "rem", "neg", "max", "min", "abs", "sign", "floor", "ceil",
    "round", "nextafter", "eq", "ne", "lt", "le", "gt", "ge", "select_n", "and", "or", "xor",
    "not", "clamp", "square", "reciprocal", "is_finite", "shift_left",
    "shift_right_logical", "shift_right_arithmetic", "add_any", "conj", "real", "imag",
    "complex", "integer_pow", "population_count", "clz",
})

REDUCTIONS = frozenset({
    "reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "reduce_and", "reduce_or",
    "reduce_xor", "argmax", "argmin", "cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp",
})


def _size(aval) -> int:
    return int(math.prod(aval.shape))


def _nbytes(aval) -> int:
    return _size(aval) * np.dtype(aval.dtype).itemsize


def _sub_jaxprs(eqn):
    for v in eqn.params.values():
        for j in v if isinstance(v, (tuple, list)) else (v,):
            if hasattr(j, "eqns"):
                yield j


def _count(jaxpr, totals, times=1.0):
    for eqn in jaxpr.eqns:
        name = eqn.primitive.name
        if name == "dot_general":
            (lc, _), _ = eqn.params["dimension_numbers"]
            lhs = eqn.inputs[0].aval
            contracted = math.prod(lhs.shape[d] for d in lc)
            totals["flops"] += times * 2 * _size(eqn.outputs[0].aval) * contracted
        elif name in TRANSCENDENTAL:
            totals["transcendentals"] += times * _size(eqn.outputs[0].aval)
        elif name in ELEMENTWISE:
            totals["flops"] += times * _size(eqn.outputs[0].aval)
        elif name in REDUCTIONS:
            folded = _size(eqn.inputs[0].aval) - _size(eqn.outputs[0].aval)
            totals["flops"] += times * max(folded, 0)
        else:
            subs = list(_sub_jaxprs(eqn))
            if name == "cond":  # one branch runs: the costliest bounds it
                per = []
                for sub in subs:
                    t = {"flops": 0.0, "transcendentals": 0.0}
                    _count(sub, t)
                    per.append(t)
                for key in ("flops", "transcendentals"):
                    totals[key] += times * max((t[key] for t in per), default=0.0)
                continue
            trips = eqn.params.get("length", 1) if name == "scan" else 1
            for sub in subs:  # (a while loop's body counts once: its trips are unknown)
                _count(sub, totals, times * trips)


def cost_analysis(jaxpr) -> dict[str, float]:
    """``{"flops", "transcendentals", "bytes accessed"}`` of ``jaxpr`` (bytes accessed: its
    arguments' and results', as one fused kernel reads and writes them)."""
    totals = {"flops": 0.0, "transcendentals": 0.0}
    _count(jaxpr, totals)
    totals["bytes accessed"] = float(sum(_nbytes(v.aval) for v in jaxpr.invars)
                                     + sum(_nbytes(v.aval) for v in jaxpr.outvars))
    return totals
