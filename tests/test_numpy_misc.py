"""misc.py and numerical.py against NumPy (SciPy for cumulative_trapezoid), eagerly and traced.

Most functions here replay NumPy's algorithm operation by operation (round, isclose, sinc, i0,
interp, trapezoid, gradient, unwrap, histogram, polynomials, windows, ...), so they must match
bit for bit. The exceptions, with tolerances from their error bounds (``e`` = epsilon of the
result dtype):

* convolve/correlate (and polymul, poly, which convolve): each output is a dot product of up
  to m terms, which functrans sums with BLAS in another order than NumPy's loop:
  ``m * e * (|a| conv |v|)``.
* histogram with float weights and explicit edges: NumPy differences a running sum of the
  weights, so each bin is off by up to ``2 * n * e * sum(|w|)``.
* cov: centering and m-term dot products, so ``4 * (n + 2) * e * (|X| @ |X|.T) / dof``;
  corrcoef divides by the standard deviations, which carry half the relative error of the
  variances, so that error is propagated through ``c / (s_i * s_j)``.
"""
from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
import scipy.integrate
from hypothesis import assume, given, strategies as st

import functrans.numpy as fnp
from functrans import testing as T
from functrans.numpy import dtype_utils, misc, numerical


def _array(draw, min_dims=0, max_dims=3, dtypes=None, shape=None, **kw):
    shape = draw(T.shapes(min_dims, max_dims)) if shape is None else shape
    kw.setdefault("specials", True)
    return draw(T.arrays(T.all_dtypes() if dtypes is None else dtypes, shape, **kw))


def _one(**array_kw):
    @st.composite
    def case(draw):
        return (_array(draw, **array_kw),), {}
    return case()


@st.composite
def _round(draw):
    return (_array(draw), draw(st.integers(-3, 3))), {}


@st.composite
def _nan_to_num(draw):
    kw = {k: draw(st.one_of(st.none(), st.floats(-10, 10)))
          for k in ("nan", "posinf", "neginf")}
    return (_array(draw),), {k: v for k, v in kw.items() if v is not None}


@st.composite
def _close_pair(draw):
    shapes = draw(T.broadcastable_shapes(2))
    a = _array(draw, shape=shapes[0], dtypes=T.numeric_dtypes())
    b = draw(st.one_of(
        T.arrays(T.numeric_dtypes(), shapes[1], specials=True),
        st.just((np.broadcast_to(a, np.broadcast_shapes(*shapes)) * (1 + 1e-6)).astype(a.dtype)
                if a.dtype.kind == "f" else a),
        st.floats(-5, 5), st.integers(-5, 5)))
    return a, b


@st.composite
def _isclose(draw):
    a, b = draw(_close_pair())
    kw = {"rtol": draw(st.sampled_from([1e-5, 1e-3, 0.0])),
          "atol": draw(st.sampled_from([1e-8, 1e-2, 0.0])), "equal_nan": draw(st.booleans())}
    return (a, b), kw


@st.composite
def _array_equal(draw, equal_nan=True):
    a = _array(draw)
    b = draw(st.sampled_from([a.copy(), a.astype(np.float64) if a.dtype.kind != "b" else a,
                              _array(draw, shape=a.shape), _array(draw)]))
    return (a, b), ({"equal_nan": draw(st.booleans())} if equal_nan else {})


@st.composite
def _angle(draw):
    return (_array(draw, dtypes=T.numeric_dtypes()),), {"deg": draw(st.booleans())}


@st.composite
def _ix(draw):
    seqs = []
    for _ in range(draw(st.integers(1, 3))):
        n = draw(st.integers(0, 4))
        seqs.append(draw(st.one_of(T.arrays(T.int_dtypes(), (n,), int_range=(0, 5)),
                                   T.arrays(np.dtype(bool), (n,)))))
    return tuple(seqs), {}


@st.composite
def _piecewise(draw):
    x = _array(draw, dtypes=T.float_dtypes(), specials=False)
    conds = [x < 0, x > 10][:draw(st.integers(1, 2))]
    funcs = [lambda v: v * 2, 3.0, lambda v: -v][:len(conds) + draw(st.integers(0, 1))]
    return (x, conds, funcs), {}


@st.composite
def _apply_along_axis(draw):
    x = _array(draw, min_dims=1, dtypes=T.numeric_dtypes(), specials=False)
    assume(0 not in x.shape)
    func = draw(st.sampled_from([lambda v: v * 2, lambda v: v.sum(), lambda v: v[::-1][:2],
                                 lambda v: v[:, None] * v[None, :]]))
    return (func, draw(st.integers(-x.ndim, x.ndim - 1)), x), {}


