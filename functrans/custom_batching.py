"""``jax.custom_batching``: functions with their own vmap rule.

    >>> @ft.custom_batching.custom_vmap
    ... def f(x):
    ...     return fnp.sin(x)
    >>> @f.def_vmap
    ... def f_vmap(axis_size, in_batched, x):
    ...     return fnp.cos(x), in_batched[0]  # a deliberately different batched result
    >>> f(0.0), ft.vmap(f)(fnp.zeros(2))
    (Array(0., dtype=float64, weak_type=True), Array([1., 1.], dtype=float64))
"""
from __future__ import annotations

import functools

from .core.api_util import abstractify, fun_name
from .core.staging import hoist_tracer_consts, trace_to_jaxpr
from .primitives.custom_vmap import VmapRule, custom_vmap_call_p
from .core.tree import tree_flatten, tree_unflatten

__all__ = ["custom_vmap"]


class custom_vmap:
    """Wrap ``fun`` so that ``vmap`` uses the rule given with :meth:`def_vmap` (JAX's API).

    The rule is called as ``rule(axis_size, in_batched, *args)``: batched arguments have the
    batch axis in front, ``in_batched`` holds a bool per argument (a pytree like the
    argument), and it returns ``(out, out_batched)`` with ``out_batched`` a pytree of bools
    like ``out`` (batched outputs with the batch axis in front). Without vmap, ``fun`` itself
    runs. Under other transformations (grad, jvp) the function is transformed as written and
    the rule is not used for the transformed program. Keyword arguments are not supported.

    >>> g = ft.custom_batching.custom_vmap(lambda x: x + 1)
    >>> g.def_vmap(lambda n, b, x: (x + 1, b[0]))  # doctest: +ELLIPSIS
    <function <lambda> at ...>
    >>> ft.vmap(g)(fnp.arange(2.0))
    Array([1., 2.], dtype=float64)
    """

    def __init__(self, fun):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.vmap_rule = None

    def def_vmap(self, rule):
        """Set the batching rule; returns it (usable as a decorator)."""
        if not callable(rule):
            raise TypeError(f"custom_vmap.def_vmap: expected a callable, got "
                            f"{type(rule).__name__}")
        self.vmap_rule = rule
        return rule

    def __call__(self, *args, **kwargs):
        if kwargs:
            raise TypeError(f"custom_vmap ({fun_name(self.fun)}): keyword arguments are not "
                            "supported; pass them positionally")
        if self.vmap_rule is None:
            raise AttributeError(f"custom_vmap ({fun_name(self.fun)}): no vmap rule; define "
                                 "one with @f.def_vmap before calling f")
        leaves, in_tree = tree_flatten((args, {}))
        avals = [abstractify(x, f"custom_vmap argument leaf {i}") for i, x in enumerate(leaves)]
        store = {}

        def flat_fun(*xs):
            a, _ = tree_unflatten(in_tree, xs)
            out_leaves, store["tree"] = tree_flatten(self.fun(*a))
            return out_leaves

        jaxpr = trace_to_jaxpr(flat_fun, avals, name=f"custom_vmap({fun_name(self.fun)})")
        jaxpr, consts = hoist_tracer_consts(jaxpr)
        rule = VmapRule(self.vmap_rule, in_tree, store["tree"], len(consts), fun_name(self.fun))
        outs = custom_vmap_call_p.bind_all(*consts, *leaves, jaxpr=jaxpr, rule=rule)
        return tree_unflatten(store["tree"], outs)
