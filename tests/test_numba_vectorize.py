"""numba_vectorize: a scalar Python function (compiled by Numba) as an elementwise primitive.

Values are checked against NumPy oracles (``np.vectorize`` of the same Python function, run in
float64 Python arithmetic, or the equivalent NumPy expression) eagerly, under ``jit`` with both
code generators (native, and Numba's), fused into chains of functrans operations, broadcast,
for every dtype family; under ``vmap``; derivatives against central finite differences; a
hypothesis test over shapes, dtypes and compositions; errors; and the caches (one Numba compile
per dtype signature, harvested IR read back from disk by a later process).
"""
import math
import os
import re
import subprocess
import sys
import textwrap

import numba
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import functrans as ft
import functrans.numpy as fnp
from functrans import lax
from functrans.primitives.numba_elementwise import ScalarKernelError
from functrans.transforms.native import harvest
from finite_diff import fd_grad

V = ft.numba_vectorize
CODEGENS = ["native", "numba"]


# ---- kernels -----------------------------------------------------------------------------

@V
def dpiecewise(x):
    if x < -1.0:
        return -2.0
    elif x < 1.0:
        return 2.0 * x
    return 2.0 / x


@V(derivatives=(dpiecewise,))
def piecewise(x):
    """Three branches, C1 at the joins: -2x - 1, x**2, 1 + 2 log x."""
    if x < -1.0:
        return -2.0 * x - 1.0
    elif x < 1.0:
        return x * x
    return 1.0 + 2.0 * math.log(x)


def _i_series(x, nu):
    """Modified Bessel function I_nu(x), nu in {0, 1}: the power series, summed in a while loop
    until a term no longer changes the sum."""
    q = 0.25 * x * x
    term = 1.0 if nu == 0 else 0.5 * x
    total = term
    k = 1
    while abs(term) > 1e-17 * abs(total):
        term *= q / (k * (k + nu))
        total += term
        k += 1
    return total


_i_series_nb = numba.njit(_i_series)


@V
def bessel_i1(x):
    return _i_series_nb(x, 1)


@V(derivatives=(bessel_i1,))
def bessel_i0(x):
    return _i_series_nb(x, 0)


@V
def dsoftplus(x):
    return 1.0 / (1.0 + math.exp(-x))


@V(derivatives=(dsoftplus,))
def softplus(x):
    return math.log1p(math.exp(-abs(x))) + max(x, 0.0)


def _hyp(x, y):
    return math.sqrt(x * x + y * y)


# Partial derivatives as functrans functions of the operands.
hyp = V(_hyp, derivatives=(lambda x, y: x / fnp.hypot(x, y), lambda x, y: y / fnp.hypot(x, y)))
# ...and one with no derivative for its second operand.
hyp_x_only = V(_hyp).defderivs(lambda x, y: x / fnp.hypot(x, y), None)

# (kernel, the Python function, domain, rounding steps of one evaluation: for tolerances)
UNARY = {
    "piecewise": (piecewise, piecewise.fn, (-3.0, 3.0), 4),
    "bessel_i0": (bessel_i0, lambda x: _i_series(x, 0), (-4.0, 4.0), 40),
    "softplus": (softplus, softplus.fn, (-5.0, 5.0), 6),
}
ORACLE = {"piecewise": np.vectorize(piecewise.fn, otypes=[float]), "bessel_i0": np.i0,
          "softplus": lambda x: np.logaddexp(0.0, x)}
DERIVATIVE = {"piecewise": np.vectorize(dpiecewise.fn, otypes=[float]), "softplus": lambda x: 1 / (1 + np.exp(-x)),
              "bessel_i0": np.vectorize(lambda x: _i_series(x, 1), otypes=[float])}


def _tol(dtype, depth, scale=1.0):
    """Each rounding step of the kernel (or its oracle) errs by half an ulp; allow four times
    the kernel's steps in units of the dtype's eps, relative to the values' magnitude."""
    return 4 * depth * np.finfo(dtype).eps * scale


