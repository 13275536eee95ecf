"""``jax.api_util``: helpers libraries use to wrap functions the way transformations do:
flattening a function's pytree arguments and results (:func:`flatten_fun`), fixing some
arguments (:func:`argnums_partial`), naming its arguments for error messages
(:func:`debug_info`) and the abstract value of an argument (:func:`shaped_abstractify`)::

    >>> from functrans.extend import linear_util as lu
    >>> from functrans.core.tree import tree_flatten
    >>> def f(x, scale=1.0):
    ...     return {"y": x["a"] * scale}
    >>> leaves, in_tree = tree_flatten((({"a": 2.0},), {"scale": 3.0}))
    >>> flat_f, out_tree = flatten_fun(lu.wrap_init(f), in_tree)
    >>> flat_f.call_wrapped(*leaves), out_tree()
    ([6.0], PyTreeDef({'y': *}))
"""
from __future__ import annotations

import functools
import inspect

from functrans.core.api_util import abstractify
from functrans.extend.linear_util import (DebugInfo, WrappedFun, transformation2,
                                          transformation_with_aux2)
from functrans.core.tree import keystr, tree_flatten, tree_flatten_with_path, tree_unflatten

__all__ = ["argnums_partial", "debug_info", "flatten_fun", "flatten_fun_nokwargs",
           "safe_map", "shaped_abstractify"]


@transformation_with_aux2
def flatten_fun(f, store, in_tree, *args_flat):
    """``f`` (a ``WrappedFun`` taking ``*args, **kwargs``) as a function of the leaves of
    ``(args, kwargs)`` (structure ``in_tree``) returning the list of its outputs' leaves; the
    thunk returned with it gives the outputs' structure after a call (see the module's
    example)."""
    args, kwargs = tree_unflatten(in_tree, args_flat)
    out, out_tree = tree_flatten(f(*args, **kwargs))
    store.store(out_tree)
    return out


@transformation_with_aux2
def flatten_fun_nokwargs(f, store, in_tree, *args_flat):
    """As :func:`flatten_fun` for a function of positional arguments only: ``in_tree`` is
    the structure of the argument tuple.

        >>> from functrans.extend import linear_util as lu
        >>> leaves, in_tree = tree_flatten(((1.0, 2.0),))
        >>> g, out_tree = flatten_fun_nokwargs(lu.wrap_init(lambda p: p[0] + p[1]), in_tree)
        >>> g.call_wrapped(*leaves), out_tree()
        ([3.0], PyTreeDef(*))
    """
    out, out_tree = tree_flatten(f(*tree_unflatten(in_tree, args_flat)))
    store.store(out_tree)
    return out


def argnums_partial(f: WrappedFun, dyn_argnums, args, require_static_args_hashable=True):
    """``(g, dyn_args)``: ``g`` calls ``f`` with the arguments not in ``dyn_argnums`` fixed
    to their values in ``args`` and the others passed; ``dyn_args`` are those in
    ``dyn_argnums``.

        >>> from functrans.extend import linear_util as lu
        >>> g, dyn = argnums_partial(lu.wrap_init(lambda a, b, c: a - b * c), (0, 2), (10, 2, 3))
        >>> dyn, g.call_wrapped(*dyn)
        ((10, 3), 4)
    """
    dyn_argnums = (dyn_argnums,) if isinstance(dyn_argnums, int) else tuple(dyn_argnums)
    n = len(args)
    for i in dyn_argnums:
        if not -n <= i < n:
            raise ValueError(f"argnums_partial: argument number {i} is out of range for "
                             f"{n} arguments")
    dyn_argnums = tuple(i % n for i in dyn_argnums)
    fixed = []
    for i, a in enumerate(args):
        if i in dyn_argnums:
            continue
        if require_static_args_hashable:
            try:
                hash(a)
            except TypeError:
                raise ValueError(
                    "Non-hashable static arguments are not supported, as this can lead to "
                    f"unexpected cache-misses. Static argument (index {i}) of type "
                    f"{type(a)} for function {f.__name__} is non-hashable.") from None
        fixed.append(a)
    return _fill_args(f, dyn_argnums, tuple(fixed)), tuple(args[i] for i in dyn_argnums)


