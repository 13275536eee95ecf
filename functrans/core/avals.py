"""Abstract values: what tracing knows about an array (shape, dtype, weak type), not its contents.

    >>> ShapedArray((3,), np.dtype("float32")).str_short()
    'f32[3]'
"""
from __future__ import annotations

import math

import numpy as np

from . import dtypes


class ShapedArray:
    """The type of an array value: ``shape``, ``dtype`` and whether the dtype is *weak*.

    A weak dtype comes from a Python scalar and gives way in promotion (NEP 50).
    """

    __slots__ = ("shape", "dtype", "weak_type", "_hash")

    def __init__(self, shape, dtype, weak_type: bool = False):
        self.shape = tuple(shape)
        self.dtype = dtype if isinstance(dtype, np.dtype) else np.dtype(dtype)
        self.weak_type = weak_type
        self._hash = None

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    def update(self, shape=None, dtype=None, weak_type=None) -> "ShapedArray":
        """A copy with some fields replaced."""
        return ShapedArray(self.shape if shape is None else shape,
                           self.dtype if dtype is None else dtype,
                           self.weak_type if weak_type is None else weak_type)

    def strip_weak_type(self) -> "ShapedArray":
        return self if not self.weak_type else ShapedArray(self.shape, self.dtype, False)

    def to_tangent_aval(self) -> "ShapedArray":
        """The type of this value's tangents (and cotangents): the same, not weakly typed
        (functrans's tangents of integers are integer zeros, not JAX's float0)."""
        return self.strip_weak_type()

    to_ct_aval = to_tangent_aval
    at_least_vspace = to_tangent_aval  # JAX's older name, still used (distrax's jvp rules)

    @property
    def sharding(self):
        """The value's sharding in the global view (``jax.typeof(x).sharding``): no dimension
        split, on the context's abstract mesh (``set_mesh``; the empty one outside any), as
        JAX's. Abstract values carry no sharding of their own (placement is the concrete
        array's ``.sharding``, and a shard_map body sees its own shards as whole values).

            >>> ShapedArray((2, 3), np.float32).sharding.spec
            PartitionSpec(None, None)
        """
        from .mesh import NamedSharding, PartitionSpec, get_abstract_mesh
        return NamedSharding(get_abstract_mesh(), PartitionSpec(*(None,) * len(self.shape)))

    def str_short(self) -> str:
        return f"{dtypes.short_name(self.dtype)}[{','.join(map(str, self.shape))}]"

    def __str__(self):
        # JAX's: print(jax.typeof(x)) shows float32[2,3]
        return f"{self.dtype.name}[{','.join(map(str, self.shape))}]"

    def __eq__(self, other):
        return (type(other) is ShapedArray and self.shape == other.shape
                and self.dtype == other.dtype and self.weak_type == other.weak_type)

    def __hash__(self):
        h = self._hash
        if h is None:
            h = self._hash = hash((self.shape, self.dtype, self.weak_type))
        return h

    def __repr__(self):
        weak = ", weak_type=True" if self.weak_type else ""
        return f"ShapedArray({self.str_short()}{weak})"


def same_type(a: ShapedArray, b: ShapedArray) -> bool:
    """Equal shapes and dtypes, ignoring weak type (what a jaxpr type check compares)."""
    return a.shape == b.shape and a.dtype == b.dtype


def scalar_aval(dtype, weak_type=False) -> ShapedArray:
    return ShapedArray((), dtype, weak_type)


def aval_of_numpy(x: np.ndarray, weak_type=False, what="value") -> ShapedArray:
    return ShapedArray(x.shape, dtypes.canonicalize_dtype(x.dtype, what=what), weak_type)


class ShardedShapedArray(ShapedArray):
    """The type of an array placed on a mesh's ``Explicit`` axes, as ``typeof`` gives it:
    its sharding is part of it (printed ``float32[8@x,4]``, as JAX prints it).

        >>> from functrans.core.mesh import AbstractMesh, AxisType, NamedSharding, P
        >>> m = AbstractMesh((2,), ("x",), (AxisType.Explicit,))
        >>> str(ShardedShapedArray((8, 4), np.float32, False, NamedSharding(m, P("x"))))
        'float32[8@x,4]'
    """

    __slots__ = ("_sharding",)

    def __init__(self, shape, dtype, weak_type, sharding):
        super().__init__(shape, dtype, weak_type)
        self._sharding = sharding

    @property
    def sharding(self):
        return self._sharding

    def _dims(self) -> str:
        from .mesh import canonical_spec
        dims = []
        for n, names in zip(self.shape, canonical_spec(self._sharding.spec, len(self.shape),
                                                       "typeof")):
            dims.append(str(n) if not names else f"{n}@{names[0]}" if len(names) == 1
                        else f"{n}@({','.join(names)})")
        return ",".join(dims)

    def _state(self) -> str:
        """JAX's suffix for unreduced and reduced axes: ``{U:x}``, ``{R:(x,y)}``."""
        out = []
        for tag, axes in (("U", self._sharding.spec.unreduced),
                          ("R", self._sharding.spec.reduced)):
            if axes:
                names = [n for n in self._sharding.mesh.axis_names if n in axes]
                out.append(f"{tag}:{names[0]}" if len(names) == 1 else
                           f"{tag}:({','.join(names)})")
        return "{" + ", ".join(out) + "}" if out else ""

    def str_short(self) -> str:
        return f"{dtypes.short_name(self.dtype)}[{self._dims()}]{self._state()}"

    def __str__(self):
        return f"{self.dtype.name}[{self._dims()}]{self._state()}"

    def __repr__(self):
        weak = ", weak_type=True" if self.weak_type else ""
        return f"ShapedArray({self}{weak})"


class ManualAxisType:
    """How a value inside ``shard_map`` relates to the manual mesh axes (JAX's
    ``aval.manual_axis_type``): the axes it ``varying`` over (it may differ between their
    members), and those it is ``unreduced`` or ``reduced`` over (none here)."""

    __slots__ = ("varying", "unreduced", "reduced")

    def __init__(self, varying=frozenset(), unreduced=frozenset(), reduced=frozenset()):
        self.varying = frozenset(varying)
        self.unreduced, self.reduced = frozenset(unreduced), frozenset(reduced)

    def __repr__(self):
        return (f"ManualAxisType(varying={set(self.varying) or '{}'}, "
                f"unreduced={set(self.unreduced) or '{}'}, reduced={set(self.reduced) or '{}'})")


class VaryingShapedArray(ShapedArray):
    """``typeof`` of a value inside ``shard_map``: its type and the manual axes it varies
    over, printed as JAX prints it (``float32[2,2]{V:(i,j)}``).

        >>> str(VaryingShapedArray((2,), np.float32, False, ("i", "j")))
        'float32[2]{V:(i,j)}'
    """

    __slots__ = ("vma",)

    def __init__(self, shape, dtype, weak_type, vma):
        super().__init__(shape, dtype, weak_type)
        self.vma = tuple(vma)  # in mesh order

    @property
    def manual_axis_type(self) -> ManualAxisType:
        return ManualAxisType(self.vma)

    def _state(self) -> str:
        if not self.vma:
            return ""
        return "{V:" + (self.vma[0] if len(self.vma) == 1 else f"({','.join(self.vma)})") + "}"

    def str_short(self) -> str:
        return super().str_short() + self._state()

    def __str__(self):
        return f"{self.dtype.name}[{','.join(map(str, self.shape))}]{self._state()}"

    def __repr__(self):
        weak = ", weak_type=True" if self.weak_type else ""
        return f"ShapedArray({self}{weak})"
