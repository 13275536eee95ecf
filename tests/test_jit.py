"""jit(f) == f: every primitive compiled by the Numba lowering against eager evaluation, over
hypothesis shapes, dtypes and values (including inf/nan/-0 edge values).

Tolerances: integer and boolean results must match exactly. Float results may differ from
NumPy by a few ulp: kernels use SIMD math (glibc libmvec, at most 4 ulp, or our polynomials)
and reassociate reductions, so we allow 32 ulp (relative, plus an absolute floor near zero);
arithmetic that rounds exactly like NumPy (no FMA contraction) is compared exactly.

To keep the suite fast, each test compiles one kernel that evaluates many operations at once.

The tables run in both dtype modes (the ``x64`` fixture): with enable_x64 off, arguments are
passed as the caller has them (float64/int64 NumPy arrays, Python scalars) and must be converted
to the traced 32-bit dtypes before they reach a kernel, on the first call and on the fast path.
"""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import functrans as ft
import functrans.numpy as fnp
from functrans import lax

from primitive_coverage import assert_every_primitive_covered, primitives_in

FLOATS = ("float32", "float64")
INTS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")

UNARY_FLOAT = ["neg", "sign", "abs", "floor", "ceil", "round", "is_finite", "exp", "exp2", "log",
               "log1p", "expm1", "tanh", "logistic", "sin", "cos", "tan", "asin", "acos",
               "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "sqrt", "rsqrt", "cbrt",
               "square", "erf", "erfc", "erf_inv", "lgamma", "digamma"]
BINARY_FLOAT = ["add", "sub", "mul", "div", "rem", "pow", "max", "min", "atan2", "nextafter",
                "eq", "ne", "lt", "le", "gt", "ge"]
UNARY_INT = ["neg", "sign", "abs", "not", "population_count", "square"]
BINARY_INT = ["add", "sub", "mul", "div", "rem", "max", "min", "and", "or", "xor",
              "shift_left", "shift_right_arithmetic", "shift_right_logical", "eq", "ne", "lt",
              "le", "gt", "ge"]
EXACT_FLOAT = {"neg", "sign", "abs", "floor", "ceil", "round", "is_finite", "square", "add",
               "sub", "mul", "div", "rem", "max", "min", "nextafter", "eq", "ne", "lt", "le",
               "gt", "ge"}

_LAX = {"not": "bitwise_not", "and": "bitwise_and", "or": "bitwise_or", "xor": "bitwise_xor",
        "round": "round"}


def _op(name):
    return getattr(lax, _LAX.get(name, name))


def _all_ops(unary, binary):
    def f(x, y):
        out = {n: _op(n)(x) for n in unary}
        out.update({n: _op(n)(x, y) for n in binary})
        out["select"] = lax.select(x > y, x, y)
        out["pow3"] = lax.integer_pow(x, 3)
        return out
    return f


_KERNELS = {}


def _jitted(key, fn):
    key = (key, ft.config.enable_x64)
    if key not in _KERNELS:
        _KERNELS[key] = ft.jit(fn)
    return _KERNELS[key]


@pytest.fixture(params=[True, False], ids=["x64", "x32"])
def x64(request):
    """Runs a test with enable_x64 on (NumPy's dtypes) and off (JAX's 32-bit defaults)."""
    with ft.config.override(enable_x64=request.param):
        yield request.param


def _as_passed(a, x64):
    """What a caller passes: in 32-bit mode the NumPy value itself, 64-bit dtypes included
    (jit must canonicalize it); in 64-bit mode a functrans array."""
    return fnp.asarray(a) if x64 else np.asarray(a)


def _call_twice(jitted, *args):
    """The first call traces and compiles; the second takes the fast dispatch path. Both
    must agree."""
    first = jitted(*args)
    second = jitted(*args)
    for a, b in zip(ft.tree_util.tree_leaves(first), ft.tree_util.tree_leaves(second)):
        assert np.asarray(a).dtype == np.asarray(b).dtype
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    return first


