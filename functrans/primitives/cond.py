"""``cond``: run one of several branch jaxprs, chosen by an integer index.

``outs = cond[branches=(b0, b1, ...)] index *operands``; every branch maps the operands to
outputs of the same types. Rules: JVP (branches differentiated alike), partial evaluation
(known branch parts run now; residuals of all branches share padded slots), transpose (of the
linear operands), batching (an unbatched index keeps the branch; a batched one evaluates every
branch and selects, like JAX)::

    >>> x = fnp.array([1.0, -2.0])
    >>> ft.vmap(lambda v: lax.cond(v > 0, lambda v: v * 2, lambda v: -v, v))(x)
    Array([2., 2.], dtype=float64)
"""
from __future__ import annotations

import numpy as np

from ..core.eval import eval_jaxpr
from ..core.staging import trace_to_jaxpr
from ..core.trace import Primitive, get_aval, set_current_trace
from ..transforms import ops
from ..transforms.autodiff.jvp import Zero, instantiate, is_zero, jvp_jaxpr, jvp_rules
from ..transforms.autodiff.partial_eval import partial_eval_jaxpr, partial_eval_rules
from ..transforms.autodiff.transpose import is_undefined, transpose_jaxpr, transpose_rules
from ..transforms.batching import batch_jaxpr, batching_rules, bdim_at_front
from functrans.core.dtypes import kind as dtype_kind


def _abstract_eval(index, *ops_avals, branches):
    if index.shape != () or dtype_kind(index.dtype) not in "iu":
        raise TypeError(f"cond index must be an integer scalar, got {index.str_short()}")
    for i, (a, b) in enumerate(zip(ops_avals, branches[0].in_avals)):
        if a.shape != b.shape or a.dtype != b.dtype:
            raise TypeError(f"cond operand {i} has type {a.str_short()}, the branches expect "
                            f"{b.str_short()}")
    # The first branch's output types, weak types included, as JAX's cond has them.
    return list(branches[0].out_avals)


def _impl(index, *operands, branches):
    i = int(np.clip(index, 0, len(branches) - 1))
    return eval_jaxpr(branches[i], *operands)


cond_p = Primitive("cond", impl=_impl, abstract_eval=_abstract_eval)
cond_p.multiple_results = True


# ---- JVP --------------------------------------------------------------------------------------------
def _cond_jvp(primals, tangents, *, branches):
    index, *operands = primals
    nonzeros = [not is_zero(t) for t in tangents[1:]]
    out_nz = [False] * len(branches[0].outvars)
    for b in branches:
        out_nz = [a or c for a, c in zip(out_nz, jvp_jaxpr(b, nonzeros)[1])]
    jvp_branches = tuple(jvp_jaxpr(b, nonzeros, out_nz)[0] for b in branches)
    outs = cond_p.bind_all(index, *operands, *[t for t in tangents[1:] if not is_zero(t)],
                           branches=jvp_branches)
    n = len(branches[0].outvars)
    it = iter(outs[n:])
    t_out = [next(it) if nz else Zero(a.strip_weak_type())
             for a, nz in zip(branches[0].out_avals, out_nz)]
    return outs[:n], t_out


jvp_rules[cond_p] = _cond_jvp


# ---- partial evaluation ---------------------------------------------------------------------
def _pad_known(jaxpr_k, n_out, res_slots, slot):
    """A known branch that returns its residuals in its own slot and zeros elsewhere."""
    def fun(*args):
        outs = eval_jaxpr(jaxpr_k, *args)
        known, res = outs[:n_out], iter(outs[n_out:])
        padded = [next(res) if s == slot else ops.zeros(a) for s, a in res_slots]
        return known + padded
    return trace_to_jaxpr(fun, jaxpr_k.in_avals, name="cond_known")


def _pick_residuals(jaxpr_u, res_slots, slot):
    """An unknown branch that takes every slot and uses its own."""
    n_res = len(res_slots)

    def fun(*args):
        mine = [a for a, (s, _) in zip(args[:n_res], res_slots) if s == slot]
        return eval_jaxpr(jaxpr_u, *mine, *args[n_res:])
    avals = [a for _, a in res_slots] + jaxpr_u.in_avals[sum(1 for s, _ in res_slots
                                                              if s == slot):]
    return trace_to_jaxpr(fun, avals, name="cond_unknown")


