"""Fast-math layer: accuracy in ulp against float64/extended-precision references, edge cases,
vectorization, prange and cache=True kernels, route selection.

Compilation dominates the run time, so each (route, dtype) compiles one kernel holding a loop
per function (selected by an index) and every test feeds it many inputs.

Tolerances (max ulp over the input sets, ulp of the correctly rounded result):

- portable: exp/exp2/log/log1p/expm1/sin/cos/erf are at most one rounding away from the
  exact result: a reduction error-free or nearly so, a polynomial whose truncation is far
  below an ulp, and one final rounding or scaling; 1.5 ulp leaves room for the reference.
  expm1 rounds once more when it adds 1 - 2**-k before scaling: 2 ulp.
  Composed functions add one rounding per extra operation: tanh = e/(e+2) on expm1,
  logistic = n/(1+e) on exp, sinh/cosh on expm1/exp, log2/log10 multiplying a logarithm by
  a constant in float32: 3 ulp.
- libmvec: glibc documents its vector functions to 4 ulp (float32 erf reaches 3.997 here),
  plus half an ulp for the rounding of the reference: 4.5; logistic adds a division to
  libmvec's exp: 5 ulp.
- stock: libm's scalar functions (glibc lists up to 2 ulp for its float32 tanh, sinh, cosh
  and log10), composed logistic: 3 ulp.
float64 results are compared with long double (x87 extended) references where NumPy has them,
erf with ``math.erf``; without extended precision one ulp is added for the reference.
"""
from __future__ import annotations

import math
import os
import re
import subprocess
import sys
import textwrap

import numba
import numpy as np
import pytest

from functrans.transforms.lowering import fastmath as fm

NAMES = ("exp", "exp2", "log", "log2", "log10", "log1p", "expm1", "tanh", "sin", "cos",
         "logistic", "erf", "sinh", "cosh")
REQUIRED = ("exp", "log", "log1p", "expm1", "tanh", "sin", "cos", "logistic", "erf")
ROUTES = ["portable", "off",
          pytest.param("libmvec", marks=pytest.mark.skipif(not fm.libmvec_available(),
                                                           reason="glibc libmvec not found"))]
DTYPES = (np.float32, np.float64)
LD = np.longdouble
EXTENDED = np.finfo(LD).nmant >= 63

_TOL_PORTABLE = dict.fromkeys(NAMES, 1.5)
_TOL_PORTABLE.update(expm1=2, tanh=3, logistic=3, sinh=3, cosh=3, log2=3, log10=3)
_TOL_LIBMVEC = dict.fromkeys(NAMES, 4.5)
_TOL_LIBMVEC.update(logistic=5)
_TOL_STOCK = dict.fromkeys(NAMES, 2.5)
_TOL_STOCK.update(logistic=3)
TOLERANCE = {"portable": _TOL_PORTABLE, "libmvec": _TOL_LIBMVEC, "off": _TOL_STOCK}


# -- one kernel per route: a loop per function, chosen by index ----------------------------

def _make_apply(route):
    env = {n: fm.get(n, route) for n in NAMES}
    src = ["def apply(fid, x, out):"]
    for j, n in enumerate(NAMES):
        src += [f"    {'if' if j == 0 else 'elif'} fid == {j}:",
                "        for i in range(x.size):",
                f"            out[i] = {n}(x[i])"]
    exec("\n".join(src), env)
    return numba.njit(**fm.kernel_options())(env["apply"])


_APPLY = {}


def apply(route, name, x):
    if route not in _APPLY:
        _APPLY[route] = _make_apply(route)
    out = np.empty_like(x)
    _APPLY[route](NAMES.index(name), x, out)
    return out


# -- references -----------------------------------------------------------------------------

_math_erf = np.frompyfunc(math.erf, 1, 1)


