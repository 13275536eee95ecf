"""Matrix-free iterative solvers with JAX's signatures (``jax.scipy.sparse.linalg``): ``cg``,
``bicgstab`` and ``gmres``.

``A`` is a function (a linear operator on ``b``'s pytree) or a square matrix; ``M`` a
preconditioner likewise (an approximation of ``A``'s inverse). Iterations run in
``lax.while_loop`` and each solver returns ``(x, info)``, with ``info`` None as in JAX.
Solutions differentiate implicitly through ``lax.custom_linear_solve``: a derivative is
another solve of the same system (``cg``'s operator is taken to be symmetric), never a
derivative of the iterations.

    >>> a = fnp.array([[4.0, 1.0], [1.0, 3.0]])
    >>> x, info = cg(lambda v: a @ v, fnp.array([1.0, 2.0]))
    >>> x
    Array([0.09090909, 0.63636364], dtype=float64)
"""
from __future__ import annotations

import operator
from functools import partial

import numpy as np

from ... import lax
from ... import numpy as fnp
from ...core.tree import tree_leaves, tree_map, tree_structure
from ..linalg import solve_triangular

__all__ = ["cg", "bicgstab", "gmres"]


def _vdot_real_part(x, y):
    """``Re(vdot(x, y))`` for real and complex arrays."""
    if fnp.iscomplexobj(x) or fnp.iscomplexobj(y):
        return fnp.vdot(fnp.real(x), fnp.real(y)) + fnp.vdot(fnp.imag(x), fnp.imag(y))
    return fnp.vdot(x, y)


def _vdot_real_tree(x, y):
    return sum(tree_leaves(tree_map(_vdot_real_part, x, y)))


def _vdot_tree(x, y):
    return sum(tree_leaves(tree_map(fnp.vdot, x, y)))


def _norm(x):
    xs = tree_leaves(x)
    return fnp.sqrt(sum(map(_vdot_real_part, xs, xs)))


def _mul(scalar, tree):
    return tree_map(partial(operator.mul, scalar), tree)


_add = partial(tree_map, operator.add)
_sub = partial(tree_map, operator.sub)


def _identity(x):
    return x


def _result_dtype(tree):
    return fnp.result_type(*tree_leaves(tree))


def _normalize_matvec(f, what):
    """A function applying ``f``: ``f`` itself, or multiplication by the square matrix ``f``."""
    if callable(f):
        return f
    try:
        m = fnp.asarray(f)
    except Exception:
        raise TypeError(f"linear operator {what} must be a function or a matrix, got "
                        f"{type(f).__name__}") from None
    if m.ndim != 2 or m.shape[0] != m.shape[1]:
        raise ValueError(f"linear operator {what} must be a square matrix, but has shape "
                         f"{m.shape}")
    return partial(fnp.dot, m)


# ---- conjugate gradients ------------------------------------------------------------------------
def _cg_solve(A, b, x0=None, *, maxiter, tol=1e-5, atol=0.0, M=_identity):
    bs = _vdot_real_tree(b, b)
    atol2 = fnp.maximum(fnp.square(tol) * bs, fnp.square(atol))

    def cond_fun(value):
        _, r, gamma, _, k = value
        rs = fnp.real(gamma) if M is _identity else _vdot_real_tree(r, r)
        return (rs > atol2) & (k < maxiter)

    def body_fun(value):
        x, r, gamma, p, k = value
        ap = A(p)
        alpha = gamma / _vdot_real_tree(p, ap).astype(dtype)
        x_ = _add(x, _mul(alpha, p))
        r_ = _sub(r, _mul(alpha, ap))
        z_ = M(r_)
        gamma_ = _vdot_real_tree(r_, z_).astype(dtype)
        beta_ = gamma_ / gamma
        p_ = _add(z_, _mul(beta_, p))
        return x_, r_, gamma_, p_, k + 1

    r0 = _sub(b, A(x0))
    p0 = z0 = M(r0)
    dtype = _result_dtype(p0)
    gamma0 = _vdot_real_tree(r0, z0).astype(dtype)
    x_final, *_ = lax.while_loop(cond_fun, body_fun, (x0, r0, gamma0, p0, fnp.int32(0)))
    return x_final


