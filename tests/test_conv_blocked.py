"""Convolutions by blocks of images on the pool (transforms/lowering/conv_blocked.py) against
a NumPy reference in float64, over shapes, strides, paddings, block sizes and thread counts.

Tolerance: each output is a sum of K = K0*K1*C products (the weight gradient's: N*K0*K1),
so its rounding error is at most about K * eps * (the same sum of absolute values), which the
reference computes from |x| and |w| (Higham's bound for a recursive or blocked sum)."""
from __future__ import annotations

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import functrans as ft
from functrans.transforms.lowering import conv_blocked
from functrans.transforms.native import blas_split

pytestmark = pytest.mark.skipif(not blas_split.install(),
                                reason="needs jit's private one-thread BLAS (split products)")


def _windows(x, k0, k1, p0, p1, s0, s1, lo0, lo1):
    """(N, P0, P1, K0, K1, C): each output position's window of ``x`` (zeros outside)."""
    n, h, w, c = x.shape
    hi0 = max(0, (p0 - 1) * s0 + k0 - lo0 - h)
    hi1 = max(0, (p1 - 1) * s1 + k1 - lo1 - w)
    xp = np.pad(x, ((0, 0), (lo0, hi0), (lo1, hi1), (0, 0)))
    out = np.empty((n, p0, p1, k0, k1, c), x.dtype)
    for a in range(p0):
        for b in range(p1):
            out[:, a, b] = xp[:, a * s0:a * s0 + k0, b * s1:b * s1 + k1]
    return out


def _check(got, x, w, reference, k_terms, dtype):
    want = reference(x.astype(np.float64), w.astype(np.float64))
    bound = reference(np.abs(x).astype(np.float64), np.abs(w).astype(np.float64))
    eps = np.finfo(dtype).eps
    assert got.dtype == dtype and got.shape == want.shape
    assert np.all(np.abs(got - want) <= 2 * k_terms * eps * bound + np.finfo(dtype).tiny)


conv_case = st.fixed_dictionaries({
    "n": st.integers(1, 7), "s": st.tuples(st.integers(1, 9), st.integers(1, 9)),
    "c": st.integers(1, 5), "o": st.integers(1, 6),
    "k": st.tuples(st.integers(1, 3), st.integers(1, 3)),
    "stride": st.tuples(st.integers(1, 2), st.integers(1, 2)),
    "lo": st.tuples(st.integers(0, 2), st.integers(0, 2)),
    "dtype": st.sampled_from([np.float32, np.float64]),
    "per": st.integers(1, 8), "threads": st.integers(1, 2), "seed": st.integers(0, 2**16)})


def _sizes(case):
    (h, w), (k0, k1), (s0, s1) = case["s"], case["k"], case["stride"]
    lo0, lo1 = min(case["lo"][0], k0 - 1), min(case["lo"][1], k1 - 1)
    p0, p1 = (h + lo0 - k0) // s0 + 1, (w + lo1 - k1) // s1 + 1
    return h, w, k0, k1, s0, s1, lo0, lo1, max(p0, 1), max(p1, 1)


def _threads(n):
    return min(n, numba.config.NUMBA_NUM_THREADS)


@settings(max_examples=60, deadline=None)
@given(conv_case)
def test_im2col_blocks_match_the_reference(case):
    h, w_, k0, k1, s0, s1, lo0, lo1, p0, p1 = _sizes(case)
    n, c, o, dt = case["n"], case["c"], case["o"], case["dtype"]
    rng = np.random.default_rng(case["seed"])
    x = rng.standard_normal((n, h, w_, c)).astype(dt)
    w = rng.standard_normal((o, k0, k1, c)).astype(dt)

    def reference(x, w):
        win = _windows(x, k0, k1, p0, p1, s0, s1, lo0, lo1).reshape(n * p0 * p1, -1)
        return (win @ w.reshape(o, -1).T).reshape(n, p0, p1, o)

    prev = numba.get_num_threads()
    numba.set_num_threads(_threads(case["threads"]))
    try:
        got = np.empty((n, p0, p1, o), dt)
        conv_blocked.conv2_im2col(x, w, got, s0, s1, lo0, lo1, min(case["per"], n))
    finally:
        numba.set_num_threads(prev)
    _check(got, x, w, reference, k0 * k1 * c, dt)


