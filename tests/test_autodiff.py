"""Derivatives of every differentiable primitive against finite differences (forward mode)
and against forward mode (reverse mode), orders 1 and 2 in float64, order 1 in float32.

Tolerances (check_grads defaults, set by the arguments' precision): float64 uses central
differences with eps=1e-5 and atol=rtol=1e-5 (truncation ~eps^2*f''' and rounding ~1e-16/eps
are both far below that); float32 uses eps=3e-3 and atol=rtol=2e-2 (rounding ~6e-8/3e-3 = 2e-5
relative per evaluation, amplified by the op's conditioning on our O(1) inputs).
"""
import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp
from functrans import lax
from functrans.transforms.autodiff.check import check_grads

from primitive_coverage import assert_every_primitive_covered, primitives_in

rng = np.random.default_rng(0)


def U(lo, hi, shape=(3,)):
    return rng.uniform(lo, hi, shape)


def distinct(shape):
    """Values with well-separated entries (max/sort/argmax are smooth there)."""
    n = int(np.prod(shape))
    return (rng.permutation(n) * 0.37 + rng.uniform(0, 0.1, n)).reshape(shape)


# name -> (function, args)
CASES = {
    "neg": (lambda x: -x, (U(-2, 2),)),
    "abs": (fnp.abs, (U(0.2, 2) * np.array([1, -1, 1]),)),
    "exp": (fnp.exp, (U(-2, 2),)),
    "exp2": (fnp.exp2, (U(-2, 2),)),
    "log": (fnp.log, (U(0.5, 3),)),
    "log1p": (fnp.log1p, (U(-0.5, 2),)),
    "expm1": (fnp.expm1, (U(-2, 2),)),
    "tanh": (fnp.tanh, (U(-2, 2),)),
    "logistic": (lax.logistic, (U(-3, 3),)),
    "sin": (fnp.sin, (U(-3, 3),)),
    "cos": (fnp.cos, (U(-3, 3),)),
    "tan": (fnp.tan, (U(-1, 1),)),
    "asin": (fnp.arcsin, (U(-0.8, 0.8),)),
    "acos": (fnp.arccos, (U(-0.8, 0.8),)),
    "atan": (fnp.arctan, (U(-2, 2),)),
    "sinh": (fnp.sinh, (U(-2, 2),)),
    "cosh": (fnp.cosh, (U(-2, 2),)),
    "asinh": (fnp.arcsinh, (U(-2, 2),)),
    "acosh": (fnp.arccosh, (U(1.5, 3),)),
    "atanh": (fnp.arctanh, (U(-0.8, 0.8),)),
    "sqrt": (fnp.sqrt, (U(0.5, 3),)),
    "rsqrt": (lax.rsqrt, (U(0.5, 3),)),
    "cbrt": (fnp.cbrt, (U(0.5, 3),)),
    "square": (lax.square, (U(-2, 2),)),
    "erf": (lax.erf, (U(-2, 2),)),
    "erfc": (lax.erfc, (U(-2, 2),)),
    "erf_inv": (lax.erf_inv, (U(-0.8, 0.8),)),
    "lgamma": (lax.lgamma, (U(0.5, 4),)),
    "integer_pow3": (lambda x: x ** 3, (U(-2, 2),)),
    "integer_pow_neg2": (lambda x: x ** -2, (U(0.5, 2),)),
    "pow": (lambda x, y: x ** y, (U(0.5, 2), U(-1.5, 1.5))),
    "add": (lambda x, y: x + y, (U(-1, 1), U(-1, 1))),
    "sub": (lambda x, y: x - y, (U(-1, 1), U(-1, 1))),
    "mul": (lambda x, y: x * y, (U(-1, 1), U(-1, 1))),
    "div": (lambda x, y: x / y, (U(-1, 1), U(0.5, 2))),
    "rem": (lax.rem, (U(0.1, 0.9), U(1.5, 2))),
    "atan2": (fnp.arctan2, (U(-1, 1), U(0.5, 2))),
    "max": (fnp.maximum, (distinct((3,)), distinct((3,)) + 0.05)),
    "min": (fnp.minimum, (distinct((3,)), distinct((3,)) + 0.05)),
    "scalar_broadcast": (lambda x, s: x * s + s, (U(-1, 1), np.float64(0.7))),
    "select_n": (lambda x, y: fnp.where(x > 0, x * y, y), (np.array([0.5, -0.5, 1.0]), U(-1, 1))),
    # float32 input (so check_grads uses float32 step and tolerances), float64 output.
    "convert": (lambda x: lax.convert_element_type(x, "float64") ** 2,
                (U(-1, 1).astype(np.float32),)),
    "clamp": (lambda x: lax.clamp(-0.5, x, 0.5), (np.array([-0.9, 0.1, 0.9]),)),
    "broadcast_in_dim": (lambda x: lax.broadcast_in_dim(x, (2, 3), (1,)) * x, (U(-1, 1),)),
    "reshape_transpose": (lambda x: (x.reshape(2, 3).T * np.arange(6).reshape(3, 2)),
                          (U(-1, 1, (6,)),)),
    "squeeze_expand": (lambda x: fnp.squeeze(fnp.expand_dims(x, 0), 0) ** 2, (U(-1, 1),)),
    "concatenate": (lambda x, y: fnp.concatenate([x, y * 2, x]), (U(-1, 1), U(-1, 1, (2,)))),
    "pad": (lambda x: lax.pad(x, 0.5, [(2, -1, 1)]) * 3, (U(-1, 1, (4,)),)),
    "pad_value": (lambda x, v: lax.pad(x, v, [(1, 2, 1)]), (U(-1, 1, (3,)), np.float64(0.3))),
    "slice_strided": (lambda x: x[1:7:2] * x[::-3], (U(-1, 1, (8,)),)),
    "rev": (lambda x: lax.rev(x, (0, 1)) * x, (U(-1, 1, (2, 3)),)),
    "dynamic_slice": (lambda x: lax.dynamic_slice(x, (fnp.array(1),), (2,)), (U(-1, 1, (4,)),)),
    "dynamic_update_slice": (lambda x, u: lax.dynamic_update_slice(x, u * u, (fnp.array(1),)),
                             (U(-1, 1, (4,)), U(-1, 1, (2,)))),
    "gather": (lambda x: x[fnp.array([[0, 2], [2, 1]])][..., 0] * x[1:, fnp.array([0, 0])],
               (U(-1, 1, (3, 3)),)),
    "scatter_set": (lambda x, u: x.at[fnp.array([0, 2, 0])].set(u * 3), (U(-1, 1), U(-1, 1))),
    "scatter_add": (lambda x, u: x.at[fnp.array([0, 2, 0])].add(u * u), (U(-1, 1), U(-1, 1))),
    "scatter_mul": (lambda x, u: x.at[fnp.array([0, 2, 0])].multiply(u),
                    (U(-1, 1), np.array([0.5, 0.0, 1.5]))),
    "scatter_max": (lambda x, u: x.at[fnp.array([0, 2, 0])].max(u),
                    (distinct((3,)), distinct((3,)) + 0.05)),
    "scatter_min": (lambda x, u: x.at[fnp.array([0, 2, 0])].min(u),
                    (distinct((3,)), distinct((3,)) + 0.05)),
    "reduce_sum": (lambda x: fnp.sum(x, axis=1) * fnp.sum(x), (U(-1, 1, (2, 3)),)),
    "reduce_max": (lambda x: fnp.max(x, axis=0), (distinct((3, 2)),)),
    "reduce_min": (lambda x: fnp.min(x), (distinct((3, 2)),)),
    "reduce_prod": (lambda x: fnp.prod(x, axis=1), (U(0.5, 1.5, (2, 3)),)),
    "reduce_prod_zero": (lambda x: fnp.prod(x * np.array([1.0, 0.0, 1.0])), (U(0.5, 1.5),)),
    "cumsum": (lambda x: fnp.cumsum(x, axis=0) ** 2, (U(-1, 1, (3, 2)),)),
    "cumprod": (lambda x: fnp.cumprod(x), (U(0.5, 1.5, (4,)),)),
    "cummax": (lambda x: lax.cummax(x, 0), (distinct((4,)),)),
    "cummin": (lambda x: lax.cummin(x, 0, reverse=True), (distinct((4,)),)),
    "cumlogsumexp": (lambda x: lax.cumlogsumexp(x, 0), (U(-1, 1, (4,)),)),
    "dot_general": (lambda a, b: a @ b, (U(-1, 1, (2, 3)), U(-1, 1, (3, 2)))),
    # complex intermediates between real inputs and outputs (tests/test_complex.py has more)
    "complex_parts": (lambda x, y: fnp.real(fnp.exp(lax.complex(x, y)) * lax.conj(
        lax.complex(y, x))) + fnp.imag(lax.complex(x, y) ** 2), (U(-1, 1), U(-1, 1))),
    "complex_matmul": (lambda a, b: fnp.abs(lax.complex(a, b.T) @ lax.complex(b, a.T)),
                       (U(0.2, 1, (2, 3)), U(0.2, 1, (3, 2)))),
    "fft": (lambda x: fnp.abs(fnp.fft.fft2(x * (1 + 0.5j))) + fnp.fft.irfft(fnp.fft.rfft(x) ** 2),
            (U(-1, 1, (3, 4)),)),
    "dot_batched": (lambda a, b: fnp.einsum("bij,bjk->bik", a, b),
                    (U(-1, 1, (2, 2, 3)), U(-1, 1, (2, 3, 2)))),
    "dot_vector": (lambda a, b: fnp.dot(a, b), (U(-1, 1, (3,)), U(-1, 1, (3, 2)))),
    "conv": (lambda x, w: lax.conv_general_dilated(x, w, (2, 1), [(1, 0), (0, 1)], (1, 2), (1, 1),
                                                   ("NHWC", "HWIO", "NHWC")),
             (U(-1, 1, (1, 4, 3, 2)), U(-1, 1, (2, 2, 2, 3)))),
    "conv_feature_groups": (lambda x, w: lax.conv_general_dilated(
        x, w, (1,), "SAME", rhs_dilation=(2,), feature_group_count=2),
        (U(-1, 1, (2, 4, 4)), U(-1, 1, (4, 2, 2)))),
    "conv_batch_groups": (lambda x, w: lax.conv_general_dilated(
        x, w, (1,), [(1, 1)], batch_group_count=2), (U(-1, 1, (2, 2, 3)), U(-1, 1, (4, 2, 2)))),
    "reduce_window_sum": (lambda x: lax.reduce_window(x, 0.0, lax.add, (2, 2), (1, 2), "SAME"),
                          (U(-1, 1, (3, 4)),)),
    "reduce_window_max": (lambda x: lax.reduce_window(x, -fnp.inf, lax.max, (2, 2), (1, 1),
                                                      [(1, 0), (0, 1)]), (distinct((3, 3)),)),
    "reduce_window_min": (lambda x: lax.reduce_window(x, fnp.inf, lax.min, (3,), (2,), "VALID",
                                                      window_dilation=(2,)), (distinct((7,)),)),
    # The linear primitives of max pooling's JVP and VJP, differentiated again.
    "select_and_gather_add": (lambda x, t: ft.jvp(
        lambda v: lax.reduce_window(v, -fnp.inf, lax.max, (2,), (1,), "VALID"), (x,), (t * t,))[1],
        (distinct((4,)), U(-1, 1, (4,)))),
    "select_and_scatter_add": (lambda x: ft.grad(lambda v: fnp.sum(lax.reduce_window(
        v, -fnp.inf, lax.max, (2,), (1,), "VALID") ** 3))(x), (distinct((4,)),)),
    "sort": (lambda x: fnp.sort(x) * np.arange(1.0, 5.0), (distinct((4,)),)),
    "sort_2d": (lambda x: fnp.sort(x, axis=0) ** 2, (distinct((3, 2)),)),
    "logsumexp": (ft.scipy.special.logsumexp, (U(-1, 1, (4,)),)),
    "softmax": (ft.nn.softmax, (U(-1, 1, (4,)),)),
    "norm": (fnp.linalg.norm, (U(0.5, 1, (3,)),)),
    "mean_var": (lambda x: fnp.var(x) + fnp.mean(x) ** 2, (U(-1, 1, (5,)),)),
    "digamma": (lax.digamma, (U(0.5, 4),)),
    "polygamma": (lambda x: lax.polygamma(fnp.full_like(x, 1.0), x), (U(0.5, 3),)),
    "zeta": (lambda q: lax.zeta(fnp.full_like(q, 3.0), q), (U(0.5, 3),)),
    "fma": (lax.fma, (U(-1, 1), U(-1, 1), U(-1, 1))),
    # Piecewise constant: zero derivatives, checked where finite differences agree (off steps).
    "floor_ceil_round": (lambda x: x * (fnp.floor(x) + fnp.ceil(x) * 2 + fnp.round(x) * 3),
                         (np.array([-1.3, 0.2, 1.6]),)),
    # A gradient's fan-in (add_any) differentiated again.
    "add_any": (lambda x: ft.grad(lambda v: fnp.sum(v * fnp.sin(v)))(x), (U(-2, 2),)),
    "iota": (lambda x: x * lax.iota("float64", 3), (U(-1, 1),)),
    # Decompositions of well-conditioned matrices with distinct eigen/singular values (their
    # derivatives are defined there); test_linalg_decomp.py tests them further.
    "cholesky": (lambda a: lax.linalg.cholesky(a @ a.T + 3 * fnp.eye(3)), (U(-1, 1, (3, 3)),)),
    "triangular_solve": (lambda a, b: lax.linalg.triangular_solve(
        a + 3 * fnp.eye(3), b, left_side=True, lower=True), (U(-1, 1, (3, 3)), U(-1, 1, (3, 2)))),
    "lu": (lambda a: lax.linalg.lu(a + 3 * fnp.eye(3))[0], (U(-1, 1, (3, 3)),)),
    "qr": (lambda a: fnp.concatenate(lax.linalg.qr(a, full_matrices=False)),
           (U(-1, 1, (4, 3)),)),
    "eigh": (lambda a: (lambda v, w: fnp.concatenate([v, w[None]]))(*lax.linalg.eigh(a)),
             (U(-1, 1, (3, 3)),)),
    "svd": (lambda a: (lambda u, s, vt: fnp.concatenate([u * s, vt]))(
        *lax.linalg.svd(a, full_matrices=False)), (U(-1, 1, (3, 2)),)),
    # eig: a rotation block (eigenvalues +-2i) and 5, perturbed: distinct, one complex pair.
    # Real and imaginary parts: the table's checks take real outputs.
    "eig": (lambda a: (lambda z: fnp.concatenate([fnp.real(z), fnp.imag(z)]))(
        (lambda w, vl, vr: fnp.concatenate([vl, vr, w[None]]))(*lax.linalg.eig(
            0.3 * a + fnp.array([[0.0, -2.0, 0.0], [2.0, 0.0, 0.0], [0.0, 0.0, 5.0]])))),
        (U(-1, 1, (3, 3)),)),
    # One ulp away from x: the derivative of x in x, none in the direction.
    "nextafter": (lambda x, y: lax.nextafter(x, y) * x, (U(0.5, 1), U(2, 3))),
    # Diagonally dominant (far from singular); its own generator, so no later input moves.
    "tridiagonal_solve": (lambda dl, d, du, b: lax.linalg.tridiagonal_solve(dl, d + 4.0, du, b),
                          tuple(np.random.default_rng(11).uniform(-1, 1, s)
                                for s in ((4,), (4,), (4,), (4, 2)))),
}


