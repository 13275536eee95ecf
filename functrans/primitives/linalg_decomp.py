"""Matrix decompositions and triangular solves, as in JAX's ``lax.linalg``: ``cholesky``,
``triangular_solve``, ``lu``, ``qr``, ``eigh``, ``svd`` and ``eig``. Every one takes leading
batch dimensions (the matrices are the last two axes) and float32, float64, complex64 or
complex128 operands (``eig``'s results are always complex; ``eigh``'s eigenvalues and
``svd``'s singular values are real: float32 for complex64). Complex ``cholesky`` and ``eigh``
read a Hermitian matrix from one triangle (``L @ L^H == a``), and ``triangular_solve``'s
``transpose_a`` is the plain transpose (``lax.linalg`` conjugates for ``conjugate_a``). The impls
call LAPACK through ``np.linalg`` (or, for LU and triangular solves, which NumPy does not
expose, through :mod:`.lapack`); jit runs them as host steps between compiled segments.
Their JVP and transpose rules are in :mod:`.linalg_rules`; batching moves the batch
dimension to the front.

    >>> [x.tolist() for x in eigh_p.bind_all(np.array([[2.0, 1.0], [1.0, 2.0]]), lower=True)][1]
    [1.0, 3.0]
"""
from __future__ import annotations

import numpy as np

from ..core.avals import ShapedArray
from ..core.trace import Primitive
from . import lapack, lapack_eigh

__all__ = ["cholesky_p", "triangular_solve_p", "lu_p", "qr_p", "eigh_p", "svd_p", "eig_p"]

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_COMPLEX = (np.dtype(np.complex64), np.dtype(np.complex128))
_INEXACT = _FLOATS + _COMPLEX


def _real_dtype(dtype):
    """The dtype of the real and imaginary parts (itself for a real dtype)."""
    return np.empty(0, dtype).real.dtype


def _check_matrix(name, x, square=False, dtypes_ok=_INEXACT):
    if x.ndim < 2:
        raise ValueError(f"{name}: expected a matrix or a batch of matrices (at least 2 "
                         f"dimensions), got {x.str_short()}")
    if x.dtype not in dtypes_ok:
        names = " or ".join(str(d) for d in dtypes_ok)
        raise TypeError(f"{name}: expected {names} operands, got {x.str_short()}")
    if square and x.shape[-1] != x.shape[-2]:
        raise ValueError(f"{name}: expected square matrices in the last two dimensions, got "
                         f"{x.str_short()}")


def _per_matrix(fn, *arrays, n_out=1):
    """Apply ``fn`` (matrices -> tuple of arrays) to each matrix of equal batch shapes."""
    batch = arrays[0].shape[:-2]
    if not batch:
        return list(fn(*arrays))
    size = int(np.prod(batch, dtype=int))
    flat = [a.reshape((size,) + a.shape[-2:]) for a in arrays]
    outs = [fn(*(a[i] for a in flat)) for i in range(size)]
    if not outs:  # an empty batch: one call on zeros gives the output shapes
        outs0 = fn(*(np.zeros(a.shape[-2:], a.dtype) for a in arrays))
        return [np.zeros(batch + o.shape, o.dtype) for o in outs0]
    return [np.stack([o[k] for o in outs]).reshape(batch + outs[0][k].shape)
            for k in range(n_out)]


# ---- cholesky ------------------------------------------------------------------------------------
def _cholesky_abstract_eval(a):
    _check_matrix("cholesky", a, square=True)
    return [ShapedArray(a.shape, a.dtype)]


def _cholesky_one(a):
    try:
        return (np.linalg.cholesky(a),)
    except np.linalg.LinAlgError:  # not positive definite: NaN, as LAPACK-backed JAX gives
        return (np.full(a.shape, np.nan, a.dtype),)


class _InKernelLapack(Primitive):
    """cholesky, triangular_solve and lu: inside jit's kernels when the backend's kernels call
    LAPACK (it says so by installing its library: ``lapack.install``), else host steps
    between compiled segments (``host_only``, read when a program compiles)."""

    @property
    def host_only(self) -> bool:
        return not lapack.in_kernels()


def _cholesky_impl(a):
    try:
        return [np.linalg.cholesky(a)]  # reads the lower triangle
    except np.linalg.LinAlgError:
        return _per_matrix(_cholesky_one, a)


cholesky_p = _InKernelLapack("cholesky", impl=_cholesky_impl, abstract_eval=_cholesky_abstract_eval)


