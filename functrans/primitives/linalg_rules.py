"""JVP and transpose rules of the decomposition primitives (:mod:`.linalg_decomp`), written
with primitives only so that they differentiate again. The formulas are the standard ones
(Giles, "Collected matrix derivative results"; the same as JAX's ``lax.linalg``):

* cholesky: ``dL = L Phi(L^-1 dA L^-T)``, Phi taking the lower triangle with half diagonal;
* triangular_solve: linear in ``b`` (its transpose solves with ``op(a)`` transposed), and
  ``-op(a)^-1 op(da) x`` in ``a`` (only the triangle that is read);
* lu: ``dA`` permuted, then ``L^-1 P dA U^-1`` split into its strict lower and upper parts;
* qr (m >= n, reduced): ``dQ = Q (dO - Q^T dA R^-1) + dA R^-1``, ``dR = (Q^T dA R^-1 - dO) R``;
* eigh: ``dw = diag(V^T dA V)``, ``dV = V (F o V^T dA V)`` with ``F_ij = 1/(w_j - w_i)``;
* svd (reduced): JAX's formula, including the terms for the complement of a non-square
  matrix's range;
* eig: with ``X = V^-1 dA V`` (``V^-1`` from the left eigenvectors), ``dw = diag(X)`` and
  ``dV = V (F o X)``, then kept to LAPACK's normalization (unit columns, largest component
  real); left eigenvectors are the right ones of ``A^H``.

Where a primitive reads one triangle of its operand (cholesky, eigh), the rules differentiate
the symmetric (complex: Hermitian, with the real part of the diagonal, as LAPACK reads it)
matrix that triangle defines, so they are exact for the primitive itself. Complex operands
follow JAX's rules: transposes above become conjugate transposes (``mH``), tangents are
complex-linear, and the real results (eigh's eigenvalues, svd's singular values) take the
real part of their complex tangents.

    >>> from functrans.primitives.linalg_decomp import cholesky_p
    >>> import functrans as ft
    >>> float(ft.jvp(lambda a: cholesky_p.bind1(a), (np.eye(2) * 4.0,), (np.eye(2),))[1][0, 0])
    0.25
"""
from __future__ import annotations

import numpy as np

from ..core.trace import get_aval
from ..transforms.autodiff.rules import Zero, add_tangents, is_undefined, is_zero, jvp_rules
from ..transforms.autodiff.rules import transpose_rules
from . import elementwise as E
from . import reductions as R
from . import structural as S
from .linalg import dot_general_p
from . import complex_parts as C
from .linalg_decomp import cholesky_p, eig_p, eigh_p, lu_p, qr_p, svd_p, triangular_solve_p
from .sorting import take_permutation


# ---- small matrix helpers over the last two axes -------------------------------------------------
def _c(v, x):
    """The scalar ``v`` in ``x``'s dtype (rank-0 operands broadcast in elementwise ops)."""
    return np.array(v, get_aval(x).dtype)


def mT(x):
    nd = get_aval(x).ndim
    return S.transpose_p.bind1(x, permutation=tuple(range(nd - 2)) + (nd - 1, nd - 2))


def _is_complex(x):
    return get_aval(x).dtype.kind == "c"


def conj(x):
    """Complex conjugate; the identity for real operands."""
    return C.conj_p.bind1(x) if _is_complex(x) else x


def mH(x):
    """Conjugate transpose over the last two axes (the transpose for real operands)."""
    return conj(mT(x))


def _as_dtype(x, dtype):
    """``x`` converted to ``dtype`` (real values into a complex dtype)."""
    if get_aval(x).dtype == np.dtype(dtype):
        return x
    return E.convert_element_type_p.bind1(x, new_dtype=np.dtype(dtype), weak_type=False)


def _real(x):
    return C.real_p.bind1(x) if _is_complex(x) else x


def mm(a, b):
    """Batched matrix product (equal batch dimensions)."""
    nd = get_aval(a).ndim
    batch = tuple(range(nd - 2))
    return dot_general_p.bind1(a, b, dimension_numbers=(((nd - 1,), (nd - 2,)), (batch, batch)),
                               precision=None, preferred_element_type=None)


def _index(shape, dim):
    # int32, as the constants compared with it: an int64 constant would be narrowed to int32
    # when 64-bit values are off (JAX's default) and no longer match an int64 iota
    return S.iota_p.bind1(dtype=np.dtype(np.int32), shape=tuple(shape), dimension=dim)


