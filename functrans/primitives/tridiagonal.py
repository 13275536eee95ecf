"""``tridiagonal_solve``: solve ``A X = B`` for tridiagonal ``A`` given by its three diagonals
(JAX's ``lax.linalg.tridiagonal_solve_p``). ``dl``, ``d``, ``du`` are (..., m) with
``dl[i] = A[i, i-1]`` (``dl[0]`` unused) and ``du[i] = A[i, i+1]`` (``du[m-1]`` unused); ``b``
is (..., m, k). The impl is LAPACK's ``?gtsv`` (partial pivoting), as JAX's on CPU; a singular
system gives NaN, as JAX's does. Under jit it is a host step between compiled segments.

Its rules are JAX's: the JVP solves again with ``b' - A' x`` as right-hand side; the
transpose (linear in ``b`` only) solves with ``A^T``, whose diagonals are ``du`` and ``dl``
shifted; batching folds a batch of right-hand sides into ``b``'s columns when the diagonals
are unbatched, else moves every batch dimension to the front.

    >>> x = tridiagonal_solve_p.bind1(np.array([0.0, 1.0]), np.array([2.0, 2.0]),
    ...                               np.array([1.0, 0.0]), np.array([[3.0], [3.0]]))
    >>> x.ravel().tolist()
    [1.0, 1.0]
"""
from __future__ import annotations

import numpy as np

from ..core.avals import ShapedArray
from ..core.trace import Primitive, get_aval
from . import lapack

__all__ = ["tridiagonal_solve_p"]

# LAPACK's ?gtsv has all four variants (s, d, c, z); the rules are complex-linear as written
_FLOATS = tuple(np.dtype(t) for t in (np.float32, np.float64, np.complex64, np.complex128))


def _abstract_eval(dl, d, du, b):
    for name, v in (("dl", dl), ("d", d), ("du", du), ("b", b)):
        if v.dtype not in _FLOATS:
            raise TypeError(f"tridiagonal_solve: expected float32, float64, complex64 or "
                            f"complex128 operands, got "
                            f"{name} {v.str_short()}")
        if v.dtype != b.dtype:
            raise TypeError(f"tridiagonal_solve: the operands must have one dtype, got {name} "
                            f"{v.str_short()} and b {b.str_short()}")
    if not (dl.shape == d.shape == du.shape) or d.ndim < 1:
        raise TypeError(f"tridiagonal_solve requires that all diagonal arguments have the same "
                        f"shape (at least one dimension), got {dl.str_short()}, "
                        f"{d.str_short()}, {du.str_short()}")
    if b.ndim < 2 or b.shape[:-1] != d.shape:
        raise TypeError(f"tridiagonal_solve requires that the leading ndim-1 dimensions of b "
                        f"equal the dimensions of the diagonal arguments, got b "
                        f"{b.str_short()} and diagonals {d.str_short()}")
    return [ShapedArray(b.shape, b.dtype)]


def _impl(dl, d, du, b):
    batch = d.shape[:-1]
    size = int(np.prod(batch, dtype=int))
    m = d.shape[-1]
    flat = [v.reshape((size,) + v.shape[len(batch):]) for v in (dl, d, du, b)]
    out = np.empty((size,) + b.shape[len(batch):], b.dtype)
    for i in range(size):
        x, info = lapack.gtsv(flat[0][i, 1:], flat[1][i], flat[2][i, :m - 1], flat[3][i])
        out[i] = np.nan if info else x  # a zero pivot: NaN, as JAX's CPU solve gives
    return [out.reshape(b.shape)]


tridiagonal_solve_p = Primitive("tridiagonal_solve", impl=_impl, abstract_eval=_abstract_eval)
# Under jit, LAPACK's ?gtsv is called between compiled segments (no in-kernel form).
tridiagonal_solve_p.host_only = True


# ==== rules =======================================================================================
from ..transforms.autodiff.rules import (Zero, add_tangents, instantiate,  # noqa: E402
                                         is_undefined, is_zero, jvp_rules, transpose_rules)
from ..transforms.batching import batching_rules, bdim_at_front, moveaxis  # noqa: E402
from . import elementwise as E  # noqa: E402
from . import structural as S  # noqa: E402


