"""Meshes and shardings, as in ``jax.sharding``.

    >>> mesh = ft.sharding.make_mesh((2,), ("x",))
    >>> x = ft.device_put(fnp.arange(4.0), ft.sharding.NamedSharding(mesh, P("x")))
    >>> [s.data.tolist() for s in x.addressable_shards]
    [[0.0, 1.0], [2.0, 3.0]]
"""
from .core.mesh import (Mesh, NamedSharding, P, PartitionSpec, Sharding,  # noqa: F401
                        SingleDeviceSharding, make_mesh)

__all__ = ["Mesh", "NamedSharding", "P", "PartitionSpec", "Sharding", "SingleDeviceSharding",
           "make_mesh"]
