"""The native code generator (``transforms/native``): kernels shared between steps, programs
and shapes; loops on all cores; one planned arena; Numba for what it does not cover; the
on-disk cache shared by processes.

Oracles: eager evaluation (the primitives' NumPy impls) for jit, NumPy in float64 for sums.
Tolerances: elementwise results within 32 ulp (test_jit's bound for SIMD math); float32
sums are accumulated in float32 blocks of 4,096 elements, then in float64, so on positive
data their relative error is below 4,096 float32 ulps (the worst case of a float32 block).
Results of matrix products are compared entry by entry within a bound derived from the
operands' magnitudes (``_dot_error``, ``_mlp_grad_bound``): jit's products (its own BLAS
copy, or loops) and eager NumPy's sum in orders that differ with the CPU, so no fixed
number of ulps holds everywhere.
"""
import ctypes
import ctypes.util
import os
import re
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import functrans as ft
import functrans.numpy as fnp
from functrans import lax
from functrans.transforms.jit.executable import executable_for
from functrans.transforms.native import engine
from functrans.transforms.native.driver import Driver
from functrans.transforms.native.llvm_compile import Compiler
from functrans.transforms.native.parallel import PARALLEL_MIN
from functrans.transforms.native.program import NativeProgram

from programs import BINARY, STRUCT, UNARY, build
from threads import one_thread

EPS32, EPS64 = np.finfo(np.float32).eps, np.finfo(np.float64).eps


def _program(jitted, *args):
    exe = executable_for(jitted.lower(*args).jaxpr, jitted.name)
    assert type(exe) is NativeProgram
    return exe


def _kernels(exe):
    return {k.symbol() for r in exe.runs if isinstance(r, Driver) for k in r.kernels}


def _mlp_grad(depth, width=32, batch=8, seed=0):
    rng = np.random.default_rng(seed)
    ws = [rng.standard_normal((width, width)) * 0.3 for _ in range(depth)]
    x = rng.standard_normal((batch, width))

    def loss(ws, x):
        h = x
        for w in ws:
            h = fnp.tanh(h @ w)
        return fnp.sum(h * h)
    return ft.jit(ft.grad(loss)), (ws, x), ft.grad(loss)


def _assert_close(got, want, rtol=32 * EPS64):
    for g, w in zip(ft.tree_util.tree_leaves(got), ft.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=rtol, atol=rtol)


# ---- error bounds of products --------------------------------------------------------------
U64 = EPS64 / 2  # float64's unit roundoff
TANH_ERR = 32 * EPS64  # relative: SIMD tanh/exp/sin within 32 ulp, NumPy's within 1-2


def _gamma(k):
    """Higham's gamma_k: a k-term dot product computed in any order, with or without FMA,
    is within gamma_k |x|.|y| of the exact one (Accuracy and Stability of Numerical
    Algorithms, section 3.1)."""
    return k * U64 / (1 - k * U64)


def _dot_error(x, w):
    """That bound for each entry of the product x @ w."""
    return _gamma(x.shape[-1]) * (np.abs(x) @ np.abs(w))


def _assert_within(got, want, bound):
    """Each entry of ``got`` within ``bound`` (per entry) of ``want``'s (trees of arrays)."""
    leaves = ft.tree_util.tree_leaves
    for g, w, b in zip(leaves(got), leaves(want), leaves(bound)):
        g, w = np.asarray(g), np.asarray(w)
        excess = np.abs(g - w) - b
        k = np.unravel_index(np.argmax(excess), excess.shape)
        assert excess[k] <= 0, f"at {k}: got {g[k]!r}, want {w[k]!r}, bound {b[k]:.3g}"


