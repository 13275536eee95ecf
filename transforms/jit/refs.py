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
"""
from __future__ import annotations

from functrans.core.trace import current_trace
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
