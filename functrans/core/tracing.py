"""``make_jaxpr`` and ``eval_shape``: trace a Python function into the IR (public as
``functrans.make_jaxpr`` and ``functrans.eval_shape``; they need only core's staging trace).

    >>> import functrans as ft, functrans.numpy as fnp
    >>> print(ft.make_jaxpr(lambda x: fnp.sin(x) * 2.0)(fnp.ones(3, "float32")))
    { lambda ; a:f32[3]. let b:f32[3] = sin a; c:f32[3] = mul b 2.0:f32[] in (c,) }
"""
from __future__ import annotations

import contextlib
import functools
import operator

from .api_util import (ForeignRef, ShapeDtypeStruct, abstractify, fun_name, merge_static,
                       split_static)
from .avals import ShapedArray
from .axis_env import extend_axis_env
from .dtypes import canonicalize_dtype
from .hivalues import hi_jaxpr, staged_hi_calls
from .staging import trace_to_jaxpr
from .trace import EVAL_TRACE, current_trace, get_aval
from .tree import tree_flatten, tree_unflatten


def _shaped(x, what):
    # As JAX's shaped_abstractify: besides arrays and ShapeDtypeStructs, an abstract value
    # stands for itself and any object with a shape and a dtype for an array of them (jax-md
    # probes its displacement functions with eval_shape on ShapedArrays).
    if isinstance(x, ShapedArray):
        return x
    try:
        return abstractify(x, what)
    except TypeError:
        shape, dtype = getattr(x, "shape", None), getattr(x, "dtype", None)
        if shape is None or dtype is None:
            raise
        return ShapedArray(tuple(shape), canonicalize_dtype(dtype))


def _trace(fun, static_argnums, args, kwargs, what, structs=None):
    # ``structs``: a dict that, when given, takes the ShapeDtypeStruct output leaves (by
    # position) instead of the traced outputs: eval_shape returns them as they are, as JAX's
    # does (equinox's filter_eval_shape returns its ShapeDtypeStruct inputs).
    dyn_args, dyn_kwargs, static_args, _ = split_static(args, kwargs, static_argnums, ())
    leaves, in_tree = tree_flatten((dyn_args, dyn_kwargs))
    avals = [_shaped(x, f"argument leaf {i} of {what}") for i, x in enumerate(leaves)]
    out_tree = []

    def flat_fun(*xs):
        a, k = tree_unflatten(in_tree, xs)
        out = fun(*merge_static(a, static_args), **k)
        out_leaves, tree = tree_flatten(out)
        if structs is not None:
            structs.update((i, o) for i, o in enumerate(out_leaves)
                           if isinstance(o, ShapeDtypeStruct))
            out_leaves = [o for i, o in enumerate(out_leaves) if i not in structs]
        for i, o in enumerate(out_leaves):
            try:
                get_aval(o)
            except TypeError:
                raise TypeError(f"{what} returned a {type(o).__name__} at output leaf {i} "
                                f"({o!r:.60}); outputs must be arrays or Python scalars"
                                ) from None
        out_tree.append(tree)
        return out_leaves

    refs = []  # references made outside any transformation that ``fun`` reads or writes
    while True:
        try:
            jaxpr = trace_to_jaxpr(_with_closed_refs(flat_fun, refs), avals, name=what)
            return jaxpr, out_tree[-1]
        except ForeignRef as e:
            if (e.ref._trace is not EVAL_TRACE or current_trace() is not EVAL_TRACE
                    or any(r is e.ref for r in refs)):
                raise
            refs.append(e.ref)  # trace again with it bound to the staging trace
            out_tree.clear()


def _with_closed_refs(flat_fun, refs):
    """``flat_fun`` tracing with ``refs`` (made outside any transformation) usable: each
    holds its current value, a constant of the program, and its writes stay in the trace (a
    jaxpr is functional: tracing does not change the references, as JAX's make_jaxpr)."""
    if not refs:
        return flat_fun

    def traced(*xs):
        saved = [(r._value, r._trace) for r in refs]
        for r in refs:
            r._trace = current_trace()
        try:
            return flat_fun(*xs)
        finally:
            for r, (v, t) in zip(refs, saved):
                r._value, r._trace = v, t
    return traced


