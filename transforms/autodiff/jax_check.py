"""JAX's derivative checks (``jax.test_util``; ``functrans/test_util.py`` is their face):
automatic derivatives against central finite differences in one random direction, with JAX's
per-dtype tolerances (multiplied by the compared leaf's size) and JAX's signatures
(``check_jvp(f, f_jvp, args)``, ``check_vjp(f, f_vjp, args)``). functrans's own
``check_grads`` (``check.py``, ``ft.testing.check_grads``) picks its step and tolerances from
the dtypes instead.

    >>> check_grads(fnp.sin, (0.5,), order=2)                   # passes silently
"""
from __future__ import annotations

import functools
import operator

import numpy as np

from functrans.core import dtypes as _dtypes
from functrans.core.config import config
from functrans.core.dtypes import kind as dtype_kind
from functrans.core.tree import tree_map, tree_reduce

from .api import jvp, linearize, vjp

EPS = 1e-4

_PYTHON_SCALAR_DTYPES = {bool: np.dtype(bool), int: np.dtype(np.int64),
                         float: np.dtype(np.float64), complex: np.dtype(np.complex128)}

# Tolerances for values compared exactly (and where no gradient tolerance applies).
_VALUE_TOLERANCE = {np.dtype(t): 0 for t in (np.bool_, np.int8, np.int16, np.int32, np.int64,
                                             np.uint8, np.uint16, np.uint32, np.uint64)}
_VALUE_TOLERANCE.update({np.dtype(np.float16): 1e-3, np.dtype(np.float32): 1e-6,
                         np.dtype(np.float64): 1e-15, np.dtype(np.complex64): 1e-6,
                         np.dtype(np.complex128): 1e-15})
# Finite differences are far less accurate than the values: per-dtype gradient tolerances.
_GRADIENT_TOLERANCE = {np.dtype(np.float16): 1e-2, np.dtype(np.float32): 2e-3,
                       np.dtype(np.float64): 1e-5, np.dtype(np.complex64): 1e-3,
                       np.dtype(np.complex128): 1e-5}


def _is_python_scalar(x) -> bool:
    return type(x) in (bool, int, float, complex)


def _dtype(x) -> np.dtype:
    if hasattr(x, "dtype"):
        return np.dtype(x.dtype)
    if type(x) in _PYTHON_SCALAR_DTYPES:
        return _PYTHON_SCALAR_DTYPES[type(x)]
    return np.asarray(x).dtype


def _host(x):
    """A leaf as NumPy data (Python scalars stay scalars, so their results stay scalars)."""
    return x if _is_python_scalar(x) else np.asarray(x)


def _tolerance(dtype, tol) -> float:
    if not isinstance(tol, dict):
        return tol
    d = np.dtype(dtype)
    if d in _dtypes.SUPPORTED_DTYPES:
        d = _dtypes.canonicalize_dtype(d)
    if d in tol:
        return tol[d]
    if d not in _VALUE_TOLERANCE:
        raise TypeError(f"check_grads: no default tolerance for dtype {d}; pass atol= and "
                        "rtol= as numbers")
    return _VALUE_TOLERANCE[d]


def _merge_tolerance(tol, default):
    if tol is None:
        return default
    if not isinstance(tol, dict):
        return tol
    return {**default, **{np.dtype(k): v for k, v in tol.items()}}


def _assert_leaf_close(a, b, atol, rtol, err_msg):
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        raise AssertionError(f"{err_msg}: shapes differ: {a.shape} vs {b.shape}")
    # Tolerances grow with the leaf's size: a sum over n elements accumulates n errors.
    atol = max(_tolerance(a.dtype, atol), _tolerance(b.dtype, atol)) * a.size
    rtol = max(_tolerance(a.dtype, rtol), _tolerance(b.dtype, rtol)) * b.size
    kw = {}
    if atol:
        kw["atol"] = atol
    if rtol:
        kw["rtol"] = rtol
    with np.errstate(invalid="ignore"):
        np.testing.assert_allclose(a, b, err_msg=err_msg, **kw)


