"""ft.testing.check_transforms: correct functions pass every law (pytrees, reductions, products,
non-scalar outputs, integer arguments, custom rules that are right), and each law catches a
rule that breaks it, named as the first failing law; the float_arrays strategy."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import functrans as ft
import functrans.numpy as fnp
from functrans.core.trace import Tracer
from functrans.testing import (LAWS, TransformLawError, TransformReport, check_transforms,
                               float_arrays)

RNG = np.random.default_rng(0)
X = RNG.standard_normal(5)
FIRST_ORDER = LAWS[:-1]


def failing_law(f, *args, **kwargs):
    with pytest.raises(TransformLawError) as info:
        check_transforms(f, *args, **kwargs)
    err = info.value
    assert isinstance(err, AssertionError)
    assert err.report.failed == (err.law,)
    return err


# ---- correct functions pass ----------------------------------------------------------------------
@pytest.mark.parametrize("f", [
    lambda x: fnp.sin(x) * x,
    lambda x: fnp.tanh(x).sum(),
    lambda x: fnp.max(x * x),
    lambda x: fnp.cumsum(fnp.exp(x / 4)),
    lambda x: x[::-1] / (2.0 + fnp.cos(x)),
], ids=["elementwise", "sum", "max", "cumsum", "reverse"])
def test_elementwise_and_reductions_pass(f):
    report = check_transforms(f, X, order=2)
    assert report.passed == LAWS and report.skipped == {}


def test_matmul_pytrees_in_and_out_float32():
    params = {"w": RNG.standard_normal((4, 3)).astype("float32"),
              "b": RNG.standard_normal(3).astype("float32")}
    x = RNG.standard_normal((6, 4)).astype("float32")

    def layer(p, x):
        h = fnp.tanh(x @ p["w"] + p["b"])
        return {"h": h, "norms": (h * h).sum(axis=1)}, fnp.mean(h)

    report = check_transforms(layer, params, x, order=2)
    assert report.passed == LAWS


def test_non_scalar_output_uses_vjp_for_the_grad_laws():
    a = RNG.standard_normal((3, 3))
    report = check_transforms(lambda m, v: m @ v, a, X[:3])
    assert report.passed == FIRST_ORDER
    assert report.skipped == {"hessian": "second order needs order=2"}


def test_integer_arguments_skip_derivative_laws():
    report = check_transforms(lambda i, j: i * j + 1, np.arange(4), np.int64(3))
    assert report.passed == ("jit", "vmap")
    assert set(report.skipped) == set(LAWS[2:])
    assert "no floating-point inputs" in report.skipped["jvp"]


def test_integer_outputs_skip_derivative_laws():
    report = check_transforms(lambda x: fnp.argmax(x), X)
    assert report.passed == ("jit", "vmap")
    assert report.skipped["vjp"] == "no floating-point outputs"


def test_mixed_integer_and_float_arguments():
    # k is an index and a power: batched unchanged for vmap, never differentiated.
    def f(x, k):
        return x[k] * x ** k

    report = check_transforms(f, X, np.int32(2), order=2)
    assert report.passed == LAWS


def test_argnums_and_laws_select():
    f = lambda x, y: fnp.sin(x) * y  # noqa: E731
    assert check_transforms(f, X, X, argnums=1).passed == FIRST_ORDER
    report = check_transforms(f, X, X, laws=["jvp", "vjp"])
    assert report.passed == ("jvp", "vjp") and report.skipped == {}
    with pytest.raises(ValueError, match="unknown laws"):
        check_transforms(f, X, X, laws=["grad"])
    with pytest.raises(ValueError, match="order"):
        check_transforms(f, X, X, order=3)
    with pytest.raises(ValueError, match="argnums"):
        check_transforms(f, X, X, argnums=2)


def test_complex_inputs():
    z = (RNG.standard_normal(3) + 1j * RNG.standard_normal(3)).astype("complex128")
    report = check_transforms(lambda z: fnp.abs(z * z + 1.0) ** 2, z)
    assert report.passed == FIRST_ORDER


def test_python_scalar_arguments_stay_weakly_typed():
    assert check_transforms(lambda x, y: x * fnp.exp(y), 0.5, 1.5).passed == FIRST_ORDER
    # 0.5 promotes like a Python float (a float32 result) in every law, batched or perturbed
    x32 = X.astype("float32")
    assert check_transforms(lambda x, y: x * y + fnp.sin(y), x32, 0.5, order=2).passed == LAWS


def test_key_arguments():
    def noisy(key, x):
        return x * ft.random.normal(key, x.shape)

    assert check_transforms(noisy, ft.random.key(0), X).passed == FIRST_ORDER


def test_custom_vjp_without_forward_mode_skips_it():
    @ft.custom_vjp
    def f(x):
        return fnp.sin(x)
    f.defvjp(lambda x: (fnp.sin(x), fnp.cos(x)), lambda c, g: (g * c,))

    report = check_transforms(f, X, order=2)
    assert report.passed == ("jit", "vmap", "vjp", "jit(grad)", "vmap(grad)", "hessian")
    assert "forward mode is not defined" in report.skipped["jvp"]
    assert "forward mode is not defined" in report.skipped["linearize"]


def test_report_prints_a_table():
    report = check_transforms(lambda x: x * 2.0, X, laws=("jit", "jvp"))
    assert isinstance(report, TransformReport)
    lines = str(report).splitlines()
    assert lines[0] == "check_transforms(<lambda>): 2 passed, 0 skipped"
    assert lines[1].split()[:2] == ["jit", "passed"]
    assert repr(report) == str(report)


# ---- each law catches a broken rule --------------------------------------------------------------
def test_jit_law_catches_a_traced_path_that_differs():
    # An eager fast path and a traced path that lowers precision: what the user runs under
    # jit is not what they tested eagerly.
    def f(x):
        if isinstance(x, Tracer):
            return fnp.exp(x.astype("float32")).astype(x.dtype)
        return fnp.exp(x)

    err = failing_law(f, X)
    assert err.law == "jit"
    assert "jit(f) vs f" in str(err) and "worst at out[" in str(err)
    assert "tolerance" in str(err)


def test_jit_law_reports_a_transformation_that_raises():
    def f(x):
        return x if x.sum() > 0 else -x  # Python control flow on a traced value

    err = failing_law(f, X)
    assert err.law == "jit" and "jit(f) raised TracerBoolConversionError" in str(err)
    assert isinstance(err.__cause__, ft.ConcretizationTypeError)


def test_vmap_law_catches_a_wrong_batching_rule():
    @ft.custom_batching.custom_vmap
    def f(x):
        return fnp.sin(x)

    @f.def_vmap
    def f_vmap(axis_size, in_batched, x):
        return fnp.sin(x[::-1]), in_batched[0]  # mixes up the batch elements

    err = failing_law(f, X)
    assert err.law == "vmap" and "in_axes=0" in str(err)
    assert err.report.passed == ("jit",)


def test_vmap_law_names_the_output_leaf_and_the_partly_batched_call():
    @ft.custom_batching.custom_vmap
    def scale(x, y):
        return x * y

    @scale.def_vmap
    def scale_vmap(axis_size, in_batched, x, y):
        # wrong only when y alone is batched: x is broadcast the wrong way round
        if in_batched == [False, True]:
            return y * x[0], True
        out = x * y
        return out, in_batched[0] or in_batched[1]

    def f(x, y):
        return {"a": x + 1.0, "b": scale(x, y)}

    err = failing_law(f, X, X + 2.0)
    assert err.law == "vmap"
    assert "in_axes=(None, 0)" in str(err) and "out['b']" in str(err)


def test_jvp_law_catches_a_wrong_jvp_rule():
    @ft.custom_jvp
    def f(x):
        return fnp.sin(x)

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return fnp.sin(x), -fnp.sin(x) * t  # the second derivative, not the first

    err = failing_law(f, X)
    assert err.law == "jvp" and "central differences" in str(err)
    assert err.report.passed == ("jit", "vmap")


def test_vjp_law_catches_a_backward_pass_inconsistent_with_the_forward():
    @ft.custom_vjp
    def f(x, y):
        return x * fnp.exp(y)

    def f_fwd(x, y):
        e = fnp.exp(y)
        return x * e, (x, e)

    def f_bwd(res, g):
        x, e = res
        return g * e, g * e  # forgets the factor x in d/dy

    f.defvjp(f_fwd, f_bwd)
    err = failing_law(f, X, X / 2)
    assert err.law == "vjp"
    assert "<ct, J t>" in str(err) and "central differences" in str(err)
    assert "the largest difference is in the cotangent of args[1]" in str(err)
    assert err.report.passed == ("jit", "vmap")
    assert "jvp" in err.report.skipped


def _tangent_dependent(scale_when_traced):
    """sin with a JVP rule that is right on concrete tangents and scaled by
    ``scale_when_traced`` when the tangent is traced (linearize, vjp)."""
    @ft.custom_jvp
    def f(x):
        return fnp.sin(x)

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        k = scale_when_traced if isinstance(t, Tracer) else 1.0
        return fnp.sin(x), k * fnp.cos(x) * t
    return f


def test_linearize_law_catches_a_rule_that_differs_when_staged():
    err = failing_law(_tangent_dependent(2.0), X, laws=("jvp", "linearize"))
    assert err.law == "linearize" and "linear function vs jvp(f)" in str(err)
    # vjp transposes the same staged linear program, so with every law it fails first.
    assert failing_law(_tangent_dependent(2.0), X).law == "vjp"


def test_jit_grad_law_catches_a_rule_that_differs_under_jit():
    @ft.custom_jvp
    def f(x):
        return fnp.sin(x)

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        # the derivative's fast path for concrete primals is right; its traced one computes
        # in single precision
        c = fnp.cos(x.astype("float32")).astype(x.dtype) if isinstance(x, Tracer) else fnp.cos(x)
        return fnp.sin(x), c * t

    err = failing_law(lambda x: f(x).sum(), X)
    assert err.law == "jit(grad)" and "jit(grad(f)) vs grad(f)" in str(err)
    assert err.report.passed == ("jit", "vmap", "jvp", "vjp", "linearize")
    assert "d/d args[0]" in str(err)


def test_vmap_grad_law_catches_a_wrong_batching_rule_in_a_derivative():
    @ft.custom_batching.custom_vmap
    def my_cos(x):
        return fnp.cos(x)

    @my_cos.def_vmap
    def my_cos_vmap(axis_size, in_batched, x):
        return fnp.cos(x[:1]) * fnp.ones_like(x), in_batched[0]  # the first row for all

    @ft.custom_jvp
    def my_sin(x):
        return fnp.sin(x)

    @my_sin.defjvp
    def my_sin_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return fnp.sin(x), my_cos(x) * t

    err = failing_law(my_sin, X)
    assert err.law == "vmap(grad)" and "vmap(vjp(f))" in str(err)
    assert err.report.passed == LAWS[:6]


def _sin_with_wrong_second_derivative():
    @ft.custom_jvp
    def my_cos(x):
        return fnp.cos(x)

    @my_cos.defjvp
    def my_cos_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return fnp.cos(x), fnp.sin(x) * t  # sign error

    @ft.custom_jvp
    def my_sin(x):
        return fnp.sin(x)

    @my_sin.defjvp
    def my_sin_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return fnp.sin(x), my_cos(x) * t
    return my_sin


def test_hessian_law_catches_a_wrong_second_derivative():
    f = _sin_with_wrong_second_derivative()
    assert check_transforms(f, X).passed == FIRST_ORDER
    err = failing_law(f, X, order=2)
    assert err.law == "hessian" and "jvp(jvp(f))" in str(err)


def test_user_tolerances_per_law():
    @ft.custom_jvp
    def f(x):
        return fnp.sin(x)

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return fnp.sin(x), 1.001 * fnp.cos(x) * t  # 0.1% off

    assert failing_law(f, X, laws=["jvp"]).law == "jvp"
    assert check_transforms(f, X, laws=["jvp"], rtol={"jvp": 1e-2}).passed == ("jvp",)


# ---- driven by hypothesis ----------------------------------------------------------------------
@settings(max_examples=8)
@given(float_arrays(shape=st.sampled_from([(), (3,), (2, 3)]),
                    dtype=st.sampled_from(["float32", "float64"])))
def test_hypothesis_smooth_function(x):
    check_transforms(lambda x: fnp.tanh(x) * fnp.exp(-x * x / 16), x, order=2)


@settings(max_examples=8)
@given(float_arrays(shape=(4,), positive=True), float_arrays(shape=(4,), away_from=(0.0,)))
def test_hypothesis_domains_and_kinks(x, y):
    check_transforms(lambda x, y: fnp.log(x) * fnp.abs(y) + fnp.sqrt(x), x, y)


@settings(max_examples=8)
@given(float_arrays(shape=(3,), positive=True))
def test_hypothesis_catches_the_broken_rule(x):
    with pytest.raises(TransformLawError) as info:
        check_transforms(_sin_with_wrong_second_derivative(), x, order=2)
    assert info.value.law == "hessian"


@settings(max_examples=25)
@given(float_arrays(dtype=st.sampled_from(["float16", "float32", "float64"]), bound=5.0,
                    away_from=(1.0, -2.0), margin=0.25, max_dims=2))
def test_float_arrays_strategy(x):
    assert np.all(np.isfinite(x)) and np.all(np.abs(x) <= 5.0)
    assert np.all(np.abs(x.astype(np.float64) - 1.0) >= 0.25)
    assert np.all(np.abs(x.astype(np.float64) + 2.0) >= 0.25)
    tiny = np.finfo(x.dtype).tiny
    assert not np.any((x != 0) & (np.abs(x) < tiny))


@settings(max_examples=10)
@given(float_arrays(shape=(5,), dtype="float16", positive=True, bound=3.0))
def test_float_arrays_positive(x):
    assert x.dtype == np.float16 and np.all(x >= np.float16(0.1)) and np.all(x <= 3.0)


def test_face_exports():
    assert ft.testing.check_transforms is check_transforms
    for name in ("TransformLawError", "TransformReport", "LawResult", "LAWS", "float_arrays"):
        assert hasattr(ft.testing, name)
