"""Placing values on devices: ``device_put`` and ``block_until_ready`` (public as
``functrans.device_put``).

On CPU every device shares the host's memory, so placing an array records where it lives
(its ``sharding``) and shares the buffer; the shards of a sharded array are views of it::

    >>> x = ft.device_put(fnp.ones(3), ft.devices()[0])
    >>> x.devices() == {ft.devices()[0]}
    True

They live in core because placing needs only core's types, and core (``out_sharding=``) and
the transformations (``jit``'s in/out_shardings) place values. One case needs more: an array
spread over processes moved to another layout is resharded by a partitioned program (``jit``
of ``with_sharding_constraint``), which core does not know; ``functrans/lax/sharding_ops.py``
installs that step (:func:`install_reshard`) when it is imported (with functrans).
"""
from __future__ import annotations

from typing import Callable, Optional

import numpy as np

from . import background
from .array import Array
from .devices import Device, processes
from .distributed_array import DistributedArray, from_local_blocks
from .unreduced import UnreducedArray, place_unreduced
from .mesh import PartitionSpec, Sharding, SingleDeviceSharding, context_sharding
from .trace import Tracer, get_aval
from .tree import tree_map

# reshard(x, sharding): a DistributedArray laid out anew (installed by lax.sharding_ops).
_reshard: Optional[Callable] = None


def install_reshard(reshard: Callable) -> None:
    """Called once by ``functrans.lax.sharding_ops`` with the step that lays an array spread
    over processes out anew (core knows no transformation and no user API)."""
    global _reshard
    _reshard = reshard


def device_put(x, device=None, *, src=None, donate=False, may_alias=None):
    """Place every array of the pytree ``x`` on ``device`` (a Device, a Sharding, or a
    PartitionSpec on the context mesh of ``set_mesh``; None: the default device).

    >>> ft.device_put([1.0, fnp.arange(2)])[1]
    Array([0, 1], dtype=int64)
    """
    layout = None
    if (hasattr(device, "layout") and hasattr(device, "sharding")
            and not isinstance(device, (Device, Sharding))):
        layout, device = device.layout, device.sharding  # a Format (jax.experimental.layout)
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
            return v if sharding == v.sharding else _reshard(v, sharding)
        if isinstance(v, UnreducedArray) and sharding == v.sharding:
            return v
        a = v if type(v) is Array else Array(v, weak_type=get_aval(v).weak_type)
        if getattr(getattr(sharding, "spec", None), "unreduced", None):
            return place_unreduced(a._value, sharding, a.weak_type)
        _check_row_major(layout, a.ndim)
        if sharding is not None:
            sharding.devices_indices_map(a.shape)  # checks that the spec divides the shape
            if not all(d.process_index == processes.index for d in sharding.device_set):
                return from_local_blocks(a.shape, a.dtype, a.weak_type, sharding, {
                    d: np.array(a._value[i] if i else a._value) for d, i in
                    sharding.addressable_devices_indices_map(a.shape).items()})
        return a._with_sharding(sharding)
    return tree_map(put, x)


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


def _check_row_major(layout, ndim: int) -> None:
    # Arrays live in row-major order on the host: a Format may ask for that layout only.
    order = getattr(layout, "major_to_minor", None)
    if order is not None and (tuple(order) != tuple(range(ndim)) or layout.tiling):
        raise ValueError(f"device_put: {layout!r} is not row-major; functrans keeps arrays "
                         "in row-major order")