@transformation2
def _fill_args(f, dyn_argnums, fixed, *dyn_args, **kwargs):
    dyn = dict(zip(dyn_argnums, dyn_args))
    rest = iter(fixed)
    args = [dyn[i] if i in dyn else next(rest) for i in range(len(fixed) + len(dyn_args))]
    return f(*args, **kwargs)


def debug_info(traced_for, fun, args, kwargs, *, static_argnums=(), static_argnames=(),
               result_paths_thunk=None, sourceinfo=None, signature=None) -> DebugInfo:
    """What tracing ``fun`` on ``args``/``kwargs`` for ``traced_for`` is about: the function
    (name, file and line) and the names of its non-static argument leaves.

        >>> def f(x, y):
        ...     return x
        >>> debug_info("jit", f, ({"a": 1, "b": [2, 3]}, 4), {}).arg_names
        ("x['a']", "x['b'][0]", "x['b'][1]", 'y')
    """
    info = getattr(fun, "__fun_debug_info__", None)
    if info is not None:
        return info
    if sourceinfo is None:
        sourceinfo = _sourceinfo(fun)
    if signature is None:
        try:
            signature = inspect.signature(fun)
        except (TypeError, ValueError):
            signature = None
    names = _arg_names(signature, args, kwargs, static_argnums, static_argnames)
    return DebugInfo(traced_for, sourceinfo, names, result_paths_thunk)


def _sourceinfo(fun) -> str:
    while isinstance(fun, functools.partial):
        fun = fun.func
    fun = inspect.unwrap(fun)
    code = getattr(fun, "__code__", None)
    name = getattr(fun, "__name__", None)
    if code is not None and name is not None:
        return f"{name} at {code.co_filename}:{code.co_firstlineno}"
    return name or "<unknown>"


def _arg_names(signature, args, kwargs, static_argnums, static_argnames):
    n = len(args)
    static = {i % n for i in static_argnums if -n <= i < n}
    positional, keyword = [f"args[{i}]" for i in range(n)], lambda k: f"kwargs['{k}']"
    if signature is not None:
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError:
            bound = None
        if bound is not None:
            positional, var_kw = [], "kwargs"
            for name, p in signature.parameters.items():
                if p.kind is inspect.Parameter.VAR_POSITIONAL:
                    positional += [f"{name}[{j}]" for j in range(len(bound.arguments.get(name,
                                                                                       ())))]
                elif p.kind is inspect.Parameter.VAR_KEYWORD:
                    var_kw = name
                elif name in bound.arguments and name not in kwargs:
                    positional.append(name)

            def keyword(k):
                return k if k in signature.parameters else f"{var_kw}['{k}']"
    leaves = [(positional[i], a) for i, a in enumerate(args) if i not in static]
    leaves += [(keyword(k), kwargs[k]) for k in sorted(kwargs) if k not in static_argnames]
    return tuple(name + keystr(path) for name, value in leaves
                 for path, _ in tree_flatten_with_path(value)[0])


def shaped_abstractify(x):
    """The abstract value (``ShapedArray``) of an array-like value or ``ShapeDtypeStruct``.

        >>> shaped_abstractify(fnp.ones((2, 3), "float32"))
        ShapedArray(f32[2,3])
    """
    return abstractify(x, "shaped_abstractify")


def safe_map(f, *args):
    """``list(map(f, *args))`` requiring equally long sequences.

        >>> safe_map(lambda a, b: a + b, [1, 2], [10, 20])
        [11, 22]
    """
    args = [list(a) for a in args]
    if len({len(a) for a in args}) > 1:
        raise ValueError(f"safe_map: length mismatch: {[len(a) for a in args]}")
    return list(map(f, *args))


def __getattr__(name):
    raise AttributeError(f"module 'jax.api_util' has no attribute {name!r}: functrans does "
                         f"not provide jax.api_util.{name}")