def _close(got, want, dtype, depth):
    got, want = np.asarray(got), np.asarray(want, np.float64)
    scale = np.maximum(1.0, np.abs(want))
    assert got.shape == want.shape
    err = np.abs(got.astype(np.float64) - want)
    ok = (err <= _tol(dtype, depth) * scale) | (np.isnan(got) & np.isnan(want)) | (got == want)
    assert ok.all(), (got, want)


def _points(lo, hi, n, dtype):
    return np.linspace(lo, hi, n).astype(dtype)


# ---- values --------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(UNARY))
def test_values_eager_and_jit_match_the_numpy_oracle(name, dtype):
    k, _, (lo, hi), depth = UNARY[name]
    x = _points(lo, hi, 23, dtype)
    want = ORACLE[name](x.astype(np.float64))
    eager = k(x)
    assert eager.dtype == dtype
    _close(eager, want, dtype, depth)
    for cg in CODEGENS:
        with ft.config.override(jit_codegen=cg):
            got = ft.jit(k)(x)
        assert got.dtype == dtype
        _close(got, want, dtype, depth)


@pytest.mark.parametrize("codegen", CODEGENS)
def test_fused_chain_with_functrans_ops_before_and_after(codegen):
    x = np.linspace(-2, 2, 17)
    f = lambda x: fnp.sin(softplus(fnp.cos(x) * 3.0) + 1.0) * 2.0  # noqa: E731
    want = np.sin(np.logaddexp(0, np.cos(x) * 3.0) + 1.0) * 2.0
    with ft.config.override(jit_codegen=codegen):
        got = ft.jit(f)(x)
        text = ft.jit(f).lower(x).as_text("source")
    np.testing.assert_allclose(got, want, rtol=_tol(np.float64, 12))
    np.testing.assert_allclose(f(x), want, rtol=_tol(np.float64, 12))
    if codegen == "native":
        # One loop kernel for the whole chain, calling the harvested scalar function between
        # the cos and the sin (LLVM inlines it there), not a separate step.
        functions = re.findall(r"^define .*?^}", text, re.M | re.S)
        kernels = [fn for fn in functions if not re.match(r"define void @ftp_", fn)]
        assert len(kernels) == 1, text  # the program's entry calls one loop kernel
        body = kernels[0]
        syms = [s for (src, _, _), (s, _) in list(harvest._requests.items())
                if softplus.code.lookup_key in src]
        assert syms and any(f"@{s}(" in body for s in syms), body
        calls = [ln for ln in body.splitlines() if " call " in ln]
        order = [next(n for n in ("cos", "fth_", "sin") if n in ln) for ln in calls
                 if any(n in ln for n in ("cos", "fth_", "sin"))]
        assert order == ["cos", "fth_", "sin"], calls
    else:
        # The Numba backend's kernel calls the user's function in its (single) kernel body.
        assert text.count("def kernel(") == 1
        body = text.split("def kernel(", 1)[1]
        assert f"_uf_{softplus.code.lookup_key}(" in body and "fm.cos(" in body \
            and "fm.sin(" in body


def _numba_return_dtype(fn, *dtypes):
    """What Numba infers for ``fn`` on scalars of ``dtypes``."""
    d = numba.njit(error_model="numpy")(fn)
    sig = tuple(numba.from_dtype(np.dtype(t)) for t in dtypes)
    d.compile(sig)
    return numba.np.numpy_support.as_dtype(d.overloads[sig].signature.return_type)


def _halve(n):
    return n // 2 - (n % 3)


def _bits(b):
    return not b


def _cmul(z):
    return z * z.conjugate() + 1j * z


DTYPE_CASES = [
    (_halve, np.int32, np.arange(-7, 8, dtype=np.int32)),
    (_halve, np.int64, np.arange(-7, 8, dtype=np.int64)),
    (_bits, np.bool_, np.array([True, False, True])),
    (_cmul, np.complex128, np.array([1 + 2j, -3j, 0.5, np.inf + 0j])),
]


