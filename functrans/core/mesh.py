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

import contextlib
import dataclasses
import enum
import math
import threading

import numpy as np

from .devices import Device, default_device, processes


class PartitionSpec(tuple):
    """Per array dimension: None (not split), a mesh axis name, or a tuple of names; and, as
    JAX 0.10.2's, the mesh axes over which the value is ``unreduced`` (each device holds a
    partial sum of it) or ``reduced`` (each holds all of it, and its cotangent is unreduced).

    >>> PartitionSpec("x", None)
    PartitionSpec('x', None)
    >>> PartitionSpec("x", unreduced={"y"}).unreduced
    frozenset({'y'})
    """

    def __new__(cls, *parts, unreduced=frozenset(), reduced=frozenset()):
        self = super().__new__(cls, parts)
        self.unreduced = _axis_set(unreduced, "unreduced")
        self.reduced = _axis_set(reduced, "reduced")
        if self.unreduced or self.reduced:
            _check_unreduced(parts, self.unreduced, self.reduced)
        return self

    @property
    def partitions(self) -> tuple:
        """The per-dimension entries (JAX's ``spec.partitions``)."""
        return tuple(self)

    def update(self, partitions=None, unreduced=None, reduced=None) -> "PartitionSpec":
        """This spec with some parts replaced (JAX's ``spec.update``).

        >>> PartitionSpec("x").update(unreduced={"y"})
        PartitionSpec('x', unreduced={'y'})
        """
        return PartitionSpec(*(self if partitions is None else partitions),
                             unreduced=self.unreduced if unreduced is None else unreduced,
                             reduced=self.reduced if reduced is None else reduced)

    def __eq__(self, other):
        if isinstance(other, PartitionSpec) and (self.unreduced or self.reduced or
                                                 other.unreduced or other.reduced):
            return (tuple.__eq__(self, other) and self.unreduced == other.unreduced
                    and self.reduced == other.reduced)
        return tuple.__eq__(self, other)

    def __ne__(self, other):
        return not self == other

    def __hash__(self):
        if self.unreduced or self.reduced:
            return hash((tuple(self), self.unreduced, self.reduced))
        return tuple.__hash__(self)

    def __repr__(self):
        parts = ", ".join(map(repr, self))
        extra = [f"{k}={set(v)!r}" for k, v in (("unreduced", self.unreduced),
                                                   ("reduced", self.reduced)) if v]
        return "PartitionSpec(" + ", ".join(([parts] if parts else []) + extra) + ")"

    def __reduce__(self):
        return (_make_spec, (tuple(self), self.unreduced, self.reduced))


def _make_spec(parts, unreduced, reduced) -> PartitionSpec:
    return PartitionSpec(*parts, unreduced=unreduced, reduced=reduced)


def _axis_set(axes, what) -> frozenset:
    if isinstance(axes, frozenset):
        return axes
    if not isinstance(axes, set):
        raise TypeError(f"{what} argument of PartitionSpec should of type `frozenset` or `set`. "
                        f"Got type {axes}")
    return frozenset(axes)


def _check_unreduced(parts, unreduced, reduced) -> None:
    """JAX's checks: unreduced and reduced axes are mesh axes, apart from each other and
    from the axes splitting dimensions."""
    for what, axes in (("unreduced", unreduced), ("reduced", reduced)):
        if None in axes:
            raise ValueError(f"{what} cannot contain None. All elements in {what} should "
                             "refer to the mesh axes.")
    if unreduced & reduced:
        raise ValueError("`unreduced` and `reduced` argument to PartitionSpec cannot overlap. "
                         f"Got unreduced: {unreduced} and reduced: {reduced}")
    for part in parts:
        for n in part if isinstance(part, tuple) else (part,):
            for what, axes in (("unreduced", unreduced), ("reduced", reduced)):
                if n in axes:
                    raise ValueError(f"partitions cannot overlap with {what} axes passed to "
                                     f"PartitionSpec. Got partitions: {parts} and {what} "
                                     f"axes: {axes}")


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


