"""functrans.experimental.sparse.BCOO: products against dense ones, under jit/grad/vmap,
SciPy conversion and bad input."""
import numpy as np
import pytest
import scipy.sparse

import functrans as ft
import functrans.numpy as fnp
from functrans.experimental.sparse import BCOO


def test_bcoo_matmul_matches_dense():
    rng = np.random.default_rng(0)
    a = rng.normal(size=(4, 3)) * (rng.random((4, 3)) < 0.5)
    m = BCOO.fromdense(a)
    v, b, c = rng.normal(size=3), rng.normal(size=(3, 2)), rng.normal(size=(5, 3, 1))
    np.testing.assert_allclose(m @ v, a @ v, atol=1e-12)
    np.testing.assert_allclose(m @ b, a @ b, atol=1e-12)
    np.testing.assert_allclose(m @ c, a @ c, atol=1e-12)
    np.testing.assert_allclose(m.T.todense(), a.T, atol=1e-12)
    np.testing.assert_allclose(m.sum(axis=-1), a.sum(-1), atol=1e-12)
    np.testing.assert_allclose(m.sum(axis=0), a.sum(0), atol=1e-12)
    s = BCOO.from_scipy_sparse(scipy.sparse.csr_matrix(a))
    np.testing.assert_allclose(s.todense(), a)
    # a pytree: through jit, and grad in the dense operand is m.T @ ones
    np.testing.assert_allclose(ft.jit(lambda m, v: m @ v)(m, v), a @ v, atol=1e-12)
    np.testing.assert_allclose(ft.grad(lambda v: (m @ v).sum())(v), a.sum(0), atol=1e-12)
    np.testing.assert_allclose(ft.vmap(lambda v: m @ v)(b.T), (a @ b).T, atol=1e-12)


def test_bcoo_bad_input():
    with pytest.raises(NotImplementedError, match="2-D"):
        BCOO((fnp.ones(1), fnp.zeros((1, 3), int)), shape=(2, 2, 2))
    with pytest.raises(ValueError, match="do not match"):
        BCOO.fromdense(np.eye(2)) @ np.ones(3)
