"""Meshes, partition specs and shardings (``functrans.sharding`` re-exports them), as in JAX.

A ``Mesh`` arranges devices in an n-d grid with named axes; a ``PartitionSpec`` says, per array
dimension, which mesh axes split it; a ``NamedSharding`` pairs the two::

    >>> import numpy as np
    >>> from functrans.core.devices import Device
    >>> mesh = Mesh(np.array([Device("cpu", 0), Device("cpu", 1)]), ("x",))
    >>> s = NamedSharding(mesh, PartitionSpec("x"))
    >>> s.shard_shape((4, 3))
    (2, 3)
"""
from __future__ import annotations

import math

import numpy as np

from .devices import Device, default_device, processes


class PartitionSpec(tuple):
    """Per array dimension: None (not split), a mesh axis name, or a tuple of names.

    >>> PartitionSpec("x", None)
    PartitionSpec('x', None)
    """

    def __new__(cls, *parts):
        return super().__new__(cls, parts)

    def __repr__(self):
        return "PartitionSpec(" + ", ".join(map(repr, self)) + ")"

    def __reduce__(self):
        return (PartitionSpec, tuple(self))


P = PartitionSpec


def canonical_spec(spec, ndim: int, what: str) -> tuple:
    """``spec`` as one tuple of mesh-axis names per dimension (length ``ndim``)."""
    parts = tuple(spec) if spec is not None else ()
    if len(parts) > ndim:
        raise ValueError(f"{what}: the partition spec {PartitionSpec(*parts)} has "
                         f"{len(parts)} entries but the array has only {ndim} dimensions")
    out = []
    for p in parts:
        if p is None:
            out.append(())
        elif isinstance(p, (tuple, list)):
            out.append(tuple(p))
        else:
            out.append((p,))
    return tuple(out) + ((),) * (ndim - len(out))


class Mesh:
    """Devices in a grid with named axes: ``Mesh(np.array(devices).reshape(2, 2), ("x", "y"))``.

    >>> Mesh(np.array([Device("cpu", 0)]), ("x",)).shape
    {'x': 1}
    """

    def __init__(self, devices, axis_names):
        devs = np.asarray(devices, dtype=object)
        names = (axis_names,) if isinstance(axis_names, str) else tuple(axis_names)
        if devs.ndim != len(names):
            raise ValueError(f"Mesh: {devs.ndim}-d device array but {len(names)} axis names "
                             f"{names}")
        if len(set(names)) != len(names):
            raise ValueError(f"Mesh: axis names must be distinct, got {names}")
        flat = list(devs.flat)
        if not all(isinstance(d, Device) for d in flat):
            raise TypeError("Mesh: devices must be functrans devices (from ft.devices())")
        if len(set(flat)) != len(flat):
            raise ValueError(f"Mesh: a device appears twice in {flat}")
        self.devices, self.axis_names = devs, names
        # A mesh never changes: what dispatch asks of it is computed once.
        self._shape = dict(zip(names, devs.shape))
        self._coords = [dict(zip(names, c)) for c in np.ndindex(*devs.shape)]
        self._key = (names, devs.shape, tuple(d.id for d in flat))
        self._hash = hash(self._key)

    @property
    def shape(self) -> dict:
        return dict(self._shape)

    @property
    def size(self) -> int:
        return self.devices.size

    def coords(self):
        """Every shard's coordinates (name -> index), in row-major device order."""
        return self._coords

    def key(self) -> tuple:
        return self._key

    def __eq__(self, other):
        return isinstance(other, Mesh) and self.key() == other.key()

    def __hash__(self):
        return self._hash

    def __enter__(self):  # accepted for JAX compatibility: specs always name their mesh here
        return self

    def __exit__(self, *exc):
        return False

    def __repr__(self):
        return f"Mesh({self.shape}, devices={[d.id for d in self.devices.flat]})"

    @property
    def abstract_mesh(self) -> "AbstractMesh":
        """The mesh's axis sizes and names, without its devices."""
        return AbstractMesh(tuple(self._shape.values()), self.axis_names)

    @property
    def empty(self) -> bool:
        return False

    @property
    def are_all_axes_explicit(self) -> bool:
        return False


