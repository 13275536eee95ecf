"""Householder QR in LAPACK's packed form: ``geqrf`` (the factorization ``jnp.linalg.qr``'s
``mode="raw"`` returns, transposed), and ``householder_product`` and ``ormqr`` (Q formed, or
applied to a matrix without forming it), with ``jax.lax.linalg``'s names and conventions.

They are compositions of lax operations (a ``fori_loop`` over the reflectors, as JAX's own
portable lowering of ``ormqr``), so they batch under ``vmap``, compile under ``jit`` and
differentiate like any program; JAX gives these three no derivative rules. ``geqrf`` follows
LAPACK's ``?geqr2``/``?larfg`` conventions (``beta = -sign(alpha) * ||x||``, ``tau = (beta -
alpha) / beta``, ``tau = 0`` where the column below the diagonal is zero), so its results are
LAPACK's to rounding. Float32, float64, complex64 and complex128 operands (complex reflectors
as ``?larfg``'s: ``H = I - tau v v^H`` with a complex ``tau`` and a real ``beta`` whose sign
is opposite to ``Re(alpha)``'s); leading dimensions are batch dimensions.

    >>> h, taus = geqrf(fnp.array([[3.0, 1.0], [4.0, 2.0]]))
    >>> h[0, 0], taus[0]
    (Array(-5., dtype=float64), Array(1.6, dtype=float64))
"""
from __future__ import annotations

import numpy as np

from ..core.trace import get_aval
from . import ops as L
from .control_flow import fori_loop
from .products import dot_general

__all__ = ["geqrf", "householder_product", "ormqr"]


def _arr(x):
    try:
        get_aval(x)
        return x
    except TypeError:  # lists, NumPy arrays of other kinds
        return np.asarray(x)


def _check(name, x, rank, what):
    aval = get_aval(x)
    if aval.ndim < rank:
        raise ValueError(f"lax.linalg.{name}: {what} must have at least {rank} dimensions, got "
                         f"{aval.str_short()}")
    if aval.dtype not in (np.float32, np.float64, np.complex64, np.complex128):
        raise TypeError(f"lax.linalg.{name}: expected float32, float64, complex64 or "
                        f"complex128 operands, got {aval.str_short()}")
    return aval


def _conj(x):
    """Complex conjugate; the identity on real operands (no conversion to complex)."""
    return L.conj(x) if get_aval(x).dtype.kind == "c" else x


def _re(x):
    return L.real(x) if get_aval(x).dtype.kind == "c" else x


def _to(x, shape):
    """``x`` broadcast (NumPy's rules: trailing axes aligned) to ``shape``."""
    s = get_aval(x).shape
    if s == tuple(shape):
        return x
    return L.broadcast_in_dim(x, tuple(shape), tuple(range(len(shape) - len(s), len(shape))))


def _where(pred, a, b, shape):
    return L.select(_to(pred, shape), _to(a, shape), _to(b, shape))


def _sum(x, axis):
    """Sum over ``axis`` (negative), keeping it as size 1."""
    shape = get_aval(x).shape
    ndim = len(shape)
    s = L.reduce_sum(x, (ndim + axis,))
    return L.broadcast_in_dim(s, shape[:axis] + (1,) + shape[ndim + axis + 1:],
                              tuple(i for i in range(ndim) if i != ndim + axis))