# Results that are differences of products, equal to zero up to rounding in some entries:
# a complex product's real part is a difference of two real products (here a @ b minus its
# transpose, zero on the diagonal). Their rounding error is relative to the size of the
# products (an output's largest entry), not to the entry itself, so those entries are
# compared with an absolute 32 ulp of the largest one: results computed in another order
# (BLAS, loops, another backend) agree only to that.
PRODUCT_DIFFERENCES = {"vmap_complex_matmul"}


def _assert_close(name, got, want, exact):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (name, got.dtype, want.dtype)
    if got.dtype.kind == "c" and not exact:  # each part to 32 ulp
        _assert_close(f"{name} (real part)", got.real, want.real, exact)
        _assert_close(f"{name} (imaginary part)", got.imag, want.imag, exact)
        return
    if exact or got.dtype.kind != "f":
        np.testing.assert_array_equal(got, want, err_msg=name)
        return
    eps = np.finfo(got.dtype).eps
    g64, w64 = got.astype(np.float64), want.astype(np.float64)
    same = (got == want) | (np.isnan(got) & np.isnan(want))
    floor = np.finfo(got.dtype).tiny * 1e6
    if name.split(" (")[0] in PRODUCT_DIFFERENCES and np.isfinite(w64).any():
        floor = max(floor, float(np.max(np.abs(w64[np.isfinite(w64)]))))
    with np.errstate(all="ignore"):
        scale = np.maximum(np.abs(w64), floor)
        err = np.where(np.isfinite(w64) & np.isfinite(g64), np.abs(g64 - w64) / scale, np.inf)
    ok = same | (err <= 32 * eps)
    if not ok.all():
        k = np.argwhere(~ok)[0] if got.ndim else ()
        raise AssertionError(f"{name}: got {got[tuple(k)]!r}, want {want[tuple(k)]!r} "
                             f"({err[tuple(k)] / eps:.1f} ulp)")


def _float_values(dtype):
    edge = st.sampled_from([0.0, -0.0, 1.0, -1.0, 0.5, np.inf, -np.inf, np.nan, 1e-30, 30.0])
    body = st.floats(-20, 20, width=8 * np.dtype(dtype).itemsize)
    return st.one_of(body, edge)


# 32-bit mode only changes float64/int64/uint64 arguments: those are the ones run in it.
@pytest.mark.parametrize("dtype,x64", [(d, True) for d in FLOATS] + [("float64", False)])
@settings(max_examples=15)
@given(data=st.data())
def test_float_elementwise_ops(dtype, x64, data):
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=2, max_side=5))
    x = data.draw(hnp.arrays(dtype, shape, elements=_float_values(dtype)))
    y = data.draw(hnp.arrays(dtype, shape, elements=_float_values(dtype)))
    f = _all_ops(UNARY_FLOAT, BINARY_FLOAT)
    with np.errstate(all="ignore"), ft.config.override(enable_x64=x64):
        want = f(fnp.asarray(x), fnp.asarray(y))
        got = _call_twice(_jitted(("float", dtype, len(shape)), f), x, y)
    for name in want:
        _assert_close(name, got[name], want[name], name in EXACT_FLOAT)


@pytest.mark.parametrize("dtype,x64", [(d, True) for d in INTS + ("bool",)]
                         + [("int64", False), ("uint64", False)])
@settings(max_examples=10)
@given(data=st.data())
def test_int_and_bool_elementwise_ops(dtype, x64, data):
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=2, max_side=5))
    x = data.draw(hnp.arrays(dtype, shape))
    y = data.draw(hnp.arrays(dtype, shape))
    if dtype == "bool":
        unary, binary = ["not"], ["add", "mul", "max", "min", "and", "or", "xor", "eq", "ne",
                                  "lt", "le", "gt", "ge"]

        def f(x, y):
            out = {n: _op(n)(x) for n in unary}
            out.update({n: _op(n)(x, y) for n in binary})
            out["select"] = lax.select(x, x, y)
            return out
    else:
        unary = [u for u in UNARY_INT if not (u == "neg" and dtype.startswith("u"))]
        f = _all_ops(unary, BINARY_INT)
    with ft.config.override(enable_x64=x64):
        want = f(fnp.asarray(x), fnp.asarray(y))  # (NumPy's own `x > y` would compare in int64)
        got = _call_twice(_jitted(("int", dtype, len(shape)), f), x, y)
    for name in want:
        _assert_close(name, got[name], want[name], True)