@settings(max_examples=40, deadline=None)
@given(conv_case)
def test_products_first_blocks_match_the_reference(case):
    h, w_, k0, k1, _, _, lo0, lo1, _, _ = _sizes(case)
    p0, p1 = h + lo0 - k0 + 1, w_ + lo1 - k1 + 1  # stride 1
    if p0 < 1 or p1 < 1:
        return
    n, c, o, dt = case["n"], case["c"], case["o"], case["dtype"]
    rng = np.random.default_rng(case["seed"])
    x = rng.standard_normal((n, h, w_, c)).astype(dt)
    wk = rng.standard_normal((c, k0, k1, o)).astype(dt)

    def reference(x, wk):  # wk[c, k0, k1, o] is w[o, k0, k1, c]
        w = wk.transpose(3, 1, 2, 0).reshape(o, -1)
        win = _windows(x, k0, k1, p0, p1, 1, 1, lo0, lo1).reshape(n * p0 * p1, -1)
        return (win @ w.T).reshape(n, p0, p1, o)

    got = np.empty((n, p0, p1, o), dt)
    conv_blocked.conv2_products_first(x, wk, got, lo0, lo1, min(case["per"], n))
    _check(got, x, wk, reference, k0 * k1 * c, dt)


@settings(max_examples=40, deadline=None)
@given(conv_case)
def test_weight_gradient_blocks_match_the_reference(case):
    # lhs (F, S0, S1, B): windows of size (K0, K1) = rhs's, outputs (P0, P1) = the kernel's
    h, w_, k0, k1, _, _, lo0, lo1, _, _ = _sizes(case)
    f, b, o, dt = case["n"], case["c"], case["o"], case["dtype"]
    q0, q1 = h + lo0 - k0 + 1, w_ + lo1 - k1 + 1
    if q0 < 1 or q1 < 1:
        return
    rng = np.random.default_rng(case["seed"])
    lhs = rng.standard_normal((f, h, w_, b)).astype(dt)
    rhs = rng.standard_normal((f, q0, q1, o)).astype(dt)
    p0, p1 = k0, k1  # the gradient's spatial size: the forward kernel's

    def reference(lhs, rhs):
        win = _windows(lhs, q0, q1, p0, p1, 1, 1, lo0, lo1)  # (F, P0, P1, Q0, Q1, B)
        return np.einsum("fabqrc,fqro->abco", win, rhs)

    per = min(case["per"], f)
    parts = min(_threads(case["threads"]), -(-f // per))
    got = np.empty((p0, p1, b, o), dt)
    conv_blocked.conv2_weight_gradient(lhs, rhs, got, lo0, lo1, per, parts)
    _check(got, lhs, rhs, reference, f * q0 * q1, dt)


def test_jit_convolutions_are_steps_of_one_driver():
    """A CNN layer's value and gradients under jit: one driver calls the three blocked
    drivers from native code (conv_calls.py), and agrees with the un-jitted function. They
    differ in the order of additions only: the weight gradient sums 6*10*10 = 600 terms per
    value, so within 600 * eps32 = 7e-5 of its magnitude."""
    from functrans.transforms.jit.executable import executable_for
    rng = np.random.default_rng(0)
    x = rng.standard_normal((6, 10, 10, 3)).astype(np.float32)
    w = rng.standard_normal((3, 3, 3, 8)).astype(np.float32)

    def loss(x, w):
        y = ft.lax.conv_general_dilated(x, w, (1, 1), "SAME",
                                        dimension_numbers=("NHWC", "HWIO", "NHWC"))
        return (ft.numpy.tanh(y) ** 2).sum()

    vg = ft.value_and_grad(loss, argnums=(0, 1))
    with ft.config.override(jit_tiered=False):
        program = executable_for(ft.make_jaxpr(vg)(x, w).jaxpr, "cnn_layer")
    assert program.single is not None  # one run: no host steps between drivers
    calls = sorted(e.params["kernel"].name for e in program.jaxpr.eqns
                   if e.prim.name == "numba_call")
    assert calls == ["conv_im2col", "conv_products_first", "conv_weight_gradient"]
    with ft.config.override(jit_tiered=False):
        got = ft.jit(vg)(x, w)
    want = vg(x, w)
    for g, r in zip(ft.tree_util.tree_leaves(got), ft.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(r), rtol=1e-4,
                                   atol=1e-4 * np.abs(np.asarray(r)).max())


layer_case = st.fixed_dictionaries({
    "n": st.integers(1, 5), "hw": st.tuples(st.integers(3, 9), st.integers(3, 9)),
    "c": st.integers(1, 4), "o": st.integers(1, 5),
    "k": st.tuples(st.integers(1, 3), st.integers(1, 3)),
    "stride": st.sampled_from([(1, 1), (2, 2), (1, 2)]),
    "padding": st.sampled_from(["SAME", "VALID", ((1, 0), (0, 2))]),
    "layout": st.sampled_from([("NHWC", "HWIO", "NHWC"), ("NCHW", "OIHW", "NCHW"),
                               ("NHWC", "OIHW", "NCHW")]),
    "dtype": st.sampled_from([np.float32, np.float64]), "seed": st.integers(0, 2**16)})


@settings(max_examples=15, deadline=None)
@given(layer_case)
def test_jit_convolution_calls_match_the_unjitted_vjp(case):
    """A convolution and both its gradients (vjp with a random cotangent) under jit, where
    the drivers are steps of the program, against the un-jitted function, over layouts,
    strides, paddings and dtypes. Each result is a sum of at most K terms (K0*K1*C forward,
    K0*K1*O for the input's gradient, N*P0*P1 for the kernel's), each side within
    K * eps * (the same sums of absolute values, computed from |x|, |w|, |g|) of the exact
    value, so they agree within twice that."""
    n, (h, w_), c, o, (k0, k1) = case["n"], case["hw"], case["c"], case["o"], case["k"]
    lhs_spec, rhs_spec, out_spec = case["layout"]
    dt = case["dtype"]
    rng = np.random.default_rng(case["seed"])
    shape = {"N": n, "H": h, "W": w_, "C": c}
    x = rng.standard_normal([shape[d] for d in lhs_spec]).astype(dt)
    kshape = {"H": k0, "W": k1, "I": c, "O": o}
    w = rng.standard_normal([kshape[d] for d in rhs_spec]).astype(dt)

    def conv(x, w):
        return ft.lax.conv_general_dilated(x, w, case["stride"], case["padding"],
                                           dimension_numbers=case["layout"])

    y = conv(x, w)
    if y.size == 0:
        return
    g = rng.standard_normal(y.shape).astype(dt)

    def value_and_grads(x, w, g):
        y, pullback = ft.vjp(conv, x, w)
        return (y,) + pullback(g)

    with ft.config.override(jit_tiered=False):  # the compiled program, not the interpreter
        got = ft.jit(value_and_grads)(x, w, g)
    want = value_and_grads(x, w, g)
    bound = value_and_grads(np.abs(x), np.abs(w), np.abs(g))
    sp = [y.shape[out_spec.index(d)] for d in "HW"]
    terms = max(k0 * k1 * c, k0 * k1 * o, n * sp[0] * sp[1])
    eps = np.finfo(dt).eps
    for a, b, m in zip(got, want, bound):
        assert a.dtype == dt and a.shape == b.shape
        assert np.all(np.abs(np.asarray(a) - np.asarray(b))
                      <= 2 * terms * eps * np.asarray(m) + np.finfo(dt).tiny)


def test_pmap_of_a_convolution_layer_matches_vmap():
    """pmap's shards run the blocked drivers with their share of the pool's threads; the
    per-device gradients are vmap's (the oracle for pmap), within the order of additions:
    the weight gradient sums 4*8*8 = 256 terms, so 256 * eps32 = 3e-5 of its scale."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 4, 8, 8, 3)).astype(np.float32)
    w = rng.standard_normal((3, 3, 3, 6)).astype(np.float32)

    def loss(w, x):
        y = ft.lax.conv_general_dilated(x, w, (1, 1), "SAME",
                                        dimension_numbers=("NHWC", "HWIO", "NHWC"))
        return (y ** 2).mean()

    with ft.config.override(num_cpu_devices=2, jit_tiered=False):
        got = ft.pmap(ft.grad(loss), in_axes=(None, 0))(w, x)
    want = ft.vmap(ft.grad(loss), in_axes=(None, 0))(w, x)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-4,
                               atol=1e-4 * np.abs(np.asarray(want)).max())


def test_a_fresh_process_runs_the_entry_points_from_the_caches(tmp_path):
    """Two fresh processes on one kernel cache: the first compiles the program, the second
    loads it and the C entry points (Numba's disk cache) before any other parallel code ran.
    The convolution is large enough for jit to cut products on the pool (so it is a step of
    the driver). Both print the jitted CNN layer's result, which must be the un-jitted one's
    (within the 3*3*4 = 36 terms' 36 * eps32 bound, relative to the sums of absolute
    values)."""
    import os
    import subprocess
    import sys
    code = (
        "import numpy as np, functrans as ft\n"
        "from functrans.transforms.lowering import conv_blocked\n"
        "x = np.linspace(-1, 1, 4 * 12 * 12 * 4, dtype='f4').reshape(4, 12, 12, 4)\n"
        "w = np.linspace(-1, 1, 3 * 3 * 4 * 8, dtype='f4').reshape(3, 3, 4, 8)\n"
        "f = lambda x, w: ft.lax.conv_general_dilated(x, w, (1, 1), 'SAME', "
        "dimension_numbers=('NHWC', 'HWIO', 'NHWC'))\n"
        "with ft.config.override(jit_tiered=False):\n"
        "    print(repr(np.asarray(ft.jit(f)(x, w)).tolist()))\n"
        "print(repr(np.asarray(f(x, w)).tolist()))\n"
        "print(repr(np.asarray(f(abs(x), abs(w))).tolist()))\n"
        "print(conv_blocked.usable(), sorted(conv_blocked._c_entries))\n")
    env = dict(os.environ, FUNCTRANS_CACHE_DIR=str(tmp_path))
    for _ in range(2):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             env=env, timeout=600)
        assert out.returncode == 0, out.stderr[-2000:]
        *values, used = out.stdout.splitlines()[-4:]
        assert used == "True [('im2col', 'float32')]"
        got, want, bound = (np.array(eval(line)) for line in values)
        assert np.all(np.abs(got - want) <= 2 * 36 * np.finfo(np.float32).eps * bound)


@pytest.mark.parametrize("layout", [("NHWC", "HWIO", "NHWC"), ("NCHW", "OIHW", "NCHW")])
def test_host_runs_without_the_pool_match_the_unjitted_vjp(monkeypatch, layout):
    """Where products are not cut on the pool, the convolutions stay host runs with the
    unblocked drivers (layouts changed by NumPy): a layer's value and both gradients under
    jit against the un-jitted function. The sums have at most 5*7*7 = 245 terms (the
    kernel's gradient), so they agree within 2 * 245 * eps32 of the sums of absolute
    values."""
    from functrans.transforms.jit.executable import executable_for
    monkeypatch.setattr(conv_blocked, "usable", lambda: False)
    rng = np.random.default_rng(3)
    x = rng.standard_normal((5, 7, 7, 6) if layout[0] == "NHWC" else (5, 6, 7, 7))
    w = rng.standard_normal((3, 3, 6, 4) if layout[1] == "HWIO" else (4, 6, 3, 3))
    x, w = x.astype(np.float32), w.astype(np.float32)

    def conv(x, w):
        return ft.lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=layout)

    g = rng.standard_normal(conv(x, w).shape).astype(np.float32)

    def value_and_grads(x, w, g):
        y, pullback = ft.vjp(conv, x, w)
        return (y,) + pullback(g)

    with ft.config.override(jit_tiered=False):
        program = executable_for(ft.make_jaxpr(value_and_grads)(x, w, g).jaxpr, "layer")
        got = ft.jit(value_and_grads)(x, w, g)
    assert not any(e.prim.name == "numba_call" for e in program.jaxpr.eqns)
    assert sum(type(r).__name__ == "_HostConvs" for r in program.runs) >= 1
    want = value_and_grads(x, w, g)
    bound = value_and_grads(np.abs(x), np.abs(w), np.abs(g))
    for a, b, m in zip(got, want, bound):
        assert np.all(np.abs(np.asarray(a) - np.asarray(b))
                      <= 2 * 245 * np.finfo(np.float32).eps * np.asarray(m))
