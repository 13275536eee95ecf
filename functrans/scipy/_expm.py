"""The matrix exponential by Pade approximation with scaling and squaring (Higham 2005, the
algorithm SciPy and JAX use), composed from matrix products, one linear solve and control
flow, so it differentiates and batches like any composite.

    >>> expm(fnp.zeros((2, 2)))
    Array([[1., 0.],
           [0., 1.]], dtype=float64)
"""
from __future__ import annotations

import numpy as np

from .. import lax
from .. import numpy as fnp
from ..core.trace import get_aval
from ..numpy.linalg_decomp import _matrix
from ..transforms.batching import vmap  # (not the root package's: that imports everything)

# Pade numerator coefficients b_0..b_q for degrees 3, 5, 7, 9, 13.
_PADE = {
    3: (120., 60., 12., 1.),
    5: (30240., 15120., 3360., 420., 30., 1.),
    7: (17297280., 8648640., 1995840., 277200., 25200., 1512., 56., 1.),
    9: (17643225600., 8821612800., 2075673600., 302702400., 30270240., 2162160., 110880.,
        3960., 90., 1.),
    13: (64764752532480000., 32382376266240000., 7771770303897600., 1187353796428800.,
         129060195264000., 10559470521600., 670442572800., 33522128640., 1323241920.,
         40840800., 960960., 16380., 182., 1.),
}
# Largest 1-norms for which each degree is accurate to working precision (Higham's theta_m).
_THETA = {np.dtype(np.float64): ((3, 5, 7, 9), (1.495585217958292e-2, 2.539398330063230e-1,
                                                9.504178996162932e-1, 2.097847961257068e0),
                                 5.371920351148152),
          np.dtype(np.float32): ((3, 5, 7), (4.258730016922831e-1, 1.880152677804762e0),
                                 3.925724783138660)}


def _pade(degree):
    b = _PADE[degree]

    def uv(A):
        ident = fnp.eye(get_aval(A).shape[-1], dtype=get_aval(A).dtype)
        A2 = A @ A
        if degree == 13:
            A4 = A2 @ A2
            A6 = A4 @ A2
            U = A @ (A6 @ (b[13] * A6 + b[11] * A4 + b[9] * A2)
                     + b[7] * A6 + b[5] * A4 + b[3] * A2 + b[1] * ident)
            V = A6 @ (b[12] * A6 + b[10] * A4 + b[8] * A2) + b[6] * A6 + b[4] * A4 \
                + b[2] * A2 + b[0] * ident
            return U, V
        powers = [ident, A2]
        while len(powers) <= degree // 2:
            powers.append(powers[-1] @ A2)
        U = A @ sum(b[2 * i + 1] * powers[i] for i in range(len(powers)))
        V = sum(b[2 * i] * powers[i] for i in range(len(powers)))
        return U, V
    return uv


def _expm2(A, upper_triangular, max_squarings):
    from .linalg import solve_triangular
    dtype = get_aval(A).dtype
    degrees, bounds, maxnorm = _THETA[dtype]
    norm1 = fnp.max(fnp.sum(fnp.abs(A), axis=0))
    n_squarings = fnp.maximum(0, fnp.floor(fnp.log2(norm1 / maxnorm)))
    A = A / (2.0 ** n_squarings).astype(dtype)
    # The cheapest degree accurate for this norm; scaling brings the rest under degree 13
    # (float64) or 7 (float32).
    idx = fnp.digitize(norm1, np.array(bounds, dtype))
    branches = [_pade(d) for d in degrees] + ([_pade(13)] if dtype == np.float64 else [])
    U, V = lax.switch(idx, branches, A)
    P, Q = U + V, V - U
    R = solve_triangular(Q, P) if upper_triangular else fnp.linalg.solve(Q, P)
    n = n_squarings.astype(np.int32)

    def square(i, R):
        return lax.cond(i < n, lambda r: r @ r, lambda r: r, R)

    R = lax.fori_loop(0, max_squarings, square, R)
    # More squarings than allowed: the result would be inaccurate; NaN says so (as JAX).
    return fnp.where(n_squarings > max_squarings, np.nan, R)


def expm(A, *, upper_triangular=False, max_squarings=16):
    """Matrix exponential of square matrices (leading batch dimensions allowed);
    ``upper_triangular`` uses a triangular solve for upper-triangular ``A``.

    >>> expm(fnp.array([[0.0, 1.0], [0.0, 0.0]]))
    Array([[1., 1.],
           [0., 1.]], dtype=float64)
    """
    A = _matrix("expm", A, square=True)
    fn = lambda a: _expm2(a, upper_triangular, max_squarings)  # noqa: E731
    for _ in range(get_aval(A).ndim - 2):
        fn = vmap(fn)
    return fn(A)