def _shift(v, up):
    """``v`` (..., m) moved one place along its last axis (``up``: ``out[i] = v[i+1]``, else
    ``out[i] = v[i-1]``), the vacated end zero."""
    shape = get_aval(v).shape
    nd = len(shape)
    start = (0,) * (nd - 1) + (1 if up else 0,)
    limit = shape[:-1] + (shape[-1] if up else shape[-1] - 1,)
    part = S.slice_p.bind1(v, start_indices=start, limit_indices=limit, strides=None)
    pad = (0, 1, 0) if up else (1, 0, 0)
    return S.pad_p.bind1(part, np.array(0, get_aval(v).dtype),
                         padding_config=((0, 0, 0),) * (nd - 1) + (pad,))


def _column(v, b_shape):
    """Diagonal ``v`` (..., m) broadcast over the columns of ``b`` (..., m, k)."""
    nd = len(b_shape)
    return S.broadcast_in_dim_p.bind1(v, shape=tuple(b_shape),
                                      broadcast_dimensions=tuple(range(nd - 1)))


def _product(dl, d, du, x):
    """``A x`` for the tridiagonal ``A`` of ``dl, d, du``: row i is
    ``dl[i] x[i-1] + d[i] x[i] + du[i] x[i+1]``."""
    shape = get_aval(x).shape
    nd = len(shape)
    zero = np.array(0, get_aval(x).dtype)
    rows = [(0,) * nd, shape[:-2] + (shape[-2] - 1, shape[-1])]
    x_prev = S.pad_p.bind1(S.slice_p.bind1(x, start_indices=rows[0], limit_indices=rows[1],
                                           strides=None),
                           zero, padding_config=((0, 0, 0),) * (nd - 2) + ((1, 0, 0), (0, 0, 0)))
    x_next = S.pad_p.bind1(S.slice_p.bind1(x, start_indices=(0,) * (nd - 2) + (1, 0),
                                           limit_indices=shape, strides=None),
                           zero, padding_config=((0, 0, 0),) * (nd - 2) + ((0, 1, 0), (0, 0, 0)))
    # dl[0] and du[m-1] multiply the zero padding: they are unused, as in the solve.
    y = E.mul_p.bind1(_column(d, shape), x)
    y = E.add_p.bind1(y, E.mul_p.bind1(_column(dl, shape), x_prev))
    return E.add_p.bind1(y, E.mul_p.bind1(_column(du, shape), x_next))


def _jvp(primals, tangents):
    dl, d, du, b = primals
    *t_diags, t_b = tangents
    x = tridiagonal_solve_p.bind1(dl, d, du, b)
    if all(is_zero(t) for t in t_diags):
        rhs = t_b
    else:
        diags = [instantiate(t) if is_zero(t) else t for t in t_diags]
        rhs = add_tangents(t_b, E.neg_p.bind1(_product(*diags, x)))
    if is_zero(rhs):
        return [x], [Zero(get_aval(x))]
    return [x], [tridiagonal_solve_p.bind1(dl, d, du, rhs)]


def _transpose(cts, dl, d, du, b):
    if is_undefined(dl) or is_undefined(d) or is_undefined(du):
        raise TypeError("tridiagonal_solve is linear in its right-hand side b only, not in "
                        "the diagonals")
    ct = cts[0]
    if is_zero(ct):
        return [None, None, None, Zero(b.aval)]
    # A^T has sub-diagonal du shifted down one place and super-diagonal dl shifted up one.
    return [None, None, None, tridiagonal_solve_p.bind1(_shift(du, up=False), d,
                                                        _shift(dl, up=True), ct)]


def _batch(axis, vals, dims):
    dl, d, du, b = vals
    bdl, bd, bdu, bb = dims
    if bdl is None and bd is None and bdu is None:
        # One matrix for the whole batch: the batch becomes more columns of b.
        b = moveaxis(b, bb, get_aval(b).ndim - 2)       # (..., m, size, k)
        shape = get_aval(b).shape
        flat = S.reshape_p.bind1(b, new_sizes=shape[:-2] + (shape[-2] * shape[-1],))
        out = tridiagonal_solve_p.bind1(dl, d, du, flat)
        return [S.reshape_p.bind1(out, new_sizes=shape)], [len(shape) - 2]
    xs = [bdim_at_front(v, dim, axis.size) for v, dim in zip(vals, dims)]
    return [tridiagonal_solve_p.bind1(*xs)], [0]


jvp_rules[tridiagonal_solve_p] = _jvp
transpose_rules[tridiagonal_solve_p] = _transpose
batching_rules[tridiagonal_solve_p] = _batch