# ---- numerical ---------------------------------------------------------------------------------------
@st.composite
def _interp(draw):
    n = draw(st.integers(1, 5))
    xp = np.sort(draw(T.arrays(T.float_dtypes(), (n,), bound=10)))
    fp = draw(T.arrays(T.numeric_dtypes(), (n,), bound=10, int_range=(-20, 20)))
    x = _array(draw, max_dims=2, dtypes=T.numeric_dtypes(), bound=12)
    kw = {}
    if draw(st.booleans()):
        kw["left"], kw["right"] = draw(st.floats(-5, 5)), draw(st.floats(-5, 5))
    if draw(st.integers(0, 3)) == 0:
        kw["period"] = draw(st.floats(1, 10))
        # Sample points that coincide modulo the period make the interpolant ambiguous
        # (NumPy's unstable sort picks either).
        assume(len(np.unique(np.mod(xp.astype(np.float64), kw["period"]))) == n)
    return (x, xp, fp), kw


@st.composite
def _correlate(draw):
    dtype = draw(T.all_dtypes())
    a = draw(T.arrays(dtype, (draw(st.integers(1, 6)),), bound=10, int_range=(-10, 10)))
    v = draw(T.arrays(dtype, (draw(st.integers(1, 6)),), bound=10, int_range=(-10, 10)))
    return (a, v), {"mode": draw(st.sampled_from(["full", "same", "valid"]))}


@st.composite
def _cov(draw):
    nvar, nobs = draw(st.integers(1, 3)), draw(st.integers(2, 6))
    rowvar = draw(st.booleans())
    shape = (nvar, nobs) if rowvar else (nobs, nvar)
    m = draw(T.arrays(T.numeric_dtypes(), draw(st.sampled_from([shape, (nobs,)])), bound=10,
                      int_range=(-10, 10)))
    kw = {"rowvar": rowvar, "bias": draw(st.booleans())}
    if draw(st.booleans()):
        kw["ddof"] = draw(st.integers(0, 2))
    if draw(st.booleans()):
        kw["fweights"] = draw(T.arrays(np.dtype(np.int64), (nobs,), int_range=(1, 3)))
    if draw(st.booleans()):
        kw["aweights"] = draw(T.arrays(np.dtype(np.float64), (nobs,), elements=st.floats(0.5, 2)))
    if m.ndim == 1 and draw(st.booleans()):
        kw["y"] = draw(T.arrays(T.float_dtypes(), (nobs,), bound=10))
    return (m,), kw


@st.composite
def _trapezoid(draw, scipy=False):
    y = _array(draw, min_dims=1, dtypes=T.numeric_dtypes(), specials=False, bound=100)
    axis = draw(st.integers(-y.ndim, y.ndim - 1))
    n = y.shape[axis]
    kw = {"axis": axis}
    choice = draw(st.integers(0, 2))
    if choice == 1:
        kw["dx"] = draw(st.floats(0.1, 3))
    elif choice == 2:
        kw["x"] = np.sort(draw(T.arrays(T.numeric_dtypes(), (n,), bound=10, int_range=(-9, 9))))
    if scipy and draw(st.booleans()):
        kw["initial"] = 0
    if scipy:
        assume(n > 0)
    return (y,), kw


@st.composite
def _gradient(draw):
    f = _array(draw, min_dims=1, dtypes=T.numeric_dtypes(), specials=False, bound=100)
    edge_order = draw(st.integers(1, 2))
    axis = draw(st.sampled_from([None, draw(st.integers(-f.ndim, f.ndim - 1))]))
    axes = list(range(f.ndim)) if axis is None else [axis % f.ndim]
    spacing = []
    kind = draw(st.integers(0, 2))
    if kind == 1:
        spacing = [draw(st.floats(0.5, 3))]
    elif kind == 2:
        for ax in axes:
            n = f.shape[ax]
            # Coordinate arrays need 2 points (NumPy itself fails on fewer).
            coords = [st.lists(st.floats(0.25, 2), min_size=n, max_size=n).map(np.cumsum),
                      st.just(np.arange(n) * 2)] if n >= 2 else []
            spacing.append(draw(st.one_of(st.floats(0.5, 3), *coords)))
    return (f, *spacing), {"axis": axis, "edge_order": edge_order}


