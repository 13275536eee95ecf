"""``lu`` and ``triangular_solve`` in native programs: LAPACK (``?getrf``, ``?trsm``) called
from small Numba kernels, linked into the program as users' kernels are (``user_calls.py``).

Without them a program using either one went to the Numba backend whole, loops around it
included: an implicit ODE solver's step loop (a Newton iteration solving with LU factors
inside a ``while``) took tens of seconds to compile instead of about one. Here only the two
calls are Numba code: per dtype and static params, a wrapper around the kernels the Numba
backend already has (``lowering/lapack.py``), compiled once per machine and then read from
the disk cache. Batch dimensions become the sequential loops around the call.

    >>> import functrans as ft, functrans.numpy as fnp
    >>> solve = ft.jit(lambda a, b: ft.scipy.linalg.lu_solve(ft.scipy.linalg.lu_factor(a), b))
    >>> solve(fnp.array([[2.0, 1.0], [1.0, 3.0]]), fnp.array([3.0, 5.0])).round(12).tolist()
    [0.8, 1.4]
"""
from __future__ import annotations

from functrans.primitives.kernel_code import KernelCode

from ..lowering import lapack
from .user_calls import numba_call_kernel

__all__ = ["linalg_kernels"]

if lapack.AVAILABLE:
    _lapack_lu, _lapack_trsm = lapack.lu, lapack.triangular_solve


def lu_kernel(a, lu, pivots, perm):
    # One (m, n) matrix: the batch kernel on a batch of one.
    f, p, q = _lapack_lu(a.copy().reshape((1,) + a.shape))
    lu[:, :] = f[0]
    pivots[:] = p[0]
    perm[:] = q[0]


def triangular_solve_kernel(a, b, x, left_side, lower, transpose_a, unit_diagonal):
    out = _lapack_trsm(a.copy().reshape((1,) + a.shape), b.copy().reshape((1,) + b.shape),
                left_side, lower, transpose_a, unit_diagonal)
    x[:, :] = out[0]


_codes: dict = {}


def _code(fn, params):
    key = (fn, tuple(sorted(params.items())))
    code = _codes.get(key)
    if code is None:  # one per static params: its compiled forms are kept on it
        code = _codes[key] = KernelCode(fn, params, zero_outputs=False)
    return code


class _Call:
    """``eqn`` seen as the ``numba_call`` of ``kernel`` it is computed by, its batch
    dimensions as the sequential loops around the call (every operand carries them)."""

    def __init__(self, eqn, kernel):
        self.prim, self.inputs, self.outputs = eqn.prim, eqn.inputs, eqn.outputs
        loops = tuple(eqn.outputs[0].aval.shape[:-2])
        self.params = {"kernel": kernel, "loops": loops,
                       "looped": tuple((True,) * len(loops) for _ in eqn.inputs)}


def _lu(eqn):
    if not lapack.AVAILABLE:
        raise NotImplementedError("lu: no LAPACK for kernels to call")
    return numba_call_kernel(_Call(eqn, _code(lu_kernel, {})))


def _triangular_solve(eqn):
    if not lapack.AVAILABLE:
        raise NotImplementedError("triangular_solve: no LAPACK for kernels to call")
    params = {k: bool(eqn.params[k])
              for k in ("left_side", "lower", "transpose_a", "unit_diagonal")}
    return numba_call_kernel(_Call(eqn, _code(triangular_solve_kernel, params)))


linalg_kernels = {"lu": _lu, "triangular_solve": _triangular_solve}
