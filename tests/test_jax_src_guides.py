"""The ``jax._src`` modules JAX's primitives guide and custom-interpreter notebook import, and
a library primitive evaluated with its impl alone (as JAX's guide does before it defines the
abstract evaluation)."""
import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp
import functrans.as_jax.jax_src.api as api
import functrans.as_jax.jax_src.util as util
from functrans.as_jax.jax_src.lax import lax  # (`from jax._src.lax import lax`)
from functrans.extend.core import Primitive


def test_jax_src_api_and_lax_are_the_public_functions():
    assert api.jit is ft.jit and api.vmap is ft.vmap and api.grad is ft.grad
    assert float(lax.add(lax.mul(2.0, 3.0), 1.0)) == 7.0
    with pytest.raises(AttributeError, match="jax._src.api"):
        api.no_such_function


def test_util_helpers_check_lengths():
    assert util.safe_map(lambda a, b: a * b, [1, 2], [3, 4]) == [3, 8]
    assert util.split_list(range(5), [2, 1]) == [[0, 1], [2], [3, 4]]
    with pytest.raises(ValueError, match="length mismatch"):
        util.safe_zip([1], [1, 2])


def test_a_primitive_with_only_an_impl_evaluates_and_needs_abstract_eval_to_trace():
    p = Primitive("multiply_add_impl_only")
    p.def_impl(lambda x, y, z: np.add(np.multiply(x, y), z))
    assert float(p.bind(2.0, 10.0, 4.0)) == 24.0  # JAX: 24.0 from the impl
    with pytest.raises(NotImplementedError, match="Abstract evaluation"):
        ft.jit(lambda x: p.bind(x, x, x))(1.0)
    p.def_abstract_eval(lambda x, y, z: x)
    assert float(ft.jit(lambda x: p.bind(x, x, x))(3.0)) == 12.0


def test_a_closed_jaxprs_literals_are_its_consts():
    # JAX's "Writing custom interpreters" notebook reads closed_jaxpr.literals (JAX's
    # ClosedJaxpr.literals is its consts).
    closed = ft.make_jaxpr(lambda x: fnp.exp(fnp.tanh(x)) + fnp.arange(3.0))(np.ones(3))
    assert closed.literals is closed.consts
    np.testing.assert_array_equal(closed.literals[0], np.arange(3.0))
    assert ft.make_jaxpr(fnp.sin)(1.0).literals == []


def test_jax_src_test_util_create_mesh():
    import unittest
    import functrans.as_jax.jax_src.test_util as jtu
    mesh = jtu.create_mesh((1,), ("x",))
    assert mesh.axis_names == ("x",) and mesh.size == 1
    with pytest.raises(unittest.SkipTest, match="requires"):
        jtu.create_mesh((10_000,), ("x",))