def _tri_mask(shape, k, lower):
    """True on and below diagonal k (lower) or on and above it."""
    nd = len(shape)
    rows, cols = _index(shape, nd - 2), _index(shape, nd - 1)
    shifted = E.add_p.bind1(rows, np.array(k, np.int32))
    return (E.ge_p if lower else E.le_p).bind1(shifted, cols)


def tril(x, k=0):
    shape = get_aval(x).shape
    return E.select_n_p.bind1(_tri_mask(shape, k, True), E.mul_p.bind1(x, _c(0, x)), x)


def triu(x, k=0):
    shape = get_aval(x).shape
    return E.select_n_p.bind1(_tri_mask(shape, k, False), E.mul_p.bind1(x, _c(0, x)), x)


def eye_like(shape, dtype, start=0):
    """Identity matrices of ``shape`` (..., m, n); with ``start``, ones only from that row."""
    nd = len(shape)
    rows, cols = _index(shape, nd - 2), _index(shape, nd - 1)
    on = E.eq_p.bind1(rows, cols)
    if start:
        on = E.and_p.bind1(on, E.ge_p.bind1(rows, np.array(start, np.int32)))
    return E.convert_element_type_p.bind1(on, new_dtype=np.dtype(dtype), weak_type=False)


def diagonal(x):
    """The diagonals (..., n) of square matrices (..., n, n)."""
    aval = get_aval(x)
    masked = E.mul_p.bind1(x, eye_like(aval.shape, aval.dtype))
    return R.reduce_sum_p.bind1(masked, axes=(aval.ndim - 1,))


def as_row(v, n_rows):
    """(..., n) -> (..., n_rows, n): v along each row."""
    shape = get_aval(v).shape
    nd = len(shape)
    return S.broadcast_in_dim_p.bind1(v, shape=shape[:-1] + (n_rows, shape[-1]),
                                      broadcast_dimensions=tuple(range(nd - 1)) + (nd,))


def as_col(v, n_cols):
    """(..., m) -> (..., m, n_cols): v down each column."""
    shape = get_aval(v).shape
    nd = len(shape)
    return S.broadcast_in_dim_p.bind1(v, shape=shape + (n_cols,),
                                      broadcast_dimensions=tuple(range(nd)))


def _symmetric_tangent(t, lower):
    """The tangent of the symmetric (Hermitian) matrix a primitive reads from one triangle of
    its input; a complex diagonal's imaginary part is not read."""
    if not _is_complex(t):
        if lower:
            return E.add_p.bind1(tril(t), mT(tril(t, -1)))
        return E.add_p.bind1(triu(t), mT(triu(t, 1)))
    off = tril(t, -1) if lower else triu(t, 1)
    aval = get_aval(t)
    diag = E.mul_p.bind1(_as_dtype(C.real_p.bind1(t), aval.dtype), eye_like(aval.shape, aval.dtype))
    return E.add_p.bind1(E.add_p.bind1(off, mH(off)), diag)


def _solve(a, b, **kw):
    return triangular_solve_p.bind1(a, b, **kw)


# ---- cholesky ------------------------------------------------------------------------------------
def _cholesky_jvp(primals, tangents):
    (a,), (t,) = primals, tangents
    L = cholesky_p.bind1(a)
    if is_zero(t):
        return [L], [Zero(get_aval(L))]
    t = _symmetric_tangent(t, True)
    # t L^-H: the primitive's transpose_a is the plain transpose, so conjugate L first
    tmp = _solve(conj(L), t, left_side=False, lower=True, transpose_a=True, unit_diagonal=False)
    inner = _solve(L, tmp, left_side=True, lower=True, transpose_a=False, unit_diagonal=False)
    aval = get_aval(a)
    half_diag = E.mul_p.bind1(inner, E.sub_p.bind1(_c(1, a), E.mul_p.bind1(
        eye_like(aval.shape, aval.dtype), _c(0.5, a))))
    return [L], [mm(L, tril(half_diag))]


jvp_rules[cholesky_p] = _cholesky_jvp


