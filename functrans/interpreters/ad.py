"""``jax.interpreters.ad``: differentiation rules of primitives, in JAX's conventions.

``primitive_jvps[p] = rule`` and ``primitive_transposes[p] = rule`` store the rules in
functrans's own tables (``jvp``, ``grad``, ``linearize``, ``vjp`` and every composition use
them). For a primitive without ``multiple_results``, a JVP rule is
``rule(primals, tangents, **params) -> (primal_out, tangent_out)`` and a transpose rule
``rule(ct, *args, **params) -> [ct_arg or None, ...]``, where the linear ``args`` are
:class:`UndefinedPrimal` and symbolic zero (co)tangents are :class:`Zero`::

    >>> from functrans.extend.core import Primitive
    >>> cube_p = Primitive("cube")
    >>> _ = cube_p.def_impl(lambda x: x ** 3)
    >>> _ = cube_p.def_abstract_eval(lambda a: a)
    >>> defjvp(cube_p, lambda g, x: g * 3 * x ** 2)
    >>> ft.grad(cube_p.bind)(2.0)
    Array(12., dtype=float64, weak_type=True)
"""
from __future__ import annotations

import functools

from functrans.core.trace import get_aval
from functrans.extend.core._primitive import jax_bind, multiple_results
from functrans.primitives import add_any_p as add_jaxvals_p
from functrans.transforms import ops
from functrans.transforms.autodiff.jvp import (JVPTrace, JVPTracer, Zero, add_tangents,
                                               instantiate, jvp_rules, tangent_aval)
from functrans.transforms.autodiff.transpose import UndefinedPrimal, transpose_rules

from ._rule_table import RuleTable

__all__ = ["JVPTrace", "JVPTracer", "UndefinedPrimal", "Zero", "add_jaxvals", "add_jaxvals_p",
           "add_tangents", "defbilinear", "defjvp", "defjvp2", "deflinear", "deflinear2",
           "get_primitive_transpose", "instantiate_zeros", "is_undefined_primal",
           "primitive_jvps", "primitive_transposes", "zeros_like_aval"]


def _pair(p, res, what):
    if not (isinstance(res, (tuple, list)) and len(res) == 2):
        raise TypeError(f"the {what} rule of '{p}' must return a pair (primal_out, "
                        f"tangent_out), got {type(res).__name__}")
    return res


def _adapt_jvp(p, rule):
    multiple = multiple_results(p)

    def jvp(primals, tangents, **params):
        out, t_out = _pair(p, rule(tuple(primals), tuple(tangents), **params), "JVP")
        if not multiple:
            return [out], [t_out]
        out, t_out = list(out), list(t_out)
        if len(out) != len(t_out):
            raise TypeError(f"the JVP rule of '{p}' returned {len(out)} primal outputs and "
                            f"{len(t_out)} tangent outputs")
        return out, t_out
    return jvp


def _view_jvp(p, rule):
    def jvp(primals, tangents, **params):
        out, t_out = rule(list(primals), list(tangents), **params)
        return (out, t_out) if multiple_results(p) else (out[0], t_out[0])
    return jvp


def _adapt_transpose(p, rule):
    def transpose(cts, *args, **params):
        res = rule(cts if multiple_results(p) else cts[0], *args, **params)
        if not isinstance(res, (tuple, list)) or len(res) != len(args):
            raise TypeError(f"the transpose rule of '{p}' must return a list or tuple with one "
                            f"cotangent (or None) per input ({len(args)}), got {res!r:.80}")
        return list(res)
    return transpose


def _view_transpose(p, rule):
    def transpose(ct, *args, **params):
        return rule(list(ct) if multiple_results(p) else [ct], *args, **params)
    return transpose


primitive_jvps = RuleTable("JVP", jvp_rules, _adapt_jvp, _view_jvp)
"""Primitive -> JVP rule ``rule(primals, tangents, **params) -> (primal_out, tangent_out)``."""

primitive_transposes = RuleTable("transpose", transpose_rules, _adapt_transpose,
                                 _view_transpose)
"""Primitive -> transpose rule ``rule(ct, *args, **params) -> cotangents per input``."""


