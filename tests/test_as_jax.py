"""``functrans.as_jax``: ``import jax`` resolves to functrans, real JAX never loads.

``install()`` changes the process's imports, so each case runs in a child process. The child
puts a decoy ``jax`` and ``jaxlib`` first on its path (both raise when imported), so the tests
prove the redirection whether or not real JAX is installed here.
"""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp
from functrans import as_jax


@pytest.fixture
def decoys(tmp_path):
    for name in ("jax", "jaxlib"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text(
            f"raise RuntimeError('the installed {name} was imported')\n")
    return tmp_path


def _run(code, decoys, *args, env=None, module=False):
    """Run ``code`` (a script, given ``args``) in a child with the decoys first on its path;
    its stdout."""
    script = decoys / "prog.py"
    script.write_text(textwrap.dedent(code))
    extra = env or {}
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(decoys)] + sys.path))
    env.pop("JAX_ENABLE_X64", None)
    env.update(extra)
    cmd = [sys.executable, "-m", "functrans.as_jax"] + (
        ["-m", "prog"] if module else [str(script)]) + list(args)
    run = subprocess.run(cmd, env=env, cwd=decoys, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    return run.stdout


def test_import_jax_gives_functrans_and_never_the_installed_jax(decoys):
    out = _run("""
        import sys
        import jax, jax.numpy as jnp
        from jax import lax, random, tree_util
        import jax.scipy.special, jax.numpy.linalg
        import functrans
        assert jax.numpy is functrans.numpy and lax is functrans.lax
        assert jax.scipy.special is functrans.scipy.special
        assert jax.numpy.linalg is functrans.numpy.linalg
        assert jax.jit is functrans.jit and jax.Array is functrans.Array
        # functrans's modules keep their identity
        assert functrans.numpy.__spec__.name == "functrans.numpy"
        assert not hasattr(functrans.tree_util, "__path__")
        x = jnp.arange(3.0)
        print(jax.__version__, jax.__version_info__, x.dtype,
              float(jax.jit(lambda v: jnp.sum(jnp.sin(v) ** 2))(x)),
              sorted(m for m in sys.modules if m.split(".")[0] == "jaxlib"),
              sys.argv[1:], sep="|")
    """, decoys, "a", "b")
    version, info, dtype, value, jaxlib, argv = out.strip().split("|")
    assert version == as_jax.JAX_API_VERSION and info == "(0, 10, 2)"
    assert dtype == "float32"  # JAX's default: 64-bit values off
    assert np.isclose(float(value), np.sum(np.sin(np.arange(3.0)) ** 2), rtol=1e-6)
    assert jaxlib == "[]" and argv == "['a', 'b']"


def test_jax_enable_x64_turns_64_bit_values_on(decoys):
    out = _run("""
        import jax, jax.numpy as jnp
        print(jnp.arange(3.0).dtype, jax.config.jax_enable_x64)
    """, decoys, env={"JAX_ENABLE_X64": "1"})
    assert out.split() == ["float64", "True"]


def test_python_ints_wrap_into_unsigned_dtypes_as_in_jax(decoys):
    # distrax's Categorical marks invalid samples with ones_like(draws) * -1 in uint32
    out = _run("""
        import jax.numpy as jnp
        print(*(jnp.ones(2, jnp.uint32) * -1).tolist(), (jnp.ones(1, jnp.uint8) * 300).item())
    """, decoys)
    assert out.split() == [str(2**32 - 1)] * 2 + ["44"]  # JAX 0.10.2's values


def test_missing_modules_and_names_fail_naming_them(decoys):
    out = _run("""
        import jax
        for name in ("jax._src.pjit", "jaxlib.xla_client", "jax.no_such_module"):
            try:
                __import__(name)
            except ModuleNotFoundError as e:
                print(type(e).__name__, "|", e.name, "|", e)
        try:
            jax.no_such_function
        except AttributeError as e:
            print("AttributeError |", e)
    """, decoys)
    lines = out.strip().splitlines()
    assert lines[0].startswith("ModuleNotFoundError | jax._src.pjit |")
    assert "JAX's internals (jax._src) are not provided" in lines[0]
    assert lines[1].startswith("ModuleNotFoundError | jaxlib |") and "never imports" in lines[1]
    assert lines[2].startswith("ModuleNotFoundError | jax.no_such_module |")
    assert "functrans provides no such JAX module" in lines[2]
    assert lines[3] == ("AttributeError | module 'jax' has no attribute 'no_such_function': "
                        "functrans does not provide jax.no_such_function")


def test_run_a_module_under_as_jax(decoys):
    out = _run("""
        import jax
        print(__name__, jax.numpy.zeros(2).tolist())
    """, decoys, module=True)
    assert out.strip() == "__main__ [0.0, 0.0]"


def test_the_jax_modules_map_to_functrans_modules_of_the_same_path():
    assert as_jax.target("jax.numpy.fft") == "functrans.numpy.fft"
    assert as_jax.target("jax.core") == "functrans.as_jax.jax_core"
    assert as_jax.target("jax.interpreters.ad") == "functrans.interpreters.ad"
    for internal in ("jax.primitives", "jax.transforms", "jaxlib", "numpy"):
        assert as_jax.target(internal) is None
    # JAX's internals: the few functrans provides live in as_jax.jax_src; the finder checks
    # that the module exists.
    assert as_jax.target("jax._src.pjit") == "functrans.as_jax.jax_src.pjit"
    assert importlib.util.find_spec("functrans.as_jax.jax_src.pjit") is None


def test_tracers_are_instances_of_array_as_in_jax():
    seen = []

    def f(x):
        seen.append((isinstance(x, ft.Array), isinstance(x, fnp.ndarray)))
        return x * 2.0

    ft.jit(f)(1.0)
    ft.grad(f)(1.0)
    ft.vmap(f)(fnp.ones(2))
    assert seen == [(True, True)] * 3
    assert isinstance(fnp.ones(2), ft.Array) and not isinstance(np.ones(2), ft.Array)
    from functrans.core.trace import Tracer
    assert not issubclass(Tracer, ft.Array)  # nominal subclassing is unchanged, as in JAX


def test_config_reads_and_accepts_jax_flag_names():
    assert ft.config.jax_enable_x64 is ft.config.enable_x64
    assert ft.config.read("jax_enable_x64") is ft.config.enable_x64
    assert ft.config.jax_platform_name == "cpu"
    ft.config.update("jax_default_matmul_precision", "highest")
    assert ft.config.jax_default_matmul_precision == "highest"
    ft.config.update("jax_default_matmul_precision", None)
    with pytest.raises(ValueError, match="does not support jax_platform_name='tpu'"):
        ft.config.update("jax_platform_name", "tpu")
    with pytest.raises(AttributeError, match="no flag 'jax_no_such_flag'"):
        ft.config.jax_no_such_flag


def test_narrow_types_are_named_floats_compute_and_integers_are_refused():
    # Their arithmetic is tested in test_narrow_floats.py.
    pytest.importorskip("ml_dtypes")  # installed with the [ecosystem] extra (in [dev])
    assert fnp.ones(2).dtype != fnp.bfloat16 and np.dtype(fnp.float8_e4m3fn).itemsize == 1
    assert fnp.ones(2, dtype=fnp.bfloat16).dtype == fnp.bfloat16
    out = ft.jit(lambda x: x * 2)(np.ones(2, dtype=fnp.float8_e5m2))
    assert out.dtype == fnp.float8_e5m2 and np.asarray(out, np.float32).tolist() == [2.0, 2.0]
    with pytest.raises(TypeError, match="leaf 0: value has dtype int4"):
        ft.jit(lambda x: x * 2)(np.ones(2, dtype=fnp.int4))


def test_log_compiles_logs_each_compile_and_checking_leaks_checks(caplog):
    with caplog.at_level("WARNING", logger="functrans"), ft.log_compiles():
        ft.jit(lambda x: x * 3.0 + 1.0)(np.ones(3))
    assert any("Finished compiling" in r.getMessage() and "for cpu" in r.getMessage()
               for r in caplog.records)
    caplog.clear()
    ft.jit(lambda x: x * 3.0 - 1.0)(np.ones(3))
    assert not caplog.records
    leaked = []
    with ft.checking_leaks():
        with pytest.raises(Exception, match="[Ll]eak"):
            ft.jit(lambda x: leaked.append(x) or x)(1.0)
    assert ft.lax.cond(True, lambda x: x + 1, lambda x: x, operand=2) == 3
    with pytest.raises(TypeError, match="no positional operands"):
        ft.lax.cond(True, lambda x: x, lambda x: x, 1, operand=2)


def test_xla_flags_device_count_is_read_when_the_devices_start(decoys):
    # As JAX reads XLA_FLAGS when its backend starts: chex's set_n_cpu_devices sets it after
    # `import jax`, and jax._src.xla_bridge._backends says whether it is too late.
    out = _run("""
        import os
        import jax
        before = dict(jax._src.xla_bridge._backends)
        os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=3"
        n = jax.device_count()
        print(before, sorted(jax._src.xla_bridge._backends), n,
              jax.pmap(lambda v: v * 2)(jax.numpy.arange(3.0)).tolist(), sep="|")
    """, decoys, env={"FUNCTRANS_NUM_CPU_DEVICES": ""})
    assert out.strip() == "{}|['cpu']|3|[0.0, 2.0, 4.0]"


def test_get_backend_is_cached_and_its_cache_can_be_cleared():
    # jraph's tests call xla_bridge.get_backend.cache_clear() after setting XLA_FLAGS (JAX's
    # get_backend is an lru_cache); the backend is the same object before and after.
    import functrans.as_jax.jax_src.xla_bridge as xla_bridge
    first = xla_bridge.get_backend()
    assert xla_bridge.get_backend() is first and first.platform == "cpu"
    xla_bridge.get_backend.cache_clear()
    assert xla_bridge.get_backend.cache_info().currsize == 0
    assert xla_bridge.get_backend() is first


def test_a_jitted_function_has_the_signature_of_the_function_it_wraps():
    import inspect

    def f(x, y=2, *, z):
        return x

    assert str(inspect.signature(ft.jit(f), follow_wrapped=False)) == "(x, y=2, *, z)"


def test_jax_src_dispatch_and_dtypes_as_equinox_uses_them(decoys):
    # equinox swaps dispatch.wait_for_tokens out of atexit (so it must be registered there) and
    # catches jax._src.dtypes.TypePromotionError where a promotion is refused.
    out = _run("""
        import atexit
        import jax
        import jax._src.dispatch
        from jax._src.dtypes import TypePromotionError
        atexit.unregister(jax._src.dispatch.wait_for_tokens)
        print(jax._src.dispatch.wait_for_tokens(),
              TypePromotionError is jax.dtypes.TypePromotionError,
              issubclass(TypePromotionError, ValueError), sep="|")
        try:
            jax._src.dtypes.no_such_name
        except AttributeError as e:
            print(e)
    """, decoys)
    lines = out.splitlines()
    assert lines[0] == "None|True|True"
    assert "jax._src.dtypes' has no attribute 'no_such_name'" in lines[1]


def test_jax_src_ad_util_stop_gradient_p_is_lax_stop_gradient_as_lineax_uses_it(decoys):
    # lineax gives stop_gradient a transpose rule (the identity) through jax._src.ad_util:
    # the rule then applies to lax.stop_gradient, the same primitive.
    out = _run("""
        import jax, jax.numpy as jnp
        from jax._src.ad_util import stop_gradient_p
        from jax.interpreters import ad
        print(stop_gradient_p is jax.lax.stop_gradient_p)
        ad.primitive_transposes[stop_gradient_p] = lambda ct, x: (ct,)
        t = jax.linear_transpose(lambda x: jax.lax.stop_gradient(x) * 2.0, jnp.ones(2))
        print(t(jnp.array([1.0, 3.0]))[0].tolist())
        print(float(jax.grad(lambda x: x * jax.lax.stop_gradient(x))(3.0)))
    """, decoys)
    assert out.split() == ["True", "[2.0,", "6.0]", "3.0"]


def test_symbolic_zeros_leave_jvp_and_pass_through_vmap_as_equinox_needs(decoys):
    # equinox's filter_jvp tells the outputs that depend on the differentiated inputs by their
    # being the JVP trace's tracers: a primitive's output with a symbolic-zero tangent must
    # leave the trace (JAX's JVPTrace drops it). Its batched JVP rules return ad.Zero for
    # integer outputs from a vmapped function: vmap passes them through, as JAX's does.
    out = _run("""
        import jax, jax.numpy as jnp
        from jax.interpreters import ad
        seen = []
        def f(t, m):
            out = jnp.sin(m) * 2.0       # independent of t
            seen.append(isinstance(out, ad.JVPTracer))
            return out, t * m
        jax.jvp(lambda t: f(t, jnp.ones(2)), (jnp.ones(2),), (jnp.ones(2),))
        print(seen)
        z = ad.Zero(jax.core.ShapedArray((), jnp.int32))
        print(jax.vmap(lambda x: (x * 2, z))(jnp.ones(3))[1])
        print(jax.vmap(lambda x, t: t, in_axes=(0, None))(jnp.ones(3), z))
    """, decoys)
    assert out.split() == ["[False]", "Zero(i32[])", "Zero(i32[])"]


def test_jax_src_interpreters_ad_custom_vjp_exception_as_diffrax_tests_catch_it(decoys):
    # A custom_vjp function closing over the value being differentiated raises JAX's
    # CustomVJPException (diffrax's BacksolveAdjoint test catches it by that name).
    out = _run("""
        import jax
        import jax._src.interpreters.ad
        def loss(w):
            @jax.custom_vjp
            def f(x):
                return x * w
            f.defvjp(lambda x: (x * w, None), lambda r, g: (g,))
            return f(2.0)
        try:
            jax.grad(loss)(3.0)
        except jax._src.interpreters.ad.CustomVJPException as e:
            print("caught", "closes over" in str(e))
        print(jax._src.interpreters.ad.Zero is jax.interpreters.ad.Zero)
    """, decoys)
    assert out.split() == ["caught", "True", "True"]


def test_dispatch_registers_wait_for_tokens_at_exit_as_jax_does(monkeypatch):
    import atexit
    import importlib

    dispatch = importlib.import_module("functrans.as_jax.jax_src.dispatch")
    registered = []
    monkeypatch.setattr(atexit, "register", registered.append)
    importlib.reload(dispatch)
    assert registered == [dispatch.wait_for_tokens]


def test_jax_src_core_dtypes_and_layout_as_flax_uses_them(decoys):
    # flax.linen.fp8_ops imports jax._src.core and defines its own extended dtype at import;
    # flax.core.spmd imports jax.experimental.layout.Format. earray is not provided, which
    # fp8_ops handles by catching the ImportError.
    out = _run("""
        import dataclasses
        import numpy as np
        from jax._src import core, dtypes
        from jax.experimental.layout import Format, Layout

        class meta(dtypes.extended):
            pass

        @dataclasses.dataclass(frozen=True)
        class meta_dtype(dtypes.ExtendedDType):
            float_dtype: dtypes.DType
            type: type = meta
            name = "meta"

        m = meta_dtype(np.dtype("float32"))
        a = core.ShapedArray((2,), np.float32)
        print(core.physical_aval(a) is a, dtypes.issubdtype(m.type, dtypes.extended),
              dtypes.supports_inf(np.float32), dtypes.supports_inf(np.int8),
              Format(Layout((0,)), None) == Format(Layout((0,)), None), sep="|")
        try:
            from jax._src import earray
        except ImportError as e:
            print(type(e).__name__)
        try:
            Format("row-major")
        except TypeError as e:
            print(e)
    """, decoys)
    lines = out.splitlines()
    assert lines[0] == "True|True|True|False|True"
    assert lines[1] == "ImportError"
    assert "Layout or None" in lines[2]


def test_supports_inf_knows_the_float8_formats_without_infinities():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    from functrans.as_jax.jax_src.dtypes import supports_inf
    assert supports_inf(ml_dtypes.float8_e5m2) and supports_inf(ml_dtypes.bfloat16)
    assert not supports_inf(ml_dtypes.float8_e4m3fn)


def test_jax_src_checkify_is_the_public_checkify(decoys):
    # flax.nnx imports jax._src.checkify for checkify and its annotation names.
    out = _run("""
        import jax.numpy as jnp
        from jax._src import checkify as checkify_lib
        from jax.experimental import checkify

        def f(x):
            checkify.check(x > 0, "x must be positive")
            return x

        err, _ = checkify_lib.checkify(f, checkify_lib.user_checks)(jnp.float32(-1.0))
        print(checkify_lib.checkify is checkify.checkify, err.get(), sep="|")
    """, decoys)
    assert out.splitlines()[0].startswith("True|x must be positive")


def test_trace_state_clean_is_false_under_every_transformation():
    # numpyro's MCMC caches its compiled functions only when this says no trace is active
    from functrans.as_jax.jax_src.core import trace_state_clean
    seen = []

    def f(x):
        seen.append(trace_state_clean())
        return x * 2.0

    assert trace_state_clean()
    f(1.0)
    ft.jit(f)(1.0)
    ft.grad(f)(1.0)
    ft.vmap(f)(fnp.ones(2))
    assert seen == [True, False, False, False]
    assert trace_state_clean()


def test_the_names_flax_nnx_imports_for_refs_keys_and_hijax(decoys):
    # flax.nnx imports hijax's names and defines its (optional, off by default) hijax
    # Variable at import; functrans has no high-level types, so using one raises.
    out = _run("""
        import jax, jax.numpy as jnp
        from jax._src.state.types import AbstractRef
        from jax._src.tree_util import _registry
        from jax.experimental import hijax as hjx

        r = jax.new_ref(jnp.zeros(2))
        r[0] = 1.0
        k = jax.random.key(0)
        print(isinstance(r, jax.Ref), isinstance(jax.typeof(r), AbstractRef),
              isinstance(k, jax.Array), jnp.issubdtype(k.dtype, jax.dtypes.prng_key),
              dict in _registry, type(k) in _registry, jax.freeze(r).tolist(), sep="|")

        class Var(hjx.MutableHiType):
            get = hjx.aval_method(lambda self, i: i + 1)

        class GetVar(hjx.HiPrimitive):
            pass

        hjx.register_hitype(list, lambda x: Var())
        hjx.control_flow_allowed_effects.add_type(type("E", (), {}))
        print(Var().get(1), isinstance(jax.typeof(1.0), hjx.AbstractValue), sep="|")
        for use in (lambda: GetVar("get_var").bind(1), lambda: jax.experimental.cur_qdd(1)):
            try:
                use()
            except NotImplementedError as e:
                print(e)
    """, decoys)
    lines = out.splitlines()
    assert lines[0] == "True|True|True|True|True|False|[1.0, 0.0]"
    assert lines[1] == "2|True"
    assert "high-level primitive 'get_var' cannot run" in lines[2]
    assert "cur_qdd(int)" in lines[3] and "hijax" in lines[3]


# The JAX names that JAX's libraries (optax, chex, blackjax, numpyro, equinox, flax) and JAX's
# tutorials use, as the ecosystem issue lists them: each must resolve under as_jax.
ECOSYSTEM_NAMES = """
jax.typing.ArrayLike jax.typing.DTypeLike jax.flatten_util.ravel_pytree jax.lax.Precision
jax.tree_util.DictKey jax.tree_util.GetAttrKey jax.tree_util.SequenceKey jax.tree_util.FlattenedIndexKey
jax.Device jax.core.Tracer jax.test_util.check_grads jax.lax.pswapaxes
jax.experimental.checkify.Error jax.experimental.checkify.ErrorCategory jax.experimental.checkify.user_checks
jax.experimental.checkify.nan_checks jax.experimental.checkify.div_checks jax.experimental.checkify.index_checks
jax.experimental.checkify.float_checks jax.experimental.checkify.automatic_checks jax.experimental.checkify.all_checks
jax.tree_util.tree_flatten_with_path jax.errors.JaxRuntimeError
jax.device_get jax.jacobian jax.lax.broadcast_shapes jax.experimental.io_callback jax.experimental.sparse.BCOO
jax.api_util.flatten_fun jax.api_util.debug_info jax.extend.core.Literal jax.extend.core.primitives.call_p
jax.extend.core.primitives.closed_call_p jax.extend.core.primitives.jit_p jax.extend.linear_util.wrap_init
jax.scipy.fft.dct jax.scipy.linalg.toeplitz jax.scipy.optimize.minimize jax.scipy.special.expi jax.scipy.special.i0e
jax.scipy.special.i1e jax.scipy.stats.gaussian_kde jax.dtypes.issubdtype
jax.__version_info__ jax.core.ShapedArray jax.named_scope jax.ensure_compile_time_eval
jax.stages.Lowered jax.stages.Compiled jax.custom_derivatives.custom_jvp_call_p jax.lax.stop_gradient_p
jax.tree_util.KeyPath jax.extend.core.Primitive jax.extend.core.Jaxpr jax.extend.core.ClosedJaxpr
jax.extend.core.mapped_aval jax.extend.core.unmapped_aval jax.interpreters.ad.primitive_jvps
jax.interpreters.ad.primitive_transposes jax.interpreters.batching.primitive_batchers
jax.interpreters.batching.axis_primitive_batchers jax.interpreters.mlir.register_lowering jax.interpreters.mlir.lower_fun
jax.tree_util.register_pytree_with_keys_class jax.tree_util.register_static jax.nn.initializers.Initializer
jax.nn.identity jax.sharding.AbstractMesh jax.experimental.layout.Format jax.interpreters.partial_eval.PartialVal
jax.numpy.float8_e4m3fn jax.numpy.float8_e5m2 jax.numpy.bfloat16 jax.random.ball jax.random.generalized_normal
jax.new_ref jax.Ref jax.freeze jax.dtypes.prng_key jax.dtypes.float0 jax.numpy.complex64 jax.numpy.complex128
jax.numpy.complexfloating jax.extend.core.get_opaque_trace_state jax.extend.core.ClosedJaxpr
jax.checkpoint_policies jax.ad_checkpoint.checkpoint_name jax.ShapeDtypeStruct jax.tree_util.tree_map_with_path
jax.typeof jax.linear_transpose jax.debug.breakpoint jax.effects_barrier jax.disable_jit
jax.random.key jax.random.key_data jax.random.wrap_key_data jax.experimental.hijax.HiPrimitive
""".split()


def test_every_name_the_ecosystem_uses_resolves(decoys):
    out = _run("""
        import importlib, sys
        missing = []
        for full in sys.argv[1:]:
            parts = full.split(".")
            for i in range(len(parts), 0, -1):
                try:
                    obj = importlib.import_module(".".join(parts[:i]))
                except ImportError:
                    continue
                try:
                    for p in parts[i:]:
                        obj = getattr(obj, p)
                except AttributeError:
                    missing.append(full)
                break
            else:
                missing.append(full)
        print(missing)
    """, decoys, *ECOSYSTEM_NAMES)
    assert len(ECOSYSTEM_NAMES) == 98 and out.strip() == "[]"


def test_the_internals_jax_md_and_e3nn_jax_import_and_pallas_is_xla_only(decoys):
    # jax-md defines its segmented-matmul primitives from jax._src.core and imports Pallas
    # kernels (used only on GPU) at import; e3nn-jax completes argnums from argnames with
    # jax._src.api_util.
    out = _run("""
        import inspect
        from jax._src import core
        from jax._src.api_util import infer_argnums_and_argnames
        from jax.experimental import pallas as pl
        from jax.experimental.pallas import triton as plt
        import jax.extend

        sig = inspect.signature(lambda a, b, *, c=1: 0)
        print(core.Primitive is jax.extend.core.Primitive,
              infer_argnums_and_argnames(sig, None, ("b", "c")),
              infer_argnums_and_argnames(sig, [0, 1], None),
              infer_argnums_and_argnames(sig, None, None), sep="|")
        for mod, name in ((pl, "pallas_call"), (plt, "load")):
            try:
                getattr(mod, name)
            except AttributeError as e:
                print(e)
    """, decoys)
    lines = out.splitlines()
    assert lines[0] == "True|((1,), ('b', 'c'))|((0, 1), ('a', 'b'))|((), ())"
    assert lines[1].startswith("jax.experimental.pallas.pallas_call is not provided: XLA-only")
    assert lines[2].startswith("jax.experimental.pallas.triton.load is not provided: XLA-only")


def test_out_of_range_indices_clamp_as_in_jax(decoys):
    # jax-md reads R[idx] with neighbor lists padded by N (the particle count) and masks the
    # results; JAX clamps such indices (0.10.2: [2, 1] and 0 below), NumPy raises.
    out = _run("""
        import jax.numpy as jnp
        x = jnp.arange(3)
        print(x[jnp.array([5, 1])].tolist(), int(x[-5]), sep="|")
    """, decoys)
    assert out.splitlines()[0] == "[2, 1]|0"
