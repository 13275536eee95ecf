"""Sorting, searching, set and order-statistic functions against NumPy.

Each function runs eagerly and traced (functrans.testing.check_against: make_jaxpr ->
check_jaxpr -> eval_jaxpr must equal the eager result). Sorting and searching only move or
count values, and the quantile code repeats NumPy's own formulas operation for operation, so
every comparison here is exact (ulps=0) for every dtype. Only the sign of a zero picked by an
order statistic is left unchecked (ZERO_SIGN): NumPy selects with an unstable partition, so
which of -0.0 and 0.0 it returns is an accident of its algorithm.
"""
import functools
import math

import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

import functrans as ft
import functrans.numpy as fnp
from functrans.testing import arrays, axes, check_against

ZERO_SIGN = dict(signed_zeros=False)
SORT_DTYPES = ["float64", "float32", "float16", "int64", "int8", "uint8", "bool"]


def data_arrays(dtype, min_dims=1, max_dims=3, min_side=0, specials=True):
    """Arrays with many ties (small integer-valued elements) plus nan/inf/-0.0 for floats."""
    def elements(dt):
        if dt.kind == "f":
            small = st.integers(-4, 4).map(float)
            return st.one_of(small, st.sampled_from([np.nan, np.inf, -np.inf, -0.0])) \
                if specials else small
        if dt.kind == "b":
            return st.booleans()
        return st.integers(0 if dt.kind == "u" else -4, 4)
    return arrays(np.dtype(dtype), elements=elements, min_dims=min_dims, max_dims=max_dims,
                  min_side=min_side, max_side=5)


def stable_descending_argsort(x, axis):
    """JAX's descending order: the reverse of ascending (NaN first), ties in input order."""
    def one(row):
        key = [(0 if np.isnan(v) else 1, -float(v)) if row.dtype.kind == "f" else (1, -int(v))
               for v in row]
        return np.array(sorted(range(len(row)), key=key.__getitem__), dtype=np.int64)
    return np.apply_along_axis(one, axis, x) if x.size else np.zeros(x.shape, np.int64)


@given(st.sampled_from(SORT_DTYPES).flatmap(data_arrays), st.data())
def test_sort_and_argsort(x, data):
    axis = data.draw(st.sampled_from([None] + list(range(-x.ndim, x.ndim))))
    check_against(lambda a: fnp.sort(a, axis=axis),
                  lambda a: np.sort(a, axis=axis, kind="stable"), x)
    check_against(lambda a: fnp.argsort(a, axis=axis),
                  lambda a: np.argsort(a, axis=axis, kind="stable"), x)
    check_against(lambda a: fnp.asarray(a).sort(axis=axis if axis is not None else -1),
                  lambda a: np.sort(a, axis=axis if axis is not None else -1, kind="stable"), x)
    flat_axis = 0 if axis is None else axis
    check_against(lambda a: fnp.sort(a, axis=axis, descending=True),
                  lambda a: np.flip(np.sort(a, axis=axis, kind="stable"), flat_axis), x)
    check_against(lambda a: fnp.argsort(a, axis=axis, descending=True),
                  lambda a: stable_descending_argsort(a.ravel() if axis is None else a,
                                                      flat_axis), x)


def test_sort_puts_nan_last_and_keeps_ties_stable():
    x = np.array([3.0, np.nan, -0.0, 1.0, 0.0, np.nan, -np.inf, 1.0])
    check_against(fnp.sort, functools.partial(np.sort, kind="stable"), x)
    check_against(fnp.argsort, functools.partial(np.argsort, kind="stable"), x)
    check_against(lambda a: fnp.argsort(a, descending=True),
                  lambda a: np.array([1, 5, 0, 3, 7, 2, 4, 6]), x)
    with pytest.raises(np.exceptions.AxisError):
        fnp.sort(np.array(1.0))
    with pytest.raises(NotImplementedError, match="order"):
        fnp.sort(np.zeros(2), order="f")


@given(st.integers(1, 3), st.integers(0, 12), st.data())
def test_lexsort(nkeys, n, data):
    keys = [data.draw(hnp.arrays(np.int64, (n,), elements=st.integers(0, 2)))
            for _ in range(nkeys)]
    check_against(lambda *k: fnp.lexsort(k), lambda *k: np.lexsort(k), *keys)
    if n:
        k2 = [np.stack([k, k[::-1]]) for k in keys]
        check_against(lambda *k: fnp.lexsort(k, axis=1), lambda *k: np.lexsort(k, axis=1), *k2)
        check_against(lambda *k: fnp.lexsort(k, axis=0), lambda *k: np.lexsort(k, axis=0), *k2)