def _indicator_features(x):
    """Functions of x that are locally constant: comparisons, bitwise ops, argmax/argmin,
    all/any, bitcasts, sign."""
    bits = lax.bitcast_convert_type(x, "int64")
    pos, big = x > 0.1, x >= 1.0
    b = [lax.ne(x, 0.5), lax.eq(x, 0.5), lax.lt(x, 0.0), lax.le(x, 0.0), lax.ge(x, 0.0),
         pos & big, pos | big, pos ^ big, ~pos, fnp.all(pos) & pos, fnp.any(big) | pos]
    ints = [fnp.argmax(x) + fnp.argmin(x) + fnp.zeros(x.shape, "int64"),
            # Sign and exponent bits only: the mantissa's change under finite differences.
            lax.shift_left(lax.shift_right_logical(bits, 63), 1),
            lax.shift_right_arithmetic(bits, 63), lax.population_count(bits >> 52)]
    floats = [fnp.sign(x)]
    return sum(fnp.asarray(v, "float64") * (i + 1) for i, v in enumerate(b + ints + floats))


def test_locally_constant_primitives_have_zero_derivatives():
    x = np.array([-1.2, 0.3, 0.7, 1.9])
    feats = np.asarray(_indicator_features(x))
    g = ft.grad(lambda v: fnp.sum(v * _indicator_features(v)))(x)
    np.testing.assert_array_equal(g, feats)  # d/dx [x * c(x)] = c(x) where c is constant
    check_grads(_indicator_features, (x,), order=2)
    _, t = ft.jvp(_indicator_features, (x,), (np.ones(4),))
    np.testing.assert_array_equal(t, np.zeros(4))


