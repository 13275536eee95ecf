"""Image resampling (``jax.image``): ``resize`` and ``scale_and_translate`` as JAX defines them.

Each resized spatial dimension is one product with a ``(input, output)`` weight matrix built
from the method's interpolation kernel, so ``grad``, ``vmap`` and ``jit`` apply unchanged and
the result is JAX's to rounding. Downsampling with ``antialias=True`` widens the kernel by the
inverse scale (the kernel then averages every input sample an output pixel covers), as JAX
and TensorFlow do; ``nearest`` is a gather.
"""
from __future__ import annotations

import enum
import operator

import numpy as np

__all__ = ["ResizeMethod", "resize", "scale_and_translate"]


class ResizeMethod(enum.Enum):
    """The interpolation methods of :func:`resize` (JAX's enum, same members and values).

        >>> ResizeMethod.from_string("bilinear")
        <ResizeMethod.LINEAR: 1>
    """
    NEAREST = 0
    LINEAR = 1
    LANCZOS3 = 2
    LANCZOS5 = 3
    CUBIC = 4

    @staticmethod
    def from_string(name: str) -> "ResizeMethod":
        """The method a name denotes: ``nearest``, ``linear`` (``bilinear``, ``trilinear``,
        ``triangle``), ``lanczos3``, ``lanczos5``, ``cubic`` (``bicubic``, ``tricubic``)."""
        found = _METHOD_NAMES.get(name.lower()) if isinstance(name, str) else None
        if found is None:
            raise ValueError(f"unknown resize method {name!r}; expected one of "
                             f"{', '.join(sorted(_METHOD_NAMES))}")
        return found


_METHOD_NAMES = {
    "nearest": ResizeMethod.NEAREST, "linear": ResizeMethod.LINEAR,
    "bilinear": ResizeMethod.LINEAR, "trilinear": ResizeMethod.LINEAR,
    "triangle": ResizeMethod.LINEAR, "lanczos3": ResizeMethod.LANCZOS3,
    "lanczos5": ResizeMethod.LANCZOS5, "cubic": ResizeMethod.CUBIC,
    "bicubic": ResizeMethod.CUBIC, "tricubic": ResizeMethod.CUBIC,
}


def _fnp():
    # functrans.numpy imports this module while it initialises: bind it at call time.
    import functrans.numpy as fnp
    return fnp


def _triangle(x):
    fnp = _fnp()
    return fnp.maximum(0.0, 1.0 - fnp.abs(x))


def _keys_cubic(x):
    # Keys' cubic convolution kernel with a = -0.5 (Catmull-Rom), as JAX and TensorFlow use.
    fnp = _fnp()
    x = fnp.abs(x)
    near = ((1.5 * x - 2.5) * x) * x + 1.0
    far = ((-0.5 * x + 2.5) * x - 4.0) * x + 2.0
    return fnp.where(x >= 2.0, 0.0, fnp.where(x >= 1.0, far, near))


def _lanczos(radius):
    def kernel(x):
        fnp = _fnp()
        y = radius * fnp.sin(np.pi * x) * fnp.sin(np.pi * x / radius)
        # sinc's removable singularity at 0: its limit, 1, within 1e-3 of it.
        safe = fnp.where(x > 1e-3, x, 1.0)
        out = fnp.where(x > 1e-3, y / (np.pi ** 2 * safe * safe), 1.0)
        return fnp.where(x > radius, 0.0, out)
    return kernel


_KERNELS = {ResizeMethod.LINEAR: _triangle, ResizeMethod.CUBIC: _keys_cubic,
            ResizeMethod.LANCZOS3: _lanczos(3.0), ResizeMethod.LANCZOS5: _lanczos(5.0)}


def _weights(in_size, out_size, scale, translation, kernel, antialias, dtype):
    """The ``(in_size, out_size)`` matrix mapping one spatial dimension to its resampled size:
    column ``j`` weighs the inputs around output sample ``j``'s centre, normalised to sum 1;
    outputs whose centre falls outside the input get weight 0."""
    fnp = _fnp()
    scale = fnp.asarray(scale, dtype)
    translation = fnp.asarray(translation, dtype)
    inv_scale = 1.0 / scale
    kernel_scale = fnp.maximum(inv_scale, 1.0) if antialias else fnp.asarray(1.0, dtype)
    centres = ((fnp.arange(out_size, dtype=dtype) + 0.5) * inv_scale
               - translation * inv_scale - 0.5)
    distance = fnp.abs(centres[None, :] - fnp.arange(in_size, dtype=dtype)[:, None])
    weights = kernel(distance / kernel_scale)
    total = fnp.sum(weights, axis=0, keepdims=True)
    # A column whose weights cancel (far outside the input) is zero, not a division by ~0.
    usable = fnp.abs(total) > 1000.0 * float(np.finfo(dtype).eps)
    weights = fnp.where(usable, weights / fnp.where(total != 0, total, 1.0), 0.0)
    inside = (centres >= -0.5) & (centres <= in_size - 0.5)
    return fnp.where(inside[None, :], weights, 0.0).astype(dtype)


