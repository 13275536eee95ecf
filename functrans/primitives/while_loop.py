"""``while``: iterate a body jaxpr while a condition jaxpr holds.

``outs = while[cond_jaxpr=... body_jaxpr=... cond_nconsts=m body_nconsts=n] *cond_consts
*body_consts *init``. Rules: JVP (tangent carries ride along, to a fixed point of which ones
are nonzero), partial evaluation (known carries run now; if any carry is unknown the loop is
staged whole, recomputing the known ones), batching (a batched predicate keeps iterating until
every lane is done, freezing finished lanes). It has no transpose: reverse mode through a
loop with a dynamic trip count is an error that explains the alternatives.
"""
from __future__ import annotations

from ..core.eval import eval_jaxpr
from ..core.staging import trace_to_jaxpr
from ..core.trace import Primitive, concrete_of, get_aval, set_current_trace
from ..transforms import ops
from ..transforms.autodiff.jvp import Zero, is_zero, jvp_jaxpr, jvp_rules
from ..transforms.autodiff.partial_eval import partial_eval_jaxpr, partial_eval_rules
from ..transforms.autodiff.transpose import transpose_rules
from ..transforms.batching import batch_jaxpr, batching_rules, bdim_at_front


def _split(args, cond_nconsts, body_nconsts):
    return (args[:cond_nconsts], args[cond_nconsts:cond_nconsts + body_nconsts],
            args[cond_nconsts + body_nconsts:])


