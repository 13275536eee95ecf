"""checkify rules of the higher-order primitives: the sub-programs of ``jit``, ``checkpoint``,
``cond``, ``scan``, ``while`` and custom-derivative calls are checkified into programs that take
the error's leaves as extra operands and return the updated ones first, so the error flows
through compiled code, branches and loop carries::

    >>> from functrans.experimental import checkify
    >>> f = checkify.checkify(lambda x: lax.fori_loop(0, 4, lambda i, s: s + x[i], 0.0),
    ...                       errors=checkify.index_checks)
    >>> print(f(fnp.arange(3.0))[0].get())
    out-of-bounds indexing for array of shape (3,): index 3 is out of bounds for axis 0 with size 3.

A loop carries one error for all its iterations, so its structure (which kinds of error it
holds) must be the same before and after the body: a body that adds new kinds is traced
again with those kinds already present (never set) in its input.
"""
from __future__ import annotations

from functrans import primitives as P
from functrans.core.memo import cache_on_jaxpr
from functrans.core.staging import trace_to_jaxpr
from functrans.transforms.autodiff.custom import _Rule, custom_jvp_call_p, custom_vjp_call_p
from functrans.transforms.autodiff.remat import remat_p
from functrans.transforms.jit.call import jit_p
from functrans.core.tree import tree_structure, tree_unflatten

from .checkify_errors import (error_avals, error_from_leaves, error_leaves, init_error,
                              sorted_effects)
from .checkify_rules import checkify_jaxpr, checkify_rules


@cache_on_jaxpr
def checked_jaxpr(jaxpr, enabled: frozenset, effects: tuple, at: int):
    """``jaxpr`` checkified: the leaves of an error with ``effects`` are extra inputs at
    position ``at`` and the updated error's leaves come first in the outputs.

    Returns ``(jaxpr, out_effects, new_metadata)``: the codes it adds and what they mean.
    Cached per jaxpr, so repeated calls reuse one program (and one compiled kernel).
    """
    avals = jaxpr.in_avals
    err_avals = error_avals(effects)
    n = len(err_avals)
    box = {}

    def fun(*args):
        err = error_from_leaves(effects, args[at:at + n], {})
        err, outs = checkify_jaxpr(jaxpr, enabled, err, *args[:at], *args[at + n:])
        box["effects"], box["metadata"] = sorted_effects(err.effects), err._metadata
        return error_leaves(err) + list(outs)

    checked = trace_to_jaxpr(fun, avals[:at] + err_avals + avals[at:], name="checkify")
    return checked, box["effects"], box["metadata"]


def _same_effects_in_and_out(error, trace):
    """``trace(effects)`` for a loop body or branches: if the traced program adds kinds of
    error, ``error`` gets (unset) slots for them and the program is traced again. Returns the
    widened error and the trace's results."""
    effects = sorted_effects(error.effects)
    results = trace(effects)
    out = set().union(*(r[1] for r in results))
    if out != set(effects):
        error = error._add_placeholder_effects(out)
        results = trace(sorted_effects(error.effects))
    return error, results


def _out_error(error, out_effects, leaves, *metadata):
    merged = dict(error._metadata)
    for m in metadata:
        merged.update(m)
    return error_from_leaves(out_effects, leaves, merged)


# ---- calls: jit and checkpoint ------------------------------------------------------------------
def _jit_rule(ctx, error, *args, jaxpr, name):
    checked, out_effects, meta = checked_jaxpr(jaxpr, ctx.enabled,
                                               sorted_effects(error.effects), 0)
    outs = jit_p.bind_all(*error_leaves(error), *args, jaxpr=checked, name=name)
    n = len(error_avals(out_effects))
    return _out_error(error, out_effects, outs[:n], meta), outs[n:]


def _remat_rule(ctx, error, *args, jaxpr, prevent_cse, differentiated):
    checked, out_effects, meta = checked_jaxpr(jaxpr, ctx.enabled,
                                               sorted_effects(error.effects), 0)
    outs = remat_p.bind_all(*error_leaves(error), *args, jaxpr=checked, prevent_cse=prevent_cse,
                            differentiated=differentiated)
    n = len(error_avals(out_effects))
    return _out_error(error, out_effects, outs[:n], meta), outs[n:]