@pytest.mark.parametrize("name", sorted(CASES))
def test_check_grads_float64(name):
    f, args = CASES[name]
    check_grads(f, args, order=2)


@pytest.mark.parametrize("name", ["sin", "tanh", "logistic", "mul", "div", "dot_general", "sort",
                                  "reduce_max", "cumprod", "gather", "scatter_add", "logsumexp",
                                  "pow", "exp", "conv", "conv_feature_groups",
                                  "reduce_window_max", "reduce_window_sum"])
def test_check_grads_float32(name):
    f, args = CASES[name]
    args32 = tuple(np.asarray(a, np.float32) for a in args)
    check_grads(f, args32, order=1)


@pytest.mark.parametrize("name", sorted(CASES))
def test_transformed_jaxprs_typecheck(name):
    f, args = CASES[name]
    fs = lambda *a: fnp.sum(fnp.asarray(f(*a)))  # noqa: E731
    ft.check_jaxpr(ft.make_jaxpr(ft.grad(fs))(*args))
    ft.check_jaxpr(ft.make_jaxpr(lambda *a: ft.jvp(f, a, a))(*args))
    ft.check_jaxpr(ft.make_jaxpr(lambda *a: ft.linearize(f, *a)[1](*a))(*args))


def test_check_grads_catches_a_wrong_rule():
    @ft.custom_jvp
    def f(x):
        return fnp.sin(x)

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return fnp.sin(x), 1.1 * fnp.cos(x) * t  # 10% off: must be detected

    with pytest.raises(AssertionError, match="finite differences"):
        check_grads(f, (np.array([0.3, 0.5]),), order=1, modes=("fwd",))


