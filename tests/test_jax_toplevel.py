"""JAX's small top-level modules and functions: typing, dtypes, errors, test_util,
ad_checkpoint (checkpoint policies), stages, and jacobian / device_get / typeof /
linear_transpose / ensure_compile_time_eval / named_scope / disable_jit / effects_barrier /
ShapeDtypeStruct / Device.

Golden values marked "JAX" were obtained by running JAX 0.10.2 (with x64 enabled, to match
functrans's default)."""
import contextlib
import functools
import io
import threading
import time
import typing

import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp
from functrans.dtypes import TypePromotionError
from functrans import checkpoint_policies as cp
from functrans import dtypes, errors, lax
from functrans.ad_checkpoint import checkpoint_name, print_saved_residuals
from functrans.core import background
from functrans.core.ir import walk_jaxprs
from functrans.test_util import check_grads, check_jvp, check_vjp


# ---- functrans.typing -------------------------------------------------------------------------
def test_array_like_accepts_arrays_scalars_and_tracers():
    from functrans.typing import ArrayLike
    for x in (fnp.ones(2), np.ones(2), np.float32(1), np.bool_(True), 1, 1.0, 1j, True):
        assert isinstance(x, ArrayLike), type(x)
    for x in ([1.0], None, "1.0"):  # JAX: not array-like
        assert not isinstance(x, ArrayLike), type(x)
    # As in JAX, a Union's isinstance checks the tracer's class, which is not Array's subclass.
    seen = []
    ft.make_jaxpr(lambda x: seen.append(isinstance(x, ArrayLike)) or x)(1.0)
    assert seen == [False]


def test_dtype_like_works_in_annotations():
    from functrans.typing import ArrayLike, DTypeLike

    def f(x: ArrayLike, dtype: DTypeLike = None) -> ft.Array:
        return fnp.asarray(x, dtype)
    hints = typing.get_type_hints(f)
    assert hints["dtype"] == DTypeLike and hints["x"] == ArrayLike
    assert isinstance("float32", DTypeLike)
    with pytest.raises(TypeError):  # past str, isinstance meets type[Any] (as in JAX)
        isinstance(np.dtype("int8"), DTypeLike)
    assert f(1, "int8").dtype == np.int8


# ---- functrans.dtypes -------------------------------------------------------------------------
ISSUBDTYPE_CASES = [  # (a, b, JAX's answer)
    ("float32", np.floating, True), ("float32", np.inexact, True),
    ("float32", np.integer, False), ("int8", np.signedinteger, True),
    ("uint8", np.signedinteger, False), ("uint8", np.unsignedinteger, True),
    ("bool", np.integer, False), ("bool", np.generic, True),
    ("complex64", np.floating, False), ("complex64", np.complexfloating, True),
    ("float16", np.number, True), ("int64", "int64", True), ("int64", "int32", False),
    ("float64", "float32", False), (float, fnp.floating, True), (int, fnp.integer, True),
    (complex, fnp.inexact, True), (bool, fnp.bool_, True), (fnp.float32, np.float32, True),
    (dtypes.float0, dtypes.float0, True), (dtypes.float0, np.generic, True),
    (dtypes.float0, np.floating, False)]


@pytest.mark.parametrize("a,b,want", ISSUBDTYPE_CASES)
def test_issubdtype_matches_jax(a, b, want):
    assert dtypes.issubdtype(a, b) is want


def test_issubdtype_takes_arrays_and_extended_types():
    assert dtypes.issubdtype(fnp.ones(2, "float32"), fnp.floating)
    assert dtypes.issubdtype(dtypes.prng_key, dtypes.extended)
    assert not dtypes.issubdtype("float32", dtypes.extended)
    # Raw keys are uint32 data, no typed key (as JAX's PRNGKey keys); random.key's are.
    key = ft.random.PRNGKey(0)
    assert key.dtype == np.uint32 and not dtypes.issubdtype(key.dtype, dtypes.prng_key)
    assert dtypes.issubdtype(ft.random.key(0).dtype, dtypes.prng_key)
    with pytest.raises(TypeError, match="not understood"):
        dtypes.issubdtype("foo", fnp.floating)


def test_float0_is_jaxs_zero_byte_dtype():
    assert dtypes.float0 == np.dtype([("float0", np.void, 0)])
    assert dtypes.float0.itemsize == 0 and np.zeros((3, 2), dtypes.float0).nbytes == 0


