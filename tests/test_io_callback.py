"""io_callback (``jax.experimental.io_callback``): an effect with results. It runs every time
the program reaches it (never removed when its results are unused, never merged), eagerly and
under jit; vmap calls it per batch element in order (ordered=True refuses vmap, as JAX does);
differentiating through it raises unless nothing it sees is differentiated."""
import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp
from functrans.experimental import io_callback


def _logger(log):
    def record(x, scale=1.0):
        log.append(np.asarray(x).tolist())
        return np.asarray(x, np.float32) * np.float32(scale)
    return record


def test_eager_and_jit_call_it_each_time_with_arrays():
    log, kinds = [], []

    def host(x):
        kinds.append(type(x))
        return _logger(log)(x)

    spec = ft.ShapeDtypeStruct((2,), "float32")
    f = ft.jit(lambda x: io_callback(host, spec, x) + 1)
    for i in range(3):  # the first call, the compiled one and the fast path
        np.testing.assert_array_equal(f(fnp.asarray([i, 2.0 * i], "float32")),
                                      [i + 1, 2 * i + 1])
    assert log == [[0.0, 0.0], [1.0, 2.0], [2.0, 4.0]]
    # As in JAX, the callback receives arrays, not NumPy values.
    assert set(kinds) == {ft.Array}


def test_unused_results_still_run_and_equal_calls_are_not_merged():
    log = []
    spec = ft.ShapeDtypeStruct((), "float32")

    def f(x):
        io_callback(_logger(log), spec, x)  # result unused: an effect still runs
        a = io_callback(_logger(log), spec, x)
        b = io_callback(_logger(log), spec, x)  # the same call again: runs again
        return a + b

    assert float(ft.jit(f)(fnp.float32(3.0))) == 6.0
    assert log == [3.0, 3.0, 3.0]
    assert str(ft.make_jaxpr(f)(fnp.float32(3.0))).count("io_callback") == 3


def test_results_follow_result_shape_dtypes_pytrees_and_kwargs():
    def host(d, scale):
        return {"s": d["a"].sum() * scale, "n": np.int64(d["a"].size)}

    spec = {"s": ft.ShapeDtypeStruct((), "float32"), "n": ft.ShapeDtypeStruct((), "int32")}
    out = ft.jit(lambda a: io_callback(host, spec, {"a": a}, scale=2.0))(fnp.arange(4.0))
    assert out["s"].dtype == np.float32 and float(out["s"]) == 12.0
    assert out["n"].dtype == np.int32 and int(out["n"]) == 4
    assert io_callback(lambda: None, None) is None  # no results


@pytest.mark.parametrize("jit", [False, True])
def test_vmap_calls_it_per_element_in_order(jit):
    log = []
    spec = ft.ShapeDtypeStruct((), "float32")
    g = ft.vmap(lambda x, s: io_callback(_logger(log), spec, x, scale=s), in_axes=(0, None))
    g = ft.jit(g) if jit else g
    out = g(fnp.asarray([1.0, 2.0, 3.0], "float32"), 10.0)
    np.testing.assert_array_equal(out, [10.0, 20.0, 30.0])
    assert log == [1.0, 2.0, 3.0]
    # Nested vmaps: the outer axis outermost, as lax.map inside lax.map.
    log.clear()
    x = fnp.asarray([[1.0, 2.0], [3.0, 4.0]], "float32")
    out = ft.vmap(ft.vmap(lambda v: io_callback(_logger(log), spec, v)), in_axes=1)(x)
    np.testing.assert_array_equal(out, [[1.0, 3.0], [2.0, 4.0]])
    assert log == [1.0, 3.0, 2.0, 4.0]


def test_ordered_refuses_vmap_and_differentiation_raises():
    spec = ft.ShapeDtypeStruct((), "float32")
    host = _logger([])
    with pytest.raises(ValueError, match="Cannot vmap an ordered io_callback"):
        ft.vmap(lambda x: io_callback(host, spec, x, ordered=True))(fnp.ones(2, "float32"))
    with pytest.raises(ValueError, match="does not support differentiation"):
        ft.grad(lambda x: io_callback(host, spec, x))(fnp.float32(1.0))
    # A callback whose inputs are not differentiated is fine (zero tangents), as in JAX.
    assert float(ft.grad(lambda x: x * io_callback(host, spec, 2.0))(fnp.float32(1.0))) == 2.0


def test_bad_calls_and_results_raise_clearly():
    spec = ft.ShapeDtypeStruct((2,), "float32")
    with pytest.raises(TypeError, match="io_callback: expected a callable"):
        io_callback(3, spec)
    with pytest.raises(TypeError, match="io_callback: result_shape_dtypes leaf 0"):
        io_callback(lambda: 1, [3])
    with pytest.raises(TypeError, match=r"io_callback: <lambda> returned shape \(3,\)"):
        ft.jit(lambda: io_callback(lambda: np.zeros(3, np.float32), spec))()
    with pytest.raises(NotImplementedError, match="sharding"):
        io_callback(lambda: None, None, sharding=object())


def test_a_failing_callback_raises_jax_runtime_error():
    def host(x):
        raise ValueError("disk full")

    with pytest.raises(ft.errors.JaxRuntimeError, match=r"io_callback: the callback host "
                       r"raised ValueError: disk full") as info:
        ft.jit(lambda x: io_callback(host, None, x))(fnp.float32(1.0))
    assert isinstance(info.value.__cause__, ValueError)
