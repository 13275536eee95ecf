"""Settings and jit options act: fast dispatch of NumPy scalars, 0-d arrays and pytrees,
disable_jit and debug_nans on cached signatures, debug_nans naming the primitive and line
under jit, check_tracer_leaks, donate_argnums, device/backend in the decorator form, and
inline."""
import re
import warnings

import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp
from functrans import lax


# ---- fast dispatch -----------------------------------------------------------------------------
@pytest.mark.parametrize("arg", [1.0, 3, True, np.float32(1.5), np.float64(-2.0), np.int32(7),
                                 np.float16(0.5), np.array(2.5), np.array(4, np.int8),
                                 fnp.asarray(1.25), fnp.asarray(np.float32(3.0))],
                         ids=lambda a: f"{type(a).__name__}-{np.asarray(a).dtype}")
def test_scalars_and_0d_arrays_dispatch_fast_with_the_traced_types(arg):
    traced = []
    f = ft.jit(lambda v: traced.append(1) or v * 2 + 1)
    first, second = f(arg), f(arg)
    want = ft.eval_shape(lambda v: v * 2 + 1, arg)  # the traced type (weak for Python scalars)
    value = np.asarray(arg).astype(want.dtype) * 2 + 1
    for got in (first, second):
        assert (got.dtype, got.weak_type) == (want.dtype, want.weak_type)
        np.testing.assert_array_equal(np.asarray(got), value)
    assert len(traced) == 1 and len(f._fast) == 1  # the second call took the fast path


def test_pytrees_and_keyword_arguments_dispatch_fast():
    traced = []

    def g(t, *, scale):
        traced.append(1)
        return {"y": t["a"] * t["b"][0] + t["b"][1], "n": None, "s": [t["a"] * scale]}

    f = ft.jit(g)
    tree = {"b": (np.float32(2.0), 1.0), "a": fnp.arange(3.0)}
    want = g(tree, scale=np.float64(0.5))
    traced.clear()
    for _ in range(3):
        got = f(tree, scale=np.float64(0.5))
        assert got.keys() == want.keys() and got["n"] is None
        np.testing.assert_array_equal(got["y"], want["y"])
        np.testing.assert_array_equal(got["s"][0], want["s"][0])
    assert len(traced) == 1 and len(f._fast) == 1
    # Another leaf type or structure is another signature: traced again, right result.
    tree64 = {"b": (np.float64(2.0), 1.0), "a": fnp.arange(3.0)}
    assert f(tree64, scale=0.5)["y"].dtype == np.float64
    listed = {"b": [np.float32(2.0), 1.0], "a": fnp.arange(3.0)}
    np.testing.assert_array_equal(f(listed, scale=0.5)["y"], want["y"])
    assert len(traced) == 3 and len(f._fast) == 3


def test_unsortable_dict_keys_and_other_leaves_take_the_general_path():
    f = ft.jit(lambda d: d[1] + d["a"])
    with pytest.raises(TypeError, match="sortable"):
        f({1: 1.0, "a": 2.0})
    assert len(f._fast) == 0


def test_fast_path_keeps_x64_and_backend_in_its_key():
    f = ft.jit(lambda v: v + 1)
    assert f(np.float64(1.0)).dtype == np.float64
    with ft.config.override(enable_x64=False):
        assert f(np.float32(1.0)).dtype == np.float32
        assert f(1.0).dtype == np.float32
    assert f(1.0).dtype == np.float64


# ---- disable_jit and debug_nans on cached signatures --------------------------------------------
def test_disable_jit_holds_for_signatures_already_cached():
    seen = []
    f = ft.jit(lambda x: seen.append(type(x).__name__) or x * 2)
    f(1.0)
    f(1.0)  # now in the fast-dispatch cache
    assert seen == ["StagingTracer"]
    with ft.config.override(disable_jit=True):
        assert float(f(1.0)) == 2.0
    assert seen == ["StagingTracer", "float"]
    f(1.0)
    assert seen == ["StagingTracer", "float"]  # back to the compiled program


def uses_log(x):
    y = fnp.sin(x) - 2.0
    return fnp.log(y) * 3.0  # the NaN comes from here


def test_debug_nans_under_jit_names_the_primitive_and_the_users_line():
    f = ft.jit(uses_log)
    assert np.isnan(float(f(1.0)))  # off: NaNs are returned
    assert np.isnan(float(f(1.0)))  # and the signature is in the fast-dispatch cache
    line = uses_log.__code__.co_firstlineno + 2
    with ft.config.override(debug_nans=True):
        with pytest.raises(FloatingPointError, match=rf"invalid value \(nan\) encountered in "
                           rf"log at test_jit_settings.py:{line} \(in uses_log\) inside "
                           rf"jit\(uses_log\)"):
            f(1.0)
        assert float(ft.jit(fnp.log)(2.0)) == np.log(2.0)  # no NaN: no error