# ---- triangular_solve ----------------------------------------------------------------------------
def _triangular_solve_jvp(primals, tangents, *, left_side, lower, transpose_a, unit_diagonal):
    (a, b), (ta, tb) = primals, tangents
    kw = dict(left_side=left_side, lower=lower, transpose_a=transpose_a,
              unit_diagonal=unit_diagonal)
    x = _solve(a, b, **kw)
    out = Zero(get_aval(x))
    if not is_zero(tb):
        out = add_tangents(out, _solve(a, tb, **kw))
    if not is_zero(ta):
        k = 1 if unit_diagonal else 0
        g = tril(ta, -k) if lower else triu(ta, k)
        g = E.neg_p.bind1(mT(g) if transpose_a else g)
        m, n = get_aval(b).shape[-2:]
        # Solve with the smaller operand first: both orders are exact.
        if left_side:
            d = _solve(a, mm(g, x), **kw) if m > n else mm(_solve(a, g, **kw), x)
        else:
            d = _solve(a, mm(x, g), **kw) if m < n else mm(x, _solve(a, g, **kw))
        out = add_tangents(out, d)
    return [x], [out]


def _triangular_solve_transpose(cts, a, b, *, left_side, lower, transpose_a, unit_diagonal):
    if is_undefined(a):
        raise TypeError("triangular_solve is not linear in its matrix operand a")
    ct = cts[0]
    if is_zero(ct):
        return [None, Zero(b.aval)]
    return [None, _solve(a, ct, left_side=left_side, lower=lower, transpose_a=not transpose_a,
                         unit_diagonal=unit_diagonal)]


jvp_rules[triangular_solve_p] = _triangular_solve_jvp
transpose_rules[triangular_solve_p] = _triangular_solve_transpose


# ---- lu ------------------------------------------------------------------------------------------
def _slice_last2(x, rows, cols):
    shape = get_aval(x).shape
    nd = len(shape)
    return S.slice_p.bind1(x, start_indices=(0,) * nd, limit_indices=shape[:-2] + (rows, cols),
                           strides=None)


def _pad_last2(x, rows, cols):
    shape = get_aval(x).shape
    config = ((0, 0, 0),) * (len(shape) - 2) + ((0, rows, 0), (0, cols, 0))
    return S.pad_p.bind1(x, _c(0, x), padding_config=config)


def _lu_jvp(primals, tangents):
    (a,), (t,) = primals, tangents
    lu, pivots, perm = lu_p.bind_all(a)
    zeros = [Zero(get_aval(pivots)), Zero(get_aval(perm))]
    if is_zero(t):
        return [lu, pivots, perm], [Zero(get_aval(lu))] + zeros
    aval = get_aval(a)
    *batch, m, n = aval.shape
    k = min(m, n)
    perm_full = as_col(perm, n)
    x = take_permutation(t, perm_full, aval.ndim - 2)  # P dA
    l = _pad_last2(tril(_slice_last2(lu, m, k), -1), 0, m - k)
    l = E.add_p.bind1(l, eye_like((*batch, m, m), aval.dtype))
    u = _pad_last2(triu(_slice_last2(lu, k, n)), n - k, 0)
    if n > k:
        u = E.add_p.bind1(u, eye_like((*batch, n, n), aval.dtype, start=k))
    la = _solve(l, x, left_side=True, lower=True, transpose_a=False, unit_diagonal=True)
    lau = _solve(u, la, left_side=False, lower=False, transpose_a=False, unit_diagonal=False)
    lu_dot = E.add_p.bind1(mm(l, tril(lau, -1)), mm(triu(lau), u))
    return [lu, pivots, perm], [lu_dot] + zeros


jvp_rules[lu_p] = _lu_jvp


# ---- qr ------------------------------------------------------------------------------------------
def _qr_jvp(primals, tangents, *, full_matrices):
    (a,), (t,) = primals, tangents
    *_, m, n = get_aval(a).shape
    if m < n or (full_matrices and m != n):
        raise NotImplementedError(
            f"qr: derivatives are implemented for reduced decompositions of matrices with at "
            f"least as many rows as columns (full_matrices=False, m >= n), got shape "
            f"{get_aval(a).shape} with full_matrices={full_matrices}")
    q, r = qr_p.bind_all(a, full_matrices=full_matrices)
    if is_zero(t):
        return [q, r], [Zero(get_aval(q)), Zero(get_aval(r))]
    dx_rinv = _solve(r, t, left_side=False, lower=False, transpose_a=False, unit_diagonal=False)
    qt_dx_rinv = mm(mH(q), dx_rinv)
    low = tril(qt_dx_rinv, -1)
    do = E.sub_p.bind1(low, mH(low))  # skew-symmetric (skew-Hermitian)
    if _is_complex(a):  # the diagonal's imaginary part (LAPACK's R has a real diagonal)
        aval = get_aval(qt_dx_rinv)
        imag = E.sub_p.bind1(qt_dx_rinv, _as_dtype(C.real_p.bind1(qt_dx_rinv), aval.dtype))
        do = E.add_p.bind1(do, E.mul_p.bind1(imag, eye_like(aval.shape, aval.dtype)))
    dq = E.add_p.bind1(mm(q, E.sub_p.bind1(do, qt_dx_rinv)), dx_rinv)
    dr = mm(E.sub_p.bind1(qt_dx_rinv, do), r)
    return [q, r], [dq, dr]