class AbstractMesh:
    """A mesh's axis sizes and names without its devices (``jax.sharding.AbstractMesh``): what
    the sharding of an abstract value names. The empty one, ``AbstractMesh((), ())``, is the
    mesh of every value that is not split over devices in the global view, which is every
    functrans value outside ``shard_map``/``pmap`` (see ``ShapedArray.sharding``).

    >>> AbstractMesh((2,), ("x",)).shape, AbstractMesh((), ()).empty
    ({'x': 2}, True)
    """

    def __init__(self, axis_sizes=(), axis_names=(), axis_types=None):
        self.axis_sizes, self.axis_names = tuple(axis_sizes), tuple(axis_names)
        if len(self.axis_sizes) != len(self.axis_names):
            raise ValueError(f"AbstractMesh: {len(self.axis_sizes)} axis sizes but "
                             f"{len(self.axis_names)} axis names")
        self.axis_types = tuple(axis_types) if axis_types is not None else \
            ("Auto",) * len(self.axis_names)

    @property
    def shape(self) -> dict:
        return dict(zip(self.axis_names, self.axis_sizes))

    @property
    def size(self) -> int:
        return math.prod(self.axis_sizes)

    @property
    def empty(self) -> bool:
        return not self.axis_names

    @property
    def are_all_axes_explicit(self) -> bool:
        # functrans's meshes have no explicit (typed) axes; JAX's empty mesh says False too.
        return bool(self.axis_types) and all(str(t).endswith("Explicit")
                                             for t in self.axis_types)

    @property
    def abstract_mesh(self) -> "AbstractMesh":
        return self

    def __eq__(self, other):
        return isinstance(other, AbstractMesh) and (self.axis_sizes, self.axis_names) == (
            other.axis_sizes, other.axis_names)

    def __hash__(self):
        return hash((self.axis_sizes, self.axis_names))

    def __repr__(self):
        axes = ", ".join(f"'{n}': {k}" for n, k in self.shape.items())
        return f"AbstractMesh(({axes}), axis_types={self.axis_types})"


EMPTY_MESH = AbstractMesh((), ())


def make_mesh(axis_shapes, axis_names, devices=None) -> Mesh:
    """A mesh of the first ``prod(axis_shapes)`` devices.

    >>> from functrans.core.config import config
    >>> with config.override(num_cpu_devices=2):
    ...     make_mesh((2,), ("x",))
    Mesh({'x': 2}, devices=[0, 1])
    """
    from .devices import devices as all_devices
    n = math.prod(axis_shapes)
    devs = list(devices) if devices is not None else all_devices()
    if n > len(devs):
        raise ValueError(f"make_mesh: a {tuple(axis_shapes)} mesh needs {n} devices, but "
                         f"there are {len(devs)}; raise num_cpu_devices (ft.config.update("
                         "'num_cpu_devices', n)) or FUNCTRANS_NUM_CPU_DEVICES")
    return Mesh(np.array(devs[:n], dtype=object).reshape(tuple(axis_shapes)), axis_names)


def block_index(dim_names, coords, sizes) -> tuple[int, int]:
    """(block number, number of blocks) of a dimension split over ``dim_names`` (row-major)."""
    idx, count = 0, 1
    for n in dim_names:
        idx = idx * sizes[n] + coords[n]
        count *= sizes[n]
    return idx, count


def shard_slices(shape, spec, coords, sizes) -> tuple:
    """The slices of a global array of ``shape`` held by the shard at ``coords``."""
    out = []
    for dim, names in zip(shape, spec):
        i, k = block_index(names, coords, sizes)
        b = dim // k
        out.append(slice(i * b, (i + 1) * b))
    return tuple(out)