def geqrf(a):
    """Householder QR of ``a`` (..., m, n) in LAPACK's packed form ``(h, taus)``: ``R`` is
    ``h``'s upper triangle; below the diagonal, column j holds the reflector ``v_j`` (its
    unit j-th entry implied), and ``Q = H_0 ... H_{k-1}`` with ``H_j = I - taus[j] v_j v_j^H``,
    k = min(m, n).

    >>> h, taus = geqrf(fnp.array([[0.0], [2.0]]))
    >>> h.ravel().tolist(), taus.tolist()
    ([-2.0, 1.0], [1.0])
    """
    a = _arr(a)
    aval = _check("geqrf", a, 2, "a")
    *batch, m, n = aval.shape
    k = min(m, n)
    dt, shape = aval.dtype, aval.shape
    rows = L.broadcasted_iota(np.int32, (m, 1), 0)
    cols = L.broadcasted_iota(np.int32, (1, n), 1)
    kidx = L.iota(np.int32, k)
    zero, one = np.array(0, dt), np.array(1, dt)
    col_shape = tuple(batch) + (m, 1)
    scalar_shape = tuple(batch) + (1, 1)

    def step(j, carry):
        a, taus = carry
        j = L.convert_element_type(j, np.int32)
        col = L.dynamic_slice_in_dim(a, j, 1, axis=len(shape) - 1)       # (..., m, 1)
        below = _where(L.gt(rows, j), col, zero, col_shape)
        alpha = _sum(_where(L.eq(rows, j), col, zero, col_shape), -2)   # (..., 1, 1)
        # |x|^2 and |alpha|^2 as values of the operand's dtype (complex: zero imaginary parts)
        xnorm = L.sqrt(_sum(L.mul(_conj(below), below), -2))
        alpha_sq = L.mul(_conj(alpha), alpha)
        reflect = L.ne(xnorm, zero)
        if dt.kind == "c":  # a complex alpha is made real by a reflector even when x is zero
            reflect = L.bitwise_or(reflect, L.ne(L.imag(alpha), np.array(0, L.real(alpha).dtype)))
        # LAPACK's ?larfg: beta takes the sign opposite to Re(alpha)'s, so alpha - beta never
        # cancels; where the column below is zero (and alpha real), H = I (tau = 0) and the
        # column stays.
        h = L.sqrt(L.add(alpha_sq, L.mul(xnorm, xnorm)))
        beta = L.select(L.ge(_re(alpha), _re(zero)), L.neg(h), h)
        safe_beta = _where(reflect, beta, one, scalar_shape)
        tau = _where(reflect, L.div(L.sub(beta, alpha), safe_beta), zero, scalar_shape)
        denom = _where(reflect, L.sub(alpha, beta), one, scalar_shape)
        v = _where(L.eq(rows, j), one, L.div(below, _to(denom, col_shape)), col_shape)
        # H^H applied to the trailing columns: a - conj(tau) v (v^H a).
        w = _sum(L.mul(_to(_conj(v), shape), a), -2)                        # (..., 1, n)
        updated = L.sub(a, L.mul(_to(_conj(tau), shape), L.mul(_to(v, shape), _to(w, shape))))
        a = _where(L.gt(cols, j), updated, a, shape)
        diag = _where(reflect, beta, alpha, scalar_shape)
        new_col = _where(L.eq(rows, j), _to(diag, col_shape),
                         _where(L.gt(rows, j), v, col, col_shape), col_shape)
        a = _where(L.eq(cols, j), _to(new_col, shape), a, shape)
        tau_k = L.reshape(tau, tuple(batch) + (1,))
        taus = _where(L.eq(kidx, j), _to(tau_k, tuple(batch) + (k,)), taus, tuple(batch) + (k,))
        return a, taus

    taus = L.full(tuple(batch) + (k,), 0, dt)
    return fori_loop(0, k, step, (a, taus))


def _reflectors(name, a, taus):
    """The unit lower-trapezoidal reflectors ``V`` (..., m, k) packed in ``a``."""
    aval = _check(name, a, 2, "a")
    taval = _check(name, taus, 1, "taus")
    *batch, m, n = aval.shape
    k = taval.shape[-1]
    if taval.dtype != aval.dtype:
        raise TypeError(f"lax.linalg.{name}: a and taus must have one dtype, got "
                        f"{aval.str_short()} and {taval.str_short()}")
    if tuple(taval.shape[:-1]) != tuple(batch):
        raise ValueError(f"lax.linalg.{name}: taus's batch dimensions {taval.shape[:-1]} must "
                         f"be a's {tuple(batch)}")
    if k > min(m, n):
        raise ValueError(f"lax.linalg.{name}: {k} reflectors (taus) but a {aval.str_short()} "
                         f"holds at most min(m, n) = {min(m, n)}")
    vshape = tuple(batch) + (m, k)
    block = L.slice_in_dim(a, 0, k, axis=aval.ndim - 1)
    rows = L.broadcasted_iota(np.int32, (m, k), 0)
    cols = L.broadcasted_iota(np.int32, (m, k), 1)
    dt = aval.dtype
    v = _where(L.gt(rows, cols), block, np.array(0, dt), vshape)
    return _where(L.eq(rows, cols), np.array(1, dt), v, vshape), k


