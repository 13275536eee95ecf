"""``jax._src.api_util``: the argument helper libraries import from JAX's internals
(e3nn-jax's decorators, which jax-md imports): completing a function's ``argnums`` from its
``argnames`` and the reverse, as ``jax.jit`` does for ``static_argnums``/``static_argnames``.

    >>> import inspect
    >>> from functrans.as_jax.jax_src.api_util import infer_argnums_and_argnames
    >>> infer_argnums_and_argnames(inspect.signature(lambda x, y, *, z: 0), 1, None)
    ((1,), ('y',))
"""
from __future__ import annotations

import inspect
import operator
from collections.abc import Iterable

__all__ = ["infer_argnums_and_argnames"]

_POSITIONAL_OR_KEYWORD = inspect.Parameter.POSITIONAL_OR_KEYWORD


def _index_tuple(argnums) -> tuple[int, ...]:
    if isinstance(argnums, Iterable):
        return tuple(operator.index(i) for i in argnums)
    return (operator.index(argnums),)


def _str_tuple(argnames) -> tuple[str, ...]:
    if isinstance(argnames, str):
        return (argnames,)
    names = tuple(argnames)
    if not all(isinstance(n, str) for n in names):
        raise TypeError(f"argument names must be strings, got {argnames!r}")
    return names


def infer_argnums_and_argnames(sig: inspect.Signature, argnums, argnames
                               ) -> tuple[tuple[int, ...], tuple[str, ...]]:
    """``(argnums, argnames)`` both complete: the one not given (None) is inferred from the
    other through ``sig``'s positional-or-keyword parameters; both given are returned as
    tuples unchecked, as in JAX; neither given is ``((), ())``.

        >>> sig = inspect.signature(lambda a, b, c=1: 0)
        >>> infer_argnums_and_argnames(sig, None, ("c", "a"))
        ((0, 2), ('c', 'a'))
    """
    if argnums is None and argnames is None:
        return (), ()
    if argnums is not None and argnames is not None:
        return _index_tuple(argnums), _str_tuple(argnames)
    params = list(sig.parameters.items())
    if argnums is None:
        argnames = _str_tuple(argnames)
        argnums = tuple(i for i, (k, p) in enumerate(params)
                        if p.kind == _POSITIONAL_OR_KEYWORD and k in argnames)
    else:
        argnums = _index_tuple(argnums)
        argnames = tuple(k for i, (k, p) in enumerate(params)
                         if p.kind == _POSITIONAL_OR_KEYWORD and i in argnums)
    return argnums, argnames