@pytest.mark.parametrize("fn,dtype,x", DTYPE_CASES, ids=["int32", "int64", "bool", "complex128"])
def test_dtypes_int_bool_complex(fn, dtype, x):
    k = V(fn)
    out_dtype = _numba_return_dtype(fn, dtype)  # int kernels: what Numba infers (int64 here)
    if dtype in (np.int32, np.int64):
        assert out_dtype == np.int64
    with np.errstate(all="ignore"):
        want = np.array([fn(v.item()) for v in x]).astype(out_dtype)
        got = k(x)  # inf * 0 in the complex product: nan, and NumPy's warning
    assert got.dtype == out_dtype
    np.testing.assert_array_equal(got, want)
    for cg in CODEGENS:
        with ft.config.override(jit_codegen=cg):
            got = ft.jit(lambda v: k(v))(x)
        assert got.dtype == out_dtype
        np.testing.assert_array_equal(got, want)


def test_float32_results_stay_float32():
    relu = V(lambda x: max(x, 0.0))  # Numba computes max(float32, 0.0) in float64
    x = np.float32([-1.5, 0.0, 2.25])
    for f in (relu, ft.jit(relu)):
        got = f(x)
        assert got.dtype == np.float32
        np.testing.assert_array_equal(got, np.maximum(x, 0))
    # An int kernel of a float input returns what Numba infers.
    trunc = V(lambda x: int(x))
    assert trunc(x).dtype == _numba_return_dtype(lambda x: int(x), np.float32)


def test_broadcasting_rank0_and_python_scalars():
    add_mul = V(lambda x, y: x * y + x)
    a = np.arange(2.0).reshape(2, 1)
    b = np.arange(1.0, 4.0)
    want = a * b + a
    for f in (add_mul, ft.jit(add_mul)):
        got = f(a, b)
        assert got.shape == (2, 3)
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(f(np.float64(2.0), b), 2.0 * b + 2.0)
        np.testing.assert_array_equal(f(b, np.array(3.0)), b * 3.0 + b)
    # A Python number takes the array's dtype (NEP 50), as in a ufunc.
    x32 = np.float32([1.0, 2.0])
    got = add_mul(x32, 2.0)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, x32 * 2 + x32)
    assert ft.jit(lambda v: add_mul(v, 2.0))(x32).dtype == np.float32
    assert add_mul(np.int32([1, 2]), 3).dtype == _numba_return_dtype(add_mul.fn, np.int32,
                                                                    np.int32)
    # Both operands rank 0.
    assert float(add_mul(2.0, 5.0)) == 12.0


def test_nan_inf_and_division_by_zero_behave_like_numpy():
    div = V(lambda x, y: x / y)
    x = np.array([1.0, -1.0, 0.0, np.inf, np.nan, 2.0])
    y = np.array([0.0, 0.0, 0.0, np.inf, 1.0, -0.0])
    with np.errstate(all="ignore"):
        want = x / y
        eager = div(x, y)
    np.testing.assert_array_equal(eager, want)  # inf, -inf, nan: no ZeroDivisionError
    for cg in CODEGENS:
        with ft.config.override(jit_codegen=cg):
            np.testing.assert_array_equal(ft.jit(div)(x, y), want)
    with np.errstate(all="ignore"):
        sp = softplus(np.array([np.inf, -np.inf, np.nan]))
    np.testing.assert_array_equal(sp, [np.inf, 0.0, np.nan])


def test_lambdas_on_one_line_are_different_kernels():
    # Their source (the whole line) is the same: the key that generated code finds them by
    # must still tell them apart.
    inc, dec = V(lambda x: x + 1.0), V(lambda x: x - 1.0)
    x = np.zeros(2)
    assert inc.code.lookup_key != dec.code.lookup_key
    for cg in CODEGENS:
        with ft.config.override(jit_codegen=cg):
            np.testing.assert_array_equal(ft.jit(lambda v: inc(v) * 10 + dec(v))(x), [9.0, 9.0])
    sin, cos = V(lambda x: math.sin(x)), V(lambda x: math.cos(x))
    assert sin.code.lookup_key != cos.code.lookup_key


# ---- vmap ----------------------------------------------------------------------------------

