"""Helpers every transformation's public API shares: pytree flattening of functions, static
arguments, and abstract values of user inputs with clear errors.

    >>> from functrans.core.tree import tree_structure
    >>> flat_f, out_tree = flatten_fun(lambda d: (d["x"], 1), tree_structure(({"x": 0},)))
    >>> flat_f(5), out_tree()
    ([5, 1], PyTreeDef((*, *)))
"""
from __future__ import annotations

import inspect
import math
import operator
from typing import Callable

import numpy as np

from .tree import PyTreeDef, tree_flatten, tree_unflatten
from . import dtypes
from .avals import ShapedArray
from .shape_poly import is_symbolic_dim, is_symbolic_shape
from .trace import Tracer, get_aval


class ShapeDtypeStruct:
    """A stand-in for an array of this shape and dtype (for make_jaxpr, eval_shape, lower),
    immutable and hashable, as ``jax.ShapeDtypeStruct``.

    >>> ShapeDtypeStruct((3,), "float32")
    ShapeDtypeStruct(shape=(3,), dtype=float32)
    >>> ShapeDtypeStruct.like(np.ones((2, 2), np.int8)).update(shape=(4,))
    ShapeDtypeStruct(shape=(4,), dtype=int8)

    ``sharding`` may be a ``Sharding`` or a ``PartitionSpec``; functrans has no context mesh
    to resolve a ``PartitionSpec`` against, so reading ``.sharding`` then raises, as JAX does
    without one. (``weak_type`` may also be passed positionally, which JAX does not allow.)
    """

    __slots__ = ("shape", "dtype", "weak_type", "_sharding", "manual_axis_type", "is_ref")

    def __init__(self, shape, dtype, weak_type=False, *, sharding=None, manual_axis_type=None,
                 is_ref=False):
        if dtype is None:
            raise ValueError("ShapeDtypeStruct: dtype must be specified.")
        if sharding is not None:
            from .mesh import PartitionSpec, Sharding
            if not isinstance(sharding, (Sharding, PartitionSpec)):
                raise ValueError("sharding should be an instance of `Sharding` or "
                                 f"`PartitionSpec`. Got {sharding} of type {type(sharding)}.")
        if is_ref:
            raise NotImplementedError("ShapeDtypeStruct: is_ref=True (mutable array "
                                      "references) is not supported")
        try:
            shape = tuple(d if is_symbolic_dim(d) else operator.index(d) for d in shape)
        except TypeError:
            raise TypeError(f"ShapeDtypeStruct: shape must be a sequence of integers, got "
                            f"{shape!r}") from None
        init = object.__setattr__
        init(self, "shape", shape)
        init(self, "dtype", dtypes.canonicalize_dtype(dtype, what="ShapeDtypeStruct"))
        init(self, "weak_type", bool(weak_type))
        init(self, "_sharding", sharding)
        init(self, "manual_axis_type", manual_axis_type)
        init(self, "is_ref", False)

    def __setattr__(self, name, value):
        if getattr(self, name, object()) == value:
            return  # (threads racing to set the same value)
        raise RuntimeError(f"Cannot reassign attributes ({name}) of immutable ShapeDtypeStruct "
                           "objects")

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        if is_symbolic_shape(self.shape):
            return math.prod(self.shape)
        return int(np.prod(self.shape))

    @property
    def sharding(self):
        from .mesh import PartitionSpec
        if isinstance(self._sharding, PartitionSpec):
            raise TypeError("When specifying PartitionSpec to `ShapeDtypeStruct`, the context "
                            "mesh cannot be empty (functrans has no context mesh: pass a "
                            "NamedSharding instead).")
        return self._sharding

    @classmethod
    def like(cls, x) -> "ShapeDtypeStruct":
        """The shape, dtype, weak type (and committed sharding) of ``x``.

        >>> ShapeDtypeStruct.like(1.0)
        ShapeDtypeStruct(shape=(), dtype=float64, weak_type=True)
        """
        aval = get_aval(x)
        sharding = getattr(x, "_sharding", None) if not isinstance(x, Tracer) else None
        return cls(aval.shape, aval.dtype, aval.weak_type, sharding=sharding)

    def update(self, **kwargs) -> "ShapeDtypeStruct":
        """A copy with some of ``shape``, ``dtype``, ``sharding``, ``weak_type`` replaced.

        >>> ShapeDtypeStruct((2,), "float32").update(dtype="int32")
        ShapeDtypeStruct(shape=(2,), dtype=int32)
        """
        fields = {"shape": self.shape, "dtype": self.dtype, "sharding": self._sharding,
                  "weak_type": self.weak_type, "manual_axis_type": self.manual_axis_type,
                  "is_ref": self.is_ref}
        unknown = set(kwargs) - set(fields)
        if unknown:
            raise TypeError(f"ShapeDtypeStruct.update: unknown fields {sorted(unknown)}")
        fields.update(kwargs)
        shape, dtype = fields.pop("shape"), fields.pop("dtype")
        return ShapeDtypeStruct(shape, dtype, **fields)

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def _key(self):
        return (self.shape, self.dtype, self._sharding, self.weak_type, self.manual_axis_type)

    def __eq__(self, other):
        return isinstance(other, ShapeDtypeStruct) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        sharding = f", sharding={self._sharding}" if self._sharding is not None else ""
        weak = f", weak_type={self.weak_type}" if self.weak_type else ""
        manual = (f", manual_axis_type={self.manual_axis_type}" if self.manual_axis_type
                  else "")
        return (f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name}{sharding}"
                f"{weak}{manual})")

    __str__ = __repr__


