"""``linear_call``: a function linear in some of its arguments, with a custom transpose.

It is a primitive defined with the extension API (``jax.extend``), as JAX defines it: its
JVP applies it to the tangents of the linear arguments, its transpose is a ``linear_call`` of
the transpose function (with the original as *its* transpose), and ``jit`` inlines it. Like
JAX's, it has no batching rule.

    >>> def f(r, x):
    ...     return x / r
    >>> def t(r, ct):
    ...     return ct / r
    >>> ft.linear_transpose(lambda x: x + linear_call(f, t, 3.0, x), 1.0)(18.0)
    (Array(24., dtype=float64, weak_type=True),)
"""
from __future__ import annotations

from functrans.core.eval import eval_jaxpr
from functrans.core.staging import hoist_tracer_consts, trace_to_jaxpr
from functrans.core.trace import get_aval
from functrans.extend.core import Primitive
from functrans.core.tree import tree_flatten, tree_unflatten

from . import ad, mlir

__all__ = ["linear_call", "linear_call_p"]


def linear_call(fun, fun_transpose, residual_args, linear_args):
    """``fun(residual_args, linear_args)``, where ``fun`` is linear in ``linear_args``, whose
    transpose (with respect to them) is ``fun_transpose(residual_args, cotangents)``.

        >>> def custom_id(x):
        ...     return linear_call(lambda _, x: x, lambda _, ct: 7.0 * ct, (), x)
        >>> custom_id(1.0), ft.grad(custom_id)(1.0)
        (Array(1., dtype=float64, weak_type=True), Array(7., dtype=float64, weak_type=True))
    """
    res, res_tree = tree_flatten(residual_args)
    lin, lin_tree = tree_flatten(linear_args)
    n_res, out_tree = len(res), []

    def flat_fun(*xs):
        out, tree = tree_flatten(fun(tree_unflatten(res_tree, xs[:n_res]),
                                     tree_unflatten(lin_tree, xs[n_res:])))
        out_tree.append(tree)
        return out

    callee = trace_to_jaxpr(flat_fun, [get_aval(x) for x in res + lin], name="linear_call")
    callee, consts = hoist_tracer_consts(callee)
    res_avals, out_avals = callee.in_avals[len(consts):len(consts) + n_res], callee.out_avals
    traced = []

    def transpose_thunk():
        if not traced:
            t_tree = []

            def flat_transpose(*xs):
                out, tree = tree_flatten(fun_transpose(
                    tree_unflatten(res_tree, xs[:n_res]), tree_unflatten(out_tree[0],
                                                                         xs[n_res:])))
                t_tree.append(tree)
                return out
            t = trace_to_jaxpr(flat_transpose, list(res_avals) + list(out_avals),
                               name="linear_call transpose")
            if t_tree[0] != lin_tree:
                raise TypeError("linear_call: the transpose's output pytree structure must "
                                f"match that of the linear inputs, got {t_tree[0]} and "
                                f"{lin_tree}")
            traced.append(hoist_tracer_consts(t))
        return traced[0]

    out = linear_call_p.bind(*consts, *res, *lin, callee=callee,
                             transpose_thunk=transpose_thunk, num_callee_consts=len(consts),
                             num_res=n_res)
    return tree_unflatten(out_tree[0], out)


def _impl(*args, callee, transpose_thunk, num_callee_consts, num_res):
    return eval_jaxpr(callee, *args)


def _abstract_eval(*avals, callee, **params):
    return callee.out_avals


def _jvp(primals, tangents, *, callee, transpose_thunk, num_callee_consts, num_res):
    k = num_callee_consts + num_res
    if any(type(t) is not ad.Zero for t in tangents[:k]):
        raise TypeError("linear_call: the residual arguments (and the values fun closes over) "
                        "must not be differentiated")
    params = dict(callee=callee, transpose_thunk=transpose_thunk,
                  num_callee_consts=num_callee_consts, num_res=num_res)
    out = linear_call_p.bind(*primals, **params)
    t_out = linear_call_p.bind(*primals[:k], *map(ad.instantiate_zeros, tangents[k:]), **params)
    return out, t_out


def _transpose(cts, *args, callee, transpose_thunk, num_callee_consts, num_res):
    transpose, t_consts = transpose_thunk()
    f_consts = args[:num_callee_consts]
    res = args[num_callee_consts:num_callee_consts + num_res]
    ct_avals = transpose.in_avals[len(t_consts) + num_res:]
    cts = [ad.zeros_like_aval(a) if type(ct) is ad.Zero else ct for ct, a in zip(cts, ct_avals)]
    out = linear_call_p.bind(*t_consts, *res, *cts, callee=transpose,
                             transpose_thunk=lambda: (callee, list(f_consts)),
                             num_callee_consts=len(t_consts), num_res=num_res)
    return [None] * (num_callee_consts + num_res) + list(out)


linear_call_p = Primitive("linear_call")
linear_call_p.multiple_results = True
linear_call_p.def_impl(_impl)
linear_call_p.def_abstract_eval(_abstract_eval)
ad.primitive_jvps[linear_call_p] = _jvp
ad.primitive_transposes[linear_call_p] = _transpose
mlir.register_lowering(linear_call_p, mlir.lower_fun(_impl, multiple_results=True))
