"""``functrans.experimental.sparse`` (JAX's ``jax.experimental.sparse``): the batched-COO
sparse matrix :class:`BCOO`, for 2-D matrices without batch dimensions, and :func:`sparsify`
(dense programs evaluated on BCOO values, in transform.py).

A BCOO holds ``data`` (nse,) and ``indices`` (nse, 2) as arrays (a pytree, so it goes through
jit, vmap and grad with its stored values as leaves) and multiplies dense operands by
scatter-adding the products of its entries, so its cost follows the number of stored entries.

    >>> m = BCOO.fromdense(fnp.array([[0.0, 2.0], [1.0, 0.0]]))
    >>> m.nse, m @ fnp.array([1.0, 10.0])
    (2, Array([20.,  1.], dtype=float64))
"""
from __future__ import annotations

import numpy as np

from ... import numpy as fnp
from ...core.tree import register_pytree_node_class

__all__ = ["BCOO", "sparsify"]


@register_pytree_node_class
class BCOO:
    """A 2-D sparse matrix in coordinate format: ``data[i]`` sits at ``indices[i]``.

    Repeated indices add up (as in JAX).

        >>> BCOO((fnp.array([1.0, 2.0]), fnp.array([[0, 0], [1, 1]])), shape=(2, 2)).todense()
        Array([[1., 0.],
               [0., 2.]], dtype=float64)
    """

    def __init__(self, args, *, shape):
        data, indices = args
        shape = tuple(int(d) for d in shape)
        if len(shape) != 2:
            raise NotImplementedError(f"BCOO: only 2-D matrices are implemented, got shape {shape}")
        data, indices = fnp.asarray(data), fnp.asarray(indices)
        if data.ndim != 1 or indices.shape != (data.shape[0], 2):
            raise ValueError(f"BCOO: data must be (nse,) and indices (nse, 2); got "
                             f"{data.shape} and {indices.shape}")
        self.data, self.indices, self.shape = data, indices, shape

    def tree_flatten(self):
        return (self.data, self.indices), self.shape

    @classmethod
    def tree_unflatten(cls, shape, children):
        obj = object.__new__(cls)
        obj.data, obj.indices = children
        obj.shape = shape
        return obj

    @property
    def nse(self):
        """The number of stored entries."""
        return self.data.shape[0]

    @property
    def dtype(self):
        return self.data.dtype

    @property
    def ndim(self):
        return 2

    @property
    def T(self):
        """The transpose (indices' columns swapped).

            >>> BCOO.fromdense(fnp.array([[0.0, 1.0], [0.0, 0.0]])).T.todense()
            Array([[0., 0.],
                   [1., 0.]], dtype=float64)
        """
        return BCOO((self.data, self.indices[:, ::-1]), shape=self.shape[::-1])

    @classmethod
    def fromdense(cls, mat):
        """The sparse form of a concrete dense 2-D matrix (its nonzero entries).

            >>> BCOO.fromdense(fnp.eye(3)).nse
            3
        """
        mat = np.asarray(mat)
        if mat.ndim != 2:
            raise NotImplementedError(f"BCOO.fromdense: only 2-D matrices, got shape {mat.shape}")
        rows, cols = np.nonzero(mat)
        return cls((mat[rows, cols], np.stack([rows, cols], axis=1)), shape=mat.shape)

    @classmethod
    def from_scipy_sparse(cls, mat):
        """The BCOO of a SciPy sparse matrix (its stored entries, in COO order).

            >>> import scipy.sparse
            >>> BCOO.from_scipy_sparse(scipy.sparse.eye(2)).todense()
            Array([[1., 0.],
                   [0., 1.]], dtype=float64)
        """
        coo = mat.tocoo()
        return cls((np.asarray(coo.data), np.stack([coo.row, coo.col], axis=1).astype(np.int32)),
                   shape=coo.shape)

    def todense(self):
        """The dense matrix (repeated indices summed)."""
        out = fnp.zeros(self.shape, self.data.dtype)
        return out.at[self.indices[:, 0], self.indices[:, 1]].add(self.data)

    def sum(self, axis=None):
        """Sum of the entries, over ``axis`` (None: all), as a dense array.

            >>> BCOO.fromdense(fnp.array([[1.0, 2.0], [0.0, 3.0]])).sum(axis=-1)
            Array([3., 3.], dtype=float64)
        """
        if axis is None:
            return self.data.sum()
        axis = axis % 2
        keep = self.indices[:, 1 - axis]
        return fnp.zeros(self.shape[1 - axis], self.data.dtype).at[keep].add(self.data)

    def __matmul__(self, other):
        # (n, m) @ (m,) or (..., m, k) with NumPy's matmul broadcasting: each stored entry
        # (r, c, v) adds v * other[..., c, :] to row r of the result.
        other = fnp.asarray(other)
        rows, cols = self.indices[:, 0], self.indices[:, 1]
        if other.ndim == 0:
            raise ValueError("BCOO @: the right operand must have at least one dimension")
        if other.shape[-2 if other.ndim > 1 else 0] != self.shape[1]:
            raise ValueError(f"BCOO @: shapes {self.shape} and {other.shape} do not match")
        if other.ndim == 1:
            dtype = fnp.result_type(self.data, other)
            return fnp.zeros(self.shape[0], dtype).at[rows].add(self.data * other[cols])
        moved = fnp.moveaxis(other, -2, 0)  # (m, ..., k)
        contrib = self.data.reshape((-1,) + (1,) * (moved.ndim - 1)) * moved[cols]
        out = fnp.zeros((self.shape[0],) + moved.shape[1:], contrib.dtype).at[rows].add(contrib)
        return fnp.moveaxis(out, 0, -2)

    def __repr__(self):
        return f"BCOO({self.data.dtype}{list(self.shape)}, nse={self.nse})"


from .transform import sparsify  # noqa: E402  (it evaluates programs on BCOO values)
