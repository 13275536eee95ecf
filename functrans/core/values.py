"""Top-level functions of JAX's API about values: ``typeof`` (a value's abstract type, as
tracing sees it), ``device_get`` (arrays as NumPy arrays) and ``effects_barrier`` (waiting for
work running in the background).

    >>> ft.typeof(fnp.ones(3, "float32"))
    ShapedArray(f32[3])
    >>> ft.device_get(fnp.arange(2.0))
    array([0., 1.])
"""
from __future__ import annotations

from . import background
from .array import Array
from .avals import ShardedShapedArray
from .mesh import Mesh, NamedSharding, PartitionSpec, canonical_spec
from .trace import Tracer, get_aval
from .tree import tree_map

__all__ = ["device_get", "effects_barrier", "typeof"]


def _to_host(x):
    if isinstance(x, Tracer):
        return x  # a value being traced has no host copy (as in JAX)
    to_array = getattr(x, "__array__", None)
    return x if to_array is None else to_array()


def device_get(x):
    """``x`` (a pytree) with its arrays as NumPy arrays; other leaves (Python scalars,
    strings, ...) and traced values are returned as they are.

    >>> ft.device_get({"w": fnp.ones(2), "step": 3})
    {'step': 3, 'w': array([1., 1.])}
    """
    return tree_map(_to_host, x)


hitype_avals: dict = {}
"""type -> function giving a value's type, for the high-level types libraries register
(``jax.experimental.hijax.register_hitype``): what ``typeof`` returns for their values."""


def typeof(x):
    """The abstract value of ``x``: its shape, dtype and whether the dtype is weak (from a
    Python scalar), as tracing sees it.

    >>> ft.typeof(1.0), ft.typeof(np.int8(1))
    (ShapedArray(f64[], weak_type=True), ShapedArray(i8[]))

    A :class:`~functrans.ref.Ref` 's type is an ``AbstractRef``; typed keys' dtype is their
    key dtype:

    >>> ft.typeof(ft.new_ref(1.0)), ft.typeof(ft.random.key(0)).dtype
    (Ref{f64[]}, key<fry>)
    """
    t = type(x)
    if t is Array and x._sharding is None and t not in hitype_avals:
        # An unplaced concrete Array: no hook below changes its type. Libraries ask at every
        # variable access (nnx: 20 times a step), with caches made cold by the step's program.
        return get_aval(x)
    # References (functrans.ref.Ref) and typed key arrays (functrans.random's) carry their
    # own type; they are recognized by their class marks (both are above core).
    if getattr(t, "_is_ref", False) or getattr(t, "_is_key_array", False):
        return x.aval
    to_aval = hitype_avals.get(t)
    if to_aval is not None:
        return to_aval(x)
    try:
        aval = get_aval(x)
    except TypeError:
        raise TypeError(f"typeof: argument of type {type(x).__name__} ({x!r:.60}) is not an "
                        "array or scalar") from None
    for hook in varying_axes_hooks:  # (inside shard_map: the axes a value varies over)
        typed = hook(x, aval)
        if typed is not None:
            return typed
    return _with_explicit_sharding(x, aval)


varying_axes_hooks: list = []
"""Functions ``(value, aval) -> aval or None`` giving a traced value inside ``shard_map`` its
type with the manual axes it varies over (``functrans/spmd/varying.py`` installs one)."""

varying_casts: list = []
"""Functions ``(value, axes) -> value`` marking a traced value inside ``shard_map`` as varying
over more axes (``lax.pcast(..., to='varying')``; ``functrans/spmd/varying.py``)."""


def _with_explicit_sharding(x, aval):
    """A placed array's type carries its sharding when its mesh has Explicit axes (sharding
    in types, as JAX shows it: ``float32[8@x,4]``)."""
    # The sharding is looked at first: most values have none, and isinstance(x, Array) is a
    # metaclass check (tracers count as Arrays).
    s = getattr(x, "_sharding", None)
    if type(s) is not NamedSharding or not isinstance(x, Array) \
            or not isinstance(s.mesh, Mesh) or not s.mesh.explicit_axes:
        return aval
    spec = canonical_spec(s.spec, aval.ndim, "typeof")
    explicit = set(s.mesh.explicit_axes)
    parts = [tuple(n for n in names if n in explicit) for names in spec]
    parts = [None if not p else p[0] if len(p) == 1 else p for p in parts]
    sharding = NamedSharding(s.mesh.abstract_mesh, PartitionSpec(
        *parts, unreduced=s.spec.unreduced, reduced=s.spec.reduced))
    return ShardedShapedArray(aval.shape, aval.dtype, aval.weak_type, sharding)


def effects_barrier() -> None:
    """Wait until work running in the background (jit's compiles, whose first calls run on
    the interpreter meanwhile) is done.

    >>> ft.effects_barrier()
    """
    background.wait_all()
