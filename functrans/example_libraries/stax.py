"""Stax: neural networks as ``(init_fun, apply_fun)`` pairs, with the API of
``jax.example_libraries.stax``.

``init_fun(rng, input_shape) -> (output_shape, params)`` builds parameters for an input shape
(``-1`` marks a batch size not fixed yet); ``apply_fun(params, inputs, **kwargs)`` runs the
layer (``rng=`` for Dropout). Layers compose with :func:`serial` and :func:`parallel`::

    >>> from functrans.example_libraries import stax
    >>> init, apply = stax.serial(stax.Conv(4, (3, 3), padding="SAME"), stax.Relu,
    ...                           stax.MaxPool((2, 2)), stax.Flatten, stax.Dense(3),
    ...                           stax.LogSoftmax)
    >>> out_shape, params = init(random.key(0), (-1, 8, 8, 1))
    >>> out_shape, apply(params, fnp.ones((2, 8, 8, 1))).shape
    ((-1, 3), (2, 3))
"""
from __future__ import annotations

import functools
import math

import numpy as np

from .. import lax
from .. import nn
from .. import numpy as fnp
from .. import random
from ..nn.initializers import glorot_normal, normal, ones, zeros

__all__ = ["Dense", "GeneralConv", "Conv", "Conv1DTranspose", "ConvTranspose",
           "GeneralConvTranspose", "BatchNorm", "elementwise", "Tanh", "Relu", "Exp",
           "LogSoftmax", "Softmax", "Softplus", "Sigmoid", "Elu", "LeakyRelu", "Selu", "Gelu",
           "MaxPool", "SumPool", "AvgPool", "Flatten", "Identity", "FanOut", "FanInSum",
           "FanInConcat", "Dropout", "serial", "parallel", "shape_dependent"]


def Dense(out_dim, W_init=glorot_normal(), b_init=normal()):
    """Fully connected layer ``inputs @ W + b`` over the last axis.

    >>> init, apply = Dense(2)
    >>> shape, (W, b) = init(random.key(0), (-1, 3))
    >>> shape, W.shape, b.shape, apply((W, b), fnp.ones((5, 3))).shape
    ((-1, 2), (3, 2), (2,), (5, 2))
    """
    def init_fun(rng, input_shape):
        k1, k2 = random.split(rng)
        W, b = W_init(k1, (input_shape[-1], out_dim)), b_init(k2, (out_dim,))
        return tuple(input_shape[:-1]) + (out_dim,), (W, b)

    def apply_fun(params, inputs, **kwargs):
        W, b = params
        return fnp.dot(inputs, W) + b
    return init_fun, apply_fun


def _spatial_order(spec, skip):
    return [c for c in spec if c not in skip]


def GeneralConv(dimension_numbers, out_chan, filter_shape, strides=None, padding="VALID",
                W_init=None, b_init=normal(1e-6)):
    """Convolution layer for any ``(lhs, rhs, out)`` dimension spec strings; the kernel has
    shape ``filter_shape`` in the order of the kernel spec's spatial letters.

    >>> init, apply = GeneralConv(("NCHW", "OIHW", "NCHW"), 4, (3, 3), padding="SAME")
    >>> shape, (W, b) = init(random.key(0), (2, 3, 5, 5))
    >>> shape, W.shape, b.shape, apply((W, b), fnp.ones((2, 3, 5, 5))).shape
    ((2, 4, 5, 5), (4, 3, 3, 3), (1, 4, 1, 1), (2, 4, 5, 5))
    """
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    one = (1,) * len(filter_shape)
    strides = strides or one
    W_init = W_init or glorot_normal(rhs_spec.index("I"), rhs_spec.index("O"))

    def init_fun(rng, input_shape):
        sizes = iter(filter_shape)
        kernel_shape = [out_chan if c == "O" else input_shape[lhs_spec.index("C")] if c == "I"
                        else next(sizes) for c in rhs_spec]
        output_shape = lax.conv_general_shape_tuple(input_shape, kernel_shape, strides,
                                                    padding, dimension_numbers)
        bias_shape = [out_chan if c == "C" else 1 for c in out_spec]
        k1, k2 = random.split(rng)
        return output_shape, (W_init(k1, tuple(kernel_shape)), b_init(k2, tuple(bias_shape)))

    def apply_fun(params, inputs, **kwargs):
        W, b = params
        return lax.conv_general_dilated(inputs, W, strides, padding, one, one,
                                        dimension_numbers=dimension_numbers) + b
    return init_fun, apply_fun