class AxisType(enum.Enum):
    """How a mesh axis is used (``jax.sharding.AxisType``): ``Auto`` (the compiler decides
    how values are split over it), ``Explicit`` (splits are part of values' types) or
    ``Manual`` (inside ``shard_map``, each device holds its block).

    functrans computes every value's global view whatever the axis types say, so they are
    recorded (meshes print and compare them, as in JAX) but change no result.

    >>> AxisType.Explicit, str(AxisType.Auto)
    (Explicit, 'AxisType.Auto')
    """
    Auto = enum.auto()
    Explicit = enum.auto()
    Manual = enum.auto()

    def __repr__(self):
        return self.name


def canonical_axis_types(axis_types, names, default: AxisType) -> tuple:
    """``axis_types`` as one AxisType per axis name (a single AxisType applies to all)."""
    if axis_types is None:
        return (default,) * len(names)
    types = (axis_types,) if isinstance(axis_types, AxisType) else tuple(axis_types)
    if not all(isinstance(t, AxisType) for t in types):
        raise TypeError(f"axis_types must be jax.sharding.AxisType members (AxisType.Auto, "
                        f"AxisType.Explicit, AxisType.Manual), got {types!r}")
    if len(types) == 1 and len(names) > 1:
        types = types * len(names)
    if len(types) != len(names):
        raise ValueError(f"Number of axis names should match the number of axis_types. Got "
                         f"axis_names={tuple(names)} and axis_types={types}")
    return types


def _axes_repr(names, sizes) -> str:
    return ", ".join(f"{n!r}: {k}" for n, k in zip(names, sizes))


class Mesh:
    """Devices in a grid with named axes: ``Mesh(np.array(devices).reshape(2, 2), ("x", "y"))``;
    ``axis_types`` (default: all ``AxisType.Auto``, as in JAX) says how each axis is used.

    >>> Mesh(np.array([Device("cpu", 0)]), ("x",)).shape
    {'x': 1}
    >>> Mesh(np.array([Device("cpu", 0)]), ("x",))
    Mesh(axis_sizes=(1,), axis_names=('x',), axis_types=(Auto,))
    """

    def __init__(self, devices, axis_names, axis_types=None):
        devs = np.asarray(devices, dtype=object)
        names = (axis_names,) if isinstance(axis_names, str) else tuple(axis_names)
        if not names and devs.ndim == 0:  # JAX's empty mesh: what get_mesh() gives outside
            self._init(devs, names, ())  # any mesh context
            return
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
        self._init(devs, names, canonical_axis_types(axis_types, names, AxisType.Auto))

    def _init(self, devs, names, types):
        self.devices, self.axis_names, self.axis_types = devs, names, types
        # A mesh never changes: what dispatch asks of it is computed once.
        self._shape = dict(zip(names, devs.shape))
        self._coords = [dict(zip(names, c)) for c in np.ndindex(*devs.shape)]
        flat = [d for d in devs.flat if d is not None]
        self._key = (names, devs.shape, tuple(d.id for d in flat), types)
        self._hash = hash(self._key)

    @property
    def shape(self) -> dict:
        return dict(self._shape)

    @property
    def size(self) -> int:
        return self.devices.size if self.axis_names else 0

    @property
    def axis_sizes(self) -> tuple:
        return tuple(self._shape.values())

    @property
    def shape_tuple(self) -> tuple:
        return tuple(self._shape.items())

    explicit_axes = property(lambda self: self._axes_of(AxisType.Explicit))
    auto_axes = property(lambda self: self._axes_of(AxisType.Auto))
    manual_axes = property(lambda self: self._axes_of(AxisType.Manual))

    def _axes_of(self, kind) -> tuple:
        return tuple(n for n, t in zip(self.axis_names, self.axis_types) if t is kind)

    def coords(self):
        """Every shard's coordinates (name -> index), in row-major device order."""
        return self._coords

    def key(self) -> tuple:
        return self._key

    def __eq__(self, other):
        return isinstance(other, Mesh) and self.key() == other.key()

    def __hash__(self):
        return self._hash

    def __enter__(self):
        # JAX 0.10.2's ``with mesh:`` sets no context mesh either (get_mesh() stays empty):
        # ``set_mesh`` does. Accepted so that older programs run.
        return self

    def __exit__(self, *exc):
        return False

    def __repr__(self):
        if not self.axis_names:
            return "Mesh(axis_sizes=(), axis_names=())"
        return (f"Mesh(axis_sizes={self.axis_sizes}, axis_names={self.axis_names}, "
                f"axis_types={self.axis_types})")

    def __str__(self):
        if not self.axis_names:
            return "Mesh()"
        return (f"Mesh({_axes_repr(self.axis_names, self.axis_sizes)}, "
                f"axis_types={self.axis_types})")

    @property
    def abstract_mesh(self) -> "AbstractMesh":
        """The mesh's axis sizes, names and types, without its devices (with their kind)."""
        if self.empty:
            return EMPTY_MESH
        d = self.devices.flat[0]
        return AbstractMesh(self.axis_sizes, self.axis_names, self.axis_types,
                            abstract_device=AbstractDevice(d.device_kind, None, d.platform))

    @property
    def empty(self) -> bool:
        return not self.axis_names

    are_all_axes_explicit = property(lambda self: _all_of(self, AxisType.Explicit))
    are_all_axes_auto = property(lambda self: _all_of(self, AxisType.Auto))
    are_all_axes_manual = property(lambda self: _all_of(self, AxisType.Manual))