def _resample(image, shape, spatial_dims, scale, translation, kernel, antialias, precision):
    fnp = _fnp()
    rank = image.ndim
    operands, out_labels = [], list(range(rank))
    for i, d in enumerate(spatial_dims):
        # Weights in the default float type (as JAX builds them from its float scale), then
        # in the image's type for the product.
        w = _weights(image.shape[d], shape[d], scale[i], translation[i], kernel, antialias,
                     np.dtype(fnp.result_type(float))).astype(image.dtype)
        operands += [w, [d, rank + i]]
        out_labels[d] = rank + i
    if not operands:
        return image
    return fnp.einsum(image, list(range(rank)), *operands, out_labels, precision=precision)


def _resize_nearest(image, shape):
    fnp = _fnp()
    for d, (m, n) in enumerate(zip(image.shape, shape)):
        if m == n:
            continue
        # The input sample whose cell holds output sample j's centre (float32, as JAX).
        src = np.floor((np.arange(n, dtype=np.float32) + 0.5) * np.float32(m)
                       / np.float32(n)).astype(np.int32)
        image = fnp.take(image, src, axis=d)
    return image


def _check_shape(image, shape, what):
    try:
        shape = tuple(operator.index(s) for s in shape)
    except TypeError:
        raise TypeError(f"{what}: shape must be a sequence of integers, got {shape!r}") from None
    if len(shape) != image.ndim:
        raise ValueError(f"{what}: shape must have length equal to the number of dimensions of "
                         f"the image; {len(shape)} vs {image.ndim}")
    if any(s < 0 for s in shape):
        raise ValueError(f"{what}: shape must be non-negative, got {shape}")
    return shape


def _method(method, what):
    if isinstance(method, ResizeMethod):
        return method
    if isinstance(method, str):
        return ResizeMethod.from_string(method)
    raise TypeError(f"{what}: method must be a ResizeMethod or its name, got {method!r}")


def _inexact(image):
    fnp = _fnp()
    image = fnp.asarray(image)
    if not fnp.issubdtype(image.dtype, fnp.inexact):
        image = image.astype(fnp.result_type(image, fnp.float32))
    return image


def resize(image, shape, method, antialias=True, precision=None):
    """``image`` resampled to ``shape`` with ``method`` (JAX's ``jax.image.resize``).

    Dimensions whose size does not change are left as they are; the others are resampled
    with half-pixel centres. ``linear``, ``cubic`` (Keys, a=-0.5) and ``lanczos3/5``
    interpolate; with ``antialias`` (the default) downsampling averages what each output
    pixel covers. ``nearest`` picks one input sample. Integer images give floats.

        >>> import functrans.numpy as fnp
        >>> resize(fnp.array([[0.0, 1.0], [2.0, 3.0]]), (4, 4), "linear")[0]
        Array([0.  , 0.25, 0.75, 1.  ], dtype=float64)
    """
    method = _method(method, "resize")
    fnp = _fnp()
    image = fnp.asarray(image)
    shape = _check_shape(image, shape, "resize")
    if method is ResizeMethod.NEAREST:
        return _resize_nearest(image, shape)
    image = _inexact(image)
    dims = tuple(d for d in range(image.ndim) if image.shape[d] != shape[d])
    scale = [1.0 if shape[d] == 0 else shape[d] / image.shape[d] for d in dims]
    return _resample(image, shape, dims, scale, [0.0] * len(dims), _KERNELS[method],
                     antialias, precision)


def scale_and_translate(image, shape, spatial_dims, scale, translation, method,
                        antialias=True, precision=None):
    """``image`` resampled to ``shape``, output sample ``x`` of dimension ``spatial_dims[i]``
    taken at input coordinate ``(x + 0.5 - translation[i]) / scale[i] - 0.5`` (JAX's
    ``jax.image.scale_and_translate``; ``scale`` and ``translation`` may be traced, so they
    are differentiable). ``nearest`` is not supported, as in JAX.

        >>> import functrans.numpy as fnp
        >>> scale_and_translate(fnp.arange(4.0), (4,), (0,), fnp.array([1.0]),
        ...                     fnp.array([1.0]), "linear")
        Array([0., 0., 1., 2.], dtype=float64)
    """
    fnp = _fnp()
    method = _method(method, "scale_and_translate")
    image = fnp.asarray(image)
    shape = _check_shape(image, shape, "scale_and_translate")
    spatial_dims = tuple(operator.index(d) for d in spatial_dims)
    for d in spatial_dims:
        if not -image.ndim <= d < image.ndim:
            raise ValueError(f"scale_and_translate: spatial dimension {d} is out of range for "
                             f"an image of rank {image.ndim}")
    spatial_dims = tuple(d % image.ndim for d in spatial_dims)
    if len(spatial_dims) != len(scale):
        raise ValueError("scale_and_translate: spatial_dims must have the same length as "
                         f"scale; {len(spatial_dims)} vs {len(scale)}")
    if len(spatial_dims) != len(translation):
        raise ValueError("scale_and_translate: spatial_dims must have the same length as "
                         f"translation; {len(spatial_dims)} vs {len(translation)}")
    if method not in _KERNELS:
        raise ValueError(f"scale_and_translate: method {method.name.lower()} is not "
                         "supported (use linear, cubic, lanczos3 or lanczos5)")
    image = _inexact(image)
    return _resample(image, shape, spatial_dims, scale, translation, _KERNELS[method],
                     antialias, precision)
