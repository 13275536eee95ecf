"""Testing helpers: hypothesis strategies for arrays, dtypes, shapes and axes;
:func:`check_against`, which compares a functrans function with a NumPy (or SciPy) oracle
eagerly *and* traced (``make_jaxpr`` -> ``check_jaxpr`` -> ``eval_jaxpr``); ``check_grads``;
and :func:`check_transforms`, which checks that a function's jit, vmap and derivatives agree
(the laws user-written derivative and batching rules must keep).

    >>> from hypothesis import given
    >>> @given(arrays(dtypes=float_dtypes()))
    ... def test_sin(x):
    ...     check_against(fnp.sin, np.sin, x)
    >>> @given(float_arrays(shape=(3,), positive=True))
    ... def test_log_transforms(x):
    ...     check_transforms(fnp.log, x)
"""
from __future__ import annotations

import warnings

import numpy as np

from .transforms.autodiff.check import check_grads  # noqa: F401  (ft.testing.check_grads)
from .transforms.laws import (LAWS, LawResult, TransformLawError,  # noqa: F401
                                       TransformReport, check_transforms)
from functrans.core.dtypes import kind as dtype_kind

try:
    from hypothesis import strategies as st
    from hypothesis.extra import numpy as hnp
except ImportError:  # hypothesis is a dev dependency
    st = hnp = None

FLOAT_DTYPES = ("float16", "float32", "float64")
SIGNED_DTYPES = ("int8", "int16", "int32", "int64")
UNSIGNED_DTYPES = ("uint8", "uint16", "uint32", "uint64")
INT_DTYPES = SIGNED_DTYPES + UNSIGNED_DTYPES
NUMERIC_DTYPES = INT_DTYPES + FLOAT_DTYPES
ALL_DTYPES = ("bool",) + NUMERIC_DTYPES
SPECIAL_FLOATS = (np.nan, np.inf, -np.inf, -0.0, 0.0)


def _need_hypothesis():
    if st is None:
        raise ImportError("functrans.testing strategies need hypothesis: pip install hypothesis")


# ---- strategies ----------------------------------------------------------------------------------
def dtypes_from(names):
    """A strategy drawing one of the named dtypes."""
    _need_hypothesis()
    return st.sampled_from([np.dtype(n) for n in names])


def float_dtypes():
    return dtypes_from(FLOAT_DTYPES)


def int_dtypes():
    return dtypes_from(INT_DTYPES)


def numeric_dtypes():
    return dtypes_from(NUMERIC_DTYPES)


def all_dtypes():
    return dtypes_from(ALL_DTYPES)


def shapes(min_dims=0, max_dims=3, min_side=0, max_side=4):
    """Array shapes (small by default, including empty and rank-0)."""
    _need_hypothesis()
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side,
                            max_side=max_side)


def broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=4):
    """Tuples of ``num_shapes`` shapes that broadcast together (sizes 1 and 0 included)."""
    _need_hypothesis()
    return hnp.mutually_broadcastable_shapes(num_shapes=num_shapes, min_dims=min_dims,
                                             max_dims=max_dims, min_side=0,
                                             max_side=max_side).map(lambda r: r.input_shapes)


def float_elements(dtype, bound=1e3, specials=False):
    """Finite floats in ``[-bound, bound]`` representable in ``dtype``; with ``specials``
    also nan, +-inf and signed zeros."""
    _need_hypothesis()
    el = st.floats(-bound, bound, allow_nan=False, width=8 * np.dtype(dtype).itemsize)
    return st.one_of(st.sampled_from(SPECIAL_FLOATS), el) if specials else el


def int_elements(dtype, lo=None, hi=None):
    """Integers of ``dtype`` (its full range by default, clipped to ``[lo, hi]``)."""
    _need_hypothesis()
    info = np.iinfo(dtype)
    lo = info.min if lo is None else max(lo, int(info.min))
    hi = info.max if hi is None else min(hi, int(info.max))
    return st.integers(lo, hi)


def elements_for(dtype, bound=1e3, specials=False, int_range=(None, None)):
    dtype = np.dtype(dtype)
    if dtype_kind(dtype) == "f":
        return float_elements(dtype, bound, specials)
    if dtype_kind(dtype) == "b":
        return st.booleans()
    return int_elements(dtype, *int_range)