def _all_of(mesh, kind) -> bool:
    # JAX's empty mesh answers False for each: it has no axes of any type.
    return bool(mesh.axis_types) and all(t is kind for t in mesh.axis_types)


class AbstractMesh:
    """A mesh's axis sizes, names and types without its devices (``jax.sharding.AbstractMesh``):
    what the sharding of an abstract value names. The empty one, ``AbstractMesh((), ())``, is
    the mesh of every value that is not split over devices in the global view, which is every
    functrans value outside ``shard_map``/``pmap`` (see ``ShapedArray.sharding``).

    >>> AbstractMesh((2,), ("x",)).shape, AbstractMesh((), ()).empty
    ({'x': 2}, True)
    >>> AbstractMesh((2,), ("x",), axis_types=AxisType.Explicit)
    AbstractMesh('x': 2, axis_types=(Explicit,))
    """

    def __init__(self, axis_sizes=(), axis_names=(), axis_types=None, *,
                 abstract_device=None):
        self.axis_sizes, self.axis_names = tuple(axis_sizes), tuple(axis_names)
        if len(self.axis_sizes) != len(self.axis_names):
            raise ValueError(f"AbstractMesh: {len(self.axis_sizes)} axis sizes but "
                             f"{len(self.axis_names)} axis names")
        self.axis_types = canonical_axis_types(axis_types, self.axis_names, AxisType.Auto)
        if abstract_device is not None and not isinstance(abstract_device, AbstractDevice):
            raise TypeError("AbstractMesh: abstract_device must be an AbstractDevice, got "
                            f"{type(abstract_device).__name__}")
        # The kind of device the mesh stands for (a program traced under it may choose its
        # kernels by platform); meshes compare by their axes alone.
        self.abstract_device = abstract_device

    @property
    def shape(self) -> dict:
        return dict(zip(self.axis_names, self.axis_sizes))

    @property
    def shape_tuple(self) -> tuple:
        return tuple(zip(self.axis_names, self.axis_sizes))

    @property
    def size(self) -> int:
        return math.prod(self.axis_sizes)

    @property
    def empty(self) -> bool:
        return not self.axis_names

    explicit_axes = property(lambda self: Mesh._axes_of(self, AxisType.Explicit))
    auto_axes = property(lambda self: Mesh._axes_of(self, AxisType.Auto))
    manual_axes = property(lambda self: Mesh._axes_of(self, AxisType.Manual))
    are_all_axes_explicit = property(lambda self: _all_of(self, AxisType.Explicit))
    are_all_axes_auto = property(lambda self: _all_of(self, AxisType.Auto))
    are_all_axes_manual = property(lambda self: _all_of(self, AxisType.Manual))

    @property
    def abstract_mesh(self) -> "AbstractMesh":
        return self

    def update_axis_types(self, name_to_type: dict) -> "AbstractMesh":
        """This mesh with the axes named in ``name_to_type`` given those types.

        >>> AbstractMesh((2,), ("x",)).update_axis_types({"x": AxisType.Manual}).axis_types
        (Manual,)
        """
        for n in name_to_type:
            if n not in self.axis_names:
                raise ValueError(f"update_axis_types: {n!r} is not an axis of {self}")
        types = tuple(name_to_type.get(n, t) for n, t in zip(self.axis_names, self.axis_types))
        return AbstractMesh(self.axis_sizes, self.axis_names, types,
                            abstract_device=self.abstract_device)

    def __eq__(self, other):
        return isinstance(other, AbstractMesh) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def _key(self):
        return self.axis_sizes, self.axis_names, self.axis_types

    def __repr__(self):
        if self.empty:
            return "AbstractMesh((), axis_types=())"
        device = "" if self.abstract_device is None else f", {self.abstract_device._fields()}"
        return (f"AbstractMesh({_axes_repr(self.axis_names, self.axis_sizes)}, "
                f"axis_types={self.axis_types}{device})")