def _check_close(xs, ys, atol, rtol, err_msg):
    tree_map(lambda x, y: _assert_leaf_close(x, y, atol, rtol, err_msg), xs, ys)


def _check_dtypes_match(xs, ys):
    def check(x, y):
        dx, dy = _dtype(x), _dtype(y)
        if not config.enable_x64:
            dx, dy = _dtypes.canonicalize_dtype(dx), _dtypes.canonicalize_dtype(dy)
        if dx != dy:
            raise AssertionError(f"dtypes differ: {dx} vs {dy}")
    tree_map(check, xs, ys)


def _elementwise(op):
    """``op`` on leaves, in the first operand's dtype (a Python scalar when all are)."""
    def apply(*args):
        result = np.array(op(*[_host(a) for a in args]), dtype=_dtype(args[0]))
        return result.item() if all(_is_python_scalar(a) for a in args) else result
    return functools.partial(tree_map, apply)


_add = _elementwise(operator.add)
_sub = _elementwise(operator.sub)
_conj = _elementwise(np.conj)


def _safe_sub(xs, ys):
    """``xs - ys`` with ``inf - inf == 0`` (a function that is infinite on both sides of the
    point has a finite difference of 0 there, not NaN)."""
    def sub(x, y):
        x, y, dtype = _host(x), _host(y), _dtype(x)
        with np.errstate(invalid="ignore"):
            return np.where(np.equal(x, y), np.array(0, dtype), np.subtract(x, y, dtype=dtype))
    return tree_map(sub, xs, ys)


def _scalar_mul(xs, a):
    def mul(x):
        dtype = _dtype(x)
        result = np.multiply(_host(x), np.array(a, dtype=dtype), dtype=dtype)
        return result.item() if _is_python_scalar(x) else result
    return tree_map(mul, xs)


def _rand_like(rng, x):
    shape, dtype = np.shape(x), _dtype(x)
    values = np.asarray(rng.randn(*shape), dtype=dtype)
    if dtype_kind(dtype) == "c":
        values = values + dtype.type(1j) * np.asarray(rng.randn(*shape), dtype=dtype)
    return values.item() if _is_python_scalar(x) else values


def _inner_prod(xs, ys):
    def contract(x, y):
        return np.real(np.dot(np.conj(_host(x)).reshape(-1), np.asarray(_host(y)).reshape(-1)))
    return tree_reduce(np.add, tree_map(contract, xs, ys))


def numerical_jvp(f, primals, tangents, eps=EPS):
    """Central finite difference ``(f(x + eps t) - f(x - eps t)) / (2 eps)``.

    >>> float(numerical_jvp(lambda x: x ** 2, (3.0,), (1.0,)))
    6.0...
    """
    delta = _scalar_mul(tangents, eps)
    f_pos = tree_map(_host, f(*_add(primals, delta)))
    f_neg = tree_map(_host, f(*_sub(primals, delta)))
    return _scalar_mul(_safe_sub(f_pos, f_neg), 0.5 / eps)


def _labelled(err_msg, what):
    return f"{err_msg} {what}" if err_msg else what


def check_jvp(f, f_jvp, args, atol=None, rtol=None, eps=EPS, err_msg=""):
    """Check ``f_jvp`` (typically ``functools.partial(ft.jvp, f)``) against a central finite
    difference of ``f`` at ``args``, in one random direction; raises AssertionError on a
    mismatch.

    >>> check_jvp(fnp.tanh, functools.partial(ft.jvp, fnp.tanh), (fnp.arange(3.0),))
    """
    atol = _merge_tolerance(atol, _GRADIENT_TOLERANCE)
    rtol = _merge_tolerance(rtol, _GRADIENT_TOLERANCE)
    rng = np.random.RandomState(0)
    tangent = tree_map(functools.partial(_rand_like, rng), args)
    v_out, t_out = f_jvp(args, tangent)
    _check_dtypes_match(v_out, t_out)
    v_out_expected = f(*args)
    _check_dtypes_match(v_out, v_out_expected)
    t_out_expected = numerical_jvp(f, args, tangent, eps=eps)
    _check_close(v_out, v_out_expected, atol, rtol, _labelled(err_msg, "primal"))
    _check_close(t_out, t_out_expected, atol, rtol, _labelled(err_msg, "tangent"))


