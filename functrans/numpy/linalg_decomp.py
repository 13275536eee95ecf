"""``fnp.linalg``'s decompositions and what is built on them (det, slogdet, inv, solve, pinv,
lstsq, matrix_rank, cond, tensorsolve, tensorinv), composed from the primitives of
``lax.linalg`` so that every transformation applies. NumPy's conventions: leading batch
dimensions, integer inputs computed in float64, complex64/complex128 inputs as they are
(Hermitian where NumPy says symmetric; conjugate transposes where it transposes), result
namedtuples.

    >>> det(fnp.array([[1.0, 2.0], [3.0, 4.0]]))
    Array(-2., dtype=float64)
"""
from __future__ import annotations

import operator
from typing import NamedTuple

import numpy as np

from .. import numpy as fnp
from ..core import dtypes
from ..core.array import Array
from ..core.trace import get_aval
from ..lax import linalg as lax_linalg
from ..lax.linalg_householder import geqrf
from ..transforms.autodiff import custom_jvp
from ._core import asarray, check_arraylike, convert

LinAlgError = np.linalg.LinAlgError

__all__ = ["cholesky", "qr", "eigh", "eigvalsh", "svd", "svdvals", "det", "slogdet", "inv",
           "solve", "pinv", "lstsq", "matrix_rank", "cond", "tensorsolve", "tensorinv",
           "eig", "eigvals", "EigResult", "EighResult", "QRResult", "SVDResult",
           "SlogdetResult"]


class EigResult(NamedTuple):
    eigenvalues: object
    eigenvectors: object


class EighResult(NamedTuple):
    eigenvalues: object
    eigenvectors: object


class QRResult(NamedTuple):
    Q: object
    R: object


class SVDResult(NamedTuple):
    U: object
    S: object
    Vh: object


class SlogdetResult(NamedTuple):
    sign: object
    logabsdet: object


def _as_float(name, x, dtype=None):
    """``x`` in the inexact dtype LAPACK computes it in (integers and bools as float64;
    float32, float64, complex64 and complex128 as they are)."""
    d = get_aval(x).dtype if dtype is None else dtype
    if dtypes.kind(d) in "biu":
        return convert(x, dtypes.default_float_dtype())
    if d not in (np.float32, np.float64, np.complex64, np.complex128):
        raise TypeError(f"fnp.linalg.{name}: array type {d} is unsupported in linalg (float32, "
                        "float64, complex64 and complex128 are)")
    return convert(x, d)


def _mH(x):
    """Conjugate transpose of the last two axes (the transpose for real ``x``)."""
    return fnp.conj(fnp.matrix_transpose(x)) if dtypes.kind(get_aval(x).dtype) == "c" \
        else fnp.matrix_transpose(x)


def _matrix(name, a, square=False):
    """``a`` as a (batch of) matrices in the dtype LAPACK computes it in."""
    a = asarray(a)
    s = get_aval(a).shape
    if len(s) < 2:
        raise LinAlgError(f"fnp.linalg.{name}: {len(s)}-dimensional array given (shape {s}); "
                          "array must be at least two-dimensional")
    if square and s[-1] != s[-2]:
        raise LinAlgError(f"fnp.linalg.{name}: last 2 dimensions of the array must be square, "
                          f"got shape {s}")
    return _as_float(name, a)


def _diag(x):
    return fnp.diagonal(x, 0, -2, -1)


def cholesky(a, /, *, upper=False, symmetrize_input=True):
    """Cholesky factor of symmetric (Hermitian) positive-definite matrices: lower ``L`` with
    ``L @ L.T == a`` (complex: ``L @ L^H``; or upper ``L^H`` with ``upper=True``); NaN if not
    positive definite.

    >>> cholesky(fnp.array([[4.0, 2.0], [2.0, 5.0]]))
    Array([[2., 0.],
           [1., 2.]], dtype=float64)
    """
    check_arraylike("linalg.cholesky", a)
    a = _matrix("cholesky", a, square=True)
    L = lax_linalg.cholesky(a, symmetrize_input=symmetrize_input)
    return _mH(L) if upper else L


