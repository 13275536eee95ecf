"""functrans.random: bit-for-bit against JAX's outputs (fixtures), statistics, transformations.

Golden values come from ``tests/fixtures/make_random_golden.py`` run with JAX (x64 enabled).
Cases marked ``exact`` must match bit for bit; ``close`` cases (samplers that apply ``log``,
``tan``, ``exp``, ... whose last bits depend on the math library) must match within a few ulps,
and integer outputs of ``close`` cases exactly.

Statistical tests use fixed keys, so they are deterministic; each threshold is what a correct
generator would fail with probability ~1e-4 or less for a random key, so a failure means a bug.
"""
import collections
import json
import math
import os
from fractions import Fraction

import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp
from functrans import lax, random
from functrans.core.eval import eval_jaxpr

stats = pytest.importorskip("scipy.stats")

FIXTURE = os.path.join(os.path.dirname(__file__), "fixtures", "random_golden.npz")
_DATA = np.load(FIXTURE)
CASES = json.loads(str(_DATA["manifest"]))

# Allowed error of ``close`` float cases, in units of eps(dtype) * max(|expected|, 1).
# float64 log/log1p in XLA is less accurate than libm (up to ~128 ulp near 0), hence the
# larger float64 bounds; float16/float32 results stay within a few ulps.
CLOSE_TOL = {"float16": 16, "float32": 16}
CLOSE_TOL64 = {"exponential": 256, "laplace": 256, "logistic": 256, "weibull_min": 256,
               "gumbel": 512, "normal": 64, "truncated_normal": 64, "wald": 64}
# Minimum fraction of bit-identical elements per (function, dtype) among ``close`` cases:
# normal reproduces XLA's erf_inv, so nearly all its samples are bit-identical.
MIN_EXACT = {("normal", "float16"): 0.99, ("normal", "float32"): 0.9,
             ("normal", "float64"): 0.8, ("truncated_normal", "float32"): 0.9,
             ("truncated_normal", "float64"): 0.8}


def _decode(v):
    if isinstance(v, dict):
        if "tuple" in v:
            return tuple(_decode(x) for x in v["tuple"])
        if "scalar" in v:
            return np.dtype(v["dtype"]).type(v["scalar"])
        if "array" in v:
            return fnp.asarray(_DATA[v["array"]])
    return v


def _run_case(i):
    c = CASES[i]
    fn = getattr(random, c["fn"])
    args = [_decode(a) for a in c["args"]]
    kwargs = {k: _decode(v) for k, v in c["kwargs"].items()}
    if c["key"] is None:  # (the fixtures hold key_data(jax.random.key(seed)) for `key`)
        return np.asarray(random.key_data(fn(*args, **kwargs)))
    return np.asarray(fn(fnp.asarray(np.array(c["key"], np.uint32)), *args, **kwargs))


def _err_in_eps(got, want):
    got64, want64 = got.astype(np.float64), want.astype(np.float64)
    scale = np.finfo(want.dtype).eps * np.maximum(np.abs(want64), 1.0)
    with np.errstate(invalid="ignore"):
        return np.where(got64 == want64, 0.0, np.abs(got64 - want64) / scale)


def _check_case(i):
    """Returns (#elements, #bit-identical elements) after asserting the case's contract."""
    c = CASES[i]
    want = _DATA[f"out{i}"]
    got = _run_case(i)
    where = f"case {i}: {c['fn']}{tuple(c['args'])} {c['kwargs']} key={c['key']}"
    assert got.dtype == want.dtype, f"{where}: dtype {got.dtype} != {want.dtype}"
    assert got.shape == want.shape, f"{where}: shape {got.shape} != {want.shape}"
    if want.dtype.kind != "f":
        np.testing.assert_array_equal(got, want, err_msg=where)
        return want.size, want.size
    same = (got == want) | (np.isnan(got) & np.isnan(want))
    if c["check"] == "exact":
        bad = np.flatnonzero(~same)
        assert not bad.size, f"{where}: {bad.size} elements differ, first at {bad[0]}: " \
                             f"{got.flat[bad[0]]!r} != {want.flat[bad[0]]!r}"
    else:
        assert np.array_equal(np.isfinite(got), np.isfinite(want)), where
        tol = CLOSE_TOL.get(want.dtype.name) or CLOSE_TOL64.get(c["fn"], 16)
        err = _err_in_eps(got[np.isfinite(want)], want[np.isfinite(want)])
        assert err.size == 0 or err.max() <= tol, f"{where}: error {err.max():.1f} eps > {tol}"
    return want.size, int(same.sum())


