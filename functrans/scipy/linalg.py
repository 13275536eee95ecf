"""``functrans.scipy.linalg`` (JAX's ``jax.scipy.linalg``): triangular and Cholesky/LU
solves, LU factorizations, the matrix exponential and block-diagonal matrices, composed from
``lax.linalg``'s primitives so that every transformation applies. Leading dimensions are batch
dimensions.

    >>> c = cho_factor(fnp.array([[4.0, 2.0], [2.0, 3.0]]))
    >>> cho_solve(c, fnp.array([2.0, 1.0]))
    Array([0.5, 0. ], dtype=float64)
"""
from __future__ import annotations

import numpy as np

from .. import numpy as fnp
from ..core.trace import get_aval
from ..lax import linalg as lax_linalg
from ..numpy._core import asarray
from ..numpy.linalg_decomp import _as_float, _lu_solve, _matrix, _mH
from functrans.core.dtypes import kind as dtype_kind

__all__ = ["solve_triangular", "cho_factor", "cho_solve", "cholesky", "lu", "lu_factor",
           "lu_solve", "expm", "block_diag", "toeplitz", "det", "inv", "solve", "svd", "qr", "eigh"]


def _trans(name, trans):
    """``(transpose, conjugate)`` for SciPy's ``trans`` (2/'C': the conjugate transpose)."""
    if trans in (0, "N"):
        return False, False
    if trans in (1, "T"):
        return True, False
    if trans in (2, "C"):
        return True, True
    raise ValueError(f"scipy.linalg.{name}: trans must be 0/'N', 1/'T' or 2/'C', got {trans!r}")


def _rhs(name, a, b):
    """``b`` as matrices (..., n, k) in ``a``'s dtype, and whether it was a vector."""
    b = asarray(b)
    n = get_aval(a).shape[-1]
    sb = get_aval(b).shape
    dtype = np.result_type(get_aval(a).dtype, get_aval(b).dtype)
    b = _as_float(name, b, dtype)
    if len(sb) == 0 or sb[0 if len(sb) == 1 else -2] != n:
        raise ValueError(f"scipy.linalg.{name}: shapes of a {get_aval(a).shape} and b {sb} are "
                         f"incompatible (b needs {n} rows)")
    vector = len(sb) == 1
    return (b[:, None] if vector else b), vector, get_aval(b).dtype


def solve_triangular(a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False,
                     debug=None, check_finite=True):
    """``x`` with ``op(a) @ x == b`` for triangular ``a`` (only its ``lower`` or upper
    triangle is read; ``op`` transposes for trans=1/'T', conjugate-transposes for 2/'C').

    >>> solve_triangular(fnp.array([[2.0, 0.0], [1.0, 1.0]]), fnp.array([2.0, 3.0]),
    ...                  lower=True)
    Array([1., 2.], dtype=float64)
    """
    transpose, conjugate = _trans("solve_triangular", trans)
    a = _matrix("solve_triangular", a, square=True)
    b, vector, dtype = _rhs("solve_triangular", a, b)
    a = a.astype(dtype)
    x = lax_linalg.triangular_solve(a, b, left_side=True, lower=lower, transpose_a=transpose,
                                    conjugate_a=conjugate, unit_diagonal=unit_diagonal)
    return x[..., 0] if vector else x


def cho_factor(a, lower=False, overwrite_a=False, check_finite=True):
    """``(c, lower)``: the Cholesky factor of ``a`` (upper ``c^H @ c == a`` unless
    ``lower``), for :func:`cho_solve`. The other triangle is zero.

    >>> cho_factor(fnp.array([[4.0, 2.0], [2.0, 5.0]]))[0]
    Array([[2., 1.],
           [0., 2.]], dtype=float64)
    """
    return cholesky(a, lower=lower), lower


def cholesky(a, lower=False, overwrite_a=False, check_finite=True):
    """Cholesky factor: upper ``U`` with ``U^H @ U == a`` (``U.T`` for real ``a``), or lower
    with ``lower=True``.

    >>> cholesky(fnp.array([[4.0, 2.0], [2.0, 5.0]]), lower=True)
    Array([[2., 0.],
           [1., 2.]], dtype=float64)
    """
    a = _matrix("cholesky", a, square=True)
    L = lax_linalg.cholesky(a)
    return L if lower else _mH(L)


