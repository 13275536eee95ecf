"""Reductions of functrans.numpy (reductions.py) against NumPy, eagerly and traced, with every
keyword NumPy has for them: axis (None, negative, tuples), keepdims, dtype=, initial=, where=,
ddof/correction, weights.

Tolerances come from the standard error bounds of the algorithms, computed from the data, with
``e`` the machine epsilon of the dtype the reduction accumulates in:

* sum-like (sum, nansum, cumsum, mean's total): recursive or pairwise summation of n terms is
  off by at most ``n * e * sum(|x|)``; NumPy and functrans may sum in different orders (masks,
  NaN replacement), so that is the tolerance, plus half an ulp for the final rounding.
* prod-like: each of the n multiplications rounds, so ``n + 1`` ulps relative (plus the
  smallest normal number absolutely, for products underflowing into subnormals).
* mean: the sum's bound divided by the count, plus one rounding of the division (and one more
  for float16, accumulated in float32 and rounded at the end).
* float16 means and variances accumulate in float32 (as JAX; NumPy does so only for float16
  means without dtype=, and overflows elsewhere): the oracle is NumPy in float32, rounded.
* var: the two-pass algorithm's centered values carry ``e * (|x| + |mean|)`` each, so
  ``4 * (n + 2) * e * mean(x**2 + mean**2)``; std = sqrt(var) is then within the square root
  of that (``|sqrt(a) - sqrt(b)| <= sqrt(|a - b|)``). NumPy's nanvar rounds the centered
  values to the input dtype (float32 with dtype=float64, say), so there ``e`` is the larger
  of the two epsilons. Slices with ``n <= ddof`` divide by zero
  (infinitely ill-conditioned) and are tested separately, with exact data.
* max/min/argmax/argmin/all/any/count_nonzero/ptp are exact (signed zeros compare equal for
  max/min: NumPy's own choice between 0.0 and -0.0 depends on its SIMD path).
"""
from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pytest
from hypothesis import given, strategies as st

import functrans.numpy as fnp
from functrans import testing as T
from functrans.numpy import reductions

EXACT = ("max", "min", "amax", "amin", "all", "any", "argmax", "argmin", "nanmax", "nanmin",
         "nanargmax", "nanargmin", "ptp", "count_nonzero")
SUMS = ("sum", "nansum")
PRODS = ("prod", "nanprod")
MEANS = ("mean", "nanmean")
VARS = ("var", "std", "nanvar", "nanstd")
CUMS = ("cumsum", "cumprod", "nancumsum", "nancumprod", "cumulative_sum", "cumulative_prod")

# Which keywords each reduction takes (as in NumPy's signatures).
KWARGS = {
    **{n: ("axis", "keepdims", "dtype", "initial", "where") for n in SUMS + PRODS},
    **{n: ("axis", "keepdims", "initial", "where")
       for n in ("max", "min", "amax", "amin", "nanmax", "nanmin")},
    **{n: ("axis", "keepdims", "where") for n in ("all", "any")},
    **{n: ("axis", "keepdims", "dtype", "where") for n in MEANS},
    **{n: ("axis", "keepdims", "dtype", "where", "ddof") for n in VARS},
    **{n: ("axis1", "keepdims") for n in ("argmax", "argmin", "nanargmax", "nanargmin")},
    **{n: ("axis1", "dtype") for n in ("cumsum", "cumprod", "nancumsum", "nancumprod")},
    **{n: ("axis1", "dtype", "include_initial") for n in ("cumulative_sum", "cumulative_prod")},
    "ptp": ("axis", "keepdims"), "count_nonzero": ("axis", "keepdims"),
}


def _nanarg_oracle(np_fn):
    """NumPy raises for all-NaN slices; functrans returns -1 there (JAX's convention)."""
    def oracle(x, axis=None, keepdims=False):
        if x.dtype.kind != "f" or x.size == 0:
            return np_fn(x, axis=axis, keepdims=keepdims)
        all_nan = np.all(np.isnan(x), axis=axis, keepdims=True)
        r = np_fn(np.where(all_nan, 0, x), axis=axis, keepdims=keepdims)
        return np.where(np.all(np.isnan(x), axis=axis, keepdims=keepdims), -1, r)
    return oracle


ORACLES = {n: getattr(np, n) for n in KWARGS}
ORACLES["nanargmax"] = _nanarg_oracle(np.nanargmax)
ORACLES["nanargmin"] = _nanarg_oracle(np.nanargmin)


