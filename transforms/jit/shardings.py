"""``jit(in_shardings=, out_shardings=)``: where a jitted function's arguments and results
are placed.

A functrans array holds its global value whatever its sharding, so a sharding changes where
the value is said to live (``x.sharding``), not what the program computes: arguments are
placed on their ``in_shardings`` before the call and results on their ``out_shardings``
after it (inside an enclosing transformation both are the caller's business, as for
``device_put``). Each is a pytree prefix of the positional arguments (results) whose leaves
are ``Sharding`` s, ``PartitionSpec`` s (on the mesh ``set_mesh`` sets when the function is
called) or None (unspecified); a single one applies to all.

    >>> mesh = ft.make_mesh((2,), ("x",))
    >>> f = ft.jit(lambda a: a * 2, out_shardings=ft.NamedSharding(mesh, P("x")))
    >>> f(fnp.arange(4.0)).sharding.spec
    PartitionSpec('x')
"""
from __future__ import annotations

from functrans.core.mesh import Mesh, NamedSharding, PartitionSpec, Sharding, context_sharding
from functrans.core.placement import device_put
from functrans.core.tree import broadcast_prefix, tree_flatten, tree_unflatten


def check_shardings(shardings, what: str):
    """``shardings`` if it is a valid prefix spec (None when it specifies nothing). A bare
    PartitionSpec means a NamedSharding on the context mesh at call time (``set_mesh``)."""
    leaves, _ = tree_flatten(shardings, is_leaf=lambda x: x is None or _is_leaf(x))
    for leaf in leaves:
        if leaf is not None and not isinstance(leaf, (Sharding, PartitionSpec)):
            raise TypeError(f"jit: {what} must hold Shardings (or None), got "
                            f"{type(leaf).__name__}: {leaf!r:.60}")
    return None if all(leaf is None for leaf in leaves) else shardings


def _is_leaf(x) -> bool:
    return isinstance(x, (Sharding, PartitionSpec))


def place(tree, shardings, what: str):
    """``tree`` with each array put on its sharding from the prefix ``shardings``."""
    if isinstance(shardings, (Sharding, PartitionSpec)):
        return device_put(tree, _resolved(shardings, what))
    leaves, treedef = tree_flatten(tree)
    try:
        per_leaf = broadcast_prefix(shardings, tree, is_leaf=None, what=what,
                                    prefix_is_leaf=_is_leaf)
    except ValueError as e:
        raise ValueError(f"jit: {what} does not match the structure it applies to: {e}") from None
    leaves = [x if s is None else device_put(x, _resolved(s, what))
              for x, s in zip(leaves, per_leaf)]
    return tree_unflatten(treedef, leaves)


def _resolved(sharding, what: str):
    if isinstance(sharding, PartitionSpec):
        return context_sharding(sharding, f"jit: {what}", TypeError)
    return sharding


def shard_map_result_shardings(jaxpr) -> list | None:
    """Per result of ``jaxpr``, the sharding a ``shard_map`` at its top level gives it (its
    ``out_specs`` on its mesh; None for results computed otherwise), or None when there is
    none: ``jit(shard_map(f, ...))`` returns what ``shard_map`` alone returns, as in JAX.

        >>> shard_map_result_shardings(ft.make_jaxpr(lambda x: x)(1.0)) is None
        True
    """
    made = {}
    for eqn in jaxpr.eqns:
        if eqn.prim.name != "shard_map" or not isinstance(eqn.params.get("mesh"), Mesh) \
                or eqn.params["mesh"].size <= 1:
            continue
        for v, spec in zip(eqn.outputs, eqn.params["out_specs"]):
            if len(spec) == v.aval.ndim:
                parts = [None if not n else n[0] if len(n) == 1 else tuple(n) for n in spec]
                made[v] = NamedSharding(eqn.params["mesh"], PartitionSpec(*parts))
    if not made:
        return None
    return [made.get(v) if not hasattr(v, "val") else None for v in jaxpr.outvars]