def test_transformations_of_a_traced_program_keep_each_equations_line():
    # vmap and grad re-run jit's traced program (eval_jaxpr): what they stage for an equation
    # is recorded at the line that wrote it, not at the line that called the transformation.
    first = uses_log.__code__.co_firstlineno
    # The same operations written elsewhere first: shared caches (fnp's per-signature plans,
    # derivative rules) must not lend that code's lines to uses_log's equations.
    ft.make_jaxpr(ft.vmap(ft.grad(lambda x: fnp.log(fnp.sin(x) - 2.0) * 3.0)))(np.ones(3))
    jaxpr = ft.make_jaxpr(ft.vmap(ft.grad(ft.jit(uses_log))))(np.ones(3))
    forward = jaxpr.eqns[0].params["jaxpr"]
    lines = {e.prim.name: e.source.lineno for e in forward.eqns}
    assert lines == {"sin": first + 1, "cos": first + 1, "sub": first + 1,
                     "log": first + 2, "mul": first + 2}


def test_debug_nans_inside_nested_jit_and_under_grad():
    line = uses_log.__code__.co_firstlineno + 2
    outer = ft.jit(lambda x: ft.jit(uses_log)(x) + 1.0)
    with ft.config.override(debug_nans=True):
        with pytest.raises(FloatingPointError, match=rf"encountered in log at "
                           rf"test_jit_settings.py:{line} \(in uses_log\) inside "
                           rf"jit\(uses_log\)"):
            outer(1.0)
        with pytest.raises(FloatingPointError, match=r"encountered in log"):
            ft.grad(ft.jit(uses_log))(1.0)
        # Control flow: the NaN is reported at the line of the loop primitive holding it.
        looped = ft.jit(lambda x: lax.fori_loop(0, 2, lambda i, c: fnp.log(c - 5.0), x))
        with pytest.raises(FloatingPointError, match=r"encountered in log at "
                                                     r"test_jit_settings.py:\d+"):
            looped(1.0)


def test_debug_nans_when_the_nan_comes_from_an_input():
    with ft.config.override(debug_nans=True):
        with pytest.raises(FloatingPointError, match=r"jit\(<lambda>\) output 0; running the "
                                                     r"program eagerly.*produced none"):
            ft.jit(lambda x: x)(np.nan)
        with pytest.raises(FloatingPointError, match=r"encountered in mul"):
            ft.jit(lambda x: x * 2.0)(np.nan)


# ---- check_tracer_leaks -------------------------------------------------------------------------
class Box:
    pass


LEAKS = {
    "list": lambda store, box: lambda x: store.append(x) or x * 2,
    "attribute": lambda store, box: lambda x: setattr(box, "v", x) or x * 2,
    "global": lambda store, box: lambda x: globals().__setitem__("_LEAKED", x) or x * 2,
}
TRANSFORMS = {
    "jit": lambda f, x: ft.jit(f)(x),
    "grad": lambda f, x: ft.grad(lambda v: fnp.sum(f(v)))(x),
    "vmap": lambda f, x: ft.vmap(f)(x),
    "jvp": lambda f, x: ft.jvp(f, (x,), (x,)),
}


@pytest.mark.parametrize("transform", sorted(TRANSFORMS))
@pytest.mark.parametrize("leak", sorted(LEAKS))
def test_check_tracer_leaks_catches_tracers_kept_after_the_transformation(leak, transform):
    store, box = [], Box()
    f = LEAKS[leak](store, box)
    x = fnp.ones(3)
    TRANSFORMS[transform](f, x)  # off: nothing is checked
    store.clear()
    with ft.config.override(check_tracer_leaks=True):
        with pytest.raises(ft.UnexpectedTracerError, match=r"Leaked tracer f64\[.*held by "
                                                           r".*check_tracer_leaks is on"):
            TRANSFORMS[transform](f, x)
    globals().pop("_LEAKED", None)