def _mlp_grad_bound(ws, x):
    """For each entry of ``_mlp_grad``'s gradient, a bound on how far jit's value and
    eager's may differ.

    Both compute the same steps with other kernels (products summed in other orders, SIMD
    tanh): forward h_i = tanh(h_{i-1} W_i); backward from g_L = 2 h_L (exact),
    d_i = g_i (1 - h_i^2), grad W_i = h_{i-1}^T d_i, g_{i-1} = d_i W_i^T. Each step's own
    rounding error is bounded: a k-term product's by gamma_k |a||b|, tanh's by 32 ulp, d_i's
    by 3u|g_i| (three roundings, h^2 <= 1). To first order in u, the computed gradient is
    G + sum_k J_k delta_k, J_k its Jacobian in step k's result and |delta_k| <= r_k, so each
    side is within sum_k |J_k| r_k of G (entry by entry) and they differ by twice that at
    most. The Jacobians keep the signs, along which errors shrink from layer to layer here:
    bounding with |W_i| instead multiplies a layer's error by |W_i| (1 - h_i^2), about 3, so
    over 9 layers by 3^9, loose enough to pass a gradient off by 1e-6. A product's error
    feeds one elementwise step (tanh, or the multiply by s_i = 1 - h_i^2 >= 0): it is
    folded into that step's r, times the step's derivative. sum_k |J_k| r_k is summed by
    pushing one tangent per entry of step k's result, scaled by its r, through the
    linearized remaining steps.
    """
    depth, (batch, width) = len(ws), x.shape
    hs = [np.asarray(x)]
    for w in ws:
        hs.append(np.tanh(hs[-1] @ w))
    ss = [None] + [1 - h * h for h in hs[1:]]
    gs, ds = [None] * (depth + 1), [None] * (depth + 1)
    g = 2 * hs[depth]
    for i in range(depth, 0, -1):
        gs[i], ds[i] = g, g * ss[i]
        g = ds[i] @ ws[i - 1].T
    r_h = [None] + [ss[i] * _dot_error(hs[i - 1], ws[i - 1]) + TANH_ERR * np.abs(hs[i])
                    for i in range(1, depth + 1)]
    r_d = [None] + [3 * U64 * np.abs(gs[i])
                    + (ss[i] * _dot_error(ds[i + 1], ws[i].T) if i < depth else 0)
                    for i in range(1, depth + 1)]
    bound = [_dot_error(hs[i - 1].T, ds[i]) for i in range(1, depth + 1)]  # grad W_i's own
    eye = np.eye(batch * width).reshape(-1, batch, width)

    def push(k, at_h):
        tangents = eye * (r_h[k] if at_h else r_d[k])
        dh = {k: tangents} if at_h else {}
        for j in range(k + 1, depth + 1) if at_h else ():
            dh[j] = ss[j] * (dh[j - 1] @ ws[j - 1])
        dg = 2 * dh[depth] if at_h else 0
        for i in range(depth if at_h else k, 0, -1):
            dd = dg * ss[i] - 2 * gs[i] * hs[i] * dh.get(i, 0)
            if not at_h and i == k:
                dd = dd + tangents
            dgrad = hs[i - 1].T @ dd
            if i - 1 in dh:
                dgrad = dgrad + np.swapaxes(dh[i - 1], 1, 2) @ ds[i]
            bound[i - 1] += np.abs(dgrad).sum(0)
            dg = dd @ ws[i - 1].T

    for k in range(1, depth + 1):
        push(k, at_h=True)
        push(k, at_h=False)
    return [2 * b for b in bound]


# ---- fusion ------------------------------------------------------------------------------------
def test_scalar_steps_between_vector_steps_do_not_split_their_loop():
    """A scalar schedule interleaved with rounds over a vector (as in threefry's key
    schedule) is computed beside the vector's loop, which stays one kernel."""
    from functrans.transforms.lowering.plan import Group, plan
    from functrans.transforms.passes import optimize

    def rounds(x, k):
        for _ in range(5):
            k = k * np.uint32(3) + np.uint32(1)
            x = (x ^ k) + (x >> np.uint32(3))
        return x

    x = np.arange(1000, dtype=np.uint32) * np.uint32(2654435761)
    k = np.uint32(7)
    jf = ft.jit(rounds)
    np.testing.assert_array_equal(jf(x, k), rounds(x, k))
    steps, _ = plan(optimize(jf.lower(x, k).jaxpr))
    vector_loops = [s for s in steps if isinstance(s, Group) and s.shape == x.shape]
    assert len(vector_loops) == 1, [getattr(s, "shape", s) for s in steps]


