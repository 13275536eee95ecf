"""``checkpoint`` with a policy: what the policy saves is computed by checkpointed segments of
its own, whose outputs the rest of the function takes as inputs.

The function's jaxpr is split at the equations the policy marks saveable. Saveable equation
``k`` gets a segment computing its outputs from the function's inputs and the outputs of the
saveable equations before it; a last segment computes the function's outputs from the inputs
and all saved values. Each segment is a ``checkpoint`` equation, so under differentiation it
recomputes its own intermediates, from its inputs, in the backward pass: the residuals are the
function's inputs and the saved values (what ``print_saved_residuals`` lists), and nothing
between two saved values is stored::

    >>> f = ft.checkpoint(lambda W, x: fnp.sin(W @ fnp.sin(W @ x)),
    ...                   policy=ft.checkpoint_policies.dots_saveable)
    >>> j = ft.make_jaxpr(f)(fnp.ones((2, 2)), fnp.ones(2))
    >>> [e.prim.name for e in j.eqns]         # one segment per product, then the rest
    ['checkpoint', 'checkpoint', 'checkpoint']

Limits (JAX applies its policies to every equation of the linearized program): the policy
sees the equations of the function itself, with nested ``jit`` calls inlined but not those
inside loops, branches or other checkpoints; intermediates of derivative rules (the
``cos x`` of ``sin``'s derivative) are always recomputed; a value needed both before and after
a saved one is computed once per segment that needs it in the forward pass (jit's CSE
merges these copies in compiled code).
"""
from __future__ import annotations

import functools

from ..core.api_util import fun_name
from ..core.ir import Eqn, Jaxpr, Var, has_effects
from ..core.staging import hoist_tracer_consts, trace_to_jaxpr
from ..core.trace import get_aval
from ..transforms.autodiff.remat import remat_p
from ..transforms.jit.call import jit_p
from ..core.tree import tree_flatten, tree_unflatten
from .policies import saveable


def _inline_jit_calls(jaxpr: Jaxpr) -> Jaxpr:
    """``jaxpr`` with its top-level ``jit`` calls replaced by their bodies, recursively: so
    that policies see the equations inside, and because the backward pass of a checkpoint
    cannot transpose a jit call that mixes primal and tangent values."""
    def inlined(eqn):
        return eqn.prim is jit_p

    if not any(inlined(e) for e in jaxpr.eqns):
        return jaxpr
    constvars, consts, eqns = list(jaxpr.constvars), list(jaxpr.consts), []

    def emit(body: Jaxpr, env: dict) -> list:
        def sub(x):
            return env[x] if isinstance(x, Var) else x
        for v, c in zip(body.constvars, body.consts):
            if v not in env:
                env[v] = Var(v.aval)
                constvars.append(env[v])
                consts.append(c)
        for eqn in body.eqns:
            inputs = [sub(x) for x in eqn.inputs]
            if inlined(eqn):
                inner = eqn.params["jaxpr"]
                env.update(zip(eqn.outputs, emit(inner, dict(zip(inner.invars, inputs)))))
                continue
            outputs = [Var(o.aval) for o in eqn.outputs]
            env.update(zip(eqn.outputs, outputs))
            eqns.append(Eqn(eqn.prim, inputs, outputs, eqn.params, eqn.source))
        return [sub(x) for x in body.outvars]

    outvars = emit(jaxpr, {v: v for v in [*jaxpr.invars, *jaxpr.constvars]})
    return Jaxpr(constvars, consts, jaxpr.invars, outvars, eqns)