def test_check_grads_catches_inconsistent_vjp():
    @ft.custom_vjp
    def f(x):
        return x * 2.0

    f.defvjp(lambda x: (x * 2.0, None), lambda res, g: (g * 3.0,))  # transpose is wrong
    with pytest.raises(AssertionError, match="not the transpose"):
        check_grads(f, (np.array([0.3, 0.5]),), order=1, modes=("rev",))


def test_higher_order_matches_analytic():
    f = lambda x: fnp.sin(x) * x  # noqa: E731
    x = 0.7
    d1 = np.sin(x) + x * np.cos(x)
    d2 = 2 * np.cos(x) - x * np.sin(x)
    d3 = -3 * np.sin(x) - x * np.cos(x)
    d4 = -4 * np.cos(x) + x * np.sin(x)
    g = f
    for want in (d1, d2, d3, d4):
        g = ft.grad(g)
        np.testing.assert_allclose(float(g(x)), want, rtol=1e-12)


def test_forward_over_reverse_and_reverse_over_forward():
    f = lambda x: fnp.sum(fnp.tanh(x) ** 3)  # noqa: E731
    x = fnp.array([0.1, -0.4, 0.9])
    v = fnp.array([1.0, 2.0, -1.0])
    hvp_fr = ft.jvp(ft.grad(f), (x,), (v,))[1]
    hvp_rf = ft.grad(lambda y: fnp.vdot(ft.jvp(f, (y,), (v,))[1], 1.0))(x)
    hvp_hess = ft.hessian(f)(x) @ v
    np.testing.assert_allclose(hvp_fr, hvp_hess, rtol=1e-12)
    np.testing.assert_allclose(hvp_rf, hvp_hess, rtol=1e-12)