def _conversions(x):
    return {str(d): lax.convert_element_type(x, d)
            for d in ("bool", "int8", "int32", "uint16", "int64", "float32", "float64")}


@pytest.mark.parametrize("src", ("bool", "int16", "uint32", "float32", "float64", "int64"))
def test_convert_element_type(src, x64):
    rng = np.random.default_rng(0)
    # In range of every target (test_conversions.py covers NaN and out-of-range values).
    x = rng.uniform(0, 120, 50).astype(src)
    want = _conversions(x)
    got = _call_twice(ft.jit(_conversions), x)
    for k in want:
        _assert_close(k, got[k], want[k], True)


# ---- non-elementwise primitives, reusing the autodiff and vmap tables -------------------------
def _tables():
    from test_autodiff import CASES as ad
    from test_vmap import CASES as vm
    cases = {f"ad_{k}": v for k, v in ad.items()}
    cases.update({f"vmap_{k}": v for k, v in vm.items()})
    return cases


CASES = _tables()


@pytest.mark.parametrize("name", sorted(CASES))
def test_jit_matches_eager(name, x64):
    f, args = CASES[name]
    want = f(*[fnp.asarray(a) for a in args])
    got = _call_twice(ft.jit(f), *[_as_passed(a, x64) for a in args])
    for w, g in zip(ft.tree_util.tree_leaves(want), ft.tree_util.tree_leaves(got)):
        _assert_close(name, g, w, False)


@settings(max_examples=20)
@given(hnp.arrays("float32", hnp.array_shapes(min_dims=1, max_dims=3, max_side=6),
                  elements=st.floats(-5, 5, width=32)), st.data())
def test_reductions_over_random_axes(x, data):
    axes = tuple(sorted(data.draw(st.sets(st.integers(0, x.ndim - 1), min_size=1))))
    keep = data.draw(st.booleans())

    def f(x):
        return {"sum": fnp.sum(x, axes, keepdims=keep), "max": fnp.max(x, axes, keepdims=keep),
                "min": fnp.min(x, axes, keepdims=keep), "prod": fnp.prod(x, axes),
                "any": fnp.any(x > 1, axes), "mean": fnp.mean(x, axes),
                "argmax": fnp.argmax(x, axes[0]), "argmin": fnp.argmin(x, axes[-1]),
                "cumsum": fnp.cumsum(x, axes[0]), "cummax": lax.cummax(x, axes[-1], True)}
    if x.size == 0:
        return
    want = f(x)
    got = _jitted(("red", x.ndim, axes, keep), f)(x)
    for k in want:
        _assert_close(k, got[k], want[k], k in ("max", "min", "argmax", "argmin", "any",
                                                "cummax"))


@settings(max_examples=20)
@given(hnp.arrays("int32", hnp.array_shapes(min_dims=1, max_dims=3, max_side=5)), st.data())
def test_indexing_and_updates(x, data):
    axis = data.draw(st.integers(0, x.ndim - 1))
    n = x.shape[axis]
    idx = np.asarray(data.draw(st.lists(st.integers(-n, n - 1), min_size=0, max_size=6)) if n
                     else [], np.int64)

    def f(x, idx):
        sl = [slice(None)] * x.ndim
        sl[axis] = idx
        at = x.at[tuple(sl)]
        return {"get": x[tuple(sl)], "set": at.set(7), "add": at.add(1), "min": at.min(-3),
                "rev": x[::-1], "take": fnp.take(x, idx, axis=axis, mode="clip"),
                "sort": fnp.sort(x, axis=axis), "argsort": fnp.argsort(x, axis=axis)}
    want = f(fnp.asarray(x), fnp.asarray(idx))
    got = _jitted(("idx", x.ndim, axis, idx.shape == (0,)), f)(x, idx)
    for k in want:
        _assert_close(k, got[k], want[k], True)


