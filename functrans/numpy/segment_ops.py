"""Segment reductions (``jax.ops``'s ``segment_sum``, ``segment_prod``, ``segment_max``,
``segment_min``): rows of ``data`` combined by segment id along the leading axis.

Each is one scatter (``scatter-add``, ``-mul``, ``-max``, ``-min``) of ``data`` into an array
of ``num_segments`` rows filled with the reduction's identity, so grad, vmap and jit go
through them as through any ``.at[]`` update. Out-of-range ids (negative ones too) are
dropped; empty segments keep the identity (0, 1, -inf or the dtype's min, +inf or its max)::

    >>> segment_sum(fnp.array([1.0, 2.0, 3.0, 4.0]), fnp.array([0, 0, 2, 7]), num_segments=3)
    Array([3., 0., 3.], dtype=float64)
    >>> segment_max(fnp.array([1, 5, 3]), fnp.array([1, 1, 0]), num_segments=3)
    Array([                   3,                    5, -9223372036854775808], dtype=int64)
"""
from __future__ import annotations

import operator

import numpy as np

from .. import lax
from .. import primitives as P
from ..core import dtypes
from ..core.trace import Tracer, concrete_of, get_aval
from ._core import asarray
from .shape_ops import broadcast_to

__all__ = ["segment_sum", "segment_prod", "segment_max", "segment_min"]

_PRIMS = {"add": P.scatter_add_p, "mul": P.scatter_mul_p, "min": P.scatter_min_p,
          "max": P.scatter_max_p}


def _identity(kind, dtype):
    """The reduction's identity in ``dtype``: what an empty segment holds."""
    kind_of = dtypes.kind(dtype)
    if kind == "add":
        return np.zeros((), dtype)
    if kind == "mul":
        return np.ones((), dtype)
    if kind_of == "b":
        return np.asarray(kind == "min", dtype)
    if kind_of in "fc":
        return np.asarray(np.inf if kind == "min" else -np.inf, dtype)
    info = np.iinfo(dtype)
    return np.asarray(info.max if kind == "min" else info.min, dtype)


def _num_segments(name, segment_ids, num_segments):
    if num_segments is None:
        if isinstance(segment_ids, Tracer):
            ids = segment_ids._concrete(f"{name}'s num_segments=None (the largest segment id "
                                        "+ 1: pass num_segments under jit and vmap)")
        else:
            ids = concrete_of(segment_ids)
        num_segments = int(ids.max()) + 1 if ids.size else 0
    elif isinstance(num_segments, Tracer):
        num_segments = int(num_segments._concrete(f"{name}'s num_segments"))
    num_segments = operator.index(num_segments)
    if num_segments < 0:
        raise ValueError("num_segments must be non-negative.")
    return num_segments


