"""Complex dtypes through the stack: values against NumPy (eager and jit), vmap against loops,
derivatives against finite differences with JAX's conventions, dtype promotion, and the
errors for operations that are not defined on complex numbers.

Tolerances: values are compared elementwise relative to |expected| at 8 ulp of the parts'
precision (float32 for complex64, float64 for complex128); the compiled kernels' cmath
functions measured within 2 ulp of NumPy's on these inputs. Finite differences are central
differences in complex128 (check_grads' float64 defaults).
"""
import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp
from functrans import lax
from functrans.testing import check_grads

rng = np.random.default_rng(0)
COMPLEX = ("complex64", "complex128")


def Z(shape=(5,), lo=-1.5, hi=1.5, dtype="complex128"):
    return (rng.uniform(lo, hi, shape) + 1j * rng.uniform(lo, hi, shape)).astype(dtype)


def assert_close_ulp(got, want, ulps=8):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    if want.dtype == np.bool_:
        np.testing.assert_array_equal(got, want)
        return
    eps = np.finfo(want.dtype).eps
    both_nan = np.isnan(got) & np.isnan(want)
    err = np.abs(got.astype(np.complex128) - want)
    bound = ulps * eps * np.maximum(np.abs(want), np.finfo(want.dtype).tiny)
    assert np.all(both_nan | (err <= bound)), (got, want)


# Every elementwise function NumPy defines for complex numbers, with a domain where it is
# smooth (away from branch cuts, for the derivative checks). holomorphic: analytic there.
UNARY = {
    "exp": (True, (-1.5, 1.5)), "exp2": (True, (-1.5, 1.5)), "expm1": (True, (-1.5, 1.5)),
    "log": (True, (0.2, 2)), "log2": (True, (0.2, 2)), "log10": (True, (0.2, 2)),
    "log1p": (True, (0.2, 2)), "sqrt": (True, (0.2, 2)), "sin": (True, (-1.5, 1.5)),
    "cos": (True, (-1.5, 1.5)), "tan": (True, (-0.7, 0.7)), "arcsin": (True, (0.1, 0.7)),
    "arccos": (True, (0.1, 0.7)), "arctan": (True, (0.1, 0.7)), "sinh": (True, (-1.5, 1.5)),
    "cosh": (True, (-1.5, 1.5)), "tanh": (True, (-0.7, 0.7)), "arcsinh": (True, (0.1, 1.5)),
    "arccosh": (True, (0.2, 2)), "arctanh": (True, (0.1, 0.7)), "square": (True, (-2, 2)),
    "reciprocal": (True, (0.3, 2)), "negative": (True, (-2, 2)), "positive": (True, (-2, 2)),
    "absolute": (False, (0.2, 2)), "sign": (False, (0.2, 2)), "conjugate": (False, (-2, 2)),
    "real": (False, (-2, 2)), "imag": (False, (-2, 2)), "angle": (False, (0.2, 2)),
}
NON_DIFFERENTIABLE = ("rint", "isnan", "isinf", "isfinite")
BINARY = ("add", "subtract", "multiply", "divide", "power", "float_power", "equal",
          "not_equal")


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("name", sorted(UNARY) + list(NON_DIFFERENTIABLE))
def test_unary_values_eager_and_jit_match_numpy(name, dtype):
    lo, hi = UNARY.get(name, (None, (-3, 3)))[1]
    z = Z((7,), lo, hi, dtype)
    want = getattr(np, name)(z)
    f = getattr(fnp, name)
    assert_close_ulp(f(z), want)
    assert_close_ulp(ft.jit(f)(z), want)


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("name", BINARY)
def test_binary_values_eager_and_jit_match_numpy(name, dtype):
    x, y = Z((6,), 0.2, 2, dtype), Z((6,), 0.2, 2, dtype)
    want = getattr(np, name)(x, y)
    f = getattr(fnp, name)
    assert_close_ulp(f(x, y), want)
    assert_close_ulp(ft.jit(f)(x, y), want)
    # A weak Python complex scalar keeps the array's precision (NEP 50).
    assert_close_ulp(f(x, 0.5 - 0.25j), getattr(np, name)(x, 0.5 - 0.25j))