@st.composite
def _unwrap(draw):
    p = _array(draw, min_dims=1, dtypes=T.numeric_dtypes(), specials=False, bound=20,
               int_range=(-20, 20))
    kw = {"axis": draw(st.integers(-p.ndim, p.ndim - 1))}
    if draw(st.booleans()):
        kw["discont"] = draw(st.floats(1, 5))
    if draw(st.booleans()):
        kw["period"] = draw(st.sampled_from([2 * np.pi, 4.0, 6, 5]))
    return (p,), kw


@st.composite
def _histogram(draw, edges_only=False):
    a = _array(draw, dtypes=T.numeric_dtypes(), specials=False, bound=10, int_range=(-10, 10))
    bins = draw(st.one_of(st.integers(1, 5), st.lists(st.floats(-12, 12), min_size=2,
                                                      max_size=5).map(sorted).map(np.array)))
    kw = {"bins": bins}
    if draw(st.booleans()):
        lo = draw(st.floats(-10, 5))
        kw["range"] = (lo, lo + draw(st.floats(0, 10)))
    if draw(st.booleans()):
        kw["weights"] = draw(T.arrays(T.dtypes_from(("int64", "float64")), a.shape, bound=5,
                                      int_range=(0, 5)))
    if not edges_only and draw(st.booleans()):
        kw["density"] = True
    return (a,), kw


@st.composite
def _poly_coeffs(draw, n_min=1):
    dtype = draw(T.numeric_dtypes())
    n = draw(st.integers(n_min, 5))
    p = draw(T.arrays(dtype, (n,), bound=5, int_range=(-5, 5)))
    # NumPy's polymul strips leading zero coefficients (value-dependent sizes): avoid them.
    return np.where(np.arange(n) == 0, np.where(p == 0, 1, p), p).astype(dtype)


@st.composite
def _polyval(draw):
    return (draw(_poly_coeffs(0)), _array(draw, dtypes=T.numeric_dtypes(), specials=False,
                                          bound=3, int_range=(-3, 3))), {}


@st.composite
def _poly_pair(draw):
    return (draw(_poly_coeffs()), draw(_poly_coeffs())), {}


@st.composite
def _polyder(draw):
    return (draw(_poly_coeffs()),), {"m": draw(st.integers(0, 3))}


@st.composite
def _polyint(draw):
    m = draw(st.integers(0, 3))
    kw = {"m": m}
    if draw(st.booleans()):
        # Several constants as an array: JAX (and so functrans) refuses lists here.
        kw["k"] = draw(st.one_of(st.floats(-3, 3), st.lists(st.floats(-3, 3), min_size=max(m, 1),
                                                            max_size=max(m, 1)).map(np.array)))
    return (draw(_poly_coeffs()),), kw


@st.composite
def _poly(draw):
    return (draw(T.arrays(T.numeric_dtypes(), (draw(st.integers(0, 4)),), bound=3,
                          int_range=(-3, 3))),), {}


@st.composite
def _vander(draw):
    x = draw(T.arrays(T.numeric_dtypes(), (draw(st.integers(0, 4)),), bound=4, int_range=(-4, 4)))
    return (x,), {"N": draw(st.one_of(st.none(), st.integers(0, 5))),
                  "increasing": draw(st.booleans())}


@st.composite
def _window(draw, beta=False):
    args = (draw(st.integers(-1, 8)),) + ((draw(st.floats(0, 14)),) if beta else ())
    if beta:
        assume(args[0] >= 1)  # NumPy's kaiser has no case for M < 1
    return args, {}


def _correlate_tol(name):
    def tol(args, kw, want):
        a, v = (np.nan_to_num(np.abs(np.asarray(x, np.float64))) for x in args)
        if np.asarray(want).dtype.kind != "f":
            return 0, 0
        mode = kw.get("mode", "full" if name == "convolve" else "valid")
        bound = getattr(np, name)(a, v, mode)
        return 0, min(len(a), len(v)) * T.eps(np.asarray(want).dtype) * bound
    return tol


def _polymul_tol(args, kw, want):
    return _correlate_tol("convolve")(args, {"mode": "full"}, want)


def _poly_tol(args, kw, want):
    z = np.abs(np.asarray(args[0], np.float64))
    if np.asarray(want).dtype.kind != "f" or z.size == 0:
        return 0, 0
    # The coefficients of prod(x + |z_i|) bound every partial sum of the convolutions.
    bound = np.poly(-z)
    return 0, 2 * len(z) * T.eps(np.asarray(want).dtype) * bound