checkify_rules[jit_p] = _jit_rule
checkify_rules[remat_p] = _remat_rule


# ---- control flow -------------------------------------------------------------------------------
def _cond_rule(ctx, error, index, *ops, branches):
    def trace(effects):
        return [checked_jaxpr(b, ctx.enabled, effects, 0) for b in branches]
    error, traced = _same_effects_in_and_out(error, trace)
    leaves = error_leaves(error)
    outs = P.cond_p.bind_all(index, *leaves, *ops, branches=tuple(t[0] for t in traced))
    n = len(leaves)
    return _out_error(error, traced[0][1], outs[:n], *(t[2] for t in traced)), outs[n:]


def _scan_rule(ctx, error, *args, jaxpr, length, reverse, num_consts, num_carry):
    def trace(effects):
        return [checked_jaxpr(jaxpr, ctx.enabled, effects, num_consts)]
    error, [(body, out_effects, meta)] = _same_effects_in_and_out(error, trace)
    leaves = error_leaves(error)
    n = len(leaves)
    outs = P.scan_p.bind_all(*args[:num_consts], *leaves, *args[num_consts:], jaxpr=body,
                             length=length, reverse=reverse, num_consts=num_consts,
                             num_carry=num_carry + n)
    return _out_error(error, out_effects, outs[:n], meta), outs[n:]


@cache_on_jaxpr
def _checked_while_body(body_jaxpr, cond_jaxpr, enabled, effects, cond_nconsts, body_nconsts):
    """(cond consts, body consts, error leaves, carry) -> (error leaves, carry): the body,
    then the condition on the new carry (whose checks would fail at its next test)."""
    err_avals = error_avals(effects)
    n_err = len(err_avals)
    box = {}

    def fun(*args):
        cc, bc = args[:cond_nconsts], args[cond_nconsts:cond_nconsts + body_nconsts]
        rest = args[cond_nconsts + body_nconsts:]
        err = error_from_leaves(effects, rest[:n_err], {})
        err, carry = checkify_jaxpr(body_jaxpr, enabled, err, *bc, *rest[n_err:])
        err, _ = checkify_jaxpr(cond_jaxpr, enabled, err, *cc, *carry)
        box["effects"], box["metadata"] = sorted_effects(err.effects), err._metadata
        return error_leaves(err) + list(carry)

    in_avals = (cond_jaxpr.in_avals[:cond_nconsts] + body_jaxpr.in_avals[:body_nconsts]
                + err_avals + body_jaxpr.in_avals[body_nconsts:])
    jaxpr = trace_to_jaxpr(fun, in_avals, name="checkify_while_body")
    return jaxpr, box["effects"], box["metadata"]


@cache_on_jaxpr
def _unchecked_cond(cond_jaxpr, effects, cond_nconsts):
    """(cond consts, error leaves, carry) -> predicate. The condition's checks are counted by
    the body (and before the loop), so here they are dropped."""
    n_err = len(error_avals(effects))

    def fun(*args):
        cc, carry = args[:cond_nconsts], args[cond_nconsts + n_err:]
        return checkify_jaxpr(cond_jaxpr, frozenset(), init_error, *cc, *carry)[1]

    avals = cond_jaxpr.in_avals
    return trace_to_jaxpr(fun, avals[:cond_nconsts] + error_avals(effects)
                          + avals[cond_nconsts:], name="checkify_while_cond")