def _abstract_eval(*avals, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    _, _, init = _split(avals, cond_nconsts, body_nconsts)
    for i, (a, b) in enumerate(zip(init, body_jaxpr.out_avals)):
        if a.shape != b.shape or a.dtype != b.dtype:
            raise TypeError(f"while_loop carry {i}: the initial value has type "
                            f"{a.str_short()} but the body returns {b.str_short()}")
    return [a.update(weak_type=a.weak_type and b.weak_type)
            for a, b in zip(init, body_jaxpr.out_avals)]


def _impl(*args, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    cconsts, bconsts, carry = _split(args, cond_nconsts, body_nconsts)
    carry = list(carry)
    while bool(concrete_of(eval_jaxpr(cond_jaxpr, *cconsts, *carry)[0])):
        carry = eval_jaxpr(body_jaxpr, *bconsts, *carry)
    return carry


while_p = Primitive("while", impl=_impl, abstract_eval=_abstract_eval)
while_p.multiple_results = True


# ---- JVP --------------------------------------------------------------------------------------------
def _while_jvp(primals, tangents, *, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    cconsts, bconsts, init = _split(primals, cond_nconsts, body_nconsts)
    _, bc_t, init_t = _split(tangents, cond_nconsts, body_nconsts)
    bc_nz = [not is_zero(t) for t in bc_t]
    carry_nz = [not is_zero(t) for t in init_t]
    while True:  # which carries have nonzero tangents: iterate to a fixed point
        _, out_nz = jvp_jaxpr(body_jaxpr, bc_nz + carry_nz)
        new = [a or b for a, b in zip(carry_nz, out_nz)]
        if new == carry_nz:
            break
        carry_nz = new
    body_jvp, _ = jvp_jaxpr(body_jaxpr, bc_nz + carry_nz, carry_nz)
    # The JVP body takes (body consts, carries, nonzero const tangents, nonzero carry
    # tangents); reorder to (consts..., carries...) with tangent carries last.
    n_bc, n_c = len(bconsts), len(init)
    nz_bc = sum(bc_nz)

    def body(*args):
        consts, ct = args[:n_bc], args[n_bc:n_bc + nz_bc]
        carry, carry_t = args[n_bc + nz_bc:n_bc + nz_bc + n_c], args[n_bc + nz_bc + n_c:]
        return eval_jaxpr(body_jvp, *consts, *carry, *ct, *carry_t)
    bc_t_avals = [get_aval(t) for t, nz in zip(bc_t, bc_nz) if nz]
    carry_t_avals = [a.strip_weak_type() for a, nz in zip(body_jaxpr.out_avals, carry_nz) if nz]
    body_j = trace_to_jaxpr(body, [get_aval(c) for c in bconsts] + bc_t_avals
                            + [get_aval(c) for c in init] + carry_t_avals, name="while_jvp")

    def cond(*args):
        return eval_jaxpr(cond_jaxpr, *args[:cond_nconsts + n_c])
    cond_j = trace_to_jaxpr(cond, [get_aval(c) for c in cconsts] + [get_aval(c) for c in init]
                            + carry_t_avals, name="while_jvp_cond")
    init_tangents = [t if not is_zero(t) else ops.zeros(t.aval)
                     for t, nz in zip(init_t, carry_nz) if nz]
    outs = while_p.bind_all(*cconsts, *bconsts, *[t for t, nz in zip(bc_t, bc_nz) if nz], *init,
                            *init_tangents, cond_jaxpr=cond_j, body_jaxpr=body_j,
                            cond_nconsts=cond_nconsts, body_nconsts=n_bc + nz_bc)
    p_out, t_iter = outs[:n_c], iter(outs[n_c:])
    t_out = [next(t_iter) if nz else Zero(get_aval(p).strip_weak_type())
             for p, nz in zip(p_out, carry_nz)]
    return p_out, t_out


jvp_rules[while_p] = _while_jvp


# ---- partial evaluation -------------------------------------------------------------------------
def _while_partial_eval(trace, prim, args, params):
    cn, bn = params["cond_nconsts"], params["body_nconsts"]
    cconsts, bconsts, init = _split(args, cn, bn)
    uk_c = [trace.is_unknown(x) for x in cconsts]
    uk_b = [trace.is_unknown(x) for x in bconsts]
    carry_uk = [trace.is_unknown(x) for x in init]
    body = params["body_jaxpr"]
    while True:
        _, _, out_uk, _ = partial_eval_jaxpr(body, uk_b + carry_uk)
        new = [a or b for a, b in zip(carry_uk, out_uk)]
        if new == carry_uk:
            break
        carry_uk = new
    _, _, cond_uk, _ = partial_eval_jaxpr(params["cond_jaxpr"], uk_c + carry_uk)
    if cond_uk[0] or all(carry_uk):
        return trace.stage(prim, args, params)
    # Known carries don't depend on unknown ones: a loop over them alone computes them now.
    keep = [not u for u in carry_uk]
    known_body = _restrict(body, bn, keep, keep)
    known_cond = _restrict(params["cond_jaxpr"], cn, keep, None)
    with set_current_trace(trace.parent):
        known = while_p.bind_all(*cconsts, *bconsts, *[x for x, k in zip(init, keep) if k],
                                 cond_jaxpr=known_cond, body_jaxpr=known_body, cond_nconsts=cn,
                                 body_nconsts=bn)
    # The unknown carries need the known ones at every step: stage the whole loop.
    staged = trace.stage(prim, args, params)
    k = iter(known)
    return [s if uk else next(k) for s, uk in zip(staged, carry_uk)]


def _restrict(jaxpr, nconsts, keep_in, keep_out):
    """The jaxpr on consts plus the kept carries, returning the kept outputs."""
    avals = jaxpr.in_avals

    def fun(*args):
        consts, kept = args[:nconsts], iter(args[nconsts:])
        full = [next(kept) if k else ops.zeros(avals[nconsts + i])
                for i, k in enumerate(keep_in)]
        outs = eval_jaxpr(jaxpr, *consts, *full)
        return outs if keep_out is None else [o for o, k in zip(outs, keep_out) if k]
    in_avals = avals[:nconsts] + [a for a, k in zip(avals[nconsts:], keep_in) if k]
    return trace_to_jaxpr(fun, in_avals, name="while_known")


partial_eval_rules[while_p] = _while_partial_eval


def _while_transpose(cts, *args, **params):
    raise TypeError(
        "Reverse-mode differentiation does not work for lax.while_loop or lax.fori_loop with "
        "dynamic (traced) bounds: the number of iterations is unknown, so the loop cannot be "
        "run backwards. Use lax.fori_loop with static (Python int) bounds, lax.scan, or "
        "forward mode (jvp / jacfwd) instead.")


transpose_rules[while_p] = _while_transpose


# ---- batching ----------------------------------------------------------------------------------------
def _while_batch(axis, vals, dims, *, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    from .elementwise import select_n_p
    from .reductions import reduce_or_p
    cn, bn = cond_nconsts, body_nconsts
    cconsts, bconsts, init = _split(vals, cn, bn)
    d_c, d_b, d_init = _split(dims, cn, bn)
    carry_b = [d is not None for d in d_init]
    while True:  # which carries become batched: to a fixed point
        _, out_d = batch_jaxpr(body_jaxpr, axis, list(d_b) + [0 if b else None for b in carry_b])
        new = [a or (d is not None) for a, d in zip(carry_b, out_d)]
        if new == carry_b:
            break
        carry_b = new
    carry_dims = [0 if b else None for b in carry_b]
    _, pred_d = batch_jaxpr(cond_jaxpr, axis, list(d_c) + carry_dims)
    init = [bdim_at_front(x, d, axis.size) if b else x
            for x, d, b in zip(init, d_init, carry_b)]
    if pred_d[0] is None:
        body_b, _ = batch_jaxpr(body_jaxpr, axis, list(d_b) + carry_dims, carry_dims)
        cond_b, _ = batch_jaxpr(cond_jaxpr, axis, list(d_c) + carry_dims, [None])
        outs = while_p.bind_all(*cconsts, *bconsts, *init, cond_jaxpr=cond_b, body_jaxpr=body_b,
                                cond_nconsts=cn, body_nconsts=bn)
        return outs, carry_dims
    # A batched predicate: every carry is batched; loop while any lane runs, and lanes whose
    # predicate is false keep their values (select).
    init = [bdim_at_front(x, d, axis.size) if not b else x
            for x, d, b in zip(init, d_init, carry_b)]
    all_dims = [0] * len(init)
    cond_b, _ = batch_jaxpr(cond_jaxpr, axis, list(d_c) + all_dims, [0])
    body_b, _ = batch_jaxpr(body_jaxpr, axis, list(d_b) + all_dims, all_dims)
    n_cc = len(cconsts)

    def any_cond(*args):
        pred = eval_jaxpr(cond_b, *args)[0]
        return [reduce_or_p.bind1(pred, axes=(0,))]

    def masked_body(*args):
        cc, bc, carry = args[:n_cc], args[n_cc:n_cc + len(bconsts)], args[n_cc + len(bconsts):]
        pred = eval_jaxpr(cond_b, *cc, *carry)[0]
        new = eval_jaxpr(body_b, *bc, *carry)
        out = []
        for old, nw in zip(carry, new):
            shape = get_aval(nw).shape
            p = ops.broadcast(pred, shape, (0,)) if len(shape) > 1 else pred
            out.append(select_n_p.bind1(p, old, nw))
        return out
    c_avals = [get_aval(x) for x in cconsts]
    b_avals = [get_aval(x) for x in bconsts]
    carry_avals = [get_aval(x) for x in init]
    cond_any = trace_to_jaxpr(any_cond, c_avals + carry_avals, name="while_any")
    body_m = trace_to_jaxpr(masked_body, c_avals + b_avals + carry_avals, name="while_masked")
    outs = while_p.bind_all(*cconsts, *cconsts, *bconsts, *init, cond_jaxpr=cond_any,
                            body_jaxpr=body_m, cond_nconsts=n_cc, body_nconsts=n_cc + len(bconsts))
    return outs, all_dims


batching_rules[while_p] = _while_batch
