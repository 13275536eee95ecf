"""``jit``'s ``donate_argnums``/``donate_argnames``: a hint, checked and otherwise a no-op.

Donating lets XLA reuse an input's buffer for an output. functrans Arrays are immutable and
kernels write fresh outputs, so no buffer is reused and a donated argument stays valid (JAX
deletes it). The hint is still validated as JAX validates it (positions and names must exist
and must not be static), and, as JAX does, a donated argument that no output could have used
(no output of the same shape and dtype) draws one warning per compiled signature::

    >>> f = ft.jit(lambda x: x * 2, donate_argnums=0)
    >>> f(fnp.ones(3))
    Array([2., 2., 2.], dtype=float64)
"""
from __future__ import annotations

import inspect
import warnings

from functrans.core.api_util import abstractify
from functrans.core.tree import tree_flatten


def _as_tuple(x, kind):
    if x is None:
        return ()
    return (x,) if isinstance(x, kind) else tuple(x)


def donation(fun, donate_argnums, donate_argnames, static_argnums, static_argnames):
    """Validated ``(donate_argnums, donate_argnames)``, each completed from the other where
    the signature allows (as for static arguments)."""
    nums, names = _as_tuple(donate_argnums, int), _as_tuple(donate_argnames, str)
    if not nums and not names:
        return (), ()
    for i in nums:
        if not isinstance(i, int) or isinstance(i, bool):
            raise TypeError(f"jit: donate_argnums must be integers, got {i!r}")
    for n in names:
        if not isinstance(n, str):
            raise TypeError(f"jit: donate_argnames must be strings, got {n!r}")
    try:
        params = list(inspect.signature(fun).parameters.values())
    except (TypeError, ValueError):
        params = None
    npos = None
    if params is not None:
        positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY,
                                                           p.POSITIONAL_OR_KEYWORD)]
        npos = len(positional)
        by_name = {p.name: p for p in params}
        varargs = any(p.kind == p.VAR_POSITIONAL for p in params)
        varkw = any(p.kind == p.VAR_KEYWORD for p in params)
        for i in nums:
            if not varargs and not -len(positional) <= i < len(positional):
                raise ValueError(f"jit: donate_argnums {i} is out of range for a function "
                                 f"with {len(positional)} positional parameters")
        for n in names:
            if n not in by_name and not varkw:
                raise ValueError(f"jit: donate_argnames {n!r} is not a parameter of the "
                                 f"function (parameters: {', '.join(by_name)})")
        nums = tuple(sorted(set(nums) | {positional.index(n) for n in names if n in positional}))
        names = tuple(sorted(set(names) | {positional[i] for i in nums
                                           if -len(positional) <= i < len(positional)}))

    def position(i):
        return i % npos if npos and i < 0 else i

    both = sorted({position(i) for i in static_argnums} & {position(i) for i in nums})
    both += sorted(set(static_argnames) & set(names))
    if both:
        raise ValueError(f"jit: static and donated arguments cannot intersect, got {both}")
    return nums, names


def warn_unusable_donations(jitted, args, kwargs, out_avals) -> None:
    """Warn, as JAX does, about donated arguments no output has the shape and dtype of."""
    nargs = len(args)
    donated = [a for i, a in enumerate(args) if i in jitted.donate_argnums
               or i - nargs in jitted.donate_argnums]
    donated += [v for k, v in kwargs.items() if k in jitted.donate_argnames]
    free = [(a.shape, a.dtype) for a in out_avals]
    unusable = []
    for leaf in tree_flatten(donated)[0]:
        aval = abstractify(leaf, f"jit({jitted.name}) donated argument")
        key = (aval.shape, aval.dtype)
        if key in free:
            free.remove(key)
        else:
            unusable.append(aval.str_short())
    if unusable:
        warnings.warn(f"jit({jitted.name}): some donated buffers were not usable: "
                      f"{', '.join(unusable)} (no output has their shape and dtype; functrans "
                      "never reuses argument buffers, so donated arrays stay valid)",
                      UserWarning, stacklevel=3)