Conv = functools.partial(GeneralConv, ("NHWC", "HWIO", "NHWC"))
Conv.__doc__ = """2-d convolution in ``NHWC``/``HWIO`` order (TensorFlow's).

    >>> init, apply = Conv(8, (3, 3), strides=(2, 2), padding="SAME")
    >>> init(random.key(0), (-1, 9, 9, 3))[0]
    (-1, 5, 5, 8)
"""


def GeneralConvTranspose(dimension_numbers, out_chan, filter_shape, strides=None,
                         padding="VALID", W_init=None, b_init=normal(1e-6)):
    """Transposed convolution layer (:func:`functrans.lax.conv_transpose`).

    >>> init, apply = GeneralConvTranspose(("NHC", "HIO", "NHC"), 2, (3,), strides=(2,),
    ...                                    padding="SAME")
    >>> shape, params = init(random.key(0), (1, 4, 3))
    >>> shape, apply(params, fnp.ones((1, 4, 3))).shape
    ((1, 8, 2), (1, 8, 2))
    """
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    one = (1,) * len(filter_shape)
    strides = strides or one
    W_init = W_init or glorot_normal(rhs_spec.index("I"), rhs_spec.index("O"))

    def init_fun(rng, input_shape):
        sizes = iter(filter_shape)
        kernel_shape = [out_chan if c == "O" else input_shape[lhs_spec.index("C")] if c == "I"
                        else next(sizes) for c in rhs_spec]
        output_shape = lax.conv_transpose_shape_tuple(input_shape, kernel_shape, strides,
                                                      padding, dimension_numbers)
        bias_shape = [out_chan if c == "C" else 1 for c in out_spec]
        k1, k2 = random.split(rng)
        return output_shape, (W_init(k1, tuple(kernel_shape)), b_init(k2, tuple(bias_shape)))

    def apply_fun(params, inputs, **kwargs):
        W, b = params
        return lax.conv_transpose(inputs, W, strides, padding,
                                  dimension_numbers=dimension_numbers) + b
    return init_fun, apply_fun


Conv1DTranspose = functools.partial(GeneralConvTranspose, ("NHC", "HIO", "NHC"))
Conv1DTranspose.__doc__ = """1-d transposed convolution in ``NHC``/``HIO`` order.

    >>> Conv1DTranspose(2, (3,), strides=(2,))[0](random.key(0), (1, 4, 3))[0]
    (1, 9, 2)
"""
ConvTranspose = functools.partial(GeneralConvTranspose, ("NHWC", "HWIO", "NHWC"))
ConvTranspose.__doc__ = """2-d transposed convolution in ``NHWC``/``HWIO`` order.

    >>> ConvTranspose(2, (2, 2), strides=(2, 2))[0](random.key(0), (1, 3, 3, 1))[0]
    (1, 6, 6, 2)
"""


def BatchNorm(axis=(0, 1, 2), epsilon=1e-5, center=True, scale=True, beta_init=zeros,
              gamma_init=ones):
    """Normalizes over ``axis`` with the batch's statistics, then scales by gamma and shifts by
    beta (parameters of the other axes' shape).

    >>> init, apply = BatchNorm()
    >>> shape, params = init(random.key(0), (-1, 2, 2, 3))
    >>> y = apply(params, fnp.arange(24.0).reshape(2, 2, 2, 3))
    >>> bool(fnp.allclose(fnp.mean(y, (0, 1, 2)), 0.0, atol=1e-12))
    True
    """
    axis = (axis,) if np.isscalar(axis) else tuple(axis)

    def init_fun(rng, input_shape):
        shape = tuple(d for i, d in enumerate(input_shape) if i not in axis)
        k1, k2 = random.split(rng)
        beta = beta_init(k1, shape) if center else ()
        gamma = gamma_init(k2, shape) if scale else ()
        return input_shape, (beta, gamma)

    def apply_fun(params, x, **kwargs):
        beta, gamma = params
        # expand the parameters to broadcast against x over the normalized axes
        ed = tuple(None if i in axis else slice(None) for i in range(fnp.ndim(x)))
        z = nn.standardize(x, axis, epsilon=epsilon)
        if center and scale:
            return gamma[ed] * z + beta[ed]
        if center:
            return z + beta[ed]
        if scale:
            return gamma[ed] * z
        return z
    return init_fun, apply_fun


def elementwise(fun, **fun_kwargs):
    """A parameterless layer applying ``fun`` to its input.

    >>> init, apply = elementwise(fnp.square)
    >>> apply((), fnp.array([1.0, -2.0]))
    Array([1., 4.], dtype=float64)
    """
    def init_fun(rng, input_shape):
        return input_shape, ()

    def apply_fun(params, inputs, **kwargs):
        return fun(inputs, **fun_kwargs)
    return init_fun, apply_fun


