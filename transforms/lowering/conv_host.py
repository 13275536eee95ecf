"""Convolutions run from the host: NumPy for the layout changes, cached compiled drivers
(``conv_drivers.py``: ``runtime.im2col2``/``col2im2`` and ``blas.?gemm``) for the work.

A convolution's time is in its copies and its product, which the helpers do at the speed of
the generated kernels; what a kernel adds is its compile: about a second per distinct
convolution (Numba types and links each one), which made a small CNN's first compiled step
take twice JAX's. The native backend runs the 2-D float convolutions these strategies cover
this way (``host_strategy``), each by one call of a compiled driver (``conv_drivers.py``);
the others stay in generated kernels (``window_ops._conv``). Once jit's products run on
the pool (``native/blas_split.py``), the drivers run by blocks of images there
(``conv_blocked.py``), and jit's native programs call them as steps of their driver
(``jit/conv_calls.py``, with this module's plan of layouts) instead of from the host::

    >>> x, w = np.ones((1, 4, 4, 8), np.float32), np.ones((3, 3, 8, 2), np.float32)
    >>> eqn = ft.make_jaxpr(lambda x, w: lax.conv_general_dilated(
    ...     x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")))(x, w).eqns[0]
    >>> host_strategy(eqn), run_conv(eqn, x, w)[0, 1, 1]
    ('products_first', array([72., 72.], dtype=float32))
"""
from __future__ import annotations

import math

import numpy as np

from . import conv_blocked
from .conv_drivers import (conv2_im2col, conv2_im2col_narrow, conv2_products_first,
                           conv2_weight_gradient)


def _layout(eqn):
    """Sizes in channels-last terms: (N, spatial, C) for lhs, (O, window, I) for rhs."""
    from functrans.primitives.convolution import channels_last
    lhs, rhs = eqn.inputs
    lhs_spec, rhs_spec, out_spec = eqn.params["dimension_numbers"]
    lperm, rperm = channels_last(lhs_spec), channels_last(rhs_spec)
    lshape = [lhs.aval.shape[d] for d in lperm]
    rshape = [rhs.aval.shape[d] for d in rperm]
    out_sp = [eqn.outputs[0].aval.shape[d] for d in out_spec[2:]]
    return lperm, rperm, lshape, rshape, out_sp


def host_strategy(eqn) -> str | None:
    """How the host runs this convolution (``'weight_gradient'``, ``'products_first'`` or
    ``'im2col'``, the choices ``window_ops._conv`` makes for kernels), or None when it is not
    a 2-D float convolution without dilation or groups (those stay in kernels)."""
    from .window_ops import _weight_gradient_form
    if eqn.prim.name != "conv_general_dilated":
        return None
    p = eqn.params
    lhs, rhs = eqn.inputs
    out = eqn.outputs[0]
    dt = out.aval.dtype
    if (dt not in (np.float32, np.float64) or lhs.aval.dtype != dt or rhs.aval.dtype != dt
            or len(lhs.aval.shape) != 4 or out.aval.size == 0
            or p["batch_group_count"] != 1 or p["feature_group_count"] != 1
            or any(d != 1 for d in list(p["lhs_dilation"]) + list(p["rhs_dilation"]))):
        return None
    if _weight_gradient_form(eqn, dt):
        return "weight_gradient"
    _, _, lshape, rshape, _ = _layout(eqn)
    c, o, kk = lshape[-1], rshape[0], math.prod(rshape[1:-1])
    if c * kk == 0:
        return None
    if all(s == 1 for s in p["window_strides"]) and o < c:
        return "products_first"
    return "im2col"