def test_canonicalize_dtype_follows_x64():
    assert dtypes.canonicalize_dtype(float) == np.float64
    assert dtypes.canonicalize_dtype(fnp.int8) == np.int8
    assert dtypes.canonicalize_dtype("U") == np.dtype("<U0")  # JAX passes others through
    with ft.config.override(enable_x64=False):  # JAX without x64
        assert [dtypes.canonicalize_dtype(d) for d in (np.uint64, np.complex128, "int16")] == \
            [np.uint32, np.complex64, np.int16]
    with pytest.raises(TypeError, match="not understood"):
        dtypes.canonicalize_dtype("foo")


RESULT_TYPE_CASES = [  # (args, JAX's (dtype, weak))
    ((float,), ("float64", True)), ((int,), ("int64", True)),
    ((float, np.float32), ("float32", False)), ((int, "int8"), ("int8", False)),
    ((1, 1.0), ("float64", True)), ((True,), ("bool", False)),
    ((fnp.float32,), ("float32", False)), ((np.ones(2, "float32"), 2j), ("complex64", False)),
    (("float16", fnp.int8), ("float16", False)), ((np.int64(3),), ("int64", False)),
    ((bool, int), ("int64", True)), ((fnp.asarray(1.0),), ("float64", True)),
    ((fnp.ones(2, "float32"), 1.0), ("float32", False))]


@pytest.mark.parametrize("args,want", RESULT_TYPE_CASES)
def test_result_type_matches_jax(args, want):
    got = dtypes.result_type(*args, return_weak_type_flag=True)
    assert got == (np.dtype(want[0]), want[1])
    assert dtypes.result_type(*args) == np.dtype(want[0])


def test_result_type_of_traced_values_and_bad_input():
    seen = []
    ft.make_jaxpr(lambda x: seen.append(dtypes.result_type(x, 2, return_weak_type_flag=True))
                  or x)(fnp.ones(2, "int16"))
    assert seen == [(np.dtype("int16"), False)]
    with ft.config.override(enable_x64=False):
        assert dtypes.result_type(1.0, return_weak_type_flag=True) == (np.float32, True)
    with pytest.raises(ValueError, match="at least one"):
        dtypes.result_type()
    with pytest.raises(TypeError, match="argument 1 is str"):
        dtypes.result_type("int8", "foo")
    with pytest.raises(TypeError, match="does not support"):
        dtypes.result_type(object)


def test_dtypes_bfloat16_is_the_numpy_namespaces_when_ml_dtypes_is_installed():
    pytest.importorskip("ml_dtypes")
    # equinox's deserialisation checks isinstance(x, jax.dtypes.bfloat16).
    assert dtypes.bfloat16 is fnp.bfloat16 and "bfloat16" in dtypes.__all__
    assert np.asarray(fnp.asarray([1.5], dtypes.bfloat16)).dtype == dtypes.bfloat16
    assert dtypes.finfo(dtypes.bfloat16).bits == 16


def test_finfo_iinfo_itemsize_and_scalar_types():
    for d in ("float16", "float32", "float64", "complex64"):
        assert dtypes.finfo(d).eps == np.finfo(d).eps and dtypes.finfo(d).bits == np.finfo(d).bits
    for d in ("int8", "uint16", "int64"):
        assert (dtypes.iinfo(d).min, dtypes.iinfo(d).max) == (np.iinfo(d).min, np.iinfo(d).max)
    assert dtypes.finfo(fnp.ones(2, "float32")).bits == 32 and dtypes.iinfo(fnp.uint8).max == 255
    with pytest.raises(ValueError, match="not inexact"):
        dtypes.finfo("int32")
    with pytest.raises(ValueError, match="Invalid integer"):
        dtypes.iinfo("float32")
    assert [dtypes.itemsize_bits(d) for d in ("float32", bool, "int64")] == [32, 8, 64]
    # JAX: float, int, int, bool, complex
    assert [dtypes.scalar_type_of(x) for x in (fnp.ones(2), 1, np.int8(1),
                                              fnp.ones(2, bool), 1j)] == \
        [float, int, int, bool, complex]
    with pytest.raises(TypeError, match="no Python scalar type"):
        dtypes.scalar_type_of(np.dtype("U3"))
    assert issubclass(dtypes.TypePromotionError, ValueError)


# ---- functrans.errors -------------------------------------------------------------------------
def test_error_hierarchy_matches_jax():
    assert issubclass(errors.TracerBoolConversionError, errors.ConcretizationTypeError)
    for cls in (errors.ConcretizationTypeError, errors.TracerArrayConversionError,
                errors.UnexpectedTracerError, errors.KeyReuseError):
        assert issubclass(cls, errors.JAXTypeError) and issubclass(cls, TypeError)
    assert issubclass(errors.NonConcreteBooleanIndexError, IndexError)
    assert issubclass(errors.JaxRuntimeError, RuntimeError)
    assert issubclass(errors.JaxprTypeError, TypeError)
    assert errors.ConcretizationTypeError is ft.ConcretizationTypeError


