"""``scan``: loop a body jaxpr over the leading axis of its ``xs``, threading a carry and
stacking the per-step outputs ``ys``.

``carry, ys = scan[jaxpr=... length=n reverse=False num_consts=c num_carry=k] *consts *init
*xs`` with ``body(consts, carry, x) -> (carry, y)``. Rules: JVP (fixed point of nonzero
tangent carries), partial evaluation (a known scan computes the known carries and stacks the
per-step residuals; an unknown scan consumes them), transpose (a reversed scan of the
transposed body, accumulating cotangents of linear constants in its carry), batching.
"""
from __future__ import annotations

import numpy as np

from ..core.avals import ShapedArray
from ..core.eval import eval_jaxpr
from ..core.staging import trace_to_jaxpr
from ..core.trace import Primitive, get_aval, set_current_trace
from ..transforms import ops
from ..transforms.autodiff.jvp import Zero, instantiate, is_zero, jvp_jaxpr, jvp_rules
from ..transforms.autodiff.partial_eval import partial_eval_jaxpr, partial_eval_rules
from ..transforms.autodiff.transpose import is_undefined, transpose_jaxpr, transpose_rules
from ..transforms.batching import batch_jaxpr, batching_rules, bdim_at_front, moveaxis


def _split(seq, num_consts, num_carry):
    return (seq[:num_consts], seq[num_consts:num_consts + num_carry],
            seq[num_consts + num_carry:])


def stacked(aval: ShapedArray, length: int) -> ShapedArray:
    return ShapedArray((length,) + tuple(aval.shape), aval.dtype, aval.weak_type)


def _abstract_eval(*avals, jaxpr, length, reverse, num_consts, num_carry):
    consts, init, xs = _split(avals, num_consts, num_carry)
    body_in = jaxpr.in_avals
    for i, (a, b) in enumerate(zip(list(consts) + list(init), body_in)):
        if a.shape != b.shape or a.dtype != b.dtype:
            raise TypeError(f"scan argument {i} has type {a.str_short()}, the body expects "
                            f"{b.str_short()}")
    for i, (a, b) in enumerate(zip(xs, body_in[num_consts + num_carry:])):
        if a.shape != (length,) + b.shape or a.dtype != b.dtype:
            raise TypeError(f"scan xs {i} has type {a.str_short()}, expected a stack of "
                            f"{length} {b.str_short()}")
    outs = jaxpr.out_avals
    carry_out, ys = outs[:num_carry], outs[num_carry:]
    for i, (a, b) in enumerate(zip(init, carry_out)):
        if a.shape != b.shape or a.dtype != b.dtype:
            raise TypeError(f"scan carry {i}: the initial value has type {a.str_short()} but "
                            f"the body returns {b.str_short()}")
    return [a.update(weak_type=a.weak_type and b.weak_type) for a, b in zip(init, carry_out)] \
        + [stacked(y, length) for y in ys]


def _impl(*args, jaxpr, length, reverse, num_consts, num_carry):
    consts, carry, xs = _split(args, num_consts, num_carry)
    carry = list(carry)
    ys = []
    for step in range(length):
        i = length - 1 - step if reverse else step
        outs = eval_jaxpr(jaxpr, *consts, *carry, *[x[i] for x in xs])
        carry, y = outs[:num_carry], outs[num_carry:]
        ys.append(y)
    if reverse:
        ys.reverse()
    y_avals = jaxpr.out_avals[num_carry:]
    stacks = [np.stack([np.asarray(y[k]) for y in ys]) if ys else
              np.zeros((0,) + a.shape, a.dtype) for k, a in enumerate(y_avals)]
    return list(carry) + stacks


scan_p = Primitive("scan", impl=_impl, abstract_eval=_abstract_eval)
scan_p.multiple_results = True


def _reorder_jaxpr(jaxpr, in_avals, perm_in, perm_out=None, name="scan"):
    """A jaxpr whose inputs are ``jaxpr``'s inputs permuted: new input j feeds old input
    perm_in[j]; outputs are optionally permuted likewise."""
    inverse = {old: new for new, old in enumerate(perm_in)}

    def fun(*args):
        outs = eval_jaxpr(jaxpr, *[args[inverse[k]] for k in range(len(perm_in))])
        return outs if perm_out is None else [outs[k] for k in perm_out]
    return trace_to_jaxpr(fun, in_avals, name=name)


