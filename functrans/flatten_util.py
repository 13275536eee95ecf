"""Flatten a pytree of arrays into one vector and back (``jax.flatten_util``).

    >>> flat, unravel = ravel_pytree({"w": fnp.ones((2, 2)), "b": fnp.zeros(1)})
    >>> flat
    Array([0., 1., 1., 1., 1.], dtype=float64)
    >>> unravel(flat * 2)["w"]
    Array([[2., 2.],
           [2., 2.]], dtype=float64)
"""
from __future__ import annotations

import math

import numpy as np

from . import lax
from .core import dtypes
from .core.trace import get_aval
from .core.tree import keystr, tree_flatten, tree_leaves_with_path, tree_unflatten

__all__ = ["ravel_pytree"]


def ravel_pytree(pytree):
    """``(flat, unravel)``: the leaves of ``pytree`` raveled and concatenated in flattening
    order into one 1-D array, and a function mapping such a vector back to the pytree.

    Leaves (arrays, NumPy arrays, Python scalars, tracers) are converted to their common dtype
    under JAX's promotion rules (so an int32 and a float32 leaf give float32); ``unravel``
    then restores each leaf's shape and dtype, and requires a vector of that common dtype.
    When all leaves share one dtype there is no conversion and ``unravel`` accepts a vector
    of any dtype. A tree without leaves gives an empty float32 vector. ``unravel`` is
    hashable, and equal for trees of the same structure, shapes and dtypes.

    >>> flat, unravel = ravel_pytree((fnp.arange(2, dtype="int32"), fnp.ones(1, "float32")))
    >>> flat
    Array([0., 1., 1.], dtype=float32)
    >>> unravel(flat)
    (Array([0, 1], dtype=int32), Array([1.], dtype=float32))
    """
    leaves, treedef = tree_flatten(pytree)
    if not leaves:
        return lax.full((0,), 0, "float32"), _Unravel(treedef, (), (), None, None)
    avals = []
    for i, x in enumerate(leaves):
        try:
            avals.append(get_aval(x))
        except TypeError as e:
            path = tree_leaves_with_path(pytree)[i][0]
            raise TypeError(f"ravel_pytree: the leaf at {keystr(path) or 'the root'} is not "
                            f"an array: {e}") from None
    from_dtypes = tuple(a.dtype for a in avals)
    sizes = tuple(math.prod(a.shape) for a in avals)
    shapes = tuple(a.shape for a in avals)
    to_dtype = _result_type(from_dtypes)
    if all(d == to_dtype for d in from_dtypes):
        # One dtype: no conversion either way, so unravel keeps whatever dtype it is given.
        flat = lax.concatenate([lax.reshape(x, (n,)) for x, n in zip(leaves, sizes)], 0)
        return flat, _Unravel(treedef, sizes, shapes, None, None)
    flat = lax.concatenate([lax.reshape(lax.convert_element_type(x, to_dtype), (n,))
                            for x, n in zip(leaves, sizes)], 0)
    return flat, _Unravel(treedef, sizes, shapes, from_dtypes, to_dtype)


class _Unravel:
    """The inverse of one ``ravel_pytree`` call: hashable, so it can be a static argument."""

    __slots__ = ("treedef", "sizes", "shapes", "from_dtypes", "to_dtype")

    def __init__(self, treedef, sizes, shapes, from_dtypes, to_dtype):
        self.treedef, self.sizes, self.shapes = treedef, sizes, shapes
        self.from_dtypes, self.to_dtype = from_dtypes, to_dtype  # None: dtype-polymorphic

    def _key(self):
        return (self.treedef, self.sizes, self.shapes, self.from_dtypes, self.to_dtype)

    def __eq__(self, other):
        return type(other) is _Unravel and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        return f"<unravel_pytree for {self.treedef}>"

    def __call__(self, flat):
        if not self.sizes:
            return tree_unflatten(self.treedef, [])
        aval = get_aval(flat)
        if self.to_dtype is not None and aval.dtype != self.to_dtype:
            raise TypeError(f"unravel function given array of dtype {aval.dtype}, but "
                            f"expected dtype {self.to_dtype}")
        total = sum(self.sizes)
        if aval.ndim == 0 or aval.shape[0] != total:
            raise ValueError(f"unravel function given an array of shape {aval.shape}, but the "
                             f"raveled tree has {total} elements: expected shape ({total},)")
        leaves, start = [], 0
        for i, (size, shape) in enumerate(zip(self.sizes, self.shapes)):
            leaf = lax.reshape(lax.slice_in_dim(flat, start, start + size, axis=0), shape)
            if self.from_dtypes is not None:
                leaf = lax.convert_element_type(leaf, self.from_dtypes[i])
            leaves.append(leaf)
            start += size
        return tree_unflatten(self.treedef, leaves)


# JAX promotes over a lattice rather than NumPy's table: an int meets a float at that float
# (int32 + float16 -> float16, where NumPy gives float64), and uint64 with a signed int meets at
# the *weak* float, which any concrete float or complex dtype then absorbs.
_WEAK_FLOAT = "weak float"
_RANK = {"b": 0, "u": 1, "i": 1, "f": 2, "c": 3}


def _result_type(dts) -> np.dtype:
    """The common dtype of strong dtypes ``dts`` under JAX's type promotion lattice.

    >>> _result_type((np.dtype("int32"), np.dtype("float16")))
    dtype('float16')
    """
    out = dts[0]
    for d in dts[1:]:
        out = _join(out, d)
    if out is _WEAK_FLOAT:
        return dtypes.default_float_dtype()
    return dtypes.canonicalize_dtype(out)


def _join(a, b):
    if a is _WEAK_FLOAT or b is _WEAK_FLOAT:
        other = b if a is _WEAK_FLOAT else a
        return other if other is not _WEAK_FLOAT and dtypes.kind(other) in "fc" else _WEAK_FLOAT
    if a == b:
        return a
    if _RANK[dtypes.kind(a)] != _RANK[dtypes.kind(b)]:
        hi, lo = (a, b) if _RANK[dtypes.kind(a)] > _RANK[dtypes.kind(b)] else (b, a)
        # the complex type whose parts hold the float
        if dtypes.kind(hi) == "c" and dtypes.kind(lo) == "f":
            return np.dtype(f"complex{8 * max(hi.itemsize, 2 * lo.itemsize)}")
        return hi
    if dtypes.kind(a) == dtypes.kind(b):
        return a if a.itemsize >= b.itemsize else b
    signed, unsigned = (a, b) if dtypes.kind(a) == "i" else (b, a)
    if signed.itemsize > unsigned.itemsize:
        return signed
    if unsigned.itemsize == 8:
        return _WEAK_FLOAT
    return np.dtype(f"int{16 * unsigned.itemsize}")