def arrays(dtypes=None, shape=None, elements=None, finite=True, *, specials=False, bound=1e3,
           int_range=(None, None), **shape_kwargs):
    """NumPy arrays with the given dtype (strategy or dtype) and shape (strategy or tuple).

    Floats are finite and moderate (``|x| <= bound``) so oracles are stable; ``specials``
    (or ``finite=False``) mixes in nan, +-inf and signed zeros. ``elements`` may be a strategy
    or a function of the dtype returning one.
    """
    _need_hypothesis()
    dtypes = all_dtypes() if dtypes is None else dtypes
    if not isinstance(dtypes, st.SearchStrategy):
        dtypes = st.just(np.dtype(dtypes))
    shape = shapes(**shape_kwargs) if shape is None else shape
    specials = specials or not finite

    def build(dt):
        el = elements(dt) if callable(elements) else elements
        if el is None:
            el = elements_for(dt, bound, specials, int_range)
        return hnp.arrays(dt, shape, elements=el)

    return dtypes.flatmap(build)


def _inside(value, dtype, up):
    """``value`` rounded to ``dtype``, moved one step ``up`` (or down) if rounding left the
    interval it bounds."""
    v = np.dtype(dtype).type(value)
    if up and float(v) < value:
        v = np.nextafter(v, np.dtype(dtype).type(np.inf))
    if not up and float(v) > value:
        v = np.nextafter(v, np.dtype(dtype).type(-np.inf))
    return float(v)


def float_arrays(shape=None, dtype="float64", *, bound=10.0, positive=False, away_from=(),
                 margin=0.1, **shape_kwargs):
    """Well-conditioned float arrays, for derivative checks (:func:`check_transforms`): finite,
    no subnormals, ``|x| <= bound``; with ``positive`` in ``[margin, bound]`` (domains such as
    ``log``'s, with room for finite-difference steps); every element at least ``margin`` away
    from each point of ``away_from`` (kinks and poles: ``abs`` at 0, ``1/x``).

    ``dtype`` and ``shape`` may be strategies (``float_dtypes()``, :func:`shapes`); without a
    shape, ``shape_kwargs`` go to :func:`shapes`.

    >>> from hypothesis import find
    >>> x = find(float_arrays((4,), "float32", positive=True, away_from=(1.0,)), lambda a: True)
    >>> x.dtype, bool(np.all((x >= 0.1) & (np.abs(x - 1.0) >= 0.1)))
    (dtype('float32'), True)
    """
    _need_hypothesis()
    dtypes = (dtype if isinstance(dtype, st.SearchStrategy) else st.just(dtype)).map(np.dtype)
    shape = shapes(**shape_kwargs) if shape is None else shape
    points = tuple(float(p) for p in away_from)
    if positive and margin <= 0:
        raise ValueError("float_arrays: positive=True needs margin > 0")

    def build(dt):
        lo = _inside(margin if positive else -bound, dt, up=True)
        hi = _inside(bound, dt, up=False)
        el = st.floats(lo, hi, allow_nan=False, allow_infinity=False, allow_subnormal=False,
                       width=8 * dt.itemsize)
        if points:
            def push(v):
                for p in points:
                    if abs(v - p) < margin:
                        v = p + 1.01 * margin * (1.0 if v >= p else -1.0)
                        v = min(max(v, lo), hi)
                return float(dt.type(v))
            el = el.map(push).filter(lambda v: all(abs(v - p) >= margin for p in points))
        return hnp.arrays(dt, shape, elements=el)

    return dtypes.flatmap(build)


def python_scalars(kind, bound=1e3):
    """A Python bool/int/float for the dtype kind ``"b"``, ``"i"``/``"u"`` or ``"f"``."""
    _need_hypothesis()
    if kind == "b":
        return st.booleans()
    if kind == "i":
        return st.integers(-100, 100)
    if kind == "u":
        return st.integers(0, 200)
    return st.floats(-bound, bound, allow_nan=False)


