"""Float -> integer conversion (``convert_element_type``, ``fnp.astype``) as JAX's (XLA's):
truncated toward zero, NaN to 0, values at or beyond the target's bounds to the nearest bound
(negative values to 0 for unsigned targets). NumPy's cast leaves NaN and out-of-range values
undefined (INT_MIN on x86; int8/int16 wrap around), and so did LLVM's plain ``fptosi`` in
jit's kernels.

Oracle: ``_reference``, the rule written out with exact integers. Every float dtype to every
integer dtype, eagerly and under jit with both code generators (float16 and bfloat16 programs
run on jit's reference interpreter) and on the cuda backend (numba-cuda's simulator in CI);
special values, the floats around each integer type's bounds, random values of several
magnitudes and random bit patterns. Other conversions keep NumPy's results.
"""
import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp
from functrans import lax
from functrans.core.devices import available_backends
from functrans.transforms.jit.executable import executable_for
from functrans.transforms.lowering.compile import Kernel
from functrans.transforms.native.program import NativeProgram

INTS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
FLOATS = ["float16", "float32", "float64"]
try:
    import ml_dtypes
    FLOATS.insert(1, "bfloat16")
except ImportError:  # optional: the narrow floats need it
    ml_dtypes = None


def _dtype(name):
    return np.dtype(getattr(ml_dtypes, name) if name == "bfloat16" else name)


def _reference(x, dtype):
    """NaN -> 0, infinities and values >= the type's max -> max, <= its min -> min, the rest
    truncated toward zero (Python's int() of a float, exact)."""
    info = np.iinfo(dtype)
    with np.errstate(invalid="ignore"):  # signaling NaNs among the random bit patterns
        v = np.asarray(x).astype(np.float64)  # exact for every narrower float
    whole = np.array([int(f) for f in np.where(np.isfinite(v), v, 0.0).ravel()],
                     dtype=object).reshape(v.shape)
    out = np.where(np.isnan(v), 0,
                   np.where((v == np.inf) | (whole >= info.max), info.max,
                            np.where((v == -np.inf) | (whole <= info.min), info.min, whole)))
    return out.astype(dtype)


def _values(src, seed=0):
    """Special values first (the small-array paths see them), then each integer type's
    bounds and their neighbours in ``src``, then random values: uniform at several
    magnitudes, and random bit patterns (NaNs, infinities, huge and tiny values). An odd
    count: vector loops and their scalar remainders both run."""
    d = _dtype(src)
    special = [np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 0.5, -0.5, 0.999, -0.999, 1.0,
               -1.0, 2.7, -2.7, 1e20, -1e20, 1e300, -1e300, 5e-324]
    bounds = []
    for name in INTS:
        info = np.iinfo(name)
        for b in (float(info.min), float(info.max), float(info.max) + 1.0):
            bounds += [b - 1.0, b - 0.5, b, b + 0.5, b + 1.0]
            bounds += [b * (1 + s * 2.0 ** -k) for s in (1, -1) for k in (4, 8, 11, 24, 53)]
    rng = np.random.default_rng(seed)
    with np.errstate(over="ignore", invalid="ignore"):
        near = np.array(bounds).astype(d)
        if d.kind == "f":  # the floats next to each bound, in src's own precision
            near = np.concatenate([near, np.nextafter(near, d.type(np.inf)),
                                   np.nextafter(near, d.type(-np.inf))])
        uniform = [rng.uniform(-s, s, 101) for s in (3e2, 7e4, 5e9, 3e19)]
        x = np.concatenate([np.array(special).astype(d), near] +
                           [u.astype(d) for u in uniform])
        bits = rng.integers(0, 2 ** (8 * d.itemsize), 301, dtype=f"u{d.itemsize}").view(d)
        x = np.concatenate([x, bits])
    return x[: x.size - 1 + x.size % 2]


def _assert_converted(got, x, dtype, what):
    want = _reference(x, dtype)
    got = np.asarray(got)
    assert got.dtype == want.dtype, (what, got.dtype)
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, (f"{what}: {x[bad[0]]!r} -> {got.flat[bad[0]]}, want "
                           f"{want.flat[bad[0]]} ({bad.size} wrong)")


def _all_conversions(v):
    out = {}
    for d in INTS:
        out[d] = lax.convert_element_type(v, d)
        out[f"astype {d}"] = fnp.astype(v * 1, d)  # fused after another elementwise step
        out[f"small {d}"] = lax.convert_element_type(v[:9], d)  # arrays of <= 16: unrolled
    return out


