"""Array creation (creation.py) against NumPy, eagerly and traced: shapes, dtypes and values.

All results must equal NumPy's bit for bit: the constructors fill, count or copy, and
linspace/logspace/geomspace run NumPy's own sequence of operations (arange * step + start with
the endpoint set exactly; a base-10 logspace of magnitudes for geomspace), so there is
nothing to round differently -- except geomspace's log10, see ``_geomspace_ulps``.
``empty``/``empty_like`` are zeros (NumPy leaves the memory uninitialized; functrans arrays are
always defined), so only their shape and dtype are NumPy's.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, strategies as st

import functrans as ft
import functrans.numpy as fnp
from functrans import testing as T
from functrans.numpy import creation

OPTIONAL_DTYPE = st.one_of(st.none(), T.all_dtypes())


def _array(draw, min_dims=0, max_dims=3, dtypes=None, shape=None):
    shape = draw(T.shapes(min_dims, max_dims)) if shape is None else shape
    return draw(T.arrays(T.all_dtypes() if dtypes is None else dtypes, shape, specials=True))


@st.composite
def _shape_dtype(draw):
    shape = draw(st.one_of(st.integers(0, 4), T.shapes()))
    return (shape,), {"dtype": draw(OPTIONAL_DTYPE)}


@st.composite
def _full(draw):
    shape = draw(T.shapes())
    fill = draw(st.one_of(st.integers(-5, 5), st.floats(-5, 5), st.booleans(),
                          T.arrays(T.numeric_dtypes(), st.just(shape[-1:] if shape else ()))))
    # NumPy casts the fill value unsafely; keep it representable in the requested dtype.
    dtype = draw(st.one_of(st.none(), T.float_dtypes(), st.just(np.dtype(np.int16))))
    return (shape, fill), {"dtype": dtype}


@st.composite
def _like(draw, with_fill=False):
    a = _array(draw)
    kw = {"dtype": draw(OPTIONAL_DTYPE)}
    if draw(st.booleans()):
        kw["shape"] = draw(T.shapes())
    args = (a, draw(st.integers(0, 5))) if with_fill else (a,)
    return args, kw


@st.composite
def _arange(draw):
    kind = draw(st.sampled_from(["int", "float"]))
    num = st.integers(-6, 6) if kind == "int" else st.floats(-6, 6).map(lambda v: round(v, 2))
    start, stop = draw(num), draw(num)
    step = draw(st.one_of(st.none(), num.filter(lambda v: abs(v) > 0.2)))
    args = draw(st.sampled_from([(stop,), (start, stop), (start, stop, step)]))
    dtype = draw(st.one_of(st.none(), T.dtypes_from(("int64", "float32", "float64"))))
    if len(args) == 3 and args[2] is None:
        args = args[:2]
    return args, {"dtype": dtype}


def _bound(draw, shape):
    return draw(st.one_of(st.integers(-5, 5), st.floats(-100, 100),
                          T.arrays(T.numeric_dtypes(), st.just(shape), bound=100,
                                   int_range=(-50, 50))))


@st.composite
def _linspace(draw, log=False, geom=False):
    shapes = draw(T.broadcastable_shapes(2, max_dims=2))
    start, stop = _bound(draw, shapes[0]), _bound(draw, shapes[1])
    if geom:
        start, stop = (np.where(v == 0, 1, v) if isinstance(v, np.ndarray) else (v or 1)
                       for v in (start, stop))
    kw = {"num": draw(st.integers(0, 6)), "endpoint": draw(st.booleans()),
          "axis": draw(st.integers(-1, 0))}
    if not log and not geom:
        kw["retstep"] = draw(st.booleans())
    dt = draw(st.one_of(st.none(), T.float_dtypes()))
    if dt is not None:
        kw["dtype"] = dt
    if log and draw(st.booleans()):
        kw["base"] = draw(st.floats(0.5, 4))
    return (start, stop), kw


@st.composite
def _eye(draw):
    n, m = draw(st.integers(0, 4)), draw(st.one_of(st.none(), st.integers(0, 4)))
    return (n, m), {"k": draw(st.integers(-4, 4)), "dtype": draw(OPTIONAL_DTYPE)}


@st.composite
def _identity(draw):
    return (draw(st.integers(0, 4)),), {"dtype": draw(OPTIONAL_DTYPE)}


@st.composite
def _tril(draw):
    return (_array(draw, min_dims=1),), {"k": draw(st.integers(-3, 3))}


@st.composite
def _diag(draw):
    return (_array(draw, min_dims=1, max_dims=2),), {"k": draw(st.integers(-3, 3))}


@st.composite
def _diagflat(draw):
    return (_array(draw),), {"k": draw(st.integers(-3, 3))}


@st.composite
def _diagonal(draw, trace=False):
    a = _array(draw, min_dims=2)
    ax1, ax2 = draw(st.permutations(range(a.ndim)))[:2]
    kw = {"offset": draw(st.integers(-3, 3)), "axis1": ax1 - a.ndim * draw(st.integers(0, 1)),
          "axis2": ax2}
    if trace and draw(st.booleans()):
        kw["dtype"] = draw(T.float_dtypes())
    return (a,), kw


@st.composite
def _meshgrid(draw):
    xs = [_array(draw, max_dims=2) for _ in range(draw(st.integers(0, 3)))]
    return tuple(xs), {"sparse": draw(st.booleans()), "indexing": draw(st.sampled_from(
        ["xy", "ij"]))}


@st.composite
def _indices(draw):
    return (draw(T.shapes()),), {"dtype": draw(st.one_of(st.none(), T.numeric_dtypes())),
                                 "sparse": draw(st.booleans())}


@st.composite
def _fromfunction(draw):
    return (lambda i, *rest: i * 2 + sum(rest), draw(T.shapes(min_dims=1))), {
        "dtype": draw(st.sampled_from([float, int, np.float32]))}


@st.composite
def _tri_indices(draw):
    return (draw(st.integers(0, 4)), draw(st.integers(-3, 3)),
            draw(st.one_of(st.none(), st.integers(0, 4)))), {}


@st.composite
def _diag_indices(draw):
    return (draw(st.integers(0, 4)), draw(st.integers(1, 3))), {}


@st.composite
def _indices_from(draw):
    a = _array(draw, shape=draw(st.tuples(st.integers(0, 4), st.integers(0, 4))))
    return (a,), {"k": draw(st.integers(-3, 3))}


@st.composite
def _diag_indices_from(draw):
    n, nd = draw(st.integers(0, 3)), draw(st.integers(2, 3))
    return (_array(draw, shape=(n,) * nd),), {}


@st.composite
def _fill_diagonal(draw):
    shape = draw(st.one_of(st.tuples(st.integers(1, 5), st.integers(1, 5)),
                           st.integers(1, 3).map(lambda n: (n,) * 3)))
    a = _array(draw, shape=shape, dtypes=T.float_dtypes())
    val = draw(st.one_of(st.floats(-5, 5), T.arrays(a.dtype, T.shapes(1, 1, min_side=1))))
    return (a, val), {"wrap": draw(st.booleans())}


def _np_fill_diagonal(a, val, wrap=False):
    a = a.copy()
    np.fill_diagonal(a, val, wrap=wrap)
    return a


@st.composite
def _as(draw):
    return (_array(draw),), {"dtype": draw(OPTIONAL_DTYPE)}


def _zeros_like_empty(fn):
    return lambda *a, **k: np.zeros_like(fn(*a, **k))


CASES = {
    "zeros": _shape_dtype(), "ones": _shape_dtype(), "empty": _shape_dtype(), "full": _full(),
    "zeros_like": _like(), "ones_like": _like(), "empty_like": _like(),
    "full_like": _like(with_fill=True), "arange": _arange(), "linspace": _linspace(),
    "logspace": _linspace(log=True), "geomspace": _linspace(geom=True), "eye": _eye(),
    "identity": _identity(), "tri": _eye(), "tril": _tril(), "triu": _tril(), "diag": _diag(),
    "diagflat": _diagflat(), "diagonal": _diagonal(), "trace": _diagonal(trace=True),
    "meshgrid": _meshgrid(), "indices": _indices(), "fromfunction": _fromfunction(),
    "tril_indices": _tri_indices(), "triu_indices": _tri_indices(),
    "diag_indices": _diag_indices(), "tril_indices_from": _indices_from(),
    "triu_indices_from": _indices_from(), "diag_indices_from": _diag_indices_from(),
    "fill_diagonal": _fill_diagonal(), "asanyarray": _as(), "ascontiguousarray": _as(),
    "asarray_chkfinite": _as(),
}
def _np_as(a, dtype=None, base=np.asarray):
    """NumPy's ``base`` (asarray, ascontiguousarray...), except float -> integer conversions, which follow JAX (as functrans):
    NaN -> 0, out-of-range values saturate (NumPy's result there is undefined: INT_MIN on
    x86-64); test_conversions.py tests that rule for every dtype pair."""
    a = base(a)
    if dtype is None or np.dtype(dtype).kind not in "iu" or a.dtype.kind != "f":
        return base(a, dtype)
    info = np.iinfo(dtype)
    v = a.astype(np.float64)
    whole = np.trunc(np.where(np.isfinite(v), v, 0.0))
    out = np.where(np.isnan(v), 0, np.where(v >= info.max, info.max,
                                            np.where(v <= info.min, info.min, whole)))
    return np.array([int(x) for x in out.ravel()], dtype=object).reshape(v.shape).astype(dtype)


ORACLES = {"empty": _zeros_like_empty(np.empty), "empty_like": _zeros_like_empty(np.empty_like),
           "fill_diagonal": _np_fill_diagonal, "asanyarray": _np_as,
           "ascontiguousarray": lambda a, dtype=None: _np_as(a, dtype, np.ascontiguousarray),
           "asarray_chkfinite": _np_as}
WRAPPERS = {"fill_diagonal": lambda a, v, **k: fnp.fill_diagonal(a, v, inplace=False, **k)}


def test_every_creation_function_is_tested():
    separate = ["mgrid", "ogrid", "fromiter", "frombuffer"]
    assert sorted(list(CASES) + separate) == sorted(creation.__all__)


@given(T.all_dtypes(), st.lists(st.integers(0, 100), max_size=5))
def test_fromiter_frombuffer(dtype, values):
    T.assert_close(fnp.fromiter(iter(values), dtype), np.fromiter(iter(values), dtype))
    buf = np.array(values, dtype).tobytes()
    T.assert_close(fnp.frombuffer(buf, dtype), np.frombuffer(buf, dtype))
    if len(values) > 1:
        T.assert_close(fnp.frombuffer(buf, dtype, count=1, offset=dtype.itemsize),
                       np.frombuffer(buf, dtype, count=1, offset=dtype.itemsize))


@pytest.mark.parametrize("name", sorted(CASES))
@given(data=st.data())
def test_matches_numpy(name, data):
    args, kwargs = data.draw(CASES[name])
    kwargs = {k: v for k, v in kwargs.items() if v is not None or k in ("axis",)}
    fn = WRAPPERS.get(name, getattr(fnp, name))
    oracle = ORACLES.get(name, getattr(np, name))
    if T.raises_like(fn, oracle, *args, **kwargs):
        return
    # asarray_chkfinite checks values: traced it refuses (test_asarray_chkfinite_...).
    T.check_against(fn, oracle, *args, ulps=_geomspace_ulps(*args) if name == "geomspace" else 0,
                    trace=name != "asarray_chkfinite", **kwargs)


def _geomspace_ulps(start, stop):
    """geomspace is 10 ** y with y from log10, which functrans computes as log(x) / log(10)
    (no log10 primitive: up to 3 ulps of |log10 x|). An error dy in the exponent is a
    relative error ln(10) * dy in the result; plus 2 ulps for linspace and the power."""
    mags = [np.abs(np.log10(np.abs(np.asarray(v, np.float64)))) for v in (start, stop)]
    return 2 + 3 * np.log(10) * max(float(np.max(m, initial=0)) for m in mags)


@pytest.mark.parametrize("key", [np.s_[0:3], np.s_[0:2, 1:4], np.s_[0:1:5j, -2:2:2],
                                 np.s_[-1:1:0.5], np.s_[3:0:-1, 0:2]])
def test_mgrid_ogrid(key):
    for name in ("mgrid", "ogrid"):
        got, want = getattr(fnp, name)[key], getattr(np, name)[key]
        for g, w in zip(T._leaves(got), T._leaves(want)):
            T.assert_close(g, w)


def test_linspace_with_traced_bounds():
    # The bounds may be traced (only num is static): the jaxpr must compute NumPy's values.
    T.check_against(lambda a, b: fnp.linspace(a, b, 7), lambda a, b: np.linspace(a, b, 7),
                    np.array([0.0, -3.0]), np.array(1.5))


# ---- clear errors ---------------------------------------------------------------------------------
def test_negative_dimensions_and_counts():
    with pytest.raises(ValueError, match="negative dimensions"):
        fnp.zeros((2, -1))
    with pytest.raises(ValueError, match="must be non-negative"):
        fnp.linspace(0, 1, -1)


def test_asarray_chkfinite_needs_concrete_values():
    with pytest.raises(TypeError, match="traced"):
        ft.make_jaxpr(fnp.asarray_chkfinite)(np.ones(2))


def test_traced_arange_bounds_are_refused():
    with pytest.raises(TypeError, match="static"):
        ft.make_jaxpr(lambda n: fnp.arange(n))(3)


def test_unsupported_dtypes_in_creation():
    with pytest.raises(TypeError, match="complex256|supported"):
        fnp.zeros(3, dtype=np.clongdouble)
    assert fnp.zeros(3, dtype=np.complex64).dtype == np.complex64
    with pytest.raises(TypeError, match="supported"):
        fnp.ones(2, dtype="U3")


def test_fill_diagonal_needs_inplace_false():
    with pytest.raises(NotImplementedError, match="inplace=False"):
        fnp.fill_diagonal(fnp.zeros((2, 2)), 1.0)


def test_geomspace_refuses_zero():
    with pytest.raises(ValueError, match="cannot include zero"):
        fnp.geomspace(0, 10, 3)


def test_an_explicit_dtype_makes_a_weak_value_strong():
    # As JAX 0.10.2: jnp.asarray(weak, dtype=its own dtype) is strongly typed (lineax's
    # inexact_asarray, whose result optimistix compares with the function's output types).
    x = fnp.asarray(1.0)
    assert x.weak_type
    assert not fnp.asarray(x, dtype=x.dtype).weak_type
    assert not fnp.array(x, dtype=x.dtype).weak_type
    assert fnp.asarray(x).weak_type