# ---- BiCGSTAB -------------------------------------------------------------------------------------
def _bicgstab_solve(A, b, x0=None, *, maxiter, tol=1e-5, atol=0.0, M=_identity):
    bs = _vdot_real_tree(b, b)
    atol2 = fnp.maximum(fnp.square(tol) * bs, fnp.square(atol))

    def cond_fun(value):
        x, r, *_, k = value
        rs = _vdot_real_tree(r, r)
        return (rs > atol2) & (k < maxiter) & (k >= 0)  # k < 0: breakdown

    def body_fun(value):
        x, r, rhat, alpha, omega, rho, p, q, k = value
        rho_ = _vdot_tree(rhat, r)
        beta = rho_ / rho * alpha / omega
        p_ = _add(r, _mul(beta, _sub(p, _mul(omega, q))))
        phat = M(p_)
        q_ = A(phat)
        alpha_ = rho_ / _vdot_tree(rhat, q_)
        s = _sub(r, _mul(alpha_, q_))
        exit_early = _vdot_real_tree(s, s) < atol2
        shat = M(s)
        t = A(shat)
        omega_ = _vdot_tree(t, s) / _vdot_tree(t, t)
        x_ = tree_map(partial(fnp.where, exit_early), _add(x, _mul(alpha_, phat)),
                      _add(x, _add(_mul(alpha_, phat), _mul(omega_, shat))))
        r_ = tree_map(partial(fnp.where, exit_early), s, _sub(s, _mul(omega_, t)))
        k_ = fnp.where((omega_ == 0) | (alpha_ == 0), -11, k + 1)
        k_ = fnp.where(rho_ == 0, -10, k_)
        return x_, r_, rhat, alpha_, omega_, rho_, p_, q_, k_

    r0 = _sub(b, A(x0))
    one = fnp.ones((), _result_dtype(b))
    init = (x0, r0, r0, one, one, one, r0, r0, fnp.int32(0))
    x_final, *_ = lax.while_loop(cond_fun, body_fun, init)
    return x_final


def _shapes(tree):
    return [fnp.shape(x) for x in tree_leaves(tree)]


def _isolve(solve_fn, name, A, b, x0=None, *, tol=1e-5, atol=0.0, maxiter=None, M=None,
            check_symmetric=False):
    b = tree_map(fnp.asarray, b)
    if x0 is None:
        x0 = tree_map(fnp.zeros_like, b)
    x0 = tree_map(fnp.asarray, x0)
    if maxiter is None:
        maxiter = 10 * sum(int(np.prod(fnp.shape(bi))) for bi in tree_leaves(b))  # SciPy's
    A = _normalize_matvec(A, "A")
    M = _identity if M is None else _normalize_matvec(M, "M")
    if tree_structure(x0) != tree_structure(b):
        raise ValueError(f"{name}: x0 and b must have matching tree structure: "
                         f"{tree_structure(x0)} vs {tree_structure(b)}")
    if _shapes(x0) != _shapes(b):
        raise ValueError(f"{name}: arrays in x0 and b must have matching shapes: "
                         f"{_shapes(x0)} vs {_shapes(b)}")
    solve = partial(solve_fn, x0=x0, tol=tol, atol=atol, maxiter=maxiter, M=M)
    # a real positive-definite operator (what cg solves) is symmetric
    symmetric = check_symmetric and not any(fnp.iscomplexobj(x) for x in tree_leaves(b))
    x = lax.custom_linear_solve(A, b, solve=solve, transpose_solve=solve, symmetric=symmetric)
    return x, None


