"""numba_call / numba_kernel: users' own Numba array kernels as steps of functrans programs.

Every value is checked against an oracle: the same kernel run by hand as a plain
``numba.njit`` function on NumPy arrays (zero-filled results), or the equivalent NumPy
expression. Covered: eager and ``jit`` for every dtype family, pytrees of results, 0-d
operands and results, static params, accumulating kernels and ``zero_outputs=False``,
dispatchers and plain functions, kernels inside larger jitted programs (elementwise ops,
``fori_loop``, ``cond``), every ``vmap_method`` and ``batched_kernel``, derivative rules
(``jvp=``, ``vjp=(fwd, bwd)``) against central finite differences, a hypothesis test over
shapes (zero-size included) and dtypes, ``pmap``/``shard_map``, errors for bad input, and
the compile cache (one native form per kernel signature, shared by programs).
"""
import os

import numba
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import functrans as ft
import functrans.numpy as fnp
from functrans import lax
from functrans.core.errors import JaxRuntimeError
from functrans.primitives.kernel_code import KernelTypingError
from functrans.sharding import P, make_mesh
from finite_diff import fd_grad

S = ft.ShapeDtypeStruct


def run_by_hand(kernel, result_specs, *operands, **params):
    """The oracle: the kernel as a plain njit function on zero-filled NumPy results."""
    fn = kernel if isinstance(kernel, numba.core.registry.CPUDispatcher) else numba.njit(kernel)
    outs = [np.zeros(s.shape, s.dtype) for s in result_specs]
    fn(*[np.asarray(o, order="C") for o in operands], *outs, **params)
    return outs