def _check_all(got, x, what):
    for d in INTS:
        _assert_converted(got[d], x, d, f"{what} {d}")
        _assert_converted(got[f"astype {d}"], x, d, f"{what} astype {d}")
        _assert_converted(got[f"small {d}"], x[:9], d, f"{what} small {d}")


@pytest.mark.parametrize("src", FLOATS)
def test_reference_is_the_rule(src):
    """The oracle itself, on the cases the rule names."""
    with np.errstate(over="ignore"):  # 1e20 is inf in float16
        x = np.array([np.nan, np.inf, -np.inf, 1e20, -1e20, 2.7, -2.7]).astype(_dtype(src))
    assert _reference(x, "int32").tolist() == [0, 2 ** 31 - 1, -2 ** 31, 2 ** 31 - 1,
                                               -2 ** 31, 2, -2]
    assert _reference(x, "uint8").tolist() == [0, 255, 0, 255, 0, 2, 0]


@pytest.mark.parametrize("src", FLOATS)
def test_eager(src):
    x = _values(src)
    with ft.config.override(enable_x64=True):
        _check_all(_all_conversions(fnp.asarray(x)), x, f"eager {src} ->")
        for d in INTS:  # NumPy scalars too
            for v in x[:19]:
                _assert_converted(lax.convert_element_type(v, d), np.asarray(v), d, f"{v!r}")


@pytest.mark.parametrize("codegen", ["native", "numba"])
@pytest.mark.parametrize("src", FLOATS)
def test_jit(src, codegen):
    x = _values(src, seed=1)
    with ft.config.override(enable_x64=True, jit_codegen=codegen):
        jf = ft.jit(_all_conversions)
        _check_all(jf(x), x, f"jit ({codegen}) {src} ->")
        if src in ("float32", "float64"):  # kernels (narrow floats: the interpreter)
            kind = NativeProgram if codegen == "native" else Kernel
            assert type(executable_for(jf.lower(x).jaxpr, jf.name)) is kind


@pytest.mark.parametrize("codegen", ["native", "numba"])
def test_complex_sources_convert_their_real_part(codegen):
    x = _values("float64", seed=2)
    z = x.astype(np.complex128)
    z.imag = x[::-1]
    def f(v):
        return {d: lax.convert_element_type(v, d) for d in ("int8", "int64", "uint32")}

    with ft.config.override(enable_x64=True, jit_codegen=codegen):
        for what, got in (("eager", f(z)), (f"jit ({codegen})", ft.jit(f)(z))):
            for d, r in got.items():
                _assert_converted(r, x, d, f"{what} complex128 -> {d}")


@pytest.mark.skipif("cuda" not in available_backends(), reason="numba-cuda is not installed")
@pytest.mark.parametrize("src", ["float32", "float64"])
def test_cuda(src):
    """The simulator runs a Python thread per element: the special values and the bounds
    of the 32-bit types only."""
    x = _values(src)
    x = np.concatenate([x[:19], np.array([-2.0 ** 31 - 1, -2.0 ** 31, 2.0 ** 31 - 1, 2.0 ** 31,
                                          2.0 ** 32 - 1, 2.0 ** 32, 2.0 ** 63]).astype(src)])
    with ft.config.override(enable_x64=True):
        got = ft.jit(lambda v: {d: lax.convert_element_type(v, d) for d in INTS},
                     backend="cuda")(x)
    for d in INTS:
        _assert_converted(got[d], x, d, f"cuda {src} -> {d}")


@pytest.mark.parametrize("codegen", ["eager", "native", "numba"])
def test_other_conversions_keep_numpys_results(codegen):
    """Integers to integers wrap around (two's complement), booleans are 0/1, floats to
    bool are x != 0 (NaN is True), integers to floats round to nearest."""
    rng = np.random.default_rng(3)
    ints = {d: rng.integers(np.iinfo(d).min, np.iinfo(d).max, 257, dtype=d, endpoint=True)
            for d in INTS}
    flags = rng.integers(0, 2, 257).astype(bool)
    floats = _values("float64", seed=4)[:257]
    cases = [(x, d) for x in ints.values() for d in INTS + ("bool", "float32", "float64")]
    cases += [(flags, d) for d in INTS + ("float32",)] + [(floats, "bool")]

    def f(*xs):
        return [lax.convert_element_type(x, d) for x, (_, d) in zip(xs, cases)]

    with ft.config.override(enable_x64=True, jit_codegen="native" if codegen == "eager"
                            else codegen):
        got = (f if codegen == "eager" else ft.jit(f))(*[x for x, _ in cases])
    for g, (x, d) in zip(got, cases):
        np.testing.assert_array_equal(np.asarray(g), x.astype(d), err_msg=f"{x.dtype} -> {d}")
        assert np.asarray(g).dtype == np.dtype(d)