def cho_solve(c_and_lower, b, overwrite_b=False, check_finite=True):
    """``x`` with ``a @ x == b`` given ``cho_factor(a)``.

    >>> cho_solve(cho_factor(fnp.array([[4.0, 0.0], [0.0, 1.0]])), fnp.array([4.0, 2.0]))
    Array([1., 2.], dtype=float64)
    """
    c, lower = c_and_lower
    c = _matrix("cho_solve", c, square=True)
    b, vector, dtype = _rhs("cho_solve", c, b)
    c = c.astype(dtype)
    # a = L L^H: solve L y = b, then L^H x = y (with U = L^H when the factor is upper).
    y = lax_linalg.triangular_solve(c, b, left_side=True, lower=lower, transpose_a=not lower,
                                    conjugate_a=not lower)
    x = lax_linalg.triangular_solve(c, y, left_side=True, lower=lower, transpose_a=lower,
                                    conjugate_a=lower)
    return x[..., 0] if vector else x


def _unpack(lu_):
    """(L, U) of a packed (..., m, n) LU factorization: L (..., m, k) unit lower, U (k, n)."""
    *_, m, n = get_aval(lu_).shape
    k = min(m, n)
    eye = fnp.eye(m, k, dtype=get_aval(lu_).dtype)
    return fnp.tril(lu_[..., :, :k], -1) + eye, fnp.triu(lu_[..., :k, :])


def lu(a, permute_l=False, overwrite_a=False, check_finite=True):
    """LU decomposition with partial pivoting: ``(p, l, u)`` with ``a == p @ l @ u``, or
    ``(p @ l, u)`` with ``permute_l``.

    >>> p, l, u = lu(fnp.array([[1.0, 2.0], [3.0, 4.0]]))
    >>> bool(fnp.allclose(p @ l @ u, fnp.array([[1.0, 2.0], [3.0, 4.0]])))
    True
    """
    a = _matrix("lu", a)
    lu_, _, perm = lax_linalg.lu(a)
    l, u = _unpack(lu_)
    m = get_aval(a).shape[-2]
    dtype = get_aval(a).dtype
    p = (perm[..., None, :] == fnp.arange(m, dtype=get_aval(perm).dtype)[:, None]).astype(dtype)
    if permute_l:
        return fnp.matmul(p, l), u
    return p, l, u


def lu_factor(a, overwrite_a=False, check_finite=True):
    """``(lu, piv)``: the packed LU factorization and its 0-based row swaps, for
    :func:`lu_solve`.

    >>> lu_factor(fnp.array([[1.0, 2.0], [3.0, 4.0]]))[1]
    Array([1, 1], dtype=int32)
    """
    a = _matrix("lu_factor", a, square=True)
    lu_, pivots, _ = lax_linalg.lu(a)
    return lu_, pivots


def lu_solve(lu_and_piv, b, trans=0, overwrite_b=False, check_finite=True):
    """``x`` with ``op(a) @ x == b`` given ``lu_factor(a)`` (``op`` transposes for
    trans=1/'T', conjugate-transposes for 2/'C').

    >>> lu_solve(lu_factor(fnp.array([[1.0, 2.0], [3.0, 4.0]])), fnp.array([5.0, 11.0]))
    Array([1., 2.], dtype=float64)
    """
    lu_, piv = lu_and_piv
    transpose, conjugate = _trans("lu_solve", trans)
    lu_ = _matrix("lu_solve", lu_, square=True)
    b, vector, dtype = _rhs("lu_solve", lu_, b)
    lu_ = lu_.astype(dtype)
    n = get_aval(lu_).shape[-1]
    sb = get_aval(b).shape
    piv = asarray(piv)
    if (get_aval(piv).shape != get_aval(lu_).shape[:-1]
            or dtype_kind(get_aval(piv).dtype) not in "iu"):
        raise ValueError(f"scipy.linalg.lu_solve: pivots {get_aval(piv).str_short()} do not "
                         f"match the factorization's shape {get_aval(lu_).shape} (integer "
                         f"pivots of shape {get_aval(lu_).shape[:-1]} expected)")
    perm = lax_linalg.lu_pivots_to_permutation(piv, n)
    batch = np.broadcast_shapes(get_aval(lu_).shape[:-2], sb[:-2])
    lu_ = fnp.broadcast_to(lu_, batch + (n, n))
    perm = fnp.broadcast_to(perm, batch + (n,))
    b = fnp.broadcast_to(b, batch + sb[-2:])
    if not transpose:
        x = _lu_solve(lu_, perm, b)
    else:
        # a[perm] = L U, so a^T = U^T L^T P: solve U^T z = b, L^T y = z, then x[perm] = y
        # (conjugate transposes for trans='C').
        z = lax_linalg.triangular_solve(lu_, b, left_side=True, lower=False, transpose_a=True,
                                        conjugate_a=conjugate)
        y = lax_linalg.triangular_solve(lu_, z, left_side=True, lower=True, transpose_a=True,
                                        conjugate_a=conjugate, unit_diagonal=True)
        inverse = fnp.argsort(perm, axis=-1)
        x = fnp.take_along_axis(y, fnp.broadcast_to(inverse[..., :, None], get_aval(y).shape),
                                axis=-2)
    return x[..., 0] if vector else x