def qr(a, mode="reduced"):
    """QR decomposition; ``mode`` 'reduced' (Q: (..., m, k)), 'complete' (Q: (..., m, m)),
    'r' (R alone), with k = min(m, n), or 'raw': LAPACK's packed Householder form ``(h, taus)``
    with ``h`` (..., n, m) transposed, as NumPy and JAX return it.

    >>> q, r = qr(fnp.array([[3.0, 1.0], [4.0, 2.0]]))
    >>> bool(fnp.allclose(q @ r, fnp.array([[3.0, 1.0], [4.0, 2.0]])))
    True
    """
    check_arraylike("linalg.qr", a)
    if mode not in ("reduced", "complete", "r", "raw"):
        raise ValueError(f"fnp.linalg.qr: mode must be 'reduced', 'complete', 'r' or 'raw', "
                         f"got {mode!r}")
    a = _matrix("qr", a)
    if mode == "raw":  # LAPACK's packed reflectors, transposed (NumPy's and JAX's layout)
        h, taus = geqrf(a)
        return QRResult(fnp.matrix_transpose(h), taus)
    q, r = lax_linalg.qr(a, full_matrices=mode == "complete")
    return r if mode == "r" else QRResult(q, r)


def _uplo(name, UPLO):
    if UPLO not in (None, "L", "U"):
        raise ValueError(f"fnp.linalg.{name}: UPLO must be 'L' or 'U', got {UPLO!r}")
    return UPLO != "U"


def eigh(a, UPLO=None, symmetrize_input=True):
    """Eigenvalues (ascending) and eigenvectors of symmetric matrices.

    >>> w, v = eigh(fnp.array([[2.0, 1.0], [1.0, 2.0]]))
    >>> w
    Array([1., 3.], dtype=float64)
    """
    check_arraylike("linalg.eigh", a)
    lower = _uplo("eigh", UPLO)
    a = _matrix("eigh", a, square=True)
    v, w = lax_linalg.eigh(a, lower=lower, symmetrize_input=symmetrize_input)
    return EighResult(w, v)


def eig(a):
    """Eigenvalues and right eigenvectors of general square matrices, complex (as NumPy's
    ``eig``, whose results are real when every eigenvalue happens to be real, they are always
    complex here, as in JAX): ``a @ v == v * w``, columns of ``v`` of unit norm. Eigenvalues
    differentiate anywhere they are distinct; eigenvectors too, keeping LAPACK's
    normalization (unit norm, largest component real).

    >>> w, v = eig(fnp.array([[2.0, 0.0], [0.0, 3.0]]))
    >>> w
    Array([2.+0.j, 3.+0.j], dtype=complex128)
    """
    check_arraylike("linalg.eig", a)
    w, v = lax_linalg.eig(_matrix("eig", a, square=True),
                          compute_left_eigenvectors=False)
    return EigResult(w, v)


def eigvals(a):
    """Eigenvalues of general square matrices, complex, in LAPACK's order.

    >>> eigvals(fnp.array([[0.0, 1.0], [-2.0, 0.0]]))
    Array([0.+1.41421356j, 0.-1.41421356j], dtype=complex128)
    """
    check_arraylike("linalg.eigvals", a)
    w, = lax_linalg.eig(_matrix("eigvals", a, square=True),
                        compute_left_eigenvectors=False, compute_right_eigenvectors=False)
    return w


def eigvalsh(a, UPLO="L"):
    """Eigenvalues (ascending) of symmetric matrices.

    >>> eigvalsh(fnp.array([[2.0, 1.0], [1.0, 2.0]]))
    Array([1., 3.], dtype=float64)
    """
    check_arraylike("linalg.eigvalsh", a)
    return eigh(a, UPLO)[0]