def test_a_chain_beside_an_open_loop_is_one_loop():
    """Steps of another shape that read each other (not the open loop) form one loop."""
    from functrans.transforms.lowering.plan import Group, plan
    from functrans.transforms.passes import optimize

    def f(a, b):
        wide = fnp.sin(a) * 2.0
        narrow = fnp.exp(b) + 1.0
        narrow = fnp.tanh(narrow) * 3.0 - b
        return wide + 1.0, narrow

    a, b = np.linspace(0, 1, 200).reshape(100, 2), np.linspace(-1, 1, 100)
    jf = ft.jit(f)
    _assert_close(jf(a, b), f(a, b), rtol=32 * EPS64)
    steps, _ = plan(optimize(jf.lower(a, b).jaxpr))
    shapes = sorted(s.shape for s in steps if isinstance(s, Group))
    assert shapes == [(100,), (100, 2)], shapes


# ---- kernels shared by text --------------------------------------------------------------------
def test_identical_layers_share_their_kernels():
    """A deep network's layers are the same steps: 3 layers and 9 use the same kernels."""
    shallow, args3, eager3 = _mlp_grad(3)
    deep, args9, eager9 = _mlp_grad(9)
    _assert_within(shallow(*args3), eager3(*args3), _mlp_grad_bound(*args3))
    _assert_within(deep(*args9), eager9(*args9), _mlp_grad_bound(*args9))
    k3, k9 = _kernels(_program(shallow, *args3)), _kernels(_program(deep, *args9))
    assert k3 == k9 and 0 < len(k3) <= 12, (len(k3), len(k9))


def test_identical_layers_generate_their_kernels_once(monkeypatch):
    """Kernel generation too follows the distinct work: a 9-layer program generates as many
    fused kernels as a 3-layer one (the other layers' steps reuse them, bound to their own
    buffers), and computes the same values as eager evaluation."""
    from functrans.transforms.native import groups
    from functrans.transforms.native import kernel as native_kernel
    generated = []
    build = groups._GroupEmitter.build

    def counted_build(emitter):
        generated.append(emitter)
        return build(emitter)

    monkeypatch.setattr(groups._GroupEmitter, "build", counted_build)
    counts = {}
    for depth in (3, 9):
        monkeypatch.setattr(native_kernel, "_BUILT", {})  # nothing generated before
        generated.clear()
        jf, args, eager = _mlp_grad(depth, seed=depth)
        _assert_within(jf(*args), eager(*args), _mlp_grad_bound(*args))
        counts[depth] = len(generated)
    assert 0 < counts[9] == counts[3], counts


def test_a_new_batch_size_compiles_only_a_driver():
    """Kernels take sizes as arguments: a new batch size traces and compiles a new driver
    and reuses every kernel."""
    rng = np.random.default_rng(1)
    w = rng.standard_normal((64, 64)) * 0.2

    def f(x, w):
        h = fnp.tanh(x @ w) * 2.0 + 1.0
        return fnp.sum(h * h, axis=1), fnp.max(h, axis=0)

    def bound(x):  # each side's error, as in _mlp_grad_bound, twice
        t = np.tanh(x @ w)
        h = t * 2.0 + 1.0
        e_h = 2 * (1 - t * t) * _dot_error(x, w) + 2 * TANH_ERR * np.abs(t) + U64 * np.abs(h)
        # a sum of squares: its terms' errors and its own rounding; a max: its entries'
        return (2 * (np.sum(2 * np.abs(h) * e_h, axis=1) + _gamma(64) * np.sum(h * h, axis=1)),
                2 * np.max(e_h, axis=0))

    jf = ft.jit(f)
    x16, x24 = rng.standard_normal((16, 64)), rng.standard_normal((24, 64))
    _assert_within(jf(x16, w), f(x16, w), bound(x16))
    built = engine.stats["compiled"] + engine.stats["from_disk"]
    _assert_within(jf(x24, w), f(x24, w), bound(x24))
    assert _kernels(_program(jf, x16, w)) == _kernels(_program(jf, x24, w))
    # the new driver only (compiled, or loaded if an earlier run cached it)
    assert engine.stats["compiled"] + engine.stats["from_disk"] - built == 1