def _histogram_tol(args, kw, want):
    w = kw.get("weights")
    counts = np.asarray(want[0])
    if w is None or counts.dtype.kind != "f" or np.ndim(kw["bins"]) == 0:
        return 0, 0
    # With explicit edges NumPy sums weights as differences of a running sum (functrans
    # adds them per bin): each difference is off by the running sum's error.
    return 0, (2 * w.size * T.eps(counts.dtype) * np.sum(np.abs(w)), 0)


def _cov_tol(args, kw, want):
    x = np.atleast_2d(np.asarray(args[0], np.float64))
    if not kw.get("rowvar", True) and np.asarray(args[0]).ndim != 1:
        x = x.T
    if "y" in kw:
        x = np.concatenate([x, np.atleast_2d(np.asarray(kw["y"], np.float64))])
    n = x.shape[1]
    fw = np.asarray(kw.get("fweights", np.ones(n)), np.float64)
    aw = kw.get("aweights")
    w = fw * (1 if aw is None else aw)
    ddof = kw.get("ddof", 0 if kw.get("bias") else 1)
    if "fweights" not in kw and aw is None:
        fact = n - ddof
    elif ddof == 0:
        fact = w.sum()
    elif aw is None:
        fact = w.sum() - ddof
    else:
        fact = w.sum() - ddof * np.sum(w * aw) / w.sum()
    # |x_ik| + |mean_i| bounds each centered value and its rounding error.
    a = np.abs(x) + np.abs(np.average(x, axis=1, weights=w))[:, None]
    e = T.eps(np.asarray(want).dtype)
    return 0, np.squeeze(4 * (n + 2) * e * ((a * w) @ a.T) / max(abs(fact), 1e-300))


def _corrcoef_tol(args, kw, want):
    c = np.cov(*args, **kw)
    _, atol = _cov_tol(args, kw, c)
    if np.ndim(c) == 0:
        return 0, 2 * atol / abs(c) if c else 0
    s = np.sqrt(np.diag(c))
    rel = np.diag(atol) / np.diag(c)
    return 2, atol / np.outer(s, s) + np.abs(want) * (rel[:, None] + rel[None, :])


CASES = {
    "round": _round(), "around": _round(), "round_": _round(), "nan_to_num": _nan_to_num(),
    "isclose": _isclose(), "allclose": _isclose(), "array_equal": _array_equal(),
    "array_equiv": _array_equal(equal_nan=False), "sinc": _one(),
    "i0": _one(dtypes=T.numeric_dtypes(), bound=40), "real": _one(), "imag": _one(),
    "angle": _angle(), "isreal": _one(), "iscomplex": _one(), "iscomplexobj": _one(),
    "isrealobj": _one(), "isposinf": _one(), "isneginf": _one(), "ix_": _ix(),
    "real_if_close": _one(),
    "frexp": _one(), "spacing": _one(), "piecewise": _piecewise(),
    "apply_along_axis": _apply_along_axis(),
    "interp": _interp(), "convolve": _correlate(), "correlate": _correlate(), "cov": _cov(),
    "corrcoef": _cov(), "trapezoid": _trapezoid(), "cumulative_trapezoid": _trapezoid(True),
    "gradient": _gradient(), "unwrap": _unwrap(), "histogram": _histogram(),
    "histogram_bin_edges": _histogram(edges_only=True), "polyval": _polyval(),
    "polyadd": _poly_pair(), "polysub": _poly_pair(), "polymul": _poly_pair(),
    "polyder": _polyder(), "polyint": _polyint(), "poly": _poly(), "vander": _vander(),
    "hamming": _window(), "hanning": _window(), "blackman": _window(), "bartlett": _window(),
    "kaiser": _window(beta=True),
}
ORACLES = {"round_": np.round, "cumulative_trapezoid": scipy.integrate.cumulative_trapezoid}
TOLERANCES = {"convolve": _correlate_tol("convolve"), "correlate": _correlate_tol("correlate"),
              "polymul": _polymul_tol, "poly": _poly_tol, "cov": _cov_tol,
              "corrcoef": _corrcoef_tol, "histogram": _histogram_tol}
# Tested separately below: dtype utilities, scalars, the ufunc-like functions over all dtypes.
SEPARATE = {"isscalar", "result_type", "promote_types", "can_cast", "issubdtype", "isdtype",
            "iinfo", "finfo", "dtype", "gcd", "lcm", "apply_over_axes"}


def test_every_function_is_tested():
    assert sorted(CASES.keys() | SEPARATE) == sorted(misc.__all__ + numerical.__all__
                                                     + dtype_utils.__all__)