def _slice(jaxpr: Jaxpr, outs, boundary: list, keep_effects=False):
    """A jaxpr computing ``outs`` from the ``boundary`` vars it needs (and ``jaxpr``'s
    constants), with fresh vars; returns ``(jaxpr, boundary vars it takes)``."""
    bound = set(boundary)
    needed = {v for v in outs if isinstance(v, Var) and v not in bound}
    kept = []
    for eqn in reversed(jaxpr.eqns):
        if any(o in needed for o in eqn.outputs) or keep_effects and has_effects(eqn):
            kept.append(eqn)
            needed.update(x for x in eqn.inputs if isinstance(x, Var) and x not in bound)
    kept.reverse()
    read = {x for e in kept for x in e.inputs if isinstance(x, Var)}
    read.update(v for v in outs if isinstance(v, Var))
    ins = [v for v in boundary if v in read]
    env = {v: Var(v.aval) for v in ins}
    used_consts = [(v, c) for v, c in zip(jaxpr.constvars, jaxpr.consts) if v in read]
    env.update((v, Var(v.aval)) for v, _ in used_consts)

    def sub(x):
        return env[x] if isinstance(x, Var) else x
    eqns = []
    for e in kept:
        inputs = [sub(x) for x in e.inputs]
        outputs = [env.setdefault(o, Var(o.aval)) for o in e.outputs]
        eqns.append(Eqn(e.prim, inputs, outputs, e.params, e.source))
    sliced = Jaxpr([env[v] for v, _ in used_consts], [c for _, c in used_consts],
                   [env[v] for v in ins], [sub(v) for v in outs], eqns)
    return sliced, ins


def split_by_policy(jaxpr: Jaxpr, policy):
    """``(segments, rest)``: one ``(jaxpr, input vars, output vars)`` per saveable equation
    of ``jaxpr``, in order, then ``(jaxpr, input vars)`` computing ``jaxpr``'s outputs."""
    available = list(jaxpr.invars)
    segments = []
    for eqn in jaxpr.eqns:
        # Effectful equations run once, in the last segment: they are never saved.
        if has_effects(eqn) or not saveable(policy, eqn):
            continue
        seg, ins = _slice(jaxpr, eqn.outputs, available)
        segments.append((seg, ins, list(eqn.outputs)))
        available += eqn.outputs
    rest, ins = _slice(jaxpr, jaxpr.outvars, available, keep_effects=True)
    return segments, (rest, ins)


def checkpoint_with_policy(fun, *, prevent_cse, policy):
    """``checkpoint(fun)`` that keeps what ``policy`` saves (see the module docstring).

    >>> g = ft.grad(checkpoint_with_policy(lambda x: fnp.sin(fnp.sin(x)), prevent_cse=True,
    ...                                    policy=lambda prim, *_, **__: prim.name == "sin"))
    >>> bool(fnp.allclose(g(0.5), fnp.cos(fnp.sin(0.5)) * fnp.cos(0.5)))
    True
    """
    @functools.wraps(fun)
    def remat_fun(*args, **kwargs):
        # Staged even when called eagerly, as JAX does: ``fun`` sees tracers of a trace of
        # its own (haiku's check that its state is not used inside JAX transforms compares
        # the trace outside and inside).
        leaves, in_tree = tree_flatten((args, kwargs))
        store = {}

        def flat(*xs):
            a, k = tree_unflatten(in_tree, xs)
            out_leaves, store["tree"] = tree_flatten(fun(*a, **k))
            return out_leaves

        jaxpr = trace_to_jaxpr(flat, [get_aval(x) for x in leaves],
                               name=f"checkpoint({fun_name(fun)})")
        jaxpr, consts = hoist_tracer_consts(jaxpr)
        jaxpr = _inline_jit_calls(jaxpr)
        segments, (rest, rest_ins) = split_by_policy(jaxpr, policy)
        env = dict(zip(jaxpr.invars, [*consts, *leaves]))
        for seg, ins, outs in segments:
            vals = remat_p.bind_all(*[env[v] for v in ins], jaxpr=seg, prevent_cse=prevent_cse,
                                    differentiated=False)
            env.update(zip(outs, vals))
        outs = remat_p.bind_all(*[env[v] for v in rest_ins], jaxpr=rest, prevent_cse=prevent_cse,
                                differentiated=False)
        return tree_unflatten(store["tree"], outs)

    return remat_fun
