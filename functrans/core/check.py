"""``check_jaxpr``: a type checker for Jaxprs, run in tests after every transformation.

    >>> check_jaxpr(ft.make_jaxpr(lambda x: x + 1)(1.0))   # raises JaxprTypeError if ill-typed
"""
from __future__ import annotations

import contextlib

from .avals import same_type
from .axis_env import extend_axis_env
from .ir import Jaxpr, Literal, walk_jaxprs
from .printer import pp_eqn
from .trace import get_aval


class JaxprTypeError(TypeError):
    """A Jaxpr is ill-formed or ill-typed."""


def check_jaxpr(jaxpr: Jaxpr) -> None:
    """Check scoping (each var bound once, before use) and types (abstract eval of every eqn)."""
    defined = set()

    def bind(v, where):
        if v in defined:
            raise JaxprTypeError(f"variable {v} bound twice ({where})")
        defined.add(v)

    def read(x, where):
        if isinstance(x, Literal):
            if x.aval.shape != () or x.val.dtype != x.aval.dtype:
                raise JaxprTypeError(f"literal {x} is not a scalar of its dtype ({where})")
            return x.aval
        if x not in defined:
            raise JaxprTypeError(f"variable {x} used before it is defined ({where})")
        return x.aval

    for v, c in zip(jaxpr.constvars, jaxpr.consts):
        bind(v, "constvars")
        if not same_type(get_aval(c), v.aval):
            raise JaxprTypeError(f"const of type {get_aval(c)} bound to {v}")
    for v in jaxpr.invars:
        bind(v, "invars")
    for eqn in jaxpr.eqns:
        where = f"in equation `{pp_eqn(eqn)}`" + (f" from {eqn.source}" if eqn.source else "")
        in_avals = [read(x, where) for x in eqn.inputs]
        with _sub_axis_env(eqn):  # shard_map's body sees its mesh axes
            for sub in walk_jaxprs(eqn.params):
                check_jaxpr(sub)  # sub-jaxprs are closed: they have their own scope
        try:
            out_avals = eqn.prim.abstract_eval(*in_avals, **eqn.params)
        except Exception as e:
            raise JaxprTypeError(f"{type(e).__name__}: {e} ({where})") from e
        if len(out_avals) != len(eqn.outputs):
            raise JaxprTypeError(f"{eqn.prim} returns {len(out_avals)} values, binds "
                                 f"{len(eqn.outputs)} ({where})")
        for v, a in zip(eqn.outputs, out_avals):
            if not same_type(v.aval, a):
                raise JaxprTypeError(f"output {v.aval.str_short()} does not match the type rule's "
                                     f"{a.str_short()} ({where})")
            bind(v, where)
    for x in jaxpr.outvars:
        read(x, "outvars")


@contextlib.contextmanager
def _sub_axis_env(eqn):
    """Bind the named axes a higher-order primitive gives its sub-jaxprs (``prim.sub_axes``)."""
    with contextlib.ExitStack() as stack:
        sub_axes = getattr(eqn.prim, "sub_axes", None)
        for name, size in (sub_axes(eqn.params) if sub_axes else ()):
            stack.enter_context(extend_axis_env(name, size))
        yield
