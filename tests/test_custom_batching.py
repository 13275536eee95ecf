"""custom_batching.custom_vmap: the rule is used by vmap (also inside jit and around it, and
nested), the function itself runs otherwise, other transformations transform the function,
and a wrong rule result is a clear error."""
import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp

from primitive_coverage import primitives_in


def _make():
    calls = []

    @ft.custom_batching.custom_vmap
    def f(x, y):
        return {"s": x * y, "y": y}

    @f.def_vmap
    def rule(axis_size, in_batched, x, y):
        calls.append((axis_size, list(in_batched), x.shape, y.shape))
        # A rule whose result differs from the function's (+100): shows it was used.
        xb = x if in_batched[0] else fnp.broadcast_to(x, (axis_size,) + x.shape)
        return {"s": xb * y + 100.0, "y": y}, {"s": True, "y": in_batched[1]}
    return f, calls


def test_without_vmap_the_function_runs():
    f, calls = _make()
    out = f(fnp.float64(3.0), fnp.float64(2.0))
    assert float(out["s"]) == 6.0 and calls == []
    assert float(ft.jit(f)(3.0, 2.0)["s"]) == 6.0
    assert "custom_vmap_call" in primitives_in([(f, (1.0, 2.0))])


@pytest.mark.parametrize("wrap", ["plain", "jit_outside", "jit_inside"])
def test_vmap_uses_the_rule(wrap):
    f, calls = _make()
    g = ft.jit(f) if wrap == "jit_inside" else f
    v = ft.vmap(g, (0, None))
    if wrap == "jit_outside":
        v = ft.jit(v)
    x = fnp.arange(3.0)
    out = v(x, fnp.float64(2.0))
    np.testing.assert_array_equal(out["s"], np.arange(3.0) * 2 + 100)
    np.testing.assert_array_equal(out["y"], np.full(3, 2.0))  # unbatched out broadcast by vmap
    assert calls == [(3, [True, False], (3,), ())]


def test_batch_axis_moved_to_front_and_nested_vmap():
    f, calls = _make()
    x = fnp.arange(6.0).reshape(2, 3)
    out = ft.vmap(f, (1, None))(x, fnp.float64(1.0))
    np.testing.assert_array_equal(out["s"], np.arange(6.0).reshape(2, 3).T + 100)
    assert calls[-1] == (3, [True, False], (3, 2), ())
    # Nested: the inner vmap's rule result is batched again by the outer vmap (the rule's own
    # code then goes through the ordinary batching rules, then through the rule again).
    outer = ft.vmap(ft.vmap(f, (0, None)), (None, 0))(fnp.arange(3.0), fnp.arange(2.0))
    assert outer["s"].shape == (2, 3)


def test_grad_differentiates_the_function_and_vmap_of_grad_batches_it():
    f, calls = _make()
    g = ft.grad(lambda x, y: f(x, y)["s"])
    assert float(g(3.0, 2.0)) == 2.0
    np.testing.assert_array_equal(ft.vmap(g, (0, None))(fnp.arange(3.0), 2.0), np.full(3, 2.0))
    assert calls == []  # the derivative program is not the function: batched by the rules


def test_bad_rules_and_calls_raise_clearly():
    f = ft.custom_batching.custom_vmap(lambda x: x * 2)
    with pytest.raises(AttributeError, match="no vmap rule"):
        f(1.0)
    f.def_vmap(lambda n, b, x: (x[0], True))
    with pytest.raises(TypeError, match="output 0 has type f64\\[\\].*expected shape \\(3,\\)"):
        ft.vmap(f)(fnp.ones(3))
    f.def_vmap(lambda n, b, x: (x, [True]))
    with pytest.raises(TypeError, match="out_batched a structure of bools"):
        ft.vmap(f)(fnp.ones(3))
    with pytest.raises(TypeError, match="keyword arguments"):
        f(x=1.0)
    with pytest.raises(TypeError, match="expected a callable"):
        f.def_vmap(3)
