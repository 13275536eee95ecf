"""The next ring of JAX's names that libraries import: haiku's trace-state API
(``take_current_trace``, ``set_current_trace``, ``TraceTag``, ``DropVar``,
``get_opaque_trace_state``), and what TFP's JAX substrate and distrax need at import."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp
from functrans.core.avals import ShapedArray
from functrans.extend import core as ecore
from functrans.as_jax import jax_core


def _run_as_jax(code, tmp_path):
    """Run ``code`` under ``python -m functrans.as_jax``; its stdout."""
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent(code))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    env.pop("JAX_ENABLE_X64", None)
    run = subprocess.run([sys.executable, "-m", "functrans.as_jax", str(script)], env=env,
                         cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    return run.stdout


# --- haiku's trace-state API -------------------------------------------------------------

def test_take_current_trace_yields_the_current_trace_and_binding_inside_raises():
    seen = []

    def f(x):
        with ecore.take_current_trace() as t:
            seen.append(t)
            with pytest.raises(RuntimeError, match="taken"):
                fnp.sin(x)
        assert ecore.find_top_trace([x]) is seen[-1]  # restored on exit
        return x * 2.0

    with ecore.take_current_trace() as t:
        outer = t
    assert outer is ecore.find_top_trace([])
    ft.jit(f)(1.0)
    assert seen[-1] is not outer  # jit's tracing trace


def test_set_current_trace_binds_on_the_taken_trace():
    def f(x):
        with ecore.take_current_trace() as t:
            with ecore.set_current_trace(t):
                y = fnp.sin(x)
        return y

    assert float(ft.grad(f)(0.0)) == 1.0
    assert float(ft.jit(f)(0.0)) == 0.0


def test_trace_tags_are_hashable_and_unique():
    a, b = ecore.TraceTag(), ecore.TraceTag()
    assert a == a and a != b and hash(a) == hash(a)
    assert len({a, b, a}) == 2


def test_drop_var_is_a_var_printed_as_underscore():
    from functrans.core.printer import _binder
    v = jax_core.DropVar(ShapedArray((2,), np.float32))
    assert jax_core.DropVar is ecore.DropVar
    assert isinstance(v, ecore.Var) and v.aval.shape == (2,)
    assert _binder(v, lambda var: "a") == "_:f32[2]"


def test_opaque_trace_state_equal_only_within_the_same_trace():
    outside = jax_core.get_opaque_trace_state(convention="haiku")
    assert outside == jax_core.get_opaque_trace_state(convention="haiku")
    inside = []

    def f(x):
        inside.append(jax_core.get_opaque_trace_state("haiku"))
        inside.append(jax_core.get_opaque_trace_state("haiku"))
        return x

    ft.jit(f)(1.0)
    ft.jit(f)(np.ones(2))  # a second trace (another signature) is another transformation
    assert inside[0] != outside
    assert inside[0] == inside[1]
    assert inside[2] == inside[3] and inside[2] != inside[0]


def test_trace_state_names_under_as_jax(tmp_path):
    out = _run_as_jax("""
        import jax, jax.core
        from jax.extend import core as ec
        with ec.take_current_trace() as t:
            pass
        print(jax.core.DropVar is ec.DropVar, isinstance(ec.TraceTag(), ec.TraceTag),
              jax.core.get_opaque_trace_state(convention="x")
              == jax.core.get_opaque_trace_state(convention="x"))
    """, tmp_path)
    assert out.split() == ["True", "True", "True"]


# --- what TFP's JAX substrate and distrax use at import ----------------------------------

class _Wrapped:
    def __init__(self, value):
        self.value = np.asarray(value, np.float32)


def test_pytype_aval_mappings_give_abstract_values_and_registering_a_type_is_honoured():
    m = jax_core.pytype_aval_mappings
    assert m[float](2.0) == ShapedArray((), np.float64, True)
    assert m[np.ndarray](np.ones((2, 3), np.float32)) == ShapedArray((2, 3), np.float32)
    assert m[type(fnp.ones(2))](fnp.ones(2)).shape == (2,)
    assert not jax_core.valid_jaxtype(_Wrapped(1.0)) and not jax_core.valid_jaxtype("a")
    m[_Wrapped] = lambda w: ShapedArray(w.value.shape, w.value.dtype)
    try:
        assert jax_core.valid_jaxtype(_Wrapped([1.0, 2.0]))
        assert ecore.get_aval(_Wrapped([1.0, 2.0])) == ShapedArray((2,), np.float32)
    finally:
        del m[_Wrapped]
    assert jax_core.valid_jaxtype(1) and jax_core.valid_jaxtype(fnp.ones(2))


def test_canonicalize_dtype_handlers_narrow_64_bit_values_without_x64():
    from functrans.interpreters import xla
    h = xla.canonicalize_dtype_handlers
    assert h[np.ndarray](np.ones(2)).dtype == np.float64  # functrans's default: x64 on
    with ft.config.override(enable_x64=False):
        assert h[np.ndarray](np.ones(2)).dtype == np.float32
        assert h[int](3).dtype == np.int32 and h[float](1.0).dtype == np.float32
        assert xla.canonicalize_dtype(np.float64(1.0)).dtype == np.float32
    h[_Wrapped] = lambda w: w.value
    try:
        assert xla.canonicalize_dtype(_Wrapped(1.0)).dtype == np.float32
    finally:
        del h[_Wrapped]
    with pytest.raises(TypeError, match="No canonicalize_dtype handler"):
        xla.canonicalize_dtype("a")


def test_tfp_import_time_names_under_as_jax(tmp_path):
    out = _run_as_jax("""
        import numpy as np
        import jax
        from jax.interpreters import xla
        from jax import core
        print(xla.canonicalize_dtype_handlers[np.ndarray](np.ones(2)).dtype,
              core.pytype_aval_mappings[float](1.0).dtype, core.valid_jaxtype(1.0))
    """, tmp_path)
    assert out.split() == ["float32", "float32", "True"]


def test_enable_x64_is_a_flag_state_and_a_context_manager():
    assert ft.enable_x64.value is True  # functrans's default
    with ft.enable_x64(False):
        assert ft.enable_x64.value is False and ft.config.enable_x64 is False
        assert fnp.ones(2).dtype == np.float32
        assert ft.jit(lambda x: x * 2)(np.ones(2)).dtype == np.float32
    assert ft.enable_x64.value is True and fnp.ones(2).dtype == np.float64


def test_float0_is_the_dtype_of_tangents_of_integers():
    assert ft.float0 is ft.dtypes.float0
    assert ecore.primal_dtype_to_tangent_dtype(np.int32) == ft.float0


def test_custom_gradient_uses_the_returned_vjp_under_grad_jit_and_vmap():
    @ft.custom_gradient
    def f(x, y):
        return fnp.sin(x) * y, lambda g: (g * 10.0 * y, g * fnp.cos(x))

    assert np.isclose(float(f(1.0, 2.0)), np.sin(1.0) * 2.0)
    gx, gy = ft.grad(f, argnums=(0, 1))(1.0, 2.0)
    assert float(gx) == 20.0 and np.isclose(float(gy), np.cos(1.0))
    assert float(ft.jit(ft.grad(f))(1.0, 2.0)) == 20.0
    np.testing.assert_allclose(ft.vmap(ft.grad(f))(fnp.ones(3), fnp.full(3, 2.0)), 20.0)
    # the rule closes over a traced intermediate value and its argument
    np.testing.assert_allclose(ft.grad(lambda x: f(x, x * 3.0))(1.0), 30.0 + 3 * np.cos(1.0))

    @ft.custom_gradient
    def total(x):  # a single argument: its cotangent may be returned bare
        return fnp.sum(x), lambda g: g * fnp.full_like(x, 2.0)

    np.testing.assert_allclose(ft.jit(ft.grad(total))(fnp.ones(3)), [2.0, 2.0, 2.0])


def test_top_level_names_under_as_jax(tmp_path):
    out = _run_as_jax("""
        import jax, jax.numpy as jnp
        print(jax.enable_x64.value, jnp.ones(1).dtype)
        with jax.enable_x64(True):
            print(jax.enable_x64.value, jnp.ones(1).dtype)
        print(jax.float0 is jax.dtypes.float0)
        f = jax.custom_gradient(lambda x: (x * x, lambda g: (g * 3.0,)))
        print(jax.grad(f)(2.0))
    """, tmp_path)
    assert out.split() == ["False", "float32", "True", "float64", "True", "3.0"]
