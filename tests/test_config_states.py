"""JAX's config states and flags as JAX's documentation uses them."""
import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp


def test_debug_nans_state_is_a_context_manager_and_a_value():
    f = ft.jit(lambda x: fnp.log(x - 6.0))
    assert ft.debug_nans.value is False
    with ft.debug_nans(True):
        assert ft.debug_nans.value is True
        with pytest.raises(FloatingPointError):
            f(5.0)
        with ft.debug_nans(False):  # as in JAX's debugging guide: scoped off again
            assert np.isnan(f(5.0))
    assert ft.debug_nans.value is False and np.isnan(f(5.0))


@pytest.mark.parametrize("flag,value", [("jax_remat3", True), ("jax_explain_cache_misses", True),
                                        ("jax_use_direct_linearize", False),
                                        ("jax_custom_vjp3", True)])
def test_jax_flags_that_change_no_result_are_accepted_and_read_back(flag, value):
    old = ft.config.read(flag)
    try:
        ft.config.update(flag, value)
        assert ft.config.read(flag) == value
        g = ft.grad(ft.checkpoint(lambda x: fnp.sin(x) * x))(1.0)
        np.testing.assert_allclose(g, np.cos(1.0) + np.sin(1.0))
    finally:
        ft.config.update(flag, old)


def test_x64_enabled_is_a_read_only_alias_of_enable_x64():
    # JAX's config.x64_enabled (jaxopt's test utilities canonicalize dtypes with it)
    with ft.config.override(enable_x64=False):
        assert ft.config.x64_enabled is False
    with ft.config.override(enable_x64=True):
        assert ft.config.x64_enabled is True
    with pytest.raises(AttributeError):
        ft.config.x64_enabled = False
