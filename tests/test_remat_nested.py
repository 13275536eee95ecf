"""Nested ``checkpoint``s under reverse mode (JAX's remat guides' recursive_checkpoint);
expected values from the chain rule and JAX 0.10.2."""
import numpy as np

import functrans as ft
import functrans.numpy as fnp


def recursive_checkpoint(funs):
    if len(funs) == 1:
        return funs[0]
    if len(funs) == 2:
        f1, f2 = funs
        return lambda x: f1(f2(x))
    f1 = recursive_checkpoint(funs[:len(funs) // 2])
    f2 = recursive_checkpoint(funs[len(funs) // 2:])
    return lambda x: f1(ft.checkpoint(f2)(x))


def chain_grad(n, x):
    g, v = 1.0, x
    for _ in range(n):
        g, v = g * np.cos(v), np.sin(v)
    return g


def test_a_checkpoint_inside_a_checkpoint_differentiates():
    s, c = fnp.sin, ft.checkpoint
    f = lambda x: s(c(lambda y: s(c(s)(y)))(x))
    np.testing.assert_allclose(ft.grad(f)(3.0), chain_grad(3, 3.0), rtol=1e-12)  # JAX: -0.9704719
    np.testing.assert_allclose(ft.jit(ft.grad(f))(3.0), chain_grad(3, 3.0), rtol=1e-12)


def test_recursive_checkpoint_of_eight_sines():
    f = recursive_checkpoint([fnp.sin] * 8)
    np.testing.assert_allclose(ft.grad(f)(3.0), chain_grad(8, 3.0), rtol=1e-12)
    _, f_vjp = ft.jit(lambda x: ft.vjp(f, x))(3.0)
    np.testing.assert_allclose(f_vjp(1.0)[0], chain_grad(8, 3.0), rtol=1e-12)