def _cond_partial_eval(trace, prim, args, params):
    branches = params["branches"]
    index, *operands = args
    if trace.is_unknown(index):
        return trace.stage(prim, args, params)
    unknowns = [trace.is_unknown(x) for x in operands]
    out_uk = [False] * len(branches[0].outvars)
    for b in branches:
        out_uk = [a or c for a, c in zip(out_uk, partial_eval_jaxpr(b, unknowns)[2])]
    splits = [partial_eval_jaxpr(b, unknowns, out_uk) for b in branches]
    n_known = sum(1 for u in out_uk if not u)
    res_slots = [(i, a) for i, (jk, _, _, nres) in enumerate(splits)
                 for a in jk.out_avals[n_known:]]
    known_branches = tuple(_pad_known(jk, n_known, res_slots, i)
                           for i, (jk, _, _, _) in enumerate(splits))
    unknown_branches = tuple(_pick_residuals(ju, res_slots, i)
                             for i, (_, ju, _, _) in enumerate(splits))
    known_ops = [x for x, u in zip(operands, unknowns) if not u]
    with set_current_trace(trace.parent):
        known_outs = cond_p.bind_all(index, *known_ops, branches=known_branches)
    residuals = known_outs[n_known:]
    unknown_ops = [x for x, u in zip(operands, unknowns) if u]
    staged = trace.stage(cond_p, [index, *residuals, *unknown_ops],
                         dict(branches=unknown_branches))
    k, u = iter(known_outs[:n_known]), iter(staged)
    return [next(u) if unk else next(k) for unk in out_uk]


partial_eval_rules[cond_p] = _cond_partial_eval


# ---- transpose -------------------------------------------------------------------------------------
def _cond_transpose(cts, index, *operands, branches):
    if is_undefined(index):
        raise TypeError("cond is not linear in its index")
    linear = [is_undefined(x) for x in operands]
    t_branches = tuple(transpose_jaxpr(b, linear) for b in branches)
    nonlin = [x for x in operands if not is_undefined(x)]
    ct_in = cond_p.bind_all(index, *nonlin, *[instantiate(ct) for ct in cts], branches=t_branches)
    it = iter(ct_in)
    return [None] + [next(it) if lin else None for lin in linear]


transpose_rules[cond_p] = _cond_transpose


# ---- batching ------------------------------------------------------------------------------------
def _cond_batch(axis, vals, dims, *, branches):
    index, *operands = vals
    d_index, *op_dims = dims
    if d_index is None:
        batched = [batch_jaxpr(b, axis, op_dims)[1] for b in branches]
        want = [0 if any(bd[k] is not None for bd in batched) else None
                for k in range(len(branches[0].outvars))]
        new = tuple(batch_jaxpr(b, axis, op_dims, want)[0] for b in branches)
        return cond_p.bind_all(index, *operands, branches=new), want
    # A batched index: every branch runs on the whole batch, then each lane picks its result.
    from .elementwise import convert_element_type_p, max_p, min_p, select_n_p
    n = len(branches)
    idx = bdim_at_front(index, d_index, axis.size)
    idx = convert_element_type_p.bind1(idx, new_dtype=np.dtype(np.int32), weak_type=False)
    idx = min_p.bind1(max_p.bind1(idx, np.int32(0)), np.int32(n - 1))
    results = []
    for b in branches:
        bj, _ = batch_jaxpr(b, axis, op_dims, 0)
        results.append(eval_jaxpr(bj, *operands))
    outs = []
    for k in range(len(branches[0].outvars)):
        shape = get_aval(results[0][k]).shape
        sel = ops.broadcast(idx, shape, (0,)) if len(shape) > 1 else idx
        if n == 1:
            outs.append(results[0][k])
        else:
            outs.append(select_n_p.bind1(sel, *[r[k] for r in results]))
    return outs, [0] * len(outs)


batching_rules[cond_p] = _cond_batch