def axes(ndim, allow_none=True, allow_tuple=True):
    """An ``axis=`` argument valid for rank ``ndim``: None, an int (negative ones included)
    or a tuple of distinct axes."""
    _need_hypothesis()
    options = [st.just(None)] if allow_none else []
    if ndim:
        options.append(st.integers(-ndim, ndim - 1))
        if allow_tuple:
            options.append(st.lists(st.integers(-ndim, ndim - 1), unique_by=lambda a: a % ndim,
                                    max_size=ndim).map(tuple))
    return st.one_of(options) if options else st.just(None)


# ---- comparison with an oracle ------------------------------------------------------------------
def eps(dtype) -> float:
    """Machine epsilon of a float dtype (0 for exact dtypes)."""
    dtype = np.dtype(dtype)
    return float(np.finfo(dtype).eps) if dtype_kind(dtype) == "f" else 0.0


def _leaves(x):
    if isinstance(x, (tuple, list)):
        return [leaf for item in x for leaf in _leaves(item)]
    return [x]


def assert_close(got, want, *, ulps=0.0, atol=0.0, signed_zeros=True, what="result"):
    """``got`` has ``want``'s shape and dtype and its values: bit-exact for integers and bools,
    and for floats ``|got - want| <= atol + ulps * ulp(want)`` with matching nan/inf
    positions (``atol`` may be an array broadcasting against the values). Exact comparisons
    (``ulps == atol == 0``) also check the sign of zeros unless ``signed_zeros=False``.
    """
    g, w = np.asarray(got), np.asarray(want)
    assert g.shape == w.shape, f"{what}: shape {g.shape} != expected {w.shape}"
    assert g.dtype == w.dtype, f"{what}: dtype {g.dtype} != expected {w.dtype}"
    if dtype_kind(w.dtype) != "f":
        assert np.array_equal(g, w), f"{what}: values differ\n got {g!r}\nwant {w!r}"
        return
    gnan, wnan = np.isnan(g), np.isnan(w)
    assert np.array_equal(gnan, wnan), f"{what}: nan positions differ\n got {g!r}\nwant {w!r}"
    ginf, winf = np.isinf(g), np.isinf(w)
    assert np.array_equal(g[winf], w[winf]) and np.array_equal(ginf, winf), \
        f"{what}: infinities differ\n got {g!r}\nwant {w!r}"
    fin = ~(wnan | winf)
    g64, w64 = g.astype(np.float64), w.astype(np.float64)
    # An ulp is eps * |w| for normal numbers and the fixed subnormal spacing below them.
    spacing = np.maximum(eps(w.dtype) * np.abs(w64[fin]),
                         float(np.finfo(w.dtype).smallest_subnormal))
    tol = np.broadcast_to(np.asarray(atol, np.float64), w.shape)[fin] + ulps * spacing
    assert np.isfinite(tol).all(), f"{what}: the tolerance for a finite value is not finite"
    err = np.abs(g64[fin] - w64[fin])
    bad = err > tol
    if bad.any():
        raise AssertionError(
            f"{what}: {int(bad.sum())} of {bad.size} values outside the tolerance (ulps={ulps}, "
            f"atol={np.max(np.asarray(atol))!r}); largest error {err.max()!r}\n"
            f" got {g!r}\nwant {w!r}")
    if signed_zeros and ulps == 0 and np.all(np.asarray(atol) == 0):
        zero = fin & (w == 0)
        assert np.array_equal(np.signbit(g[zero]), np.signbit(w[zero])), \
            f"{what}: signs of zeros differ\n got {g!r}\nwant {w!r}"


def raises_like(fn, oracle, *args, **kwargs) -> bool:
    """If ``oracle`` raises TypeError, ValueError, OverflowError or IndexError on the NumPy
    versions of ``args``, assert that ``fn`` raises the same kind of error and return True."""
    np_args = _to_numpy(args)
    np_kwargs = {k: _to_numpy(v) for k, v in kwargs.items()}
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            oracle(*np_args, **np_kwargs)
    except (TypeError, ValueError, OverflowError, IndexError) as e:
        kind = next(k for k in (TypeError, OverflowError, ValueError, IndexError)
                    if isinstance(e, k))
        try:
            fn(*args, **kwargs)
        except kind:
            return True
        except Exception as mine:
            raise AssertionError(f"NumPy raised {type(e).__name__} ({e}); functrans raised "
                                 f"{type(mine).__name__} ({mine})") from mine
        raise AssertionError(f"NumPy raised {type(e).__name__} ({e}); functrans did not")
    return False


