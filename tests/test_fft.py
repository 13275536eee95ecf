"""functrans.numpy.fft against numpy.fft (values and dtypes, eager and jit), derivatives by
finite differences (check_grads, first and second order), vmap against loops, and errors.

Tolerances: pocketfft runs in the operand's precision; a transform of n points has error
O(log n) ulp relative to the largest coefficient, so values are compared with rtol = atol =
64 ulp of the parts' precision on these small inputs (scaled by the largest magnitude).
"""
import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp
from functrans import lax
from functrans.primitives import fft_p
from functrans.testing import check_grads

rng = np.random.default_rng(0)


def R(*shape):
    return rng.normal(size=shape)


def C(*shape):
    return R(*shape) + 1j * R(*shape)


def assert_matches(got, want, ulps=64):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype,
                                                                 got.shape, want.shape)
    eps = np.finfo(want.dtype).eps
    scale = max(1.0, float(np.max(np.abs(want)))) if want.size else 1.0
    np.testing.assert_allclose(got, want, rtol=0, atol=ulps * eps * scale)


# name -> (operand maker, keyword variants)
CASES = {
    "fft": (C, [{}, {"n": 7}, {"n": 3, "axis": 0}, {"norm": "ortho"}, {"norm": "forward"}]),
    "ifft": (C, [{}, {"n": 6, "axis": 1}, {"norm": "ortho"}, {"norm": "forward"}]),
    "rfft": (R, [{}, {"n": 7}, {"axis": 0, "norm": "ortho"}, {"norm": "forward"}]),
    "irfft": (C, [{}, {"n": 7}, {"n": 4, "axis": 0}, {"norm": "ortho"}, {"norm": "forward"}]),
    "fft2": (C, [{}, {"s": (3, 6)}, {"axes": (0, 2), "norm": "ortho"}]),
    "ifft2": (C, [{}, {"s": (5, 2), "norm": "forward"}]),
    "rfft2": (R, [{}, {"s": (2, 6)}]),
    "irfft2": (C, [{}, {"s": (4, 5)}, {"norm": "ortho"}]),
    "fftn": (C, [{}, {"axes": (1,)}, {"s": (2, 3, 4), "axes": (0, 1, 2), "norm": "forward"}]),
    "ifftn": (C, [{}, {"axes": (2, 0)}, {"norm": "ortho"}]),
    "rfftn": (R, [{}, {"axes": (0, 1)}, {"s": (4, 5), "axes": (2, 0)}]),
    "irfftn": (C, [{}, {"s": (3, 4, 6), "axes": (0, 1, 2)}, {"axes": (0, 2), "norm": "forward"}]),
}
PARAMS = [(name, k) for name, (_, variants) in CASES.items() for k in range(len(variants))]


def _args(name, k, dtype=None):
    make, variants = CASES[name]
    x = make(3, 4, 5)
    if dtype is not None:
        x = x.astype(dtype) if (x.dtype.kind == "c") == (np.dtype(dtype).kind == "c") else \
            x.real.astype(dtype)
    return x, variants[k]


@pytest.mark.parametrize("name, k", PARAMS)
def test_values_match_numpy(name, k):
    x, kw = _args(name, k)
    want = getattr(np.fft, name)(x, **kw)
    f = lambda v: getattr(fnp.fft, name)(v, **kw)  # noqa: E731
    assert_matches(f(x), want)
    assert_matches(ft.jit(f)(x), want)


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("dtype", ["float32", "complex64", "int32", "bool"])
def test_dtypes_follow_numpy(name, dtype):
    x, kw = _args(name, 0, dtype if dtype not in ("int32", "bool") else None)
    if dtype in ("int32", "bool"):
        x = (np.abs(np.real(x)) * 3).astype(dtype)
    if name.startswith("rfft") and x.dtype.kind == "c":
        with pytest.raises(TypeError, match=f"fnp.fft.{name} requires a real operand, got "
                                            f"dtype {x.dtype}"):
            getattr(fnp.fft, name)(x)
        return
    want = getattr(np.fft, name)(x, **kw)
    assert_matches(getattr(fnp.fft, name)(x, **kw), want)


@pytest.mark.parametrize("name, k", PARAMS)
def test_derivatives_by_finite_differences(name, k):
    x, kw = _args(name, k)
    x = x[:2, :3, :4]
    if "s" in kw:
        kw = dict(kw, s=tuple(min(n, 4) for n in kw["s"]))
    check_grads(lambda v: getattr(fnp.fft, name)(v, **kw), (x,), order=2)


@pytest.mark.parametrize("name", sorted(CASES))
def test_grad_of_real_loss_and_jit(name):
    x, kw = _args(name, 0)
    loss = lambda v: fnp.sum(fnp.abs(getattr(fnp.fft, name)(v, **kw)) ** 2)  # noqa: E731
    g = ft.grad(loss)(x)
    assert np.asarray(g).dtype == x.dtype
    np.testing.assert_allclose(ft.jit(ft.grad(loss))(x), g, rtol=1e-12, atol=1e-12)
    if name in ("fft", "fft2", "fftn"):
        # Parseval: sum |F x|^2 = N sum |x|^2; in JAX's convention the gradient of |z|^2 is
        # 2 conj(z), so this one is 2 N conj(x).
        n = np.prod([x.shape[a] for a in {"fft": [-1], "fft2": [-2, -1]}.get(name, [0, 1, 2])])
        np.testing.assert_allclose(g, 2 * n * np.conj(x), rtol=1e-12)