def assert_same(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype, (a.dtype, b.dtype)
    assert a.shape == b.shape, (a.shape, b.shape)
    np.testing.assert_array_equal(a, b)


# ---- kernels ---------------------------------------------------------------------------------

def mul_add(x, y, out):
    for i in range(x.shape[0]):
        out[i] = x[i] * y[i] + x[i]


def logic(x, y, out):
    for i in range(x.shape[0]):
        out[i] = (x[i] and not y[i]) or (y[i] and not x[i])


def stats(x, count, prefix, total):
    # results in the pytree's flattening order (dict keys sorted)
    acc = 0.0
    for i in range(x.shape[0]):
        acc += x[i]
        prefix[i] = acc
    total[()] = acc
    count[0] = x.shape[0]


def plus_one_0d(x, out):
    out[()] = x[()] + 1.5


def total_0d(x, out):
    for i in range(x.shape[0]):
        out[()] += x[i]


def scale(x, out, factor):
    for i in range(x.shape[0]):
        out[i] = factor * x[i]


def histogram(x, out, nbins):
    for i in range(x.shape[0]):
        b = int(x[i] * nbins)
        if 0 <= b < nbins:
            out[b] += 1


def every_element(x, out):
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            out[i, j] = x[i, j] * 10 + j


@numba.njit(fastmath=False)
def njit_cumsum(x, out):
    acc = 0.0
    for i in range(x.shape[0]):
        acc += x[i]
        out[i] = acc


def cumsum(x, out):
    acc = 0.0
    for i in range(x.shape[0]):
        acc += x[i]
        out[i] = acc


def reverse(x, out):
    n = x.shape[0]
    for i in range(n):
        out[i] = x[n - 1 - i]


def bcast_add(x, y, out):
    # Rank-generic: 1-d operands (an unbatched call) or 2-d ones whose leading axis is the
    # batch or 1 (vmap's expand_dims / broadcast_all).
    x2 = x.reshape((-1, x.shape[-1]))
    y2 = y.reshape((-1, y.shape[-1]))
    o2 = out.reshape((-1, out.shape[-1]))
    for b in range(o2.shape[0]):
        for i in range(o2.shape[1]):
            o2[b, i] = x2[b % x2.shape[0], i] * 2.0 + y2[b % y2.shape[0], i]


def rows_scaled(x, out):
    for i in range(x.shape[0]):
        out[i] = x[i] * (i + 1)


def rows_scaled_batched(x, out):
    for b in range(x.shape[0]):
        for i in range(x.shape[1]):
            out[b, i] = x[b, i] * (i + 1)


def twice_flat(x, out):
    for i in range(x.size):
        out.flat[i] = x.flat[i] * 2 + 1


def row_sum(x, out):
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            out[i] += x[i, j]


def like(x):
    return S(x.shape, x.dtype)


# ---- eager and jit, every dtype family -------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "complex128"])
def test_eager_and_jit_equal_the_kernel_run_by_hand(dtype):
    rng = np.random.default_rng(0)
    x = (rng.normal(size=7) * 5).astype(dtype)
    y = (rng.normal(size=7) * 5).astype(dtype)
    if dtype == "complex128":
        x = x + 1j * rng.normal(size=7)
    spec = S((7,), dtype)

    def f(a, b):
        return ft.numba_call(mul_add, spec, a, b)
    (want,) = run_by_hand(mul_add, [spec], x, y)
    np.testing.assert_allclose(want, x * y + x, rtol=1e-6)  # the oracle is the kernel
    assert_same(f(x, y), want)
    assert_same(ft.jit(f)(x, y), want)


def test_bool_operands_and_results():
    x = np.array([True, False, True, False, True])
    y = np.array([True, True, False, False, True])
    spec = S((5,), "bool")

    def f(a, b):
        return ft.numba_call(logic, spec, a, b)
    assert_same(f(x, y), x ^ y)
    assert_same(ft.jit(f)(x, y), x ^ y)


def test_multiple_results_as_a_dict_pytree():
    x = np.array([1.0, 2.0, 3.5, -1.0])
    specs = {"total": S((), "float64"), "prefix": S((4,), "float64"), "count": S((1,), "int32")}

    def f(a):
        return ft.numba_call(stats, specs, a)
    for out in (f(x), ft.jit(f)(x)):
        assert set(out) == {"total", "prefix", "count"}
        assert_same(out["total"], np.float64(np.cumsum(x)[-1]))
        assert_same(out["prefix"], np.cumsum(x))
        assert_same(out["count"], np.array([4], "int32"))


def test_0d_operand_and_0d_result():
    x0 = np.float64(2.25)
    spec0 = S((), "float64")
    (want,) = run_by_hand(plus_one_0d, [spec0], np.asarray(x0))
    assert want == 3.75
    for g in (lambda a: ft.numba_call(plus_one_0d, spec0, a),):
        assert_same(g(x0), want)
        assert_same(ft.jit(g)(x0), want)
    v = np.array([1.0, 2.0, 4.5])
    h = lambda a: ft.numba_call(total_0d, spec0, a)  # noqa: E731
    assert_same(h(v), np.float64(7.5))
    assert_same(ft.jit(h)(v), np.float64(7.5))


def test_static_params_select_different_code():
    x = np.arange(5.0)
    spec = S((5,), "float64")

    def f(a, factor):
        return ft.numba_call(scale, spec, a, factor=factor)
    for factor in (2.0, -3.0):
        (want,) = run_by_hand(scale, [spec], x, factor=factor)
        assert_same(want, factor * x)
        assert_same(f(x, factor), want)
        assert_same(ft.jit(f, static_argnums=1)(x, factor), want)
    assert not np.array_equal(np.asarray(f(x, 2.0)), np.asarray(f(x, -3.0)))


def test_histogram_accumulates_into_zeroed_results():
    x = np.random.default_rng(1).uniform(0.0, 1.0, size=200)

    def f(a, nbins):
        return ft.numba_call(histogram, S((nbins,), "int32"), a, nbins=nbins)
    for nbins in (4, 8):
        want = np.histogram(x, bins=nbins, range=(0.0, 1.0))[0].astype("int32")
        assert_same(f(x, nbins), want)
        assert_same(ft.jit(f, static_argnums=1)(x, nbins), want)
        # twice in one program: each call starts from zeros again
        g = ft.jit(lambda a: f(a, nbins) + f(a, nbins))
        assert_same(g(x), 2 * want)
    assert len(np.asarray(f(x, 4))) != len(np.asarray(f(x, 8)))


def test_zero_outputs_false_with_a_kernel_writing_every_element():
    x = np.arange(12.0).reshape(3, 4)
    spec = S((3, 4), "float64")
    want = x * 10 + np.arange(4)

    def f(a):
        return ft.numba_call(every_element, spec, a, zero_outputs=False)
    assert_same(f(x), want)
    assert_same(ft.jit(f)(x), want)
    assert_same(ft.jit(lambda a: f(a) - 1.0)(x), want - 1.0)


def test_a_numba_dispatcher_and_a_plain_function():
    x = np.array([0.5, 1.0, -2.0, 4.0])
    spec = S((4,), "float64")
    want = np.cumsum(x)
    for k in (njit_cumsum, cumsum):
        assert_same(ft.numba_call(k, spec, x), want)
        assert_same(ft.jit(lambda a: ft.numba_call(k, spec, a))(x), want)
    assert_same(run_by_hand(njit_cumsum, [spec], x)[0], want)


# ---- inside larger jitted programs -----------------------------------------------------------

def test_kernel_between_elementwise_ops():
    x = np.linspace(-1.0, 2.0, 9)
    spec = S((9,), "float64")

    @ft.jit
    def f(a):
        b = fnp.sin(a) * 2.0 + 1.0
        c = ft.numba_call(cumsum, spec, b)
        return fnp.exp(-c) + fnp.sum(c)

    b = np.sin(x) * 2.0 + 1.0
    c = run_by_hand(cumsum, [spec], b)[0]
    np.testing.assert_allclose(np.asarray(f(x)), np.exp(-c) + c.sum(), rtol=1e-13)


def test_kernel_in_a_fori_loop_body():
    x = np.array([1.0, -2.0, 3.0])
    spec = S((3,), "float64")

    def f(a):
        return lax.fori_loop(0, 4, lambda i, c: ft.numba_call(cumsum, spec, c) * 0.5 + i, a)
    want = x.copy()
    for i in range(4):
        want = np.cumsum(want) * 0.5 + i
    np.testing.assert_allclose(np.asarray(ft.jit(f)(x)), want, rtol=1e-14)
    np.testing.assert_allclose(np.asarray(f(x)), want, rtol=1e-14)


def test_kernels_in_cond_branches():
    x = np.array([1.0, 2.0, 5.0, -1.0])
    spec = S((4,), "float64")

    @ft.jit
    def f(p, a):
        return lax.cond(p, lambda v: ft.numba_call(cumsum, spec, v),
                        lambda v: ft.numba_call(reverse, spec, v) + 1.0, a)
    assert_same(f(True, x), np.cumsum(x))
    assert_same(f(False, x), x[::-1] + 1.0)


# ---- vmap ------------------------------------------------------------------------------------

def test_vmap_sequential_eager_and_jit():
    xb = np.random.default_rng(2).normal(size=(5, 6))

    def f(a):
        return ft.numba_call(cumsum, like(a), a, vmap_method="sequential")
    want = np.stack([run_by_hand(cumsum, [S((6,), "float64")], r)[0] for r in xb])
    assert_same(ft.vmap(f)(xb), want)
    assert_same(ft.jit(ft.vmap(f))(xb), want)
    # batch axis not in front
    assert_same(ft.jit(ft.vmap(f, in_axes=1, out_axes=1))(xb.T.copy()), want.T)


def test_nested_vmap_sequential():
    xbb = np.random.default_rng(3).normal(size=(3, 4, 5))

    def f(a):
        return ft.numba_call(cumsum, like(a), a, vmap_method="sequential")
    want = np.cumsum(xbb, axis=-1)
    np.testing.assert_allclose(np.asarray(ft.vmap(ft.vmap(f))(xbb)), want, rtol=1e-14)
    np.testing.assert_allclose(np.asarray(ft.jit(ft.vmap(ft.vmap(f)))(xbb)), want, rtol=1e-14)


def test_vmap_in_axes_0_none():
    rng = np.random.default_rng(4)
    xb, y = rng.normal(size=(4, 6)), rng.normal(size=6)

    def f(a, b):
        return ft.numba_call(mul_add, like(a), a, b, vmap_method="sequential")
    want = xb * y + xb
    for g in (ft.vmap(f, in_axes=(0, None)), ft.jit(ft.vmap(f, in_axes=(0, None)))):
        np.testing.assert_allclose(np.asarray(g(xb, y)), want, rtol=1e-14)


@pytest.mark.parametrize("method", ["expand_dims", "broadcast_all"])
def test_vmap_expand_dims_and_broadcast_all(method):
    rng = np.random.default_rng(5)
    xb, y = rng.normal(size=(4, 6)), rng.normal(size=6)

    def f(a, b):
        return ft.numba_call(bcast_add, like(a), a, b, vmap_method=method)
    want = xb * 2.0 + y
    assert_same(f(xb[0], y), want[0])
    for g in (ft.vmap(f, in_axes=(0, None)), ft.jit(ft.vmap(f, in_axes=(0, None)))):
        assert_same(g(xb, y), want)
    # both batched
    yb = rng.normal(size=(4, 6))
    assert_same(ft.jit(ft.vmap(f))(xb, yb), xb * 2.0 + yb)


def test_vmap_with_a_batched_kernel():
    xb = np.random.default_rng(6).normal(size=(3, 5))

    def f(a):
        return ft.numba_call(rows_scaled, like(a), a, batched_kernel=rows_scaled_batched)
    want = xb * np.arange(1, 6)
    assert_same(f(xb[0]), want[0])
    assert_same(ft.vmap(f)(xb), want)
    assert_same(ft.jit(ft.vmap(f))(xb), want)
    # the batched kernel is the one called
    eqn = ft.make_jaxpr(ft.vmap(f))(xb).eqns[0]
    assert eqn.params["kernel"].name == "rows_scaled_batched"


# ---- derivative rules ------------------------------------------------------------------------
# Checked against central finite differences in float64 with h = 1e-6: the truncation error is
# ~h^2 |f'''| ~ 1e-12 and the rounding error ~eps/h ~ 1e-10 relative, so rtol 1e-6 leaves a
# wide margin while still catching any wrong rule (which is off by O(1)).

FD_RTOL = 1e-6



@ft.numba_kernel(result=like, jvp=lambda p, t: (cube(*p), 3.0 * p[0] ** 2 * t[0]),
                 vmap_method="sequential")
def cube(x, out):
    for i in range(x.shape[0]):
        out[i] = x[i] ** 3


@ft.numba_kernel(result=like, vmap_method="sequential")
def cos_kernel(x, out):
    for i in range(x.shape[0]):
        out[i] = np.cos(x[i])


def _sin_fwd(x):
    return sin_kernel(x), x


def _sin_bwd(x, ct):
    return (cos_kernel(x) * ct,)  # the backward pass is another kernel


@ft.numba_kernel(result=like, vjp=(_sin_fwd, _sin_bwd), vmap_method="sequential")
def sin_kernel(x, out):
    for i in range(x.shape[0]):
        out[i] = np.sin(x[i])


W = np.array([0.3, -1.2, 2.0, 0.7, 1.1])
X = np.array([0.4, -0.9, 1.3, 2.1, -0.2])


def loss_cube(x):
    return fnp.sum(cube(x) * W)


def loss_sin(x):
    return fnp.sum(sin_kernel(fnp.sin(x) * 2.0) * W)


def np_loss_cube(x):
    return np.sum(x ** 3 * W)


def np_loss_sin(x):
    return np.sum(np.sin(np.sin(x) * 2.0) * W)


@pytest.mark.parametrize("loss,np_loss", [(loss_cube, np_loss_cube), (loss_sin, np_loss_sin)],
                         ids=["jvp_rule", "vjp_rule"])
def test_grad_and_jit_grad_match_finite_differences(loss, np_loss):
    np.testing.assert_allclose(float(loss(X)), np_loss(X), rtol=1e-14)
    want = fd_grad(np_loss, X)
    np.testing.assert_allclose(np.asarray(ft.grad(loss)(X)), want, rtol=FD_RTOL)
    np.testing.assert_allclose(np.asarray(ft.jit(ft.grad(loss))(X)), want, rtol=FD_RTOL)
    # the kernel-run gradient against the functrans loss differentiated numerically
    np.testing.assert_allclose(np.asarray(ft.grad(loss)(X)), fd_grad(loss, X),
                               rtol=FD_RTOL)


def test_jacfwd_with_a_jvp_rule():
    jac = np.asarray(ft.jacfwd(lambda x: cube(x))(X))
    want = np.stack([fd_grad(lambda v, i=i: v[i] ** 3, X) for i in range(X.size)])
    np.testing.assert_allclose(jac, want, rtol=FD_RTOL, atol=1e-9)
    np.testing.assert_allclose(np.diag(jac), 3 * X ** 2, rtol=1e-14)


@pytest.mark.parametrize("loss,np_loss", [(loss_cube, np_loss_cube), (loss_sin, np_loss_sin)],
                         ids=["jvp_rule", "vjp_rule"])
def test_vmap_of_grad(loss, np_loss):
    xb = np.stack([X, X * 0.5, -X])
    want = np.stack([fd_grad(np_loss, r) for r in xb])
    np.testing.assert_allclose(np.asarray(ft.vmap(ft.grad(loss))(xb)), want, rtol=FD_RTOL)
    np.testing.assert_allclose(np.asarray(ft.jit(ft.vmap(ft.grad(loss)))(xb)), want,
                               rtol=FD_RTOL)


# ---- hypothesis: shapes (zero-size included) and dtypes --------------------------------------

DTYPES = ["float32", "float64", "int32"]


def _values(seed, shape, dtype):
    v = np.random.default_rng(seed).normal(size=shape) * 4
    return v.astype(dtype)


@given(shape=st.lists(st.integers(0, 4), min_size=1, max_size=3),
       dtype=st.sampled_from(DTYPES), seed=st.integers(0, 2**31 - 1))
def test_elementwise_kernel_jit_eager_numpy(shape, dtype, seed):
    x = _values(seed, tuple(shape), dtype)

    def f(a):
        return ft.numba_call(twice_flat, like(a), a)
    eager, jitted = np.asarray(f(x)), np.asarray(ft.jit(f)(x))
    assert_same(jitted, eager)
    assert_same(eager, (x * 2 + 1).astype(dtype))


@given(rows=st.integers(0, 4), cols=st.integers(0, 5), dtype=st.sampled_from(DTYPES),
       seed=st.integers(0, 2**31 - 1))
def test_row_sum_kernel_jit_eager_numpy(rows, cols, dtype, seed):
    x = _values(seed, (rows, cols), dtype)

    def f(a):
        return ft.numba_call(row_sum, S((a.shape[0],), a.dtype), a)
    eager, jitted = np.asarray(f(x)), np.asarray(ft.jit(f)(x))
    assert_same(jitted, eager)
    assert eager.dtype == np.dtype(dtype) and eager.shape == (rows,)
    np.testing.assert_allclose(eager, x.sum(axis=1, dtype=dtype), rtol=1e-6 if dtype ==
                               "float32" else 1e-14, atol=1e-5)


# ---- pmap and shard_map ----------------------------------------------------------------------

@pytest.fixture
def two_devices():
    with ft.config.override(num_cpu_devices=2):
        yield


def test_pmap_over_two_devices(two_devices):
    xb = np.random.default_rng(7).normal(size=(2, 6))

    def f(a):
        return ft.numba_call(cumsum, like(a), a, vmap_method="sequential") * 2.0
    np.testing.assert_allclose(np.asarray(ft.pmap(f)(xb)), np.cumsum(xb, axis=1) * 2.0,
                               rtol=1e-14)


def test_shard_map_runs_the_kernel_per_shard(two_devices):
    mesh = make_mesh((2,), ("x",))
    x = np.random.default_rng(8).normal(size=8)

    def f(b):
        return ft.numba_call(cumsum, like(b), b)
    got = ft.shard_map(f, mesh=mesh, in_specs=P("x"), out_specs=P("x"))(x)
    want = np.concatenate([np.cumsum(x[:4]), np.cumsum(x[4:])])  # per shard, not global
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-14)
    got = ft.jit(ft.shard_map(f, mesh=mesh, in_specs=P("x"), out_specs=P("x")))(x)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-14)