@given(st.sampled_from(["float64", "float32", "int64"]), st.data())
def test_partition_and_argpartition(dtype, data):
    x = data.draw(data_arrays(dtype, min_dims=1, max_dims=2, min_side=1, specials=False))
    kth = data.draw(st.integers(-x.shape[-1], x.shape[-1] - 1))
    got = np.asarray(fnp.partition(x, kth))
    expected = np.partition(x, kth)
    np.testing.assert_array_equal(got[..., kth], expected[..., kth])  # the kth order statistic
    assert (got[..., :kth % x.shape[-1]] <= got[..., kth % x.shape[-1]][..., None]).all()
    assert (got[..., kth % x.shape[-1]:] >= got[..., kth % x.shape[-1]][..., None]).all()
    idx = np.asarray(fnp.argpartition(x, kth))
    np.testing.assert_array_equal(np.take_along_axis(x, idx, -1)[..., kth], expected[..., kth])


# ---- searching ---------------------------------------------------------------------------------
@given(st.sampled_from(["float64", "float32", "int64", "uint8"]), st.data())
def test_searchsorted(dtype, data):
    a = np.sort(data.draw(data_arrays(dtype, min_dims=1, max_dims=1)), kind="stable")
    v = data.draw(data_arrays(dtype, min_dims=0, max_dims=2))
    for side in ("left", "right"):
        check_against(lambda a, v: fnp.searchsorted(a, v, side=side),
                      lambda a, v: np.searchsorted(a, v, side=side), a, v)
        check_against(lambda a, v: fnp.asarray(a).searchsorted(v, side=side),
                      lambda a, v: np.searchsorted(a, v, side=side), a, v)
    unsorted = np.array(data.draw(st.permutations(a)), a.dtype) if a.size else a
    sorter = np.argsort(unsorted, kind="stable")
    check_against(lambda a, v, s: fnp.searchsorted(a, v, sorter=s),
                  lambda a, v, s: np.searchsorted(a, v, sorter=s), unsorted, v, sorter)


def test_searchsorted_scalars_and_errors():
    a = np.array([1.0, 2.0, 2.0, np.nan])
    check_against(lambda a: fnp.searchsorted(a, 2.0), lambda a: np.searchsorted(a, 2.0), a)
    check_against(lambda a: fnp.searchsorted(a, np.nan, "right"),
                  lambda a: np.searchsorted(a, np.nan, "right"), a)
    check_against(lambda v: fnp.searchsorted(np.array([1, 2, 3]), v),
                  lambda v: np.searchsorted(np.array([1, 2, 3]), v), np.array([1.5, 2.5]))
    with pytest.raises(ValueError, match="side"):
        fnp.searchsorted(a, 1.0, side="middle")
    with pytest.raises(ValueError, match="1-D"):
        fnp.searchsorted(np.zeros((2, 2)), 1.0)


@given(st.booleans(), st.booleans(), st.data())
def test_digitize(decreasing, right, data):
    bins = np.sort(data.draw(hnp.arrays(np.float64, st.integers(0, 5),
                                        elements=st.integers(-3, 3).map(float))))
    if decreasing:
        bins = bins[::-1].copy()
    x = data.draw(data_arrays("float64", min_dims=0, max_dims=2))
    check_against(lambda x, b: fnp.digitize(x, b, right),
                  lambda x, b: np.digitize(x, b, right), x, bins)  # traced bins: runtime order
    check_against(lambda x: fnp.digitize(x, fnp.asarray(bins), right),
                  lambda x: np.digitize(x, bins, right), x)


def test_digitize_rejects_non_monotonic_bins():
    with pytest.raises(ValueError, match="monoton"):
        fnp.digitize(np.array([1.0]), np.array([0.0, 2.0, 1.0]))


# ---- value-dependent shapes --------------------------------------------------------------------
def pad_to(x, size, fill):
    x = np.asarray(x)
    if len(x) >= size:
        return x[:size]
    return np.concatenate([x, np.full((size - len(x),) + x.shape[1:], fill, x.dtype)])


@given(st.sampled_from(["float64", "int32", "bool"]).flatmap(
    lambda d: data_arrays(d, min_dims=0, max_dims=3)), st.integers(0, 6), st.integers(-2, 2))