_BY_FN = collections.defaultdict(list)
for _i, _c in enumerate(CASES):
    _BY_FN[_c["fn"]].append(_i)


@pytest.mark.parametrize("fn", sorted(_BY_FN))
def test_matches_jax(fn):
    counts = collections.defaultdict(lambda: [0, 0])
    for i in _BY_FN[fn]:
        n, same = _check_case(i)
        dt = _DATA[f"out{i}"].dtype.name
        counts[dt][0] += n
        counts[dt][1] += same
    for dt, (n, same) in counts.items():
        if n and (fn, dt) in MIN_EXACT:
            assert same / n >= MIN_EXACT[fn, dt], f"{fn} {dt}: only {same}/{n} bit-identical"


def test_fixture_covers_the_api():
    covered = {c["fn"] for c in CASES}
    # The loop and matrix samplers draw the right distributions from different streams than
    # JAX; tests/test_random_samplers.py checks them statistically instead.
    not_bitwise = {"gamma", "loggamma", "beta", "dirichlet", "chisquare", "t", "f", "poisson",
                   "binomial", "multinomial", "multivariate_normal", "orthogonal",
                   "generalized_normal", "ball"}
    missing = (set(random.__all__) - covered - not_bitwise
               - {"threefry2x32", "key_impl", "wrap_key_data"})
    assert not missing, f"no golden cases for {sorted(missing)}"
    dtypes = {_DATA[f"out{i}"].dtype.name for i in _BY_FN["uniform"]}
    assert {"float16", "float32", "float64"} <= dtypes
    int_dtypes = {_DATA[f"out{i}"].dtype.name for i in _BY_FN["randint"]}
    assert len(int_dtypes) == 8


def test_exact_functions_are_exact():
    # The functions documented as bit-identical have only exact cases in the fixtures.
    exact = {"PRNGKey", "key", "split", "fold_in", "bits", "uniform", "randint", "bernoulli",
             "rademacher", "permutation", "choice"}
    assert all(CASES[i]["check"] == "exact" for fn in exact for i in _BY_FN[fn])


# ---- keys ------------------------------------------------------------------------------------------
def test_key_forms_agree():
    for seed in (0, 7, 2**40 + 3, -5):
        k = random.key(seed)
        assert k.dtype == ft.dtypes.THREEFRY_KEY and k.shape == () and str(k.dtype) == "key<fry>"
        np.testing.assert_array_equal(random.key_data(k), random.PRNGKey(seed))
        assert bool(random.wrap_key_data(random.key_data(k)) == k)
        raw = random.PRNGKey(seed)
        assert raw.dtype == np.uint32 and raw.shape == (2,)
    assert random.key_impl(random.key(0)) == "threefry2x32"
    batch = random.split(random.key(0), (3, 2))
    assert batch.shape == (3, 2) and random.key_data(batch).shape == (3, 2, 2)
    np.testing.assert_array_equal(random.key_data(batch),
                                  random.split(random.PRNGKey(0), (3, 2)))


@pytest.mark.parametrize("make_key", [random.key, random.PRNGKey])
def test_split_equals_fold_in_of_index(make_key):
    # A consequence of JAX's partitionable threefry: split(key)[i] == fold_in(key, i).
    k = make_key(123)
    keys = random.split(k, 5)
    for i in range(5):
        np.testing.assert_array_equal(random.key_data(keys[i]),
                                      random.key_data(random.fold_in(k, i)))


def test_typed_keys_behave_as_arrays_of_keys():
    ks = random.split(random.key(1), 6)
    assert isinstance(ks, ft.Array) and len(ks) == 6 and ks.ndim == 1
    assert ks.reshape(2, 3).shape == (2, 3) and ks.reshape(2, 3).T.shape == (3, 2)
    assert ks[1:4].shape == (3,) and ks[None].shape == (1, 6) and ks[..., None].shape == (6, 1)
    np.testing.assert_array_equal(random.key_data(ks.reshape(2, 3)[1, 0]),
                                  random.key_data(ks[3]))
    assert [bool(a == b) for a, b in zip(ks, ks)] == [True] * 6
    np.testing.assert_array_equal(ks == ks[0], [True] + [False] * 5)
    assert "dtype=key<fry>" in repr(ks[0]) and "overlaying" in repr(ks[0])
    with pytest.raises(TypeError, match="arithmetic on typed PRNG keys"):
        ks + 1
    with pytest.raises(TypeError, match="key_data"):
        np.asarray(ks)
    with pytest.raises(TypeError, match="already a typed key"):
        random.wrap_key_data(ks)
    with pytest.raises(ValueError, match="accepts a single key.*shape \\(6,\\)"):
        random.normal(ks)


