"""Mutable references as ``jit`` arguments: ``jit(f)(ref, x)`` runs ``f`` on a reference of
the traced program and writes the value it ends with back into ``ref``, as JAX does.

The compiled program takes each reference's value as an input and returns its final value
as an extra output (the reference is discharged at the call boundary), so the program itself
stays functional and is cached like any other (the positions of the references are part of
its signature).

References are ``functrans.ref``'s, a user-API module this one does not import: they are
recognized by their ``_is_ref`` mark (as core's ``abstractify`` does) and the traced ones
are made with the class of the references passed.

    >>> r = ft.new_ref(fnp.zeros(2))
    >>> @ft.jit
    ... def bump(r, x):
    ...     r[...] += x
    ...     return r[0] * 2
    >>> bump(r, 3.0), r[...]
    (Array(6., dtype=float64), Array([3., 3.], dtype=float64))

A reference made outside any transformation that the jitted function closes over is passed
the same way, as an implicit argument (found when tracing first reads or writes it), and so
is one of an enclosing jit's (or make_jaxpr's) trace::

    >>> count = ft.new_ref(0)
    >>> @ft.jit
    ... def tick():
    ...     count[...] += 1
    >>> tick(); tick(); count[...]
    Array(2, dtype=int64)
"""
from __future__ import annotations

from functrans.core.api_util import ForeignRef
from functrans.core.trace import EVAL_TRACE, current_trace
from functrans.core.tree import tree_flatten, tree_unflatten

_POSITIONS = "_functrans_ref_positions"


def call_with_refs(jitted, args, kwargs):
    """Call ``jitted`` with the references among its arguments passed by value, then write
    their final values back."""
    leaves, tree = tree_flatten((args, kwargs))
    positions = tuple(i for i, x in enumerate(leaves) if getattr(x, "_is_ref", False))
    refs = [leaves[i] for i in positions]
    if len({id(r) for r in refs}) != len(refs):
        raise ValueError(f"jit({jitted.name}): the same Ref is passed more than once; a "
                         "reference may appear once among a call's arguments")
    for i, r in zip(positions, refs):
        leaves[i] = r._check("passing to jit")
    a, k = tree_unflatten(tree, leaves)
    ref_type = type(refs[0]) if refs else None
    out, finals = _variant(jitted, ref_type)(*a, **k, **{_POSITIONS: positions})
    for r, v in zip(refs, finals):
        r._value = v
    return out


def _variant(jitted, ref_type):
    """The jitted function that takes the references' values and returns their finals
    (one per jitted function, built on first use; its traced references are ``ref_type``)."""
    from .api import Jitted
    variant = jitted.__dict__.get("_ref_variant")
    if variant is None:
        fun = jitted.fun

        def with_refs(*args, **kwargs):
            positions = kwargs.pop(_POSITIONS)
            leaves, tree = tree_flatten((args, kwargs))
            refs = [ref_type(leaves[i], current_trace()) for i in positions]
            for i, r in zip(positions, refs):
                leaves[i] = r
            a, k = tree_unflatten(tree, leaves)
            return fun(*a, **k), [r._value for r in refs]

        with_refs.__name__ = jitted.name
        variant = jitted.__dict__["_ref_variant"] = Jitted(
            with_refs, jitted.static_argnums, tuple(jitted.static_argnames) + (_POSITIONS,),
            jitted._backend, jitted.device)
    return variant


_CLOSED = "_functrans_closed_ref_values"


def closed_over(jitted, e: ForeignRef) -> bool:
    """Whether ``e`` (raised tracing ``jitted``) is for a reference ``jit`` can pass in: one
    of the trace ``jitted`` is called in (made outside any transformation and called so, or
    one an enclosing jit or make_jaxpr traces)."""
    return (e.ref._trace is current_trace()
            and "_closing_variant" not in jitted.__dict__)  # (the variant lets it through)


def call_with_closed_refs(jitted, args, kwargs, found=None):
    """Call ``jitted`` with the references it closes over passed in by value and their final
    values written back; ``found`` is one more such reference (tracing met it)."""
    trace = current_trace()
    known = jitted.__dict__.setdefault("_closed_refs", [])
    # Called outside any transformation, the references found are kept for the next calls;
    # called inside one (an enclosing jit, make_jaxpr), those of that trace serve this call.
    refs = known if trace is EVAL_TRACE else [r for r in known if r._trace is trace]
    if found is not None and all(r is not found for r in refs):
        refs.append(found)
    while True:
        variant = _closed_variant(jitted, tuple(refs))
        try:
            out, finals = variant(*args, **kwargs, **{_CLOSED: [r._value for r in refs]})
        except ForeignRef as e:
            if not closed_over(jitted, e) or any(r is e.ref for r in refs):
                raise
            refs.append(e.ref)  # another one: trace again with it
            continue
        for r, v in zip(refs, finals):
            r._value = v
        return out


def _closed_variant(jitted, refs):
    from .api import Jitted
    key = tuple(map(id, refs))
    cached = jitted.__dict__.get("_closed_variant")
    if cached is not None and cached[0] == key:
        return cached[1]
    fun = jitted.fun

    def with_closed_refs(*args, **kwargs):
        values = kwargs.pop(_CLOSED)
        saved = [(r._value, r._trace) for r in refs]
        trace = current_trace()
        for r, v in zip(refs, values):  # the references hold this trace's values meanwhile
            r._value, r._trace = v, trace
        try:
            out = fun(*args, **kwargs)
            finals = [r._value for r in refs]
        finally:
            for r, (v, t) in zip(refs, saved):
                r._value, r._trace = v, t
        return out, finals

    with_closed_refs.__name__ = jitted.name
    variant = Jitted(with_closed_refs, jitted.static_argnums, jitted.static_argnames,
                     jitted._backend, jitted.device)
    variant.__dict__["_closing_variant"] = True
    jitted.__dict__["_closed_variant"] = (key, variant)
    return variant