# ---- JVP --------------------------------------------------------------------------------------------
def _scan_jvp(primals, tangents, *, jaxpr, length, reverse, num_consts, num_carry):
    consts, init, xs = _split(primals, num_consts, num_carry)
    ct, it, xt = _split(tangents, num_consts, num_carry)
    c_nz = [not is_zero(t) for t in ct]
    x_nz = [not is_zero(t) for t in xt]
    carry_nz = [not is_zero(t) for t in it]
    while True:
        _, out_nz = jvp_jaxpr(jaxpr, c_nz + carry_nz + x_nz)
        new = [a or b for a, b in zip(carry_nz, out_nz[:num_carry])]
        if new == carry_nz:
            break
        carry_nz = new
    n_ys = len(jaxpr.outvars) - num_carry
    jvp_j, out_nz = jvp_jaxpr(jaxpr, c_nz + carry_nz + x_nz, carry_nz + [False] * n_ys)
    y_nz = out_nz[num_carry:]
    # jvp_j: (consts, carry, xs, c_t, carry_t, x_t) -> (carry, ys, carry_t, y_t).
    # The scan body needs (consts, c_t, carry, carry_t, xs, x_t) -> (carry, carry_t, ys, y_t).
    nc, nk, nx = num_consts, num_carry, len(xs)
    nct, nkt, nxt = sum(c_nz), sum(carry_nz), sum(x_nz)
    old = list(range(nc)) + list(range(nc + nk + nx, nc + nk + nx + nct)) \
        + list(range(nc, nc + nk)) + list(range(nc + nk + nx + nct, nc + nk + nx + nct + nkt)) \
        + list(range(nc + nk, nc + nk + nx)) + list(range(nc + nk + nx + nct + nkt,
                                                          nc + nk + nx + nct + nkt + nxt))
    n_ys_t = sum(y_nz)
    out_perm = list(range(nk)) + list(range(nk + n_ys, nk + n_ys + nkt)) \
        + list(range(nk, nk + n_ys)) + list(range(nk + n_ys + nkt, nk + n_ys + nkt + n_ys_t))
    avals = jvp_j.in_avals
    body = _reorder_jaxpr(jvp_j, [avals[k] for k in old], old, out_perm, name="scan_jvp")
    init_t = [instantiate(t) for t, nz in zip(it, carry_nz) if nz]
    outs = scan_p.bind_all(*consts, *[t for t, nz in zip(ct, c_nz) if nz], *init, *init_t, *xs,
                           *[t for t, nz in zip(xt, x_nz) if nz], jaxpr=body, length=length,
                           reverse=reverse, num_consts=nc + nct, num_carry=nk + nkt)
    carry_out, carry_t = outs[:nk], iter(outs[nk:nk + nkt])
    ys, ys_t = outs[nk + nkt:nk + nkt + n_ys], iter(outs[nk + nkt + n_ys:])
    t_carry = [next(carry_t) if nz else Zero(a.strip_weak_type())
               for a, nz in zip(jaxpr.out_avals[:nk], carry_nz)]
    t_ys = [next(ys_t) if nz else Zero(stacked(a, length).strip_weak_type())
            for a, nz in zip(jaxpr.out_avals[nk:], y_nz)]
    return carry_out + ys, t_carry + t_ys


jvp_rules[scan_p] = _scan_jvp