# ---- errors ----------------------------------------------------------------------------------

def untypable_kernel(x, out):
    for i in range(x.shape[0]):
        out[i] = x[i].no_such_attribute


def writes_2d(x, out):
    for i in range(x.shape[0]):
        for j in range(x.shape[0]):
            out[i, j] = x[i]


def raises_value_error(x, out):
    for i in range(x.shape[0]):
        if x[i] < 0:
            raise ValueError("negative input found")
        out[i] = x[i]


def writes_past_the_end(x, out):
    for i in range(x.shape[0] + 1):
        out[i] = 1.0


def kwonly_kernel(x, out, *, n):
    out[0] = n


def no_rules_kernel(x, out):
    for i in range(x.shape[0]):
        out[i] = x[i] * x[i]


def test_untypable_kernel_names_kernel_types_and_the_callers_line():
    x = np.ones(3)
    for f in (lambda a: ft.numba_call(untypable_kernel, like(a), a),
              ft.jit(lambda a: ft.numba_call(untypable_kernel, like(a), a))):
        with pytest.raises(KernelTypingError) as info:
            f(x)
        msg = str(info.value)
        assert "untypable_kernel" in msg and "f64[" in msg and "test_numba_call.py:" in msg, msg
    assert issubclass(KernelTypingError, TypeError)