def ormqr(a, taus, c, *, left: bool = True, transpose: bool = False):
    """``Q @ c`` (``left``), ``c @ Q`` (not ``left``), or with ``Q^T`` (``transpose``;
    ``Q^H`` for complex operands), where
    ``Q`` is the product of the Householder reflectors packed in ``a`` (..., m, n) and
    ``taus`` (..., k), as :func:`geqrf` returns them; ``Q`` is never formed.

    >>> a = fnp.array([[3.0, 1.0], [4.0, 2.0]])
    >>> h, taus = geqrf(a)
    >>> r = fnp.triu(h)
    >>> ormqr(h, taus, r)  # Q R == a
    Array([[3., 1.],
           [4., 2.]], dtype=float64)
    """
    a, taus, c = _arr(a), _arr(taus), _arr(c)
    aval = get_aval(a)
    v, k = _reflectors("ormqr", a, taus)
    caval = _check("ormqr", c, 2, "c")
    *batch, m, _ = aval.shape
    if caval.dtype != aval.dtype:
        raise TypeError(f"lax.linalg.ormqr: a and c must have one dtype, got "
                        f"{aval.str_short()} and {caval.str_short()}")
    if tuple(caval.shape[:-2]) != tuple(batch):
        raise ValueError(f"lax.linalg.ormqr: c's batch dimensions {caval.shape[:-2]} must be "
                         f"a's {tuple(batch)}")
    if (caval.shape[-2] if left else caval.shape[-1]) != m:
        side = "rows" if left else "columns"
        raise ValueError(f"lax.linalg.ormqr with left={left} expects c to have as many {side} "
                         f"as a has rows ({m}), got a {aval.str_short()} and c "
                         f"{caval.str_short()}")
    nb = len(batch)
    bdims = (tuple(range(nb)), tuple(range(nb)))
    cshape = caval.shape
    # Q = H_0 ... H_{k-1}: Q c and c Q^H apply the last reflector first; Q^H's reflectors
    # are H_j^H = I - conj(tau_j) v_j v_j^H.
    reverse = left != transpose

    def step(i, c):
        i = L.convert_element_type(i, np.int32)
        idx = L.sub(np.int32(k - 1), i) if reverse else i
        vi = L.dynamic_index_in_dim(v, idx, axis=nb + 1, keepdims=False)      # (..., m)
        tau = L.dynamic_index_in_dim(taus, idx, axis=nb, keepdims=False)      # (...)
        if transpose:
            tau = _conj(tau)
        if left:  # c - tau v (v^H c)
            vc = dot_general(_conj(vi), c, (((nb,), (nb,)), bdims))              # (..., cols)
            update = L.mul(_to(L.broadcast_in_dim(vi, tuple(batch) + (m, 1), tuple(range(nb + 1))),
                               cshape),
                           _to(L.broadcast_in_dim(vc, tuple(batch) + (1, cshape[-1]),
                                                  tuple(range(nb)) + (nb + 1,)), cshape))
        else:     # c - tau (c v) v^H
            cv = dot_general(c, vi, (((nb + 1,), (nb,)), bdims))                 # (..., rows)
            update = L.mul(_to(L.broadcast_in_dim(cv, tuple(batch) + (cshape[-2], 1),
                                                  tuple(range(nb + 1))), cshape),
                           _to(L.broadcast_in_dim(_conj(vi), tuple(batch) + (1, m),
                                                  tuple(range(nb)) + (nb + 1,)), cshape))
        tau_b = L.broadcast_in_dim(tau, cshape, tuple(range(nb)))
        return L.sub(c, L.mul(tau_b, update))

    return fori_loop(0, k, step, c)


def householder_product(a, taus):
    """The first n columns of ``Q = H_0 ... H_{k-1}`` (LAPACK's ``?orgqr``): ``a`` (..., m, n)
    with m >= n packs the reflectors, ``taus`` (..., k) their scalars.

    >>> h, taus = geqrf(fnp.array([[3.0, 1.0], [4.0, 2.0]]))
    >>> householder_product(h, taus)
    Array([[-0.6, -0.8],
           [-0.8,  0.6]], dtype=float64)
    """
    a, taus = _arr(a), _arr(taus)
    aval = _check("householder_product", a, 2, "a")
    *batch, m, n = aval.shape
    if m < n:
        raise ValueError(f"lax.linalg.householder_product: a must have at least as many rows "
                         f"as columns, got {aval.str_short()}")
    _reflectors("householder_product", a, taus)
    eye = L.convert_element_type(L.eq(L.broadcasted_iota(np.int32, (m, n), 0),
                                      L.broadcasted_iota(np.int32, (m, n), 1)), aval.dtype)
    return ormqr(a, taus, _to(eye, aval.shape), left=True, transpose=False)
