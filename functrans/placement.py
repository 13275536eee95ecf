"""Placing values on devices: ``device_put`` and ``block_until_ready`` (defined in
``functrans/core/placement.py``, where core and the transformations use them).

This module adds the step core cannot take itself: an array spread over processes (MPI)
moved to another layout of its mesh is resharded by a partitioned program, ``jit`` of
``with_sharding_constraint``. It is installed into core when functrans is imported.

    >>> ft.device_put(fnp.arange(2), ft.devices()[0]).devices() == {ft.devices()[0]}
    True
"""
from __future__ import annotations

from .core import placement as _core
from .core.placement import block_until_ready, device_put  # noqa: F401


def _reshard_across(x, sharding):
    """An array spread over processes laid out anew: a partitioned program moves the blocks."""
    from .core.mesh import NamedSharding
    from .lax.sharding_ops import with_sharding_constraint
    from .transforms.jit.api import jit
    if not isinstance(sharding, NamedSharding) or sharding.mesh != x.sharding.mesh:
        raise ValueError(f"device_put: an array spread over processes on {x.sharding} can be "
                         f"moved to another layout of the same mesh only, not to {sharding}")
    return jit(lambda v: with_sharding_constraint(v, sharding))(x)


_core.install_reshard(_reshard_across)
