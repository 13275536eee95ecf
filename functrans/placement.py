"""Placing values on devices: ``device_put`` and ``block_until_ready``.

On CPU every device shares the host's memory, so placing an array records where it lives
(its ``sharding``) and shares the buffer; the shards of a sharded array are views of it::

    >>> x = ft.device_put(fnp.ones(3), ft.devices()[0])
    >>> x.devices() == {ft.devices()[0]}
    True
"""
from __future__ import annotations

import numpy as np

from .core import background
from .core.array import Array
from .core.devices import Device, processes
from .core.distributed_array import DistributedArray, from_local_blocks
from .core.mesh import PartitionSpec, Sharding, SingleDeviceSharding, context_sharding
from .core.trace import Tracer, get_aval
from ._tree import tree_map


def device_put(x, device=None, *, src=None, donate=False, may_alias=None):
    """Place every array of the pytree ``x`` on ``device`` (a Device, a Sharding, or a
    PartitionSpec on the context mesh of ``set_mesh``; None: the default device).

    >>> ft.device_put([1.0, fnp.arange(2)])[1]
    Array([0, 1], dtype=int64)
    """
    if device is None:
        sharding = None
    elif isinstance(device, Device):
        sharding = SingleDeviceSharding(device)
    elif isinstance(device, Sharding):
        sharding = device
    elif isinstance(device, PartitionSpec):  # on the mesh set_mesh set, as in JAX
        sharding = context_sharding(device, "device_put", TypeError)
    else:
        raise TypeError(f"device_put: expected a Device or a Sharding, got "
                        f"{type(device).__name__}: {device!r}")

    def put(v):
        if isinstance(v, Tracer):
            return v  # inside a transformation placement is the caller's business
        if isinstance(v, DistributedArray):
            return v if sharding == v.sharding else _reshard_across(v, sharding)
        a = v if type(v) is Array else Array(v, weak_type=get_aval(v).weak_type)
        if sharding is not None:
            sharding.devices_indices_map(a.shape)  # checks that the spec divides the shape
            if not all(d.process_index == processes.index for d in sharding.device_set):
                return from_local_blocks(a.shape, a.dtype, a.weak_type, sharding, {
                    d: np.array(a._value[i] if i else a._value) for d, i in
                    sharding.addressable_devices_indices_map(a.shape).items()})
        return a._with_sharding(sharding)
    return tree_map(put, x)


def _reshard_across(x, sharding):
    """An array spread over processes laid out anew: a partitioned program moves the blocks."""
    from .core.mesh import NamedSharding
    from .lax.sharding_ops import with_sharding_constraint
    from .transforms.jit.api import jit
    if not isinstance(sharding, NamedSharding) or sharding.mesh != x.sharding.mesh:
        raise ValueError(f"device_put: an array spread over processes on {x.sharding} can be "
                         f"moved to another layout of the same mesh only, not to {sharding}")
    return jit(lambda v: with_sharding_constraint(v, sharding))(x)


def block_until_ready(x):
    """Wait until every array of ``x`` is computed and return ``x``. functrans computes
    synchronously, so this only waits for kernels still compiling in the background (tiered
    jit: a new program's first call runs on the interpreter meanwhile); calls made afterwards
    run compiled code, which is what the JAX idiom before timing expects.

    >>> ft.block_until_ready(fnp.ones(2))
    Array([1., 1.], dtype=float64)
    """
    background.wait_all()
    return x