@dataclasses.dataclass(frozen=True)
class AbstractDevice:
    """The kind of device an :class:`AbstractMesh` stands for (``jax.sharding.
    AbstractDevice``): its device kind, core count and platform. A concrete mesh's abstract
    mesh has its first device's.

    >>> AbstractDevice("gpu", 1, "cuda")
    AbstractDevice(device_kind=gpu, num_cores=1, platform=cuda)
    >>> AbstractMesh((4,), ("x",), abstract_device=AbstractDevice("gpu", 1, "cuda"))
    AbstractMesh('x': 4, axis_types=(Auto,), device_kind=gpu, num_cores=1, platform=cuda)
    """

    device_kind: str
    num_cores: int | None
    platform: str

    def _fields(self) -> str:
        return (f"device_kind={self.device_kind}, num_cores={self.num_cores}, "
                f"platform={self.platform}")

    def __repr__(self):
        return f"AbstractDevice({self._fields()})"


EMPTY_MESH = AbstractMesh((), ())


def make_mesh(axis_shapes, axis_names, axis_types=None, *, devices=None) -> Mesh:
    """A mesh of the first ``prod(axis_shapes)`` devices (or of ``devices``). Its axes are
    ``AxisType.Explicit`` unless ``axis_types`` says otherwise, as in JAX 0.10.2.

    >>> from functrans.core.config import config
    >>> with config.override(num_cpu_devices=2):
    ...     make_mesh((2,), ("x",))
    Mesh(axis_sizes=(2,), axis_names=('x',), axis_types=(Explicit,))
    """
    from .devices import devices as all_devices
    shape = tuple(axis_shapes)
    names = (axis_names,) if isinstance(axis_names, str) else tuple(axis_names)
    types = canonical_axis_types(axis_types, names, AxisType.Explicit)
    n = math.prod(shape)
    devs = list(devices) if devices is not None else all_devices()
    if n > len(devs):
        raise ValueError(f"make_mesh: a {shape} mesh needs {n} devices, but there are "
                         f"{len(devs)}; raise num_cpu_devices (ft.config.update("
                         "'num_cpu_devices', n)) or FUNCTRANS_NUM_CPU_DEVICES")
    return Mesh(np.array(devs[:n], dtype=object).reshape(shape), names, types)


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
        # A whole dimension is slice(None), as JAX's shard indices say.
        out.append(slice(None) if k == 1 else slice(i * b, (i + 1) * b))
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

    def addressable_devices_indices_map(self, shape) -> dict:
        """``devices_indices_map`` for this process's devices only."""
        return {d: i for d, i in self.devices_indices_map(shape).items()
                if d.process_index == processes.index}

    def shard_shape(self, shape) -> tuple:
        idx = next(iter(self.devices_indices_map(shape).values()))
        return tuple(len(range(*s.indices(n))) for s, n in zip(idx, shape))

    @property
    def memory_kind(self) -> str:
        return "device"  # CPU devices have one memory: the host's

    @property
    def _device_assignment(self) -> tuple:
        """The devices in their order (JAX's: which copy of a block is replica 0)."""
        return tuple(self.devices_indices_map(()).keys())

    @property
    def _addressable_device_assignment(self) -> list:
        return [d for d in self._device_assignment if d.process_index == processes.index]

    def replica_ids(self, shape) -> dict:
        """Each device's replica number of the block it holds: devices holding the same block
        count 0, 1, ... in device order, as JAX numbers ``Shard.replica_id`` (checkpoints
        write replica 0's copy only).

            >>> mesh = Mesh(np.array([Device("cpu", 0), Device("cpu", 1)]), ("x",))
            >>> list(NamedSharding(mesh, PartitionSpec()).replica_ids((4,)).values())
            [0, 1]
        """
        seen: dict = {}
        out = {}
        for d, idx in self.devices_indices_map(shape).items():
            key = tuple((i.start, i.stop, i.step) if isinstance(i, slice) else i for i in idx)
            out[d] = seen.get(key, 0)
            seen[key] = out[d] + 1
        return out