def test_declared_1d_result_for_a_kernel_writing_2d():
    with pytest.raises(KernelTypingError, match="writes_2d"):
        ft.numba_call(writes_2d, S((3,), "float64"), np.ones(3))
    with pytest.raises(KernelTypingError, match="writes_2d"):
        ft.jit(lambda a: ft.numba_call(writes_2d, S((3,), "float64"), a))(np.ones(3))


def test_a_kernel_raising_is_a_runtime_error_eager_and_jit():
    x = np.array([1.0, -2.0, 3.0])

    def f(a):
        return ft.numba_call(raises_value_error, like(a), a)
    with pytest.raises(JaxRuntimeError, match="negative input found"):
        f(x)
    with pytest.raises(JaxRuntimeError, match="negative input found"):
        ft.jit(f)(x)
    assert_same(ft.jit(f)(np.abs(x)), np.abs(x))  # and the program still runs on good input


def test_boundscheck_reports_index_error_eager_and_jit():
    x = np.ones(4)

    def f(a):
        return ft.numba_call(writes_past_the_end, like(a), a, boundscheck=True)
    with pytest.raises(JaxRuntimeError, match="IndexError"):
        f(x)
    with pytest.raises(JaxRuntimeError, match="IndexError"):
        ft.jit(f)(x)