def svd(a, full_matrices=True, compute_uv=True, hermitian=False):
    """Singular value decomposition ``a == U * S @ Vh`` (S descending); ``S`` alone without
    ``compute_uv``. (``hermitian`` is accepted; the general algorithm is used.)

    >>> svd(fnp.array([[3.0, 0.0], [0.0, -4.0]]), compute_uv=False)
    Array([4., 3.], dtype=float64)
    """
    check_arraylike("linalg.svd", a)
    a = _matrix("svd", a)
    if not compute_uv:
        return lax_linalg.svd(a, full_matrices=False, compute_uv=False)
    return SVDResult(*lax_linalg.svd(a, full_matrices=full_matrices))


def svdvals(x, /):
    """Singular values, descending.

    >>> svdvals(fnp.array([[0.0, 2.0], [1.0, 0.0]]))
    Array([2., 1.], dtype=float64)
    """
    check_arraylike("linalg.svdvals", x)
    return svd(x, compute_uv=False)


def _lu_square(name, a):
    a = _matrix(name, a, square=True)
    lu, pivots, perm = lax_linalg.lu(a)
    n = get_aval(a).shape[-1]
    swaps = fnp.sum(pivots != fnp.arange(n, dtype=get_aval(pivots).dtype), axis=-1)
    parity = fnp.where(swaps % 2 == 1, -1.0, 1.0).astype(get_aval(a).dtype)
    return a, lu, perm, parity


def det(a):
    """Determinants of square matrices (from their LU decomposition).

    >>> det(fnp.array([[2.0, 0.0], [0.0, 3.0]]))
    Array(6., dtype=float64)
    """
    check_arraylike("linalg.det", a)
    _, lu, _, parity = _lu_square("det", a)
    return parity * fnp.prod(_diag(lu), axis=-1)


def slogdet(a):
    """``(sign, logabsdet)`` of the determinants: ``det == sign * exp(logabsdet)``; a singular
    matrix gives sign 0 and logabsdet -inf.

    >>> slogdet(fnp.array([[-2.0, 0.0], [0.0, 3.0]]))
    SlogdetResult(sign=Array(-1., dtype=float64), logabsdet=Array(1.79175947, dtype=float64))
    """
    check_arraylike("linalg.slogdet", a)
    _, lu, _, parity = _lu_square("slogdet", a)
    d = _diag(lu)
    mag = fnp.abs(d)
    if dtypes.kind(get_aval(d).dtype) == "c":  # the phase d/|d|, 0 for a zero pivot
        unit = fnp.where(mag == 0, 0, d / fnp.where(mag == 0, 1, mag).astype(get_aval(d).dtype))
    else:
        unit = fnp.sign(d)
    sign = parity * fnp.prod(unit, axis=-1)
    return SlogdetResult(sign, fnp.sum(fnp.log(mag), axis=-1))


def _lu_solve(lu, perm, b):
    """``x`` with ``a @ x == b`` given ``a[perm] == L @ U``; ``b`` (..., n, k), batch shapes
    equal to lu's."""
    n = get_aval(lu).shape[-1]
    rows = fnp.broadcast_to(perm[..., :, None], get_aval(b).shape[:-2] + (n, get_aval(b).shape[-1]))
    pb = fnp.take_along_axis(b, rows, axis=-2)
    y = lax_linalg.triangular_solve(lu, pb, left_side=True, lower=True, unit_diagonal=True)
    return lax_linalg.triangular_solve(lu, y, left_side=True, lower=False)