def test_typed_keys_through_transformations():
    k = random.key(7)
    ks = random.split(k, 4)
    # jit returns typed keys; vmap maps over the key dimensions; scan slices them.
    out = ft.jit(lambda k: random.split(k, 3))(k)
    assert out.shape == (3,) and out.dtype == k.dtype
    np.testing.assert_array_equal(random.key_data(out), random.key_data(random.split(k, 3)))
    draws = ft.vmap(lambda k: random.normal(k, (2,)))(ks)
    np.testing.assert_array_equal(draws, np.stack([random.normal(q, (2,)) for q in ks]))
    children = ft.vmap(random.split)(ks)
    assert children.shape == (4, 2)
    total, _ = lax.scan(lambda c, k: (c + random.uniform(k), None), 0.0, ks)
    np.testing.assert_allclose(total, sum(float(random.uniform(q)) for q in ks), rtol=1e-15)
    # Keys are constants to grad; eval_shape sees their key type.
    g = ft.grad(lambda x, k: x * random.normal(k))(1.0, k)
    np.testing.assert_array_equal(g, random.normal(k))
    shape = ft.eval_shape(lambda: random.split(random.key(0), 5))
    assert shape.shape == (5,) and shape.dtype == k.dtype
    assert ft.typeof(k).dtype == k.dtype and ft.typeof(ks).shape == (4,)
    assert ft.dtypes.issubdtype(k.dtype, ft.dtypes.prng_key)
    assert fnp.issubdtype(k.dtype, ft.dtypes.extended)
    assert not fnp.issubdtype(random.PRNGKey(0).dtype, ft.dtypes.prng_key)


def test_keys_in_pytrees():
    # Raw keys are uint32 arrays; typed key arrays are leaves of the public tree functions,
    # as in JAX (transformations carry their uint32 data: functrans.core.tree).
    keys = {"a": random.PRNGKey(0), "b": [random.PRNGKey(1), random.PRNGKey(2)]}
    leaves = ft.tree_util.tree_leaves(keys)
    assert len(leaves) == 3 and all(leaf.shape == (2,) for leaf in leaves)
    subkeys = ft.tree_util.tree_map(lambda k: random.split(k)[0], keys)
    np.testing.assert_array_equal(subkeys["b"][1], random.split(random.PRNGKey(2))[0])
    typed = {"a": random.key(0), "b": [random.split(random.key(1), 3)]}
    leaves = ft.tree_util.tree_leaves(typed)
    assert [type(x) for x in leaves] == [random.KeyArray] * 2 and leaves[1].shape == (3,)
    draws = ft.tree_util.tree_map(lambda k: random.uniform(k, (2,)), {"a": typed["a"]})
    np.testing.assert_array_equal(draws["a"], random.uniform(random.PRNGKey(0), (2,)))
    assert ft.tree_util.tree_map(lambda k: k.dtype, typed) == {"a": k_dtype(),
                                                               "b": [k_dtype()]}
    assert ft.tree.structure(typed) == ft.tree.structure({"a": 0, "b": [0]})
    paths = [ft.tree_util.keystr(p) for p, _ in ft.tree_util.tree_leaves_with_path(typed)]
    assert paths == ["['a']", "['b'][0]"]
    # ... and transformations take and return them in pytrees.
    out = ft.jit(lambda t: ft.tree.map(lambda k: random.split(k), t))(
        {"a": random.key(0), "b": [random.key(1)]})
    assert out["a"].shape == (2,) and out["b"][0].shape == (2,)
    np.testing.assert_array_equal(random.key_data(out["b"][0]),
                                  random.split(random.PRNGKey(1)))


def k_dtype():
    return random.key(0).dtype