def test_bad_params():
    with pytest.raises(TypeError, match="keyword-only"):
        ft.numba_call(kwonly_kernel, S((1,), "float64"), np.ones(1), n=2)
    with pytest.raises(TypeError, match="nbins"):
        ft.numba_call(histogram, S((4,), "int32"), np.ones(3), nbins=[4])


def test_grad_without_rules_names_the_kernel():
    f = lambda a: fnp.sum(ft.numba_call(no_rules_kernel, like(a), a))  # noqa: E731
    with pytest.raises(TypeError, match="no_rules_kernel"):
        ft.grad(f)(np.ones(3))
    with pytest.raises(TypeError, match="no_rules_kernel"):
        ft.jit(ft.grad(f))(np.ones(3))
    assert_same(f(np.arange(3.0)), np.float64(5.0))  # without derivatives it runs


def test_vmap_without_a_method():
    f = lambda a: ft.numba_call(no_rules_kernel, like(a), a)  # noqa: E731
    with pytest.raises(NotImplementedError, match="no_rules_kernel"):
        ft.vmap(f)(np.ones((2, 3)))


def test_export_refuses_a_kernel_naming_it():
    f = ft.jit(lambda a: fnp.sin(ft.numba_call(cumsum, like(a), a)))
    with pytest.raises(Exception, match="numba_call of kernel 'cumsum' cannot be exported"):
        ft.export.export(f)(np.ones(3))