def test_bool_of_tracer_raises_tracer_bool_conversion_error():
    with pytest.raises(errors.TracerBoolConversionError, match="bool"):
        ft.jit(lambda x: 1.0 if x > 0 else 2.0)(1.0)
    with pytest.raises(errors.ConcretizationTypeError):  # also caught as its base, as in JAX
        ft.make_jaxpr(lambda x: bool(x))(1.0)


def test_int_and_index_of_tracer():
    with pytest.raises(errors.ConcretizationTypeError) as e:
        ft.jit(lambda x: int(x))(1.0)
    assert type(e.value) is errors.ConcretizationTypeError  # JAX: not a subclass for int()
    with pytest.raises(errors.TracerIntegerConversionError, match="__index__"):
        ft.jit(lambda i: [1.0, 2.0][i])(1)
    with pytest.raises(errors.TracerIntegerConversionError):
        ft.make_jaxpr(lambda n: fnp.zeros(3)[:1] * len(range(n)))(2)


def test_array_conversion_leak_and_boolean_index_errors():
    with pytest.raises(errors.TracerArrayConversionError):
        ft.jit(lambda x: np.sin(x))(fnp.ones(2))
    box = []
    ft.jit(lambda x: box.append(x) or x)(1.0)
    with pytest.raises(errors.UnexpectedTracerError) as e:
        box[0] + 1.0
    assert isinstance(e.value, TypeError) and isinstance(e.value, RuntimeError)
    with pytest.raises(errors.NonConcreteBooleanIndexError):
        ft.jit(lambda x: x[x > 0])(fnp.ones(3))


@pytest.mark.timeout(120)
def test_failing_shard_is_a_jax_runtime_error():
    def check(i):
        if int(i) == 1:
            raise ValueError("bad shard")

    def f(x):
        ft.debug.callback(check, lax.axis_index("i"))
        return lax.psum(x, "i")
    with ft.config.override(num_cpu_devices=2):
        with pytest.raises(errors.JaxRuntimeError, match="bad shard"):
            ft.pmap(f, "i")(np.ones(2))


# ---- functrans.test_util ----------------------------------------------------------------------
@ft.custom_jvp
def _wrong_sin(x):
    return fnp.sin(x)


@_wrong_sin.defjvp
def _wrong_sin_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return fnp.sin(x), 2.0 * t  # deliberately not cos(x) * t


def test_check_grads_passes_on_correct_derivatives():
    check_grads(fnp.sin, (0.5,), order=3)
    check_grads(lambda x, y: fnp.sum(fnp.tanh(x) * y["a"]),
                (fnp.linspace(-1, 1, 4), {"a": fnp.ones(4)}), order=2, modes=("fwd", "rev", "lin"))
    check_grads(lambda z: z * z * (1 + 2j), (fnp.ones(3, "complex128"),), order=2)
    check_grads(lambda x: fnp.exp(x), (fnp.ones(3, "float32"),), order=1)  # float32 tolerances
    check_grads(_wrong_sin, (0.0,), order=1, atol=1.5, rtol=1.5)  # a very loose tolerance


@pytest.mark.parametrize("modes", [("fwd",), ("rev",), ("lin",)])
def test_check_grads_fails_on_a_wrong_custom_jvp(modes):
    with pytest.raises(AssertionError, match="JVP|VJP|LIN"):
        check_grads(_wrong_sin, (0.3,), order=1, modes=modes)


def test_check_grads_fails_at_second_order():
    # First derivative right, second wrong: the rule's tangent is cos(x) * t computed from a
    # stop_gradient'd cos, so d2/dx2 is 0 instead of -sin(x).
    @ft.custom_jvp
    def f(x):
        return fnp.sin(x)

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return fnp.sin(x), lax.stop_gradient(fnp.cos(x)) * t
    check_grads(f, (0.7,), order=1)
    with pytest.raises(AssertionError, match="JVP of JVP"):
        check_grads(f, (0.7,), order=2, modes=("fwd",))


def test_check_jvp_and_check_vjp_take_the_rule_to_check():
    check_jvp(fnp.sin, functools.partial(ft.jvp, fnp.sin), (fnp.arange(3.0),))
    check_vjp(fnp.sin, functools.partial(ft.vjp, fnp.sin), (fnp.arange(3.0),))
    wrong_jvp = lambda p, t: (fnp.sin(*p), ft.jvp(fnp.cos, p, t)[1])  # noqa: E731
    with pytest.raises(AssertionError, match="tangent"):
        check_jvp(fnp.sin, wrong_jvp, (fnp.arange(3.0),))
    with pytest.raises(AssertionError, match="cotangent projection"):
        check_vjp(fnp.sin, lambda *a: (fnp.sin(*a), ft.vjp(fnp.cos, *a)[1]),
                  (fnp.arange(3.0),), err_msg="sin")
    with pytest.raises(ValueError, match="unknown modes"):
        check_grads(fnp.sin, (0.5,), 1, modes=("bwd",))