# ---- triangular_solve ----------------------------------------------------------------------------
def _triangular_solve_abstract_eval(a, b, *, left_side, lower, transpose_a, unit_diagonal):
    name = "triangular_solve"
    _check_matrix(name, a, square=True)
    _check_matrix(name, b)
    if a.dtype != b.dtype:
        raise TypeError(f"{name}: a and b must have one dtype, got {a.str_short()} and "
                        f"{b.str_short()}")
    if a.shape[:-2] != b.shape[:-2]:
        raise ValueError(f"{name}: a and b must have equal batch dimensions, got "
                         f"{a.str_short()} and {b.str_short()}")
    k = b.shape[-2] if left_side else b.shape[-1]
    if k != a.shape[-1]:
        side = "rows" if left_side else "columns"
        raise ValueError(f"{name}: b's {side} ({k}) must match a's size {a.shape[-1]} "
                         f"(left_side={left_side}), got {a.str_short()} and {b.str_short()}")
    return [ShapedArray(b.shape, b.dtype)]


def _triangular_solve_impl(a, b, *, left_side, lower, transpose_a, unit_diagonal):
    kw = dict(left_side=left_side, lower=lower, transpose_a=transpose_a,
              unit_diagonal=unit_diagonal)
    with np.errstate(all="ignore"):
        return _per_matrix(lambda x, y: (lapack.trsm(x, y, **kw),), a, b)


triangular_solve_p = _InKernelLapack("triangular_solve", impl=_triangular_solve_impl,
                                     abstract_eval=_triangular_solve_abstract_eval)


# ---- lu ------------------------------------------------------------------------------------------
def _lu_abstract_eval(a):
    _check_matrix("lu", a)
    *batch, m, n = a.shape
    i32 = np.dtype(np.int32)
    return [ShapedArray(a.shape, a.dtype), ShapedArray((*batch, min(m, n)), i32),
            ShapedArray((*batch, m), i32)]


def pivots_to_permutation(pivots, m):
    """LAPACK's row swaps (0-based ``pivots``) as the permutation they apply to ``m`` rows."""
    perm = np.broadcast_to(np.arange(m, dtype=np.int32), pivots.shape[:-1] + (m,)).copy()
    size = int(np.prod(pivots.shape[:-1], dtype=int))
    flat, piv = perm.reshape(size, m), pivots.reshape(size, pivots.shape[-1])
    for b in range(flat.shape[0]):
        for i, p in enumerate(piv[b]):
            flat[b, i], flat[b, p] = flat[b, p], flat[b, i]
    return perm


def _lu_one(a):
    lu, piv = lapack.getrf(a)
    return lu, piv


def _lu_impl(a):
    lu, piv = _per_matrix(_lu_one, a, n_out=2)
    return [lu, piv, pivots_to_permutation(piv, a.shape[-2])]


lu_p = _InKernelLapack("lu", impl=_lu_impl, abstract_eval=_lu_abstract_eval)
lu_p.multiple_results = True


# ---- qr ------------------------------------------------------------------------------------------
def _qr_abstract_eval(a, *, full_matrices):
    _check_matrix("qr", a)
    *batch, m, n = a.shape
    k = m if full_matrices else min(m, n)
    return [ShapedArray((*batch, m, k), a.dtype), ShapedArray((*batch, k, n), a.dtype)]


def _qr_impl(a, *, full_matrices):
    q, r = np.linalg.qr(a, mode="complete" if full_matrices else "reduced")
    return [q, r]


qr_p = Primitive("qr", impl=_qr_impl, abstract_eval=_qr_abstract_eval)
qr_p.multiple_results = True


# ---- eigh ----------------------------------------------------------------------------------------
def _eigh_abstract_eval(a, *, lower):
    _check_matrix("eigh", a, square=True)
    return [ShapedArray(a.shape, a.dtype), ShapedArray(a.shape[:-1], _real_dtype(a.dtype))]


def _eigh_impl(a, *, lower):
    # ?syevd/?heevd on each matrix's Fortran layout, as JAX's CPU kernel calls them (the same
    # eigenvector signs); np.linalg.eigh where no LAPACK library was found
    if lapack_eigh.available():
        w, v = lapack_eigh.eigh(np.asarray(a), lower)
    else:
        w, v = np.linalg.eigh(a, UPLO="L" if lower else "U")  # ascending eigenvalues
    return [v, w]


eigh_p = Primitive("eigh", impl=_eigh_impl, abstract_eval=_eigh_abstract_eval)
eigh_p.multiple_results = True


# ---- svd -----------------------------------------------------------------------------------------
def _svd_abstract_eval(a, *, full_matrices, compute_uv):
    _check_matrix("svd", a)
    *batch, m, n = a.shape
    k = min(m, n)
    s = ShapedArray((*batch, k), _real_dtype(a.dtype))
    if not compute_uv:
        return [s]
    mu, nv = (m, n) if full_matrices else (k, k)
    return [s, ShapedArray((*batch, m, mu), a.dtype), ShapedArray((*batch, nv, n), a.dtype)]


