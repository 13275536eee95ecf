"""``jax.experimental.shard_map``: the older home of ``shard_map``, with its older argument
names (``check_rep`` is ``check_vma``; ``auto`` names the mesh axes *not* mapped over).

    >>> from functrans.experimental.shard_map import shard_map
    >>> mesh = ft.sharding.make_mesh((2,), ("x",))
    >>> shard_map(lambda b: b * 2, mesh, P("x"), P("x"))(fnp.arange(4.0))
    Array([0., 2., 4., 6.], dtype=float64)
"""
from __future__ import annotations

from ..spmd import shard_map as _shard_map

__all__ = ["shard_map"]


def shard_map(f, mesh, in_specs, out_specs, check_rep: bool = True, auto=frozenset()):
    """``ft.shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs,
    check_vma=check_rep, axis_names=<the mesh axes not in auto>)``."""
    auto = frozenset(auto)
    if not auto <= set(mesh.axis_names):
        raise ValueError(f"shard_map: auto={set(auto)} must be a subset of the mesh's axis "
                         f"names {mesh.axis_names}")
    axis_names = frozenset(n for n in mesh.axis_names if n not in auto) if auto else frozenset()
    return _shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs,
                      axis_names=axis_names, check_vma=check_rep)