Tanh = elementwise(fnp.tanh)
Relu = elementwise(nn.relu)
Exp = elementwise(fnp.exp)
LogSoftmax = elementwise(nn.log_softmax, axis=-1)
Softmax = elementwise(nn.softmax, axis=-1)
Softplus = elementwise(nn.softplus)
Sigmoid = elementwise(nn.sigmoid)
Elu = elementwise(nn.elu)
LeakyRelu = elementwise(nn.leaky_relu)
Selu = elementwise(nn.selu)
Gelu = elementwise(nn.gelu)


def _pooling_layer(reducer, init_val, rescaler=None):
    def PoolingLayer(window_shape, strides=None, padding="VALID", spec=None):
        strides = strides or (1,) * len(window_shape)
        rescale = rescaler(window_shape, strides, padding) if rescaler else None
        if spec is None:
            non_spatial = (0, len(window_shape) + 1)
        else:
            non_spatial = tuple(spec.index(c) for c in "NC")
        for i in sorted(non_spatial):
            window_shape = window_shape[:i] + (1,) + window_shape[i:]
            strides = strides[:i] + (1,) + strides[i:]

        def init_fun(rng, input_shape):
            pads = lax.padtype_to_pads(input_shape, window_shape, strides, padding)
            out = lax.reduce_window_shape_tuple([1 if d == -1 else d for d in input_shape],
                                                window_shape, strides, pads)
            return tuple(-1 if d == -1 else o for d, o in zip(input_shape, out)), ()

        def apply_fun(params, inputs, **kwargs):
            out = lax.reduce_window(inputs, init_val, reducer, window_shape, strides, padding)
            return rescale(out, inputs, spec) if rescale else out
        return init_fun, apply_fun
    return PoolingLayer


def _normalize_by_window_size(dims, strides, padding):
    def rescale(outputs, inputs, spec):
        if spec is None:
            spatial = inputs.shape[1:-1]
        else:
            spatial = tuple(inputs.shape[i] for i, c in enumerate(spec) if c not in "NC")
        one = fnp.ones(spatial, dtype=inputs.dtype)
        counts = lax.reduce_window(one, 0.0, lax.add, dims, strides, padding)
        for i in sorted((0, len(spatial) + 1) if spec is None
                        else (spec.index("N"), spec.index("C"))):
            counts = fnp.expand_dims(counts, i)
        return outputs / counts
    return rescale


MaxPool = _pooling_layer(lax.max, -fnp.inf)
MaxPool.__doc__ = """Max pooling over spatial windows (``NHWC`` unless ``spec`` says otherwise).

    >>> init, apply = MaxPool((2, 2))
    >>> apply((), fnp.arange(16.0).reshape(1, 4, 4, 1))[0, :, :, 0]
    Array([[ 5.,  6.,  7.],
           [ 9., 10., 11.],
           [13., 14., 15.]], dtype=float64)
"""
SumPool = _pooling_layer(lax.add, 0.0)
SumPool.__doc__ = """Sum pooling over spatial windows.

    >>> SumPool((2, 2), (2, 2))[1]((), fnp.ones((1, 4, 4, 1)))[0, :, :, 0]
    Array([[4., 4.],
           [4., 4.]], dtype=float64)
"""
AvgPool = _pooling_layer(lax.add, 0.0, _normalize_by_window_size)
AvgPool.__doc__ = """Average pooling; with ``'SAME'`` padding each window is divided by the
number of real elements it covers.

    >>> AvgPool((2, 2), padding="SAME")[1]((), fnp.ones((1, 3, 3, 1)))[0, :, :, 0]
    Array([[1., 1., 1.],
           [1., 1., 1.],
           [1., 1., 1.]], dtype=float64)
"""


def _flatten():
    def init_fun(rng, input_shape):
        rest = input_shape[1:]
        return (input_shape[0], -1 if -1 in rest else math.prod(rest)), ()

    def apply_fun(params, inputs, **kwargs):
        return fnp.reshape(inputs, (inputs.shape[0], -1))
    return init_fun, apply_fun


Flatten = _flatten()  # (batch, ...) -> (batch, features)


def _identity():
    def init_fun(rng, input_shape):
        return input_shape, ()

    def apply_fun(params, inputs, **kwargs):
        return inputs
    return init_fun, apply_fun


Identity = _identity()  # passes its input through


def FanOut(num):
    """Copies its input ``num`` times (a tuple), to feed :func:`parallel`.

    >>> FanOut(2)[1]((), fnp.ones(2))
    (Array([1., 1.], dtype=float64), Array([1., 1.], dtype=float64))
    """
    def init_fun(rng, input_shape):
        return (input_shape,) * num, ()

    def apply_fun(params, inputs, **kwargs):
        return (inputs,) * num
    return init_fun, apply_fun


