"""``named_call``: a function under a name, staged as a named ``jit`` call when traced
(public as ``functrans.named_call``; it lives with jit, the call it stages).

    >>> double = named_call(lambda x: x * 2, name="double")
    >>> ft.make_jaxpr(double)(1.0).eqns[0].params["name"]
    'double'
"""
from __future__ import annotations

import functools

from functrans.core.api_util import fun_name
from functrans.core.trace import EVAL_TRACE, _state, get_aval
from functrans.core.tree import tree_flatten

from .api import jit


def named_call(fun, *, name: str | None = None):
    """``fun`` under the name ``name`` (default: its own): traced, it appears in the jaxpr as
    a ``jit`` call with that name (jit inlines it, so compiled code is unchanged); evaluated
    eagerly, or given arguments that are not arrays (functions: equinox passes loop bodies),
    it simply runs ``fun``, as JAX's ``named_call`` always does (it only names).

    >>> inner = ft.named_call(lambda x: x * 2, name="double")
    >>> print(ft.make_jaxpr(lambda x: inner(x) + 1)(1.0))
    { lambda ; a:f64[]. let
        b:f64[] = jit[
          jaxpr={ lambda ; c:f64[]. let d:f64[] = mul c 2.0:f64[] in (d,) }
          name=double
        ] a
        e:f64[] = add b 1.0:f64[]
      in (e,) }
    """
    if not callable(fun):
        raise TypeError(f"named_call: expected a callable, got {type(fun).__name__}")
    if name is not None and not isinstance(name, str):
        raise TypeError(f"named_call: name must be a string, got {type(name).__name__}")

    @functools.wraps(fun)
    def body(*args, **kwargs):
        return fun(*args, **kwargs)

    body.__name__ = name or fun_name(fun)
    staged = jit(body)

    @functools.wraps(fun)
    def call(*args, **kwargs):
        if _state.trace is EVAL_TRACE or not _all_values(tree_flatten((args, kwargs))[0]):
            return fun(*args, **kwargs)
        return staged(*args, **kwargs)
    return call


def _all_values(leaves) -> bool:
    """Whether every leaf can be a traced argument (an array, a scalar, a tracer)."""
    for x in leaves:
        try:
            get_aval(x)
        except (TypeError, ValueError):  # (UnsupportedDtypeError is a TypeError)
            return False
    return True