# ---- partial evaluation -------------------------------------------------------------------------
def _scan_partial_eval(trace, prim, args, params):
    jaxpr, length = params["jaxpr"], params["length"]
    nc, nk = params["num_consts"], params["num_carry"]
    consts, init, xs = _split(args, nc, nk)
    uk_c = [trace.is_unknown(x) for x in consts]
    uk_x = [trace.is_unknown(x) for x in xs]
    carry_uk = [trace.is_unknown(x) for x in init]
    while True:
        _, _, out_uk, _ = partial_eval_jaxpr(jaxpr, uk_c + carry_uk + uk_x)
        new = [a or b for a, b in zip(carry_uk, out_uk[:nk])]
        if new == carry_uk:
            break
        carry_uk = new
    n_ys = len(jaxpr.outvars) - nk
    jk, ju, out_uk, num_res = partial_eval_jaxpr(jaxpr, uk_c + carry_uk + uk_x,
                                                 carry_uk + [False] * n_ys)
    ys_uk = out_uk[nk:]
    # Known scan: (known consts, known carry, known xs) -> (known carry, known ys, residuals);
    # per-step residuals are stacked as extra ys, but residuals that are just known constants
    # are loop-invariant: they go to the unknown scan as constants, not copied every step.
    k_consts = [x for x, u in zip(consts, uk_c) if not u]
    k_init = [x for x, u in zip(init, carry_uk) if not u]
    k_xs = [x for x, u in zip(xs, uk_x) if not u]
    n_kc = len(k_init)
    n_ky = n_ys - sum(ys_uk)
    res_vars = jk.outvars[n_kc + n_ky:]
    const_pos = {v: i for i, v in enumerate(jk.invars[:len(k_consts)])}
    invariant = [k for k, v in enumerate(res_vars) if v in const_pos]
    stepwise = [k for k in range(num_res) if k not in invariant]
    jk_stacked = jk.replace(outvars=jk.outvars[:n_kc + n_ky] + [res_vars[k] for k in stepwise])
    with set_current_trace(trace.parent):
        known = scan_p.bind_all(*k_consts, *k_init, *k_xs, jaxpr=jk_stacked, length=length,
                                reverse=params["reverse"], num_consts=len(k_consts),
                                num_carry=n_kc)
    k_carry_out, k_ys, res = known[:n_kc], known[n_kc:n_kc + n_ky], known[n_kc + n_ky:]
    inv_values = [k_consts[const_pos[res_vars[k]]] for k in invariant]
    # Unknown scan body ju: (residuals, unknown consts, unknown carry, unknown xs); as a scan
    # body it takes (invariant residuals + unknown consts, carry, stacked residuals + xs).
    n_uc, n_uk = sum(uk_c), sum(carry_uk)
    n_ux = sum(uk_x)
    old = invariant + list(range(num_res, num_res + n_uc)) \
        + list(range(num_res + n_uc, num_res + n_uc + n_uk)) + stepwise \
        + list(range(num_res + n_uc + n_uk, num_res + n_uc + n_uk + n_ux))
    body_u = _reorder_jaxpr(ju, [ju.in_avals[k] for k in old], old, name="scan_unknown")
    u_consts = [x for x, u in zip(consts, uk_c) if u]
    u_init = [x for x, u in zip(init, carry_uk) if u]
    u_xs = [x for x, u in zip(xs, uk_x) if u]
    staged = trace.stage(scan_p, [*inv_values, *u_consts, *u_init, *res, *u_xs],
                         dict(params, jaxpr=body_u, num_consts=len(invariant) + n_uc,
                              num_carry=n_uk))
    u_carry, u_ys = staged[:n_uk], staged[n_uk:]
    kc, uc = iter(k_carry_out), iter(u_carry)
    ky, uy = iter(k_ys), iter(u_ys)
    return [next(uc) if u else next(kc) for u in carry_uk] + \
        [next(uy) if u else next(ky) for u in ys_uk]


partial_eval_rules[scan_p] = _scan_partial_eval