class SingleDeviceSharding(Sharding):
    """The whole array on one device."""

    def __init__(self, device: Device, *, memory_kind: str | None = None):
        check_memory_kind(memory_kind, "SingleDeviceSharding")
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

    def __init__(self, mesh: Mesh, spec: PartitionSpec = PartitionSpec(), *,
                 memory_kind: str | None = None):
        check_memory_kind(memory_kind, "NamedSharding")
        if not isinstance(mesh, (Mesh, AbstractMesh)):
            raise TypeError(f"NamedSharding: expected a Mesh, got {type(mesh).__name__}")
        self.mesh, self.spec = mesh, PartitionSpec(
            *spec, unreduced=getattr(spec, "unreduced", frozenset()),
            reduced=getattr(spec, "reduced", frozenset()))
        for names in canonical_spec(self.spec, len(self.spec), "NamedSharding"):
            for n in names:
                if n not in mesh.shape:
                    raise ValueError(f"NamedSharding: {self.spec} names axis {n!r}, which is "
                                     f"not an axis of {mesh}")
        for what, axes in (("Unreduced", self.spec.unreduced), ("Reduced", self.spec.reduced)):
            for n in axes:
                if n not in mesh.shape:
                    raise ValueError(f"{what} axes {n} is not found in mesh.axis_names="
                                     f"{mesh.axis_names}. Got pspec={self.spec}")
                if mesh.axis_types[mesh.axis_names.index(n)] is not AxisType.Explicit:
                    raise ValueError(f"{what} axes can only refer to mesh axes that is of "
                                     f"type `Explicit`. Got {what.lower()} axes: {set(axes)} "
                                     f"and mesh: {mesh}")

    def update(self, **kwargs) -> "NamedSharding":
        """A copy with ``mesh``, ``spec`` or ``memory_kind`` replaced (JAX's).

            >>> NamedSharding(AbstractMesh((2,), ("i",)), P("i")).update(spec=P()).spec
            PartitionSpec()
        """
        unknown = set(kwargs) - {"mesh", "spec", "memory_kind"}
        if unknown:
            raise TypeError(f"NamedSharding.update: unexpected arguments {sorted(unknown)} "
                            "(it takes mesh, spec, memory_kind)")
        return NamedSharding(kwargs.get("mesh", self.mesh), kwargs.get("spec", self.spec),
                             memory_kind=kwargs.get("memory_kind"))

    @property
    def device_set(self) -> set:
        return set(self._concrete_mesh().devices.flat)

    @property
    def _device_assignment(self) -> tuple:
        return tuple(self._concrete_mesh().devices.flat)

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
        if self.spec.unreduced and self.mesh.size > 1:  # devices hold different partial sums
            return False
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
                and PartitionSpec(*other.spec) == PartitionSpec(*self.spec)
                and other.spec.unreduced == self.spec.unreduced
                and other.spec.reduced == self.spec.reduced)

    def __hash__(self):
        return hash((self.mesh, tuple(self.spec), self.spec.unreduced, self.spec.reduced))

    def __repr__(self):
        return f"NamedSharding(mesh={self.mesh}, spec={self.spec!r}, memory_kind=device)"


