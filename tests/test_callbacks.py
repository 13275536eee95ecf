"""pure_callback under every transformation: eager, jit (a host step between kernels), vmap
with each vmap_method (against a Python loop and JAX's argument layouts), grad (raises; works
through custom_jvp), and bad results (clear errors)."""
import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp
from functrans.primitives.pure_callback import pure_callback_p

from primitive_coverage import primitives_in


def _host_sin_plus(x, y):
    return np.sin(x) + y


def _f(x, y, method="sequential"):
    out = ft.ShapeDtypeStruct(np.broadcast_shapes(x.shape, y.shape), x.dtype)
    return ft.pure_callback(_host_sin_plus, out, x, y, vmap_method=method)


X = np.linspace(-1, 1, 6).reshape(2, 3)
Y = np.array([0.5, -1.0, 2.0])


def test_eager_and_jit_match_numpy():
    want = np.sin(X) + Y
    np.testing.assert_allclose(_f(fnp.asarray(X), fnp.asarray(Y)), want, rtol=1e-15)
    jitted = ft.jit(lambda x, y: _f(x, y) * 2 + 1)
    for _ in range(2):  # first call and the fast path
        np.testing.assert_allclose(jitted(X, Y), want * 2 + 1, rtol=1e-15)
    assert "pure_callback" in primitives_in([(lambda x, y: _f(x, y), (X, Y))])


def test_results_follow_result_shape_dtypes_and_pytrees():
    def host(d):
        return {"s": d["a"].sum(), "n": np.int64(d["a"].size)}

    spec = {"s": ft.ShapeDtypeStruct((), "float32"), "n": ft.ShapeDtypeStruct((), "int32")}
    out = ft.jit(lambda a: ft.pure_callback(host, spec, {"a": a}))(np.ones(4, np.float32))
    assert out["s"].dtype == np.float32 and out["n"].dtype == np.int32
    assert float(out["s"]) == 4.0 and int(out["n"]) == 4


@pytest.mark.parametrize("method", ["sequential", "expand_dims", "broadcast_all"])
def test_vmap_methods_match_a_loop_and_jax_layouts(method):
    seen = []

    def host(x, y):
        seen.append((x.shape, y.shape))
        return np.sin(x) + y

    def f(x, y):
        return ft.pure_callback(host, ft.ShapeDtypeStruct(x.shape, x.dtype), x, y,
                                vmap_method=method)

    want = np.stack([np.sin(r) + Y for r in X])
    got = ft.vmap(f, (0, None))(fnp.asarray(X), fnp.asarray(Y))
    np.testing.assert_allclose(got, want, rtol=1e-15)
    layouts = {"sequential": [((3,), (3,))] * 2, "expand_dims": [((2, 3), (1, 3))],
               "broadcast_all": [((2, 3), (2, 3))]}
    assert seen == layouts[method]
    # Batch axis not in front, nested vmap, and jit of vmap.
    seen.clear()
    got = ft.jit(ft.vmap(ft.vmap(f, (0, None)), (1, None)))(fnp.asarray(X), fnp.asarray(Y[0]))
    want = np.sin(X.T) + Y[0]
    np.testing.assert_allclose(got, want, rtol=1e-15)
    if method == "expand_dims":  # the outer batch axis first, then the inner one
        assert seen == [((3, 2), (1, 1))]
    elif method == "sequential":
        assert seen == [((), ())] * 6


def test_vmap_without_vmap_method_raises():
    with pytest.raises(NotImplementedError, match="vmap_method"):
        ft.vmap(lambda x: _f(x, fnp.ones(3), None))(fnp.asarray(X))
    with pytest.raises(ValueError, match="vmap_method must be one of"):
        _f(fnp.ones(3), fnp.ones(3), "vectorized")


def test_grad_raises_and_custom_jvp_gives_the_derivative():
    with pytest.raises(ValueError, match="does not support differentiation.*custom_jvp"):
        ft.grad(lambda x: fnp.sum(_f(x, fnp.zeros(3))))(fnp.asarray(X[0]))

    @ft.custom_jvp
    def sin(x):
        return _f(x, fnp.zeros_like(x))

    sin.defjvp(lambda p, t: (sin(p[0]), fnp.cos(p[0]) * t[0]))
    g = ft.grad(lambda x: fnp.sum(sin(x)))
    np.testing.assert_allclose(g(fnp.asarray(X)), np.cos(X), rtol=1e-15)
    np.testing.assert_allclose(ft.jit(ft.vmap(g))(X), np.cos(X), rtol=1e-15)
    # Values the derivative does not flow through may still come from a callback (as in JAX,
    # the callback's inputs must carry no tangent).
    h = ft.grad(lambda x: fnp.sum(x * _f(ft.lax.stop_gradient(x), fnp.zeros(3))))
    np.testing.assert_allclose(h(fnp.asarray(X[0])), np.sin(X[0]), rtol=1e-15)


def test_wrong_results_raise_clearly():
    spec = ft.ShapeDtypeStruct((3,), "float64")
    with pytest.raises(TypeError, match=r"returned shape \(2,\).*f64\[3\]"):
        ft.pure_callback(lambda v: v[:2], spec, fnp.ones(3))
    with pytest.raises(TypeError, match="returned dtype float64.*i64"):
        ft.pure_callback(lambda v: v, ft.ShapeDtypeStruct((3,), "int64"), fnp.ones(3))
    with pytest.raises(TypeError, match="structure"):
        ft.pure_callback(lambda v: (v, v), spec, fnp.ones(3))
    with pytest.raises(TypeError, match="expected a callable"):
        ft.pure_callback(3, spec, fnp.ones(3))
    with pytest.raises(TypeError, match="leaf 0 must have .shape"):
        ft.pure_callback(lambda v: v, [3], fnp.ones(3))


def test_the_callback_receives_writable_numpy_copies():
    kept = []

    def host(v):
        assert type(v) is np.ndarray
        v += 1  # must not change the caller's array
        kept.append(v)
        return v

    x = fnp.zeros(3)
    out = ft.pure_callback(host, ft.ShapeDtypeStruct((3,), "float64"), x)
    np.testing.assert_array_equal(x, np.zeros(3))
    np.testing.assert_array_equal(out, np.ones(3))
    assert pure_callback_p.host_only


@pytest.mark.parametrize("jit", [False, True])
def test_a_failing_callback_raises_jax_runtime_error_naming_its_exception(jit):
    # As JAX: the computation fails with a runtime error whose message carries the callback's
    # exception and traceback (equinox's error_if finds its exception's name there).
    def host(v):
        raise KeyError("boom")

    f = lambda x: ft.pure_callback(host, x, x, vmap_method="sequential")  # noqa: E731
    for g in (f, ft.vmap(f)):
        g = ft.jit(g) if jit else g
        with pytest.raises(ft.errors.JaxRuntimeError,
                           match=r"(?s)callback host raised KeyError.*KeyError: 'boom'") as info:
            g(fnp.ones(2))
        assert isinstance(info.value.__cause__, KeyError)
