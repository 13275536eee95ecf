"""Arrays whose shards live in several processes: each process holds only its own devices'
blocks (JAX's non-fully-addressable ``jax.Array``).

An Array placed on a mesh whose devices all belong to this process keeps its global value
(CPU devices share the host's memory; its shards are views). Across processes (MPI) a
``DistributedArray`` holds one buffer per addressable device instead, so no process holds
the global value: ``jit`` runs programs over its shards (``transforms/partition``),
``.addressable_shards`` gives the local blocks, and ``multihost_utils.process_allgather``
collects the whole. Reading the value in another way raises, as JAX does::

    >>> mesh = ft.make_mesh((2,), ("x",))
    >>> blocks = {d: np.full(2, float(d.id)) for d in mesh.devices.flat}
    >>> a = DistributedArray((4,), np.float64, False, ft.NamedSharding(mesh, P("x")), blocks)
    >>> a.local_nbytes, [s.data.tolist() for s in a.addressable_shards]
    (32, [[0.0, 0.0], [1.0, 1.0]])
    >>> np.asarray(a)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    RuntimeError: Fetching the value of an Array that spans devices of other processes ...
"""
from __future__ import annotations

import math
from typing import Callable, Optional

import numpy as np

from .array import Array, Shard
from .avals import ShapedArray

_NOT_HERE = ("Fetching the value of an Array that spans devices of other processes (a "
             "non-fully-addressable array, shape {shape}, sharding {sharding}) is not possible "
             "in one process: pass it to a jitted function (which runs on each process's "
             "shards), read this process's blocks with .addressable_shards, or gather the "
             "whole with functrans.experimental.multihost_utils.process_allgather")


class DistributedArray(Array):
    """An Array of which this process holds only its devices' blocks."""

    __slots__ = ("_shape", "_dtype", "_blocks")
    _host_backed = False
    _spread = True

    def __init__(self, shape, dtype, weak_type, sharding, blocks: dict):
        self._value = None
        self._shape, self._dtype = tuple(shape), np.dtype(dtype)
        self._weak, self._sharding = bool(weak_type), sharding
        expected = sharding.shard_shape(self._shape)
        mine = list(sharding.addressable_devices_indices_map(self._shape))  # in mesh order
        for dev in mine:
            b = blocks.get(dev)
            if b is None or b.shape != expected or b.dtype != self._dtype:
                got = None if b is None else f"{b.dtype}{list(b.shape)}"
                raise ValueError(f"an array of shape {self._shape} on {sharding} needs a "
                                 f"{self._dtype}{list(expected)} block on {dev}, got {got}")
            b.setflags(write=False)
        self._blocks = {d: blocks[d] for d in mine}

    shape = property(lambda self: self._shape)
    dtype = property(lambda self: self._dtype)
    ndim = property(lambda self: len(self._shape))
    size = property(lambda self: math.prod(self._shape))
    nbytes = property(lambda self: self.size * self._dtype.itemsize)
    itemsize = property(lambda self: self._dtype.itemsize)

    @property
    def aval(self) -> ShapedArray:
        return ShapedArray(self._shape, self._dtype, self._weak)

    @property
    def is_fully_addressable(self) -> bool:
        return False

    @property
    def addressable_shards(self) -> list:
        index = self._sharding.addressable_devices_indices_map(self._shape)
        replicas = self._sharding.replica_ids(self._shape)
        return [Shard(d, index[d], Array._wrap(b, self._weak), replicas[d])
                for d, b in self._blocks.items()]

    def block(self, device) -> np.ndarray:
        """This process's block on ``device`` (read-only)."""
        return self._blocks[device]

    @property
    def local_nbytes(self) -> int:
        """Bytes this process holds for the array (its devices' blocks)."""
        return sum(b.nbytes for b in self._blocks.values())

    def _not_here(self, *_, **__):
        raise RuntimeError(_NOT_HERE.format(shape=self._shape, sharding=self._sharding))

    __array__ = __bool__ = __int__ = __float__ = __complex__ = __index__ = _not_here
    __iter__ = item = tolist = _not_here

    def __str__(self):
        return repr(self)

    def __format__(self, spec):
        return repr(self)

    def __len__(self):
        if not self._shape:
            raise TypeError("len() of unsized object (a 0-d Array)")
        return self._shape[0]

    def __repr__(self):
        weak = ", weak_type=True" if self._weak else ""
        return (f"Array(shape={self._shape}, dtype={self._dtype.name}{weak}, "
                f"sharding={self._sharding}, not fully addressable)")

    def _with_sharding(self, sharding) -> "Array":
        if sharding == self._sharding:
            return self
        raise RuntimeError(_NOT_HERE.format(shape=self._shape, sharding=self._sharding)
                           + " (resharding it is done by a jitted function: "
                           "jit(f, out_shardings=...))")

    def __reduce__(self):
        self._not_here()


def from_local_blocks(shape, dtype, weak_type, sharding, blocks: dict) -> Array:
    """An Array on ``sharding`` from this process's ``{device: block}`` (a DistributedArray
    when other processes hold some of it; else the assembled global value)."""
    if all(d in blocks for d in sharding.device_set):
        out = np.empty(shape, dtype)
        for d, index in sharding.devices_indices_map(shape).items():
            out[index] = blocks[d]
        a = Array._wrap(out, weak_type)
        a._sharding = sharding
        return a
    return DistributedArray(shape, dtype, weak_type, sharding, blocks)


# apply(prim, args, params): an eager primitive application with some argument a
# DistributedArray, run as a program partitioned over the arrays' mesh. That is a
# transformation's work (transforms/partition/eager.py), which installs it when imported:
# core knows no transformation.
_apply_on_shards: Optional[Callable] = None


def install_apply_on_shards(apply: Callable) -> None:
    """Called once by ``transforms/partition/eager.py`` with how eager primitives run on
    arrays spread over processes (``EvalTrace`` calls :func:`apply_on_shards`)."""
    global _apply_on_shards
    _apply_on_shards = apply


def apply_on_shards(prim, args, params) -> list:
    """``prim.bind(*args, **params)`` where some argument is a DistributedArray."""
    return _apply_on_shards(prim, args, params)


def apply_on_mesh(prim, args, params):
    """``prim.bind(*args, **params)`` where some argument is placed by a NamedSharding: the
    results of the partitioned program, or None when it needs no partitioning (a mesh of one
    device, or a primitive that splits its arguments itself, as shard_map)."""
    if _apply_on_shards is None:
        return None
    from .devices import processes
    if processes.count > 1 and not all(getattr(x, "is_fully_addressable", True) for x in args):
        # An Array on a mesh spanning processes holds the whole value in each of them (as
        # pmap's results do): computed here as it is, not partitioned over devices this
        # process does not run.
        return None
    return _apply_on_shards(prim, args, params, optional=True)


__all__ = ["DistributedArray", "apply_on_mesh", "apply_on_shards", "from_local_blocks"]