# ---- reuse: one native compile per kernel signature ------------------------------------------

def reused_kernel(x, out):
    for i in range(x.shape[0]):
        out[i] = x[i] * 3.0 - 1.0


def test_one_native_form_shared_by_programs_and_sizes():
    def f(a):
        return ft.numba_call(reused_kernel, like(a), a)

    def g(a):
        return fnp.cos(ft.numba_call(reused_kernel, like(a), a)) + a

    x5, x7 = np.arange(5.0), np.linspace(0, 1, 7)
    code = ft.make_jaxpr(f)(x5).eqns[0].params["kernel"]
    assert ft.make_jaxpr(g)(x7).eqns[0].params["kernel"] is code
    assert_same(ft.jit(f)(x5), run_by_hand(reused_kernel, [like(x5)], x5)[0])
    np.testing.assert_allclose(np.asarray(ft.jit(g)(x7)), np.cos(x7 * 3.0 - 1.0) + x7,
                               rtol=1e-14)
    assert_same(ft.jit(f)(x7), x7 * 3.0 - 1.0)
    assert len(code._native) == 1


# ---- the type rule against the impl ----------------------------------------------------------

def test_type_rule_matches_the_impl():
    x = np.array([1.0, 2.0, 3.5, -1.0])
    xb = np.arange(12.0).reshape(3, 4)
    specs = {"total": S((), "float64"), "prefix": S((4,), "float64"), "count": S((1,), "int32")}
    cases = [
        (lambda a: ft.numba_call(stats, specs, a), x),
        (lambda a: ft.numba_call(histogram, S((6,), "int32"), a, nbins=6), x),
        (lambda a: ft.numba_call(total_0d, S((), "float64"), a), x),
        (ft.vmap(lambda a: ft.numba_call(cumsum, like(a), a, vmap_method="sequential")), xb),
        (ft.vmap(lambda a: ft.numba_call(rows_scaled, like(a), a,
                                         batched_kernel=rows_scaled_batched)), xb),
    ]
    for f, arg in cases:
        abstract = ft.tree_util.tree_leaves(ft.eval_shape(f, arg))
        concrete = ft.tree_util.tree_leaves(f(arg))
        assert len(abstract) == len(concrete)
        for a, c in zip(abstract, concrete):
            assert tuple(a.shape) == np.shape(c) and np.dtype(a.dtype) == np.asarray(c).dtype