# ---- the lax composite (what transformations see) vs eager evaluation ----------------------------
SAMPLERS = {
    "bits32": lambda k: random.bits(k, (3, 5), "uint32"),
    "bits8": lambda k: random.bits(k, (7,), "uint8"),
    "bits64": lambda k: random.bits(k, (7,)),
    "split": lambda k: random.split(k, (2, 3)),
    "fold_in": lambda k: random.fold_in(k, 2**31 + 5),
    "uniform16": lambda k: random.uniform(k, (9,), "float16", -2.0, 3.0),
    "uniform32": lambda k: random.uniform(k, (2, 4), "float32", -1.5, 7.25),
    "uniform64": lambda k: random.uniform(k, (9,), "float64", fnp.arange(9.0), 10.0),
    "normal32": lambda k: random.normal(k, (11,), "float32"),
    "normal64": lambda k: random.normal(k, (11,)),
    "truncated_normal": lambda k: random.truncated_normal(k, -1.0, 2.0, (7,), "float32"),
    "randint8": lambda k: random.randint(k, (9,), -100, 300, "int8"),
    "randint64": lambda k: random.randint(k, (9,), -(2**62), 2**62),
    "bernoulli": lambda k: random.bernoulli(k, 0.3, (9,)),
    "permutation": lambda k: random.permutation(k, fnp.arange(12).reshape(3, 4), 1),
    "choice": lambda k: random.choice(k, 10, (4,), replace=False),
    "categorical": lambda k: random.categorical(k, fnp.zeros((2, 5)), shape=(3, 2)),
    "gumbel_highest": lambda k: random.gumbel(k, (9,), "float32", "highest"),
    "exponential": lambda k: random.exponential(k, (5,), "float32"),
}


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_make_jaxpr_matches_eager(name):
    f = SAMPLERS[name]
    key = random.PRNGKey(2024)
    jaxpr = ft.make_jaxpr(f)(key)
    ft.check_jaxpr(jaxpr)
    traced = np.asarray(eval_jaxpr(jaxpr, key)[0])
    eager = np.asarray(f(key))
    assert traced.dtype == eager.dtype
    np.testing.assert_array_equal(traced, eager)


def test_composite_hash_matches_kernel_across_32_bit_counter_boundary():
    from functrans.random._kernels import hash_counters
    rng = np.random.default_rng(0)
    for _ in range(5):
        k = rng.integers(0, 2**32, 2, dtype=np.uint32)
        start = int(rng.integers(0, 2**40))
        counters = np.arange(start, start + 64, dtype=np.uint64)
        hi = (counters >> np.uint64(32)).astype(np.uint32)
        lo = counters.astype(np.uint32)
        a, b = random.threefry2x32(k[0], k[1], fnp.asarray(hi), fnp.asarray(lo))
        c, d = hash_counters(k, 64, offset=start)
        np.testing.assert_array_equal(a, c)
        np.testing.assert_array_equal(b, d)
    crossing = hash_counters(np.array([1, 2], np.uint32), 2, offset=2**32 - 1)
    hi, lo = fnp.asarray(np.array([0, 1], np.uint32)), fnp.asarray(np.array([2**32 - 1, 0],
                                                                           np.uint32))
    a, b = random.threefry2x32(np.uint32(1), np.uint32(2), hi, lo)
    np.testing.assert_array_equal(a, crossing[0])
    np.testing.assert_array_equal(b, crossing[1])


def test_vmap_over_keys_matches_loop():
    keys = random.split(random.PRNGKey(5), 4)
    for f in (SAMPLERS["uniform32"], SAMPLERS["normal32"], SAMPLERS["permutation"]):
        batched = np.asarray(ft.vmap(f)(keys))
        looped = np.stack([np.asarray(f(k)) for k in keys])
        np.testing.assert_array_equal(batched, looped)
    folded = ft.vmap(random.fold_in)(keys, fnp.arange(4, dtype="uint32"))
    np.testing.assert_array_equal(folded, np.stack([random.fold_in(k, i)
                                                    for i, k in enumerate(keys)]))


def test_jit_matches_eager():
    key = random.PRNGKey(9)
    for name in ("bits32", "split", "uniform32", "randint64"):  # integer/bit work: exact
        f = SAMPLERS[name]
        np.testing.assert_array_equal(ft.jit(f)(key), f(key))
    # normal goes through log/erf_inv: compiled kernels use SIMD math (at most 4 ulp from
    # the correctly rounded value), NumPy eager its own libm, so allow 8 float32 ulp.
    f = SAMPLERS["normal32"]
    np.testing.assert_allclose(ft.jit(f)(key), f(key), rtol=8 * np.finfo(np.float32).eps,
                               atol=8 * np.finfo(np.float32).eps)


def test_seed_can_be_traced():
    f = lambda s: random.uniform(random.PRNGKey(s), (3,))
    for seed in (np.int64(-3), np.int64(2**40 + 9), np.uint32(7), np.int8(-1)):
        jaxpr = ft.make_jaxpr(f)(seed)
        np.testing.assert_array_equal(eval_jaxpr(jaxpr, seed)[0], f(seed))