def test_special_values_follow_numpy():
    z = np.array([0j, complex(np.inf, 0), complex(-np.inf, 1), complex(np.nan, 0),
                  complex(0, np.nan), complex(1, np.inf)])
    for name in ("isnan", "isinf", "isfinite", "sign", "absolute"):
        want = getattr(np, name)(z)
        for f in (getattr(fnp, name), ft.jit(getattr(fnp, name))):
            np.testing.assert_array_equal(np.asarray(f(z)), want, err_msg=name)


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_vmap_matches_loop(name):
    lo, hi = UNARY[name][1]
    zs = Z((4, 3), lo, hi)
    f = getattr(fnp, name)
    want = np.stack([np.asarray(f(z)) for z in zs])
    np.testing.assert_allclose(ft.vmap(f)(zs), want, rtol=1e-15)
    np.testing.assert_allclose(ft.jit(ft.vmap(f))(zs), want, rtol=1e-13)


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_derivatives_by_finite_differences(name):
    lo, hi = UNARY[name][1]
    check_grads(getattr(fnp, name), (Z((4,), lo, hi),), order=2)


def _fd_grad(f, z, h=1e-6):
    """JAX's convention for real f of complex z: df/dx - i df/dy, by central differences."""
    z = np.asarray(z, np.complex128)
    g = np.empty_like(z)
    for k in np.ndindex(z.shape):
        e = np.zeros_like(z)
        e[k] = h
        dx = (float(f(z + e)) - float(f(z - e))) / (2 * h)
        dy = (float(f(z + 1j * e)) - float(f(z - 1j * e))) / (2 * h)
        g[k] = dx - 1j * dy
    return g


@pytest.mark.parametrize("name", sorted(UNARY))
def test_grad_of_real_valued_function_uses_jax_convention(name):
    lo, hi = UNARY[name][1]
    f = getattr(fnp, name)

    def loss(z):
        w = f(z)
        return fnp.sum(fnp.real(w) * 0.7 + fnp.imag(w * w) * 0.3)
    z = Z((3,), lo, hi)
    want = _fd_grad(loss, z)
    for g in (ft.grad(loss), ft.jit(ft.grad(loss))):
        np.testing.assert_allclose(g(z), want, rtol=1e-6, atol=1e-7)


def test_grad_of_squared_modulus_is_twice_the_conjugate():
    # The example of JAX's autodiff cookbook: grad |z|^2 at 3 + 4j is 6 - 8j.
    assert complex(ft.grad(lambda z: fnp.real(z) ** 2 + fnp.imag(z) ** 2)(3.0 + 4j)) == 6 - 8j
    assert np.isclose(complex(ft.grad(lambda z: fnp.abs(z) ** 2)(3.0 + 4j)), 6 - 8j)


@pytest.mark.parametrize("name", [n for n, (holo, _) in UNARY.items() if holo])
def test_holomorphic_derivatives_are_the_complex_derivative(name):
    lo, hi = UNARY[name][1]
    f = getattr(fnp, name)
    z = Z((3,), lo, hi)
    h = 1e-6
    want = (np.asarray(f(z + h)) - np.asarray(f(z - h))) / (2 * h)  # f'(z) along any direction
    g = ft.vmap(ft.grad(f, holomorphic=True))(z)
    np.testing.assert_allclose(g, want, rtol=1e-7, atol=1e-8)
    np.testing.assert_allclose(np.diag(np.asarray(ft.jacfwd(f, holomorphic=True)(z))), want,
                               rtol=1e-7, atol=1e-8)
    np.testing.assert_allclose(np.diag(np.asarray(ft.jacrev(f, holomorphic=True)(z))), want,
                               rtol=1e-7, atol=1e-8)


def test_holomorphic_second_derivative():
    z = 0.3 + 0.4j
    h = ft.grad(ft.grad(fnp.sin, holomorphic=True), holomorphic=True)(z)
    np.testing.assert_allclose(complex(h), -np.sin(z), rtol=1e-14)
    hess = ft.hessian(lambda v: fnp.sum(fnp.exp(v) * v[0]), holomorphic=True)(Z((2,)))
    assert np.asarray(hess).dtype == np.complex128


@pytest.mark.parametrize("name", BINARY[:6])
def test_binary_derivatives_by_finite_differences(name):
    f = getattr(fnp, name)
    check_grads(f, (Z((4,), 0.3, 2), Z((4,), 0.3, 2)), order=2)


