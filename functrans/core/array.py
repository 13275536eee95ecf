"""``functrans.Array``: an immutable array backed by a read-only NumPy buffer.

``np.asarray(a)`` is zero-copy (and read-only); operators, methods and ``.at[...]`` come from
``functrans.numpy`` (attached at import time), so Arrays and tracers behave alike::

    >>> a = fnp.arange(3.0)
    >>> a * 2
    Array([0., 2., 4.], dtype=float64)
"""
from __future__ import annotations

import numpy as np

from . import background, dtypes
from .avals import ShapedArray


_new = object.__new__


class _ArrayMeta(type):
    """``isinstance(x, Array)`` also holds for tracers, as for JAX's ``jax.Array`` (code that
    tests for an array must accept the traced values a transformation passes it). Subclass
    checks stay nominal: ``issubclass(Tracer, Array)`` is False, as in JAX."""

    virtual: tuple = ()  # set by core.trace: (Tracer,)

    def __instancecheck__(cls, x):
        return type.__instancecheck__(cls, x) or isinstance(x, _ArrayMeta.virtual)


class Array(metaclass=_ArrayMeta):
    """An immutable n-dimensional array (the concrete value type of functrans).

    Inside transformations values are tracers, which are instances too::

        >>> ft.grad(lambda x: x * 2.0 if isinstance(x, ft.Array) else 0.0)(1.0)
        Array(2., dtype=float64, weak_type=True)
    """

    __slots__ = ("_value", "_weak", "_sharding", "__weakref__")
    __array_priority__ = 100
    _host_backed = True  # the value is a host buffer (subclasses: on a device, or spread)
    _spread = False  # this process holds only its devices' blocks (DistributedArray)

    def __init__(self, value, weak_type: bool = False):
        value = np.asarray(value)
        dtype = dtypes.canonicalize_dtype(value.dtype)
        if value.dtype != dtype or value.flags.writeable:
            value = value.astype(dtype)  # a private copy: nobody else can write to it
            value.flags.writeable = False
        self._value = value
        self._weak = weak_type
        self._sharding = None

    @classmethod
    def _wrap(cls, value: np.ndarray, weak_type: bool = False) -> "Array":
        """Wrap a fresh, canonically typed ndarray without copying (internal fast path)."""
        value.setflags(write=False)  # (half the cost of assigning flags.writeable)
        a = _new(cls)
        a._value = value
        a._weak = weak_type
        a._sharding = None  # None: uncommitted, on the default device
        return a

    @property
    def sharding(self):
        """Where the array lives: a Sharding (``SingleDeviceSharding`` unless placed or
        produced by pmap/shard_map)."""
        from .mesh import default_sharding
        return self._sharding if self._sharding is not None else default_sharding()

    @property
    def committed(self) -> bool:
        """Whether the array was placed on its devices (``device_put`` to a device or a
        sharding, or a result on a mesh), as JAX's ``Array.committed``: an uncommitted array
        may be moved to where the other operands of a computation are.

        >>> fnp.arange(2.0).committed, ft.device_put(fnp.arange(2.0), ft.devices()[0]).committed
        (False, True)
        """
        return self._sharding is not None

    def devices(self) -> set:
        """The set of devices holding parts of this array."""
        return set(self.sharding.device_set)

    @property
    def addressable_shards(self) -> list:
        """This process's shards: each has ``.device``, ``.index`` (slices) and ``.data``.

        >>> [s.data.shape for s in fnp.ones(4).addressable_shards]
        [(4,)]
        """
        from .devices import processes
        out = []
        sharding = self.sharding
        replicas = sharding.replica_ids(self.shape)
        for dev, idx in sharding.devices_indices_map(self.shape).items():
            if dev.process_index == processes.index:
                block = self._value[idx] if idx else self._value  # (a 0-d one: no scalar)
                out.append(Shard(dev, idx, Array._wrap(block, self._weak), replicas[dev]))
        return out

    @property
    def is_fully_addressable(self) -> bool:
        from .devices import processes
        return all(d.process_index == processes.index for d in self.sharding.device_set)

    @property
    def device(self):
        """The device holding the array, or its sharding if it spans several (as JAX's)."""
        devices = self.sharding.device_set
        return next(iter(devices)) if len(devices) == 1 else self.sharding

    def copy_to_host_async(self) -> None:
        """Start copying the value to the host: it is there already (CPU devices)."""

    def unsafe_buffer_pointer(self) -> int:
        """The address of the array's buffer (host memory).

            >>> x = Array._wrap(np.arange(3.0))
            >>> x.unsafe_buffer_pointer() == x._value.ctypes.data
            True
        """
        return int(self._value.ctypes.data)

    @property
    def aval(self) -> ShapedArray:
        v = self._value
        return ShapedArray(v.shape, v.dtype, self._weak)

    shape = property(lambda self: self._value.shape)
    dtype = property(lambda self: self._value.dtype)
    ndim = property(lambda self: self._value.ndim)
    size = property(lambda self: self._value.size)
    weak_type = property(lambda self: self._weak)
    nbytes = property(lambda self: self._value.nbytes)
    itemsize = property(lambda self: self._value.itemsize)

    def __array__(self, dtype=None, copy=None):
        if copy:
            return np.array(self._value, dtype=dtype, copy=True)
        if dtype is not None and np.dtype(dtype) != self._value.dtype:
            if copy is False:
                raise ValueError("converting the dtype of a functrans.Array requires a copy")
            return self._value.astype(dtype)
        return self._value

    def __repr__(self):
        body = np.array2string(self._value, separator=", ", prefix="Array(")
        if self._value.size == 0:  # "[]" alone would hide the shape (as JAX shows it)
            body += f", shape={self._value.shape}"
        weak = ", weak_type=True" if self._weak else ""
        return f"Array({body}, dtype={self._value.dtype.name}{weak})"

    def __str__(self):
        return str(self._value)

    def __format__(self, spec):
        if self._value.ndim == 0:
            return format(self._value.item(), spec)
        return format(str(self), spec)

    def __bool__(self):
        return bool(self._value)

    def __int__(self):
        return int(self._value)

    def __float__(self):
        return float(self._value)

    def __complex__(self):
        return complex(self._value)

    def __index__(self):
        if not dtypes.is_int(self._value.dtype):
            raise TypeError(f"only integer arrays can be used as an index, not {self.dtype}")
        return int(self._value)

    def __len__(self):
        if self._value.ndim == 0:
            raise TypeError("len() of unsized object (a 0-d Array)")
        return self._value.shape[0]

    def __iter__(self):
        if self._value.ndim == 0:
            raise TypeError("iteration over a 0-d Array")
        for row in self._value:
            yield Array._wrap(np.array(row), self._weak)

    __hash__ = None  # mutable-looking buffers are not hashable, as in NumPy and JAX

    def item(self, *args):
        return self._value.item(*args)

    def tolist(self):
        return self._value.tolist()

    def block_until_ready(self):
        """Return this array once it is computed and no kernel is still compiling in the
        background (tiered jit): calls made afterwards run compiled code, so the JAX idiom
        ``f(x).block_until_ready()`` before timing times the kernel.

        >>> fnp.ones(2).block_until_ready()
        Array([1., 1.], dtype=float64)
        """
        background.wait_all()
        return self

    def copy(self) -> "Array":
        return self

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def _with_sharding(self, sharding) -> "Array":
        """The same buffer, placed as ``sharding`` says (CPU devices share host memory)."""
        a = Array._wrap(self._value, self._weak)
        a._sharding = sharding
        return a

    def __reduce__(self):
        return (Array, (np.array(self._value), self._weak))


class Shard:
    """One device's part of an Array: its ``device``, ``index`` (slices of the whole),
    ``data`` and ``replica_id`` (0 for the first device holding that block, in device order;
    1, 2, ... for the copies of a replicated one)."""

    __slots__ = ("device", "index", "data", "replica_id")

    def __init__(self, device, index, data, replica_id: int = 0):
        self.device, self.index, self.data = device, index, data
        self.replica_id = replica_id

    def __repr__(self):
        return (f"Shard(device={self.device!r}, index={self.index}, "
                f"replica_id={self.replica_id}, data={self.data!r})")