# ---- top-level functions ----------------------------------------------------------------------
def test_jacobian_is_jacrev():
    x = fnp.array([0.3, -1.2, 2.0])
    np.testing.assert_allclose(ft.jacobian(fnp.sin)(x), np.diag(np.cos(np.asarray(x))),
                               rtol=1e-14)
    jac, aux = ft.jacobian(lambda x, y: (x * y, "aux"), argnums=1, has_aux=True)(x, x)
    np.testing.assert_array_equal(jac, np.diag(np.asarray(x)))
    assert aux == "aux"


def test_device_get_returns_numpy_and_keeps_other_leaves():
    out = ft.device_get({"a": fnp.ones(2, "float32"), "b": fnp.float32(3), "c": 1.0,
                         "d": "s", "e": None, "g": [fnp.int32(1)]})
    assert type(out["a"]) is np.ndarray and out["a"].dtype == np.float32
    assert type(out["b"]) is np.ndarray and out["b"].shape == ()  # JAX: 0-d ndarray
    assert out["c"] == 1.0 and out["d"] == "s" and out["e"] is None
    assert type(out["g"][0]) is np.ndarray
    seen = []
    ft.make_jaxpr(lambda x: seen.append(ft.device_get(x)) or x)(1.0)
    assert isinstance(seen[0], ft.core.trace.Tracer)  # traced values pass through, as JAX


def test_typeof_gives_the_abstract_value():
    a = ft.typeof(fnp.ones(3, "float32"))
    assert (a.shape, a.dtype, a.weak_type) == ((3,), np.float32, False)
    w = ft.typeof(1.0)
    assert (w.shape, w.dtype, w.weak_type) == ((), np.float64, True)
    assert ft.typeof(fnp.asarray(1.0)) == w  # a weak Array (typeof's fast path for Arrays)
    assert ft.typeof(np.ones((2, 3), np.int8)).str_short() == "i8[2,3]"
    seen = []
    ft.jit(lambda x: seen.append(ft.typeof(x)) or x)(fnp.ones(2))
    assert seen[0] == ft.typeof(fnp.ones(2))
    with pytest.raises(TypeError, match="typeof: argument of type str"):
        ft.typeof("a")


def test_linear_transpose_matches_explicit_matrices_and_vjp(rng):
    A = rng.standard_normal((3, 4))
    f = lambda x: fnp.asarray(A) @ x  # noqa: E731
    f_t = ft.linear_transpose(f, ft.ShapeDtypeStruct((4,), "float64"))
    ct = rng.standard_normal(3)
    (got,) = f_t(ct)
    np.testing.assert_allclose(got, A.T @ ct, rtol=1e-13)
    _, f_vjp = ft.vjp(f, fnp.ones(4))
    np.testing.assert_allclose(got, f_vjp(ct)[0], rtol=1e-13)
    # JAX: (0.5, -0.5) in float32 for 0.5 x - 0.5 y
    s = ft.ShapeDtypeStruct((), "float32")
    out = ft.linear_transpose(lambda x, y: 0.5 * x - 0.5 * y, s, s)(fnp.float32(1.0))
    assert [(float(o), o.dtype) for o in out] == [(0.5, np.float32), (-0.5, np.float32)]
    # Pytrees in and out; integer -> integer (JAX: [3, 3])
    g_t = ft.linear_transpose(lambda d: (d["a"], 2.0 * d["a"]), {"a": 1.0})
    assert float(g_t((3.0, 1.0))[0]["a"]) == 5.0
    np.testing.assert_array_equal(
        ft.linear_transpose(lambda x: fnp.sum(x), np.ones(2, int))(3)[0], [3, 3])


def test_linear_transpose_is_a_pytree_usable_under_jit():
    c = fnp.array([1.0, 2.0, 3.0])
    f_t = ft.linear_transpose(lambda x: x * c, fnp.ones(3))
    assert any(l is c for l in ft.tree_util.tree_leaves(f_t))  # the constant is a leaf
    out = ft.jit(lambda t, ct: t(ct))(f_t, fnp.ones(3))
    np.testing.assert_array_equal(out[0], [1.0, 2.0, 3.0])


