"""``custom_vmap_call``: a function with a user batching rule (``custom_batching.custom_vmap``).

It carries the function's jaxpr and the rule. Evaluated or compiled, the jaxpr runs (jit
inlines it); under vmap the rule computes the batched result. Other transformations transform
the jaxpr and drop the rule (the transformed function is batched like any other), so
``vmap(grad(f))`` batches f's derivative program by the ordinary rules::

    >>> f = ft.custom_batching.custom_vmap(lambda x: x * 2)
    >>> _ = f.def_vmap(lambda n, in_batched, x: (x * 2, in_batched[0]))
    >>> print(ft.make_jaxpr(f)(1.0))  # doctest: +ELLIPSIS
    { lambda ; a:f64[]. let
        b:f64[] = custom_vmap_call[
          jaxpr={ lambda ; c:f64[]. let d:f64[] = mul c 2.0:f64[] in (d,) }
          rule=...
        ] a
      in (b,) }
"""
from __future__ import annotations

from ..core.eval import eval_jaxpr
from ..core.trace import Primitive, get_aval
from ..transforms.autodiff.partial_eval import call_partial_eval
from ..transforms.batching import moveaxis
from ..transforms.autodiff.call_rules import CallRules
from ..core.tree import tree_flatten, tree_unflatten


class VmapRule:
    """The user's rule ``rule(axis_size, in_batched, *args) -> (out, out_batched)`` and the
    argument/result structures of the function it batches."""

    __slots__ = ("rule", "in_tree", "out_tree", "num_consts", "name")

    def __init__(self, rule, in_tree, out_tree, num_consts, name):
        self.rule, self.in_tree, self.out_tree = rule, in_tree, out_tree
        self.num_consts, self.name = num_consts, name

    def __repr__(self):
        return f"vmap_rule({self.name})"


def _impl(*args, jaxpr, rule):
    return eval_jaxpr(jaxpr, *args)


custom_vmap_call_p = Primitive("custom_vmap_call", impl=_impl,
                               abstract_eval=lambda *avals, jaxpr, rule: jaxpr.out_avals)
custom_vmap_call_p.multiple_results = True
custom_vmap_call_p.higher_order = True


class _Rules(CallRules):
    """Transformations other than vmap act on the jaxpr; the rule no longer applies to what
    they produce."""

    def jvp_params(self, params, jaxpr, nonzeros, out_nonzeros):
        return dict(params, jaxpr=jaxpr, rule=None)

    def transpose_params(self, params, jaxpr, linear):
        return dict(params, jaxpr=jaxpr, rule=None)

    def batch_params(self, params, jaxpr):
        return dict(params, jaxpr=jaxpr, rule=None)

    def partial_eval(self, trace, prim, args, params):
        return call_partial_eval(trace, prim, args, params,
                                 make_params=lambda p, j: dict(p, jaxpr=j, rule=None))

    def batch(self, axis, vals, dims, *, jaxpr, rule):
        if rule is None or rule.rule is None:
            return super().batch(axis, vals, dims, jaxpr=jaxpr, rule=rule)
        consts, args = vals[:rule.num_consts], vals[rule.num_consts:]
        if any(d is not None for d in dims[:rule.num_consts]):
            raise NotImplementedError(
                f"custom_vmap ({rule.name}): the function closes over a value batched by this "
                "vmap; pass it as an argument instead")
        del consts  # unbatched closed-over values are baked into the rule's own code
        moved = [v if d is None else moveaxis(v, d, 0)
                 for v, d in zip(args, dims[rule.num_consts:])]
        flags = [d is not None for d in dims[rule.num_consts:]]
        a, k = tree_unflatten(rule.in_tree, moved)
        if k:
            raise TypeError(f"custom_vmap ({rule.name}): keyword arguments are not supported")
        fa, _ = tree_unflatten(rule.in_tree, flags)
        out, out_batched = rule.rule(axis.size, list(fa), *a)
        outs, tree = tree_flatten(out)
        if tree != rule.out_tree:
            raise TypeError(f"custom_vmap ({rule.name}): the vmap rule returned a value of "
                            f"structure {tree}, but the function returns {rule.out_tree}")
        flags_out, ftree = tree_flatten(out_batched)
        if ftree != rule.out_tree or not all(isinstance(b, bool) for b in flags_out):
            raise TypeError(f"custom_vmap ({rule.name}): the vmap rule must return "
                            "(out, out_batched) with out_batched a structure of bools matching "
                            "out")
        for i, (o, b, want) in enumerate(zip(outs, flags_out, jaxpr.out_avals)):
            shape = get_aval(o).shape
            expect = ((axis.size,) + want.shape) if b else want.shape
            if shape != expect or get_aval(o).dtype != want.dtype:
                raise TypeError(f"custom_vmap ({rule.name}): the vmap rule's output {i} has "
                                f"type {get_aval(o).str_short()}, expected shape {expect} "
                                f"(batched={b}) and dtype {want.dtype}")
        return outs, [0 if b else None for b in flags_out]


_Rules(custom_vmap_call_p)