def check_vjp(f, f_vjp, args, atol=None, rtol=None, eps=EPS, err_msg=""):
    """Check ``f_vjp`` (typically ``functools.partial(ft.vjp, f)``) against a central finite
    difference of ``f`` at ``args``: ``<ct, J t>`` must equal ``<J^T ct, t>`` for a random
    tangent ``t`` and cotangent ``ct``; raises AssertionError on a mismatch.

    >>> check_vjp(fnp.tanh, functools.partial(ft.vjp, fnp.tanh), (fnp.arange(3.0),))
    """
    atol = _merge_tolerance(atol, _GRADIENT_TOLERANCE)
    rtol = _merge_tolerance(rtol, _GRADIENT_TOLERANCE)
    rand_like = functools.partial(_rand_like, np.random.RandomState(0))
    v_out, vjpfun = f_vjp(*args)
    v_out_expected = f(*args)
    _check_close(v_out, v_out_expected, atol, rtol, _labelled(err_msg, "primal"))
    tangent = tree_map(rand_like, args)
    tangent_out = numerical_jvp(f, args, tangent, eps=eps)
    cotangent = tree_map(rand_like, v_out)
    cotangent_out = _conj(vjpfun(_conj(cotangent)))
    ip = _inner_prod(tangent, cotangent_out)
    ip_expected = _inner_prod(tangent_out, cotangent)
    _check_close(ip, ip_expected, atol, rtol, _labelled(err_msg, "cotangent projection"))


def _jvp_from_linearize(f, primals, tangents):
    primal_out, f_lin = linearize(f, *primals)
    return primal_out, f_lin(*tangents)


def check_grads(f, args, order, modes=("fwd", "rev"), atol=None, rtol=None, eps=None):
    """Check the derivatives of ``f`` at ``args`` up to ``order`` against finite differences.

    ``modes`` picks forward mode (``"fwd"``: :func:`check_jvp`), reverse mode (``"rev"``:
    :func:`check_vjp`) and linearization (``"lin"``); order ``k`` checks the derivatives of
    the order ``k - 1`` JVP/VJP functions. Raises AssertionError on a mismatch.

    >>> check_grads(lambda x, y: fnp.sin(x) * y, (1.0, fnp.ones(2)), order=2)
    """
    args = tuple(args)
    eps = eps or EPS
    unknown = [m for m in modes if m not in ("fwd", "rev", "lin")]
    if unknown:
        raise ValueError(f"check_grads: unknown modes {unknown}; use 'fwd', 'rev' and/or 'lin'")
    check_jvp_ = functools.partial(check_jvp, atol=atol, rtol=rtol, eps=eps)
    check_vjp_ = functools.partial(check_vjp, atol=atol, rtol=rtol, eps=eps)

    def check(f, args, order, err_msg=""):
        if "fwd" in modes:
            msg = f"JVP of {err_msg}" if err_msg else "JVP"
            check_jvp_(f, functools.partial(jvp, f), args, err_msg=msg)
            if order > 1:
                check(functools.partial(jvp, f), (args, args), order - 1, msg)
        if "rev" in modes:
            msg = f"VJP of {err_msg}" if err_msg else "VJP"
            check_vjp_(f, functools.partial(vjp, f), args, err_msg=msg)
            if order > 1:
                def f_vjp(*args):
                    out, vjp_fun = vjp(f, *args)
                    return vjp_fun(out)
                check(f_vjp, args, order - 1, msg)
        if "lin" in modes:
            msg = f"LIN of {err_msg}" if err_msg else "LIN"
            check_jvp_(f, functools.partial(_jvp_from_linearize, f), args, err_msg=msg)
            if order > 1:
                check(functools.partial(_jvp_from_linearize, f), (args, args), order - 1, msg)

    check(f, args, order)
