"""``functrans.ad_checkpoint``: rematerialization (``jax.ad_checkpoint``): ``checkpoint`` with
JAX's policies, ``checkpoint_name`` and ``print_saved_residuals``.

    >>> W, x = fnp.ones((3, 3)), fnp.ones(3)
    >>> f = lambda W, x: fnp.sum(fnp.sin(W @ fnp.sin(W @ x)))
    >>> print_saved_residuals(checkpoint(f, policy=checkpoint_policies.dots_saveable), W, x)
    f64[3,3] from the argument W
    f64[3] from the argument x
    f64[3] output of dot_general from ... (in <lambda>)
    f64[3] output of dot_general from ... (in <lambda>)

(JAX's 0.10 release removed ``jax.ad_checkpoint.checkpoint`` and ``remat`` in favour of
``jax.checkpoint``; they are kept here for code written against earlier releases.)
"""
from __future__ import annotations

import functools
import inspect

from .core.api_util import abstractify, fun_name
from .core.ir import Var
from .core.staging import trace_to_jaxpr
from .core.trace import Tracer, get_aval
from .transforms.autodiff.api import linearize_flat
from .core.tree import keystr, tree_flatten, tree_flatten_with_path, tree_unflatten
from ._checkpoint_policies import (Offloadable, Recompute, Saveable,  # noqa: F401
                                   checkpoint_name, checkpoint_policies, everything_saveable,
                                   marked_name, nothing_saveable)
from ._remat_policy import checkpoint_with_policy

__all__ = ["Offloadable", "Recompute", "Saveable", "checkpoint", "checkpoint_name",
           "checkpoint_policies", "print_saved_residuals", "remat"]


def _with_statics(fun, static_argnums, static_argnames, make):
    """``fun`` whose static arguments (by position or name) are bound as Python values
    before ``make`` wraps the rest, on every call."""
    if not static_argnums and not static_argnames:
        return make(fun)
    nums = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)
    names = (static_argnames,) if isinstance(static_argnames, str) else tuple(static_argnames)
    try:
        params = [p.name for p in inspect.signature(fun).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []

    @functools.wraps(fun)
    def wrapped(*args, **kwargs):
        static_pos, static_names = set(), set(names)
        for i in nums:
            if -len(args) <= i < len(args):
                static_pos.add(i % len(args))
            elif 0 <= i < len(params):  # that parameter was passed by keyword, or not at all
                static_names.add(params[i])
            else:
                raise ValueError(f"checkpoint: static_argnums={static_argnums!r} is out of "
                                 f"range for {fun_name(fun)} called with {len(args)} "
                                 "positional arguments")
        static_pos.update(params.index(n) for n in names if n in params[:len(args)])
        static_kw = {k: kwargs.pop(k) for k in static_names if k in kwargs}
        fixed = {i: args[i] for i in static_pos}

        @functools.wraps(fun)
        def dynamic(*dyn, **kw):
            it = iter(dyn)
            full = [fixed[i] if i in fixed else next(it) for i in range(len(args))]
            return fun(*full, **kw, **static_kw)

        return make(dynamic)(*[a for i, a in enumerate(args) if i not in fixed], **kwargs)

    return wrapped


def checkpoint(fun, *, prevent_cse=True, policy=None, static_argnums=(), static_argnames=(),
               concrete=None):
    """Make ``fun`` recompute its intermediates in the backward pass instead of storing them.

    ``policy`` (one of :data:`checkpoint_policies`, or ``policy(prim, *avals, **params)``)
    picks intermediates to store after all; ``static_argnums``/``static_argnames`` are passed
    as Python values (the function is traced per call).

    >>> g = ft.grad(checkpoint(lambda x: fnp.sin(fnp.sin(x))))
    >>> bool(fnp.allclose(g(0.5), fnp.cos(fnp.sin(0.5)) * fnp.cos(0.5)))
    True
    """
    if concrete is not None:
        raise NotImplementedError("checkpoint: the concrete= option was removed (as in JAX); "
                                  "mark Python-valued arguments with static_argnums instead")
    if not callable(fun):
        raise TypeError(f"checkpoint: expected a callable, got {type(fun).__name__}")
    if policy is not None and not callable(policy):
        raise TypeError(f"checkpoint: policy must be callable (one of checkpoint_policies), "
                        f"got {type(policy).__name__}")
    if policy is everything_saveable:
        return fun  # saving everything is what differentiation does without checkpoint
    policy = nothing_saveable if policy is None else policy

    def make(f):
        return checkpoint_with_policy(f, prevent_cse=prevent_cse, policy=policy)
    return _with_statics(fun, static_argnums, static_argnames, make)


remat = checkpoint


# ---- print_saved_residuals -------------------------------------------------------------------
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
