"""``print_saved_residuals``: what reverse-mode differentiation of a function stores for the
backward pass, and where each value comes from (an argument, an equation and its line, a
``checkpoint_name``), looking inside checkpoint segments.
"""
from __future__ import annotations

import inspect

from ..core.api_util import abstractify
from ..core.ir import Var
from ..core.staging import trace_to_jaxpr
from ..core.trace import Tracer, get_aval
from ..core.tree import keystr, tree_flatten, tree_flatten_with_path, tree_unflatten
from ..transforms.autodiff.api import linearize_flat
from .policies import marked_name

__all__ = ["print_saved_residuals"]


def _arg_names(f, args, kwargs) -> list:
    """A name per leaf of ``(args, kwargs)``: the parameter's name and the leaf's path."""
    try:
        bound = inspect.signature(f).bind(*args, **kwargs)
        named = []
        for name, value in bound.arguments.items():
            kind = inspect.signature(f).parameters[name].kind
            if kind is inspect.Parameter.VAR_POSITIONAL:
                named += [(f"{name}[{i}]", v) for i, v in enumerate(value)]
            elif kind is inspect.Parameter.VAR_KEYWORD:
                named += [(f"{name}[{k!r}]", v) for k, v in value.items()]
            else:
                named.append((name, value))
    except (TypeError, ValueError):
        return [None] * len(tree_flatten((args, kwargs))[0])
    return [name + keystr(path) for name, value in named
            for path, _ in tree_flatten_with_path(value)[0]]


def _producer(jaxpr, var):
    for i, eqn in enumerate(jaxpr.eqns):
        for j, o in enumerate(eqn.outputs):
            if o is var:
                return i, eqn, j
    return None


def _describe(jaxpr, var, order=()):
    """``(sort key, description)`` of where ``var`` of ``jaxpr`` comes from, looking inside
    checkpoint segments (JAX's programs have no such segments)."""
    if var in jaxpr.constvars:
        return (1,), "from a constant"
    if var in jaxpr.invars:
        return (2, jaxpr.invars.index(var)), None
    i, eqn, j = _producer(jaxpr, var)
    where = f" from {eqn.source}" if eqn.source else ""
    name = marked_name(eqn)
    if name is not None:
        return (3, *order, i), f"named {name!r}{where}"
    if eqn.prim.name == "checkpoint":
        inner = eqn.params["jaxpr"]
        out = inner.outvars[j]
        if isinstance(out, Var) and out not in inner.invars and out not in inner.constvars:
            return _describe(inner, out, (*order, i))
    if eqn.prim.name == "jit":
        return (3, *order, i), f"output of jitted function {eqn.params['name']!r}{where}"
    return (3, *order, i), f"output of {eqn.prim.name}{where}"


def _saved_residuals(f, *args, **kwargs) -> list:
    """``(aval, description)`` per value reverse-mode differentiation of ``f`` at ``args``
    stores for the backward pass."""
    leaves, in_tree = tree_flatten((args, kwargs))
    names = _arg_names(f, args, kwargs)
    avals = [abstractify(x, f"print_saved_residuals: argument leaf {i}")
             for i, x in enumerate(leaves)]
    found = {}

    def trace(*xs):
        def flat(*ys):
            a, k = tree_unflatten(in_tree, ys)
            return tree_flatten(f(*a, **k))[0]
        _, linear, _ = linearize_flat(flat, list(xs))
        found["consts"] = [c for c in linear.consts if not isinstance(c, Tracer)]
        return [c for c in linear.consts if isinstance(c, Tracer)]

    jaxpr = trace_to_jaxpr(trace, avals, name="saved_residuals")
    results = [((1,), get_aval(c), "from a constant") for c in found["consts"]]
    seen = set()
    for v in jaxpr.outvars:
        if not isinstance(v, Var):
            results.append(((0,), v.aval, "from a literal"))
            continue
        if v in seen:
            continue
        seen.add(v)
        key, what = _describe(jaxpr, v)
        if what is None:
            i = key[1]
            what = (f"from the argument {names[i]}" if names[i] is not None
                    else f"from the argument at flattened index {i}")
        results.append((key, v.aval, what))
    results.sort(key=lambda r: r[0])
    return [(aval, what) for _, aval, what in results]


def print_saved_residuals(f, *args, **kwargs) -> None:
    """Print each value reverse-mode differentiation of ``f`` at ``args`` stores for the
    backward pass: its type and where it comes from (an argument, an equation and its line,
    a ``checkpoint_name``).

    >>> print_saved_residuals(lambda x: fnp.sin(x) * 2.0, fnp.ones(3))
    f64[3] output of cos from ... (in <lambda>)
    """
    for aval, what in _saved_residuals(f, *args, **kwargs):
        print(f"{aval.str_short()} {what}")