# ---- partitioned jit: replicated, or split as the kernel's sharding_rule declares ----------
def _rowdot(x, w, out):
    for i in range(x.shape[0]):
        acc = 0.0
        for j in range(x.shape[1]):
            acc += x[i, j] * w[j]
        out[i] = acc


def _partitioned_program(rule):
    def f(x, w):
        return ft.numba_call(_rowdot, ft.ShapeDtypeStruct((x.shape[0],), x.dtype), x * 2.0, w,
                             sharding_rule=rule) + 1.0
    return f


@pytest.mark.parametrize("rule", [None, "i j, j -> i"])
def test_partitioned_jit_runs_a_kernel_replicated_or_split_by_its_rule(rule):
    from functrans.sharding import NamedSharding, PartitionSpec as P
    from functrans.transforms.partition.partitioner import mesh_and_specs, partitioned
    with ft.config.override(num_cpu_devices=4):
        mesh = ft.make_mesh((2, 2), ("x", "y"))
        x, w = np.arange(32.0).reshape(8, 4), np.arange(4.0)
        xs = ft.device_put(x, NamedSharding(mesh, P("x", "y")))
        ws = ft.device_put(w, NamedSharding(mesh, P("y")))
        f = _partitioned_program(rule)
        out = ft.jit(f)(xs, ws)
        np.testing.assert_array_equal(np.asarray(out), (2.0 * x) @ w + 1.0)  # exact: integers
        jaxpr = ft.jit(f).trace(xs, ws).jaxpr
        plan = partitioned(jaxpr, *mesh_and_specs(jaxpr, [xs, ws]), "test")
        call = next(e for e in plan.per_shard.eqns if e.prim.name == "numba_call")
        # Replicated: the kernel sees every row; split by rows ("i"): each shard half of them,
        # its result declared at the block's size.
        rows = 8 if rule is None else 4
        assert call.inputs[0].aval.shape == (rows, 4)
        assert call.params["out_avals"][0].shape == (rows,)
        assert out.sharding.spec == (P(None) if rule is None else P("x"))