@pytest.mark.parametrize("name", sorted(CASES))
@given(data=st.data())
def test_matches_numpy(name, data):
    args, kwargs = data.draw(CASES[name])
    fn, oracle = getattr(fnp, name), ORACLES.get(name, getattr(np, name, None))
    if T.raises_like(fn, oracle, *args, **kwargs):
        return
    ulps, atol = 0, 0
    if name in TOLERANCES:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            want = oracle(*args, **kwargs)
        ulps, atol = TOLERANCES[name](args, kwargs, want)
    T.check_against(fn, oracle, *args, ulps=ulps, atol=atol, trace=_traceable(name, args, kwargs),
                    fn_kwargs=kwargs)


def _traceable(name, args, kwargs):
    """Value-dependent results cannot be traced (their own tests check the error)."""
    if name in ("iscomplexobj", "isrealobj"):
        return False  # Python bools
    if name == "ix_":
        return not any(np.asarray(a).dtype == bool for a in args)
    if name.startswith("histogram"):
        return "range" in kwargs or np.ndim(kwargs["bins"]) == 1
    return True


# ---- ufunc-like functions: every dtype pair ------------------------------------------------------
@pytest.mark.parametrize("name", ["gcd", "lcm"])
def test_gcd_lcm_every_dtype_pair(name):
    rng = np.random.default_rng(0)
    for d1, d2 in itertools.product(T.ALL_DTYPES, repeat=2):
        x = rng.integers(-60, 60, (5, 1)).astype(d1) if d1 != "bool" else np.array(
            [[True], [False]])
        y = rng.integers(-60, 60, (1, 4)).astype(d2) if d2 != "bool" else np.array([[True]])
        if T.raises_like(getattr(fnp, name), getattr(np, name), x, y):
            continue
        T.check_against(getattr(fnp, name), getattr(np, name), x, y)
    for dt in T.INT_DTYPES:
        info = np.iinfo(dt)
        edge = np.array([info.min, info.max, 0, 1, info.max - 1], dt)
        if name == "gcd":  # lcm of extremes overflows (undefined in C)
            T.check_against(fnp.gcd, np.gcd, edge[:, None], edge[None, :])
        T.check_against(getattr(fnp, name), getattr(np, name), edge, 12)


@pytest.mark.parametrize("name", ["frexp", "spacing", "i0", "sinc", "isposinf", "isneginf"])
def test_every_dtype(name):
    for dt in T.ALL_DTYPES:
        x = np.array([0, 1, 5, 100], dt) if dt == "bool" or np.dtype(dt).kind == "u" else \
            np.array([0, -1, 5, 100, -7], dt)
        if np.dtype(dt).kind == "f":
            info = np.finfo(dt)
            x = np.concatenate([x, np.array([np.nan, np.inf, -np.inf, -0.0, info.max, info.tiny,
                                             info.smallest_subnormal, -info.smallest_subnormal,
                                             0.75, 1e-3], dt)])
        if T.raises_like(getattr(fnp, name), getattr(np, name), x):
            continue
        T.check_against(getattr(fnp, name), getattr(np, name), x)


# ---- dtype utilities and scalars -------------------------------------------------------------------
@given(st.lists(st.one_of(T.all_dtypes(), T.arrays(T.all_dtypes(), T.shapes(max_dims=1)),
                          st.sampled_from([True, 3, 2.5])), min_size=1, max_size=3))
def test_result_type(args):
    if T.raises_like(fnp.result_type, np.result_type, *args):
        return
    assert fnp.result_type(*args) == np.result_type(*args)


def test_result_type_takes_descriptions_of_arrays_as_their_dtypes():
    # As jax.numpy.result_type: a ShapeDtypeStruct or ShapedArray stands for its dtype (not
    # weak), as the array it describes would.
    from functrans import ShapeDtypeStruct
    from functrans.core.avals import ShapedArray
    assert fnp.result_type(ShapeDtypeStruct((2,), "float32")) == np.float32
    assert fnp.result_type(ShapeDtypeStruct((), "int8"), fnp.ones(2, "int16")) == np.int16
    assert fnp.result_type(ShapedArray((3,), np.dtype("uint8")), 1) == np.uint8
    with pytest.raises(Exception, match="object array"):
        fnp.result_type(object())