def test_linear_transpose_takes_shaped_arrays_for_the_primal_types():
    # equinox's noinline transposes with ShapedArrays standing for the primals, as JAX allows.
    from functrans.core.avals import ShapedArray
    f_t = ft.linear_transpose(lambda x, y: x * 3.0 - y.sum(),
                              ShapedArray((), np.dtype("float32")),
                              ShapedArray((2,), np.dtype("float32")))
    ct_x, ct_y = f_t(fnp.float32(2.0))
    assert float(ct_x) == 6.0 and ct_y.dtype == np.float32
    np.testing.assert_array_equal(ct_y, [-2.0, -2.0])


def test_linear_transpose_errors():
    s = ft.ShapeDtypeStruct((), "float32")
    f_t = ft.linear_transpose(lambda x: x * 2.0, s)
    with pytest.raises(TypeError, match="cotangent tree does not match"):
        f_t((fnp.float32(1.0),))
    with pytest.raises(TypeError, match="cotangent type does not match"):
        f_t(fnp.ones(2, "float32"))
    with pytest.raises(TypeError, match="cotangent type does not match"):
        f_t(np.float64(1.0))  # JAX: float64 against float32 is refused too
    with pytest.raises(TypeError, match="only supports"):
        ft.linear_transpose(lambda x: x.astype(int), s)
    with pytest.raises(NotImplementedError, match="reduce_axes"):
        ft.linear_transpose(lambda x: x, s, reduce_axes=("i",))
    with pytest.raises(TypeError, match="not linear"):
        ft.linear_transpose(lambda x: x * x, 1.0)(1.0)


def test_ensure_compile_time_eval_evaluates_concrete_values_while_tracing():
    seen = {}

    @ft.jit
    def f(x):
        with ft.ensure_compile_time_eval():
            y = fnp.sin(2.0)
            z = fnp.arange(3) * 2
            seen["y"], seen["z"] = y, z
            branch = 1.0 if y > 0 else -1.0  # Python control flow on a computed value
            w = x * 2.0
            seen["w"] = w
        return x + y * branch
    np.testing.assert_allclose(f(1.0), 1.0 + np.sin(2.0), rtol=1e-15)
    assert type(seen["y"]) is ft.Array and float(seen["y"]) == np.sin(2.0)
    assert seen["z"].tolist() == [0, 2, 4]
    assert isinstance(seen["w"], ft.core.trace.Tracer)  # traced values stay traced (JAX too)
    jaxpr = ft.make_jaxpr(f)(1.0)
    assert "sin" not in str(jaxpr)


def test_ensure_compile_time_eval_keeps_transforming_traced_values():
    def g(x):
        with ft.ensure_compile_time_eval():
            return fnp.cos(x) * fnp.sqrt(4.0)
    np.testing.assert_allclose(ft.grad(g)(1.0), -2 * np.sin(1.0), rtol=1e-15)  # JAX: same
    np.testing.assert_allclose(ft.vmap(g)(fnp.ones(2)), 2 * np.cos([1.0, 1.0]), rtol=1e-15)
    np.testing.assert_allclose(ft.jit(ft.grad(g))(1.0), -2 * np.sin(1.0), rtol=1e-15)
    with ft.ensure_compile_time_eval():  # outside any trace: nothing changes
        assert float(g(0.0)) == 2.0


def test_named_scope_checks_its_name():
    with ft.named_scope("block"):
        y = fnp.sin(1.0)
    assert float(y) == np.sin(1.0)

    @ft.named_scope("decorated")
    def h(x):
        return x + 1
    assert float(ft.jit(h)(1.0)) == 2.0
    with pytest.raises(TypeError, match="must be a string"):
        with ft.named_scope(3):
            pass


def test_disable_jit_runs_jitted_functions_eagerly():
    f = ft.jit(lambda x: float(x) + 1.0)
    with ft.disable_jit():
        assert f(fnp.ones(())) == 2.0
        with ft.disable_jit(False):
            with pytest.raises(errors.ConcretizationTypeError):
                f(fnp.ones(()))
    assert not ft.config.disable_jit
    with pytest.raises(errors.ConcretizationTypeError):
        f(fnp.ones(()))