def test_a_sharding_rule_that_does_not_fit_the_call_is_refused():
    with pytest.raises(ValueError, match="_rowdot.*rank 2 but the rule names 1"):
        ft.numba_call(_rowdot, ft.ShapeDtypeStruct((3,), "float64"), np.ones((3, 2)),
                      np.ones(2), sharding_rule="i, j -> i")
    with pytest.raises(ValueError, match="operands -> results"):
        ft.numba_call(_rowdot, ft.ShapeDtypeStruct((3,), "float64"), np.ones((3, 2)),
                      np.ones(2), sharding_rule="i j, j")


# ---- jit's Numba code generator (and runs the native one leaves to it) ---------------------
def _running_sum(x, out):
    acc = 0.0
    for i in range(x.shape[0]):
        acc += x[i]
        out[i] = acc


def _scaled_total(x, out, scale):
    for i in range(x.shape[0]):
        out[()] += x[i] * scale


def test_kernels_under_the_numba_code_generator():
    x = np.arange(5.0)
    with ft.config.override(jit_codegen="numba"):
        f = ft.jit(lambda v: ft.numba_call(_running_sum, ft.ShapeDtypeStruct(v.shape, v.dtype),
                                           v) * 2.0)
        np.testing.assert_array_equal(np.asarray(f(x)), np.cumsum(x) * 2.0)
        g = ft.jit(ft.vmap(lambda v: ft.numba_call(
            _running_sum, ft.ShapeDtypeStruct(v.shape, v.dtype), v, vmap_method="sequential")))
        rows = np.arange(12.0).reshape(3, 4)
        np.testing.assert_array_equal(np.asarray(g(rows)), np.cumsum(rows, axis=1))
        h = ft.jit(lambda s: ft.numba_call(_scaled_total, ft.ShapeDtypeStruct((), s.dtype),
                                           fnp.stack([s, s + 1.0]), scale=3.0))
        assert float(h(np.float64(2.0))) == 15.0  # (2 + 3) * 3, exact


def test_a_kernel_using_numbas_threading_layer_runs_from_the_disk_cache(tmp_path):
    """get_num_threads is an entry point of Numba's thread pool, registered with LLVM when the
    pool starts: a program loaded from the disk cache in a fresh process must start it first
    (it called through an unresolved symbol and crashed)."""
    import subprocess
    import sys
    script = tmp_path / "threads.py"
    script.write_text(
        "import numba, numpy as np, functrans as ft\n"
        "@numba.njit\n"
        "def k(x, out):\n"
        "    for i in range(x.shape[0]):\n"
        "        out[i] = x[i] + numba.get_num_threads()\n"
        "f = ft.jit(lambda v: ft.numba_call(k, ft.ShapeDtypeStruct(v.shape, v.dtype), v))\n"
        "print(float(f(np.zeros(3))[0]) == numba.get_num_threads())\n")
    env = dict(os.environ, FUNCTRANS_CACHE_DIR=str(tmp_path / "cache"), FUNCTRANS_JIT_TIERED="0")
    for _ in range(2):  # compiled, then loaded from the cache
        r = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                           text=True, timeout=300)
        assert r.returncode == 0 and r.stdout.strip() == "True", r.stderr[-2000:]
