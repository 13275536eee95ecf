"""Lowerings given as array functions, inlined before a program compiles: those registered
for primitives defined outside functrans (``jax.extend``), and sharding_constraint's identity.

functrans compiles jaxprs itself and has no MLIR, so the one kind of lowering it can use is a
*function* of the primitive's operands and params written with array operations
(:class:`InlineLowering`, what ``jax.interpreters.mlir.lower_fun`` makes; it and the table
``lowering_rules`` live below jit, in ``transforms/inline_lowerings.py``, where primitives
register theirs, and are re-exported here). Before jit optimizes a program,
:func:`expand_lowerings` replaces each equation of such a primitive by a ``jit`` call of that
function's traced program, which inlining then splices in, so it compiles like the rest of
the code. A primitive with no lowering at all runs its Python impl on the host between
compiled segments (see segmented.py); a lowering of any other kind is an error when a program
using it is compiled::

    >>> from functrans.core.trace import Primitive
    >>> twice_p = Primitive("twice", impl=lambda x: [2 * x], abstract_eval=lambda a: [a],
    ...                     register=False)
    >>> lowering_rules[twice_p] = {None: InlineLowering(lambda x: x + x, False)}
    >>> print(expand_lowerings(ft.make_jaxpr(lambda x: twice_p.bind1(x))(1.0)))
    { lambda ; a:f64[]. let
        b:f64[] = jit[
          jaxpr={ lambda ; c:f64[]. let d:f64[] = add c c in (d,) }
          name=twice
        ] a
      in (b,) }
    >>> del lowering_rules[twice_p]
"""
from __future__ import annotations

from functrans.core.ir import Eqn, Jaxpr
from functrans.core.trace import all_primitives

from ..inline_lowerings import InlineLowering, lowering_for, lowering_rules  # noqa: F401
from .call import jit_p


def expand_lowerings(jaxpr: Jaxpr, platform="cpu", _inside=()) -> Jaxpr:
    """``jaxpr`` with every equation of a primitive that has a registered lowering replaced
    by a ``jit`` call of its inlined program (recursively, also inside control flow). Returns
    ``jaxpr`` itself when there is none (see the module's example).

        >>> j = ft.make_jaxpr(fnp.sin)(1.0)
        >>> expand_lowerings(j) is j
        True
    """
    if not lowering_rules:
        return jaxpr
    eqns, changed = [], False
    for eqn in jaxpr.eqns:
        new = _expand_eqn(eqn, platform, _inside)
        changed = changed or new is not eqn
        eqns.append(new)
    return jaxpr.replace(eqns=eqns) if changed else jaxpr


def _same_value(a, b) -> bool:
    if a is b:
        return True
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 -- arrays and other values without a truth: not the same
        return False


def _same_params(p, q) -> bool:
    return p.keys() == q.keys() and all(_same_value(p[k], q[k]) for k in p)


def _applies_itself(eqn, inside) -> bool:
    """Whether ``eqn`` is one of the equations whose lowerings are being expanded: the same
    primitive on the same types with the same params. Only that one recurses forever; the
    same primitive with other params (a solve whose lowering runs another, smaller solve) is
    expanded like any other."""
    avals = [x.aval for x in eqn.inputs]
    return any(prim is eqn.prim and in_avals == avals and _same_params(params, eqn.params)
               for prim, in_avals, params in inside)


def _expand_eqn(eqn, platform, inside):
    prim = eqn.prim
    rule = lowering_for(prim, platform)
    if rule is not None and _applies_itself(eqn, inside):
        if all_primitives().get(prim.name) is not prim:  # a library primitive: no other way
            raise RecursionError(f"the lowering of '{prim.name}' applies '{prim.name}' itself")
        rule = None  # functrans's own: its native lowering takes over
    if rule is None:
        params = _expand_params(eqn.params, platform, inside)
        return eqn if params is eqn.params else eqn.replace(params=params)
    if not isinstance(rule, InlineLowering):
        raise NotImplementedError(
            f"jit cannot compile the primitive '{prim.name}': its lowering {rule!r} is an MLIR "
            "lowering rule, and functrans has no MLIR. Register mlir.lower_fun(fun, "
            "multiple_results=...) with fun written with jax.numpy/lax operations, or no "
            "lowering, so that jit runs the primitive's impl on the host")
    body = rule.trace(prim, [x.aval for x in eqn.inputs], eqn.params)
    for i, (got, want) in enumerate(zip(body.out_avals, [v.aval for v in eqn.outputs])):
        if got.shape != want.shape or got.dtype != want.dtype:
            raise TypeError(f"the lowering of '{prim.name}' returned {got.str_short()} for "
                            f"output {i}, but its abstract evaluation says "
                            f"{want.str_short()}")
    if len(body.outvars) != len(eqn.outputs):
        raise TypeError(f"the lowering of '{prim.name}' returned {len(body.outvars)} outputs, "
                        f"but its abstract evaluation says {len(eqn.outputs)}")
    body = expand_lowerings(body, platform,
                            inside + ((prim, [x.aval for x in eqn.inputs], eqn.params),))
    return Eqn(jit_p, eqn.inputs, eqn.outputs, {"jaxpr": body, "name": prim.name}, eqn.source)


def _expand_params(params, platform, inside):
    new, changed = {}, False
    for k, v in params.items():
        if isinstance(v, Jaxpr):
            e = expand_lowerings(v, platform, inside)
        elif isinstance(v, tuple) and any(isinstance(x, Jaxpr) for x in v):
            e = tuple(expand_lowerings(x, platform, inside) if isinstance(x, Jaxpr) else x
                      for x in v)
            e = v if all(a is b for a, b in zip(e, v)) else e
        else:
            e = v
        changed = changed or e is not v
        new[k] = e
    return new if changed else params