def block_diag(*arrs):
    """Block-diagonal matrix of the given matrices (scalars and vectors as 1-row blocks).

    >>> block_diag(fnp.ones((1, 1)), 2 * fnp.ones((2, 2)))
    Array([[1., 0., 0.],
           [0., 2., 2.],
           [0., 2., 2.]], dtype=float64)
    """
    if not arrs:
        return fnp.zeros((1, 0))
    arrs = [fnp.atleast_2d(asarray(a)) for a in arrs]
    for a in arrs:
        if get_aval(a).ndim != 2:
            raise ValueError(f"scipy.linalg.block_diag: arguments must have at most 2 "
                             f"dimensions, got shape {get_aval(a).shape}")
    dtype = fnp.result_type(*arrs)
    widths = [get_aval(a).shape[1] for a in arrs]
    total = sum(widths)
    rows, start = [], 0
    for a, w in zip(arrs, widths):
        rows.append(fnp.pad(a.astype(dtype), ((0, 0), (start, total - start - w))))
        start += w
    return fnp.concatenate(rows, axis=0)


def toeplitz(c, r=None):
    """Toeplitz matrix with first column ``c`` and first row ``r`` (``r[0]`` is ignored;
    default ``conj(c)``). Leading dimensions of ``c`` and ``r`` broadcast as batch dimensions.

    >>> toeplitz(fnp.array([1.0, 2.0, 3.0]), fnp.array([1.0, 4.0]))
    Array([[1., 4.],
           [2., 1.],
           [3., 2.]], dtype=float64)
    """
    c = fnp.atleast_1d(asarray(c))
    r = fnp.conj(c) if r is None else fnp.atleast_1d(asarray(r))
    n, m = c.shape[-1], r.shape[-1]
    batch = np.broadcast_shapes(c.shape[:-1], r.shape[:-1])
    dtype = fnp.result_type(c, r)
    c = fnp.broadcast_to(c, batch + (n,)).astype(dtype)
    r = fnp.broadcast_to(r, batch + (m,)).astype(dtype)
    # Entry (i, j) depends on i - j only: index one vector holding r[m-1], ..., r[1], c[0],
    # ..., c[n-1] at (m - 1) + i - j.
    values = fnp.concatenate([fnp.flip(r[..., 1:], axis=-1), c], axis=-1)
    index = (m - 1) + np.arange(n)[:, None] - np.arange(m)[None, :]
    return values[..., index]


def det(a, overwrite_a=False, check_finite=True):
    """Determinant (``fnp.linalg.det``).

    >>> det(fnp.array([[1.0, 2.0], [3.0, 4.0]]))
    Array(-2., dtype=float64)
    """
    return fnp.linalg.det(a)


def inv(a, overwrite_a=False, check_finite=True):
    """Matrix inverse (``fnp.linalg.inv``).

    >>> inv(fnp.array([[2.0, 0.0], [0.0, 4.0]]))
    Array([[0.5 , 0.  ],
           [0.  , 0.25]], dtype=float64)
    """
    return fnp.linalg.inv(a)