def check_memory_kind(memory_kind, what) -> None:
    """CPU devices have one memory, the host's ("device"); JAX's other kinds (pinned_host,
    unpinned_host) are accelerators' host memories."""
    if memory_kind not in (None, "device"):
        raise ValueError(f"{what}: memory_kind={memory_kind!r}: functrans's CPU devices have "
                         "one memory, kind 'device'")


def check_divisible(shape, spec, sizes, what) -> None:
    for d, (dim, names) in enumerate(zip(shape, spec)):
        k = math.prod(sizes[n] for n in names)
        if dim % k:
            raise ValueError(f"{what}: dimension {d} of an array of shape {tuple(shape)} has "
                             f"size {dim}, which the mesh axes {names} (of {k} shards) do not "
                             "divide evenly")


def default_sharding() -> SingleDeviceSharding:
    return SingleDeviceSharding(default_device())


# The context mesh, per thread as in JAX (a thread started later sees none): the concrete
# mesh set_mesh names, and the abstract mesh traced code sees (inside shard_map, the mesh
# with its manual axes).
class _MeshContext(threading.local):
    mesh = None
    abstract = None


_context = _MeshContext()
EMPTY_CONCRETE_MESH = Mesh(np.empty((), dtype=object), ())


def get_mesh() -> Mesh:
    """The mesh ``set_mesh`` made current; outside any, the empty mesh (as in JAX 0.10.2).

    >>> get_mesh()
    Mesh(axis_sizes=(), axis_names=())
    """
    return _context.mesh if _context.mesh is not None else EMPTY_CONCRETE_MESH


def get_abstract_mesh() -> AbstractMesh:
    """The current mesh's sizes, names and types without its devices; inside ``shard_map`` its
    axes are ``Manual``; outside any mesh context, the empty abstract mesh.

    >>> get_abstract_mesh()
    AbstractMesh((), axis_types=())
    """
    if _context.abstract is not None:
        return _context.abstract
    return get_mesh().abstract_mesh if _context.mesh is not None else EMPTY_MESH


class set_mesh:
    """Make ``mesh`` the context mesh, both at once (a global setter: ``set_mesh(mesh)``; ``None``
    clears it) and as a context manager restoring the previous one on exit, as in JAX 0.10.2.
    Under it, a bare ``PartitionSpec`` means ``NamedSharding(mesh, spec)`` (``reshard``,
    ``with_sharding_constraint``) and ``shard_map`` needs no ``mesh=``.

    >>> with set_mesh(make_mesh((2,), ("x",))):
    ...     get_mesh().axis_names
    ('x',)
    >>> get_mesh().empty
    True
    """

    def __init__(self, mesh):
        if mesh is not None and not isinstance(mesh, Mesh):
            raise ValueError(f"set_mesh: expected a functrans.sharding.Mesh (or None), got "
                             f"{type(mesh).__name__}: {mesh!r:.80}")
        self._previous = (_context.mesh, _context.abstract)
        _context.mesh = None if mesh is None or mesh.empty else mesh
        _context.abstract = None

    def __enter__(self):
        return None  # (JAX's returns None too)

    def __exit__(self, *exc):
        _context.mesh, _context.abstract = self._previous
        return False


