"""``jit(in_shardings=, out_shardings=)``: arguments and results are placed on the given
shardings (values unchanged: the un-jitted function is the oracle), with pytree prefixes,
static arguments and clear errors for specs that cannot apply."""
import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp
from functrans.sharding import NamedSharding, P


@pytest.fixture
def mesh():
    with ft.config.override(num_cpu_devices=2):
        yield ft.make_mesh((2,), ("x",))


def test_results_and_arguments_are_placed(mesh):
    row = NamedSharding(mesh, P("x"))
    f = lambda a, b: {"sum": a + b["w"], "b": b["w"] * 2}
    g = ft.jit(f, in_shardings=(row, None), out_shardings={"sum": row, "b": None})
    a, b = fnp.arange(4.0), {"w": fnp.ones(4)}
    out = g(a, b)
    want = f(a, b)
    np.testing.assert_array_equal(out["sum"], want["sum"])
    np.testing.assert_array_equal(out["b"], want["b"])
    assert out["sum"].sharding == row and out["b"].sharding != row
    # one Sharding applies to every result; a static argument has no sharding
    h = ft.jit(lambda n, a: a * n, static_argnums=0, in_shardings=row, out_shardings=row)
    assert h(3, a).sharding == row
    np.testing.assert_array_equal(h(3, a), a * 3)


def test_inside_another_transformation_shardings_change_nothing(mesh):
    row = NamedSharding(mesh, P("x"))
    f = ft.jit(lambda a: fnp.sin(a), in_shardings=row, out_shardings=row)
    x = fnp.linspace(0.0, 1.0, 4)
    np.testing.assert_allclose(ft.grad(lambda a: fnp.sum(f(a)))(x), np.cos(x), rtol=1e-15)
    np.testing.assert_allclose(ft.vmap(f)(fnp.stack([x, x])), np.sin([x, x]), rtol=1e-15)


def test_bare_partition_specs_take_the_context_mesh(mesh):
    f = ft.jit(lambda a, b: (a + 1, b * 2), in_shardings=(P("x"), None),
               out_shardings=(P("x"), P()))
    with ft.set_mesh(mesh):
        a, b = f(fnp.arange(4.0), fnp.ones(2))
    assert a.sharding == NamedSharding(mesh, P("x")) and b.sharding == NamedSharding(mesh, P())
    np.testing.assert_array_equal(a, [1.0, 2.0, 3.0, 4.0])
    with pytest.raises(TypeError, match="in_shardings.*PartitionSpec.*needs a mesh"):
        f(fnp.arange(4.0), fnp.ones(2))  # no mesh set: at the call, as JAX


def test_bad_shardings_are_named(mesh):
    with pytest.raises(TypeError, match="out_shardings must hold Shardings.*str"):
        ft.jit(lambda a: a, out_shardings="x")
    f = ft.jit(lambda a: a, out_shardings=NamedSharding(mesh, P("x")))
    with pytest.raises(ValueError, match="shape \\(3,\\).*do not divide"):
        f(fnp.arange(3.0))
    g = ft.jit(lambda a: (a, a), out_shardings=(NamedSharding(mesh, P("x")), None, None))
    with pytest.raises(ValueError, match="out_shardings does not match"):
        g(fnp.ones(2))


def test_device_put_takes_a_bare_spec_on_the_context_mesh(mesh):
    with ft.set_mesh(mesh):
        x = ft.device_put(fnp.arange(4.0), P("x"))
    assert x.sharding == NamedSharding(mesh, P("x"))
    with pytest.raises(TypeError, match="device_put.*needs a mesh"):
        ft.device_put(fnp.arange(4.0), P("x"))