def reference(name, x):
    """The exact value of ``name`` at ``x`` to well beyond x's precision, as long double."""
    hi = LD if (x.dtype == np.float64 and EXTENDED) else np.float64
    v = x.astype(hi)
    with np.errstate(all="ignore"):
        if name == "erf":
            return _math_erf(x.astype(np.float64)).astype(np.float64).astype(LD)
        if name == "logistic":
            e = np.exp(-np.abs(v))
            return (np.where(v >= 0, 1, e) / (1 + e)).astype(LD)
        return getattr(np, name)(v).astype(LD)


def ulp_errors(res, ref, dtype):
    """|res - ref| in ulps of ``ref`` rounded to ``dtype``; nan where both are nan and inf
    where both are the same infinity count as exact, any other special mismatch as inf."""
    with np.errstate(all="ignore"):
        rt = ref.astype(dtype)
        step = np.maximum(np.spacing(np.abs(rt)).astype(LD), LD(np.finfo(dtype).smallest_subnormal))
        err = np.abs(res.astype(LD) - ref) / step
        exact = (np.isnan(res) & np.isnan(rt)) | (np.isinf(rt) & (res == rt))
        err = np.where(exact, 0, err)
        bad = (np.isnan(err) | (np.isinf(rt) != np.isinf(res))) & ~exact
        return np.where(bad, np.inf, err)


