"""``functrans.lax.linalg``: the decomposition primitives with JAX's ``jax.lax.linalg`` names
and conventions. Leading dimensions are batch dimensions; operands are float32, float64,
complex64 or complex128.

    >>> v, w = lax.linalg.eigh(fnp.array([[2.0, 1.0], [1.0, 2.0]]))
    >>> w
    Array([1., 3.], dtype=float64)
"""
from __future__ import annotations

import numpy as np

from .. import primitives as P
from ..core.trace import get_aval
from ..primitives.linalg_rules import conj, mH
from functrans.core.dtypes import kind as dtype_kind

from .linalg_householder import householder_product, ormqr  # noqa: F401

__all__ = ["cholesky", "triangular_solve", "lu", "lu_pivots_to_permutation", "qr", "eigh", "svd",
           "eig", "symmetrize", "householder_product", "ormqr", "tridiagonal_solve"]


def _arr(x):
    try:
        get_aval(x)
        return x
    except TypeError:  # lists, Python scalars
        return np.asarray(x)


def symmetrize(x):
    """``(x + x^H) / 2`` over the last two axes (the Hermitian part; ``x^T`` for real ``x``).

    >>> lax.linalg.symmetrize(fnp.array([[1.0, 2.0], [0.0, 1.0]]))
    Array([[1., 1.],
           [1., 1.]], dtype=float64)
    """
    x = _arr(x)
    return P.mul_p.bind1(P.add_p.bind1(x, mH(x)), np.array(0.5, get_aval(x).dtype))


def cholesky(x, *, symmetrize_input: bool = True):
    """Lower Cholesky factor ``L`` (``L @ L.T == x``; ``L @ L^H`` for complex) of symmetric
    (Hermitian) positive-definite matrices; NaN where ``x`` is not positive definite.

    >>> lax.linalg.cholesky(fnp.array([[4.0, 2.0], [2.0, 5.0]]))
    Array([[2., 0.],
           [1., 2.]], dtype=float64)
    """
    x = _arr(x)
    if symmetrize_input:
        _check_square("cholesky", x)
        x = symmetrize(x)
    return P.cholesky_p.bind1(x)


def _check_square(name, x):
    s = get_aval(x).shape
    if len(s) < 2 or s[-1] != s[-2]:
        raise ValueError(f"lax.linalg.{name}: expected square matrices in the last two "
                         f"dimensions, got shape {s}")


def triangular_solve(a, b, *, left_side: bool = False, lower: bool = False,
                     transpose_a: bool = False, conjugate_a: bool = False,
                     unit_diagonal: bool = False):
    """``op(a)^-1 b`` (left_side) or ``b op(a)^-1`` for triangular ``a``, reading only its
    ``lower`` or upper triangle; ``op`` transposes when ``transpose_a`` and conjugates when
    ``conjugate_a`` (both: the conjugate transpose). Batch dimensions of ``a`` and ``b``
    broadcast.

    >>> lax.linalg.triangular_solve(fnp.array([[2.0, 0.0], [1.0, 1.0]]),
    ...                             fnp.array([[2.0], [3.0]]), left_side=True, lower=True)
    Array([[1.],
           [2.]], dtype=float64)
    """
    a, b = _arr(a), _arr(b)
    if conjugate_a:  # the primitive's transpose_a is plain: conj(a)^T is a^H (real a: a)
        a = conj(a)
    sa, sb = get_aval(a).shape, get_aval(b).shape
    if len(sa) < 2 or len(sb) < 2:
        raise ValueError(f"lax.linalg.triangular_solve: a and b must be (batches of) matrices, "
                         f"got shapes {sa} and {sb}")
    try:
        batch = np.broadcast_shapes(sa[:-2], sb[:-2])
    except ValueError:
        raise ValueError(f"lax.linalg.triangular_solve: batch dimensions of a {sa} and b {sb} "
                         "do not broadcast") from None
    a, b = _broadcast_batch(a, batch), _broadcast_batch(b, batch)
    return P.triangular_solve_p.bind1(a, b, left_side=left_side, lower=lower,
                                      transpose_a=transpose_a, unit_diagonal=unit_diagonal)


def _broadcast_batch(x, batch):
    s = get_aval(x).shape
    if s[:-2] == tuple(batch):
        return x
    shape = tuple(batch) + s[-2:]
    return P.broadcast_in_dim_p.bind1(x, shape=shape, broadcast_dimensions=tuple(
        range(len(shape) - len(s), len(shape))))


def lu(x):
    """LU decomposition with partial pivoting: ``(lu, pivots, permutation)`` with
    ``x[permutation] == L @ U`` (``L`` unit lower, ``U`` upper, packed in ``lu``); ``pivots``
    are LAPACK's 0-based row swaps.

    >>> lu, piv, perm = lax.linalg.lu(fnp.array([[1.0, 2.0], [3.0, 4.0]]))
    >>> perm
    Array([1, 0], dtype=int32)
    """
    return tuple(P.lu_p.bind_all(_arr(x)))