@given(T.all_dtypes(), T.all_dtypes())
def test_dtype_predicates(a, b):
    assert fnp.promote_types(a, b) == np.promote_types(a, b)
    for casting in ("no", "equiv", "safe", "same_kind", "unsafe"):
        assert fnp.can_cast(a, b, casting) == np.can_cast(a, b, casting)
    assert fnp.can_cast(fnp.zeros(2, a), b) == np.can_cast(a, b)
    for kind in (np.integer, np.floating, np.signedinteger, np.unsignedinteger, np.number,
                 np.bool_, b):
        assert fnp.issubdtype(a, kind) == np.issubdtype(a, kind)
    for kind in ("bool", "signed integer", "unsigned integer", "integral", "real floating",
                 "numeric", b, ("integral", "real floating")):
        assert fnp.isdtype(a, kind) == np.isdtype(a, kind)
    info = fnp.finfo(a) if a.kind == "f" else fnp.iinfo(a) if a.kind in "iu" else None
    if info is not None:
        want = np.finfo(a) if a.kind == "f" else np.iinfo(a)
        assert (info.min, info.max, info.dtype) == (want.min, want.max, want.dtype)
    assert fnp.dtype(a) == np.dtype(a)


def test_isscalar():
    for v in (3, 2.5, True, np.float32(1), "s", [1], np.ones(2)):
        assert fnp.isscalar(v) == np.isscalar(v)
    # As in JAX (unlike NumPy's ndarray), 0-d arrays count as scalars.
    assert fnp.isscalar(fnp.array(3.0)) and not fnp.isscalar(fnp.ones(1))


@given(T.arrays(T.numeric_dtypes(), T.shapes(min_dims=1)), st.data())
def test_apply_over_axes(x, data):
    axes = data.draw(st.lists(st.integers(-x.ndim, x.ndim - 1), unique_by=lambda a: a % x.ndim,
                              min_size=1, max_size=x.ndim))
    T.check_against(lambda a: fnp.apply_over_axes(fnp.sum, a, axes),
                    lambda a: np.apply_over_axes(np.sum, a, axes), x)


def test_polymul_trims_leading_zeros_on_request():
    p, q = np.array([0.0, 0.0, 1.0, 2.0]), np.array([1.0, -1.0])
    T.assert_close(fnp.polymul(p, q, trim_leading_zeros=True), np.polymul(p, q))
    assert fnp.polymul(p, q).shape == (5,)  # untrimmed (static length), as JAX


# ---- clear errors -----------------------------------------------------------------------------------
def test_histogram_of_traced_data_needs_range():
    import functrans as ft
    with pytest.raises(TypeError, match="range="):
        ft.make_jaxpr(lambda a: fnp.histogram(a, bins=3))(np.ones(4))


def test_numerical_input_errors():
    with pytest.raises(ValueError, match="not of the same length"):
        fnp.interp(np.ones(2), np.arange(3.0), np.arange(2.0))
    with pytest.raises(ValueError, match="cannot be empty"):
        fnp.convolve(np.ones(0), np.ones(2))
    with pytest.raises(ValueError, match="mode must be"):
        fnp.correlate(np.ones(3), np.ones(2), mode="wrong")
    with pytest.raises(ValueError, match="too small"):
        fnp.gradient(np.ones(2), edge_order=2)
    with pytest.raises(TypeError, match="gcd does not support inputs of types.*float64"):
        fnp.gcd(np.ones(2), np.ones(2))


def test_save_and_load_round_trip_arrays_as_jax_numpy_does(tmp_path):
    path = tmp_path / "x.npy"
    fnp.save(path, fnp.arange(6.0, dtype="float32").reshape(2, 3))
    back = fnp.load(path)
    assert type(back) is fnp.ndarray and back.dtype == np.float32
    np.testing.assert_array_equal(back, np.arange(6.0).reshape(2, 3))
    assert np.load(path).dtype == np.float32  # a plain .npy file: NumPy reads it
    if hasattr(fnp, "bfloat16"):  # NumPy stores bfloat16 as raw V2 values; load restores it
        fnp.save(path, fnp.asarray([1.5, -2.0], fnp.bfloat16))
        assert np.load(path).dtype == np.dtype("V2")
        assert fnp.load(path).dtype == fnp.bfloat16 and fnp.load(path).tolist() == [1.5, -2.0]
    np.save(path, np.array(["a", "b"]))  # not a dtype functrans computes with: NumPy's value
    assert type(fnp.load(path)) is np.ndarray
    fnp.savez(tmp_path / "z.npz", a=fnp.ones(2))
    with fnp.load(tmp_path / "z.npz") as archive:
        np.testing.assert_array_equal(archive["a"], np.ones(2))