def test_vmap_in_axes_nested_and_with_jit():
    a = np.random.default_rng(0).uniform(-2, 2, (3, 4))
    b = np.random.default_rng(1).uniform(-2, 2, 4)
    want = np.hypot(a, b)
    np.testing.assert_allclose(ft.vmap(hyp, in_axes=(0, None))(a, b), want, rtol=1e-15)
    np.testing.assert_allclose(ft.vmap(hyp, in_axes=(1, 0))(a, b), want.T, rtol=1e-15)
    np.testing.assert_allclose(ft.vmap(hyp, in_axes=(1, 0), out_axes=1)(a, b), want, rtol=1e-15)
    outer = ft.vmap(ft.vmap(hyp, in_axes=(0, None)), in_axes=(None, 0))(a[:, 0], b)
    np.testing.assert_allclose(outer, np.hypot(a[None, :, 0], b[:, None]), rtol=1e-15)
    for g in (ft.jit(ft.vmap(hyp, in_axes=(0, None))), ft.vmap(ft.jit(hyp), in_axes=(0, None)),
              ft.jit(ft.vmap(ft.vmap(hyp), in_axes=(0, None)))):
        got = g(a, b) if g is not None else None
        np.testing.assert_allclose(got, want, rtol=1e-15)
    np.testing.assert_allclose(ft.vmap(piecewise)(a), np.vectorize(piecewise.fn)(a), rtol=1e-15)


# ---- derivatives ---------------------------------------------------------------------------

# Central differences in float64 with step h err by h**2 |f'''| / 6 (truncation) plus about
# eps |f| / h (rounding of f's values): with |f| <= 20 and |f'''| <= 20 on the test points,
# 3.7e-12 + 4.4e-9. FD_TOL allows a factor of two over that.
FD_TOL = 1e-8



# Points away from piecewise's joins at +-1 (its second derivative jumps there).
XS = np.array([-2.5, -1.7, -0.6, 0.3, 0.9, 1.4, 2.8])


@pytest.mark.parametrize("name", sorted(UNARY))
def test_grad_jvp_jacobians_against_finite_differences(name):
    k = UNARY[name][0]
    loss = lambda x: fnp.sum(k(x) * fnp.arange(1.0, 8.0))  # noqa: E731
    fd = fd_grad(lambda v: float(loss(v)), XS)
    for g in (ft.grad(loss), ft.jit(ft.grad(loss))):
        np.testing.assert_allclose(g(XS), fd, atol=FD_TOL * 7)
    want = DERIVATIVE[name](XS)
    _, t = ft.jvp(k, (XS,), (np.ones_like(XS),))
    np.testing.assert_allclose(t, want, rtol=1e-14, atol=1e-14)
    for jac in (ft.jacfwd, ft.jacrev):
        np.testing.assert_allclose(jac(k)(XS), np.diag(want), rtol=1e-14, atol=1e-14)
    # vmap(grad) and grad(vmap)
    per_point = ft.vmap(ft.grad(lambda x: k(x)))(XS)
    np.testing.assert_allclose(per_point, want, rtol=1e-14, atol=1e-14)
    np.testing.assert_allclose(ft.grad(lambda x: ft.vmap(k)(x).sum())(XS), want,
                               rtol=1e-14, atol=1e-14)
    np.testing.assert_allclose(per_point, [fd_grad(lambda v: float(k(v)), x) for x in XS],
                               atol=FD_TOL)


def test_hessian_when_the_derivative_has_a_derivative():
    d2 = V(lambda x: math.exp(-x) / (1.0 + math.exp(-x)) ** 2)
    d1 = V(lambda x: 1.0 / (1.0 + math.exp(-x)), derivatives=(d2,))
    sp = V(softplus.fn, derivatives=(d1,))
    x = XS[:4]
    hess = ft.hessian(lambda v: fnp.sum(sp(v) * v))(x)
    grad = ft.grad(lambda v: fnp.sum(sp(v) * v))
    fd = np.stack([fd_grad(lambda v: float(grad(v)[i]), x) for i in range(len(x))])
    np.testing.assert_allclose(hess, fd, atol=FD_TOL)
    # The derivative has no derivative of its own: second order raises, naming it.
    with pytest.raises(TypeError, match="dsoftplus.*has no derivative"):
        ft.hessian(lambda v: fnp.sum(softplus(v)))(x)