def test_nonzero_argwhere_flatnonzero(x, size, fill):
    if x.ndim:  # (NumPy rejects nonzero of a 0-d array)
        check_against(fnp.nonzero, np.nonzero, x, trace=False)
    check_against(fnp.argwhere, np.argwhere, x, trace=False)
    check_against(fnp.flatnonzero, np.flatnonzero, x, trace=False)
    check_against(fnp.count_nonzero, np.count_nonzero, x)
    # With a static size the shapes are known, so they also trace.
    if x.ndim:
        check_against(lambda a: fnp.nonzero(a, size=size, fill_value=fill),
                      lambda a: tuple(pad_to(i, size, fill) for i in np.nonzero(a)), x)
        check_against(lambda a: fnp.where(a, size=size, fill_value=fill),
                      lambda a: tuple(pad_to(i, size, fill) for i in np.nonzero(a)), x)
    check_against(lambda a: fnp.argwhere(a, size=size, fill_value=fill),
                  lambda a: pad_to(np.argwhere(a), size, fill), x)
    check_against(lambda a: fnp.flatnonzero(a, size=size, fill_value=fill),
                  lambda a: pad_to(np.flatnonzero(a), size, fill), x)


def test_nonzero_per_axis_fill_and_errors():
    x = np.array([[0, 3], [4, 0]])
    got = fnp.nonzero(x, size=3, fill_value=(-1, -2))
    np.testing.assert_array_equal(np.asarray(got[0]), [0, 1, -1])
    np.testing.assert_array_equal(np.asarray(got[1]), [1, 0, -2])
    with pytest.raises(TypeError, match="size="):
        ft.make_jaxpr(fnp.nonzero)(x)
    with pytest.raises(TypeError, match="size="):
        ft.make_jaxpr(fnp.unique)(x)


def padded_unique(x, size, fill, equal_nan=True):
    """np.unique's four results padded like JAX: the values with ``fill`` (default: the
    smallest value), first indices with the smallest value's index, counts with 0."""
    values, index, inverse, counts = np.unique(x, True, True, True, equal_nan=equal_nan)
    fill_v = values[0] if fill is None else fill
    return (pad_to(values, size, fill_v), pad_to(index, size, index[0]), inverse,
            pad_to(counts, size, 0))


@given(st.sampled_from(["float64", "int16"]).flatmap(
    lambda d: data_arrays(d, min_dims=0, max_dims=2)), st.booleans(), st.data())
def test_unique(x, equal_nan, data):
    flags = data.draw(st.tuples(st.booleans(), st.booleans(), st.booleans()))
    check_against(lambda a: fnp.unique(a, *flags, equal_nan=equal_nan),
                  lambda a: np.unique(a, *flags, equal_nan=equal_nan), x, trace=False)
    if x.ndim == 2 and x.size:
        check_against(lambda a: fnp.unique(a, *flags, axis=1), lambda a: np.unique(a, *flags, axis=1),
                      x, trace=False)
    if x.size:
        size = data.draw(st.integers(1, x.size + 2))
        fill = data.draw(st.sampled_from([None, -7]))
        check_against(lambda a: fnp.unique(a, True, True, True, size=size, fill_value=fill,
                                           equal_nan=equal_nan),
                      lambda a: padded_unique(a, size, fill, equal_nan), x)
        # (NumPy's unique_values may come out unsorted; functrans sorts, like np.unique)
        check_against(fnp.unique_values, np.unique, x, trace=False)
        check_against(lambda a: tuple(fnp.unique_counts(a)),
                      lambda a: np.unique(a, return_counts=True), x, trace=False)
        if x.ndim == 1 and not (x.dtype.kind == "f" and np.isnan(x).any()):
            # The array-API spellings return named tuples with NumPy's field names (NaN
            # aside: NumPy 2's unique_* keep every NaN, np.unique collapses them).
            for name in ("unique_counts", "unique_inverse", "unique_all"):
                got, want = getattr(fnp, name)(x), getattr(np, name)(x)
                assert got._fields == want._fields
                check_against(lambda a: tuple(getattr(fnp, name)(a)),
                              lambda a: tuple(getattr(np, name)(a)), x, trace=False)