def test_gradients_through_parameters():
    key = random.key(3)
    u = np.asarray(random.uniform(key, (6,), "float32"))
    # uniform = minval + u * (maxval - minval): d/dmaxval sum = sum(u).
    g = ft.grad(lambda b: fnp.sum(random.uniform(key, (6,), "float32", 0.0, b)))(np.float32(2.0))
    np.testing.assert_allclose(g, u.sum(), rtol=1e-6)
    # truncated_normal w.r.t. its lower bound: compare with central differences.
    f = lambda a: fnp.sum(random.truncated_normal(key, a, 2.0, (6,)))
    h = 1e-6
    fd = (float(f(-1.0 + h)) - float(f(-1.0 - h))) / (2 * h)
    np.testing.assert_allclose(float(ft.grad(f)(-1.0)), fd, rtol=1e-5)


def test_64_bit_disabled_defaults_match_jax_32_bit_mode():
    # Without x64 JAX samples float32/int32/uint32 by default: the same bits as explicit dtypes.
    key = random.key(42)
    want_u = np.asarray(random.uniform(key, (5,), "float32"))
    want_i = np.asarray(random.randint(key, (5,), 0, 100, "int32"))
    want_b = np.asarray(random.bits(key, (5,), "uint32"))
    with ft.config.override(enable_x64=False):
        np.testing.assert_array_equal(random.uniform(key, (5,)), want_u)
        np.testing.assert_array_equal(random.randint(key, (5,), 0, 100), want_i)
        np.testing.assert_array_equal(random.bits(key, (5,)), want_b)
        assert random.normal(key, (3,)).dtype == np.float32


