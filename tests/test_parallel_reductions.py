"""Reductions over leading axes in loops on all cores (``transforms/native/groups.py``): a
loop whose reductions drop its outer axis (a bias gradient's column sums, a batch norm's
statistics) runs in runs of outer indices, each into partial accumulators of its own,
combined in unit order after the loop.

Oracles: NumPy on the same float32 terms (summed in float64), exact for max, min, integer
sums and booleans; the same program on one thread and with the pool's workers paused (the
same bits: the units do not depend on who runs them). Terms are ``x * 2 + 1``: exact in
float32 up to the addition's rounding, which NumPy's float32 arithmetic does alike.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import functrans as ft
import functrans.numpy as fnp
from functrans.transforms.jit.executable import executable_for
from functrans.transforms.native import groups, work_pool
from functrans.transforms.native.parallel import PARALLEL_MIN

from threads import one_thread

EPS32, EPS64 = np.finfo(np.float32).eps, np.finfo(np.float64).eps


def _parallel(jitted, *args) -> bool:
    return all(run.parallel for run in executable_for(jitted.lower(*args).jaxpr,
                                                       jitted.name).runs)


def _check_sum(got, terms, axes):
    """A float sum of float32 terms: accumulated in float64 (n * eps64 of the magnitudes),
    then rounded once to float32 (half an ulp)."""
    want = terms.astype(np.float64).sum(axes)
    mag = np.abs(terms.astype(np.float64)).sum(axes)
    n = terms.size // max(1, want.size)
    bound = EPS32 * np.abs(want) + n * EPS64 * mag + 1e-30
    assert np.all(np.abs(np.asarray(got, np.float64) - want) <= bound)


@settings(max_examples=12, deadline=None)
@given(outer=st.integers(2, 700), inner=st.sampled_from([(512,), (37, 13), (3, 100, 2)]),
       axes_pick=st.integers(0, 2), seed=st.integers(0, 2**16))
def test_sums_and_extrema_over_the_outer_axis_match_numpy(outer, inner, axes_pick, seed):
    shape = (outer,) + inner
    if np.prod(shape) < PARALLEL_MIN:  # a loop on all cores: scale the outer axis up
        shape = (-(-PARALLEL_MIN // int(np.prod(inner))),) + inner
    rank = len(shape)
    # (reductions of every axis are flat loops, summed in float32 blocks: test_native's)
    axes = [(0,), (0, rank - 1), (0,) + tuple(range(2, rank))][axes_pick]
    axes = (0,) if rank == 2 else tuple(sorted(set(axes)))
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    f = ft.jit(lambda a: (a * 2.0 + 1.0, fnp.sum(a * 2.0 + 1.0, axis=axes),
                          fnp.max(a * 2.0 + 1.0, axis=axes), fnp.min(a, axis=axes)))
    terms, total, top, bottom = f(x)
    want_terms = x * np.float32(2.0) + np.float32(1.0)
    np.testing.assert_array_equal(terms, want_terms)
    _check_sum(total, want_terms, axes)
    np.testing.assert_array_equal(top, want_terms.max(axes))
    np.testing.assert_array_equal(bottom, x.min(axes))
    assert _parallel(f, x)


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float64])
def test_column_sums_of_other_dtypes(dtype):
    rng = np.random.default_rng(1)
    x = rng.integers(-50, 50, (1100, 300)).astype(dtype)
    f = ft.jit(lambda a: (fnp.sum(a * 3, axis=0), fnp.prod(fnp.where(a > 0, 1, -1), axis=0),
                          fnp.any(a > 48, axis=0), fnp.all(a > -50, axis=0),
                          fnp.sum(a.T * 3)))  # (read through a transpose: nested loops)
    total, prod, anyv, allv, everything = f(x)
    assert everything == (x * 3).sum()  # exact: integers (in float64 too, below 2**53)
    np.testing.assert_array_equal(total, (x * 3).sum(0).astype(dtype))
    np.testing.assert_array_equal(prod, np.where(x > 0, 1, -1).prod(0))  # exact: +-1
    np.testing.assert_array_equal(anyv, (x > 48).any(0))
    np.testing.assert_array_equal(allv, (x > -50).all(0))
    assert _parallel(f, x)


def _bias_gradient(mask, g):
    d = fnp.where(mask, g, 0.0)  # a ReLU's gradient and its layer's bias gradient
    return d, d.sum(0)


def test_the_same_bits_on_one_thread_and_with_the_workers_paused():
    rng = np.random.default_rng(2)
    mask = rng.standard_normal((1024, 512)) > 0
    g = rng.standard_normal((1024, 512)).astype(np.float32)
    f = ft.jit(_bias_gradient)
    d, bias = f(mask, g)
    assert _parallel(f, mask, g)
    _check_sum(bias, np.where(mask, g, np.float32(0)), (0,))
    with one_thread():
        one = f(mask, g)
    with work_pool.paused():
        alone = f(mask, g)
    for other in (one, alone):
        np.testing.assert_array_equal(other[0], d)
        np.testing.assert_array_equal(other[1], bias)


def test_partials_are_bounded_in_memory():
    # Many kept outputs: fewer units, each with float64 partials of its own, within
    # PARTIALS_MAX bytes; outputs too many for two units' partials keep the loop on one core.
    f = ft.jit(lambda a: fnp.sum(a * 2.0, axis=0))
    for width in (groups.PARTIALS_MAX // 16, groups.PARTIALS_MAX // 8 + 1):
        x = np.ones((4, width), np.float32)
        np.testing.assert_array_equal(f(x), np.full(width, 8.0, np.float32))
        assert _parallel(f, x) == (2 * width * 8 <= groups.PARTIALS_MAX), width
