"""``checkpoint`` (``remat``) with JAX's options: a policy naming what to save
(``checkpoint_policies``; :mod:`.segments` splits the function at what it saves) and static
arguments passed as Python values; ``functrans.ad_checkpoint`` and ``functrans.checkpoint``
are this one.

    >>> f = checkpoint(lambda x, n: x ** n, static_argnums=1)
    >>> ft.grad(f)(2.0, 3)
    Array(12., dtype=float64, weak_type=True)
"""
from __future__ import annotations

import functools
import inspect

from ..core.api_util import fun_name
from .policies import everything_saveable, nothing_saveable
from .segments import checkpoint_with_policy

__all__ = ["checkpoint", "remat"]


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
