"""``vjp`` with respect to mutable references (``vjp(f, ref)``): ``f`` runs on a reference of
the differentiating trace holding the reference's value, the value ``f`` leaves in it is
written back to the caller's reference, and the gradient with respect to the value it held
is accumulated into a reference given to ``f_vjp.with_refs``, as JAX's refs guide shows.
``grad`` refuses to differentiate with respect to a reference (its gradient must live in a
reference: ``vjp`` puts it there); references among its other arguments go along for the
ride, and only values not differentiated may be written into them (``stop_gradient``).

References are ``functrans.ref``'s, a user-API module this one does not import: they are
recognized by their ``_is_ref`` mark, and the traced ones are made with the class of the
references passed (as ``transforms/jit/refs.py`` does).

    >>> import functrans as ft
    >>> x_ref = ft.new_ref(3.0)
    >>> _, f_vjp = ft.vjp(lambda r: r[...] ** 2, x_ref)
    >>> g = ft.new_ref(0.0)
    >>> _ = f_vjp.with_refs(g)(1.0)
    >>> float(g[...])
    6.0
"""
from __future__ import annotations

from functrans.core.trace import current_trace
from functrans.core.tree import tree_flatten, tree_leaves, tree_structure, tree_unflatten


def refuse_ref_arguments(what: str, args, nums) -> None:
    """``grad`` with respect to a Ref is an error, as in JAX: its gradient must itself live in
    a Ref (``vjp`` and ``with_refs`` put it there)."""
    for i, arg in zip(nums, args):
        if any(getattr(x, "_is_ref", False) for x in tree_leaves(arg)):
            raise ValueError(
                f"{what}: argument {i} is a Ref, and a Ref's gradient must itself live in a "
                "Ref: differentiate with respect to it with vjp and accumulate its gradient "
                "with f_vjp.with_refs(grad_ref), or leave it out of argnums")


def ref_arguments(primals, p_flat, what: str) -> dict:
    """``{flat position: Ref}`` of the references among the flat primals; a reference must
    be an argument itself (its gradient goes to the ``with_refs`` target of that argument)."""
    refs = {i: x for i, x in enumerate(p_flat) if getattr(x, "_is_ref", False)}
    if refs:
        whole = {id(a) for a in primals if getattr(a, "_is_ref", False)}
        for r in refs.values():
            if id(r) not in whole:
                raise TypeError(f"{what}: a Ref inside an argument's pytree; pass each Ref "
                                "as an argument of its own (its gradient goes to that "
                                "argument's with_refs target)")
        if len({id(r) for r in refs.values()}) != len(refs):
            raise ValueError(f"{what}: the same Ref is passed more than once")
    return refs


def on_ref_values(fun, p_flat, in_tree, refs: dict, has_aux: bool):
    """``(values, fun_of_values, out_tree)``: the flat primals with each reference's value
    in its place, ``fun`` taking them (it gets references of the trace it runs in holding
    them) and returning ``(its output, the references' final values)`` (aux kept apart),
    and a function giving the output's structure once ``fun`` ran."""
    values = [refs[i]._check("differentiating with respect to") if i in refs else x
              for i, x in enumerate(p_flat)]
    store = {}

    def fun_of_values(*args):
        leaves, tree = tree_flatten(args)
        inner = [type(refs[i])(leaves[i], current_trace()) for i in refs]
        for i, r in zip(refs, inner):
            leaves[i] = r
        out = fun(*tree_unflatten(tree, leaves))
        out, aux = out if has_aux else (out, None)
        store["tree"] = tree_structure(out)
        finals = [r._value for r in inner]
        return ((out, finals), aux) if has_aux else (out, finals)

    return values, fun_of_values, lambda: store["tree"]


def write_back(refs: dict, p_out, out_tree_of):
    """Split the flat outputs into the function's and the references' finals, write those
    into the caller's references, and return ``(outputs, their tree, finals)``."""
    n = len(refs)
    outs, finals = list(p_out[:-n]), list(p_out[-n:])
    for r, v in zip(refs.values(), finals):
        r._value = v
    return outs, out_tree_of(), finals


def with_plumbing_refs(fun, args, nums):
    """``fun`` (of the differentiated arguments) with the Refs among the other arguments
    ``args`` usable inside the differentiation: they go along for the ride, read as
    constants; what is written into them must not be differentiated (``stop_gradient``), as
    in JAX."""
    refs = [x for i, a in enumerate(args) if i not in nums
            for x in tree_leaves(a) if getattr(x, "_is_ref", False)]
    if not refs:
        return fun

    def plumbed(*dyn):
        outer, before = [r._trace for r in refs], [r._value for r in refs]
        inner = current_trace()
        for r in refs:
            r._trace = inner
        try:
            out = fun(*dyn)
        finally:
            leaked = False
            for r, t, v in zip(refs, outer, before):
                r._trace = t
                if getattr(r._value, "_trace", None) is inner:  # (not to outlive the trace)
                    r._value, leaked = v, True
        if leaked:
            raise ValueError(
                "a differentiated value was written into a Ref argument that is not "
                "differentiated: only non-differentiated values can be written into such "
                "plumbing Refs (apply lax.stop_gradient first)")
        return out
    return plumbed