def make_jaxpr(fun, static_argnums=(), axis_env=None, return_shape=False):
    """Return a function that traces ``fun`` on example arguments and returns its Jaxpr.

    Arguments may be arrays, Python scalars or :class:`ShapeDtypeStruct` (pytrees of them);
    ``static_argnums`` are passed through as Python values. ``axis_env``, pairs ``(name,
    size)``, binds axis names for the collectives ``fun`` uses (as inside ``pmap``). With
    ``return_shape=True`` also returns the output's pytree of ShapeDtypeStructs.

    >>> make_jaxpr(lambda x, n: x * n, static_argnums=1)(1.0, 3)
    { lambda ; a:f64[]. let b:f64[] = mul a 3.0:f64[] in (b,) }
    """
    static_argnums = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)
    axes = _check_axis_env(axis_env)
    what = f"make_jaxpr({fun_name(fun)})"

    @functools.wraps(fun)
    def traced(*args, **kwargs):
        with contextlib.ExitStack() as stack:
            for name, size in axes:
                stack.enter_context(extend_axis_env(name, size))
            hi_before = staged_hi_calls[0]
            jaxpr, out_tree = _trace(fun, static_argnums, args, kwargs, what)
            if staged_hi_calls[0] != hi_before and not return_shape:
                # high-level primitives: the program as JAX shows it (core/hivalues.py)
                jaxpr = _hi_program(fun, static_argnums, args, kwargs, what) or jaxpr
        if return_shape:
            shapes = [ShapeDtypeStruct(a.shape, a.dtype, a.weak_type) for a in jaxpr.out_avals]
            return jaxpr, tree_unflatten(out_tree, shapes)
        return jaxpr

    return traced


def _hi_program(fun, static_argnums, args, kwargs, what):
    """``fun``'s jaxpr with high-level values as variables of their types (``hi_jaxpr``),
    or None where it cannot be made (shape-only arguments)."""
    static = {i % max(len(args), 1) for i in static_argnums}
    dyn = [a for i, a in enumerate(args) if i not in static]

    def with_static(d, k):
        it = iter(d)
        return fun(*[a if i in static else next(it) for i, a in enumerate(args)], **k)
    try:
        return hi_jaxpr(with_static, (dyn, kwargs), name=what)
    except Exception:  # noqa: BLE001 - the program of the values' arrays is shown instead
        return None


def _check_axis_env(axis_env) -> list:
    """``make_jaxpr``'s ``axis_env`` as a list of ``(name, size)`` pairs, checked."""
    if axis_env is None:
        return []
    pairs = []
    for pair in axis_env:
        if not (isinstance(pair, (tuple, list)) and len(pair) == 2):
            raise TypeError(f"make_jaxpr: axis_env must hold (axis name, size) pairs, got "
                            f"{pair!r}")
        name, size = pair
        try:
            size = operator.index(size)
        except TypeError:
            raise TypeError(f"make_jaxpr: axis_env size of {name!r} must be an integer, got "
                            f"{type(size).__name__}") from None
        if size < 0:
            raise ValueError(f"make_jaxpr: axis_env size of {name!r} is negative ({size})")
        pairs.append((name, size))
    return pairs


def eval_shape(fun, *args, **kwargs):
    """The output's shapes and dtypes (ShapeDtypeStructs), computed without running ``fun``.

    >>> eval_shape(lambda x: x.sum(0), ShapeDtypeStruct((2, 3), "float32"))
    ShapeDtypeStruct(shape=(3,), dtype=float32)
    """
    structs = {}
    jaxpr, out_tree = _trace(fun, (), args, kwargs, f"eval_shape({fun_name(fun)})", structs)
    traced = iter([ShapeDtypeStruct(a.shape, a.dtype, a.weak_type) for a in jaxpr.out_avals])
    return tree_unflatten(out_tree, [structs[i] if i in structs else next(traced)
                                     for i in range(len(structs) + len(jaxpr.out_avals))])
