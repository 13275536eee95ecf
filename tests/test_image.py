"""functrans.image (JAX's ``jax.image``): resize and scale_and_translate.

Oracles: the resampling definition evaluated pixel by pixel in NumPy loops (float64), values
JAX 0.10.2 prints for the same calls (float32), finite differences for gradients, Python loops
for vmap, the un-jitted call for jit.
"""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import functrans as ft
import functrans.numpy as fnp
from functrans import image
from finite_diff import fd_grad

METHODS = ["linear", "cubic", "lanczos3", "lanczos5"]


def _kernel(method, x):
    x = abs(x)
    if method == "linear":
        return max(0.0, 1.0 - x)
    if method == "cubic":  # Keys, a = -0.5
        if x >= 2:
            return 0.0
        return (1.5 * x - 2.5) * x * x + 1 if x < 1 else ((-0.5 * x + 2.5) * x - 4) * x + 2
    radius = 3.0 if method == "lanczos3" else 5.0
    if x > radius:
        return 0.0
    if x <= 1e-3:
        return 1.0
    return radius * math.sin(math.pi * x) * math.sin(math.pi * x / radius) / (math.pi * x) ** 2


def _resample_1d(row, n, scale, shift, method, antialias):
    """One dimension resampled by the definition: output sample j sits at input coordinate
    (j + 0.5 - shift) / scale - 0.5 and takes the kernel-weighted, normalised mean of the
    inputs around it (the kernel widened by 1/scale when downsampling with antialias)."""
    m = len(row)
    widen = max(1.0 / scale, 1.0) if antialias else 1.0
    out = np.zeros(n)
    for j in range(n):
        centre = (j + 0.5 - shift) / scale - 0.5
        if not -0.5 <= centre <= m - 0.5:
            continue
        w = np.array([_kernel(method, (centre - i) / widen) for i in range(m)])
        if abs(w.sum()) > 1000 * np.finfo(np.float64).eps:
            out[j] = w @ row / w.sum()
    return out


def _reference(x, shape, method, antialias, scales=None, shifts=None):
    x = np.asarray(x, np.float64)
    for d in range(x.ndim):
        if scales is None and x.shape[d] == shape[d]:
            continue
        scale = shape[d] / x.shape[d] if scales is None else scales[d]
        shift = 0.0 if shifts is None else shifts[d]
        x = np.apply_along_axis(_resample_1d, d, x, shape[d], scale, shift, method, antialias)
    return x


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(METHODS), st.booleans(),
       st.tuples(st.integers(1, 7), st.integers(1, 7)),
       st.tuples(st.integers(1, 9), st.integers(1, 9)), st.integers(0, 2 ** 31 - 1))
