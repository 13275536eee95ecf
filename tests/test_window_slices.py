"""Small window reductions under jit, compiled as sums of strided slices
(transforms/jit/window_slices.py), against the primitives' NumPy implementations: shapes,
windows, strides, padding, both dilations, dtypes; and average pooling's gradient.

Tolerance: the slices add a window's elements in row-major window order; NumPy's reduction
over the window's axes may group them otherwise. Each float sum of K terms is within
K * eps * (the sum of their absolute values) of the exact one, so the two are within twice
that. Integer sums, max and min are exact."""
from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import functrans as ft
from functrans import lax
from functrans.transforms.jit.window_slices import MAX_WINDOW, windows_as_slices
from test_conv import window_configs  # shapes, windows, strides, paddings, dilations

KINDS = {"sum": (lax.add, 0), "max": (lax.max, -np.inf), "min": (lax.min, np.inf)}


@settings(max_examples=80, deadline=None)
@given(window_configs(), st.sampled_from(sorted(KINDS)),
       st.sampled_from([np.float32, np.float64, np.int32]), st.integers(0, 999))
def test_jit_window_reductions_match_numpy(cfg, kind, dtype, seed):
    """(Negative paddings and empty outputs included: those stay window primitives.)"""
    x = (np.random.default_rng(seed).standard_normal(cfg["shape"]) * 10).astype(dtype)
    op, init = KINDS[kind]
    init = np.array(init if np.dtype(dtype).kind == "f" or kind == "sum" else
                    (np.iinfo(dtype).min if kind == "max" else np.iinfo(dtype).max), dtype)

    def f(x):
        return lax.reduce_window(x, init, op, cfg["window"], cfg["strides"], cfg["padding"],
                                 cfg["base"], cfg["wdil"])

    got = np.asarray(ft.jit(f)(x))
    want = np.asarray(f(x))  # eager: the primitive's NumPy impl
    assert got.dtype == want.dtype and got.shape == want.shape
    if kind != "sum" or np.dtype(dtype).kind != "f":
        np.testing.assert_array_equal(got, want)
    else:
        bound = np.asarray(lax.reduce_window(np.abs(x), init, op, cfg["window"], cfg["strides"],
                                             cfg["padding"], cfg["base"], cfg["wdil"]))
        k = math.prod(cfg["window"])
        assert np.all(np.abs(got - want) <= 2 * k * np.finfo(dtype).eps * bound)


def _names(jaxpr):
    out = []
    for e in jaxpr.eqns:
        out.append(e.prim.name)
        for v in e.params.values():
            if hasattr(v, "eqns"):
                out += _names(v)
    return out


def test_small_windows_become_slices_and_large_ones_stay():
    x = np.ones((8, 8), np.float32)
    pool = lambda x: lax.reduce_window(x, 0.0, lax.add, (2, 2), (2, 2), "VALID")  # noqa: E731
    names = _names(windows_as_slices(ft.make_jaxpr(pool)(x).jaxpr))
    assert "reduce_window_sum" not in names and names.count("slice") == 4
    big = lambda x: lax.reduce_window(x, 0.0, lax.add, (5, 5), (1, 1), "SAME")  # noqa: E731
    assert 25 > MAX_WINDOW
    assert "reduce_window_sum" in _names(windows_as_slices(ft.make_jaxpr(big)(x).jaxpr))
    # inside control flow too
    looped = lambda x: lax.fori_loop(0, 2, lambda i, c: c + pool(x).sum(), 0.0)  # noqa: E731
    assert "reduce_window_sum" not in _names(windows_as_slices(ft.make_jaxpr(looped)(x).jaxpr))


def test_average_pooling_gradient_under_jit_matches_eager():
    """The gradient of 2x2 average pooling is pad (interior) then a stride-1 window sum: its
    jit form (slices) against the eager primitives, and against finite differences."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 6, 6, 3))

    def loss(x):
        y = lax.reduce_window(x, 0.0, lax.add, (1, 2, 2, 1), (1, 2, 2, 1), "VALID") / 4
        return (ft.numpy.sin(y) ** 2).sum()

    got = np.asarray(ft.jit(ft.grad(loss))(x))
    np.testing.assert_allclose(got, np.asarray(ft.grad(loss)(x)), rtol=1e-14, atol=1e-14)
    e = np.zeros_like(x)
    e[1, 3, 2, 1] = 1e-6
    fd = (float(loss(x + e)) - float(loss(x - e))) / 2e-6  # central difference: O(h^2)
    assert abs(got[1, 3, 2, 1] - fd) < 1e-8