@contextlib.contextmanager
def use_abstract_mesh(mesh: AbstractMesh):
    """Within the block, ``get_abstract_mesh()`` is ``mesh`` (the concrete mesh is unchanged).

    >>> with use_abstract_mesh(AbstractMesh((2,), ("x",))):
    ...     get_abstract_mesh().shape
    {'x': 2}
    """
    if not isinstance(mesh, AbstractMesh):
        raise ValueError(f"use_abstract_mesh: expected an AbstractMesh, got "
                         f"{type(mesh).__name__}: {mesh!r:.80}")
    previous = _context.abstract
    _context.abstract = mesh
    try:
        yield
    finally:
        _context.abstract = previous


def same_grid(a, b) -> bool:
    """The same devices under the same axis names (the axis types may differ: explicit_axes
    and auto_axes retype the context mesh's axes for a while).

    >>> m = make_mesh((1,), ("x",))
    >>> same_grid(m, Mesh(m.devices, ("x",), AxisType.Auto))
    True
    """
    return a is b or (a.axis_names == b.axis_names and a.devices.shape == b.devices.shape
                      and list(a.devices.flat) == list(b.devices.flat))


def on_context_devices(sharding):
    """``sharding``, or when it names the context mesh's abstract form (a type's
    ``typeof(x).sharding`` under ``set_mesh``), the same spec on the context mesh's devices.

    >>> on_context_devices(None) is None
    True
    """
    if isinstance(sharding, NamedSharding) and isinstance(sharding.mesh, AbstractMesh) \
            and not sharding.mesh.empty:
        mesh = get_mesh()
        if not mesh.empty and mesh.abstract_mesh == sharding.mesh:
            return NamedSharding(mesh, sharding.spec)
    return sharding


def context_sharding(spec, what: str, error=ValueError) -> "NamedSharding":
    """``NamedSharding(context mesh, spec)``; ``error`` naming ``what`` and the spec when no
    mesh is set."""
    mesh = get_mesh()
    if mesh.empty:
        raise error(f"{what}: got {spec}, but a bare PartitionSpec needs a mesh and none is "
                    f"set: enter one with `with ft.set_mesh(mesh):` or pass "
                    f"NamedSharding(mesh, {spec})")
    abstract = _context.abstract
    if abstract is not None and abstract.axis_names != mesh.axis_names \
            and abstract.size == mesh.size and not abstract.manual_axes:
        # use_abstract_mesh with other axes over the same devices (JAX lays the context's
        # devices out in the abstract mesh's shape).
        mesh = Mesh(mesh.devices.reshape(abstract.axis_sizes), abstract.axis_names,
                    abstract.axis_types)
    return NamedSharding(mesh, spec)


def regrid_spec(spec, source: "Mesh", target: "Mesh"):
    """``spec`` on ``source`` said on ``target``, a mesh of the same devices in the same order
    whose axes group ``source``'s (an 8-device axis 'a' is ('x', 'y') of a 4x2 mesh); None
    when the grids do not line up.

    >>> from functrans.core.config import config
    >>> with config.override(num_cpu_devices=4):
    ...     m = make_mesh((2, 2), ("x", "y"))
    ...     regrid_spec((("a",), ()), Mesh(m.devices.reshape(4), ("a",)), m)
    (('x', 'y'), ())
    """
    if list(source.devices.flat) != list(target.devices.flat):
        return None
    groups, j = {}, 0
    for name, size in zip(source.axis_names, source.devices.shape):
        group, n = [], 1
        while n < size and j < len(target.axis_names):
            group.append(target.axis_names[j])
            n *= target.devices.shape[j]
            j += 1
        if n != size:
            return None
        groups[name] = tuple(group)
    return tuple(tuple(t for n in names for t in groups[n]) for names in spec)


__all__ = ["AbstractMesh", "AxisType", "Mesh", "PartitionSpec", "P", "NamedSharding",
           "SingleDeviceSharding", "Sharding", "make_mesh", "get_mesh", "get_abstract_mesh",
           "set_mesh", "use_abstract_mesh"]