def test_legacy_spellings():
    x = np.array([[3, 1, 2], [1, 5, 0]])
    check_against(fnp.msort, lambda a: np.sort(a, axis=0), x)  # np.msort is gone from NumPy 2
    check_against(fnp.in1d, lambda a, b: np.isin(a, b).ravel(), x, np.array([1, 5]))
    check_against(fnp.sort_complex, np.sort_complex, x[0].astype(float))


def test_set_operations():
    a, b = np.array([3, 1, 2, 3, 5]), np.array([5, 4, 3])
    for f, g in [(fnp.union1d, np.union1d), (fnp.intersect1d, np.intersect1d),
                 (fnp.setdiff1d, np.setdiff1d)]:
        check_against(f, g, a, b, trace=False)
        with pytest.raises(TypeError, match="concrete"):
            ft.make_jaxpr(f)(a, b)


@given(data_arrays("int64", min_dims=1, max_dims=1).map(np.abs), st.integers(0, 8), st.data())
def test_bincount(x, minlength, data):
    w = data.draw(hnp.arrays(data.draw(st.sampled_from([np.float32, np.int32])), x.shape,
                             elements=st.integers(-3, 3)))
    check_against(lambda x: fnp.bincount(x, minlength=minlength),
                  lambda x: np.bincount(x, minlength=minlength), x, trace=False)
    if x.size:  # (NumPy returns int64 for empty x even with weights; functrans float64)
        check_against(lambda x, w: fnp.bincount(x, w, minlength=minlength),
                      lambda x, w: np.bincount(x, w, minlength=minlength), x, w, trace=False)
    length = data.draw(st.integers(0, 7))
    # static length: values >= length are dropped, as in JAX
    check_against(lambda x, w: fnp.bincount(x, w, length=length),
                  lambda x, w: np.bincount(x[x < length], w[x < length],
                                           minlength=length).astype(np.float64), x, w)


def test_bincount_errors():
    with pytest.raises(ValueError, match="non-negative"):
        fnp.bincount(np.array([1, -1]))
    with pytest.raises(TypeError, match="integers"):
        fnp.bincount(np.array([1.0]))
    with pytest.raises(TypeError, match="length="):
        ft.make_jaxpr(fnp.bincount)(np.array([1, 2]))


@given(data_arrays("float64", min_dims=0, max_dims=3), data_arrays("float64", min_dims=0),
       st.booleans())
def test_isin(element, test_elements, invert):
    check_against(lambda e, t: fnp.isin(e, t, invert=invert),
                  lambda e, t: np.isin(e, t, invert=invert), element, test_elements)


# ---- order statistics --------------------------------------------------------------------------
METHODS = ["inverted_cdf", "averaged_inverted_cdf", "closest_observation",
           "interpolated_inverted_cdf", "hazen", "weibull", "linear", "median_unbiased",
           "normal_unbiased", "lower", "higher", "midpoint", "nearest"]


@st.composite
def quantile_cases(draw, nan):
    dtype = draw(st.sampled_from(["float64", "float32", "int64", "int8"] if not nan
                                 else ["float64", "float32"]))
    x = draw(arrays(np.dtype(dtype), min_dims=1, max_dims=3, min_side=1, max_side=4,
                    elements=lambda dt: (st.integers(-9, 9).map(float) | st.just(np.nan))
                    if dt.kind == "f" and nan else
                    st.floats(-50, 50, width=8 * dt.itemsize) if dt.kind == "f"
                    else st.integers(-9, 9)))
    axis = draw(axes(x.ndim))
    q = draw(st.one_of(st.floats(0, 1),
                       hnp.arrays(draw(st.sampled_from([np.float64, np.float32])),
                                  hnp.array_shapes(min_dims=0, max_dims=2, max_side=3),
                                  elements=st.floats(0, 1, width=32))))
    return x, q, axis, draw(st.sampled_from(METHODS)), draw(st.booleans())


@given(quantile_cases(nan=False))
def test_quantile_and_percentile(case):
    x, q, axis, method, keepdims = case
    kw = dict(axis=axis, method=method, keepdims=keepdims)
    check_against(lambda a, q: fnp.quantile(a, q, **kw), lambda a, q: np.quantile(a, q, **kw),
                  x, q, **ZERO_SIGN)
    p = q * 100 if isinstance(q, float) else (q * 100).astype(q.dtype)
    check_against(lambda a, p: fnp.percentile(a, p, **kw),
                  lambda a, p: np.percentile(a, p, **kw), x, p, **ZERO_SIGN)