def test_two_operand_derivatives_as_functrans_functions():
    x, y = np.array([0.5, -1.5, 2.0]), np.array([1.5, 0.25, -3.0])
    loss = lambda x, y: fnp.sum(hyp(x, y) ** 2 * fnp.array([1.0, 2.0, 3.0]))  # noqa: E731
    gx, gy = ft.grad(loss, argnums=(0, 1))(x, y)
    np.testing.assert_allclose(gx, fd_grad(lambda v: float(loss(v, y)), x), atol=FD_TOL)
    np.testing.assert_allclose(gy, fd_grad(lambda v: float(loss(x, v)), y), atol=FD_TOL)
    gx2, gy2 = ft.jit(ft.grad(loss, argnums=(0, 1)))(x, y)
    np.testing.assert_allclose(gx2, gx, rtol=1e-14)
    np.testing.assert_allclose(gy2, gy, rtol=1e-14)
    # a rank-0 operand: its gradient sums over the broadcast
    g0 = ft.grad(lambda s, y: fnp.sum(hyp(s, y)))(1.25, y)
    np.testing.assert_allclose(g0, np.sum(1.25 / np.hypot(1.25, y)), rtol=1e-14)


def test_missing_derivative_for_one_operand():
    x, y = np.array([0.5, -1.5]), np.array([1.5, 0.25])
    loss = lambda x, y: fnp.sum(hyp_x_only(x, y))  # noqa: E731
    np.testing.assert_allclose(ft.grad(loss)(x, y), x / np.hypot(x, y), rtol=1e-14)
    with pytest.raises(TypeError, match="_hyp.*no derivative for operand 1"):
        ft.grad(loss, argnums=1)(x, y)
    # Fewer derivatives than operands: the last ones have none (not a zero derivative).
    short = V(_hyp).defderivs(lambda x, y: x / fnp.hypot(x, y))
    with pytest.raises(TypeError, match="no derivative for operand 1"):
        ft.grad(lambda x, y: fnp.sum(short(x, y)), argnums=1)(x, y)
    too_many = V(lambda x: x).defderivs(lambda x: 1.0, lambda x: 1.0)
    with pytest.raises(TypeError, match="2 derivatives for 1 operands"):
        ft.grad(lambda x: too_many(x))(1.0)


def test_no_derivatives_raises_naming_the_kernel():
    @V
    def bumpy(x):
        return x * math.sin(x)
    with pytest.raises(TypeError, match="'bumpy' has no derivative"):
        ft.grad(lambda x: fnp.sum(bumpy(x)))(XS)
    with pytest.raises(TypeError, match="'bumpy' has no derivative"):
        ft.jvp(bumpy, (XS,), (XS,))
    # Operands without tangents (constants, stop_gradient): no derivative needed.
    want = XS * np.sin(XS)
    np.testing.assert_allclose(ft.grad(lambda x: fnp.sum(bumpy(lax.stop_gradient(x)) * x))(XS),
                               want, rtol=1e-15)
    np.testing.assert_allclose(ft.grad(lambda y: fnp.sum(bumpy(XS) * y))(XS), want, rtol=1e-15)


# ---- hypothesis: shapes, dtypes, compositions ---------------------------------------------

COMPOSITIONS = ["eager", "jit", "vmap", "jit_vmap", "grad", "jit_grad"]


@given(name=st.sampled_from(sorted(UNARY)),
       shape=st.sampled_from([(), (0,), (5,), (2, 3), (3, 0), (1, 4, 2)]),
       dtype=st.sampled_from([np.float32, np.float64]),
       how=st.sampled_from(COMPOSITIONS), seed=st.integers(0, 2 ** 16))