def solve(a, b):
    """``x`` with ``a @ x == b``: ``b`` of shape (..., n, k), or (n,) as a vector (NumPy 2's
    rule); batch dimensions broadcast.

    >>> solve(fnp.array([[2.0, 0.0], [1.0, 1.0]]), fnp.array([2.0, 3.0]))
    Array([1., 2.], dtype=float64)
    """
    check_arraylike("linalg.solve", a, b)
    a, b = asarray(a), asarray(b)
    sa, sb = get_aval(a).shape, get_aval(b).shape
    dtype = np.result_type(get_aval(a).dtype, get_aval(b).dtype)
    a = _matrix("solve", _as_float("solve", a, dtype), square=True)
    b = _as_float("solve", b, dtype)
    vector = len(sb) == 1
    if vector:
        b = b[:, None]
    elif len(sb) < 1:
        raise ValueError(f"fnp.linalg.solve: b must be at least one-dimensional, got shape {sb}")
    n = sa[-1]
    if get_aval(b).shape[-2] != n:
        raise ValueError(f"fnp.linalg.solve: b's rows must match a's size {n}: got a of shape "
                         f"{sa} and b of shape {sb}")
    sb2 = get_aval(b).shape
    try:
        batch = np.broadcast_shapes(sa[:-2], sb2[:-2])
    except ValueError:
        raise ValueError(f"fnp.linalg.solve: batch dimensions of a {sa} and b {sb} do not "
                         "broadcast") from None
    lu, _, perm = lax_linalg.lu(a)
    lu = fnp.broadcast_to(lu, batch + (n, n))
    perm = fnp.broadcast_to(perm, batch + (n,))
    x = _lu_solve(lu, perm, fnp.broadcast_to(b, batch + sb2[-2:]))
    return x[..., 0] if vector else x


def inv(a):
    """Inverses of square matrices.

    >>> inv(fnp.array([[2.0, 0.0], [0.0, 4.0]]))
    Array([[0.5 , 0.  ],
           [0.  , 0.25]], dtype=float64)
    """
    check_arraylike("linalg.inv", a)
    a = _matrix("inv", a, square=True)
    s = get_aval(a).shape
    return solve(a, fnp.broadcast_to(fnp.eye(s[-1], dtype=get_aval(a).dtype), s))


def pinv(a, rcond=None, hermitian=False, *, rtol=np._NoValue):
    """Moore-Penrose pseudo-inverse from the SVD, singular values at most
    ``rcond * max(s)`` treated as zero (NumPy's defaults: rcond=1e-15, or
    ``max(m, n) * eps`` with ``rtol=None``).

    >>> pinv(fnp.array([[2.0, 0.0], [0.0, 0.0]]))
    Array([[0.5, 0. ],
           [0. , 0. ]], dtype=float64)
    """
    check_arraylike("linalg.pinv", a)
    a = _matrix("pinv", a)
    s_shape = get_aval(a).shape
    if rcond is None:
        if rtol is np._NoValue:
            rcond = 1e-15
        elif rtol is None:
            rcond = max(s_shape[-2:]) * np.finfo(get_aval(a).dtype).eps
        else:
            rcond = rtol
    elif rtol is not np._NoValue:
        raise ValueError("fnp.linalg.pinv: `rtol` and `rcond` can't be both set")
    m, n = s_shape[-2:]
    if m == 0 or n == 0:
        return fnp.zeros(s_shape[:-2] + (n, m), get_aval(a).dtype)
    return _pinv(a, asarray(rcond, np.finfo(get_aval(a).dtype).dtype))  # real: compares s


def _pinv_from_svd(a, rcond):
    u, s, vt = lax_linalg.svd(a, full_matrices=False)
    cutoff = rcond[..., None] * fnp.max(s, axis=-1, keepdims=True)
    large = s > cutoff
    s_inv = fnp.where(large, 1 / fnp.where(large, s, 1), 0)
    s_inv = s_inv.astype(get_aval(a).dtype)
    return fnp.matmul(_mH(vt), s_inv[..., :, None] * _mH(u))