def test_dot_general_dtypes_and_shapes(x64):
    rng = np.random.default_rng(0)

    def f(a, b, c, d):
        return {"mm": a @ b, "bmm": fnp.einsum("bij,bjk->bik", c, d), "mv": a @ b[:, 0],
                "vv": fnp.dot(b[:, 0], b[:, 1]), "outer": fnp.einsum("i,j->ij", a[0], b[0])}
    for dt in ("float32", "float64", "int32", "int64", "int8", "bool"):
        a = (rng.standard_normal((4, 3)) * 3).astype(dt)
        b = (rng.standard_normal((3, 5)) * 3).astype(dt)
        c = (rng.standard_normal((2, 4, 3)) * 3).astype(dt)
        d = (rng.standard_normal((2, 3, 2)) * 3).astype(dt)
        want = f(*map(fnp.asarray, (a, b, c, d)))
        got = _call_twice(ft.jit(f), a, b, c, d)
        for k in want:
            _assert_close(f"{dt} {k}", got[k], want[k], dt not in FLOATS)


@pytest.mark.parametrize("shape", [(2, 3, 2), (64, 784, 32)])  # loops / BLAS ?gemm
def test_matmul_of_mixed_numpy_arguments(shape, x64):
    # float32 @ float64 from NumPy: float64 in 64-bit mode, float32 (both converted) in 32-bit
    # mode, whichever kernel (unrolled loops or BLAS) computes it.
    m, k, n = shape
    x = np.linspace(-1, 1, m * k, dtype=np.float32).reshape(m, k)
    w = np.linspace(-1, 1, k * n).reshape(k, n)
    got = _call_twice(ft.jit(lambda x, w: fnp.dot(x, w)), x, w)
    want_dtype = np.float64 if x64 else np.float32
    assert got.dtype == want_dtype
    # Against the exact product of the converted operands, within the worst-case bound for a
    # length-k dot product in the result's precision, |error| <= k * eps * (|x| @ |w|)
    # (Higham, "Accuracy and Stability of Numerical Algorithms", 3.1): BLAS kernels may sum
    # in any order, so an elementwise comparison with NumPy's own float32 result is no oracle.
    xc, wc = (a.astype(want_dtype).astype(np.float64) for a in (x, w))
    exact = xc @ wc
    bound = k * np.finfo(want_dtype).eps * (np.abs(xc) @ np.abs(wc))
    assert np.all(np.abs(got - exact) <= bound), np.max(np.abs(got - exact) / bound)


def test_python_scalars_and_int64_arguments_in_32_bit_mode():
    # Python scalars and int64 arrays become weak float32 / int32 values: the kernel must see
    # those types (not float64/int64) so that its arithmetic rounds like the eager result.
    with ft.config.override(enable_x64=False):
        f = ft.jit(lambda x, s, i: (x * s + 1.0 / 3.0, i * 3, i.astype(fnp.float32) + x))
        x = np.linspace(0, 1, 20, dtype=np.float32)
        i = np.arange(20, dtype=np.int64)
        want = f.__wrapped__(fnp.asarray(x), 0.1, fnp.asarray(i))
        for _ in range(2):
            got = f(x, 0.1, i)
            for g, w in zip(got, want):
                assert g.dtype == w.dtype and g.dtype in (np.float32, np.int32)
                np.testing.assert_array_equal(g, w)


