"""Meshes and shardings, as in ``jax.sharding``.

    >>> mesh = ft.sharding.make_mesh((2,), ("x",))
    >>> x = ft.device_put(fnp.arange(4.0), ft.sharding.NamedSharding(mesh, P("x")))
    >>> [s.data.tolist() for s in x.addressable_shards]
    [[0.0, 1.0], [2.0, 3.0]]
"""
from .core.mesh import (AbstractMesh, Mesh, NamedSharding, P, PartitionSpec,  # noqa: F401
                        Sharding, SingleDeviceSharding, make_mesh)

__all__ = ["AbstractMesh", "Mesh", "NamedSharding", "P", "PartitionSpec", "Sharding",
           "SingleDeviceSharding", "make_mesh"]