def match_prefix(spec, tree, what: str, spec_name: str, of: str) -> list:
    """One entry of ``spec`` (a pytree prefix of ``tree``, e.g. in_axes) per leaf of ``tree``,
    with an error naming the transformation and the spec when they do not match."""
    from .tree import broadcast_prefix
    try:
        return broadcast_prefix(spec, tree, what=f"{what} {spec_name}")
    except ValueError as e:
        raise ValueError(f"{what}: {spec_name} {spec!r} does not match the {of}: {e}") from None


def fun_name(f) -> str:
    return getattr(f, "__name__", None) or type(f).__name__


class RefArgument(TypeError):
    """Raised by :func:`abstractify` for a mutable reference (``functrans.ref.Ref``):
    transformations that take references as arguments catch it and pass their values."""


class ForeignRef(TypeError):
    """Raised when a mutable reference is read or written under a transformation other than
    the one that made it (``ref``): ``jit`` catches it for references made outside any
    transformation and passes their values in and out (as JAX's closed-over references)."""

    def __init__(self, message: str, ref):
        super().__init__(message)
        self.ref = ref


def abstractify(x, what: str) -> ShapedArray:
    """The aval of a user argument, or a TypeError that says which argument is wrong."""
    if isinstance(x, ShapeDtypeStruct):
        return ShapedArray(x.shape, x.dtype, x.weak_type)
    try:
        return get_aval(x)
    except (TypeError, dtypes.UnsupportedDtypeError) as e:
        if getattr(x, "_is_ref", False):
            raise RefArgument(f"{what} is a Ref: only jit passes references into a "
                              "transformation; pass its value (ref[...])") from None
        raise TypeError(f"{what}: {e}. Non-array arguments must be marked static "
                        "(static_argnums/static_argnames)") from None


def flatten_fun(f: Callable, in_tree: PyTreeDef):
    """``flat_f(*leaves)`` calls ``f`` on the unflattened arguments and returns flat outputs;
    ``out_tree()`` gives the output structure after a call."""
    store = []

    def flat_f(*leaves):
        args = tree_unflatten(in_tree, leaves)
        out = f(*args)
        out_leaves, out_tree = tree_flatten(out)
        store[:] = [out_tree]
        return out_leaves

    def out_tree():
        if not store:
            raise RuntimeError("out_tree() called before the function ran")
        return store[0]

    return flat_f, out_tree


def normalize_argnums(argnums, nargs: int, what: str) -> tuple:
    """Non-negative, sorted argument indices; an error names the bad index."""
    single = isinstance(argnums, int)
    nums = (argnums,) if single else tuple(argnums)
    out = []
    for a in nums:
        a = operator.index(a)
        if not -nargs <= a < nargs:
            raise ValueError(f"{what}: argnums={argnums!r} is out of range for a call with "
                             f"{nargs} positional argument{'s' * (nargs != 1)}")
        out.append(a % nargs)
    return tuple(out)


def static_argnums_from_names(fun, static_argnums, static_argnames):
    """Resolve static_argnames to positions where the signature allows (as JAX does)."""
    static_argnums = () if static_argnums is None else (
        (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums))
    static_argnames = () if static_argnames is None else (
        (static_argnames,) if isinstance(static_argnames, str) else tuple(static_argnames))
    try:
        params = list(inspect.signature(fun).parameters.values())
    except (TypeError, ValueError):
        return static_argnums, static_argnames
    positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY,
                                                       p.POSITIONAL_OR_KEYWORD)]
    nums = set(static_argnums)
    names = set(static_argnames)
    for n in static_argnames:
        if n in positional:
            nums.add(positional.index(n))
    for i in static_argnums:
        if 0 <= i < len(positional):
            names.add(positional[i])
    return tuple(sorted(nums)), tuple(sorted(names))


def split_static(args, kwargs, static_argnums, static_argnames):
    """Separate static (hashable, part of the cache key) from dynamic arguments."""
    nargs = len(args)
    static_pos = {a % nargs if a < 0 else a for a in static_argnums if -nargs <= a < nargs}
    dyn_args = tuple(a for i, a in enumerate(args) if i not in static_pos)
    static_args = tuple((i, args[i]) for i in sorted(static_pos))
    dyn_kwargs = {k: v for k, v in kwargs.items() if k not in static_argnames}
    static_kwargs = tuple(sorted((k, v) for k, v in kwargs.items() if k in static_argnames))
    return dyn_args, dyn_kwargs, static_args, static_kwargs


def merge_static(dyn_args, static_args):
    args = list(dyn_args)
    for i, v in static_args:
        args.insert(i, v)
    return args


def is_tracer(x) -> bool:
    return isinstance(x, Tracer)