def test_resize_matches_the_definition(method, antialias, in_shape, out_shape, seed):
    # float64 throughout: one weighted sum of <= 2*5*7 terms per dimension, so the results
    # agree to ~1e-13; 1e-10 leaves room for the normalisation's division.
    x = np.random.RandomState(seed).randn(*in_shape)
    got = image.resize(fnp.asarray(x), out_shape, method, antialias=antialias)
    assert got.shape == out_shape and got.dtype == np.float64
    np.testing.assert_allclose(np.asarray(got), _reference(x, out_shape, method, antialias),
                               rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("method", METHODS)
def test_scale_and_translate_matches_the_definition(method):
    x = np.random.RandomState(1).randn(5, 6)
    scales, shifts = (1.3, 0.6), (0.4, -1.2)
    got = image.scale_and_translate(fnp.asarray(x), (7, 4), (0, 1), fnp.array(scales),
                                    fnp.array(shifts), method)
    np.testing.assert_allclose(np.asarray(got), _reference(x, (7, 4), method, True, scales,
                                                           shifts), rtol=1e-10, atol=1e-10)


def test_values_jax_prints():
    # JAX 0.10.2, float32 on both sides: each output is a normalised sum of at most 6 terms
    # of magnitude <= 5, so float32 rounding bounds the difference by ~6 * 5 * 6e-8 = 2e-6.
    x = fnp.arange(6.0, dtype=fnp.float32).reshape(2, 3)
    cases = [
        (image.resize(x, (3, 5), "lanczos3"),
         [[-0.44777882, -0.14643387, 0.62755275, 1.4015397, 1.7028844],
          [1.4246686, 1.7260135, 2.5, 3.2739868, 3.5753317],
          [3.297116, 3.598461, 4.372447, 5.146434, 5.4477787]]),
        (image.resize(x, (1, 2), "cubic"), [[1.8097912, 3.1902087]]),
        (image.resize(x, (1, 2), "cubic", antialias=False), [[1.6678832, 3.3321168]]),
        (image.resize(x, (4, 2), "nearest"), [[0, 2], [0, 2], [3, 5], [3, 5]]),
        (image.scale_and_translate(x, (2, 4), (1,), fnp.array([1.5], fnp.float32),
                                   fnp.array([-0.5], fnp.float32), "lanczos5"),
         [[0.04188864, 0.6964474, 1.7553023, 2.0215187],
          [3.0418885, 3.6964478, 4.7553024, 5.0215187]]),
    ]
    for got, want in cases:
        assert got.dtype == np.float32
        np.testing.assert_allclose(np.asarray(got), want, rtol=0, atol=2e-6)


def test_nearest_picks_the_sample_under_each_output_centre():
    x = np.arange(5)
    got = image.resize(fnp.asarray(x), (8,), "nearest")
    assert got.dtype == x.dtype  # nearest keeps integers, as JAX
    assert np.asarray(got).tolist() == [int((j + 0.5) * 5 / 8) for j in range(8)]


def test_integer_images_resize_to_floats_and_constants_stay_constant():
    x = fnp.full((4, 6), 7, dtype=fnp.uint8)
    for method in METHODS:
        got = image.resize(x, (5, 3), method)
        assert got.dtype == np.float32  # result_type(uint8, float32), as JAX
        # The weights sum to one in every column: a constant image is reproduced to float32
        # rounding of a sum of at most 2*5*6 terms per dimension (~1e-6 relative).
        np.testing.assert_allclose(np.asarray(got), 7.0, rtol=1e-6)


def test_unchanged_dimensions_are_left_alone():
    x = np.random.RandomState(2).randn(3, 4, 2)
    got = image.resize(fnp.asarray(x), (3, 8, 2), "cubic")
    for c in range(2):
        np.testing.assert_allclose(np.asarray(got)[..., c],
                                   _reference(x[..., c], (3, 8), "cubic", True), rtol=1e-10)


@pytest.mark.parametrize("method", METHODS)
def test_grad_through_resize_matches_finite_differences(method):
    # Linear in the image: central differences are exact up to rounding (~1e-10 with h=1e-6).
    x0 = np.random.RandomState(3).randn(4, 5)
    w = np.random.RandomState(4).randn(6, 3)

    def loss(x):
        return fnp.sum(image.resize(x, (6, 3), method) * w)

    got = ft.grad(loss)(fnp.asarray(x0))
    np.testing.assert_allclose(np.asarray(got), fd_grad(lambda x: loss(fnp.asarray(x)), x0),
                               rtol=1e-7, atol=1e-8)


def test_grad_wrt_scale_and_translation_matches_finite_differences():
    # Smooth in scale and translation away from the kernel's knots; cubic's second derivative
    # is bounded, so the central-difference truncation error is ~h^2 = 1e-12, and rounding
    # ~1e-10: 1e-6 relative holds.
    x = fnp.asarray(np.random.RandomState(5).randn(5, 6))

    def loss(p):
        out = image.scale_and_translate(x, (6, 6), (0, 1), p[:2], p[2:], "cubic")
        return fnp.sum(fnp.sin(out))

    p0 = np.array([1.3, 0.7, 0.4, -1.2])
    got = ft.grad(loss)(fnp.asarray(p0))
    np.testing.assert_allclose(np.asarray(got), fd_grad(lambda p: loss(fnp.asarray(p)), p0),
                               rtol=1e-6, atol=1e-8)


def test_vmap_and_jit_agree_with_loops_and_eager():
    xs = np.random.RandomState(6).randn(3, 4, 5)
    f = lambda x: image.resize(x, (7, 2), "lanczos3")  # noqa: E731
    looped = np.stack([np.asarray(f(fnp.asarray(x))) for x in xs])
    np.testing.assert_allclose(np.asarray(ft.vmap(f)(fnp.asarray(xs))), looped, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(ft.jit(ft.vmap(f))(fnp.asarray(xs))), looped,
                               rtol=1e-12, atol=1e-14)


def test_bad_input_is_named():
    x = fnp.ones((2, 3))
    with pytest.raises(ValueError, match="length equal to the number of dimensions.*3 vs 2"):
        image.resize(x, (2, 3, 4), "linear")
    with pytest.raises(ValueError, match="unknown resize method 'bilinearr'"):
        image.resize(x, (4, 4), "bilinearr")
    with pytest.raises(ValueError, match="non-negative"):
        image.resize(x, (-1, 4), "linear")
    with pytest.raises(ValueError, match="spatial_dims must have the same length as scale"):
        image.scale_and_translate(x, (2, 3), (0, 1), fnp.ones(1), fnp.zeros(2), "linear")
    with pytest.raises(ValueError, match="nearest is not supported"):
        image.scale_and_translate(x, (2, 3), (0,), fnp.ones(1), fnp.zeros(1), "nearest")
    with pytest.raises(ValueError, match="spatial dimension 2 is out of range"):
        image.scale_and_translate(x, (2, 3), (2,), fnp.ones(1), fnp.zeros(1), "linear")


def test_importing_image_leaves_numpy_resize_the_function():
    # The implementation is a numpy submodule; one named like a numpy function would replace
    # that function on the package once imported.
    assert callable(fnp.resize)
    assert np.asarray(fnp.resize(fnp.arange(3), (5,))).tolist() == [0, 1, 2, 0, 1]