def _segment_update(name, kind, reducer, data, segment_ids, num_segments, bucket_size, mode):
    if mode not in (None, "drop", "fill", "clip", "promise_in_bounds") and \
            getattr(mode, "name", None) not in ("FILL_OR_DROP", "CLIP", "PROMISE_IN_BOUNDS"):
        raise ValueError(f"{name}: unknown mode {mode!r} (drop, clip, promise_in_bounds)")
    mode_name = getattr(mode, "name", mode)
    scatter_mode = "clip" if mode_name in ("clip", "promise_in_bounds", "CLIP",
                                           "PROMISE_IN_BOUNDS") else "drop"
    data = asarray(data)
    segment_ids = asarray(segment_ids)
    ids_aval = get_aval(segment_ids)
    if dtypes.kind(ids_aval.dtype) not in "iu":
        raise TypeError(f"{name}: segment_ids must be an integer array, got "
                        f"{ids_aval.str_short()}")
    aval = get_aval(data)
    dtype = aval.dtype
    num_segments = _num_segments(name, segment_ids, num_segments)
    # A scalar ``data`` is every row's value (JAX broadcasts it to the ids' shape: jraph's
    # attention takes segment_max of a constant).
    trailing = aval.shape[1:]
    updates = broadcast_to(data, ids_aval.shape + trailing)
    prim = _PRIMS[kind]
    if kind == "mul" and dtype == dtypes.bool_:
        prim = P.scatter_min_p  # logical and
    identity = _identity(kind, dtype)
    if bucket_size is None:
        out = lax.full((num_segments,) + trailing, identity, dtype)
        return prim.bind1(out, updates, segment_ids, axes=(0,), mode=scatter_mode)
    # Buckets of ``bucket_size`` consecutive rows reduced apart, then together (JAX's way to
    # keep long sums and products accurate).
    bucket_size = operator.index(bucket_size)
    if bucket_size <= 0:
        raise ValueError(f"{name}: bucket_size must be positive, got {bucket_size}")
    n = ids_aval.shape[0] if ids_aval.ndim else 1
    num_buckets = -(-max(n, 1) // bucket_size)
    rows = (np.arange(n, dtype=ids_aval.dtype) // bucket_size)
    rows = rows.reshape(rows.shape + (1,) * max(ids_aval.ndim - 1, 0)) if ids_aval.ndim else \
        rows.reshape(())
    out = lax.full((num_buckets, num_segments) + trailing, identity, dtype)
    out = prim.bind1(out, updates, asarray(rows), segment_ids, axes=(0, 1), mode=scatter_mode)
    return reducer(out)


def segment_sum(data, segment_ids, num_segments=None, indices_are_sorted=False,
                unique_indices=False, bucket_size=None, mode=None):
    """Sum of the rows of ``data`` in each segment: ``out[s] = sum(data[segment_ids == s])``.

    ``num_segments`` is static (``max(segment_ids) + 1`` if None: only where the ids are
    concrete, not under jit or vmap); out-of-range ids are dropped (``mode="clip"`` clamps
    them); ``bucket_size`` sums buckets of that many rows first; ``indices_are_sorted`` and
    ``unique_indices`` are hints, accepted and not needed.

    >>> segment_sum(fnp.arange(6.0).reshape(3, 2), fnp.array([1, 0, 1]))
    Array([[2., 3.],
           [4., 6.]], dtype=float64)
    """
    return _segment_update("segment_sum", "add", lambda x: lax.reduce_sum(x, (0,)), data,
                           segment_ids, num_segments, bucket_size, mode)


def segment_prod(data, segment_ids, num_segments=None, indices_are_sorted=False,
                 unique_indices=False, bucket_size=None, mode=None):
    """Product of the rows of ``data`` in each segment (1 for an empty one); arguments as
    :func:`segment_sum`'s.

    >>> segment_prod(fnp.array([2.0, 3.0, 4.0]), fnp.array([0, 0, 2]), num_segments=3)
    Array([6., 1., 4.], dtype=float64)
    """
    return _segment_update("segment_prod", "mul", lambda x: lax.reduce_prod(x, (0,)), data,
                           segment_ids, num_segments, bucket_size, mode)


def segment_max(data, segment_ids, num_segments=None, indices_are_sorted=False,
                unique_indices=False, bucket_size=None, mode=None):
    """Maximum of the rows of ``data`` in each segment (-inf, or the integer dtype's minimum,
    for an empty one); arguments as :func:`segment_sum`'s.

    >>> segment_max(fnp.array([2.0, 3.0, 1.0]), fnp.array([0, 0, 2]), num_segments=3)
    Array([  3., -inf,   1.], dtype=float64)
    """
    return _segment_update("segment_max", "max", lambda x: lax.reduce_max(x, (0,)), data,
                           segment_ids, num_segments, bucket_size, mode)


def segment_min(data, segment_ids, num_segments=None, indices_are_sorted=False,
                unique_indices=False, bucket_size=None, mode=None):
    """Minimum of the rows of ``data`` in each segment (+inf, or the integer dtype's maximum,
    for an empty one); arguments as :func:`segment_sum`'s.

    >>> segment_min(fnp.array([2.0, 3.0, 1.0]), fnp.array([0, 0, 2]), num_segments=3)
    Array([ 2., inf,  1.], dtype=float64)
    """
    return _segment_update("segment_min", "min", lambda x: lax.reduce_min(x, (0,)), data,
                           segment_ids, num_segments, bucket_size, mode)
