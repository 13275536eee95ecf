"""Global arrays from per-device blocks: ``make_array_from_callback``,
``make_array_from_single_device_arrays`` and ``make_array_from_process_local_data``, with JAX's
signatures.

An array whose devices are all this process's holds its global value (one host buffer; its
shards are views of it), so each function assembles that value from the blocks it is given
and records the sharding::

    >>> mesh = ft.make_mesh((2,), ("x",))
    >>> g = np.arange(4.0)
    >>> x = ft.make_array_from_callback((4,), ft.NamedSharding(mesh, P("x")), lambda i: g[i])
    >>> x.tolist(), [s.data.tolist() for s in x.addressable_shards]
    ([0.0, 1.0, 2.0, 3.0], [[0.0, 1.0], [2.0, 3.0]])

Across processes (MPI) each process keeps only its own devices' blocks: the result is a
``DistributedArray`` (not fully addressable), which jit computes with shard by shard.
"""
from __future__ import annotations

import numpy as np

from .array import Array
from .distributed_array import DistributedArray
from .devices import processes
from .mesh import Sharding, SingleDeviceSharding

__all__ = ["make_array_from_callback", "make_array_from_process_local_data",
           "make_array_from_single_device_arrays"]


def make_array_from_callback(shape, sharding, data_callback, dtype=None) -> Array:
    """The array of ``shape`` placed on ``sharding`` whose blocks ``data_callback`` gives:
    it is called once per addressable device with that device's index (a tuple of slices into
    the global array) and returns the block (an array of the shard's shape).

    >>> mesh = ft.make_mesh((2,), ("x",))
    >>> seen = []
    >>> x = ft.make_array_from_callback((2, 2), ft.NamedSharding(mesh, P(None, "x")),
    ...                                 lambda i: seen.append(i) or np.ones((2, 1)))
    >>> seen
    [(slice(None, None, None), slice(0, 1, None)), (slice(None, None, None), slice(1, 2, None))]
    """
    shape = _shape(shape, "make_array_from_callback")
    _check_sharding(sharding, "make_array_from_callback")
    if not callable(data_callback):
        raise TypeError(f"make_array_from_callback: data_callback must be callable, got "
                        f"{type(data_callback).__name__}")
    blocks = []
    for dev, index in sharding.addressable_devices_indices_map(shape).items():
        block = np.asarray(data_callback(index))
        blocks.append((index, block if dtype is None else block.astype(dtype)))
    return _assemble(shape, sharding, blocks, "make_array_from_callback")


def make_array_from_single_device_arrays(shape, sharding, arrays, *, dtype=None) -> Array:
    """The array of ``shape`` placed on ``sharding`` made of ``arrays``: one array per
    addressable device of the sharding, each placed on its device (``device_put(block,
    device)``) and of the shard's shape.

    >>> mesh = ft.make_mesh((2,), ("x",))
    >>> blocks = [ft.device_put(fnp.full(2, float(d.id)), d) for d in mesh.devices.flat]
    >>> ft.make_array_from_single_device_arrays((4,), ft.NamedSharding(mesh, P("x")), blocks)
    Array([0., 0., 1., 1.], dtype=float64)
    """
    what = "make_array_from_single_device_arrays"
    shape = _shape(shape, what)
    _check_sharding(sharding, what)
    arrays = list(arrays)
    indices = sharding.addressable_devices_indices_map(shape)
    if len(arrays) != len(indices):
        raise ValueError(f"{what}: expected {len(indices)} per-device arrays (one per device "
                         f"of the sharding this process addresses), but got {len(arrays)}")
    blocks, seen = [], {}
    for i, a in enumerate(arrays):
        if not isinstance(a, Array):
            raise TypeError(f"{what}: arrays[{i}] is a {type(a).__name__}; each must be an "
                            "Array on one device (ft.device_put(block, device))")
        s = a.sharding
        if not isinstance(s, SingleDeviceSharding):
            raise ValueError(f"{what}: arrays[{i}] is placed on {s}; each must be on one "
                             "device (ft.device_put(block, device))")
        if s.device in seen:
            raise ValueError(f"{what}: arrays[{seen[s.device]}] and arrays[{i}] are both on "
                             f"{s.device}; the arrays must be on distinct devices")
        if s.device not in indices:
            raise ValueError(f"{what}: arrays[{i}] is on {s.device}, which is not an "
                             f"addressable device of {sharding}")
        seen[s.device] = i
        blocks.append((indices[s.device], np.asarray(a) if dtype is None
                       else np.asarray(a).astype(dtype)))
    return _assemble(shape, sharding, blocks, what)