def _domain(name, dtype, rng, n):
    """Random inputs over the function's interesting range plus small and tiny magnitudes."""
    f32 = dtype == np.float32
    big = {"exp": (-104, 89) if f32 else (-746, 710), "exp2": (-150, 128) if f32 else (-1075, 1024),
           "expm1": (-20, 89) if f32 else (-40, 710), "tanh": (-12, 12) if f32 else (-22, 22),
           "logistic": (-105, 100) if f32 else (-746, 710), "erf": (-6, 6),
           "sinh": (-90, 90) if f32 else (-711, 711), "cosh": (-90, 90) if f32 else (-711, 711),
           "sin": (-1e4, 1e4), "cos": (-1e4, 1e4)}
    parts = [rng.uniform(-1, 1, n // 4), rng.standard_normal(n // 8) * 1e-3]
    if name in ("log", "log2", "log10", "log1p"):
        top = 88 if f32 else 709
        mags = np.exp(rng.uniform(-top, top, n // 2))
        parts += [mags, rng.uniform(0.5, 2, n // 8)]
        if name == "log1p":
            parts += [mags - 1, rng.uniform(-1, 0, n // 8)]
    else:
        lo, hi = big[name]
        parts.append(rng.uniform(lo, hi, n // 2))
    if name in ("sin", "cos"):
        top = 38 if f32 else 300  # log10 of the largest magnitudes: the slow path included
        parts.append(10.0 ** rng.uniform(0, top, n // 8) * rng.choice([-1, 1], n // 8))
        k = rng.integers(1, 2**28 if f32 else 2**20, n // 8)  # next to multiples of pi/2
        parts.append(k * (np.pi / 2))
    if name == "erf":
        parts.append(np.concatenate([np.linspace(b - 0.01, b + 0.01, 2000)
                                     for b in (0.84375, 1.25, 1 / 0.35)]))
    return np.concatenate(parts).astype(dtype)


# -- accuracy -------------------------------------------------------------------------------

@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f64"])
def test_ulp_accuracy(route, dtype):
    rng = np.random.default_rng(1234)
    slack = 0 if (dtype == np.float32 or EXTENDED) else 1
    report = {}
    for name in NAMES:
        x = _domain(name, dtype, rng, 200_000)
        err = ulp_errors(apply(route, name, x), reference(name, x), dtype)
        i = int(np.argmax(err))
        report[name] = (float(err[i]), x[i])
    bad = {n: r for n, r in report.items() if r[0] > TOLERANCE[route][n] + slack}
    assert not bad, f"max ulp errors above tolerance (ulp, worst input): {bad}"


def _edge_inputs(name, dtype):
    f = np.finfo(dtype)
    tiny, sub = f.tiny, f.smallest_subnormal
    common = [0.0, -0.0, np.inf, -np.inf, np.nan, sub, -sub, tiny, -tiny, 3 * sub, 1e-30, -1e-30,
              1.0, -1.0, 0.5, -0.5, 2.0, f.max, -f.max]
    f32 = dtype == np.float32
    extra = {
        "exp": [88.72, 88.7228, 88.73, 89, -87.3, -100, -103.9, -104, -110, -150] if f32 else
               [709.78, 709.79, 710, -708.4, -740, -745.1, -745.2, -746, -800],
        "exp2": [127, 127.99, 128, -126, -140, -149, -149.5, -150, -151] if f32 else
                [1023, 1023.99, 1024, -1022, -1060, -1074, -1074.5, -1075, -1076],
        "expm1": [88.72, 88.73, -17, -30, -1e5, 1e-8, -1e-8] if f32 else
                 [709.78, 709.79, -40, -1e5],
        "tanh": [9, 10, 20, 1e-5, -1e-5, 0.55, -0.55],
        "logistic": [-88, -100, -103, -104, -120, 88, 100] if f32 else [-700, -745, -746, 710],
        "log": [4.0, 0.25, 1 + 1e-7, 1 - 1e-7], "log2": [8.0, 0.125, 1024.0],
        "log10": [10.0, 1000.0, 0.001], "log1p": [-1 + 1e-7, -0.5, 1e-8, -1e-8, 1e30, 0.41421],
        "sin": [np.pi, np.pi / 2, 1e5, 1e6, 3.9e8, 4.1e8, 1e10, 1e20, 3e38] if f32 else
               [np.pi, 1e5, 1.5e6, 1.7e6, 1e10, 1e22, 1e300],
        "erf": [0.84375, 1.25, 2.857142, 3.9, 4, 6, 10, 1e-20, -1e-20],
        "sinh": [88, 89, 89.4, 90, 1e-5] if f32 else [709, 710, 710.4, 711],
        "cosh": [88, 89, 89.4, 90] if f32 else [709, 710, 710.4, 711],
    }
    extra["cos"] = extra["sin"]
    vals = common + extra.get(name, [])
    if name in ("log", "log2", "log10", "log1p"):
        vals += [-2.0, -1.0, -1e-10]
    return np.array(vals + [-v for v in extra.get(name, [])], dtype=dtype)


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f64"])
def test_edge_cases(route, dtype):
    """Special values exactly (nan, infinities, signed zeros), the rest to tolerance:
    overflow/underflow thresholds, subnormal inputs and results, large sin/cos arguments."""
    slack = 0 if (dtype == np.float32 or EXTENDED) else 1
    failures = []
    for name in NAMES:
        x = _edge_inputs(name, dtype)
        res = apply(route, name, x)
        ref = reference(name, x)
        with np.errstate(over="ignore"):
            rt = ref.astype(dtype)
        err = ulp_errors(res, ref, dtype)
        for xi, ri, ti, ei in zip(x, res, rt, err):
            special = np.isnan(ti) or np.isinf(ti) or ti == 0
            if special and not (ri == ti or (np.isnan(ri) and np.isnan(ti))):
                failures.append((name, xi, ri, ti))
            elif ti == 0 and np.signbit(ri) != np.signbit(ti):
                failures.append((name, xi, ri, ti, "sign of zero"))
            elif ei > TOLERANCE[route][name] + slack:
                failures.append((name, xi, ri, ti, f"{ei:.1f} ulp"))
    assert not failures, failures


@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f64"])
def test_named_edges(dtype):
    """The documented behaviour, spelled out, on the default route."""
    x = np.array([89, -104, -0.0, 0.0, -1.0, np.nan], dtype=dtype)
    exp = apply(fm.route() if fm.route() != "auto" else "portable", "exp", x)
    if dtype == np.float32:
        assert exp[0] == np.inf
        assert exp[1] == np.float32(np.exp(np.float64(-104)))  # subnormal, as libm
    for route in ("portable", "off"):
        lg = apply(route, "log", x)
        assert np.isnan(lg[4]) and np.isnan(lg[5]) and lg[2] == -np.inf and lg[3] == -np.inf
        for name in ("sin", "tanh", "erf", "expm1", "log1p"):
            z = apply(route, name, x[2:4])
            assert np.signbit(z[0]) and not np.signbit(z[1]) and z[0] == 0 == z[1], name


# -- vectorization --------------------------------------------------------------------------

def _one_loop_kernel(route, names):
    env = {n: fm.get(n, route) for n in names}
    body = " + ".join(f"{n}(v)" for n in names)
    src = ("def k(x, out):\n    for i in range(x.size):\n        v = x[i]\n"
           f"        out[i] = {body}\n")
    exec(src, env)
    return numba.njit(**fm.kernel_options())(env["k"])


@pytest.mark.parametrize("route", ["portable", ROUTES[2]])
@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f64"])
def test_vectorizes(route, dtype):
    """All functions in one loop: one function that blocks LLVM's vectorizer would leave the
    whole loop scalar. On AVX-512 hosts the width hint must give 512-bit vectors."""
    names = [n for n in NAMES if fm.has_simd(n, dtype, route)]
    assert set(REQUIRED) <= set(names)
    k = _one_loop_kernel(route, names)
    x = np.linspace(-2, 2, 64).astype(dtype)
    k(x, np.empty_like(x))
    ir_text = k.inspect_llvm(k.signatures[0])
    elem = "float" if dtype == np.float32 else "double"
    widths = {int(w) for w in re.findall(rf"<(\d+) x {elem}>", ir_text)}
    assert widths and max(widths) >= 2, "loop not vectorized"
    if fm.preferred_vector_width() == 512:
        assert max(widths) >= (16 if dtype == np.float32 else 8)
    if route == "libmvec":
        for n in names:
            if n != "logistic":
                assert re.search(rf"@_ZGV\w+_{n}{'f' if dtype == np.float32 else ''}\(", ir_text), n


def test_prefer_wide_vectors_hint():
    """A kernel without math calls gets the width hint from prefer_wide_vectors()."""
    @numba.njit(**fm.kernel_options())
    def scale(x, out):
        for i in range(x.size):
            fm.prefer_wide_vectors()
            out[i] = x[i] * np.float32(3) + np.float32(1)

    x = np.arange(100, dtype=np.float32)
    out = np.empty_like(x)
    scale(x, out)
    assert np.array_equal(out, x * 3 + 1)
    ir_text = scale.inspect_llvm(scale.signatures[0])
    if fm.preferred_vector_width() == 512:
        assert '"prefer-vector-width"="512"' in ir_text and "<16 x float>" in ir_text
    else:
        assert "prefer-vector-width" not in ir_text


# -- kernels: prange, cache=True -----------------------------------------------------------

@pytest.mark.parametrize("route", ["portable", ROUTES[2]])
def test_prange_reduction(route):
    tanh, sin = fm.get("tanh", route), fm.get("sin", route)
    block = 4096

    @numba.njit(**fm.kernel_options(parallel=True))
    def fused(x):
        nfull = x.size // block
        total = 0.0
        for b in numba.prange(nfull):
            xb = x[b * block:(b + 1) * block]
            s = np.float32(0)
            for i in range(block):
                v = xb[i]
                s += tanh(v) * sin(v) + v * v * np.float32(0.5)
            total += np.float64(s)
        for i in range(nfull * block, x.size):
            v = x[i]
            total += np.float64(tanh(v) * sin(v) + v * v * np.float32(0.5))
        return total

    x = np.random.default_rng(5).standard_normal(1_000_003).astype(np.float32)
    xd = x.astype(np.float64)
    expect = np.sum(np.tanh(xd) * np.sin(xd) + xd * xd * 0.5)
    assert abs(fused(x) - expect) <= 1e-6 * abs(expect)


_CACHED_MODULE = '''
import numba, numpy as np
from functrans.transforms.lowering import fastmath as fm
FUNCS = {name: fm.get(name, ROUTE) for name in ("exp", "tanh", "sin", "log1p", "erf")}
exp, tanh, sin, log1p, erf = (FUNCS[n] for n in ("exp", "tanh", "sin", "log1p", "erf"))

@numba.njit(cache=True, **fm.kernel_options())
def kernel(x, out):
    for i in range(x.size):
        v = x[i]
        out[i] = exp(v) + tanh(v) * sin(v) + log1p(v * v) + erf(v)
'''

_CACHED_RUN = '''
import sys, numpy as np
sys.path.insert(0, sys.argv[1])
import {mod} as m
x = np.linspace(-3, 3, 1001).astype(np.float32)
out = np.empty_like(x)
m.kernel(x, out)
xd = x.astype(np.float64)
from math import erf
ref = np.exp(xd) + np.tanh(xd) * np.sin(xd) + np.log1p(xd * xd) + np.array([erf(v) for v in xd])
assert np.max(np.abs(out - ref) / np.maximum(1, np.abs(ref))) < 1e-6, "wrong values"
print("hits", sum(m.kernel.stats.cache_hits.values()))
'''


@pytest.mark.parametrize("route", ["portable", ROUTES[2]])
def test_cache_true_kernel(tmp_path, route):
    """A cache=True kernel compiles in one process and loads from disk in the next."""
    mod = f"cached_fastmath_{route}"
    (tmp_path / f"{mod}.py").write_text(f"ROUTE = {route!r}\n" + _CACHED_MODULE)
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"))
    script = _CACHED_RUN.format(mod=mod)
    runs = [subprocess.run([sys.executable, "-c", script, str(tmp_path)], env=env,
                           capture_output=True, text=True, timeout=120) for _ in range(2)]
    for r in runs:
        assert r.returncode == 0, r.stderr[-2000:]
    assert runs[0].stdout.split()[-1] == "0"
    assert int(runs[1].stdout.split()[-1]) >= 1, "second process did not load from the cache"


# -- routes and options ---------------------------------------------------------------------

def test_kernel_options():
    opts = fm.kernel_options(parallel=True)
    assert opts["error_model"] == "numpy" and opts["parallel"] is True
    assert opts["fastmath"] == {"afn", "nsz", "reassoc"}
    assert fm.preferred_vector_width() in (None, 512)


def test_route_queries():
    for name in fm.FUNCTIONS:
        for dt in ("float32", "float64"):
            assert fm.implementation(name, dt, "off") == "stock"
            assert fm.has_simd(name, dt, "off") is False
            assert fm.implementation(name, dt, "portable") in ("portable", "stock")
    for name in REQUIRED:
        assert fm.has_simd(name, np.float32, "portable")
        assert fm.has_simd(name, "float64", "portable")
        if fm.libmvec_available():
            assert fm.implementation(name, "float32", "libmvec") == "libmvec"
    assert fm.implementation("pow", "float64", "portable") == "stock"
    with pytest.raises(KeyError):
        fm.implementation("nope", "float32")
    with pytest.raises(ValueError):
        fm.get("exp", "fast")


def test_fallback_without_libmvec(monkeypatch):
    """Where glibc lacks a vector function (or libmvec is missing), auto and libmvec settings
    fall back to the portable route, and to stock math where there is no portable version."""
    monkeypatch.setitem(fm._IMPLS, "libmvec", {})
    for setting in ("auto", "libmvec"):
        assert fm.implementation("tanh", "float32", setting) == "portable"
        assert fm.implementation("atan2", "float64", setting) == "stock"
        assert not fm.has_simd("pow", "float32", setting)


def test_set_route_rebinds_module_functions():
    old = fm.set_route("portable")
    try:
        assert fm.route() == "portable" and fm.exp is fm.get("exp", "portable")
        assert fm.sigmoid is fm.logistic
        f = numba.njit(lambda v: fm.exp(v))
        assert f(np.float32(1)) == apply("portable", "exp", np.array([1], np.float32))[0]
    finally:
        fm.set_route(old)
    assert fm.exp is fm.get("exp", old)


def test_integer_and_binary_arguments():
    pow_, atan2, log = fm.get("pow"), fm.get("atan2"), fm.get("log")
    f = numba.njit(lambda a, b: (pow_(a, b), atan2(a, b), log(a)))
    p, t, lg = f(np.float32(2), np.float32(10))
    assert p == 1024 and abs(t - np.arctan2(2, 10)) < 1e-6
    assert f.nopython_signatures[0].return_type == numba.types.UniTuple(numba.float32, 3)
    p, _, lg = f(3, 2)
    assert p == 9.0 and abs(lg - math.log(3)) < 1e-15 and isinstance(lg, float)


def test_environment_variable():
    code = textwrap.dedent("""
        import warnings
        warnings.simplefilter("error")
        from functrans.transforms.lowering import fastmath as fm
        print(fm.route(), fm.implementation("exp", "float32"), fm.has_simd("exp", "float32"))
    """)
    out = {}
    for value in ("portable", "off", "bogus"):
        env = dict(os.environ, FUNCTRANS_FASTMATH=value)
        r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                           timeout=120)
        out[value] = (r.returncode, r.stdout.split(), r.stderr)
    assert out["portable"][1] == ["portable", "portable", "True"]
    assert out["off"][1] == ["off", "stock", "False"]
    assert out["bogus"][0] != 0 and "FUNCTRANS_FASTMATH" in out["bogus"][2]


@pytest.mark.parametrize("dtype", DTYPES)
def test_native_exp_of_underflowing_inputs(dtype):
    """jit's exp on libmvec computes inputs whose result is subnormal as exp(x/2)^2, so that
    no lane falls back to libm's scalar exp (a masked softmax's -1e9 made exp 13x slower),
    and clamps inputs below the zero threshold. Against long double exp: normal results
    within libmvec's 4.5 ulp, those computed by squaring within 2 * 4 + 0.5 ulp; subnormal
    ones within 2 of their units (the square's relative error times a value below the
    smallest normal, plus its rounding); NaN, infinities and zeros as NumPy."""
    import functrans as ft
    import functrans.numpy as fnp
    if not fm.libmvec_available():
        pytest.skip("glibc libmvec not found")
    fi = np.finfo(dtype)
    lo = -110.0 if dtype == np.float32 else -750.0
    x = np.concatenate([np.linspace(lo, 10.0, 100001),
                        [-1e9, -np.inf, np.inf, np.nan, 0.0, -0.0, -1e300]]).astype(dtype)
    got = np.asarray(ft.jit(lambda v: fnp.exp(v))(x))
    with np.errstate(all="ignore"):
        want = np.exp(x.astype(LD))
        numpy_exp = np.exp(x)
    special = ~np.isfinite(numpy_exp) | (numpy_exp == 0)
    np.testing.assert_array_equal(got[special & (want < fi.smallest_subnormal / 2)],
                                  numpy_exp[special & (want < fi.smallest_subnormal / 2)])
    assert np.array_equal(np.isnan(got), np.isnan(numpy_exp))
    normal = np.isfinite(want) & (want >= fi.tiny) & (want <= fi.max)
    squared = normal & (x < (-87.0 if dtype == np.float32 else -708.0))
    err = np.abs(got[normal].astype(LD) - want[normal]) / (want[normal] * LD(fi.eps))
    tol = np.where(squared[normal], 8.5 + (0 if EXTENDED else 1), 4.5 + (0 if EXTENDED else 1))
    assert np.all(err <= tol), float(err.max())
    sub = np.isfinite(want) & (want < fi.tiny) & (want >= fi.smallest_subnormal / 2)
    assert sub.sum() > 100
    units = np.abs(got[sub].astype(LD) - want[sub]) / LD(fi.smallest_subnormal)
    assert np.all(units <= 2), float(units.max())