def test_compositions_match_eager_and_the_oracle(name, shape, dtype, how, seed):
    k, _, (lo, hi), depth = UNARY[name]
    x = np.random.default_rng(seed).uniform(lo, hi, shape).astype(dtype)
    if how.endswith("vmap") and not shape:
        how = how.replace("vmap", "")
    grad = how.endswith("grad")
    f = (lambda v: fnp.sum(k(v))) if grad else k
    if grad:
        f = ft.grad(f)
    elif how.endswith("vmap"):
        f = ft.vmap(k)
    if how.startswith("jit"):
        f = ft.jit(f)
    got = f(x)
    oracle = DERIVATIVE[name] if grad else ORACLE[name]
    want = oracle(x.astype(np.float64))
    assert got.shape == shape and got.dtype == dtype
    # the derivative kernels are about as deep as the kernels; grad adds one product
    _close(got, want, dtype, depth + 2)
    eager = ft.grad(lambda v: fnp.sum(k(v)))(x) if grad else k(x)
    _close(got, eager, dtype, 2 * depth + 2)


# ---- errors --------------------------------------------------------------------------------

def _returns_string(x):
    return "x"  # the user's line


def _uses_objects(x):
    d = {}
    d[x] = object()  # not supported in nopython mode
    return x


def _returns_tuple(x):
    return x, x


def _returns_array(x):
    return np.array([x, x])


@pytest.mark.parametrize("fn,said", [(_returns_string, "unicode_type"),
                                     (_uses_objects, "object"),
                                     (_returns_tuple, "UniTuple"),
                                     (_returns_array, "array")])
def test_kernels_numba_cannot_type_raise_scalar_kernel_error(fn, said):
    k = V(fn)
    eager = lambda: k(np.ones(2, np.float32))  # noqa: E731 (the call the error names)
    jitted = lambda: ft.jit(k)(np.ones(2, np.float32))  # noqa: E731 (the call the error names)
    for call in (eager, jitted):
        with pytest.raises(ScalarKernelError) as e:
            call()
        msg = str(e.value)
        assert isinstance(e.value, TypeError)
        assert f"'{fn.__name__}'" in msg and "float32" in msg and said in msg, msg
        assert "test_numba_vectorize.py:" in msg, msg
        line = int(msg.split("test_numba_vectorize.py:")[1].split()[0])
        assert "the call the error names" in open(__file__).read().splitlines()[line - 1]


def test_operands_that_do_not_broadcast():
    add = V(lambda x, y: x + y)
    for f in (add, ft.jit(add)):
        with pytest.raises(ValueError, match=r"\(2,\), \(3,\) do not broadcast"):
            f(np.ones(2), np.ones(3))
    with pytest.raises(TypeError, match="at least one operand"):
        add()


def test_bad_functions_and_derivatives():
    with pytest.raises(TypeError, match="expected a scalar function, got int"):
        V(3)
    with pytest.raises(TypeError, match="derivatives must be callables"):
        V(lambda x: x, derivatives=(3,))
    with pytest.raises(TypeError, match="derivatives must be callables"):
        V(lambda x: x).defderivs("dx")
    with pytest.raises(TypeError, match="derivatives must be a sequence of callables"):
        V(lambda x: x, derivatives=lambda x: 1.0)


# ---- caching -------------------------------------------------------------------------------

def test_one_numba_compile_per_dtype_signature_across_programs():
    k = V(lambda x, y: x * y - y)
    a64, a32 = np.linspace(0, 1, 5), np.linspace(0, 1, 5).astype(np.float32)
    for x in (a64, a32):
        k(x, x)
        k(x, 2.0)
        for cg in CODEGENS:
            with ft.config.override(jit_codegen=cg):
                ft.jit(lambda v: k(v, v) + 1.0)(x)
                ft.jit(lambda v: fnp.sin(k(v * 2.0, v)))(x)
                ft.jit(ft.vmap(lambda v: k(v, v)))(x.reshape(5, 1))
    assert len(k.code._out) == 2
    assert len(k.code.dispatcher().overloads) == 2