def solve(a, b, lower=False, overwrite_a=False, overwrite_b=False, check_finite=True,
          assume_a="gen"):
    """``x`` with ``a @ x == b`` (``b`` a vector or matrix); ``assume_a='pos'`` (or 'sym'/'her'
    for symmetric positive-definite input) solves by Cholesky, reading the ``lower`` or upper
    triangle.

    >>> solve(fnp.array([[4.0, 2.0], [2.0, 3.0]]), fnp.array([2.0, 1.0]), assume_a="pos")
    Array([0.5, 0. ], dtype=float64)
    """
    if assume_a in ("gen", "general"):
        return fnp.linalg.solve(a, b)
    if assume_a not in ("pos", "positive definite", "sym", "her", "symmetric", "hermitian"):
        raise ValueError(f"scipy.linalg.solve: assume_a must be 'gen', 'sym', 'her' or 'pos', "
                         f"got {assume_a!r}")
    a = _matrix("solve", a, square=True)
    # One triangle is read: symmetrize from it, then factor.
    t = fnp.tril(a) if lower else fnp.triu(a)
    eye = fnp.eye(get_aval(a).shape[-1], dtype=get_aval(a).dtype)
    # Hermitian for 'pos'/'her' (a real diagonal, as LAPACK reads it), symmetric for 'sym'
    herm = assume_a not in ("sym", "symmetric")
    other, diag = (_mH(t), fnp.real(a).astype(get_aval(a).dtype)) if herm else \
        (fnp.matrix_transpose(t), a)
    sym = t + other - eye * diag
    if assume_a in ("pos", "positive definite"):
        return cho_solve(cho_factor(sym, lower=True), b)
    return fnp.linalg.solve(sym, b)


def svd(a, full_matrices=True, compute_uv=True, overwrite_a=False, check_finite=True,
        lapack_driver="gesdd"):
    """Singular value decomposition ``(U, s, Vh)``, or ``s`` without ``compute_uv``.

    >>> svd(fnp.array([[3.0, 0.0], [0.0, -4.0]]), compute_uv=False)
    Array([4., 3.], dtype=float64)
    """
    return fnp.linalg.svd(a, full_matrices=full_matrices, compute_uv=compute_uv)


def qr(a, overwrite_a=False, lwork=None, mode="full", pivoting=False, check_finite=True):
    """QR decomposition: ``(Q, R)`` with ``mode`` 'full' (Q square) or 'economic', or ``R``
    alone with 'r'. (No pivoting.)

    >>> q, r = qr(fnp.array([[3.0, 1.0], [4.0, 2.0], [0.0, 1.0]]), mode="economic")
    >>> q.shape, r.shape
    ((3, 2), (2, 2))
    """
    if pivoting:
        raise NotImplementedError("scipy.linalg.qr: pivoting=True is not supported")
    if mode not in ("full", "economic", "r"):
        raise ValueError(f"scipy.linalg.qr: mode must be 'full', 'economic' or 'r', got {mode!r}")
    q, r = fnp.linalg.qr(a, mode="reduced" if mode == "economic" else "complete")
    return (r,) if mode == "r" else (q, r)  # SciPy: R of shape (m, n) with mode='r'


def eigh(a, b=None, lower=True, eigvals_only=False, overwrite_a=False, overwrite_b=False,
         type=1, check_finite=True, subset_by_index=None, subset_by_value=None, driver=None):
    """Eigenvalues (ascending) and eigenvectors ``(w, v)`` of a symmetric matrix, reading
    its ``lower`` or upper triangle; ``w`` alone with ``eigvals_only``.

    >>> eigh(fnp.array([[2.0, 1.0], [1.0, 2.0]]), eigvals_only=True)
    Array([1., 3.], dtype=float64)
    """
    if b is not None or subset_by_index is not None or subset_by_value is not None:
        raise NotImplementedError("scipy.linalg.eigh: generalized problems (b) and subsets are "
                                  "not supported")
    a = _matrix("eigh", a, square=True)
    v, w = lax_linalg.eigh(a, lower=lower, symmetrize_input=False)
    return w if eigvals_only else (w, v)


from ._expm import expm  # noqa: E402