def _fan_in_sum():
    def init_fun(rng, input_shape):
        return input_shape[0], ()

    def apply_fun(params, inputs, **kwargs):
        return sum(inputs[1:], inputs[0])
    return init_fun, apply_fun


FanInSum = _fan_in_sum()  # adds a tuple of inputs


def FanInConcat(axis=-1):
    """Concatenates a tuple of inputs along ``axis``.

    >>> FanInConcat()[0](None, ((-1, 2), (-1, 3)))[0]
    (-1, 5)
    """
    def init_fun(rng, input_shape):
        ax = axis % len(input_shape[0])
        total = sum(s[ax] for s in input_shape)
        return input_shape[0][:ax] + (total,) + input_shape[0][ax + 1:], ()

    def apply_fun(params, inputs, **kwargs):
        return fnp.concatenate(inputs, axis)
    return init_fun, apply_fun


def Dropout(rate, mode="train"):
    """Dropout as JAX's stax defines it: ``rate`` is the probability to *keep* an element
    (kept ones are divided by ``rate``); needs ``rng=`` in training mode.

    >>> init, apply = Dropout(0.5)
    >>> y = apply((), fnp.ones(1000), rng=random.key(0))
    >>> sorted(set(np.asarray(y).tolist()))
    [0.0, 2.0]
    """
    def init_fun(rng, input_shape):
        return input_shape, ()

    def apply_fun(params, inputs, **kwargs):
        rng = kwargs.get("rng", None)
        if mode != "train":
            return inputs
        if rng is None:
            raise ValueError("Dropout's apply_fun needs a PRNG key: call it with rng=key "
                             "(or build the layer with mode='test' to disable it)")
        keep = random.bernoulli(rng, rate, inputs.shape)
        return fnp.where(keep, inputs / rate, 0)
    return init_fun, apply_fun


def serial(*layers):
    """Layers applied one after the other; parameters are a tuple, one entry per layer.

    >>> init, apply = serial(Dense(4), Relu, Dense(1))
    >>> shape, params = init(random.key(0), (-1, 3))
    >>> shape, len(params), apply(params, fnp.ones((2, 3))).shape
    ((-1, 1), 3, (2, 1))
    """
    init_funs, apply_funs = zip(*layers) if layers else ((), ())

    def init_fun(rng, input_shape):
        params = []
        for init in init_funs:
            rng, layer_rng = random.split(rng)
            input_shape, param = init(layer_rng, input_shape)
            params.append(param)
        return input_shape, tuple(params)

    def apply_fun(params, inputs, **kwargs):
        rng = kwargs.pop("rng", None)
        rngs = random.split(rng, len(apply_funs)) if rng is not None else \
            (None,) * len(apply_funs)
        for fun, param, r in zip(apply_funs, params, rngs):
            inputs = fun(param, inputs, rng=r, **kwargs)
        return inputs
    return init_fun, apply_fun


def parallel(*layers):
    """Layers applied to the matching members of a tuple of inputs.

    >>> init, apply = serial(FanOut(2), parallel(Dense(2), Identity), FanInConcat())
    >>> shape, params = init(random.key(0), (-1, 3))
    >>> shape, apply(params, fnp.ones((4, 3))).shape
    ((-1, 5), (4, 5))
    """
    init_funs, apply_funs = zip(*layers) if layers else ((), ())

    def init_fun(rng, input_shape):
        rngs = random.split(rng, len(init_funs))
        shapes, params = [], []
        for init, r, shape in zip(init_funs, rngs, input_shape):
            s, p = init(r, shape)
            shapes.append(s)
            params.append(p)
        return tuple(shapes), tuple(params)

    def apply_fun(params, inputs, **kwargs):
        rng = kwargs.pop("rng", None)
        rngs = random.split(rng, len(apply_funs)) if rng is not None else \
            (None,) * len(apply_funs)
        return tuple(f(p, x, rng=r, **kwargs)
                     for f, p, x, r in zip(apply_funs, params, inputs, rngs))
    return init_fun, apply_fun


def shape_dependent(make_layer):
    """A layer built by ``make_layer(input_shape)`` once the input shape is known.

    >>> init, apply = shape_dependent(lambda shape: Dense(shape[-1]))
    >>> init(random.key(0), (-1, 3))[0]
    (-1, 3)
    """
    def init_fun(rng, input_shape):
        return make_layer(input_shape)[0](rng, input_shape)

    def apply_fun(params, inputs, **kwargs):
        return make_layer(inputs.shape)[1](params, inputs, **kwargs)
    return init_fun, apply_fun