jvp_rules[qr_p] = _qr_jvp


# ---- eigh ----------------------------------------------------------------------------------------
def _eigh_jvp(primals, tangents, *, lower):
    (a,), (t,) = primals, tangents
    v, w = eigh_p.bind_all(a, lower=lower)
    if is_zero(t):
        return [v, w], [Zero(get_aval(v)), Zero(get_aval(w))]
    aval = get_aval(a)
    n = aval.shape[-1]
    t = _symmetric_tangent(t, lower)
    eye = eye_like(aval.shape, get_aval(w).dtype)
    # 1 / (w_j - w_i) off the diagonal, 0 on it, without dividing by zero there.
    diff = E.sub_p.bind1(as_row(w, n), as_col(w, n))
    f = E.sub_p.bind1(E.div_p.bind1(_c(1, w), E.add_p.bind1(eye, diff)), eye)
    vt_dot_v = mm(mm(mH(v), t), v)
    dv = mm(v, E.mul_p.bind1(_as_dtype(f, aval.dtype), vt_dot_v))
    return [v, w], [dv, _real(diagonal(vt_dot_v))]


jvp_rules[eigh_p] = _eigh_jvp


# ---- svd -----------------------------------------------------------------------------------------
def _svd_jvp(primals, tangents, *, full_matrices, compute_uv):
    (a,), (t,) = primals, tangents
    aval = get_aval(a)
    *batch, m, n = aval.shape
    if compute_uv and full_matrices and m != n:
        raise NotImplementedError(
            f"svd: derivatives of full_matrices=True decompositions are only defined for square "
            f"matrices (the extra singular vectors are not unique), got shape {aval.shape}")
    s, u, vt = svd_p.bind_all(a, full_matrices=False, compute_uv=True)
    outs = svd_p.bind_all(a, full_matrices=full_matrices, compute_uv=compute_uv) \
        if (full_matrices and compute_uv) else ([s, u, vt] if compute_uv else [s])
    if is_zero(t):
        return outs, [Zero(get_aval(o)) for o in outs]
    k = min(m, n)
    dt = aval.dtype
    v = mH(vt)
    ds_mat = mm(mm(mH(u), t), v)  # U^H dA V  (k, k)
    ds = _real(diagonal(ds_mat))
    if not compute_uv:
        return outs, [ds]
    s_row, s_col = as_row(s, k), as_col(s, k)
    eye = eye_like((*batch, k, k), get_aval(s).dtype)
    s_diffs = E.mul_p.bind1(E.add_p.bind1(s_row, s_col), E.sub_p.bind1(s_row, s_col))
    f = E.sub_p.bind1(E.div_p.bind1(_c(1, s), E.add_p.bind1(s_diffs, eye)), eye)
    f = _as_dtype(f, dt)
    s_row_c, s_col_c = _as_dtype(s_row, dt), _as_dtype(s_col, dt)
    dss = E.mul_p.bind1(s_row_c, ds_mat)  # dS diag(s)
    sds = E.mul_p.bind1(s_col_c, ds_mat)  # diag(s) dS
    s_zero = E.convert_element_type_p.bind1(E.eq_p.bind1(s, _c(0, s)),
                                            new_dtype=get_aval(s).dtype, weak_type=False)
    s_inv = E.sub_p.bind1(E.div_p.bind1(_c(1, s), E.add_p.bind1(s, s_zero)), s_zero)
    s_inv_mat = _as_dtype(E.mul_p.bind1(as_row(s_inv, k), eye), dt)
    dudv_diag = E.mul_p.bind1(E.mul_p.bind1(E.sub_p.bind1(ds_mat, mH(ds_mat)), _c(0.5, a)),
                              s_inv_mat)
    du = mm(u, E.add_p.bind1(E.mul_p.bind1(f, E.add_p.bind1(dss, mH(dss))), dudv_diag))
    dv = mm(v, E.mul_p.bind1(f, E.add_p.bind1(sds, mH(sds))))
    if m > n:
        dav = mm(t, v)
        du = E.add_p.bind1(du, E.div_p.bind1(E.sub_p.bind1(dav, mm(u, mm(mH(u), dav))),
                                             _as_dtype(as_row(s, m), dt)))
    if n > m:
        dahu = mm(mH(t), u)
        dv = E.add_p.bind1(dv, E.div_p.bind1(E.sub_p.bind1(dahu, mm(v, mm(vt, dahu))),
                                             _as_dtype(as_row(s, n), dt)))
    return outs, [ds, du, mH(dv)]