def test_mixed_real_and_complex_arguments():
    x, y = rng.uniform(0.5, 1.5, 4), rng.uniform(0.5, 1.5, 4)
    # Real inputs, complex intermediate, real output: grad is real.
    f = lambda x, y: fnp.sum(fnp.abs(fnp.exp(lax.complex(x, y)) * (x + 1j)) ** 2)  # noqa: E731
    check_grads(f, (x, y), order=2)
    g = ft.grad(f)(x, y)
    assert np.asarray(g).dtype == np.float64
    # complex -> real conversion keeps the real part; its transpose embeds the cotangent.
    c = lambda z: fnp.sum(z.astype("float64") ** 2)  # noqa: E731
    z = Z((3,))
    np.testing.assert_allclose(ft.grad(c)(z), 2 * z.real, rtol=1e-15)
    check_grads(lambda v: v.astype("complex128") * (1 + 2j), (x,), order=1)


def test_jvp_and_vjp_of_complex_functions():
    z, t = Z((3,)), Z((3,))
    y, jt = ft.jvp(fnp.exp, (z,), (t,))
    np.testing.assert_allclose(jt, np.exp(z) * t, rtol=1e-15)
    ct = Z((3,))
    _, f_vjp = ft.vjp(fnp.exp, z)
    # JAX's VJP of a holomorphic function: ct * f'(z), without conjugation.
    np.testing.assert_allclose(f_vjp(ct)[0], ct * np.exp(z), rtol=1e-15)
    # Linear maps transpose without conjugation: real -> complex(ct, 0), imag -> -i ct.
    _, f_vjp = ft.vjp(fnp.real, z)
    np.testing.assert_array_equal(f_vjp(np.ones(3))[0], np.ones(3, complex))
    _, f_vjp = ft.vjp(fnp.imag, z)
    np.testing.assert_array_equal(f_vjp(np.ones(3))[0], -1j * np.ones(3))
    _, f_vjp = ft.vjp(fnp.conj, z)
    np.testing.assert_array_equal(f_vjp(ct)[0], np.conj(ct))


# ---- reductions, products, structural ops ----------------------------------------------------
def _structural(z, w):
    return {
        "sum": fnp.sum(z), "sum0": fnp.sum(z, axis=0), "prod": fnp.prod(z[:2], axis=0),
        "mean": fnp.mean(z, axis=1), "cumsum": fnp.cumsum(z, axis=1),
        "cumprod": fnp.cumprod(z[:3], axis=0), "matmul": z @ w, "einsum":
        fnp.einsum("ij,ij->j", z, z), "vdot": fnp.vdot(z, z), "var": fnp.var(z, axis=0),
        "std": fnp.std(z), "norm": fnp.linalg.norm(z, axis=1), "where":
        fnp.where(fnp.abs(z) > 1, z, 0j), "concat": fnp.concatenate([z, w.T]),
        "transpose": z.T.conj(), "take": z[::-1, 1], "set": z.at[0, 0].set(2j),
        "sort": fnp.sort(z[0]), "dot_small": z[:2, :2] @ z[:2, :2],
    }


@pytest.mark.parametrize("dtype", COMPLEX)
def test_reductions_products_and_structural_ops(dtype):
    z, w = Z((4, 3), dtype=dtype), Z((3, 4), dtype=dtype)
    zn, wn = np.asarray(z), np.asarray(w)
    want = {
        "sum": zn.sum(), "sum0": zn.sum(0), "prod": zn[:2].prod(0), "mean": zn.mean(1),
        "cumsum": zn.cumsum(1), "cumprod": zn[:3].cumprod(0), "matmul": zn @ wn,
        "einsum": np.einsum("ij,ij->j", zn, zn), "vdot": np.vdot(zn, zn), "var": zn.var(0),
        "std": zn.std(), "norm": np.linalg.norm(zn, axis=1), "where":
        np.where(np.abs(zn) > 1, zn, 0), "concat": np.concatenate([zn, wn.T]),
        "transpose": zn.T.conj(), "take": zn[::-1, 1], "set": np.where(
            np.arange(12).reshape(4, 3) == 0, 2j, zn).astype(dtype), "sort": np.sort(zn[0]),
        "dot_small": zn[:2, :2] @ zn[:2, :2],
    }
    eps = np.finfo(dtype).eps
    for got in (_structural(fnp.asarray(z), fnp.asarray(w)), ft.jit(_structural)(z, w)):
        for k, v in want.items():
            assert np.asarray(got[k]).dtype == v.dtype, k
            # Sums of a dozen terms: a few ulp of the largest magnitude.
            np.testing.assert_allclose(got[k], v, rtol=16 * eps, atol=16 * eps, err_msg=k)