def test_programs_share_kernels_with_each_other():
    """The same step in another program is the same kernel: built once."""
    rng = np.random.default_rng(2)
    x, w, w2 = (rng.standard_normal((32, 64)), rng.standard_normal((64, 64)) * 0.1,
                rng.standard_normal((64, 8)))

    def step(v):
        return fnp.exp(fnp.tanh(v @ w) * 0.5)

    # each side's error, as in _mlp_grad_bound, twice
    t = np.tanh(x @ w)
    y = np.exp(t * 0.5)
    e_y = y * 0.5 * ((1 - t * t) * _dot_error(x, w) + TANH_ERR * np.abs(t)) + TANH_ERR * y
    z = y @ w2
    e_z = (np.abs(np.cos(z)) * (e_y @ np.abs(w2) + _dot_error(y, w2))
           + TANH_ERR * np.abs(np.sin(z)))

    first = ft.jit(step)
    second = ft.jit(lambda v: fnp.sin(step(v) @ w2))
    _assert_within(first(x), step(x), 2 * e_y)
    built = engine.stats["compiled"] + engine.stats["from_disk"]
    _assert_within(second(x), fnp.sin(step(x) @ w2), 2 * e_z)
    mine = _kernels(_program(second, x))
    shared = _kernels(_program(first, x)) & mine
    assert len(shared) == 2  # the product and the fused tanh-mul-exp loop
    # second's other kernels and its driver, at most: the shared ones are not built again
    assert engine.stats["compiled"] + engine.stats["from_disk"] - built <= \
        len(mine - shared) + 1


# ---- loops on all cores ---------------------------------------------------------------------------
@pytest.mark.parametrize("reduce", ["sum", "prod", "max", "min", "all", "any"])
def test_reductions_over_no_axes_are_their_operand(reduce):
    # jnp.mean(x, axis=()) in equinox's BatchNorm: a reduction over no axes (it once gave the
    # native generator an accumulator it never allocated).
    x = np.array([[-0.0, 1.5], [2.0, -3.0]], np.float32)
    x = x != 0 if reduce in ("all", "any") else x
    f = ft.jit(lambda a: getattr(fnp, reduce)(a, axis=()))
    got = f(x)
    assert got.dtype == getattr(np, reduce)(x, axis=()).dtype
    np.testing.assert_array_equal(got, x)
    assert np.signbit(got.ravel()[0]) == np.signbit(x.ravel()[0])  # -0.0 stays -0.0


def test_products_with_a_scalar_operand_are_multiplications():
    # The gradient of 0.5 * dot(p, p) (HMC's kinetic energy) is dot_general(0.5, p): a
    # literal operand the native product kernel cannot take. It becomes a mul, so a sampler's
    # while loop around it stays native instead of going whole to the Numba backend.
    from functrans.transforms.passes import optimize

    def energy_grad_loop(p):
        g = ft.grad(lambda q: 0.5 * fnp.dot(q, q))
        return lax.while_loop(lambda c: c[1] < 3, lambda c: (g(c[0]) * 1.5, c[1] + 1), (p, 0))[0]

    p = np.array([0.5, -2.0, 3.0], np.float32)
    jf = ft.jit(energy_grad_loop)
    np.testing.assert_array_equal(jf(p), p * np.float32(1.5) ** 3)
    exe = _program(jf, p)
    assert exe.native_fraction == 1.0 and all(type(r) is Driver for r in exe.runs)
    s = np.float32(-2.0)
    prod = ft.make_jaxpr(lambda a, b: fnp.dot(a, b))
    for args in [(s, p), (p, s)]:
        eqns = optimize(prod(*args).jaxpr).eqns
        assert [e.prim.name for e in eqns] == ["mul"], eqns
        np.testing.assert_array_equal(ft.jit(fnp.dot)(*args), p * s)
    np.testing.assert_array_equal(ft.jit(fnp.dot)(np.int32(2), p), 2 * p)