def test_promotion_modes_standard_strict_and_rank_raise_as_in_jax():
    # equinox's norms and attention wrap their arithmetic in numpy_dtype_promotion("standard");
    # lineax's, optimistix's and diffrax's test suites run under "strict" and rank "raise".
    # What JAX 0.10.2 does in each case is the oracle.
    with ft.numpy_dtype_promotion("standard"), ft.numpy_rank_promotion("allow"):
        assert ft.config.jax_numpy_dtype_promotion == "standard"
        y = fnp.ones((2, 3), "float32") + fnp.arange(3, dtype="int8")
        assert y.dtype == np.float32 and y.shape == (2, 3)
    x = fnp.ones(3, "float32")
    with ft.numpy_dtype_promotion("strict"):
        assert (x + 1).dtype == (x + 1.0).dtype == np.float32  # Python scalars promote
        assert (x @ x).dtype == np.float32
        for bad in (lambda: x + fnp.ones(3, "int8"), lambda: fnp.ones(3, "int32") + 1.0,
                    lambda: x + 1j, lambda: fnp.ones(2, bool) + 1,
                    lambda: x @ fnp.ones(3, "float64")):
            with pytest.raises(TypePromotionError, match="jax_numpy_dtype_promotion=strict"):
                bad()
    with ft.numpy_rank_promotion("raise"):
        assert (fnp.ones((2, 3)) + fnp.ones(())).shape == (2, 3)  # rank 0 broadcasts
        with pytest.raises(ValueError, match="rank_promotion='raise'"):
            fnp.ones((2, 3)) + fnp.ones(3)
    with ft.numpy_rank_promotion("warn"):
        with pytest.warns(UserWarning, match="shapes \\(2, 3\\) \\(3,\\)"):
            fnp.ones((2, 3)) * fnp.ones(3)
    with pytest.raises(ValueError, match="jax_numpy_dtype_promotion='loose'"):
        ft.config.update("jax_numpy_dtype_promotion", "loose")
    assert ft.config.jax_numpy_dtype_promotion == "standard"
    assert ft.config.jax_numpy_rank_promotion == "allow"


def test_effects_barrier_waits_for_background_work():
    done = []

    def work():
        time.sleep(0.2)
        done.append(True)
        background.done(thread)
    thread = threading.Thread(target=work)
    background.start(thread)
    ft.effects_barrier()
    assert done == [True]
    with ft.config.override(jit_tiered=True):  # a first call compiling in the background
        ft.jit(lambda x: fnp.tanh(x) * 3.0 + fnp.exp(-x))(fnp.ones(1000))
        ft.effects_barrier()
        assert not background._running


def test_device_class_and_stages():
    assert all(isinstance(d, ft.Device) for d in ft.devices())
    f = ft.jit(lambda x: x * 2.0)
    lowered = f.lower(1.0)
    compiled = lowered.compile()
    assert isinstance(f, ft.stages.Wrapped) and not isinstance(fnp.sin, ft.stages.Wrapped)
    assert isinstance(lowered, ft.stages.Lowered) and isinstance(compiled, ft.stages.Compiled)
    assert float(compiled(3.0)) == 6.0
    assert isinstance(f.trace(1.0), ft.stages.Traced)
    info = ft.stages.ArgInfo(ft.typeof(fnp.ones(2)), donated=True)
    assert info.shape == (2,) and info.dtype == np.float64 and info.donated


# ---- ShapeDtypeStruct -------------------------------------------------------------------------
def test_shape_dtype_struct_api():
    S = ft.ShapeDtypeStruct
    s = S((3,), "float32")
    assert (s.ndim, s.size, len(s)) == (1, 3, 3)
    assert s == S((3,), np.float32) and hash(s) == hash(S([3], fnp.float32))
    assert s != S((3,), "float32", weak_type=True)
    assert repr(S((), "float64", weak_type=True)) == \
        "ShapeDtypeStruct(shape=(), dtype=float64, weak_type=True)"  # JAX's repr
    assert s.update(shape=(4,)) == S((4,), "float32")
    assert S.like(fnp.ones((2, 2), "int8")) == S((2, 2), "int8")
    assert S.like(1.0) == S((), "float64", weak_type=True)
    assert ft.eval_shape(lambda x: x.sum(0), S((2, 3), "float32")) == S((3,), "float32")
    with pytest.raises(RuntimeError, match="Cannot reassign attributes \\(shape\\)"):
        s.shape = (2,)
    s.shape = (3,)  # the same value: allowed, as in JAX
    with pytest.raises(TypeError, match="len\\(\\) of unsized object"):
        len(S((), "float32"))
    with pytest.raises(ValueError, match="dtype must be specified"):
        S((2,), None)
    with pytest.raises(TypeError, match="sequence of integers"):
        S((2.5,), "float32")
    with pytest.raises(TypeError, match="unknown fields"):
        s.update(size=3)


def test_shape_dtype_struct_sharding():
    mesh = ft.sharding.make_mesh((1,), ("x",))
    named = ft.sharding.NamedSharding(mesh, ft.sharding.P("x"))
    s = ft.ShapeDtypeStruct((4,), "float32", sharding=named)
    assert s.sharding == named and s != ft.ShapeDtypeStruct((4,), "float32")
    assert "sharding=" in repr(s)
    placed = ft.device_put(fnp.ones(4), named)
    assert ft.ShapeDtypeStruct.like(placed).sharding == named
    with pytest.raises(ValueError, match="sharding should be"):
        ft.ShapeDtypeStruct((4,), "float32", sharding="x")
    with pytest.raises(TypeError, match="context mesh"):
        ft.ShapeDtypeStruct((4,), "float32", sharding=ft.sharding.P("x")).sharding


