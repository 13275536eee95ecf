"""lax.with_sharding_constraint: concrete arrays get the sharding (as device_put), traced ones
stay as they are (functrans's jit computes whole arrays); values never change; shardings
broadcast as a pytree prefix; bad shardings raise clearly."""
import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp
from functrans import lax
from functrans.sharding import NamedSharding, P, SingleDeviceSharding


def _mesh():
    return ft.sharding.Mesh(np.array(ft.devices()[:2]), ("i",))


def test_concrete_arrays_get_the_sharding_and_keep_their_values():
    with ft.config.override(num_cpu_devices=2):
        split = NamedSharding(_mesh(), P("i"))
        x = {"a": fnp.arange(4.0), "b": fnp.ones((2, 3))}
        y = lax.with_sharding_constraint(x, {"a": split, "b": ft.devices()[1]})
        assert y["a"].sharding == split and y["b"].sharding == SingleDeviceSharding(
            ft.devices()[1])
        assert [s.data.tolist() for s in y["a"].addressable_shards] == [[0.0, 1.0], [2.0, 3.0]]
        np.testing.assert_array_equal(y["b"], np.ones((2, 3)))
        both = lax.with_sharding_constraint((fnp.zeros(2), fnp.ones(4)), split)  # a prefix
        assert all(v.sharding == split for v in both)


def test_traced_values_pass_through_jit_grad_and_vmap():
    with ft.config.override(num_cpu_devices=2):
        split = NamedSharding(_mesh(), P("i"))
        f = lambda v: lax.with_sharding_constraint(v * 2.0, split).sum()  # noqa: E731
        assert float(ft.jit(f)(fnp.arange(4.0))) == 12.0
        np.testing.assert_array_equal(ft.grad(f)(fnp.arange(4.0)), [2.0] * 4)
        np.testing.assert_array_equal(ft.vmap(f)(fnp.ones((3, 4))), [8.0] * 3)


def test_bad_shardings_raise_clearly():
    with pytest.raises(TypeError, match="PartitionSpec needs a mesh"):
        lax.with_sharding_constraint(fnp.ones(2), P("i"))
    with pytest.raises(TypeError, match="leaf 0 of shardings is a str"):
        lax.with_sharding_constraint(fnp.ones(2), "cpu")
    with pytest.raises(ValueError):
        lax.with_sharding_constraint((fnp.ones(2), fnp.ones(2)), [ft.devices()[0]] * 3)
