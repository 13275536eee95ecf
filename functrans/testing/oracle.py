"""Comparing functrans functions with NumPy (or SciPy) oracles (``functrans.testing``
re-exports these): :func:`check_against` compares eagerly *and* traced (``make_jaxpr`` ->
``check_jaxpr`` -> ``eval_jaxpr``), :func:`assert_close` compares values in ulps, and
:func:`raises_like` checks that functrans refuses what NumPy refuses.

    >>> check_against(fnp.sin, np.sin, np.linspace(0.0, 1.0, 5), ulps=1).shape  # passes
    (5,)
"""
from __future__ import annotations

import warnings

import numpy as np

from functrans.core.dtypes import kind as dtype_kind


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
    from functrans.core.array import Array
    if isinstance(x, (tuple, list)):
        return type(x)(_to_numpy(v) for v in x)
    return np.asarray(x) if isinstance(x, Array) else x


def _is_dynamic(x):
    from functrans.core.array import Array
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
    from functrans.core.check import check_jaxpr
    from functrans.core.eval import eval_jaxpr
    from functrans.core.array import Array
    from functrans.core.tracing import make_jaxpr

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