def test_every_reduction_is_tested():
    assert sorted(KWARGS) == sorted(n for n in reductions.__all__ if n != "average")


def _f64(x):
    with np.errstate(all="ignore"):
        return np.asarray(x, np.float64)


def _tolerance(name, x, kw, want):
    """(ulps, atol) for this case, from the error bounds in the module docstring."""
    out_dtype = np.asarray(want).dtype
    if out_dtype.kind != "f" or name in EXACT:
        return 0, 0
    acc = np.dtype(np.float32) if out_dtype == np.float16 and name in MEANS + VARS else out_dtype
    e = T.eps(acc)
    if name in ("nanvar", "nanstd") and x.dtype.kind == "f":
        e = max(e, T.eps(np.promote_types(x.dtype, np.float32)))
    mag = np.nan_to_num(np.abs(_f64(x)), nan=0.0, posinf=0.0)
    axis = kw.get("axis")
    where = kw.get("where", True)
    keep = kw.get("keepdims", False)
    if name in CUMS:
        n = x.size if axis is None else x.shape[axis]
        if "prod" in name:
            return n + 1, (n + 1) * np.finfo(out_dtype).tiny
        if name.startswith("cumulative"):
            cum = np.cumulative_sum(mag, axis=axis, include_initial=kw.get("include_initial",
                                                                           False))
        else:
            cum = np.cumsum(mag, axis=axis)
        return 1, n * e * cum
    n = np.sum(np.broadcast_to(where, x.shape), axis=axis, keepdims=keep)
    if name in PRODS:
        return int(np.max(n, initial=0)) + 2, (np.max(n, initial=0) + 2) * np.finfo(out_dtype).tiny
    total = np.sum(mag, axis=axis, keepdims=keep, where=where) + abs(kw.get("initial", 0))
    if name in SUMS:
        return 1, n * e * total
    with np.errstate(all="ignore"):
        avg = np.where(n > 0, total / np.maximum(n, 1), 0)
        if name in MEANS:
            return 2, (n + 1) * e * avg
        sq = np.sum(mag ** 2, axis=axis, keepdims=keep, where=where) / np.maximum(n, 1)
        var_tol = 4 * (n + 2) * e * (sq + avg ** 2)
    return (2, var_tol) if "var" in name else (2, np.sqrt(var_tol))


def _float32_for_float16(np_fn):
    """NumPy accumulates float16 means in float32, but float16 variances (and means with an
    explicit dtype=float16, and nanvar's centered values of float16 data) in float16,
    overflowing past 65504 where the true result is finite. functrans always accumulates
    float16 in float32, as JAX does; so does this oracle: NumPy in float32, rounded."""
    def oracle(x, **kw):
        out_dtype = np.asarray(np_fn(x, **kw)).dtype
        if out_dtype == np.float16:
            kw = {**kw, "dtype": np.float32}
        return np.asarray(np_fn(x.astype(np.float32) if x.dtype == np.float16 else x, **kw)
                          ).astype(out_dtype)
    return oracle


def _oracle(name, x, kw):
    oracle = ORACLES[name]
    if name in MEANS + VARS and (x.dtype == np.float16 or kw.get("dtype") == np.float16):
        return _float32_for_float16(oracle)
    return oracle


def check(name, x, **kw):
    fn, oracle = getattr(fnp, name), _oracle(name, x, kw)
    if T.raises_like(fn, oracle, x, **kw):
        return
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        want = oracle(x, **kw)
    ulps, atol = _tolerance(name, x, kw, want)
    T.check_against(fn, oracle, x, ulps=ulps, atol=atol,
                    signed_zeros=name not in EXACT, **kw)


def _values(dtype, shape):
    rng = np.random.default_rng(abs(hash((str(dtype), shape))) % 2**32)
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(max(info.min, -9), min(info.max, 9) + 1, shape).astype(dtype)
    x = (rng.standard_normal(shape) * 4).astype(dtype)
    if x.size > 4:
        x.flat[[1, 4]] = np.nan
    return x