def is_undefined_primal(x) -> bool:
    """Whether a transpose rule's argument is a linear input (only its ``aval`` is known).

        >>> from functrans.core.avals import ShapedArray
        >>> is_undefined_primal(UndefinedPrimal(ShapedArray((), "float32")))
        True
        >>> is_undefined_primal(1.0)
        False
    """
    return type(x) is UndefinedPrimal


def get_primitive_transpose(p):
    """The transpose rule of ``p``; ``NotImplementedError`` if it has none.

        >>> from functrans.core.avals import ShapedArray
        >>> from functrans.primitives import neg_p
        >>> get_primitive_transpose(neg_p)(2.0, UndefinedPrimal(ShapedArray((), "float64")))
        [Array(-2., dtype=float64, weak_type=True)]
    """
    try:
        return primitive_transposes[p]
    except KeyError:
        raise NotImplementedError(f"Transpose rule (for reverse-mode differentiation) for "
                                  f"'{p}' not implemented") from None


def instantiate_zeros(tangent):
    """A symbolic :class:`Zero` as an array of zeros; other tangents unchanged.

        >>> from functrans.core.avals import ShapedArray
        >>> instantiate_zeros(Zero(ShapedArray((2,), "float32")))
        Array([0., 0.], dtype=float32)
    """
    return instantiate(tangent)


def zeros_like_aval(aval):
    """An array of zeros of type ``aval``.

        >>> from functrans.core.avals import ShapedArray
        >>> zeros_like_aval(ShapedArray((2,), "int32"))
        Array([0, 0], dtype=int32)
    """
    return ops.zeros(aval)


def add_jaxvals(x, y):
    """``x + y`` for (co)tangents: the ``add_any`` primitive, which transposes to a fan-out.

        >>> add_jaxvals(1.0, 2.0)
        Array(3., dtype=float64, weak_type=True)
    """
    return add_jaxvals_p.bind1(x, y)


def _zero_like(val):
    return Zero(tangent_aval(get_aval(val)))


def defjvp(primitive, *jvprules):
    """A JVP from one rule per input, ``rule(g, *primals, **params)`` giving the tangent
    that input's tangent ``g`` contributes (``None`` for an input without one); the
    contributions are summed. For primitives without ``multiple_results``.

        >>> from functrans.extend.core import Primitive
        >>> sq_p = Primitive("my_square")
        >>> _ = sq_p.def_impl(lambda x: x * x)
        >>> _ = sq_p.def_abstract_eval(lambda a: a)
        >>> defjvp(sq_p, lambda g, x: 2 * g * x)
        >>> ft.grad(sq_p.bind)(3.0)
        Array(6., dtype=float64, weak_type=True)
    """
    _single(primitive, "defjvp")

    def jvp(primals, tangents, **params):
        out = jax_bind(primitive, *primals, **params)
        parts = [r(t, *primals, **params) for r, t in zip(jvprules, tangents)
                 if r is not None and type(t) is not Zero]
        return out, functools.reduce(add_tangents, parts, _zero_like(out))
    primitive_jvps[primitive] = jvp


def defjvp2(primitive, *jvprules):
    """As :func:`defjvp`, with the rules also given the output: ``rule(g, ans, *primals)``.

        >>> from functrans.extend.core import Primitive
        >>> exp_p = Primitive("my_exp")
        >>> _ = exp_p.def_impl(fnp.exp)
        >>> _ = exp_p.def_abstract_eval(lambda a: a)
        >>> defjvp2(exp_p, lambda g, ans, x: g * ans)
        >>> ft.jvp(exp_p.bind, (0.0,), (2.0,))
        (Array(1., dtype=float64, weak_type=True), Array(2., dtype=float64, weak_type=True))
    """
    _single(primitive, "defjvp2")

    def jvp(primals, tangents, **params):
        out = jax_bind(primitive, *primals, **params)
        parts = [r(t, out, *primals, **params) for r, t in zip(jvprules, tangents)
                 if r is not None and type(t) is not Zero]
        return out, functools.reduce(add_tangents, parts, _zero_like(out))
    primitive_jvps[primitive] = jvp