def test_derivatives_through_products_and_reductions():
    a, b = Z((3, 4)), Z((4, 2))
    check_grads(lambda a, b: (a @ b).sum(0), (a, b), order=2)
    check_grads(lambda a: fnp.cumprod(a, axis=1), (a,), order=1)
    check_grads(lambda a: fnp.prod(a, axis=0), (a,), order=1)
    check_grads(lambda a: fnp.var(a, axis=1), (a,), order=2)
    loss = lambda a, b: fnp.sum(fnp.abs(a @ b) ** 2)  # noqa: E731
    ga = ft.grad(loss)(a, b)
    np.testing.assert_allclose(ga, _fd_grad(lambda v: loss(v, b), a), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(ft.jit(ft.grad(loss))(a, b), ga, rtol=1e-12)


def test_vmap_of_grad_of_complex_program_matches_loop():
    zs = Z((4, 3))
    g = ft.grad(lambda z: fnp.sum(fnp.abs(fnp.sin(z) * fnp.conj(z)) ** 2))
    want = np.stack([np.asarray(g(z)) for z in zs])
    np.testing.assert_allclose(ft.vmap(g)(zs), want, rtol=1e-14)
    np.testing.assert_allclose(ft.jit(ft.vmap(g))(zs), want, rtol=1e-12)


# ---- dtypes ---------------------------------------------------------------------------------
@pytest.mark.parametrize("a", ["int8", "uint32", "int64", "float16", "float32", "float64",
                               "complex64", "complex128"])
@pytest.mark.parametrize("b", ["complex64", "complex128", 1j, 2.0, 3])
def test_promotion_follows_numpy(a, b):
    x = np.ones(2, a)
    y = np.ones(2, b) if isinstance(b, str) else b
    assert (fnp.asarray(x) + y).dtype == (x + y).dtype


def test_python_complex_scalars_are_weak():
    z = lax.full((2,), 1 + 1j, "complex64")
    assert (z * 2.5j).dtype == np.complex64
    assert (fnp.ones(2, "float32") * 1j).dtype == np.complex64
    assert fnp.asarray(1j).dtype == np.complex128 and fnp.asarray(1j).weak_type


def test_32_bit_mode_canonicalizes_complex128():
    ft.config.update("enable_x64", False)
    try:
        assert fnp.asarray(np.ones(2, np.complex128)).dtype == np.complex64
        assert fnp.asarray(1j).dtype == np.complex64
        assert (fnp.ones(2) * 1j).dtype == np.complex64
        assert ft.jit(fnp.exp)(np.ones(2, np.complex128)).dtype == np.complex64
    finally:
        ft.config.update("enable_x64", True)


def test_parts_and_helpers():
    z = Z((3,))
    np.testing.assert_array_equal(z.real, np.asarray(fnp.asarray(z).real))
    np.testing.assert_array_equal(z.imag, np.asarray(fnp.asarray(z).imag))
    np.testing.assert_array_equal(lax.complex(z.real, z.imag), z)
    np.testing.assert_array_equal(lax.conj(z.real), z.real.astype(complex))
    assert fnp.iscomplexobj(z) and not fnp.isrealobj(z) and not fnp.iscomplexobj(z.real)
    np.testing.assert_array_equal(fnp.real_if_close(z.real + 1e-20j), z.real)
    np.testing.assert_allclose(fnp.angle(z, deg=True), np.angle(z, deg=True), rtol=1e-15)
    np.testing.assert_array_equal(fnp.iscomplex(np.array([1, 1j])), [False, True])


# ---- errors -----------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["floor", "ceil", "trunc", "fix", "signbit", "cbrt", "fabs",
                                  "deg2rad", "isposinf"])
def test_unary_functions_numpy_does_not_define_for_complex_raise(name):
    with pytest.raises(TypeError, match=r"complex128"):
        getattr(fnp, name)(Z((2,)))


# (maximum, less & co order complex numbers as JAX does: tests/test_complex_ordering.py)
@pytest.mark.parametrize("name", ["remainder", "floor_divide", "arctan2", "hypot", "copysign",
                                  "logaddexp", "heaviside"])
def test_binary_functions_without_complex_semantics_raise(name):
    with pytest.raises(TypeError, match=rf"fnp\.{name}.*complex128"):
        getattr(fnp, name)(Z((2,)), Z((2,)))