def make_array_from_process_local_data(sharding, local_data, global_shape=None) -> Array:
    """The array placed on ``sharding`` made of this process's data. With one process that is
    the whole array: ``global_shape`` must be None or ``local_data``'s shape.

    >>> mesh = ft.make_mesh((2,), ("x",))
    >>> x = ft.make_array_from_process_local_data(ft.NamedSharding(mesh, P("x")),
    ...                                           np.arange(4.0))
    >>> [s.data.tolist() for s in x.addressable_shards]
    [[0.0, 1.0], [2.0, 3.0]]
    """
    what = "make_array_from_process_local_data"
    _check_sharding(sharding, what)
    data = np.asarray(local_data)
    if processes.count > 1 and not all(d.process_index == processes.index
                                       for d in sharding.device_set):
        return _from_process_region(sharding, data, global_shape, what)
    if global_shape is not None and tuple(global_shape) != data.shape:
        raise ValueError(f"{what}: when the sharding's devices are all this process's, "
                         f"global_shape must be None or the shape of local_data, {data.shape}; "
                         f"got {tuple(global_shape)}")
    sharding.devices_indices_map(data.shape)  # checks that the sharding divides the shape
    return Array(data)._with_sharding(sharding)


def _from_process_region(sharding, data, global_shape, what):
    """This process's data is the box of the global array its devices' blocks cover."""
    if global_shape is None:  # each dimension split over processes grows by their count
        probe = tuple(d * 64 for d in data.shape)
        blocks = sharding.devices_indices_map(probe)
        mine = sharding.addressable_devices_indices_map(probe)
        global_shape = tuple(
            n * len({s[k].indices(p)[:2] for s in blocks.values()})
            // len({s[k].indices(p)[:2] for s in mine.values()})
            for k, (n, p) in enumerate(zip(data.shape, probe)))
    global_shape = _shape(global_shape, what)
    index = sharding.addressable_devices_indices_map(global_shape)
    starts = [min(i[k].indices(n)[0] for i in index.values()) for k, n in enumerate(global_shape)]
    stops = [max(i[k].indices(n)[1] for i in index.values()) for k, n in enumerate(global_shape)]
    if tuple(b - a for a, b in zip(starts, stops)) != data.shape:
        raise ValueError(f"{what}: this process's devices hold the part "
                         f"{_show(tuple(slice(a, b) for a, b in zip(starts, stops)))} of the "
                         f"global shape {global_shape}, but local_data has shape {data.shape}")
    blocks = {}
    for d, i in index.items():
        local = tuple(slice(s.indices(n)[0] - a, s.indices(n)[1] - a)
                      for s, n, a in zip(i, global_shape, starts))
        blocks[d] = np.array(data[local])
    return DistributedArray(global_shape, data.dtype, False, sharding, blocks)


def _shape(shape, what) -> tuple:
    try:
        return tuple(int(d) for d in shape)
    except TypeError:
        raise TypeError(f"{what}: shape must be a sequence of ints, got {shape!r:.60}") from None


def _check_sharding(sharding, what):
    if not isinstance(sharding, Sharding):
        raise TypeError(f"{what}: expected a Sharding (NamedSharding(mesh, spec), "
                        f"SingleDeviceSharding(device)), got {type(sharding).__name__}")


def _assemble(shape, sharding, blocks, what) -> Array:
    """The global array of ``shape`` from this process's ``(index, block)`` pairs (and, across
    processes, everyone else's), placed on ``sharding``."""
    expected = sharding.shard_shape(shape)
    dtypes = set()
    for index, block in blocks:
        if block.shape != expected:
            raise ValueError(f"{what}: the sharding {sharding} gives an array of shape {shape} "
                             f"blocks of shape {expected}, but the block for index "
                             f"{_show(index)} has shape {block.shape}")
        dtypes.add(block.dtype)
    if len(dtypes) > 1:
        raise ValueError(f"{what}: the blocks must have one dtype, got "
                         f"{sorted(map(str, dtypes))}")
    dtype = blocks[0][1].dtype if blocks else np.float64
    if processes.count > 1 and not all(d.process_index == processes.index
                                       for d in sharding.device_set):
        # Each process keeps its own devices' blocks (no global value anywhere).
        index = sharding.addressable_devices_indices_map(shape)
        by_index = {_key(i): b for i, b in blocks}
        return DistributedArray(shape, dtype, False, sharding, {
            d: np.array(by_index[_key(i)]) for d, i in index.items()})
    out = np.empty(shape, dtype)
    for index, block in blocks:
        out[index] = block
    return Array(out)._with_sharding(sharding)


def _key(index) -> tuple:
    return tuple((s.start, s.stop) for s in index)


def _show(index) -> str:
    return "[" + ", ".join(f"{'' if s.start is None else s.start}:"
                           f"{'' if s.stop is None else s.stop}" for s in index) + "]"