def _pinv_jvp(primals, tangents):
    """Golub and Pereyra's derivative of the pseudo-inverse, exact wherever the rank is locally
    constant, including rank-deficient matrices (where the SVD's derivative divides by the
    differences of equal singular values):
    dP = -P dA P + (I - P A) dA^H P^H P + P P^H dA^H (I - A P)."""
    (a, rcond), (da, _) = primals, tangents
    p = _pinv(a, rcond)
    mt = _mH
    *_, m, n = get_aval(a).shape
    eye_m, eye_n = fnp.eye(m, dtype=get_aval(a).dtype), fnp.eye(n, dtype=get_aval(a).dtype)
    dat, pt = mt(da), mt(p)
    dp = -(p @ da @ p) + (eye_n - p @ a) @ dat @ pt @ p + p @ pt @ dat @ (eye_m - a @ p)
    return p, dp


_pinv = custom_jvp(_pinv_from_svd)
_pinv.defjvp(_pinv_jvp)


def lstsq(a, b, rcond=None):
    """Least-squares solution of ``a @ x = b`` (a: (m, n), b: (m,) or (m, k)) from the SVD:
    ``(x, residuals, rank, s)`` as NumPy returns them. Residuals are empty when m <= n or,
    eagerly, when ``a`` is rank-deficient; under tracing the rank is not known, so residuals
    are computed whenever m > n.

    >>> x, res, rank, s = lstsq(fnp.array([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]]),
    ...                         fnp.array([1.0, 2.0, 3.0]))
    >>> x, res, rank
    (Array([1., 2.], dtype=float64), Array([9.], dtype=float64), Array(2, dtype=int64))
    """
    check_arraylike("linalg.lstsq", a, b)
    a, b = asarray(a), asarray(b)
    sa, sb = get_aval(a).shape, get_aval(b).shape
    if len(sa) != 2:
        raise LinAlgError(f"fnp.linalg.lstsq: a must be two-dimensional, got shape {sa}")
    if len(sb) not in (1, 2):
        raise LinAlgError(f"fnp.linalg.lstsq: b must be one- or two-dimensional, got shape {sb}")
    if sb[0] != sa[0]:
        raise LinAlgError(f"fnp.linalg.lstsq: incompatible dimensions: a {sa} and b {sb} need "
                          "the same number of rows")
    dtype = np.result_type(get_aval(a).dtype, get_aval(b).dtype)
    a, b = _as_float("lstsq", a, dtype), _as_float("lstsq", b, dtype)
    vector = len(sb) == 1
    if vector:
        b = b[:, None]
    m, n = sa
    dt = get_aval(a).dtype
    if rcond is None:
        rcond = np.finfo(dt).eps * max(m, n)
    u, s, vt = lax_linalg.svd(a, full_matrices=False)
    if min(m, n):
        mask = s >= asarray(rcond, get_aval(s).dtype) * s[0]
    else:
        mask = s > 0
    rank = fnp.sum(mask).astype(dtypes.default_int_dtype())
    s_inv = fnp.where(mask, 1 / fnp.where(mask, s, 1), 0)[:, None].astype(dt)
    x = fnp.matmul(_mH(vt), s_inv * fnp.matmul(_mH(u), b))
    k = get_aval(b).shape[-1]
    known_rank = rank._value if type(rank) is Array else None  # eager: NumPy's rule
    if m <= n or (known_rank is not None and int(known_rank) < n):
        resid = fnp.zeros((0,), get_aval(s).dtype)
    else:
        resid = fnp.sum(fnp.abs(b - a @ x) ** 2, axis=0)
        if vector:
            resid = resid.reshape((1,)) if k == 1 else resid
    return (x[:, 0] if vector else x), resid, rank, s