# ---- every dtype, fixed shapes (including empty axes) and axis/keepdims combinations ----------------
@pytest.mark.parametrize("name", sorted(KWARGS))
def test_every_dtype(name):
    axis_kw = ([{}, {"axis": 0}, {"axis": -1}] if "axis1" in KWARGS[name] else
               [{}, {"axis": 1}, {"axis": (0, 2)}, {"axis": -1, "keepdims": True},
                {"axis": None, "keepdims": True}])
    for dt, shape in itertools.product(T.ALL_DTYPES, [(2, 3, 4), (3, 0, 2)]):
        x = _values(dt, shape)
        for kw in axis_kw:
            if name.startswith("cumulative") and "axis" not in kw:
                kw = {"axis": 0}
            check(name, x, **kw)


# ---- hypothesis: shapes, dtypes, values and keywords ----------------------------------------------
def _nonempty(x, kw):
    """Whether every reduced slice has an element: NumPy's integer means of empty slices cast
    0/0 = nan to an integer, which is undefined."""
    where = np.broadcast_to(kw.get("where", True), x.shape)
    return bool(np.all(np.sum(where, axis=kw.get("axis")) > 0))


@st.composite
def _case(draw, name):
    keys = KWARGS[name]
    dtype = draw(T.all_dtypes())
    bound = 2.0 if name in PRODS + ("cumprod", "nancumprod", "cumulative_prod") else 1e3
    x = draw(T.arrays(dtype, T.shapes(max_dims=3), specials=draw(st.booleans()), bound=bound,
                      int_range=(-3, 3) if "prod" in name else (None, None)))
    kw = {}
    if "axis" in keys:
        kw["axis"] = draw(T.axes(x.ndim))
    if "axis1" in keys:
        kw["axis"] = draw(T.axes(x.ndim, allow_tuple=False, allow_none=not name.startswith(
            "cumulative") or x.ndim <= 1))
    if "keepdims" in keys and draw(st.booleans()):
        kw["keepdims"] = True
    if "initial" in keys and draw(st.booleans()):
        kw["initial"] = draw(st.integers(0, 5))
    if "where" in keys and draw(st.booleans()):
        kw["where"] = draw(T.arrays(np.dtype(bool), st.sampled_from(
            [x.shape, x.shape[1:], x.shape[-1:] if x.ndim else ()])))
    if "dtype" in keys and draw(st.integers(0, 3)) == 0:
        # Floats cast to integer dtypes are undefined for nan/inf and out-of-range values;
        # integer variances are refused (test_integer_variance_dtype_is_refused).
        integer_ok = dtype.kind != "f" and name not in VARS and (
            name not in MEANS or _nonempty(x, kw))
        # Integer means cast a float quotient back: negative ones wrap for unsigned dtypes,
        # which is undefined behaviour in the float-to-int cast.
        choices = T.SIGNED_DTYPES if name in MEANS else T.NUMERIC_DTYPES
        kw["dtype"] = draw(T.dtypes_from(choices + T.FLOAT_DTYPES) if integer_ok
                           else T.float_dtypes())
    if "ddof" in keys and draw(st.booleans()):
        counts = np.sum(np.broadcast_to(kw.get("where", True), x.shape), axis=kw.get("axis"))
        kw["ddof"] = min(draw(st.integers(0, 3)), max(int(np.min(counts, initial=0)) - 1, 0))
    if name in MEANS + VARS and "dtype" in kw and dtype.kind in "iu":
        # Integers beyond the float dtype's precision convert inexactly, and NumPy mixes int
        # and float operands differently (int - float32 is float64): keep them exact.
        info = np.iinfo(dtype)
        x = np.clip(x, max(info.min, -2048), min(info.max, 2048)).astype(dtype)
    if "include_initial" in keys and draw(st.booleans()):
        kw["include_initial"] = True
    return x, kw


@pytest.mark.parametrize("name", sorted(KWARGS))
@given(data=st.data())
def test_hypothesis(name, data):
    x, kw = data.draw(_case(name))
    check(name, x, **kw)


