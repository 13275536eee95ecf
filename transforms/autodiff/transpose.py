"""Transposition of linear programs: the backward pass of reverse-mode differentiation.

A linear jaxpr (from ``linearize``) is run backwards: each equation's transpose rule maps the
cotangents of its outputs to cotangents of its linear inputs, which are marked
``UndefinedPrimal``. Equations that don't touch linear inputs (residual computations, e.g.
recomputation from ``checkpoint``) are evaluated forwards first::

    >>> from functrans.primitives import neg_p
    >>> neg_p in transpose_rules   # registered by the primitive family (elementwise.py)
    True
"""
from __future__ import annotations

import contextlib

from functrans.core import name_stack
from functrans.core.memo import cache_on_jaxpr
from functrans.core.ir import Jaxpr, Literal, TransposedSource, replay, source_info
from functrans.core.staging import trace_to_jaxpr

from .jvp import Zero, add_tangents, instantiate, is_zero

transpose_rules: dict = {}


class UndefinedPrimal:
    """A linear input of a transpose rule: only its type is known."""

    __slots__ = ("aval",)

    def __init__(self, aval):
        self.aval = aval

    def __repr__(self):
        return f"UndefinedPrimal({self.aval.str_short()})"


def is_undefined(x) -> bool:
    return type(x) is UndefinedPrimal


class NonLinearError(TypeError):
    """A primitive that is not linear in its tangent input appeared in a linear program."""


def backward_pass(jaxpr: Jaxpr, linear_in, args, cts_out, transform_stack=False) -> list:
    """Cotangents of the linear inputs of ``jaxpr``.

    ``linear_in[i]`` marks input i as linear; ``args`` gives values for the non-linear inputs
    (anything for linear ones); ``cts_out`` are the output cotangents (Zero allowed). Returns one
    cotangent per input (Zero for those that received none, None for non-linear inputs).
    With ``transform_stack`` (the backward pass of ``vjp``/``grad``), what the transpose rules
    stage is named ``transpose(...)`` of the scopes the linear equation was made in, as JAX
    names it (``transpose(jvp(model))/dense``).
    """
    primal_env = dict(zip(jaxpr.constvars, jaxpr.consts))
    linear_vars = set()
    for v, lin, a in zip(jaxpr.invars, linear_in, args):
        if lin:
            linear_vars.add(v)
        else:
            primal_env[v] = a

    def read_primal(x):
        if type(x) is Literal:
            return x.bound
        if x in linear_vars:
            return UndefinedPrimal(x.aval)
        return primal_env[x]

    # Forward: evaluate the non-linear equations; collect the linear ones.
    linear_eqns = []
    for eqn in jaxpr.eqns:
        for x in eqn.inputs:
            if type(x) is not Literal and x in linear_vars:
                linear_eqns.append(eqn)
                linear_vars.update(eqn.outputs)
                break
        else:
            outs = eqn.prim.bind_all(*[read_primal(x) for x in eqn.inputs], **eqn.params)
            primal_env.update(zip(eqn.outputs, outs))

    ct_env: dict = {}  # linear var -> its (nonzero) cotangent so far
    outer = replay.source
    caller = outer or source_info()  # (one stack walk for equations recorded without a line)

    def write_ct(v, ct):
        if type(v) is Literal or ct is None or type(ct) is Zero or v not in linear_vars:
            return
        prev = ct_env.get(v)
        ct_env[v] = ct if prev is None else add_tangents(prev, ct)

    for v, ct in zip(jaxpr.outvars, cts_out):
        write_ct(v, ct)
    with name_stack.transform("transpose") if transform_stack else contextlib.nullcontext():
        _transpose_eqns(linear_eqns, ct_env, write_ct, read_primal, outer,
                        caller, transform_stack)
    return [ct_env.get(v, Zero(v.aval)) if lin else None
            for v, lin in zip(jaxpr.invars, linear_in)]


def _transpose_eqns(linear_eqns, ct_env, write_ct, read_primal, outer, caller, transform_stack):
    """Run the transpose rules of ``linear_eqns`` backwards, accumulating into ``ct_env``."""
    base = name_stack.current()
    for eqn in reversed(linear_eqns):
        cts, nonzero = [], False
        for v in eqn.outputs:
            ct = ct_env.pop(v, None)
            if ct is None:
                ct = Zero(v.aval)
            else:
                nonzero = True
            cts.append(ct)
        if not nonzero:
            continue
        rule = transpose_rules.get(eqn.prim)
        if rule is None:
            where = f" (from {eqn.source})" if eqn.source else ""
            raise NonLinearError(
                f"reverse-mode differentiation does not support '{eqn.prim.name}'{where}: it "
                "has no transpose rule (it is not linear in its tangent inputs)")
        src = eqn.source  # (a linear equation's may hold its name stack alone, no line)
        where = src if src is not None and src.filename else caller
        if transform_stack and where is None and src is not None:
            where = src  # (no user frame to name: the name stack alone)
        if transform_stack and where is not None:
            # JAX's: the stack open now (ending in the transpose) + the equation's own
            where = where._replace(name_stack=base + src.name_stack if src is not None
                                   else base)
        replay.source = TransposedSource(*where) if where is not None else None
        try:
            cts_in = rule(cts, *[read_primal(x) for x in eqn.inputs], **eqn.params)
        finally:
            replay.source = outer
        for x, ct in zip(eqn.inputs, cts_in):
            write_ct(x, ct)


@cache_on_jaxpr
def transpose_jaxpr(jaxpr: Jaxpr, linear_in, instantiate_cts=True) -> Jaxpr:
    """A jaxpr mapping (non-linear inputs, output cotangents) to the linear inputs' cotangents."""
    nonlin_avals = [v.aval for v, lin in zip(jaxpr.invars, linear_in) if not lin]
    out_avals = jaxpr.out_avals

    def fun(*args):
        nonlin, cts = args[:len(nonlin_avals)], args[len(nonlin_avals):]
        it = iter(nonlin)
        full = [None if lin else next(it) for lin in linear_in]
        res = backward_pass(jaxpr, linear_in, full, list(cts))
        out = [r for r, lin in zip(res, linear_in) if lin]
        return [instantiate(c) if instantiate_cts else c for c in out]

    return trace_to_jaxpr(fun, nonlin_avals + list(out_avals), name="transpose")