def test_eager_grad_allows_python_control_flow():
    def f(x):
        if x > 0:
            return x ** 2
        return -3.0 * x
    assert float(ft.grad(f)(2.0)) == 4.0
    assert float(ft.grad(f)(-2.0)) == -3.0
    # ... also at second order
    assert float(ft.grad(ft.grad(f))(2.0)) == 2.0


def test_stop_gradient_blocks_derivatives():
    x = fnp.array([0.5, -1.5])
    g = ft.grad(lambda x: fnp.sum(x * lax.stop_gradient(x)))(x)
    np.testing.assert_array_equal(g, x)  # d/dx [x * c] with c = x held constant
    assert float(ft.grad(lambda x: lax.stop_gradient(x) ** 2)(3.0)) == 0.0


def test_integer_inputs_get_zero_tangents():
    f = lambda x, n: x * n  # noqa: E731
    y, t = ft.jvp(f, (2.0, 3), (1.0, 0))
    assert float(y) == 6.0 and float(t) == 3.0
    g = ft.grad(f, argnums=0)(2.0, 3)
    assert float(g) == 3.0


def test_jacobians_of_pytree_arguments_are_nested_as_in_jax():
    # Outer structure: the output's; inner: the differentiated argument's (a tuple of them
    # for tuple argnums). Analytic oracle: d(a*a + b)/da = diag(2a), d/db = 1,
    # d(sum(a) * b)/da = b, d/db = sum(a).
    def f(y, c):
        a, d = y
        return (a * a + d["b"] * c, {"b": fnp.sum(a) * d["b"]})
    a, b, c = np.array([1.0, 2.0]), 3.0, 1.0
    y = (fnp.array(a), {"b": fnp.array(b)})
    want = ((np.diag(2 * a), {"b": np.ones(2)}), {"b": (np.full(2, b), {"b": a.sum()})})
    for jac in (ft.jacfwd, ft.jacrev):
        got = jac(f)(y, c)
        assert ft.tree_util.tree_structure(got) == ft.tree_util.tree_structure(want)
        for g, w in zip(ft.tree_util.tree_leaves(got), ft.tree_util.tree_leaves(want)):
            np.testing.assert_array_equal(g, w)  # exact: products of small integers
        both = jac(f, argnums=(0, 1))(y, c)
        assert ft.tree_util.tree_structure(both[1]["b"]) == \
            ft.tree_util.tree_structure((want[1]["b"], 0.0))
        np.testing.assert_array_equal(both[0][1], np.full(2, b))


def test_jvp_zero_tangents_are_arrays():
    """An output that does not depend on the inputs gets a zero tangent of its type, an Array
    as in JAX (libraries compare leaf types, e.g. equinox's tree_equal(typematch=True))."""
    _, t = ft.jvp(lambda x: fnp.zeros((2, 3), np.float32), (fnp.ones(3),), (fnp.ones(3),))
    assert type(t) is ft.Array and t.shape == (2, 3) and t.dtype == np.float32
    np.testing.assert_array_equal(t, np.zeros((2, 3)))
    _, t = ft.jit(lambda x: ft.jvp(lambda y: fnp.ones(2), (x,), (x,)))(fnp.ones(1))
    assert type(t) is ft.Array
    np.testing.assert_array_equal(t, np.zeros(2))


def test_every_primitive_has_a_derivative_test():
    programs = list(CASES.values()) + [(_indicator_features, (np.ones(4),))]
    assert_every_primitive_covered(primitives_in(programs), "a derivative test")