# ---- average --------------------------------------------------------------------------------------
@given(data=st.data())
def test_average(data):
    dtype = data.draw(T.numeric_dtypes())
    x = data.draw(T.arrays(dtype, T.shapes(min_dims=1, min_side=1)))
    axis = data.draw(T.axes(x.ndim))
    returned, keepdims = data.draw(st.booleans()), data.draw(st.booleans())
    kw = dict(axis=axis, returned=returned, keepdims=keepdims)
    weights = None
    if data.draw(st.booleans()):
        # Positive weights: a weighted mean is well conditioned (no cancellation in sum(w)).
        wshape = data.draw(st.sampled_from(
            [x.shape] + ([tuple(x.shape[a] for a in T_axes(axis, x.ndim))]
                         if axis is not None else [])))
        weights = data.draw(T.arrays(data.draw(T.numeric_dtypes()), wshape,
                                     elements=lambda d: T.elements_for(d, bound=10).filter(
                                         lambda v: v > 0.5)))
        kw["weights"] = weights
    if T.raises_like(fnp.average, np.average, x, **kw):
        return
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        want = np.average(x, **kw)
    out_dtype = np.asarray(want[0] if returned else want).dtype
    e = T.eps(np.float32 if out_dtype == np.float16 else out_dtype)
    n = x.size if axis is None else math.prod(x.shape[a] for a in T_axes(axis, x.ndim))
    w = np.ones(x.shape) if weights is None else np.broadcast_to(
        _expand_weights(weights, x, axis), x.shape)
    scale = np.sum(np.abs(_f64(x)) * w, axis=axis, keepdims=keepdims) / np.sum(
        w, axis=axis, keepdims=keepdims)
    T.check_against(fnp.average, np.average, x, ulps=2, atol=(n + 2) * e * scale, **kw)


def T_axes(axis, ndim):
    return tuple(a % ndim for a in ((axis,) if isinstance(axis, int) else axis))


def _expand_weights(w, x, axis):
    if w.shape == x.shape:
        return _f64(w)
    axes = T_axes(axis, x.ndim)
    w = _f64(w).transpose(np.argsort(axes))
    return w.reshape([x.shape[d] if d in axes else 1 for d in range(x.ndim)])


def test_average_weight_errors():
    with pytest.raises(TypeError, match="axis must be specified"):
        fnp.average(np.ones((2, 3)), weights=np.ones(3))
    with pytest.raises(ValueError, match="shape of weights"):
        fnp.average(np.ones((2, 3)), axis=1, weights=np.ones(2))


# ---- clear errors ---------------------------------------------------------------------------------
def test_axis_out_of_range():
    with pytest.raises(np.exceptions.AxisError, match="axis 2 is out of bounds .* dimension 2"):
        fnp.sum(np.ones((2, 3)), axis=2)
    with pytest.raises(np.exceptions.AxisError, match="axis -3"):
        fnp.argmax(np.ones((2, 3)), axis=-3)
    with pytest.raises(ValueError, match="duplicate value in 'axis'"):
        fnp.mean(np.ones((2, 3)), axis=(1, -1))


def test_empty_reduction_without_identity():
    with pytest.raises(ValueError, match="zero-size array to reduction operation max"):
        fnp.max(np.ones((0, 3)), axis=0)
    with pytest.raises(ValueError, match="argmin of an empty sequence"):
        fnp.argmin(np.ones((0,)))


def test_where_must_be_boolean_and_broadcast():
    with pytest.raises(TypeError, match="fnp.sum: where= must be a boolean mask"):
        fnp.sum(np.ones(3), where=np.ones(3))
    with pytest.raises(ValueError, match=r"fnp.mean.*where=.*\(2,\)"):
        fnp.mean(np.ones((2, 3)), where=np.ones(2, bool))
    with pytest.raises(ValueError, match="needs initial="):
        fnp.max(np.ones(3), where=np.ones(3, bool))


def test_unsupported_dtype_argument():
    with pytest.raises(TypeError, match="complex256|supported"):
        fnp.sum(np.ones(3), dtype=np.clongdouble)
    with pytest.raises(TypeError, match="object|supported"):
        fnp.sum(np.array(["a", "b"]))


@pytest.mark.parametrize("name", VARS)
def test_integer_variance_dtype_is_refused(name):
    with pytest.raises(TypeError, match=f"fnp.{name}: dtype= must be a floating-point dtype"):
        getattr(fnp, name)(np.arange(4), dtype="int32")


@pytest.mark.parametrize("name", VARS)
def test_variance_with_ddof_at_least_n(name):
    # n - ddof <= 0: var divides by max(n - ddof, 0) (inf, or nan for zero spread); the
    # nan-variants give nan.
    x = np.array([[1.0, 2.0], [3.0, 3.0]])
    for ddof in (2, 3):
        T.check_against(getattr(fnp, name), getattr(np, name), x, axis=1, ddof=ddof)