@pytest.mark.parametrize("fn, prim", [
    (lambda z: lax.ge(z, z), "ge"), (lambda z: lax.lt(z, z), "lt"),
    (lambda z: lax.floor(z), "floor"), (lambda z: lax.erf(z), "erf"),
    (lambda z: lax.rem(z, z), "rem"), (lambda z: lax.atan2(z, z), "atan2"),
    (lambda z: fnp.argmin(z), "argmin"), (lambda z: fnp.argmax(z), "argmax"),
    (lambda z: lax.real(fnp.real(z)), "real"), (lambda z: lax.complex(z, z), "complex"),
])
def test_primitives_name_the_op_and_dtype(fn, prim):
    with pytest.raises(TypeError, match=rf"^{prim} does not accept dtype (complex128|float64)"):
        fn(Z((2,)))
    with pytest.raises(TypeError, match=rf"^{prim} does not accept dtype"):
        ft.jit(fn)(Z((2,)))


def test_complex_from_float16_parts_raises():
    with pytest.raises(TypeError, match="complex requires float32 or float64 parts"):
        lax.complex(np.ones(2, np.float16), np.ones(2, np.float16))


def test_autodiff_errors_follow_jax():
    with pytest.raises(TypeError, match=r"grad\(exp\) requires real-valued outputs.*c128.*"
                       r"holomorphic=True"):
        ft.grad(fnp.exp)(1j)
    with pytest.raises(TypeError, match="holomorphic=True requires inputs with complex dtype"):
        ft.grad(fnp.exp, holomorphic=True)(1.0)
    with pytest.raises(TypeError, match="holomorphic=True requires outputs with complex dtype"):
        ft.grad(fnp.abs, holomorphic=True)(1j)
    with pytest.raises(TypeError, match=r"jacfwd\(exp\) requires floating-point inputs.*"
                       "holomorphic=True"):
        ft.jacfwd(fnp.exp)(Z((2,)))
    with pytest.raises(TypeError, match=r"jacrev\(exp\) requires real-valued outputs"):
        ft.jacrev(fnp.exp)(Z((2,)))
    # Without holomorphic, complex outputs of real inputs are fine in forward mode.
    jac = ft.jacfwd(lambda x: fnp.exp(1j * x))(np.array([0.5, 1.0]))
    np.testing.assert_allclose(np.diag(np.asarray(jac)), 1j * np.exp(1j * np.array([0.5, 1.0])),
                               rtol=1e-15)


@pytest.mark.parametrize("dtype", ["int8", "uint16", "int32", "bool", "float16", "float32",
                                   "float64", "complex64", "complex128"])
def test_sort_complex_follows_numpy(dtype):
    x = np.array([3 + 1j, 1 - 2j, 3 - 1j, 1 + 0j]) if np.dtype(dtype).kind == "c" else \
        np.array([3, 1, 2, 0])
    x = x.astype(dtype)
    want = np.sort_complex(x)
    for f in (fnp.sort_complex, ft.jit(fnp.sort_complex)):
        got = np.asarray(f(x))
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_large_complex_products_match_numpy(dtype):
    # Above the small-product size, jit calls cgemm/zgemm (transposing, never conjugating).
    a, b = Z((2, 40, 50), dtype=dtype), Z((2, 50, 60), dtype=dtype)
    eps = np.finfo(dtype).eps
    tol = 50 * 4 * eps  # k = 50 terms of |a||b| ~ 1: a few ulp each, relative to ~sqrt(k)
    for f, want in ((lambda x, y: x @ y, a @ b),
                    (lambda x, y: fnp.swapaxes(x, 1, 2) @ y, np.swapaxes(a, 1, 2) @ a),
                    (lambda x, y: x @ fnp.swapaxes(y, 1, 2), a @ np.swapaxes(a, 1, 2))):
        args = (a, b) if want.shape == (2, 40, 60) else (a, a)
        np.testing.assert_allclose(ft.jit(f)(*args), want, rtol=tol, atol=tol)
    loss = lambda x, y: fnp.sum(fnp.abs(x @ y) ** 2)  # noqa: E731
    g = np.asarray(ft.grad(loss)(a, b))
    # Entries are sums of products that can cancel: error relative to the largest entry.
    np.testing.assert_allclose(ft.jit(ft.grad(loss))(a, b), g, rtol=0,
                               atol=tol * np.abs(g).max())