def cg(A, b, x0=None, *, tol=1e-5, atol=0.0, maxiter=None, M=None):
    """Conjugate gradients for ``A x = b`` with ``A`` Hermitian positive definite (a function or
    a matrix; ``b`` any pytree). Stops when ``norm(residual) <= max(tol * norm(b), atol)`` or
    after ``maxiter`` (default ``10 * size(b)``) iterations. ``M`` preconditions (it should
    approximate ``A``'s inverse). Returns ``(x, None)``; derivatives are solves of the same
    (symmetric) system.

        >>> x, _ = cg(fnp.array([[2.0, 0.0], [0.0, 4.0]]), fnp.array([2.0, 2.0]))
        >>> x
        Array([1. , 0.5], dtype=float64)
    """
    return _isolve(_cg_solve, "cg", A, b, x0=x0, tol=tol, atol=atol, maxiter=maxiter, M=M,
                   check_symmetric=True)


def bicgstab(A, b, x0=None, *, tol=1e-5, atol=0.0, maxiter=None, M=None):
    """BiCGSTAB (stabilized biconjugate gradients) for ``A x = b`` with a general nonsingular
    ``A`` (a function or a matrix; ``b`` any pytree). Tolerances, ``maxiter`` and ``M`` as in
    :func:`cg`; stops early on breakdown. Returns ``(x, None)``; derivatives solve the
    (transposed) system with BiCGSTAB again.

        >>> x, _ = bicgstab(fnp.array([[2.0, 1.0], [0.0, 4.0]]), fnp.array([3.0, 4.0]))
        >>> x
        Array([1., 1.], dtype=float64)
    """
    return _isolve(_bicgstab_solve, "bicgstab", A, b, x0=x0, tol=tol, atol=atol,
                   maxiter=maxiter, M=M)


# ---- GMRES --------------------------------------------------------------------------------------
def _safe_normalize(x, thresh=None):
    """``(x / norm(x), norm(x))``, or zeros and 0 where ``norm(x) <= thresh`` (default: eps)."""
    norm = _norm(x)
    dtype = _result_dtype(x)
    if thresh is None:
        thresh = fnp.finfo(norm.dtype).eps
    thresh = fnp.real(fnp.asarray(thresh).astype(dtype))
    use_norm = norm > thresh
    normalized = tree_map(lambda y: fnp.where(use_norm, y / fnp.where(use_norm, norm, 1), 0),
                          x)
    return normalized, fnp.where(use_norm, norm, 0)


def _project_on_columns(Q, v):
    """``Q^H v`` for a pytree of column blocks ``Q`` (last axis: the columns)."""
    proj = tree_map(lambda X, y: fnp.einsum("...n,...->n", fnp.conj(X), y), Q, v)
    return sum(tree_leaves(proj))


def _gram_schmidt(Q, x):
    """``x`` orthogonalized against ``Q``'s columns by classical Gram-Schmidt applied twice
    ("twice is enough"), and the projection coefficients."""
    q, r = x, 0
    for _ in range(2):
        h = _project_on_columns(Q, q)
        q = _sub(q, tree_map(lambda X: fnp.dot(X, h), Q))
        r = r + h
    return q, r


def _kth_arnoldi_iteration(k, A, M, V, H):
    """The ``k``-th Arnoldi step: ``V[:, k+1]`` and ``H[k, :]`` (H stored transposed)."""
    dtype = _result_dtype(V)
    eps = fnp.finfo(dtype).eps
    v = tree_map(lambda X: X[..., k], V)
    v = M(A(v))
    _, v_norm_0 = _safe_normalize(v)
    v, h = _gram_schmidt(V, v)
    unit_v, v_norm_1 = _safe_normalize(v, thresh=eps * v_norm_0)
    V = tree_map(lambda X, y: X.at[..., k + 1].set(y), V, unit_v)
    h = h.at[k + 1].set(v_norm_1.astype(dtype))
    H = H.at[k, :].set(h)
    return V, H, v_norm_1 == 0


def _rotate_vectors(H, i, cs, sn):
    x1, y1 = H[i], H[i + 1]
    x2 = fnp.conj(cs) * x1 - fnp.conj(sn) * y1
    y2 = sn * x1 + cs * y1
    return H.at[i].set(x2).at[i + 1].set(y2)