def _linear_jvp(primitive):
    def jvp(primals, tangents, **params):
        out = jax_bind(primitive, *primals, **params)
        if all(type(t) is Zero for t in tangents):
            zeros = ([_zero_like(o) for o in out] if multiple_results(primitive)
                     else _zero_like(out))
            return out, zeros
        return out, jax_bind(primitive, *[instantiate(t) for t in tangents], **params)
    return jvp


def _zero_cts(args):
    return [Zero(x.aval) if type(x) is UndefinedPrimal else None for x in args]


def deflinear(primitive, transpose_rule):
    """A primitive linear in all its inputs: its JVP applies it to the tangents, and
    ``transpose_rule(ct, **params)`` gives the cotangents of all its inputs.

        >>> from functrans.extend.core import Primitive
        >>> triple_p = Primitive("triple")
        >>> _ = triple_p.def_impl(lambda x: 3 * x)
        >>> _ = triple_p.def_abstract_eval(lambda a: a)
        >>> deflinear(triple_p, lambda ct: [3 * ct])
        >>> ft.grad(lambda x: triple_p.bind(x) ** 2)(1.0)
        Array(18., dtype=float64, weak_type=True)
    """
    def transpose(ct, *args, **params):
        return _zero_cts(args) if type(ct) is Zero else transpose_rule(ct, **params)
    primitive_jvps[primitive] = _linear_jvp(primitive)
    primitive_transposes[primitive] = transpose


def deflinear2(primitive, transpose_rule):
    """As :func:`deflinear`, with the rule also given the inputs: ``transpose_rule(ct, *args,
    **params)`` (linear inputs as :class:`UndefinedPrimal`).

        >>> from functrans.extend.core import Primitive
        >>> rev_p = Primitive("my_rev")
        >>> _ = rev_p.def_impl(lambda x: x[::-1])
        >>> _ = rev_p.def_abstract_eval(lambda a: a)
        >>> deflinear2(rev_p, lambda ct, x: [rev_p.bind(ct)])
        >>> ft.grad(lambda x: rev_p.bind(x)[0])(fnp.zeros(3))
        Array([0., 0., 1.], dtype=float64)
    """
    def transpose(ct, *args, **params):
        return _zero_cts(args) if type(ct) is Zero else transpose_rule(ct, *args, **params)
    primitive_jvps[primitive] = _linear_jvp(primitive)
    primitive_transposes[primitive] = transpose


def defbilinear(prim, lhs_rule, rhs_rule):
    """A primitive linear in each of its two inputs separately (a product):
    ``lhs_rule(ct, x, y, **params)`` is the cotangent of ``x`` (``x`` undefined) and
    ``rhs_rule`` that of ``y``.

        >>> from functrans.extend.core import Primitive
        >>> times_p = Primitive("times")
        >>> _ = times_p.def_impl(lambda x, y: x * y)
        >>> _ = times_p.def_abstract_eval(lambda a, b: a)
        >>> defbilinear(times_p, lambda ct, x, y: ct * y, lambda ct, x, y: x * ct)
        >>> ft.grad(times_p.bind, argnums=(0, 1))(2.0, 5.0)
        (Array(5., dtype=float64, weak_type=True), Array(2., dtype=float64, weak_type=True))
    """
    _single(prim, "defbilinear")
    defjvp(prim, lambda g, x, y, **kw: jax_bind(prim, g, y, **kw),
           lambda g, x, y, **kw: jax_bind(prim, x, g, **kw))

    def transpose(ct, x, y, **params):
        if type(x) is UndefinedPrimal:
            return [Zero(x.aval) if type(ct) is Zero else lhs_rule(ct, x, y, **params), None]
        return [None, Zero(y.aval) if type(ct) is Zero else rhs_rule(ct, x, y, **params)]
    primitive_transposes[prim] = transpose


def _single(primitive, what):
    if multiple_results(primitive):
        raise TypeError(f"{what} is for primitives with one output; '{primitive}' has "
                        "multiple_results: register a rule in primitive_jvps instead")


def __getattr__(name):
    raise AttributeError(f"module 'jax.interpreters.ad' has no attribute {name!r}: functrans "
                         f"does not provide jax.interpreters.ad.{name}")
