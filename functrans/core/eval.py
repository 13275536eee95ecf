"""Evaluate a Jaxpr by binding each equation's primitive in the current trace.

Because evaluation re-binds primitives, running ``eval_jaxpr`` under any transformation applies
that transformation to the program: this is how interpreters compose::

    >>> eval_jaxpr(ft.make_jaxpr(lambda x: x * 2)(3.0), 4.0)
    [Array(8., dtype=float64, weak_type=True)]
"""
from __future__ import annotations

from .ir import Jaxpr, Literal, replay


def eval_jaxpr(jaxpr: Jaxpr, *args) -> list:
    """Run ``jaxpr`` on ``args`` (its consts are bound from ``jaxpr.consts``)."""
    if len(args) != len(jaxpr.invars):
        raise TypeError(f"jaxpr takes {len(jaxpr.invars)} arguments, got {len(args)}")
    env = dict(zip(jaxpr.constvars, jaxpr.consts))
    env.update(zip(jaxpr.invars, args))

    def read(x):
        return x.bound if type(x) is Literal else env[x]

    if replay.source is not None:
        # Inside another equation's replay (a rule's cached program, a nested call): that
        # equation's line stands; a cached rule's own lines belong to whoever traced it first.
        for eqn in jaxpr.eqns:
            outs = eqn.prim.bind_all(*map(read, eqn.inputs), **eqn.params)
            env.update(zip(eqn.outputs, outs))
        return [read(x) for x in jaxpr.outvars]
    try:
        for eqn in jaxpr.eqns:
            # What this binding stages keeps the equation's recorded line (see source_info).
            replay.source = eqn.source
            outs = eqn.prim.bind_all(*map(read, eqn.inputs), **eqn.params)
            env.update(zip(eqn.outputs, outs))
    finally:
        replay.source = None
    return [read(x) for x in jaxpr.outvars]