def test_check_tracer_leaks_accepts_correct_programs():
    def closure(x):
        y = x * 2
        return ft.vmap(lambda z: z * y)(fnp.ones(3) * x)

    with ft.config.override(check_tracer_leaks=True):
        assert float(ft.grad(lambda x: fnp.sum(closure(x)))(1.0)) == 12.0
        h = ft.hessian(lambda x: fnp.sum(fnp.sin(x) * x))(fnp.ones(2))
        np.testing.assert_allclose(np.diag(h), 2 * np.cos(1.0) - np.sin(1.0), rtol=1e-12)
        loop = ft.jit(ft.grad(lambda x: lax.fori_loop(0, 3, lambda i, c: fnp.sin(c), x)))
        np.testing.assert_allclose(loop(0.5), ft.grad(
            lambda x: fnp.sin(fnp.sin(fnp.sin(x))))(0.5), rtol=1e-12)
        ys = ft.jit(lambda x: lax.scan(lambda c, v: (c + v, c * v), 0.0, x))(fnp.arange(4.0))
        np.testing.assert_array_equal(ys[1], [0.0, 0.0, 2.0, 9.0])


# ---- donate_argnums ------------------------------------------------------------------------------
def test_donation_is_validated():
    def f(x, y):
        return x + y

    with pytest.raises(ValueError, match="donate_argnums 2 is out of range"):
        ft.jit(f, donate_argnums=2)
    with pytest.raises(ValueError, match="static and donated arguments cannot intersect"):
        ft.jit(f, static_argnums=1, donate_argnums=1)
    with pytest.raises(ValueError, match="static and donated arguments cannot intersect"):
        ft.jit(f, static_argnames="y", donate_argnames="y")
    with pytest.raises(ValueError, match="donate_argnames 'z' is not a parameter"):
        ft.jit(f, donate_argnames="z")
    with pytest.raises(TypeError, match="donate_argnums must be integers"):
        ft.jit(f, donate_argnums="x")


def test_donation_warns_only_where_no_output_could_reuse_the_buffer():
    x = fnp.arange(3.0)
    usable = ft.jit(lambda a, b: a * b, donate_argnums=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(usable(x, 2.0), [0.0, 2.0, 4.0])
    np.testing.assert_array_equal(x, [0.0, 1.0, 2.0])  # the donated array stays valid
    unusable = ft.jit(lambda a: fnp.sum(a), donate_argnames="a")
    with pytest.warns(UserWarning, match=re.escape("some donated buffers were not usable: "
                                                   "f64[3]")):
        unusable(x)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert float(unusable(x)) == 3.0  # once per compiled signature
    with pytest.warns(UserWarning, match="not usable"):
        assert float(unusable(a=x)) == 3.0  # (a keyword call is another signature)


# ---- device / backend (decorator form) and inline ------------------------------------------------
def test_device_and_backend_act_in_the_decorator_form():
    with ft.config.override(num_cpu_devices=2):
        dev = ft.devices()[1]

        @ft.jit(device=dev)
        def placed(x):
            return x + 1

        for _ in range(2):  # the second call takes the fast path and must place it too
            out = placed(np.zeros(2))
            assert out.devices() == {dev}
            np.testing.assert_array_equal(out, [1.0, 1.0])

        @ft.jit(backend="cpu", static_argnums=1)
        def scaled(x, k):
            return x * k

        np.testing.assert_array_equal(scaled(np.ones(2), 3), [3.0, 3.0])
        with pytest.raises(RuntimeError, match="Unknown backend 'tpu'"):
            ft.jit(backend="tpu")
        with pytest.raises(ValueError, match="is not a device of backend 'cuda'"):
            ft.jit(fnp.sin, device=dev, backend="cuda")


def test_inline_records_the_equations_in_the_enclosing_trace():
    g = ft.jit(lambda x: fnp.sin(x) * 2.0, inline=True)
    jaxpr = ft.make_jaxpr(lambda x: g(x) + 1.0)(1.0)
    assert [e.prim.name for e in jaxpr.eqns] == ["sin", "mul", "add"]
    not_inlined = ft.make_jaxpr(lambda x: ft.jit(lambda v: fnp.sin(v) * 2.0)(x) + 1.0)(1.0)
    assert [e.prim.name for e in not_inlined.eqns] == ["jit", "add"]
    x = np.linspace(-1, 1, 5)
    # Compiled sin and cos are within 4 ulp (libmvec's bound): results of magnitude <= 2 are
    # within 2 * 4 eps * 1 absolutely (relative bounds fail near sin's zero at x = 0).
    tol = dict(rtol=0, atol=8 * np.finfo(np.float64).eps)
    np.testing.assert_allclose(ft.jit(lambda v: g(v) + 1.0)(x), np.sin(x) * 2 + 1, **tol)
    np.testing.assert_allclose(ft.vmap(ft.grad(g))(x), 2 * np.cos(x), **tol)
    np.testing.assert_allclose(g(x), np.sin(x) * 2, **tol)  # eager call: compiled