def lu_pivots_to_permutation(pivots, permutation_size: int):
    """The permutation of ``permutation_size`` rows that LAPACK's successive row swaps
    ``pivots`` (..., k) apply (row i swapped with row ``pivots[i]``, in order).

    >>> lax.linalg.lu_pivots_to_permutation(fnp.array([2, 2, 2], dtype="int32"), 3)
    Array([2, 0, 1], dtype=int32)
    """
    from .control_flow import fori_loop
    from .ops import broadcast_in_dim, dynamic_index_in_dim, iota, select
    pivots = _arr(pivots)
    aval = get_aval(pivots)
    if aval.ndim < 1 or dtype_kind(aval.dtype) not in "iu":
        raise TypeError(f"lax.linalg.lu_pivots_to_permutation: pivots must be an integer array "
                        f"of at least one dimension, got {aval.str_short()}")
    k, n = aval.shape[-1], int(permutation_size)
    if k > n:
        raise ValueError(f"lax.linalg.lu_pivots_to_permutation: {k} pivots for a permutation of "
                         f"size {n}")
    shape = aval.shape[:-1] + (n,)
    idx = broadcast_in_dim(iota(aval.dtype, n), shape, (len(shape) - 1,))

    def swap(i, perm):
        # perm[i] <-> perm[pivots[i]], with the indices broadcast over the batch dimensions.
        j = broadcast_in_dim(dynamic_index_in_dim(pivots, i, -1), shape, tuple(range(len(shape))))
        at_i = broadcast_in_dim(dynamic_index_in_dim(perm, i, -1), shape, tuple(range(len(shape))))
        at_j = P.reduce_sum_p.bind1(select(P.eq_p.bind1(idx, j), perm, P.mul_p.bind1(
            perm, np.array(0, aval.dtype))), axes=(len(shape) - 1,))
        at_j = broadcast_in_dim(at_j, shape, tuple(range(len(shape) - 1)))
        i_b = P.convert_element_type_p.bind1(i, new_dtype=aval.dtype, weak_type=False)
        out = select(P.eq_p.bind1(idx, j), at_i, perm)
        return select(P.eq_p.bind1(idx, i_b), at_j, out)

    return fori_loop(0, k, swap, idx)


def qr(x, *, full_matrices: bool = True):
    """QR decomposition ``(q, r)``: ``q`` orthonormal columns, ``r`` upper triangular.

    >>> q, r = lax.linalg.qr(fnp.array([[3.0, 0.0], [4.0, 1.0]]))
    >>> r.shape
    (2, 2)
    """
    return tuple(P.qr_p.bind_all(_arr(x), full_matrices=full_matrices))


def eigh(x, *, lower: bool = True, symmetrize_input: bool = True, sort_eigenvalues=True):
    """Eigenvectors and eigenvalues ``(v, w)`` of symmetric (Hermitian) matrices, ``w``
    ascending and real, and ``x @ v == v * w``.

    >>> v, w = lax.linalg.eigh(fnp.array([[2.0, 0.0], [0.0, 1.0]]))
    >>> w
    Array([1., 2.], dtype=float64)
    """
    del sort_eigenvalues  # LAPACK returns them ascending
    x = _arr(x)
    if symmetrize_input:
        _check_square("eigh", x)
        x = symmetrize(x)
    v, w = P.eigh_p.bind_all(x, lower=lower)
    return v, w


def svd(x, *, full_matrices: bool = True, compute_uv: bool = True):
    """Singular value decomposition: ``(u, s, vh)`` with ``x == u * s @ vh`` (``s``
    descending), or ``s`` alone without ``compute_uv``.

    >>> lax.linalg.svd(fnp.array([[3.0, 0.0], [0.0, -4.0]]), compute_uv=False)
    Array([4., 3.], dtype=float64)
    """
    outs = P.svd_p.bind_all(_arr(x), full_matrices=full_matrices, compute_uv=compute_uv)
    if not compute_uv:
        return outs[0]
    s, u, vt = outs
    return u, s, vt


def eig(x, *, compute_left_eigenvectors: bool = True, compute_right_eigenvectors: bool = True):
    """Eigenvalues ``w`` of general square matrices, then the requested left eigenvectors
    ``vl`` (``vl[..., j]^H x == w[j] vl[..., j]^H``) and right eigenvectors ``vr``
    (``x @ vr == vr * w``), as a list; all complex, eigenvector columns of unit norm with the
    largest component real. All three differentiate where the eigenvalues are distinct (JAX
    differentiates eigenvalues only).

    >>> w, = lax.linalg.eig(fnp.array([[0.0, -1.0], [1.0, 0.0]]),
    ...                     compute_left_eigenvectors=False, compute_right_eigenvectors=False)
    >>> w
    Array([0.+1.j, 0.-1.j], dtype=complex128)
    """
    return list(P.eig_p.bind_all(_arr(x), compute_left_eigenvectors=compute_left_eigenvectors,
                                 compute_right_eigenvectors=compute_right_eigenvectors))


def tridiagonal_solve(dl, d, du, b, *, perturb_singular: bool = False):
    """Solve ``A X = b`` for the tridiagonal ``A`` with sub-, main and super-diagonals ``dl``,
    ``d``, ``du`` (..., m): ``dl[i] = A[i, i-1]`` (``dl[0]`` unused), ``du[i] = A[i, i+1]``
    (``du[m-1]`` unused); ``b`` is (..., m, k). LAPACK's ``?gtsv`` (partial pivoting); NaN
    where ``A`` is singular.

    >>> lax.linalg.tridiagonal_solve(fnp.array([0.0, 1.0]), fnp.array([2.0, 2.0]),
    ...                              fnp.array([1.0, 0.0]), fnp.array([[3.0], [3.0]]))
    Array([[1.],
           [1.]], dtype=float64)
    """
    if perturb_singular:
        raise NotImplementedError("lax.linalg.tridiagonal_solve: perturb_singular=True (JAX's "
                                  "perturbation of tiny pivots) is not provided by functrans")
    return P.tridiagonal_solve_p.bind1(_arr(dl), _arr(d), _arr(du), _arr(b))
