"""``check_grads``: compare derivatives against finite differences, and reverse mode against
forward mode, to any order.

    >>> check_grads(fnp.sin, (0.5,), order=2)          # raises AssertionError on a mismatch
"""
from __future__ import annotations

import numpy as np

from functrans.core.array import Array
from functrans.core.trace import get_aval
from functrans.core.tree import tree_flatten, tree_map

from .api import jvp, vjp
from functrans.core.dtypes import kind as dtype_kind

# Central differences: truncation error ~ eps**2, rounding error ~ unit roundoff / eps.
_DEFAULT_EPS = {np.dtype("float16"): 3e-2, np.dtype("float32"): 3e-3, np.dtype("float64"): 1e-5}
_DEFAULT_TOL = {np.dtype("float16"): 5e-2, np.dtype("float32"): 2e-2, np.dtype("float64"): 1e-5}


def _wide(x):
    """``x`` as float64, or complex128 when complex (differences and sums in full precision)."""
    x = np.asarray(x)
    return x.astype(np.complex128 if dtype_kind(x.dtype) == "c" else np.float64)


def _as_float_tree(args):
    return tree_map(lambda x: x if isinstance(x, Array) else Array(np.asarray(x)), args)


def _dtype_of(tree):
    leaves = tree_flatten(tree)[0]
    # complex64 has float32 parts: tolerances follow the parts' precision.
    kinds = [np.dtype(np.finfo(get_aval(x).dtype).dtype) for x in leaves
             if dtype_kind(get_aval(x).dtype) in "fc"]
    return min(kinds, key=lambda d: d.itemsize) if kinds else np.dtype("float64")


def _random_like(tree, rng):
    def draw(x):
        a = get_aval(x)
        v = rng.standard_normal(a.shape)
        if dtype_kind(a.dtype) == "c":  # directions off the real axis too
            v = v + 1j * rng.standard_normal(a.shape)
        return Array(v.astype(a.dtype))
    return tree_map(draw, tree)


def _axpy(a, x, y):
    return tree_map(lambda u, v: Array((a * _wide(u) + _wide(v)).astype(get_aval(v).dtype)),
                    x, y)


def _vdot(x, y) -> float:
    """The real part of the bilinear (unconjugated) pairing: JAX's transposes of complex
    maps are plain transposes over the reals, for which Re(ct . J v) = Re(J^T ct . v)."""
    xs, ys = tree_flatten(x)[0], tree_flatten(y)[0]
    return float(sum(np.real(np.sum(_wide(a) * _wide(b))) for a, b in zip(xs, ys)))


def _assert_close(name, got, want, atol, rtol):
    g_leaves, g_tree = tree_flatten(got)
    w_leaves, w_tree = tree_flatten(want)
    if g_tree != w_tree:
        raise AssertionError(f"{name}: structures differ: {g_tree} vs {w_tree}")
    for i, (g, w) in enumerate(zip(g_leaves, w_leaves)):
        g64, w64 = _wide(g), _wide(w)
        if g64.shape != w64.shape:
            raise AssertionError(f"{name}: leaf {i} has shape {g64.shape}, expected {w64.shape}")
        err = np.abs(g64 - w64)
        bound = atol + rtol * np.abs(w64)
        if not np.all((err <= bound) | (np.isnan(g64) & np.isnan(w64))):
            k = np.unravel_index(np.argmax(err - bound), err.shape) if err.ndim else ()
            raise AssertionError(
                f"{name}: leaf {i} differs: got {g64[k]!r}, expected {w64[k]!r} (abs error "
                f"{err[k]:.3g} > atol {atol:g} + rtol {rtol:g} * |expected|)")


def _numerical_jvp(f, args, v, eps):
    plus = f(*_axpy(eps, v, args))
    minus = f(*_axpy(-eps, v, args))
    return tree_map(lambda p, m: (_wide(p) - _wide(m)) / (2 * eps), plus, minus)


def _check_jvp(f, args, atol, rtol, eps, rng):
    v = _random_like(args, rng)
    _, jv = jvp(f, args, v)
    fd = _numerical_jvp(f, args, v, eps)
    _assert_close(f"JVP of {getattr(f, '__name__', 'f')} vs central finite differences", jv, fd,
                  atol, rtol)


def _check_vjp(f, args, atol, rtol, eps, rng):
    # Against numerical J v, so reverse mode is checked on its own (custom_vjp has no JVP).
    v = _random_like(args, rng)
    jv = _numerical_jvp(f, args, v, eps)
    y, f_vjp = vjp(f, *args)
    ct = _random_like(y, rng)
    cts = f_vjp(ct)
    lhs, rhs = _vdot(ct, jv), _vdot(cts, v)
    scale = max(abs(lhs), abs(rhs), 1.0)
    if not abs(lhs - rhs) <= atol + rtol * scale:
        raise AssertionError(
            f"VJP of {getattr(f, '__name__', 'f')} is not the transpose of its JVP: "
            f"<ct, J v> = {lhs!r} but <J^T ct, v> = {rhs!r}")


def check_grads(f, args, order, modes=("fwd", "rev"), atol=None, rtol=None, eps=None):
    """Check derivatives of ``f`` at ``args`` up to ``order``.

    ``"fwd"`` compares JVPs with central finite differences; ``"rev"`` checks the VJP against
    them too (``<ct, J v> == <J^T ct, v>`` for random ``v`` and ``ct``). Higher
    orders differentiate the JVP/VJP functions themselves. Default tolerances depend on the
    lowest float precision among the arguments. Raises AssertionError on a mismatch.
    """
    args = _as_float_tree(tuple(args))
    dtype = _dtype_of(args)
    eps = _DEFAULT_EPS[dtype] if eps is None else eps
    atol = _DEFAULT_TOL[dtype] if atol is None else atol
    rtol = _DEFAULT_TOL[dtype] if rtol is None else rtol
    rng = np.random.default_rng(1)
    unknown = set(modes) - {"fwd", "rev"}
    if unknown:
        raise ValueError(f"check_grads: unknown modes {sorted(unknown)}; use 'fwd' and/or 'rev'")

    def check(f, args, order):
        if "fwd" in modes:
            _check_jvp(f, args, atol, rtol, eps, rng)
        if "rev" in modes:
            _check_vjp(f, args, atol, rtol, eps, rng)
        if order > 1:
            if "fwd" in modes:
                v = _random_like(args, rng)
                check(lambda *a: jvp(f, a, v)[1], args, order - 1)
            if "rev" in modes:
                ct = _random_like(f(*args), rng)
                check(lambda *a: vjp(f, *a)[1](ct), args, order - 1)

    check(f, args, order)


__all__ = ["check_grads"]