@pytest.mark.parametrize("name", sorted(CASES))
def test_vmap_matches_loop(name):
    x, kw = _args(name, 0)
    xs = np.stack([x, 2 * x])
    f = lambda v: getattr(fnp.fft, name)(v, **kw)  # noqa: E731
    want = np.stack([np.asarray(f(v)) for v in xs])
    np.testing.assert_allclose(ft.vmap(f)(xs), want, rtol=1e-14, atol=1e-14)
    np.testing.assert_allclose(ft.vmap(f, in_axes=2, out_axes=1)(np.moveaxis(xs, 0, 2)),
                               np.moveaxis(want, 0, 1), rtol=1e-14, atol=1e-14)
    np.testing.assert_allclose(ft.jit(ft.vmap(f))(xs), want, rtol=1e-13, atol=1e-13)


def test_fft_inside_compiled_loop_and_32_bit_mode():
    x = R(4, 6)
    h = lambda v: lax.fori_loop(0, 3, lambda i, u: fnp.fft.irfft(  # noqa: E731
        fnp.fft.rfft(u) * 0.5j, n=6), v)
    np.testing.assert_allclose(ft.jit(h)(x), h(x), rtol=1e-13, atol=1e-15)
    ft.config.update("enable_x64", False)
    try:
        y = fnp.fft.fft(x)
        assert y.dtype == np.complex64
        assert ft.jit(fnp.fft.rfft)(x).dtype == np.complex64
    finally:
        ft.config.update("enable_x64", True)


def test_transposes_follow_jax():
    # FFT's transpose is FFT (the DFT matrix is symmetric, not conjugated).
    ct, x = C(5), C(5)
    _, f_vjp = ft.vjp(fnp.fft.fft, x)
    np.testing.assert_allclose(f_vjp(ct)[0], np.fft.fft(ct), rtol=1e-13)
    # RFFT: the transpose of slicing the complex FFT of a real input.
    xr, ctr = R(6), C(4)
    _, f_vjp = ft.vjp(fnp.fft.rfft, xr)
    want = np.real(np.fft.fft(np.concatenate([ctr, np.zeros(2)])))
    np.testing.assert_allclose(f_vjp(ctr)[0], want, rtol=1e-13, atol=1e-14)


def test_frequencies_and_shifts():
    for n in (1, 4, 7):
        for d in (1.0, 0.3):
            np.testing.assert_array_equal(fnp.fft.fftfreq(n, d), np.fft.fftfreq(n, d))
            np.testing.assert_array_equal(fnp.fft.rfftfreq(n, d), np.fft.rfftfreq(n, d))
    assert fnp.fft.fftfreq(4, dtype="float32").dtype == np.float32
    x = R(3, 4, 5)
    for axes in (None, 0, (0, 2), -1):
        np.testing.assert_array_equal(fnp.fft.fftshift(x, axes), np.fft.fftshift(x, axes))
        np.testing.assert_array_equal(fnp.fft.ifftshift(x, axes), np.fft.ifftshift(x, axes))
    # Differentiable in the spacing d, batched over it.
    g = ft.grad(lambda d: fnp.sum(fnp.fft.rfftfreq(5, d)))(0.5)
    np.testing.assert_allclose(g, -np.sum(np.fft.rfftfreq(5, 0.5)) / 0.5, rtol=1e-14)
    check_grads(lambda d: fnp.fft.fftfreq(6, d), (0.7,), order=2)
    np.testing.assert_allclose(ft.vmap(lambda d: fnp.fft.rfftfreq(4, d))(np.array([1.0, 2.0])),
                               np.stack([np.fft.rfftfreq(4, 1.0), np.fft.rfftfreq(4, 2.0)]))


def test_errors_name_the_problem():
    x = C(2, 3, 4, 5)
    with pytest.raises(ValueError, match="invalid norm 'none'"):
        fnp.fft.fft(x, norm="none")
    with pytest.raises(ValueError, match=r"fnp.fft.fftn: transforms over 1 to 3 axes"):
        fnp.fft.fftn(x)
    with pytest.raises(ValueError, match="repeated axes"):
        fnp.fft.fftn(x, axes=(0, 0))
    with pytest.raises(ValueError, match=r"s=\(2,\) and axes=\(0, 1\)"):
        fnp.fft.fftn(x, s=(2,), axes=(0, 1))
    with pytest.raises(ValueError, match="invalid number of data points"):
        fnp.fft.fft(x, n=0)
    with pytest.raises(np.exceptions.AxisError, match="axes 4 is out of bounds"):
        fnp.fft.fft(x, axis=4)
    with pytest.raises(ValueError, match="n must be positive"):
        fnp.fft.fftfreq(0)
    # The primitive's type rule.
    with pytest.raises(TypeError, match="FFT requires a complex operand, got f64"):
        fft_p.bind1(R(4), fft_type="FFT", fft_lengths=(4,))
    with pytest.raises(TypeError, match=r"RFFT operand f64\[4\] must end with"):
        fft_p.bind1(R(4), fft_type="RFFT", fft_lengths=(5,))
    with pytest.raises(TypeError, match=r"IRFFT operand c128\[4\] must end with \(3,\)"):
        fft_p.bind1(C(4), fft_type="IRFFT", fft_lengths=(4,))
    with pytest.raises(ValueError, match="fft_type must be one of"):
        fft_p.bind1(C(4), fft_type="DCT", fft_lengths=(4,))
    with pytest.raises(ValueError, match="1 to 3 fft_lengths"):
        fft_p.bind1(x, fft_type="FFT", fft_lengths=(2, 3, 4, 5))