def matrix_rank(A, tol=None, hermitian=False, *, rtol=None):
    """Number of singular values above ``tol`` (default ``max(s) * max(m, n) * eps``, or
    ``max(s) * rtol``).

    >>> matrix_rank(fnp.array([[1.0, 2.0], [2.0, 4.0]]))
    Array(1, dtype=int64)
    """
    check_arraylike("linalg.matrix_rank", A)
    A = asarray(A)
    if get_aval(A).ndim < 2:
        return fnp.any(A != 0).astype(dtypes.default_int_dtype())
    A = _matrix("matrix_rank", A)
    if 0 in get_aval(A).shape[-2:]:  # no singular values: rank 0 (NumPy)
        return fnp.zeros(get_aval(A).shape[:-2], dtypes.default_int_dtype())
    S = svdvals(A)
    if tol is None:
        if rtol is None:
            rtol = max(get_aval(A).shape[-2:]) * np.finfo(get_aval(S).dtype).eps
        tol = fnp.max(S, axis=-1, keepdims=True) * asarray(rtol, get_aval(S).dtype)[..., None]
    else:
        tol = asarray(tol, get_aval(S).dtype)[..., None]
    return fnp.sum(S > tol, axis=-1).astype(dtypes.default_int_dtype())


def cond(x, p=None):
    """Condition number in the norm ``p`` (None/2/-2 from singular values; 'fro', 'nuc', 1,
    -1, inf, -inf as ``norm(x) * norm(inv(x))``); inf for singular matrices.

    >>> cond(fnp.array([[1.0, 0.0], [0.0, 4.0]]))
    Array(4., dtype=float64)
    """
    from .linalg import norm
    check_arraylike("linalg.cond", x)
    x = _matrix("cond", x)
    if 0 in get_aval(x).shape[-2:]:
        raise LinAlgError(f"fnp.linalg.cond is not defined on empty arrays, got shape "
                          f"{get_aval(x).shape}")
    if p is None or p == 2 or p == -2:
        s = svdvals(x)
        r = s[..., 0] / s[..., -1] if p != -2 else s[..., -1] / s[..., 0]
    else:
        x = _matrix("cond", x, square=True)
        r = norm(x, ord=p, axis=(-2, -1)) * norm(inv(x), ord=p, axis=(-2, -1))
    # Singular matrices give NaN above; NumPy reports an infinite condition number instead.
    return fnp.where(fnp.isnan(r) & ~fnp.any(fnp.isnan(x), axis=(-2, -1)), np.inf, r)


def tensorinv(a, ind=2):
    """Inverse of ``a`` seen as a matrix of its first ``ind`` axes by the rest.

    >>> tensorinv(fnp.eye(4).reshape(4, 2, 2), ind=1).shape
    (2, 2, 4)
    """
    check_arraylike("linalg.tensorinv", a)
    a = asarray(a)
    shape = get_aval(a).shape
    ind = operator.index(ind)
    if ind <= 0:
        raise ValueError(f"fnp.linalg.tensorinv: ind must be a positive integer, got {ind}")
    rows = int(np.prod(shape[ind:], dtype=int))
    return inv(a.reshape(rows, -1)).reshape(shape[ind:] + shape[:ind])


def tensorsolve(a, b, axes=None):
    """``x`` with ``tensordot(a, x, x.ndim) == b``.

    >>> tensorsolve(fnp.eye(4).reshape(2, 2, 4), fnp.ones((2, 2))).shape
    (4,)
    """
    check_arraylike("linalg.tensorsolve", a, b)
    a, b = asarray(a), asarray(b)
    an, bn = get_aval(a).ndim, get_aval(b).ndim
    if axes is not None:
        order = [k for k in range(an) if k not in [ax % an for ax in axes]]
        a = fnp.transpose(a, order + [ax % an for ax in axes])
    shape = get_aval(a).shape
    old = shape[bn:]
    prod = int(np.prod(old, dtype=int))
    if int(np.prod(shape, dtype=int)) != prod ** 2:
        raise LinAlgError(f"fnp.linalg.tensorsolve: a of shape {shape} and b of shape "
                          f"{get_aval(b).shape} must satisfy prod(a.shape[b.ndim:]) == "
                          "prod(a.shape[:b.ndim])")
    return solve(a.reshape(prod, prod), fnp.ravel(b)).reshape(old)