_CACHE_SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    import functrans as ft
    from functrans.transforms.native import harvest

    counts = {"compiled": 0, "read": 0}
    compile_, read = harvest._compile, harvest._read_cached

    def ours(symbol):
        pending = harvest._pending.get(symbol)
        return isinstance(pending, tuple) and "user_function(" in pending[0]

    def counting_compile(source, *rest):
        counts["compiled"] += "user_function(" in source
        return compile_(source, *rest)

    def counting_read(symbol):
        body = read(symbol)
        counts["read"] += body is not None and ours(symbol)
        return body

    harvest._compile, harvest._read_cached = counting_compile, counting_read

    @ft.numba_vectorize
    def bump(x):
        return x * x if x > 0 else -0.5 * x

    x = np.linspace(-1, 1, 5)
    # A different program each run (so jit's whole-program cache does not answer), the same
    # kernel for the same dtype (so the harvested function is the same).
    if sys.argv[1] == "first":
        out = ft.jit(lambda v: bump(v * 2.0) + 1.0)(x)
        want = np.where(2 * x > 0, 4 * x * x, -x) + 1.0
    else:
        out = ft.jit(lambda v: bump(v - 3.0) * 3.0)(x)
        want = np.where(x - 3 > 0, (x - 3) ** 2, -0.5 * (x - 3)) * 3.0
    assert np.allclose(out, want), (out, want)
    print("COUNTS", counts["compiled"], counts["read"])
""")


def test_harvested_ir_is_read_back_from_the_disk_cache(tmp_path):
    script = tmp_path / "run.py"
    script.write_text(_CACHE_SCRIPT)
    env = dict(os.environ, FUNCTRANS_CACHE_DIR=str(tmp_path / "cache"), FUNCTRANS_JIT_TIERED="0",
               FUNCTRANS_JIT_CODEGEN="native")
    counts = []
    for run in ("first", "second"):
        r = subprocess.run([sys.executable, str(script), run], env=env, capture_output=True,
                           text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        line = [ln for ln in r.stdout.splitlines() if ln.startswith("COUNTS")][-1]
        counts.append(tuple(map(int, line.split()[1:])))
    (compiled1, _), (compiled2, read2) = counts
    assert compiled1 == 1  # the first process compiles the kernel's scalar function...
    assert compiled2 == 0 and read2 == 1  # ...the second reads its IR from the disk cache


# ---- the type rule against the impl (test_core's table leaves this primitive to us) --------

@pytest.mark.parametrize("fn,dtypes", [(_hyp, (np.float32, np.float32)),
                                       (_hyp, (np.float64, np.int32)),
                                       (_halve, (np.int32,)), (_bits, (np.bool_,)),
                                       (_cmul, (np.complex128,))])
def test_type_rule_matches_impl(fn, dtypes):
    from functrans.core.avals import ShapedArray
    from functrans.primitives.numba_elementwise import ScalarCode, numba_vectorize_p
    code = ScalarCode(fn)
    args = [np.ones((2, 3), d) for d in dtypes]
    want = numba_vectorize_p.abstract_eval(*[ShapedArray(a.shape, a.dtype) for a in args],
                                           code=code)
    got = numba_vectorize_p.impl(*args, code=code)
    assert [(g.shape, g.dtype) for g in got] == [(tuple(w.shape), w.dtype) for w in want]


def test_a_scalar_kernels_math_calls_get_vector_variants():
    """Numba leaves math.exp/log1p as scalar calls; harvested user code gets libmvec's
    vector variants declared (as jit's own math rules), so the fused loop vectorizes."""
    import math

    from functrans.core.avals import ShapedArray
    from functrans.transforms.lowering import fastmath_libmvec
    from functrans.transforms.native import harvest

    k = ft.numba_vectorize(lambda v: math.log1p(math.exp(-abs(v))))
    f32 = ShapedArray((), np.dtype("float32"))
    sym, _ = harvest.scalar_function("numba_vectorize", [f32], f32, {"code": k.code})
    text = harvest.text(sym)
    if fastmath_libmvec.AVAILABLE:
        assert "llvm.exp.f32" not in text and "_ZGV" in text
        assert "vector-function-abi-variant" in text
    x = np.linspace(-30, 30, 1001, dtype=np.float32)
    # libmvec's functions are within 4 ulp of libm's; two of them, then an add: 16 ulp.
    np.testing.assert_allclose(np.asarray(ft.jit(k)(x)),
                               np.log1p(np.exp(-np.abs(x.astype(np.float64)))),
                               rtol=16 * np.finfo(np.float32).eps, atol=1e-30)
