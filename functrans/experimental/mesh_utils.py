"""Device meshes as arrays of devices (``jax.experimental.mesh_utils``), for ``Mesh``.

functrans's devices have no physical topology (CPU devices are logical), so a mesh lays the
devices out in their order, as JAX does on CPU::

    >>> from functrans.experimental import mesh_utils
    >>> mesh_utils.create_device_mesh((2,), ft.devices()[:2])
    array([CpuDevice(id=0), CpuDevice(id=1)], dtype=object)
"""
from __future__ import annotations

import collections
import math

import numpy as np

from ..core.devices import devices as _all_devices

__all__ = ["create_device_mesh", "create_hybrid_device_mesh"]


def create_device_mesh(mesh_shape, devices=None, *, contiguous_submeshes: bool = False,
                       allow_split_physical_axes: bool = False):
    """A NumPy array of ``devices`` (default: ``ft.devices()``) shaped ``mesh_shape``, in their
    order; the number of devices must be the product of ``mesh_shape``. The topology options
    (``contiguous_submeshes``, ``allow_split_physical_axes``) have nothing to choose among
    logical devices.

    >>> from functrans.experimental import mesh_utils
    >>> mesh_utils.create_device_mesh((1, 2), ft.devices()[:2]).shape
    (1, 2)
    """
    devices = list(_all_devices() if devices is None else devices)
    mesh_shape = tuple(int(n) for n in mesh_shape)
    if math.prod(mesh_shape) != len(devices):
        raise ValueError(f"Number of devices {len(devices)} must equal the product of "
                         f"mesh_shape {mesh_shape}")
    mesh = np.empty(len(devices), dtype=object)
    mesh[:] = devices
    return mesh.reshape(mesh_shape)


def create_hybrid_device_mesh(mesh_shape, dcn_mesh_shape, devices=None, *,
                              process_is_granule: bool = False,
                              should_sort_granules_by_key: bool = True,
                              allow_split_physical_axes: bool = False):
    """A mesh of granules of devices, as JAX's: the devices are grouped by their
    ``slice_index`` (by ``process_index`` with ``process_is_granule=True``), each granule laid
    out as ``create_device_mesh(mesh_shape, granule)`` and the granules tiled
    ``dcn_mesh_shape``; the result's shape is their elementwise product. functrans's devices
    have no ``slice_index`` (no TPU slices): they are grouped by process.

    >>> from functrans.experimental import mesh_utils
    >>> mesh_utils.create_hybrid_device_mesh((2,), (1,), ft.devices()[:2],
    ...                                      process_is_granule=True).shape
    (2,)
    """
    devices = list(_all_devices() if devices is None else devices)
    attr = "process_index" if process_is_granule else "slice_index"
    if not hasattr(devices[0], attr):
        raise ValueError(f"Device {devices[0]} does not have attribute {attr}. See "
                         "`process_is_granule` option.")
    by_key = collections.defaultdict(list)
    for d in devices:
        by_key[getattr(d, attr)].append(d)
    granules = ([by_key[k] for k in sorted(by_key)] if should_sort_granules_by_key
                else list(by_key.values()))
    dcn_mesh_shape = tuple(int(n) for n in dcn_mesh_shape)
    if math.prod(dcn_mesh_shape) != len(granules):
        raise ValueError(f"Number of slices/granules {len(granules)} must equal the product "
                         f"of dcn_mesh_shape {dcn_mesh_shape}")
    meshes = [create_device_mesh(mesh_shape, g) for g in granules]
    if len(meshes[0].shape) != len(dcn_mesh_shape):
        raise ValueError(f"mesh_shape {tuple(mesh_shape)} and dcn_mesh_shape {dcn_mesh_shape} "
                         "must have the same number of dimensions")
    order = np.arange(len(granules)).reshape(dcn_mesh_shape)
    blocks = np.empty(order.shape, dtype=object)
    for pos, i in np.ndenumerate(order):
        blocks[pos] = meshes[i]
    return np.block(blocks.tolist())