jvp_rules[svd_p] = _svd_jvp


# ---- eig -----------------------------------------------------------------------------------------
def _keep_normalized(v, dv):
    """The tangent ``dv`` of eigenvector columns ``v`` kept to their normalization: unit norm
    (drop ``Re(v^H dv) v``) and the largest component real (drop ``i Im(dv_k / v_k) v``)."""
    n, ax = get_aval(v).shape[-1], get_aval(v).ndim - 2
    along = C.real_p.bind1(diagonal(mm(C.conj_p.bind1(mT(v)), dv)))
    dv = E.sub_p.bind1(dv, E.mul_p.bind1(v, as_row(C.complex_p.bind1(along, _c(0, along)), n)))
    mag = E.abs_p.bind1(v)
    largest = E.eq_p.bind1(mag, as_row(R.reduce_max_p.bind1(mag, axes=(ax,)), n))
    picked = E.select_n_p.bind1(largest, E.mul_p.bind1(v, _c(0, v)),
                                E.mul_p.bind1(dv, C.conj_p.bind1(v)))
    sq = E.select_n_p.bind1(largest, E.mul_p.bind1(mag, _c(0, mag)), E.mul_p.bind1(mag, mag))
    phase = E.div_p.bind1(C.imag_p.bind1(R.reduce_sum_p.bind1(picked, axes=(ax,))),
                          R.reduce_sum_p.bind1(sq, axes=(ax,)))
    return E.sub_p.bind1(dv, E.mul_p.bind1(v, as_row(C.complex_p.bind1(_c(0, phase), phase), n)))


def _eig_jvp(primals, tangents, *, compute_left_eigenvectors, compute_right_eigenvectors):
    (a,), (t,) = primals, tangents
    outs = eig_p.bind_all(a, compute_left_eigenvectors=compute_left_eigenvectors,
                          compute_right_eigenvectors=compute_right_eigenvectors)
    if is_zero(t):
        return outs, [Zero(get_aval(o)) for o in outs]
    w, u, v = eig_p.bind_all(a, compute_left_eigenvectors=True, compute_right_eigenvectors=True)
    c = get_aval(w).dtype
    n = get_aval(a).shape[-1]
    t = E.convert_element_type_p.bind1(t, new_dtype=c, weak_type=False)
    # V^-1 = diag(1 / s) U^H with s_i = u_i^H v_i, so X = V^-1 dA V = (U^H dA V) / s (rows).
    uh = C.conj_p.bind1(mT(u))
    s = diagonal(mm(uh, v))
    y = mm(mm(uh, t), v)
    x = E.div_p.bind1(y, as_col(s, n))
    tangents_out = [diagonal(x)]
    # 1 / (w_j - w_i) off the diagonal, 0 on it.
    eye = eye_like(get_aval(v).shape, c)
    f = E.sub_p.bind1(E.div_p.bind1(_c(1, v), E.add_p.bind1(
        eye, E.sub_p.bind1(as_row(w, n), as_col(w, n)))), eye)
    if compute_left_eigenvectors:
        # U holds the right eigenvectors of A^H (eigenvalues conj(w)): the same formula with
        # U^-1 dA^H U = Y^H / conj(s) (rows) and conj(F).
        x_left = E.div_p.bind1(C.conj_p.bind1(mT(y)), as_col(C.conj_p.bind1(s), n))
        du = mm(u, E.mul_p.bind1(C.conj_p.bind1(f), x_left))
        tangents_out.append(_keep_normalized(u, du))
    if compute_right_eigenvectors:
        tangents_out.append(_keep_normalized(v, mm(v, E.mul_p.bind1(f, x))))
    return outs, tangents_out


jvp_rules[eig_p] = _eig_jvp