def _to_numpy(x):
    from .core.array import Array
    if isinstance(x, (tuple, list)):
        return type(x)(_to_numpy(v) for v in x)
    return np.asarray(x) if isinstance(x, Array) else x


def _is_dynamic(x):
    from .core.array import Array
    return isinstance(x, (np.ndarray, Array))


def _split_dynamic(args):
    """The array leaves of ``args`` (nested lists/tuples) and a function rebuilding ``args``
    with other values in their place."""
    dyn = []

    def collect(x):
        if isinstance(x, (tuple, list)):
            for v in x:
                collect(v)
        elif _is_dynamic(x):
            dyn.append(x)
    collect(args)

    def rebuild(values):
        it = iter(values)

        def put(x):
            if isinstance(x, (tuple, list)):
                return type(x)(put(v) for v in x)
            return next(it) if _is_dynamic(x) else x
        return put(args)

    return dyn, rebuild


def check_against(fn, oracle, *args, ulps=0.0, atol=0.0, signed_zeros=True, trace=True,
                  fn_kwargs=None, **kwargs):
    """Assert ``fn(*args, **kwargs)`` equals ``oracle`` on the same arguments as NumPy values.

    Shapes, dtypes and values must match (see :func:`assert_close` for ``ulps``/``atol``;
    ``atol`` may be a callable of the NumPy arguments, or a tuple with one per output). With ``trace`` the function is also
    traced with its array arguments as inputs (Python scalars stay static), the jaxpr is
    type-checked and evaluated, and its outputs must equal the eager ones bit for bit.
    Keyword arguments of ``fn`` go in ``**kwargs``, or in ``fn_kwargs`` when their names
    clash with this function's (``isclose(..., atol=...)``). Returns the eager result.
    """
    kwargs = {**kwargs, **(fn_kwargs or {})}
    from .core.check import check_jaxpr
    from .core.eval import eval_jaxpr
    from .core.array import Array
    from .core.tracing import make_jaxpr

    np_args = _to_numpy(args)
    np_kwargs = {k: _to_numpy(v) for k, v in kwargs.items()}
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        want = oracle(*np_args, **np_kwargs)
    got = fn(*args, **kwargs)
    tol = atol(*np_args) if callable(atol) else atol
    wl, gl = _leaves(want), _leaves(got)
    assert len(wl) == len(gl), f"{len(gl)} outputs, expected {len(wl)}"
    for i, (g, w) in enumerate(zip(gl, wl)):
        assert_close(g, w, ulps=ulps, atol=tol[i] if type(tol) is tuple else tol,
                     signed_zeros=signed_zeros, what=f"eager output {i}")
    if trace:
        dyn, rebuild = _split_dynamic((args, kwargs))
        dyn = [Array(np.asarray(d)) if isinstance(d, np.ndarray) else d for d in dyn]

        def traced(*values):
            a, k = rebuild(values)
            return fn(*a, **k)

        jaxpr = make_jaxpr(traced)(*dyn)
        check_jaxpr(jaxpr)
        outs = eval_jaxpr(jaxpr, *dyn)
        assert len(outs) == len(gl), f"traced: {len(outs)} outputs, eager {len(gl)}"
        for i, (o, g, aval) in enumerate(zip(outs, gl, jaxpr.out_avals)):
            g = np.asarray(g)
            assert (tuple(aval.shape), aval.dtype) == (g.shape, g.dtype), \
                f"traced output {i}: jaxpr type {aval} != eager {g.dtype}{list(g.shape)}"
            o = np.asarray(o)
            assert o.shape == g.shape and o.dtype == g.dtype, \
                f"traced output {i}: {o.dtype}{list(o.shape)} != eager {g.dtype}{list(g.shape)}"
            same = np.array_equal(o, g, equal_nan=dtype_kind(o.dtype) == "f")
            if same and dtype_kind(o.dtype) == "f":
                same = np.array_equal(np.signbit(o), np.signbit(g))
            assert same, f"traced output {i} differs from eager\ntraced {o!r}\n eager {g!r}"
    return got