def _while_rule(ctx, error, *args, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    cc = args[:cond_nconsts]
    bc = args[cond_nconsts:cond_nconsts + body_nconsts]
    init = args[cond_nconsts + body_nconsts:]
    error, _ = checkify_jaxpr(cond_jaxpr, ctx.enabled, error, *cc, *init)  # the first test

    def trace(effects):
        return [_checked_while_body(body_jaxpr, cond_jaxpr, ctx.enabled, effects,
                                    cond_nconsts, body_nconsts)]
    error, [(body, out_effects, meta)] = _same_effects_in_and_out(error, trace)
    effects = sorted_effects(error.effects)
    leaves = error_leaves(error)
    outs = P.while_p.bind_all(*cc, *cc, *bc, *leaves, *init,
                              cond_jaxpr=_unchecked_cond(cond_jaxpr, effects, cond_nconsts),
                              body_jaxpr=body, cond_nconsts=cond_nconsts,
                              body_nconsts=cond_nconsts + body_nconsts)
    n = len(leaves)
    return _out_error(error, out_effects, outs[:n], meta), outs[n:]


checkify_rules[P.cond_p] = _cond_rule
checkify_rules[P.scan_p] = _scan_rule
checkify_rules[P.while_p] = _while_rule


# ---- custom derivatives -------------------------------------------------------------------------
# The checkified call takes the error's leaves as its first (non-differentiated) argument and
# returns them first. Its derivative rules are the user's, wrapped to pass the error through
# unchanged: as in JAX, checks are not added to custom derivative rules.
def _errors_first(tree, n):
    """The structure of ``(errors, *args)`` for an argument tuple of structure ``tree``."""
    return tree_structure((tuple(range(n)),) + tuple(tree_unflatten(tree, [0] * tree.num_leaves)))


def _errors_and(tree, n):
    """The structure of ``(errors, out)`` for an output of structure ``tree``."""
    return tree_structure((tuple(range(n)), tree_unflatten(tree, [0] * tree.num_leaves)))


def _checked_call(ctx, error, args, call_jaxpr, num_consts):
    def trace(effects):
        return [checked_jaxpr(call_jaxpr, ctx.enabled, effects, num_consts)]
    error, [(checked, out_effects, meta)] = _same_effects_in_and_out(error, trace)
    leaves = error_leaves(error)
    return error, leaves, checked, out_effects, meta


def _custom_jvp_rule(ctx, error, *args, call_jaxpr, jvp, num_consts, symbolic_zeros):
    error, leaves, checked, out_effects, meta = _checked_call(ctx, error, args, call_jaxpr,
                                                              num_consts)
    n, user_jvp = len(leaves), jvp.fn

    def jvp_passing_errors(*a):
        *nondiff, primals, tangents = a
        p_out, t_out = user_jvp(*nondiff, tuple(primals[1:]), tuple(tangents[1:]))
        return (primals[0], p_out), (tangents[0], t_out)

    rule = _Rule(jvp_passing_errors, nondiff=jvp.nondiff, nondiff_argnums=jvp.nondiff_argnums,
                 in_tree=_errors_first(jvp.in_tree, n), out_tree=_errors_and(jvp.out_tree, n),
                 what=jvp.what)
    rule.__name__ = jvp.__name__
    outs = custom_jvp_call_p.bind_all(*args[:num_consts], *leaves, *args[num_consts:],
                                      call_jaxpr=checked, jvp=rule, num_consts=num_consts,
                                      symbolic_zeros=symbolic_zeros)
    return _out_error(error, out_effects, outs[:n], meta), outs[n:]


def _custom_vjp_rule(ctx, error, *args, call_jaxpr, fwd, num_consts):
    error, leaves, checked, out_effects, meta = _checked_call(ctx, error, args, call_jaxpr,
                                                              num_consts)
    n, user_fwd, user_bwd = len(leaves), fwd.fn, fwd.bwd

    def fwd_passing_errors(errors, *user_args):
        out, res = user_fwd(*user_args)
        return (errors, out), res

    def bwd_passing_errors(*a):
        *nondiff, res, ct = a
        return ((None,) * n,) + tuple(user_bwd(*nondiff, res, ct[1]))

    rule = _Rule(fwd_passing_errors, bwd=bwd_passing_errors, nondiff=fwd.nondiff,
                 nondiff_argnums=tuple(i + 1 for i in fwd.nondiff_argnums),
                 in_tree=_errors_first(fwd.in_tree, n), out_tree=_errors_and(fwd.out_tree, n),
                 what=fwd.what)
    rule.__name__ = fwd.__name__
    outs = custom_vjp_call_p.bind_all(*args[:num_consts], *leaves, *args[num_consts:],
                                      call_jaxpr=checked, fwd=rule, num_consts=num_consts)
    return _out_error(error, out_effects, outs[:n], meta), outs[n:]


checkify_rules[custom_jvp_call_p] = _custom_jvp_rule
checkify_rules[custom_vjp_call_p] = _custom_vjp_rule