# ---- the fused multiply-add emulation against exact rational arithmetic --------------------------
def _fma_exact(x, y, z, dtype):
    exact = Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z))
    near = dtype.type(float(exact))
    cands = [np.nextafter(near, dtype.type(-np.inf)), near, np.nextafter(near, dtype.type(np.inf))]
    # nearest, ties to even significand
    uint = np.dtype(f"u{dtype.itemsize}")
    return min(cands, key=lambda v: (abs(Fraction(float(v)) - exact),
                                     int(np.asarray(v).view(uint)) & 1))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_fma_is_correctly_rounded(dtype):
    from functrans.random._xla_math import fma
    dtype = np.dtype(dtype)
    rng = np.random.default_rng(1)
    n = 1500
    nmant = np.finfo(dtype).nmant
    x = (rng.integers(0, 2**nmant, n) * 2.0 ** -nmant).astype(dtype)
    y = (rng.standard_normal(n) * 10.0 ** rng.integers(-6, 6, n)).astype(dtype)
    z = (rng.standard_normal(n) * 10.0 ** rng.integers(-6, 6, n)).astype(dtype)
    z[: n // 3] = (-(x[: n // 3].astype(np.float64) * y[: n // 3])).astype(dtype)  # cancellation
    got = np.asarray(fma(fnp.asarray(x), fnp.asarray(y), fnp.asarray(z), dtype))
    want = np.array([_fma_exact(a, b, c, dtype) for a, b, c in zip(x, y, z)], dtype)
    np.testing.assert_array_equal(got, want)


# ---- statistics -------------------------------------------------------------------------------------
N = 1_000_000
P_MIN = 1e-4  # KS / chi-square p-values below this mean a bug (fixed keys: no flakiness)


def _moments_ok(x, mean, var, sigmas=5.0):
    n = x.size
    assert abs(x.mean() - mean) < sigmas * math.sqrt(var / n), (x.mean(), mean)
    # Var of the sample variance is about (mu4 - var^2) / n; 3 var^2 covers these distributions.
    assert abs(x.var() - var) < sigmas * math.sqrt(3 * var**2 / n), (x.var(), var)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_uniform_statistics(dtype):
    x = np.asarray(random.uniform(random.key(11), (N,), dtype), np.float64)
    assert x.min() >= 0.0 and x.max() < 1.0
    _moments_ok(x, 0.5, 1 / 12)
    assert stats.kstest(x, "uniform").pvalue > P_MIN
    y = np.asarray(random.uniform(random.key(12), (N // 10,), dtype, -3.0, 5.0), np.float64)
    assert y.min() >= -3.0 and y.max() < 5.0
    assert stats.kstest(y, stats.uniform(-3.0, 8.0).cdf).pvalue > P_MIN


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_normal_statistics(dtype):
    x = np.asarray(random.normal(random.key(13), (N,), dtype), np.float64)
    _moments_ok(x, 0.0, 1.0)
    assert abs(stats.skew(x)) < 5 * math.sqrt(6 / N)
    assert abs(stats.kurtosis(x)) < 5 * math.sqrt(24 / N)
    assert stats.kstest(x, "norm").pvalue > P_MIN


@pytest.mark.parametrize("name,dist", [
    ("exponential", stats.expon), ("laplace", stats.laplace), ("logistic", stats.logistic),
    ("cauchy", stats.cauchy), ("gumbel", stats.gumbel_r)])
def test_inverse_cdf_samplers_statistics(name, dist):
    x = np.asarray(getattr(random, name)(random.key(14), (N // 5,), "float32"), np.float64)
    assert stats.kstest(x, dist.cdf).pvalue > P_MIN


def test_truncated_normal_statistics():
    x = np.asarray(random.truncated_normal(random.key(15), -0.5, 2.0, (N // 5,)))
    assert x.min() > -0.5 and x.max() < 2.0
    assert stats.kstest(x, stats.truncnorm(-0.5, 2.0).cdf).pvalue > P_MIN


def test_split_keys_are_independent():
    # Sibling keys, fold_in streams and consecutive seeds: pairwise correlations near zero.
    n = 200_000
    bound = 5 / math.sqrt(n)
    k1, k2 = random.split(random.key(16))
    streams = [random.uniform(k1, (n,)), random.uniform(k2, (n,)),
               random.uniform(random.fold_in(k1, 0), (n,)),
               random.uniform(random.fold_in(k1, 1), (n,)),
               random.uniform(random.key(1000), (n,)), random.uniform(random.key(1001), (n,))]
    xs = np.stack([np.asarray(s) for s in streams])
    corr = np.corrcoef(xs)
    off_diag = corr[~np.eye(len(xs), dtype=bool)]
    assert np.abs(off_diag).max() < bound, corr
    # Neighbouring elements of one stream are uncorrelated too.
    assert abs(np.corrcoef(xs[0, :-1], xs[0, 1:])[0, 1]) < bound


def test_bits_are_balanced():
    b = np.asarray(random.bits(random.key(17), (N // 4,), "uint32"))
    ones = np.unpackbits(b.view(np.uint8)).reshape(-1, 32).mean(axis=0)
    assert np.abs(ones - 0.5).max() < 5 * math.sqrt(0.25 / b.size)


def test_bernoulli_frequency():
    for p in (0.5, 0.3, 0.01):
        x = np.asarray(random.bernoulli(random.key(18), p, (N,)))
        assert abs(x.mean() - p) < 5 * math.sqrt(p * (1 - p) / N)


def test_categorical_frequencies():
    probs = np.array([0.1, 0.2, 0.3, 0.4])
    n = 200_000
    draws = np.asarray(random.categorical(random.key(19), fnp.log(probs), shape=(n,)))
    counts = np.bincount(draws, minlength=4)
    assert stats.chisquare(counts, probs * n).pvalue > P_MIN


@pytest.mark.parametrize("span", [10, 7, 1000])
def test_randint_is_uniform(span):
    n = 200_000
    x = np.asarray(random.randint(random.key(20), (n,), -3, span - 3))
    assert x.min() >= -3 and x.max() < span - 3
    counts = np.bincount(x + 3, minlength=span)
    assert stats.chisquare(counts).pvalue > P_MIN


def test_permutation_positions_are_uniform():
    n, m = 20_000, 5
    perms = np.asarray(random.permutation(random.key(21), fnp.tile(fnp.arange(m), (n, 1)), 1,
                                          independent=True))
    assert (np.sort(perms, axis=1) == np.arange(m)).all()
    for pos in range(m):
        assert stats.chisquare(np.bincount(perms[:, pos], minlength=m)).pvalue > P_MIN


def test_choice_with_p_frequencies():
    p = np.array([0.5, 0.1, 0.4])
    n = 100_000
    x = np.asarray(random.choice(random.key(22), 3, (n,), p=fnp.asarray(p)))
    assert stats.chisquare(np.bincount(x, minlength=3), p * n).pvalue > P_MIN


def test_rademacher_balance():
    x = np.asarray(random.rademacher(random.key(23), (N,)))
    assert set(np.unique(x)) == {-1, 1}
    assert abs(x.mean()) < 5 / math.sqrt(N)


# ---- argument errors --------------------------------------------------------------------------------
@pytest.mark.parametrize("bad,exc,match", [
    (np.zeros(3, np.uint32), TypeError, "shape \\(2,\\)"),
    (np.zeros(2, np.int32), TypeError, "dtype uint32"),
    (np.zeros(2, np.float32), TypeError, "dtype uint32"),
    (np.zeros((3, 2), np.uint32), ValueError, "single key"),
    ([0, 0], TypeError, "key must be"),
    (5, TypeError, "key must be"),
])
def test_bad_keys(bad, exc, match):
    for f in (lambda k: random.uniform(k), lambda k: random.split(k),
              lambda k: random.fold_in(k, 1), lambda k: random.randint(k, (2,), 0, 3)):
        with pytest.raises(exc, match=match):
            f(bad)


def test_bad_seeds():
    with pytest.raises(OverflowError, match="seed"):
        random.PRNGKey(2**63)
    with pytest.raises(TypeError, match="integer"):
        random.PRNGKey(1.5)
    with pytest.raises(TypeError, match="scalar seed"):
        random.PRNGKey(np.array([1, 2]))
    with pytest.raises(ValueError, match="threefry2x32"):
        random.key(0, impl="rbg")


def test_bad_shapes_and_dtypes():
    k = random.key(0)
    with pytest.raises(ValueError, match="non-negative"):
        random.uniform(k, (-1,))
    with pytest.raises(TypeError, match="shape must be a tuple of ints"):
        random.normal(k, (2.5,))
    with pytest.raises(ValueError, match="num"):
        random.split(k, -2)
    with pytest.raises(ValueError, match="float dtype"):
        random.uniform(k, (2,), "int32")
    with pytest.raises(ValueError, match="unsigned"):
        random.bits(k, (2,), "int32")
    with pytest.raises(TypeError, match="integer dtypes"):
        random.randint(k, (2,), 0, 5, "float32")
    with pytest.raises(TypeError, match="unsupported dtype|does not support"):
        random.normal(k, (2,), np.clongdouble)
    with pytest.raises(ValueError, match="minval of shape \\(4,\\)"):
        random.uniform(k, (3,), minval=fnp.zeros(4))
    with pytest.raises(ValueError, match="maxval of shape \\(2, 3\\)"):
        random.randint(k, (3,), 0, fnp.ones((2, 3), "int32"))
    with pytest.raises(TypeError, match="floating dtype"):
        random.bernoulli(k, 1)
    with pytest.raises(ValueError, match="mode"):
        random.gumbel(k, (2,), mode="bad")
    with pytest.raises(OverflowError, match="fold_in"):
        random.fold_in(k, -1)
    with pytest.raises(TypeError, match="scalar data"):
        random.fold_in(k, fnp.arange(2))
    with pytest.raises(OverflowError, match="maxval"):
        random.randint(k, (2,), 0, 2**64 - 1, "uint64")


def test_choice_and_permutation_errors():
    k = random.key(0)
    with pytest.raises(ValueError, match="larger sample"):
        random.choice(k, 5, (6,), replace=False)
    with pytest.raises(TypeError, match="sequence"):
        random.choice(k, 5, 3)
    with pytest.raises(ValueError, match="p must be"):
        random.choice(k, 5, (2,), p=fnp.ones(4) / 4)
    with pytest.raises(ValueError, match="greater than 0"):
        random.choice(k, 0, (2,))
    with pytest.raises(TypeError, match="integer or at least 1-dimensional"):
        random.permutation(k, 3.0)
    with pytest.raises(ValueError, match="exceed the number of categories"):
        random.categorical(k, fnp.zeros(3), shape=(4,), replace=False)
    with pytest.raises(TypeError, match="cannot safely cast"):
        random.pareto(k, fnp.ones(3), None, "float32")


def test_minval_above_maxval_gives_minval():
    k = random.key(0)
    np.testing.assert_array_equal(random.uniform(k, (4,), minval=2.0, maxval=1.0), 2.0)
    np.testing.assert_array_equal(random.randint(k, (4,), 9, 3), 9)
    # maxval above the dtype's range includes the maximum itself (as in JAX).
    x = np.asarray(random.randint(k, (4000,), 250, 1000, "uint8"))
    assert x.min() >= 250 and x.max() == 255


def test_complex_normal_has_unit_variance_split_between_parts():
    # As JAX: real and imaginary parts independent normals of variance 1/2. With 40000
    # samples the standard error of each moment below is about 0.005; 0.03 is 6 of them.
    z = np.asarray(random.normal(random.key(3), (40000,), "complex64"))
    assert z.dtype == np.complex64
    assert abs(np.mean(np.abs(z) ** 2) - 1) < 0.03
    assert abs(np.var(z.real) - 0.5) < 0.03 and abs(np.var(z.imag) - 0.5) < 0.03
    assert abs(np.mean(z.real * z.imag)) < 0.03
    # Compiled transcendentals differ from NumPy's by a few ulp.
    np.testing.assert_allclose(ft.jit(lambda k: random.normal(k, (5,), "complex128"))(
        random.key(4)), random.normal(random.key(4), (5,), "complex128"), rtol=1e-14)


def test_typed_keys_join_as_numpy_arrays_of_keys():
    k = random.key(4)
    ks = random.split(k, 3)
    assert fnp.asarray(k) is k
    stacked = fnp.stack([k, random.fold_in(k, 1)])
    assert stacked.shape == (2,) and stacked.dtype == k.dtype
    np.testing.assert_array_equal(random.key_data(stacked[1]),
                                  random.key_data(random.fold_in(k, 1)))
    joined = fnp.concatenate([ks, ks[:2]])
    assert joined.shape == (5,)
    np.testing.assert_array_equal(random.key_data(joined[3:]), random.key_data(ks[:2]))
    assert fnp.stack([ks, ks], axis=-1).shape == (3, 2)
    assert ft.jit(lambda k: fnp.stack([k, k]))(k).shape == (2,)
    with pytest.raises(TypeError, match="only be joined with other typed keys"):
        fnp.stack([k, fnp.zeros(2, "uint32")])
    with pytest.raises(ValueError, match="axis 2 is out of bounds"):
        fnp.stack([k, k], axis=2)


def test_typed_keys_are_chosen_and_compared_as_keys():
    ks = random.split(random.key(2), 3)
    picked = fnp.where(fnp.array([True, False, True]), ks, ks[::-1])
    np.testing.assert_array_equal(random.key_data(picked),
                                  random.key_data(ks)[[0, 1, 2]])  # the middle one is its own
    np.testing.assert_array_equal(random.key_data(lax.select(False, ks[0], ks[1])),
                                  random.key_data(ks[1]))
    assert fnp.where(fnp.array([[True], [False]]), ks[0], ks[1]).shape == (2, 1)
    assert bool(fnp.array_equal(ks, ks)) and not bool(fnp.array_equal(ks, ks[::-1]))
    assert not bool(fnp.array_equal(ks[0], ks[:1]))  # shapes differ
    chosen = ft.jit(lambda c, a, b: fnp.where(c, a, b))(fnp.array([False, True, True]),
                                                        ks, ks[::-1])
    np.testing.assert_array_equal(random.key_data(chosen)[0], random.key_data(ks[2]))
    with pytest.raises(TypeError, match="only be joined with other typed keys"):
        fnp.where(True, ks, fnp.zeros((3, 2), "uint32"))
    assert fnp.astype(ks, ks.dtype) is ks and ks.astype(ks.dtype) is ks
    with pytest.raises(TypeError, match="cannot convert typed PRNG keys"):
        fnp.astype(ks, "uint32")


def test_typed_keys_are_neither_complex_nor_real_arrays_of_numbers():
    # JAX 0.10.2: iscomplexobj(key) is False and isrealobj(key) True, eagerly and under jit
    # (diffrax asks it of every leaf of a Brownian path, whose key is a leaf).
    ks = random.split(random.key(3), 2)
    assert fnp.iscomplexobj(ks[0]) is False and fnp.isrealobj(ks) is True
    assert ft.jit(lambda k: fnp.zeros(()) if fnp.iscomplexobj(k) else fnp.ones(()))(ks) == 1


def test_enable_custom_prng_makes_prngkey_return_typed_keys():
    # JAX's flag: PRNGKey(seed) is then random.key(seed) (dtype key<fry>, the same bits), so
    # samples are unchanged; jit retraces when it flips (it is part of jit's cache key).
    make = ft.jit(lambda: random.PRNGKey(7))
    assert make().dtype == np.uint32 and not ft.enable_custom_prng.value
    with ft.enable_custom_prng():
        k = random.PRNGKey(42)
        assert k.shape == () and ft.dtypes.issubdtype(k.dtype, ft.dtypes.prng_key)
        np.testing.assert_array_equal(random.key_data(k), [0, 42])
        np.testing.assert_array_equal(random.uniform(k, (3,)),
                                      random.uniform(random.key(42), (3,)))
        assert random.split(k, 2).shape == (2,)
        assert ft.dtypes.issubdtype(make().dtype, ft.dtypes.prng_key)
    assert make().dtype == np.uint32
    with ft.config.override(enable_custom_prng=True):  # jax.config's spelling too
        assert random.PRNGKey(0).shape == ()