SIZES = [PARALLEL_MIN, PARALLEL_MIN + 1, 1_000_000, 3 * PARALLEL_MIN + 4097]


@pytest.mark.parametrize("n", SIZES)
def test_parallel_sums_match_numpy(n):
    rng = np.random.default_rng(n)
    x32 = rng.uniform(0.5, 1.5, n).astype(np.float32)
    x64 = rng.uniform(0.5, 1.5, n)
    f = ft.jit(lambda a, b: (fnp.sum(fnp.sin(a) * a), fnp.sum(b * b + 1.0), fnp.mean(a)))
    s32, s64, m32 = f(x32, x64)
    want32 = np.sum(np.sin(x32.astype(np.float64)) * x32)
    np.testing.assert_allclose(float(s32), want32, rtol=4096 * EPS32)
    np.testing.assert_allclose(float(s64), np.sum(x64 * x64 + 1.0), rtol=1e-12)
    np.testing.assert_allclose(float(m32), np.mean(x32.astype(np.float64)), rtol=4096 * EPS32)
    assert _program(f, x32, x64).runs[0].parallel


def test_parallel_nested_loops_match_numpy():
    rng = np.random.default_rng(3)
    x = rng.uniform(-1, 1, (600, 700))  # 420,000 elements: rows split over the threads
    f = ft.jit(lambda a: (fnp.sum(fnp.exp(a) * a, axis=1), fnp.tanh(a).T * 2.0))
    rows, t = f(x)
    np.testing.assert_allclose(rows, np.sum(np.exp(x) * x, axis=1), rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(t, np.tanh(x).T * 2.0, rtol=32 * EPS64, atol=32 * EPS64)
    assert _program(f, x).runs[0].parallel


def test_parallel_results_do_not_depend_on_the_thread_count():
    x = np.random.default_rng(4).uniform(0, 1, 1_000_003).astype(np.float32)
    f = ft.jit(lambda a: fnp.sum(fnp.tanh(a)))
    both = float(f(x))
    with one_thread():
        one = float(f(x))
    assert one == both


# ---- the arena ---------------------------------------------------------------------------------------
def test_intermediates_reuse_the_arena():
    """A chain of non-fusible steps keeps only the buffers alive at once."""
    x = np.random.default_rng(5).standard_normal((256, 256))

    def f(a):
        for _ in range(8):
            a = fnp.tanh(a @ a.T * 0.01) + 1.0
        return a

    jf = ft.jit(f)
    _assert_close(jf(x), f(x), rtol=1e-12)
    driver = _program(jf, x).runs[0]
    assert driver.arena_size <= 4 * x.nbytes, driver.arena_size



def _arena_user(a):
    return fnp.tanh(a @ a.T * 0.01) @ a + 1.0


@pytest.fixture
def empty_arenas(monkeypatch):
    """The driver module with an empty arena pool and slot; a jitted program with an arena,
    and inputs giving it a small and a big one."""
    from functrans.transforms.native import driver as native_driver
    monkeypatch.setattr(native_driver, "_arenas", [])
    monkeypatch.setattr(native_driver, "_hot_arenas", [])
    return native_driver, ft.jit(_arena_user), np.ones((64, 64)), np.ones((128, 128))


def test_programs_called_in_turn_reuse_their_pooled_arenas(empty_arenas):
    """Two programs with arenas of different sizes, called in turn (a training and an eval
    step), take their arenas from the pool and the slot of the arena given back last: after
    the first calls, none is allocated."""
    native_driver, jf, small, big = empty_arenas
    f = _arena_user
    sizes = [_program(jf, x).runs[0].arena_size for x in (small, big)]
    assert 0 < sizes[0] < sizes[1], sizes
    for x in (small, big, small, big):
        _assert_close(jf(x), f(x), rtol=1e-12)

    def held():
        return sorted(id(a) for a in native_driver._arenas + native_driver._hot_arenas)
    pooled = held()
    for x in (small, big, big, small, small, big):
        jf(x)
    assert held() == pooled


def test_a_program_called_in_a_loop_takes_back_the_arena_it_gave(empty_arenas, monkeypatch):
    """The arena given back last is taken again from its slot, without the pool's lock (a
    lock that fails when taken shows it), and one too small for the next program goes to
    the pool."""
    native_driver, jf, small, big = empty_arenas
    f = _arena_user
    for _ in range(2):
        jf(small)
    (arena,) = native_driver._hot_arenas

    class NoLock:
        def __enter__(self):
            raise AssertionError("the pool's lock was taken")

        def __exit__(self, *exc):
            return False
    with monkeypatch.context() as m:
        m.setattr(native_driver, "_arenas_lock", NoLock())
        for _ in range(3):
            _assert_close(jf(small), f(small), rtol=1e-12)
            assert [id(a) for a in native_driver._hot_arenas] == [id(arena)]
    _assert_close(jf(big), f(big), rtol=1e-12)
    assert [id(a) for a in native_driver._arenas] == [id(arena)]
    assert native_driver._hot_arenas[0].size >= _program(jf, big).runs[0].arena_size


def test_threads_calling_programs_with_arenas_never_share_one(empty_arenas):
    """Four threads call two programs with arenas of different sizes on inputs of their own,
    past the point where the calls run from the guard and take the slot's arena: each gets
    its own results (an arena in two calls at once would mix them)."""
    import threading
    native_driver, jf, _, _ = empty_arenas
    inputs = [np.full((64 + 64 * (k % 2), 64 + 64 * (k % 2)), 0.1 * (k + 1)) for k in range(4)]
    errors, barrier = [], threading.Barrier(4)

    def run(k):
        try:
            barrier.wait()
            for _ in range(60):
                np.testing.assert_array_equal(np.asarray(jf(inputs[k])), wants[k])
        except Exception as e:  # surfaced below
            errors.append(e)
    for x in inputs[:2]:  # compiled first: later calls run the compiled code
        jf(x)
    ft.effects_barrier()
    wants = [np.asarray(jf(x)) for x in inputs]  # the compiled code's bits, one call at a time
    threads = [threading.Thread(target=run, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
    assert jf._guard is not None


def test_programs_with_more_parameters_than_ctypes_takes_enter_by_a_trampoline():
    """An optimizer step over hundreds of parameter arrays has more inputs and outputs than
    a ctypes function may have (1024): its driver is entered with one tuple, scalars of each
    dtype as 0-d arrays, on the fast path and the general one. Values are exact (one
    multiply-add per element, the same in NumPy)."""
    from functrans.transforms.native import driver as native_driver

    rng = np.random.default_rng(3)
    params = [rng.standard_normal(k % 5 + 1).astype(np.float32) for k in range(520)]
    grads = [rng.standard_normal(p.shape).astype(np.float32) for p in params]

    def step(ps, gs, lr, scale, flip, count):
        sign = fnp.where(flip, -1.0, 1.0).astype(np.float32)
        return [p - (lr * scale * sign) * g for p, g in zip(ps, gs)], count + 1

    jf = ft.jit(step)
    exe = _program(jf, params, grads, np.float32(0.5), 2, True, np.int64(4))
    assert len(exe.runs[0].fn.params) > native_driver.CTYPES_MAX_ARGS
    for call in range(3):  # the general path, then the fast one
        new, count = jf(params, grads, np.float32(0.5), 2, True, np.int64(4))
        assert int(count) == 5
        for p, g, n in zip(params, grads, new):
            np.testing.assert_array_equal(np.asarray(n), p - np.float32(-1.0) * g)
        ft.block_until_ready(new)
        ft.effects_barrier()  # the compiled driver, not the interpreter, runs the later calls
    assert exe.runs[0].entry is not None


# ---- equations left to Numba ---------------------------------------------------------------------
def test_unsupported_equations_run_as_numba_kernels_between_native_runs():
    x = np.random.default_rng(6).standard_normal(50)

    def f(v):
        a = fnp.tanh(v) * 2.0
        b = fnp.sort(a)  # sort: a Numba kernel
        return fnp.exp(b) - b[::-1]

    jf = ft.jit(f)
    _assert_close(jf(x), f(x))
    kinds = [type(r).__name__ for r in _program(jf, x).runs]
    assert kinds == ["Driver", "_Foreign", "Driver"], kinds


def test_only_drivers_left_without_loops_get_quick_code_generation():
    """A driver that only calls kernels in sequence is code-generated without optimization
    (quicker to compile); one with a loop (a fori_loop whose small body is inlined) keeps
    optimized code generation, whatever else it inlines."""
    from functrans.transforms.native import llvm_compile
    compiler = engine._init()["compiler"]
    x = np.linspace(0.0, 1.0, 64).reshape(8, 8)

    def straight(a):
        return fnp.tanh(a @ a.T * 0.5) + fnp.sum(a)

    def looped(a):
        return lax.fori_loop(0, 50, lambda i, v: v * 0.99 + fnp.sin(v) * 0.01, a)

    loops = {}
    for f in (straight, looped):
        jf = ft.jit(f)
        _assert_close(jf(x), f(x), rtol=1e-12)
        driver = _program(jf, x).runs[0]
        module = compiler.optimized(driver.text, {}, 2, False)
        loops[f.__name__] = llvm_compile.has_loops(str(module))
    assert loops == {"straight": False, "looped": True}


def test_llvm_rejecting_generated_code_falls_back_to_numba_with_a_warning(monkeypatch):
    from functrans.transforms.native import scalar
    from functrans.transforms.native.ir import Val
    monkeypatch.setitem(scalar.native_rules, "tanh",
                        lambda fn, mod, a, i, o: Val(a[0].ty, fn.op(f"no_such_op {a[0]}")))
    x = np.linspace(-1, 1, 40)
    with ft.config.override(native_strict=False):
        jf = ft.jit(lambda v: fnp.tanh(v) * 3.0)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            got = jf(x)
    assert any("compiles this part" in str(w.message) for w in caught)
    _assert_close(got, np.tanh(x) * 3.0)
    with ft.config.override(native_strict=True):
        with pytest.raises(RuntimeError, match="invalid LLVM IR"):
            ft.jit(lambda v: fnp.tanh(v) * 4.0)(x)


# ---- whole programs ------------------------------------------------------------------------------------
def _long_programs(struct):
    return st.lists(st.one_of(
        st.tuples(st.just("unary"), st.sampled_from(sorted(UNARY))),
        st.tuples(st.just("binary"), st.sampled_from(sorted(BINARY))),
        st.tuples(st.just("struct"), st.sampled_from(struct))), min_size=10, max_size=40)


@settings(max_examples=10)
@given(st.one_of(  # the programs' gather keeps 3 elements: length 3 only
    st.tuples(_long_programs(sorted(STRUCT)), st.just(3)),
    st.tuples(_long_programs(sorted(set(STRUCT) - {"gather"})), st.just(300))))
def test_long_random_programs_match_eager(case):
    prog, n = case
    f = build(prog)
    x = np.random.default_rng(len(prog)).uniform(-1, 1, n)
    want = f(fnp.asarray(x))
    got = ft.jit(f)(x)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-9, atol=1e-9)


def test_loops_with_every_carry_kind_match_eager():
    """Carries returned unchanged, updated in place, small (copied) and large (swapped), in a
    while loop inside a scan."""
    rows = np.random.default_rng(7).standard_normal((6, 300))

    def f(rows):
        def step(c, row):
            big, small, table, k = c
            big = fnp.tanh(big + row)
            small = small * 0.5 + fnp.sum(row)
            table = lax.dynamic_update_slice(table, big[None, :], (k, 0))
            big2 = lax.while_loop(lambda b: fnp.max(b) > 0.5, lambda b: b * 0.9, big)
            return (big2, small, table, k + 1), fnp.sum(big2)
        init = (fnp.zeros(300), fnp.zeros(3), fnp.zeros((6, 300)), 0)
        return lax.scan(step, init, rows)

    _assert_close(ft.jit(f)(rows), f(rows), rtol=1e-12)


# ---- the disk cache, shared by processes -----------------------------------------------------------
_WORKER = textwrap.dedent("""
    import numpy as np, functrans as ft, functrans.numpy as fnp
    from functrans.transforms.native import engine
    w = np.random.default_rng(0).standard_normal((64, 64)) * 0.1
    f = ft.jit(lambda x: fnp.sum(fnp.tanh(x @ w) * fnp.exp(-x), axis=0))
    x = np.random.default_rng(1).standard_normal((32, 64))
    print(repr(np.asarray(f(x)).tolist()), engine.stats["compiled"], engine.stats["from_disk"])
""")


def test_processes_compiling_one_program_into_one_cache_all_succeed(tmp_path):
    env = dict(os.environ, FUNCTRANS_CACHE_DIR=str(tmp_path))
    procs = [subprocess.Popen([sys.executable, "-c", _WORKER], env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(3)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), [e for _, e in outs]
    values = {o.rsplit(" ", 2)[0] for o, _ in outs}
    assert len(values) == 1
    late = subprocess.run([sys.executable, "-c", _WORKER], env=env, text=True,
                          capture_output=True, timeout=300)
    value, compiled, from_disk = late.stdout.rsplit(" ", 2)
    assert value in values and int(compiled) == 0 and int(from_disk) > 0


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("size", [12, 1000])  # a fully unrolled loop, and a vectorized one
def test_powers_by_constant_exponents_keep_their_values_at_zero_and_infinity(dtype, size):
    # LLVM may expand pow(x, n + 0.5) as powi(x, n) * sqrt(x) when allowed approximate
    # functions, which is NaN at 0 and inf: the result must be C's pow there, as XLA's (NumPy
    # differs at -inf ** 0.5). Elsewhere the vector routine's 4 ulp bound applies.
    libm = ctypes.CDLL(ctypes.util.find_library("m"))
    libm.pow.restype, libm.pow.argtypes = ctypes.c_double, [ctypes.c_double, ctypes.c_double]
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0], dtype)
    x = np.resize(np.concatenate([special, np.linspace(0.25, 4, 7, dtype=dtype)]), size)
    for e in (-1.5, -0.5, 0.5, 2.5, 1 / 3, -2.0, 3.0):
        got = np.asarray(ft.jit(lambda v: lax.pow(fnp.abs(v) if e == -1.5 else v,
                                                  dtype(e)))(x))
        base = np.abs(x) if e == -1.5 else x
        want = np.array([libm.pow(float(b), e) for b in base]).astype(dtype)
        odd = ~np.isfinite(want) | (want == 0)
        np.testing.assert_array_equal(got[odd], want[odd], err_msg=f"x ** {e}")
        np.testing.assert_allclose(got[~odd], want[~odd], rtol=4 * np.finfo(dtype).eps,
                                   err_msg=f"x ** {e}")


def test_kernels_calling_vector_math_spill_to_an_aligned_frame():
    """A loop calling vector sin and tanh spills the vectors live across the calls; the ABI
    aligns the incoming stack to 16 bytes only, so each kernel realigns its frame to 64:
    spills never split a cache line, whatever thread (or ASLR) placed the stack (unaligned,
    the loop ran 1.8x slower on threads)."""
    jf = ft.jit(lambda v: fnp.sin(v * 1.7) + fnp.tanh(v) * 0.5)
    x = np.linspace(-2.0, 2.0, 4096)
    np.testing.assert_allclose(jf(x), np.sin(x * 1.7) + np.tanh(x) * 0.5, rtol=32 * EPS64,
                               atol=32 * EPS64)
    compiler = Compiler()
    kernels = [k for r in _program(jf, x).runs if isinstance(r, Driver) for k in r.kernels]
    checked = 0
    for k in kernels:
        asm = compiler.tm.emit_assembly(compiler.optimized(k.text(), {}, 2, True))
        if "call" in asm and re.search(r"vmov[au]p[sd]\s+%[yz]mm\d+, \d*\(%rsp\)", asm):
            assert "andq\t$-64, %rsp" in asm, asm[:2000]
            checked += 1
    assert checked >= 1  # the loop's kernel spills across its calls
