"""``jax.custom_derivatives``: user-defined differentiation rules (``custom_jvp``,
``custom_vjp``), the primitives they bind, the symbolic zero tangents their rules may see
and return, and :func:`closure_convert` for rules of functions that close over traced values.

A ``custom_jvp`` rule registered with ``symbolic_zeros=True`` gets a :class:`SymbolicZero`
for each argument that is not differentiated, and may return one; a ``custom_vjp`` forward
rule registered so gets :class:`CustomVJPPrimal` arguments. :func:`linear_call` calls a
linear function with a custom transpose::

    >>> @custom_jvp
    ... def f(x, y):
    ...     return x * y
    >>> @f.defjvp
    ... def f_jvp(primals, tangents):
    ...     (x, y), (tx, ty) = primals, tangents
    ...     return x * y, tx * y + x * ty
    >>> ft.grad(f)(2.0, 3.0)
    Array(3., dtype=float64, weak_type=True)
"""
from __future__ import annotations

from functrans.core.eval import eval_jaxpr
from functrans.core.staging import trace_to_jaxpr
from functrans.core.trace import Tracer, get_aval
from functrans.transforms.autodiff.custom import (CustomVJPPrimal, custom_jvp,
                                                  custom_jvp_call_p, custom_vjp,
                                                  custom_vjp_call_p)
from functrans.transforms.autodiff.jvp import SymbolicZero, instantiate, tangent_aval, Zero
from functrans.core.tree import (register_pytree_node_class, tree_flatten, tree_map,
                                 tree_unflatten)
from functrans.interpreters._linear_call import linear_call
from functrans.core.dtypes import kind as dtype_kind

__all__ = ["CustomVJPPrimal", "SymbolicZero", "closure_convert", "custom_gradient", "custom_jvp",
           "custom_jvp_call_p", "custom_vjp", "custom_vjp_call_p",
           "custom_vjp_primal_tree_values", "linear_call", "zero_from_primal"]


def zero_from_primal(val, symbolic_zeros=False):
    """Zero tangents for the pytree of primal values ``val``: :class:`SymbolicZero` leaves
    if ``symbolic_zeros``, else arrays of zeros.

        >>> zero_from_primal({"a": fnp.ones(2, "float32")})
        {'a': Array([0., 0.], dtype=float32)}
    """
    def zero(x):
        aval = tangent_aval(get_aval(x))
        return SymbolicZero(aval) if symbolic_zeros else instantiate(Zero(aval))
    return tree_map(zero, val)


def custom_vjp_primal_tree_values(tree):
    """The values of a ``custom_vjp`` forward rule's arguments given as
    :class:`CustomVJPPrimal` leaves (``symbolic_zeros=True``).

        >>> custom_vjp_primal_tree_values({"a": CustomVJPPrimal(1.0, False)})
        {'a': 1.0}
    """
    def value(leaf):
        if type(leaf) is not CustomVJPPrimal:
            raise TypeError(f"custom_vjp_primal_tree_values: expected CustomVJPPrimal leaves, "
                            f"got {type(leaf).__name__}")
        return leaf.value
    return tree_map(value, tree)


