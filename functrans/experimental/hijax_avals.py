"""The array type as ``jax.experimental.hijax`` exports it, and ``HiPspec``.

JAX's ``ShapedArray`` takes a ``sharding=``: high-level types build their arrays' types with
the sharding they record. :data:`ShapedArray` here is functrans's array type with that
keyword: a sharding over Explicit mesh axes gives the sharded type ``typeof`` gives placed
arrays (printed ``float32[8@i,3]``), any other the plain type; ``isinstance`` checks are
functrans's ``ShapedArray``'s.

    >>> ShapedArray((2, 3), "float32")
    ShapedArray(f32[2,3])
    >>> isinstance(ShapedArray((2,), "int8"), _ShapedArray)
    True
"""
from __future__ import annotations

import numpy as np

from functrans.core.avals import ShapedArray as _ShapedArray, ShardedShapedArray
from functrans.core.mesh import NamedSharding, canonical_spec

__all__ = ["HiPspec", "ShapedArray"]


class _ShapedArrayType(type):
    def __call__(cls, shape, dtype, weak_type=False, sharding=None):
        shape = tuple(shape)
        dtype = np.dtype(dtype)
        if sharding is None:
            return _ShapedArray(shape, dtype, weak_type)
        if not isinstance(sharding, NamedSharding):
            raise TypeError(f"ShapedArray: sharding must be a NamedSharding, got "
                            f"{type(sharding).__name__}")
        spec = canonical_spec(sharding.spec, len(shape), "ShapedArray")
        explicit = set(getattr(sharding.mesh, "explicit_axes", ()) or ())
        if not any(n in explicit for names in spec for n in names):
            return _ShapedArray(shape, dtype, weak_type)
        sizes = dict(zip(sharding.mesh.axis_names, sharding.mesh.axis_sizes))
        for i, (n, names) in enumerate(zip(shape, spec)):
            ways = int(np.prod([sizes[a] for a in names])) if names else 1
            if n % ways:
                raise ValueError(f"ShapedArray: sharding spec {sharding.spec} splits axis {i} "
                                 f"{ways} ways, which does not divide its size {n} (shape "
                                 f"{shape})")
        return ShardedShapedArray(shape, dtype, weak_type, sharding)

    def __instancecheck__(cls, x):
        return isinstance(x, _ShapedArray)

    def __subclasscheck__(cls, sub):
        return issubclass(sub, _ShapedArray)


class ShapedArray(metaclass=_ShapedArrayType):
    """``ShapedArray(shape, dtype, weak_type=False, sharding=None)``: an array type (see the
    module's docstring)."""


class HiPspec:
    """Base class of a high-level type's partition spec for ``shard_map``'s
    ``in_specs``/``out_specs``: ``to_lo()`` gives one ``PartitionSpec`` per array of the
    type's ``lo_ty``.

        >>> from functrans.core.mesh import P
        >>> class Both(HiPspec):
        ...     def to_lo(self): return (P("i"), P("i"))
        >>> Both().to_lo()
        (PartitionSpec('i'), PartitionSpec('i'))
    """

    def to_lo(self) -> tuple:
        raise NotImplementedError(f"{type(self).__name__} must define to_lo()")

    def to_tangent_spec(self) -> "HiPspec":
        raise NotImplementedError(f"{type(self).__name__} must define to_tangent_spec()")

    def to_ct_spec(self) -> "HiPspec":
        raise NotImplementedError(f"{type(self).__name__} must define to_ct_spec()")