def _givens_rotation(a, b):
    b_zero = fnp.abs(b) == 0
    a_lt_b = fnp.abs(a) < fnp.abs(b)
    den = fnp.where(a_lt_b, b, a)
    t = -fnp.where(a_lt_b, a, b) / fnp.where(den == 0, 1, den)
    r = (1 / fnp.sqrt(1 + fnp.abs(t) ** 2)).astype(t.dtype)
    cs = fnp.where(b_zero, 1, fnp.where(a_lt_b, r * t, r))
    sn = fnp.where(b_zero, 0, fnp.where(a_lt_b, r, r * t))
    return cs, sn


def _apply_givens_rotations(H_row, givens, k):
    def apply_ith(i, row):
        return _rotate_vectors(row, i, givens[i, 0], givens[i, 1])
    R_row = lax.fori_loop(0, k, apply_ith, H_row)
    cs, sn = _givens_rotation(R_row[k], R_row[k + 1])
    givens = givens.at[k, 0].set(cs).at[k, 1].set(sn)
    return _rotate_vectors(R_row, k, cs, sn), givens


def _krylov_basis(unit_residual, restart):
    return tree_map(lambda x: fnp.pad(x[..., None], ((0, 0),) * x.ndim + ((0, restart),)),
                    unit_residual)


def _gmres_incremental(A, b, x0, unit_residual, residual_norm, ptol, restart, M):
    """One restart cycle, its least-squares problem solved as it grows (Givens rotations),
    stopping once the estimated residual is below ``ptol``."""
    V = _krylov_basis(unit_residual, restart)
    dtype = _result_dtype(b)
    R = fnp.eye(restart, restart + 1, dtype=dtype)
    givens = fnp.zeros((restart, 2), dtype=dtype)
    beta_vec = fnp.zeros(restart + 1, dtype=dtype).at[0].set(residual_norm.astype(dtype))

    def loop_cond(carry):
        k, err, _, _, _, _ = carry
        return (k < restart) & (err > ptol)

    def arnoldi_qr_step(carry):
        k, _, V, R, beta_vec, givens = carry
        V, H, _ = _kth_arnoldi_iteration(k, A, M, V, R)
        R_row, givens = _apply_givens_rotations(H[k, :], givens, k)
        R = R.at[k, :].set(R_row)
        beta_vec = _rotate_vectors(beta_vec, k, givens[k, 0], givens[k, 1])
        err = fnp.abs(beta_vec[k + 1]).astype(fnp.real(residual_norm).dtype)
        return k + 1, err, V, R, beta_vec, givens

    carry = (fnp.int32(0), residual_norm, V, R, beta_vec, givens)
    _, _, V, R, beta_vec, _ = lax.while_loop(loop_cond, arnoldi_qr_step, carry)
    y = solve_triangular(R[:, :-1].T, beta_vec[:-1])
    x = _add(x0, tree_map(lambda X: fnp.dot(X[..., :-1], y), V))
    unit_residual, residual_norm = _safe_normalize(M(_sub(b, A(x))))
    return x, unit_residual, residual_norm


def _lstsq(a, b):
    at = fnp.conj(a).T
    return fnp.linalg.solve(at @ a, at @ b)


def _gmres_batched(A, b, x0, unit_residual, residual_norm, ptol, restart, M):
    """One restart cycle: the whole Krylov basis, then one least-squares solve."""
    V = _krylov_basis(unit_residual, restart)
    dtype = _result_dtype(b)
    H = fnp.eye(restart, restart + 1, dtype=dtype)

    def loop_cond(carry):
        _, _, breakdown, k = carry
        return (k < restart) & fnp.logical_not(breakdown)

    def arnoldi_process(carry):
        V, H, _, k = carry
        V, H, breakdown = _kth_arnoldi_iteration(k, A, M, V, H)
        return V, H, breakdown, k + 1

    V, H, _, _ = lax.while_loop(loop_cond, arnoldi_process,
                                (V, H, fnp.asarray(False), fnp.int32(0)))
    beta_vec = fnp.zeros(restart + 1, dtype=dtype).at[0].set(residual_norm.astype(dtype))
    y = _lstsq(H.T, beta_vec)
    x = _add(x0, tree_map(lambda X: fnp.dot(X[..., :-1], y), V))
    unit_residual, residual_norm = _safe_normalize(M(_sub(b, A(x))))
    return x, unit_residual, residual_norm