# ---- transpose ------------------------------------------------------------------------------------
def _scan_transpose(cts, *args, jaxpr, length, reverse, num_consts, num_carry):
    consts, init, xs = _split(args, num_consts, num_carry)
    lin_c = [is_undefined(c) for c in consts]
    lin_x = [is_undefined(x) for x in xs]
    # Carries of a linear scan are linear; an initial value that is not an input (a
    # materialized zero tangent, say) simply receives no cotangent.
    ct_carry, ct_ys = cts[:num_carry], cts[num_carry:]
    b_t = transpose_jaxpr(jaxpr, lin_c + [True] * num_carry + lin_x)
    # b_t: (nonlin consts, nonlin xs, ct carry_out, ct ys) -> (ct lin consts, ct carry, ct lin xs)
    nl_c = [c for c, lin in zip(consts, lin_c) if not lin]
    nl_x = [x for x, lin in zip(xs, lin_x) if not lin]
    lin_c_avals = [c.aval for c, lin in zip(consts, lin_c) if lin]
    carry_avals = [c.aval if is_undefined(c) else get_aval(c) for c in init]
    y_avals = [a for a in jaxpr.out_avals[num_carry:]]
    n_nlc, n_lc, n_k, n_nlx = len(nl_c), len(lin_c_avals), num_carry, len(nl_x)

    def body(*a):
        nlc = a[:n_nlc]
        acc = a[n_nlc:n_nlc + n_lc]
        ctk = a[n_nlc + n_lc:n_nlc + n_lc + n_k]
        nlx = a[n_nlc + n_lc + n_k:n_nlc + n_lc + n_k + n_nlx]
        cty = a[n_nlc + n_lc + n_k + n_nlx:]
        outs = eval_jaxpr(b_t, *nlc, *nlx, *ctk, *cty)
        ct_lc, ct_k, ct_lx = outs[:n_lc], outs[n_lc:n_lc + n_k], outs[n_lc + n_k:]
        return [ops.add_any(x, y) for x, y in zip(acc, ct_lc)] + list(ct_k) + list(ct_lx)

    in_avals = [get_aval(c) for c in nl_c] + [a.strip_weak_type() for a in lin_c_avals] \
        + [a.strip_weak_type() for a in carry_avals] \
        + [get_aval(x).update(shape=get_aval(x).shape[1:]) for x in nl_x] \
        + [a.strip_weak_type() for a in y_avals]
    body_t = trace_to_jaxpr(body, in_avals, name="scan_transpose")
    acc0 = [ops.zeros(a.strip_weak_type()) for a in lin_c_avals]
    ct_k0 = [instantiate(c) if not is_zero(c) else ops.zeros(a.strip_weak_type())
             for c, a in zip(ct_carry, carry_avals)]
    ct_y = [instantiate(c) for c in ct_ys]
    outs = scan_p.bind_all(*nl_c, *acc0, *ct_k0, *nl_x, *ct_y, jaxpr=body_t, length=length,
                           reverse=not reverse, num_consts=n_nlc, num_carry=n_lc + n_k)
    ct_lc, ct_init, ct_lx = iter(outs[:n_lc]), outs[n_lc:n_lc + n_k], iter(outs[n_lc + n_k:])
    return ([next(ct_lc) if lin else None for lin in lin_c]
            + [ct if is_undefined(c) else None for ct, c in zip(ct_init, init)]
            + [next(ct_lx) if lin else None for lin in lin_x])


transpose_rules[scan_p] = _scan_transpose


# ---- batching ---------------------------------------------------------------------------------------
def _scan_batch(axis, vals, dims, *, jaxpr, length, reverse, num_consts, num_carry):
    consts, init, xs = _split(vals, num_consts, num_carry)
    d_c, d_i, d_x = _split(dims, num_consts, num_carry)
    consts = [x if d is None else moveaxis(x, d, 0) for x, d in zip(consts, d_c)]
    c_dims = [None if d is None else 0 for d in d_c]
    xs = [x if d is None else moveaxis(x, d, 1) for x, d in zip(xs, d_x)]
    x_dims = [None if d is None else 0 for d in d_x]  # inside the body, per step
    carry_b = [d is not None for d in d_i]
    while True:
        _, out_d = batch_jaxpr(jaxpr, axis, c_dims + [0 if b else None for b in carry_b] + x_dims)
        new = [a or (d is not None) for a, d in zip(carry_b, out_d[:num_carry])]
        if new == carry_b:
            break
        carry_b = new
    carry_dims = [0 if b else None for b in carry_b]
    _, out_d = batch_jaxpr(jaxpr, axis, c_dims + carry_dims + x_dims)
    y_dims = [None if d is None else 0 for d in out_d[num_carry:]]
    body_b, _ = batch_jaxpr(jaxpr, axis, c_dims + carry_dims + x_dims, carry_dims + y_dims)
    init = [bdim_at_front(x, d, axis.size) if b else x for x, d, b in zip(init, d_i, carry_b)]
    outs = scan_p.bind_all(*consts, *init, *xs, jaxpr=body_b, length=length, reverse=reverse,
                           num_consts=num_consts, num_carry=num_carry)
    return outs, carry_dims + [None if d is None else 1 for d in y_dims]


batching_rules[scan_p] = _scan_batch