class HostConv:
    """One convolution equation, planned once (its strategy, layouts and sizes), run from the
    host by one call of a compiled driver."""

    def __init__(self, eqn):
        from functrans.primitives.convolution import channels_last
        self.strategy = host_strategy(eqn)
        out = eqn.outputs[0]
        self.dtype = out.aval.dtype
        self.lo = tuple(int(a) for a, _ in eqn.params["padding"])
        out_spec = eqn.params["dimension_numbers"][2]
        if self.strategy == "weight_gradient":
            f, _, _, b = eqn.inputs[0].aval.shape
            _, _, _, o = eqn.inputs[1].aval.shape
            self.out_sp = tuple(out.aval.shape[d] for d in out_spec[2:])
            self.held_shape = self.out_sp + (b, o)
            held = (out_spec[2], out_spec[3], out_spec[0], out_spec[1])
        else:
            lperm, rperm, lshape, rshape, out_sp = _layout(eqn)
            self.lperm = None if list(lperm) == [0, 1, 2, 3] else tuple(lperm)
            self.rperm = None if list(rperm) == [0, 1, 2, 3] else tuple(rperm)
            c, o, ksp = lshape[-1], rshape[0], tuple(rshape[1:-1])
            self.c, self.o, self.ksp, self.out_sp = c, o, ksp, tuple(out_sp)
            self.strides = tuple(int(s) for s in eqn.params["window_strides"])
            self.held_shape = (lshape[0],) + self.out_sp + (o,)
            held = tuple(channels_last(out_spec))
        inv = tuple(int(i) for i in np.argsort(held))
        self.out_perm = None if inv == (0, 1, 2, 3) else inv

    def operands(self, lhs, rhs):
        """The driver's operands: ``lhs`` and ``rhs`` in its layouts (C-contiguous)."""
        dt = self.dtype
        lhs, rhs = np.ascontiguousarray(lhs, dt), np.ascontiguousarray(rhs, dt)
        if self.strategy == "weight_gradient":
            return lhs, rhs
        x = lhs if self.lperm is None else np.ascontiguousarray(lhs.transpose(self.lperm))
        w = rhs if self.rperm is None else np.ascontiguousarray(rhs.transpose(self.rperm))
        if self.strategy == "products_first":  # w: (O, K0, K1, I) -> (I, K0, K1, O)
            w = np.ascontiguousarray(w.transpose((3, 1, 2, 0)))
        return x, w

    def __call__(self, lhs, rhs) -> np.ndarray:
        x, w = self.operands(lhs, rhs)
        (p0, p1), (lo0, lo1) = self.out_sp, self.lo
        if conv_blocked.usable():  # by blocks of images on the pool: conv_blocked.py
            r = np.empty(self.held_shape, self.dtype)
            if self.strategy == "weight_gradient":
                conv_blocked.conv2_weight_gradient(x, w, r, lo0, lo1)
            elif self.strategy == "products_first":
                conv_blocked.conv2_products_first(x, w, r, lo0, lo1)
            else:
                conv_blocked.conv2_im2col(x, w, r, *self.strides, lo0, lo1)
        else:
            if self.strategy == "weight_gradient":
                res = conv2_weight_gradient(x, w, p0, p1, lo0, lo1)
            else:
                o, (k0, k1) = self.o, self.ksp
                if self.strategy == "products_first":  # (I, K0 * K1 * O)
                    res = conv2_products_first(x, w.reshape((w.shape[0], k0 * k1 * o)), p0,
                                               p1, lo0, lo1, k0, k1)
                else:  # (im2col2 copies runs of whole pixels: too short under 4 features)
                    st0, st1 = self.strides
                    driver = conv2_im2col if self.c >= 4 else conv2_im2col_narrow
                    res = driver(x, w.reshape((o, k0 * k1 * self.c)), p0, p1, st0, st1, lo0,
                                 lo1, k0, k1)
            r = res.reshape(self.held_shape)
        return r if self.out_perm is None else np.ascontiguousarray(r.transpose(self.out_perm))


def run_conv(eqn, lhs, rhs) -> np.ndarray:
    """The convolution ``eqn`` of ``lhs`` and ``rhs`` (NumPy arrays), by its
    :func:`host_strategy` (a :class:`HostConv` planned for this call)."""
    return HostConv(eqn)(lhs, rhs)