def closure_convert(fun, *example_args):
    """``(converted, consts)``: ``converted(*args, *consts)`` computes ``fun(*args)`` with the
    traced values ``fun`` closes over (differentiable ones: of float or complex type) passed
    explicitly as ``consts``, so that a custom derivative rule receives them as arguments.
    ``fun`` is specialized to the pytree structure and types of ``example_args``.

        >>> def outer(w):
        ...     g = lambda x: x * w
        ...     h, consts = closure_convert(g, 1.0)
        ...     return h(2.0, *consts), len(consts)
        >>> ft.jvp(lambda w: outer(w)[0], (3.0,), (1.0,))
        (Array(6., dtype=float64, weak_type=True), Array(2., dtype=float64, weak_type=True))
    """
    flat, in_tree = tree_flatten(example_args)
    out_tree = []

    def flat_fun(*leaves):
        out, tree = tree_flatten(fun(*tree_unflatten(in_tree, leaves)))
        out_tree.append(tree)
        return out

    jaxpr = trace_to_jaxpr(flat_fun, [get_aval(x) for x in flat], name="closure_convert")
    kept_vars, kept, hoisted_vars, hoisted = [], [], [], []
    for v, c in zip(jaxpr.constvars, jaxpr.consts):
        if isinstance(c, Tracer) and dtype_kind(v.aval.dtype) in "fc":
            hoisted_vars.append(v)
            hoisted.append(c)
        else:
            kept_vars.append(v)
            kept.append(c)
    jaxpr = jaxpr.replace(constvars=kept_vars, consts=kept, invars=jaxpr.invars + hoisted_vars)
    n_hoisted = len(hoisted)

    def converted(*args_and_consts):
        n_args = len(args_and_consts) - n_hoisted
        args, consts = args_and_consts[:n_args], args_and_consts[n_args:]
        leaves, tree = tree_flatten(tuple(args))
        if tree != in_tree:
            raise TypeError("The inputs to the closure produced by closure_convert must have "
                            "the same Pytree structure as the example arguments passed when "
                            f"closure_convert was called. Expected {in_tree}, but got {tree}")
        return tree_unflatten(out_tree[0], eval_jaxpr(jaxpr, *leaves, *consts))

    return converted, hoisted


def __getattr__(name):
    raise AttributeError(f"module 'jax.custom_derivatives' has no attribute {name!r}: "
                         f"functrans does not provide jax.custom_derivatives.{name}")


@register_pytree_node_class
class _GradientRule:
    """A ``custom_gradient`` rule traced to a program: its constants (the values it closes
    over) are the residuals' children, the program and structures their static part."""

    def __init__(self, jaxpr, in_tree, out_tree, consts):
        self.jaxpr, self.in_tree, self.out_tree, self.consts = jaxpr, in_tree, out_tree, consts

    def tree_flatten(self):
        return list(self.consts), (self.jaxpr, self.in_tree, self.out_tree)

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*aux, list(children))


def custom_gradient(fun):
    """``fun`` returns ``(value, vjp)``; the result computes ``value``, and differentiating
    it calls ``vjp`` on the cotangent of ``value`` for the cotangents of the positional
    arguments (a tuple, or a single one for a single argument). A :func:`custom_vjp` under
    the hood: ``vjp`` may close over the arguments and intermediate values.

        >>> @custom_gradient
        ... def f(x):
        ...     return x ** 2, lambda g: (g * 10.0 * x,)
        >>> float(f(3.0)), ft.grad(f)(3.0)
        (9.0, Array(30., dtype=float64, weak_type=True))
    """
    @custom_vjp
    def wrapped(*args, **kwargs):
        ans, _ = fun(*args, **kwargs)
        return ans

    def fwd(*args, **kwargs):
        ans, rule = fun(*args, **kwargs)
        ans_flat, out_tree = tree_flatten((ans,))
        in_tree = []

        def flat_rule(*cts_flat):
            cts_out, tree = tree_flatten(rule(*tree_unflatten(out_tree, cts_flat)))
            in_tree.append(tree)
            return cts_out

        jaxpr = trace_to_jaxpr(flat_rule, [tangent_aval(get_aval(x)) for x in ans_flat],
                               name="custom_gradient")
        consts = list(jaxpr.consts)  # the rule's program takes them as its first inputs
        jaxpr = jaxpr.replace(constvars=[], consts=[], invars=jaxpr.constvars + jaxpr.invars)
        return ans, _GradientRule(jaxpr, in_tree[0], out_tree, consts)

    def bwd(res, cts):
        cts_flat, out_tree = tree_flatten((cts,))
        if out_tree != res.out_tree:
            raise TypeError(f"custom_gradient: cotangent structure {out_tree} differs from the "
                            f"value's {res.out_tree}")
        cts_out = tree_unflatten(res.in_tree, eval_jaxpr(res.jaxpr, *res.consts, *cts_flat))
        return cts_out if isinstance(cts_out, tuple) else (cts_out,)

    wrapped.defvjp(fwd, bwd)
    return wrapped
