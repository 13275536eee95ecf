"""jax.experimental.sparse.sparsify on functrans's 2-D BCOO: programs written for dense arrays
evaluated on the stored entries, against NumPy on the dense matrices (the same products in
another order: float64, held to 1e-12), under jit, grad (against central differences) and
vmap (against a Python loop); primitives with no sparse rule raise, naming themselves."""
from __future__ import annotations

import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp
from functrans.experimental.sparse import BCOO, sparsify

from finite_diff import fd_grad

RNG = np.random.default_rng(0)
DENSE = np.where(RNG.random((4, 5)) < 0.4, RNG.standard_normal((4, 5)), 0.0)
M = BCOO.fromdense(DENSE)


@pytest.mark.parametrize("fun", [
    lambda a, x: fnp.einsum("ij,j->i", a, x[:5]),          # sparse @ vector
    lambda a, x: fnp.einsum("ij,i->j", a, x[:4]),          # contracting the sparse rows
    lambda a, x: x[:4] @ a,                                # dense @ sparse
    lambda a, x: a @ fnp.outer(x[:5], x),                  # sparse @ matrix
    lambda a, x: fnp.einsum("ij,jk->ki", a, fnp.outer(x[:5], x[:3])),
    lambda a, x: fnp.outer(x[:2], x[:3]) @ (a.T @ x[:4]).reshape(5, 1)[:3],
    lambda a, x: fnp.einsum("ij,ij->", a, fnp.outer(x[:4], x[:5])),  # full contraction
    lambda a, x: (2.0 * -a).sum() + (a / 4.0).sum(axis=0) + a.sum(axis=1).sum(),
])
def test_sparse_programs_match_the_dense_ones(fun):
    x = RNG.standard_normal(6)
    want = fun(fnp.asarray(DENSE), fnp.asarray(x))
    got = sparsify(fun)(M, x)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(ft.jit(sparsify(fun))(M, x), want, rtol=1e-12, atol=1e-12)


def test_results_that_stay_sparse_are_bcoo():
    scale = fnp.arange(5.0)
    out = sparsify(lambda a, s: (a * s).T.astype("float32") + (-a.T).astype("float32"))(
        M, scale)
    assert isinstance(out, BCOO) and out.shape == (5, 4) and out.dtype == np.float32
    np.testing.assert_allclose(out.todense(), ((DENSE * np.arange(5.0)) - DENSE).T, rtol=1e-6)


def test_grad_and_vmap_through_a_sparsified_function():
    def loss(x):
        return fnp.sum(fnp.tanh(sparsify(lambda a, v: a @ v)(M, x)) ** 2)

    x = RNG.standard_normal(5)
    np.testing.assert_allclose(ft.grad(loss)(x), fd_grad(loss, x), rtol=1e-6)  # fd error ~1e-10
    xs = RNG.standard_normal((3, 5))
    got = ft.vmap(lambda v: sparsify(lambda a, v: a @ v)(M, v))(xs)
    np.testing.assert_allclose(got, np.stack([DENSE @ v for v in xs]), rtol=1e-12)


def test_primitives_without_a_sparse_rule_raise_naming_them():
    with pytest.raises(NotImplementedError, match="sparse rule for sin"):
        sparsify(fnp.sin)(M)
    with pytest.raises(NotImplementedError, match="two sparse operands"):
        sparsify(lambda a: a * a)(M)
