"""Meshes and shardings, as in ``jax.sharding``.

    >>> mesh = ft.sharding.make_mesh((2,), ("x",))
    >>> x = ft.device_put(fnp.arange(4.0), ft.sharding.NamedSharding(mesh, P("x")))
    >>> [s.data.tolist() for s in x.addressable_shards]
    [[0.0, 1.0], [2.0, 3.0]]

A functrans array holds its global value whatever its sharding: a sharding says where the
value lives (``x.sharding``, ``x.addressable_shards``; on Explicit axes also its type,
``ft.typeof(x)``), never what a program computes. ``reshard``, ``auto_axes`` and
``explicit_axes`` (``functrans/spmd/axis_types.py``) place concrete values; under jit they
record the layout for the partitioner.
"""
from __future__ import annotations

import contextlib

from .core.mesh import (AbstractDevice, AbstractMesh, AxisType, Mesh,  # noqa: F401
                        NamedSharding, P, PartitionSpec, Sharding, SingleDeviceSharding,
                        get_abstract_mesh, get_mesh, make_mesh, set_mesh, use_abstract_mesh)
from .spmd.axis_types import auto_axes, explicit_axes, reshard

__all__ = ["AbstractDevice", "AbstractMesh", "AxisType", "Mesh", "NamedSharding", "P", "PartitionSpec",
           "Sharding", "SingleDeviceSharding", "auto_axes", "explicit_axes",
           "get_abstract_mesh", "get_mesh", "make_mesh", "reshard", "set_mesh",
           "use_abstract_mesh", "use_mesh"]


@contextlib.contextmanager
def use_mesh(mesh: Mesh):
    """``with use_mesh(mesh):`` is ``with set_mesh(mesh):`` (JAX 0.6-0.7's name, which JAX
    0.10.2's ``jax.sharding`` no longer has; kept so that programs written for it run).

    >>> with ft.sharding.use_mesh(ft.make_mesh((2,), ("x",))):
    ...     ft.sharding.get_mesh().shape
    {'x': 2}
    """
    with set_mesh(mesh):
        yield