def _gmres_solve(A, b, x0, atol, ptol, restart, maxiter, M, gmres_func):
    unit_residual, residual_norm = _safe_normalize(M(_sub(b, A(x0))))

    def cond_fun(value):
        _, k, _, residual_norm = value
        return (k < maxiter) & (residual_norm > atol)

    def body_fun(value):
        x, k, unit_residual, residual_norm = value
        x, unit_residual, residual_norm = gmres_func(A, b, x, unit_residual, residual_norm,
                                                     ptol, restart, M)
        return x, k + 1, unit_residual, residual_norm

    x_final, *_ = lax.while_loop(cond_fun, body_fun,
                                 (x0, fnp.int32(0), unit_residual, residual_norm))
    return x_final


def gmres(A, b, x0=None, *, tol=1e-5, atol=0.0, restart=20, maxiter=None, M=None,
          solve_method="batched"):
    """Restarted GMRES for ``A x = b`` with a general nonsingular ``A`` (a function or a
    matrix; ``b`` any pytree). Each of at most ``maxiter`` (default ``10 * size(b)``) cycles
    builds a Krylov basis of ``restart`` vectors (at most ``size(b)``); it stops when
    ``norm(M(residual)) <= max(tol * norm(b), atol)``. ``solve_method``: ``'batched'``
    (the basis, then one least-squares solve per cycle: fewer, larger operations) or
    ``'incremental'`` (Givens rotations as the basis grows, stopping a cycle early once
    converged). ``M`` is a left preconditioner. Returns ``(x, None)``; an x holding NaN is all
    NaN (a failed solve), as in JAX.

        >>> x, _ = gmres(fnp.array([[2.0, 1.0], [0.0, 4.0]]), fnp.array([3.0, 4.0]))
        >>> x
        Array([1., 1.], dtype=float64)
    """
    b = tree_map(fnp.asarray, b)
    if x0 is None:
        x0 = tree_map(fnp.zeros_like, b)
    x0 = tree_map(fnp.asarray, x0)
    A = _normalize_matvec(A, "A")
    M = _identity if M is None else _normalize_matvec(M, "M")
    size = sum(int(np.prod(fnp.shape(bi))) for bi in tree_leaves(b))
    if maxiter is None:
        maxiter = 10 * size  # SciPy's
    restart = min(restart, size)
    if tree_structure(x0) != tree_structure(b):
        raise ValueError(f"gmres: x0 and b must have matching tree structure: "
                         f"{tree_structure(x0)} vs {tree_structure(b)}")
    if _shapes(x0) != _shapes(b):
        raise ValueError(f"gmres: arrays in x0 and b must have matching shapes: "
                         f"{_shapes(x0)} vs {_shapes(b)}")
    if solve_method == "incremental":
        gmres_func = _gmres_incremental
    elif solve_method == "batched":
        gmres_func = _gmres_batched
    else:
        raise ValueError(f"gmres: solve_method must be 'incremental' or 'batched', got "
                         f"{solve_method!r}")
    b_norm = _norm(b)
    atol = fnp.maximum(tol * b_norm, atol)
    ptol = _norm(M(b)) * fnp.minimum(1.0, atol / fnp.where(b_norm == 0, 1, b_norm))

    def solve(A, b):
        return _gmres_solve(A, b, x0, atol, ptol, restart, maxiter, M, gmres_func)

    x = lax.custom_linear_solve(A, b, solve=solve, transpose_solve=solve)
    failed = fnp.isnan(_norm(x))
    x = tree_map(lambda y: fnp.where(failed, fnp.nan, y), x)
    return x, None