def _svd_impl(a, *, full_matrices, compute_uv):
    if not compute_uv:
        return [np.linalg.svd(a, compute_uv=False)]
    u, s, vt = np.linalg.svd(a, full_matrices=full_matrices)
    return [s, u, vt]


svd_p = Primitive("svd", impl=_svd_impl, abstract_eval=_svd_abstract_eval)
svd_p.multiple_results = True


# ---- eig -----------------------------------------------------------------------------------------
def _eig_dtype(dtype):
    """eig's result dtype: complex of the operand's precision."""
    return np.dtype(np.complex128 if dtype in (np.float64, np.complex128) else np.complex64)


def _eig_abstract_eval(a, *, compute_left_eigenvectors, compute_right_eigenvectors):
    _check_matrix("eig", a, square=True)
    c = _eig_dtype(a.dtype)
    n_vectors = int(compute_left_eigenvectors) + int(compute_right_eigenvectors)
    return [ShapedArray(a.shape[:-1], c)] + [ShapedArray(a.shape, c)] * n_vectors


def _unit_columns_largest_real(v):
    """Columns of unit norm whose largest component (by modulus) is real and positive."""
    v = v / np.linalg.norm(v, axis=-2, keepdims=True)
    k = np.argmax(np.abs(v), axis=-2)[..., None, :]
    largest = np.take_along_axis(v, k, axis=-2)
    v = v * (np.conj(largest) / np.where(largest == 0, 1, np.abs(largest)))
    np.put_along_axis(v, k, np.abs(largest), axis=-2)  # exactly real, not to rounding
    return v


def _eig_all(a, left, right):
    """(w, vl?, vr?) of the batch ``a``; LinAlgError if any matrix is not finite or its
    eigenvectors are not invertible (left ones requested)."""
    c = _eig_dtype(a.dtype)
    if not np.isfinite(a).all():
        raise np.linalg.LinAlgError("not finite")
    w, v = np.linalg.eig(a)  # right eigenvectors of unit norm (LAPACK ?geev)
    w, v = w.astype(c), v.astype(c)
    outs = [w]
    if left:  # rows of V^-1 are the left eigenvectors: V^-1 A = diag(w) V^-1
        outs.append(_unit_columns_largest_real(np.conj(np.linalg.inv(v)).swapaxes(-1, -2)))
    if right:
        outs.append(v)
    return outs


def _eig_one(a, left, right):
    try:
        return _eig_all(a, left, right)
    except np.linalg.LinAlgError:  # NaN for this matrix, as LAPACK-backed JAX gives
        outs = _eig_abstract_eval(ShapedArray(a.shape, a.dtype), compute_left_eigenvectors=left,
                                  compute_right_eigenvectors=right)
        return [np.full(o.shape, complex(np.nan, np.nan), o.dtype) for o in outs]


def _eig_impl(a, *, compute_left_eigenvectors, compute_right_eigenvectors):
    left, right = compute_left_eigenvectors, compute_right_eigenvectors
    try:
        return _eig_all(a, left, right)
    except np.linalg.LinAlgError:  # only the bad matrices of the batch become NaN
        return _per_matrix(lambda m: _eig_one(m, left, right), a, n_out=1 + left + right)


eig_p = Primitive("eig", impl=_eig_impl, abstract_eval=_eig_abstract_eval)
eig_p.multiple_results = True

# Under jit, cholesky, triangular_solve and lu call LAPACK inside the kernel when the backend
# found its symbols (transforms/lowering/lapack.py; _InKernelLapack); qr, eigh, svd and eig
# (whose routines need workspace queries) run as host steps between compiled segments
# (transforms/jit/segmented.py), as all of them do without an in-kernel LAPACK.
for _p in (qr_p, eigh_p, svd_p, eig_p):
    _p.host_only = True


# ==== batching rules ==============================================================================
from ..transforms.batching import batching_rules, bdim_at_front  # noqa: E402


def _batch_front(prim):
    def rule(axis, vals, dims, **params):
        xs = [bdim_at_front(x, d, axis.size) for x, d in zip(vals, dims)]
        outs = prim.bind_all(*xs, **params)
        return outs, [0] * len(outs)
    batching_rules[prim] = rule


for _p in (cholesky_p, triangular_solve_p, lu_p, qr_p, eigh_p, svd_p, eig_p):
    _batch_front(_p)

from . import linalg_rules  # noqa: E402,F401  (JVP and transpose rules)