@given(quantile_cases(nan=True))
def test_nanquantile_and_nanpercentile(case):
    x, q, axis, method, keepdims = case
    # NumPy gives an all-NaN slice the input's dtype even when q promotes the others, and
    # then casts whole results to the first slice's dtype; keep q's dtype out of that.
    q = q if isinstance(q, float) else q.astype(x.dtype)
    # NumPy's nan-variants mis-order the result dims for an empty axis tuple or 2-d q
    if axis == ():
        axis = None
    if not isinstance(q, float) and q.ndim > 1:
        q = q.reshape(-1)
    kw = dict(axis=axis, method=method, keepdims=keepdims)
    check_against(lambda a, q: fnp.nanquantile(a, q, **kw),
                  lambda a, q: np.nanquantile(a, q, **kw), x, q, **ZERO_SIGN)
    check_against(lambda a, q: fnp.quantile(a, q, **kw),  # any NaN in a slice gives NaN
                  lambda a, q: np.quantile(a, q, **kw), x, q, **ZERO_SIGN)
    p = q * 100 if isinstance(q, float) else (q * 100).astype(q.dtype)
    check_against(lambda a, p: fnp.nanpercentile(a, p, **kw),
                  lambda a, p: np.nanpercentile(a, p, **kw), x, p, **ZERO_SIGN)


@given(st.sampled_from(["float64", "float32", "float16", "int64", "uint8", "bool"]).flatmap(
    lambda d: data_arrays(d, min_dims=1, max_dims=3, min_side=1, specials=False)), st.data())
def test_median(x, data):
    axis = data.draw(axes(x.ndim))
    keepdims = data.draw(st.booleans())
    check_against(lambda a: fnp.median(a, axis=axis, keepdims=keepdims),
                  lambda a: np.median(a, axis=axis, keepdims=keepdims), x, **ZERO_SIGN)


@given(st.sampled_from(["float64", "float32"]).flatmap(
    lambda d: data_arrays(d, min_dims=1, max_dims=3, min_side=1)), st.data())
def test_nanmedian_and_median_with_nans(x, data):
    axis = data.draw(axes(x.ndim))
    keepdims = data.draw(st.booleans())
    x = np.where(np.isinf(x), 1.0, x).astype(x.dtype)  # inf - inf would be NaN in the mean
    for f, g in [(fnp.nanmedian, np.nanmedian), (fnp.median, np.median)]:
        check_against(lambda a: f(a, axis=axis, keepdims=keepdims),
                      lambda a: g(a, axis=axis, keepdims=keepdims), x, **ZERO_SIGN)


def test_quantile_dtypes_and_special_cases():
    x = np.arange(10)
    check_against(lambda a: fnp.quantile(a, 1), lambda a: np.quantile(a, 1), x)  # int stays
    check_against(lambda a: fnp.quantile(a, fnp.array([0, 1])), lambda a: np.quantile(a, [0, 1]), x)
    x32 = np.linspace(0, 1, 7, dtype=np.float32)
    check_against(lambda a: fnp.quantile(a, 0.3), lambda a: np.quantile(a, 0.3), x32)
    check_against(lambda a, q: fnp.quantile(a, q), lambda a, q: np.quantile(a, q), x32,
                  np.array(0.3))  # a float64 q array promotes the result
    inf = np.array([1.0, np.inf, -np.inf, 2.0])
    for q in (0.0, 0.4, 0.5, 1.0):  # NumPy's lerp gives NaN next to infinities; so do we
        check_against(lambda a: fnp.quantile(a, q), lambda a: np.quantile(a, q), inf)
    check_against(lambda a: fnp.nanmedian(a, axis=1),
                  lambda a: np.nanmedian(a, axis=1), np.array([[np.nan, np.nan], [1, 2]]))


def test_quantile_errors():
    x = np.arange(4.0)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        fnp.quantile(x, 1.5)
    with pytest.raises(ValueError, match=r"\[0, 100\]"):
        fnp.percentile(x, -1)
    with pytest.raises(ValueError, match="method"):
        fnp.quantile(x, 0.5, method="bogus")
    with pytest.raises(ValueError, match="empty"):
        fnp.median(np.zeros((0, 3)), axis=0)
    with pytest.raises(NotImplementedError, match="out="):
        fnp.median(x, out=np.zeros(()))
    assert math.isnan(float(fnp.quantile(np.array([1.0, np.nan]), 0.5)))
