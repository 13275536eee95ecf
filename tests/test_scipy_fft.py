"""functrans.scipy.fft (jax.scipy.fft): the type-2 DCT against SciPy's, its inverse, its
gradient (a linear map's gradient is its transpose) and bad input."""
import numpy as np
import pytest
import scipy.fft as sfft

import functrans as ft
from functrans.scipy import fft


@pytest.mark.parametrize("norm", [None, "ortho"])
def test_dct_matches_scipy(norm):
    x = np.random.default_rng(0).normal(size=(3, 5))
    np.testing.assert_allclose(fft.dct(x, norm=norm), sfft.dct(x, norm=norm), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(fft.dct(x, axis=0, norm=norm), sfft.dct(x, axis=0, norm=norm),
                               rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(fft.idct(x, norm=norm), sfft.idct(x, norm=norm), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(fft.dct(x, n=7, norm=norm), sfft.dct(x, n=7, norm=norm), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(fft.dctn(x, norm=norm), sfft.dctn(x, norm=norm), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(fft.idctn(x, norm=norm), sfft.idctn(x, norm=norm), rtol=1e-12, atol=1e-12)


def test_dct_roundtrip_grad_and_jit():
    x = np.arange(4.0)
    np.testing.assert_allclose(ft.jit(lambda v: fft.idct(fft.dct(v)))(x), x, atol=1e-12)
    # ortho DCT is orthogonal: grad of sum(dct(x)) is the column sums of its matrix
    g = ft.grad(lambda v: fft.dct(v, norm="ortho").sum())(x)
    np.testing.assert_allclose(g, sfft.dct(np.eye(4), norm="ortho", axis=0).sum(axis=0), atol=1e-12)


def test_dct_bad_input():
    with pytest.raises(NotImplementedError, match="type=2"):
        fft.dct(np.ones(3), type=1)
    with pytest.raises(ValueError, match="norm"):
        fft.dct(np.ones(3), norm="forward2")
    with pytest.raises(ValueError, match="s and axes"):
        fft.dctn(np.ones((2, 2)), s=(2,), axes=(0, 1))
