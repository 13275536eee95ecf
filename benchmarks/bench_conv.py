"""Convolution and pooling benchmarks against NumPy in the same process.

1. A 3x3 'SAME' convolution layer with bias and ReLU, NHWC/HWIO, batch 32, 28x28, 16 -> 32
   channels, float32: NumPy (im2col with sliding_window_view + one tensordot), functrans
   eager, functrans jit (im2col + BLAS GEMM), and a hand-written Numba direct loop nest (the
   lowering's alternative design).
2. The same layer followed by 2x2 max pooling, forward and backward (value_and_grad of a
   sum), jit against NumPy's hand-written backward pass.
"""
from __future__ import annotations

import numba
import numpy as np

import functrans as ft
import functrans.numpy as fnp
from functrans import lax

try:
    from .timing import median_time, table
except ImportError:  # run as a script
    from timing import median_time, table

DN = ("NHWC", "HWIO", "NHWC")


def conv_relu(x, w, b):
    return fnp.maximum(lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=DN)
                       + b, 0.0)


def conv_numpy(x, w):
    kh, kw = w.shape[:2]
    xp = np.pad(x, ((0, 0), (kh // 2, kh - 1 - kh // 2), (kw // 2, kw - 1 - kw // 2), (0, 0)))
    cols = np.lib.stride_tricks.sliding_window_view(xp, (kh, kw), axis=(1, 2))  # N,H,W,C,kh,kw
    return np.tensordot(cols, w, axes=([4, 5, 3], [0, 1, 2]))


def conv_relu_numpy(x, w, b):
    return np.maximum(conv_numpy(x, w) + b, 0.0)


@numba.njit(cache=True, fastmath={"reassoc", "nsz"})
def _conv_relu_loops(x, w, b):
    n, h, wd, c = x.shape
    kh, kw, _, o = w.shape
    out = np.empty((n, h, wd, o), x.dtype)
    acc = np.empty(o, x.dtype)
    for i in range(n):
        for y in range(h):
            for z in range(wd):
                acc[:] = b
                for p in range(kh):
                    yy = y + p - kh // 2
                    if yy < 0 or yy >= h:
                        continue
                    for q in range(kw):
                        zz = z + q - kw // 2
                        if zz < 0 or zz >= wd:
                            continue
                        for ci in range(c):
                            v = x[i, yy, zz, ci]
                            for oi in range(o):
                                acc[oi] += v * w[p, q, ci, oi]
                for oi in range(o):
                    out[i, y, z, oi] = max(acc[oi], 0.0)
    return out


def pooled_loss(x, w, b):
    y = conv_relu(x, w, b)
    return fnp.sum(lax.reduce_window(y, -fnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID"))


def pooled_loss_grad_numpy(x, w, b):
    """Forward, then the backward pass by hand: max-pool routing, ReLU mask, the kernel and
    bias gradients as im2col products."""
    kh, kw = w.shape[:2]
    xp = np.pad(x, ((0, 0), (kh // 2, kh - 1 - kh // 2), (kw // 2, kw - 1 - kw // 2), (0, 0)))
    cols = np.lib.stride_tricks.sliding_window_view(xp, (kh, kw), axis=(1, 2))
    z = np.tensordot(cols, w, axes=([4, 5, 3], [0, 1, 2])) + b
    y = np.maximum(z, 0.0)
    n, h, wd, o = y.shape
    blocks = y.reshape(n, h // 2, 2, wd // 2, 2, o).transpose(0, 1, 3, 5, 2, 4)
    blocks = blocks.reshape(n, h // 2, wd // 2, o, 4)
    first = np.argmax(blocks, -1)
    loss = np.take_along_axis(blocks, first[..., None], -1).sum()
    gy = np.zeros_like(blocks)
    np.put_along_axis(gy, first[..., None], 1.0, -1)
    gy = gy.reshape(n, h // 2, wd // 2, o, 2, 2).transpose(0, 1, 4, 2, 5, 3).reshape(y.shape)
    gz = gy * (z > 0)
    gw = np.tensordot(cols, gz, axes=([0, 1, 2], [0, 1, 2])).transpose(1, 2, 0, 3)
    return loss, gw, gz.sum((0, 1, 2))


def check_and_time() -> str:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((32, 28, 28, 16)).astype(np.float32)
    w = (rng.standard_normal((3, 3, 16, 32)) / 12).astype(np.float32)
    b = (rng.standard_normal(32) * 0.1).astype(np.float32)
    want = conv_relu_numpy(x, w, b)
    jf = ft.jit(conv_relu)
    for got in (jf(x, w, b), conv_relu(x, w, b), _conv_relu_loops(x, w, b)):
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-4, atol=1e-4)
    rows = [("NumPy im2col + tensordot", median_time(lambda: conv_relu_numpy(x, w, b))),
            ("functrans eager", median_time(lambda: conv_relu(x, w, b))),
            ("functrans jit (im2col + GEMM)", median_time(lambda: jf(x, w, b))),
            ("Numba direct loop nest", median_time(lambda: _conv_relu_loops(x, w, b)))]
    out = table("conv 3x3 SAME + bias + relu, 32x28x28x16 -> 32, float32", rows,
                "NumPy im2col + tensordot")
    # the convolution alone (no fused elementwise loop after it)
    conv = ft.jit(lambda x, w: lax.conv_general_dilated(x, w, (1, 1), "SAME",
                                                        dimension_numbers=DN))
    np.testing.assert_allclose(np.asarray(conv(x, w)), conv_numpy(x, w), rtol=1e-4, atol=1e-4)
    rows = [("NumPy im2col + tensordot", median_time(lambda: conv_numpy(x, w))),
            ("functrans jit (im2col + GEMM)", median_time(lambda: conv(x, w)))]
    out += "\n" + table("the convolution alone", rows, "NumPy im2col + tensordot")

    vg = ft.jit(ft.value_and_grad(pooled_loss, argnums=(1, 2)))
    loss, (gw, gb) = vg(x, w, b)
    want_loss, want_gw, want_gb = pooled_loss_grad_numpy(x, w, b)
    np.testing.assert_allclose(float(loss), want_loss, rtol=1e-4)
    np.testing.assert_allclose(np.asarray(gw), want_gw, rtol=1e-3, atol=1e-2)
    np.testing.assert_allclose(np.asarray(gb), want_gb, rtol=1e-3, atol=1e-2)
    rows = [("NumPy hand-written backward", median_time(lambda: pooled_loss_grad_numpy(x, w, b))),
            ("functrans jit(value_and_grad)", median_time(lambda: vg(x, w, b)))]
    out += "\n" + table("conv + relu + 2x2 max pool, value_and_grad in (w, b), same shapes",
                        rows, "NumPy hand-written backward")
    return out


if __name__ == "__main__":
    print(check_and_time())