def _remaining_ops(x, y):
    """Primitives the tables above do not reach: fma, the two-argument special functions,
    bitcasts, add_any (from grad's fan-in), collectives (batched away by vmap) and calls."""
    int_type = "int32" if x.dtype == np.float32 else "int64"
    pos = fnp.abs(x) + 0.5
    return {
        "fma": lax.fma(x, y, x),
        "polygamma": lax.polygamma(fnp.full_like(x, 2.0), pos),
        "zeta": lax.zeta(pos + 1.5, fnp.abs(y) + 0.5),
        "bitcast": lax.bitcast_convert_type(x, int_type),
        "grad_fan_in": ft.grad(lambda v: fnp.sum(v * fnp.sin(v)))(x),
        "psum": ft.vmap(lambda v: lax.psum(v, "i") - lax.pmax(v, "i") * lax.pmin(v, "i"),
                        axis_name="i")(x),
        "gathered": ft.vmap(lambda v: lax.all_gather(v, "i") + lax.axis_index("i"),
                            axis_name="i")(y),
        "permuted": ft.vmap(lambda v: lax.ppermute(v, "i", [(0, 1), (1, 0)]),
                            axis_name="i")(x[:2]),
        "scattered": ft.vmap(lambda v: lax.psum_scatter(v, "i", tiled=True),
                             axis_name="i")(fnp.ones((2, 4), x.dtype)),
        "transposed": ft.vmap(lambda v: lax.all_to_all(v, "i", 0, 0),
                              axis_name="i")(fnp.ones((2, 2), x.dtype)),
        "inner_jit": ft.jit(lambda v: v * 2)(x),
        "checkpointed": ft.checkpoint(lambda v: fnp.exp(v) * v)(x),
    }


@pytest.mark.parametrize("dtype", FLOATS)
def test_remaining_primitives(dtype, x64):
    rng = np.random.default_rng(1)
    x, y = (rng.uniform(-2, 2, 4).astype(dtype) for _ in range(2))
    want = _remaining_ops(fnp.asarray(x), fnp.asarray(y))
    got = _call_twice(ft.jit(_remaining_ops), x, y)
    for k in want:
        _assert_close(k, got[k], want[k], k in ("bitcast", "permuted", "scattered", "transposed"))



def test_every_primitive_is_compiled_by_some_test():
    x = np.ones(4, "float32")
    programs = [(_all_ops([], []), (x, x)), (_conversions, (x,)), (_remaining_ops, (x, x))]
    programs += [(f, [fnp.asarray(a) for a in args]) for f, args in CASES.values()]
    programs.append((lambda v: {"r": fnp.any(v > 1, 0), "a": fnp.argmin(v), "m": fnp.max(v)}, (x,)))
    programs.append((lambda v, i: (v.at[i].min(0.0), fnp.sort(v), v[::-1]),
                     (x, np.array([1, 2]))))
    seen = primitives_in(programs) | set(UNARY_FLOAT + BINARY_FLOAT + UNARY_INT + BINARY_INT)
    assert_every_primitive_covered(seen, "a jit test")

def test_collective_outside_its_axis_raises_clearly():
    with pytest.raises(NameError, match="unbound axis name 'i'.*vmap"):
        ft.jit(lambda v: lax.psum(v, "i"))(np.ones(3))


def test_logical_right_shift_of_negative_int64_is_exact():
    # The unsigned shift result and the out-of-range zero must unify as unsigned: mixed with
    # int64, Numba computes in float64 and rounds the large results.
    x = np.array([-5, -2, -(2 ** 62) - 1], np.int64)
    s = np.array([3, 5, 1], np.int64)
    want = (x.view(np.uint64) >> s.view(np.uint64)).view(np.int64)
    np.testing.assert_array_equal(ft.jit(lax.shift_right_logical)(x, s), want)
    np.testing.assert_array_equal(lax.shift_right_logical(x, s), want)


@pytest.mark.parametrize("x64", [True, False], ids=["x64", "x32"])
def test_interpreted_and_segmented_programs_return_canonical_arrays(x64):
    # float16 programs run on the reference interpreter and programs with a callback run in
    # segments: inputs returned as outputs must come back as immutable Arrays of the traced
    # dtype (float32 in 32-bit mode), never as the caller's own NumPy buffer.
    def with_callback(x):
        ft.debug.callback(lambda v: None, x)
        return x, x * 2

    progs = [(ft.jit(lambda x, h: (x, h * 2)), (np.ones(3), np.ones(2, np.float16))),
             (ft.jit(with_callback), (np.ones(3),))]
    with ft.config.override(enable_x64=x64):
        for f, args in progs:
            for _ in range(2):
                user = args[0].copy()
                out = f(user, *args[1:])
                assert type(out[0]) is ft.Array
                assert out[0].dtype == (np.float64 if x64 else np.float32)
                user[0] = 5.0
                np.testing.assert_array_equal(out[0], np.ones(3))