class Sharding:
    """How an array's elements are laid out over devices."""

    def devices_indices_map(self, shape) -> dict:
        raise NotImplementedError

    @property
    def device_set(self) -> set:
        return set(self.devices_indices_map(()).keys())

    @property
    def addressable_devices(self) -> set:
        return {d for d in self.device_set if d.process_index == processes.index}

    def shard_shape(self, shape) -> tuple:
        idx = next(iter(self.devices_indices_map(shape).values()))
        return tuple(len(range(*s.indices(n))) for s, n in zip(idx, shape))


class SingleDeviceSharding(Sharding):
    """The whole array on one device."""

    def __init__(self, device: Device):
        self.device = device

    def devices_indices_map(self, shape) -> dict:
        return {self.device: tuple(slice(None) for _ in shape)}

    def __eq__(self, other):
        return isinstance(other, SingleDeviceSharding) and other.device == self.device

    def __hash__(self):
        return hash(self.device)

    def __repr__(self):
        return f"SingleDeviceSharding(device={self.device!r})"


class NamedSharding(Sharding):
    """An array split over a mesh as ``spec`` says (replicated over unnamed mesh axes)."""

    def __init__(self, mesh: Mesh, spec: PartitionSpec = PartitionSpec()):
        if not isinstance(mesh, (Mesh, AbstractMesh)):
            raise TypeError(f"NamedSharding: expected a Mesh, got {type(mesh).__name__}")
        self.mesh, self.spec = mesh, PartitionSpec(*spec)
        for names in canonical_spec(self.spec, len(self.spec), "NamedSharding"):
            for n in names:
                if n not in mesh.shape:
                    raise ValueError(f"NamedSharding: {self.spec} names axis {n!r}, which is "
                                     f"not an axis of {mesh}")

    @property
    def device_set(self) -> set:
        return set(self._concrete_mesh().devices.flat)

    def _concrete_mesh(self) -> Mesh:
        if isinstance(self.mesh, AbstractMesh):
            raise ValueError(f"{self!r} names an abstract mesh, which has no devices: "
                             "place values with a Mesh of devices")
        return self.mesh

    def shard_shape(self, shape) -> tuple:
        spec = canonical_spec(self.spec, len(shape), "NamedSharding")
        sizes = self.mesh.shape
        check_divisible(shape, spec, sizes, "NamedSharding")
        return tuple(d // math.prod(sizes[n] for n in names) for d, names in zip(shape, spec))

    @property
    def is_fully_replicated(self) -> bool:
        return all(not names for names in canonical_spec(self.spec, len(self.spec), ""))

    def devices_indices_map(self, shape) -> dict:
        self._concrete_mesh()
        spec = canonical_spec(self.spec, len(shape), "NamedSharding")
        sizes = self.mesh.shape
        check_divisible(shape, spec, sizes, "NamedSharding")
        return {d: shard_slices(shape, spec, c, sizes)
                for d, c in zip(self.mesh.devices.flat, self.mesh.coords())}

    def __eq__(self, other):
        return (isinstance(other, NamedSharding) and other.mesh == self.mesh
                and tuple(other.spec) == tuple(self.spec))

    def __hash__(self):
        return hash((self.mesh, tuple(self.spec)))

    def __repr__(self):
        return f"NamedSharding(mesh={self.mesh!r}, spec={self.spec!r})"


def check_divisible(shape, spec, sizes, what) -> None:
    for d, (dim, names) in enumerate(zip(shape, spec)):
        k = math.prod(sizes[n] for n in names)
        if dim % k:
            raise ValueError(f"{what}: dimension {d} of an array of shape {tuple(shape)} has "
                             f"size {dim}, which the mesh axes {names} (of {k} shards) do not "
                             "divide evenly")


def default_sharding() -> SingleDeviceSharding:
    return SingleDeviceSharding(default_device())


__all__ = ["AbstractMesh", "Mesh", "PartitionSpec", "P", "NamedSharding",
           "SingleDeviceSharding", "Sharding", "make_mesh"]
