"""``functrans.ops``: JAX's segment reductions (``jax.ops``): rows of ``data`` along its
leading axis combined by segment id, as graph and mesh libraries (jraph, jax-md) aggregate
messages per node.

    >>> import functrans.numpy as fnp
    >>> data = fnp.array([1.0, 2.0, 3.0, 4.0])
    >>> segment_sum(data, fnp.array([0, 0, 2, 7]), num_segments=3)  # id 7 is dropped
    Array([3., 0., 3.], dtype=float64)
    >>> segment_max(data, fnp.array([1, 1, 0, 0]), num_segments=3)  # empty: the identity
    Array([  4.,   2., -inf], dtype=float64)

Each is one scatter into ``num_segments`` rows of the reduction's identity, so ``grad``,
``vmap`` and ``jit`` apply; ``num_segments`` is static (inferred from concrete ids when None).
The implementation is :mod:`functrans.numpy.segment_ops`.
"""
from __future__ import annotations

from .numpy.segment_ops import segment_max, segment_min, segment_prod, segment_sum

__all__ = ["segment_max", "segment_min", "segment_prod", "segment_sum"]