# ---- checkpoint policies ----------------------------------------------------------------------
def _two_layers(W, x):
    h = fnp.sin(W @ x)
    h = checkpoint_name(h, "h")
    return fnp.sum(fnp.sin(W @ h))


def _residuals(f, *args):
    """What each printed residual is, without its type and source line."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        print_saved_residuals(f, *args)
    kinds = []
    for line in out.getvalue().splitlines():
        what = line.split(" ", 1)[1]
        kinds.append(what if what.startswith("from ") else what.split(" from ")[0])
    return kinds


# What JAX's print_saved_residuals lists for _two_layers (its lines and files differ).
ARGS = ["from the argument W", "from the argument x"]
DOT, COS, H = "output of dot_general", "output of cos", "named 'h'"
SAVED = {
    None: ARGS + [COS, H, COS], "nothing_saveable": ARGS,
    "everything_saveable": ARGS + [COS, H, COS], "dots_saveable": ARGS + [DOT, DOT],
    "dots_with_no_batch_dims_saveable": ARGS + [DOT, DOT], "only_h": ARGS + [H],
    "any_but_h": ARGS, "dots_or_h": ARGS + [DOT, H, DOT],
}
POLICIES = {
    "nothing_saveable": cp.nothing_saveable, "everything_saveable": cp.everything_saveable,
    "dots_saveable": cp.dots_saveable,
    "dots_with_no_batch_dims_saveable": cp.dots_with_no_batch_dims_saveable,
    "only_h": cp.save_only_these_names("h"), "any_but_h": cp.save_any_names_but_these("h"),
    "dots_or_h": cp.save_from_both_policies(cp.dots_saveable, cp.save_only_these_names("h")),
}


def _count(jaxpr, name):
    return sum((e.prim.name == name) + sum(_count(s, name) for s in walk_jaxprs(e.params))
               for e in jaxpr.eqns)


@pytest.mark.parametrize("policy", [None, *POLICIES])
def test_policies_save_what_jax_saves(policy, rng):
    W, x = fnp.asarray(rng.standard_normal((3, 3))), fnp.asarray(rng.standard_normal(3))
    f = _two_layers if policy is None else ft.checkpoint(_two_layers, policy=POLICIES[policy])
    assert _residuals(f, W, x) == SAVED[policy]
    want = ft.grad(_two_layers, argnums=(0, 1))(W, x)  # checkpointing changes no value
    for g in (ft.grad(f, argnums=(0, 1)), ft.jit(ft.grad(f, argnums=(0, 1)))):
        for a, b in zip(g(W, x), want):
            np.testing.assert_allclose(a, b, rtol=1e-13)


def test_policies_change_what_the_backward_pass_recomputes():
    # In make_jaxpr of a VJP: 2 forward products and 4 transposed ones without checkpoint;
    # nothing_saveable recomputes both products, dots_saveable none (but sin(W @ x), which
    # the second product's transpose reads), save_only_these_names("h") keeps sin.
    W, x = fnp.ones((3, 3)), fnp.ones(3)

    def counts(policy):
        f = _two_layers if policy is None else ft.checkpoint(_two_layers, policy=policy)
        j = ft.make_jaxpr(lambda W, x: ft.vjp(f, W, x)[1](1.0))(W, x)
        ft.check_jaxpr(j)
        return _count(j, "dot_general"), _count(j, "sin")
    assert counts(None) == (6, 2)
    assert counts(cp.nothing_saveable) == (8, 3)
    assert counts(cp.dots_saveable) == (6, 3)
    assert counts(cp.save_only_these_names("h")) == (8, 2)
    assert counts(cp.everything_saveable) == counts(None)


def test_dots_with_no_batch_dims_skips_batched_products():
    Ws, xs = fnp.ones((2, 3, 3)), fnp.ones((2, 3))
    f = lambda W, x: fnp.sum(fnp.sin(fnp.einsum("bij,bj->bi", W, x)))  # noqa: E731
    assert _residuals(ft.checkpoint(f, policy=cp.dots_saveable), Ws, xs)[-1].endswith(
        "output of dot_general")
    assert len(_residuals(ft.checkpoint(f, policy=cp.dots_with_no_batch_dims_saveable),
                          Ws, xs)) == 2  # the arguments only


def test_policy_checkpoint_under_every_transformation(rng):
    W, x = fnp.asarray(rng.standard_normal((3, 3))), fnp.asarray(rng.standard_normal(3))
    f = ft.checkpoint(_two_layers, policy=cp.dots_saveable)
    t = fnp.asarray(rng.standard_normal(3))
    np.testing.assert_allclose(ft.jvp(lambda x: f(W, x), (x,), (t,))[1],
                               ft.jvp(lambda x: _two_layers(W, x), (x,), (t,))[1], rtol=1e-13)
    xs = fnp.stack([x, 2 * x])
    got = ft.vmap(ft.grad(f, argnums=1), (None, 0))(W, xs)
    for i in range(2):  # oracle: a Python loop
        np.testing.assert_allclose(got[i], ft.grad(_two_layers, argnums=1)(W, xs[i]),
                                   rtol=1e-13)
    check_grads(lambda x: f(W, x), (x,), order=2)
    # A product inside a nested jit is seen by the policy too.
    g = ft.checkpoint(lambda W, x: fnp.sum(fnp.sin(ft.jit(lambda a, b: a @ b)(W, x))),
                      policy=cp.dots_saveable)
    assert _residuals(g, W, x)[-1].endswith("output of dot_general")
    np.testing.assert_allclose(ft.grad(g, argnums=1)(W, x),
                               np.asarray(W).T @ np.cos(np.asarray(W) @ np.asarray(x)),
                               rtol=1e-13)


def test_checkpoint_static_args_and_errors():
    @functools.partial(ft.checkpoint, static_argnums=(1,), static_argnames=("n", "mode"))
    def f(x, n, mode="sin"):
        for _ in range(n):
            x = fnp.sin(x) if mode == "sin" else fnp.cos(x)
        return x
    np.testing.assert_allclose(ft.grad(f)(0.5, 2), np.cos(np.sin(0.5)) * np.cos(0.5),
                               rtol=1e-15)
    np.testing.assert_allclose(ft.grad(f)(0.5, 1, mode="cos"), -np.sin(0.5), rtol=1e-15)
    np.testing.assert_allclose(ft.grad(lambda x: f(x, n=1, mode="cos"))(0.5), -np.sin(0.5),
                               rtol=1e-15)
    assert ft.ad_checkpoint.remat is ft.remat is ft.checkpoint
    assert ft.checkpoint(fnp.sin, policy=cp.everything_saveable) is fnp.sin
    with pytest.raises(TypeError, match="policy must be callable"):
        ft.checkpoint(fnp.sin, policy="dots")
    with pytest.raises(NotImplementedError, match="concrete"):
        ft.checkpoint(fnp.sin, concrete=True)
    with pytest.raises(TypeError, match="returned 'yes'"):
        ft.grad(ft.checkpoint(fnp.sin, policy=lambda *a, **k: "yes"))(1.0)
    with pytest.raises(ValueError, match="must not overlap"):
        cp.save_and_offload_only_these_names(names_which_can_be_saved=["a"],
                                             names_which_can_be_offloaded=["a"],
                                             offload_src="device", offload_dst="pinned_host")
    with pytest.raises(ValueError, match="return bools"):
        both = cp.save_from_both_policies(cp.dots_saveable,
                                          lambda *a, **k: ft.ad_checkpoint.Saveable)
        ft.grad(ft.checkpoint(lambda x: fnp.sin(x), policy=both))(1.0)


def test_offload_policies_save_like_save_policies():
    W, x = fnp.ones((3, 3)), fnp.ones(3)
    offload = cp.save_and_offload_only_these_names(
        names_which_can_be_saved=[], names_which_can_be_offloaded=["h"],
        offload_src="device", offload_dst="pinned_host")
    assert _residuals(ft.checkpoint(_two_layers, policy=offload), W, x) == \
        _residuals(ft.checkpoint(_two_layers, policy=cp.save_only_these_names("h")), W, x)
    dots = cp.offload_dot_with_no_batch_dims("device", "pinned_host")
    assert len(_residuals(ft.checkpoint(_two_layers, policy=dots), W, x)) == 4


def test_checkpoint_name_is_an_identity():
    x = fnp.arange(3.0)
    assert checkpoint_name(x, "a") is x  # eager: returned as it is
    tree = {"a": 1.0, "b": fnp.ones(2)}
    out = ft.jit(lambda t: checkpoint_name(t, "t"))(tree)
    assert float(out["a"]) == 1.0 and out["b"].tolist() == [1.0, 1.0]
    np.testing.assert_allclose(ft.grad(lambda x: checkpoint_name(fnp.sin(x), "s"))(0.3),
                               np.cos(0.3), rtol=1e-15)
    np.testing.assert_allclose(ft.vmap(lambda x: checkpoint_name(x * 2, "d"))(x), 2 * x)
    with pytest.raises(TypeError, match="name must be a string"):
        ft.jit(lambda x: checkpoint_name(x, 1))(1.0)
