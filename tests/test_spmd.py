"""pmap and shard_map on CPU devices: pmap == vmap (the oracle) for every collective and
composition, shard_map == the unsharded program, and clear errors for bad input.

Values are float64; sums over shards and over a batch add the same numbers in possibly
different orders, so comparisons allow 1e-12 relative error (a few ulps of float64).
"""
import numpy as np
import pytest
from hypothesis import given, strategies as st

import functrans as ft
import functrans.numpy as fnp
from functrans import lax
from functrans.sharding import Mesh, NamedSharding, P, make_mesh

RTOL = 1e-12


@pytest.fixture(autouse=True)
def four_devices():
    with ft.config.override(num_cpu_devices=4):
        yield


def assert_close(a, b, rtol=RTOL):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=1e-12)


# ---- every collective: pmap == vmap ---------------------------------------------------------
COLLECTIVES = {
    "psum": lambda x: lax.psum(x, "i"),
    "pmean": lambda x: lax.pmean(x, "i"),
    "pmax": lambda x: lax.pmax(x, "i"),
    "pmin": lambda x: lax.pmin(x, "i"),
    "all_gather": lambda x: lax.all_gather(x, "i"),
    "all_gather_axis1_tiled": lambda x: lax.all_gather(x, "i", axis=1, tiled=True),
    "axis_index": lambda x: x * lax.axis_index("i"),
    "ppermute_ring": lambda x: lax.ppermute(x, "i", [(j, (j + 1) % lax.axis_size("i"))
                                                     for j in range(lax.axis_size("i"))]),
    "ppermute_partial": lambda x: lax.ppermute(x, "i", [(0, lax.axis_size("i") - 1)]),
    "pshuffle": lambda x: lax.pshuffle(x, "i", list(reversed(range(lax.axis_size("i"))))),
    "psum_scatter_tiled": lambda x: lax.psum_scatter(x, "i", scatter_dimension=1, tiled=True),
    "all_to_all_tiled": lambda x: lax.all_to_all(x, "i", 1, 0, tiled=True),
    "mixed": lambda x: fnp.tanh(x) * lax.psum(fnp.sin(x), "i") - lax.pmax(x, "i"),
}


@pytest.mark.parametrize("name", sorted(COLLECTIVES))
@given(n=st.sampled_from([1, 2, 4]), rows=st.integers(1, 3),
       seed=st.integers(0, 2**31 - 1))
def test_pmap_matches_vmap_for_every_collective(name, n, rows, seed):
    f = COLLECTIVES[name]
    x = np.random.default_rng(seed).normal(size=(n, rows, 4))
    assert_close(ft.pmap(f, "i")(x), ft.vmap(f, axis_name="i")(x))


def test_untiled_scatter_and_all_to_all():
    x = np.arange(2 * 2 * 3, dtype=float).reshape(2, 2, 3)
    for f in (lambda v: lax.psum_scatter(v, "i"), lambda v: lax.all_to_all(v, "i", 0, 1)):
        assert_close(ft.pmap(f, "i")(x), ft.vmap(f, axis_name="i")(x))


def test_collectives_over_two_names_and_nested_pmap():
    def f(x):
        return (x * lax.psum(x, "i") + lax.pmax(x, "j") + lax.psum(x, ("i", "j"))
                + lax.axis_index("i") * 10 + lax.axis_index("j"))
    x = np.random.default_rng(0).normal(size=(2, 2, 3))
    want = ft.vmap(ft.vmap(f, axis_name="j"), axis_name="i")(x)
    assert_close(ft.pmap(ft.pmap(f, "j"), "i")(x), want)


def test_nested_pmap_needs_enough_devices():
    f = ft.pmap(ft.pmap(lambda x: lax.psum(x, "i"), "j"), "i")
    with pytest.raises(ft.ShardError, match="needs 4 x 2 devices, but there are 4"):
        f(np.ones((4, 2)))


# ---- compositions ------------------------------------------------------------------------
def _loss(w, x):
    return fnp.sum(fnp.tanh(x @ w) ** 2)


def test_pmap_of_grad_with_pmean_is_data_parallel_gradient():
    rng = np.random.default_rng(1)
    w, x = rng.normal(size=(3, 2)), rng.normal(size=(4, 5, 3))

    def step(w, xb):
        return lax.pmean(ft.grad(_loss)(w, xb), "i")
    got = ft.pmap(step, "i", in_axes=(None, 0))(w, x)
    want = ft.grad(_loss)(w, x.reshape(20, 3)) / 4
    for g in np.asarray(got):  # every device holds the same averaged gradient
        assert_close(g, want)


def test_grad_of_pmap_matches_grad_of_vmap_and_finite_differences():
    def f(x):
        return fnp.sin(x) * lax.psum(x ** 2, "i") + lax.all_gather(x, "i").sum()

    def total(mapper, x):
        return mapper(f, axis_name="i")(x).sum()
    x = np.random.default_rng(2).normal(size=(4, 3))
    g = ft.grad(lambda x: total(lambda f, axis_name: ft.pmap(f, axis_name), x))(x)
    assert_close(g, ft.grad(lambda x: total(ft.vmap, x))(x))
    ft.testing.check_grads(lambda x: total(lambda f, axis_name: ft.pmap(f, axis_name), x),
                           (x,), order=2, modes=("fwd", "rev"))


def test_grad_through_collectives():
    # Rank 2 per member: all_to_all's split_axis 1 must exist (JAX refuses it on rank 1).
    x = np.random.default_rng(3).normal(size=(4, 2, 4))
    for name in ("psum", "all_gather", "ppermute_ring", "psum_scatter_tiled",
                 "all_to_all_tiled", "pmean", "pmax", "pmin", "mixed"):
        f = COLLECTIVES[name]
        g1 = ft.grad(lambda x: (ft.pmap(f, "i")(x) ** 2).sum())(x)
        g2 = ft.grad(lambda x: (ft.vmap(f, axis_name="i")(x) ** 2).sum())(x)
        assert_close(g1, g2)


def test_vmap_of_pmap_and_pmap_of_vmap():
    f = COLLECTIVES["mixed"]
    x = np.random.default_rng(4).normal(size=(3, 2, 5))
    assert_close(ft.vmap(ft.pmap(f, "i"))(x), ft.vmap(ft.vmap(f, axis_name="i"))(x))
    assert_close(ft.vmap(ft.pmap(f, "i"), in_axes=1)(x), ft.vmap(ft.vmap(f, axis_name="i"),
                                                           in_axes=1)(x))
    y = np.random.default_rng(5).normal(size=(2, 3, 5))
    g = ft.vmap(lambda r: r * lax.psum(r, "i"))
    assert_close(ft.pmap(g, "i")(y), ft.vmap(g, axis_name="i")(y))


def test_jit_around_and_inside_pmap():
    f = COLLECTIVES["mixed"]
    x = np.random.default_rng(6).normal(size=(4, 3))
    want = ft.vmap(f, axis_name="i")(x)
    assert_close(ft.jit(ft.pmap(f, "i"))(x), want)
    assert_close(ft.pmap(ft.jit(f), "i")(x), want)
    assert_close(ft.jit(ft.grad(lambda x: ft.pmap(f, "i")(x).sum()))(x),
          ft.grad(lambda x: ft.vmap(f, axis_name="i")(x).sum())(x))


def test_control_flow_with_collectives_inside_pmap():
    def f(x):
        x = lax.fori_loop(0, 3, lambda i, c: c * 0.5 + lax.pmean(c, "i"), x)
        x = lax.cond(x.sum() > 0, lambda v: v + lax.psum(v, "i"), lambda v: -v, x)
        return lax.scan(lambda c, r: (c + lax.psum(r, "i"), c), x[0], x)[1]
    x = np.random.default_rng(7).normal(size=(2, 3, 2))
    assert_close(ft.pmap(f, "i")(x), ft.vmap(f, axis_name="i")(x))


def test_in_axes_out_axes_static_and_kwargs():
    x = np.arange(12.0).reshape(3, 4)
    f = ft.pmap(lambda a, b, k: a * b + k, in_axes=(1, None), static_broadcasted_argnums=2)
    assert_close(f(x, 2.0, 1), ft.vmap(lambda a, b: a * b + 1, in_axes=(1, None))(x, 2.0))
    g = ft.pmap(lambda a: (a, lax.psum(a, "i")), "i", out_axes=(1, None))
    out, total = g(x.T)
    assert_close(out, x)
    assert_close(total, x.sum(axis=1))
    h = ft.pmap(lambda a, *, scale: a * scale)
    assert_close(h(x[:2], scale=np.full(2, 3.0)), x[:2] * 3.0)
    assert_close(ft.pmap(lambda: lax.axis_index("i") * 1.0, "i", axis_size=3)(), [0.0, 1.0, 2.0])
    two = ft.devices()[2:4]
    r = ft.pmap(lambda a: a + 1, devices=two)(x[:2])
    assert r.sharding.mesh.devices.tolist() == two


def test_pmap_output_is_sharded_and_gathers():
    y = ft.pmap(lambda a: a * 2)(np.arange(8.0).reshape(4, 2))
    assert y.devices() == set(ft.devices()[:4])
    shards = y.addressable_shards
    assert [s.device for s in shards] == ft.devices()[:4]
    assert_close(np.stack([np.asarray(s.data)[0] for s in shards]), np.asarray(y))
    assert_close(np.asarray(y), np.arange(8.0).reshape(4, 2) * 2)


def test_empty_and_integer_programs():
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    out = ft.pmap(lambda v: lax.psum(v, "i"), "i")(x)
    assert out.dtype == np.int32
    assert_close(out, np.broadcast_to(x.sum(0), (2, 3)))
    assert_close(ft.pmap(lambda v: v)(np.zeros((2, 0))), np.zeros((2, 0)))


# ---- shard_map ----------------------------------------------------------------------------
def test_shard_map_matches_the_unsharded_program():
    mesh = make_mesh((2, 2), ("x", "y"))
    x = np.random.default_rng(8).normal(size=(4, 6))

    def f(b):
        return lax.psum(b * 2, "y"), lax.all_gather(b, "x", tiled=True)
    rows, cols = ft.shard_map(f, mesh=mesh, in_specs=P("x", "y"),
                              out_specs=(P("x"), P(None, "y")))(x)
    assert_close(rows, 2 * (x[:, :3] + x[:, 3:]))
    assert_close(cols, x)


def test_tensor_parallel_matmul_and_mlp_layer_match_dense():
    mesh = make_mesh((4,), ("model",))
    rng = np.random.default_rng(9)
    x, w1, w2 = rng.normal(size=(5, 8)), rng.normal(size=(8, 16)), rng.normal(size=(16, 3))

    def dense(x, w1, w2):
        return fnp.tanh(x @ w1) @ w2

    def column_then_row(x, w1, w2):  # w1 split by columns, w2 by rows: one psum per layer
        return lax.psum(fnp.tanh(x @ w1) @ w2, "model")
    tp = ft.shard_map(column_then_row, mesh=mesh, in_specs=(P(), P(None, "model"),
                                                             P("model", None)), out_specs=P())
    assert_close(tp(x, w1, w2), dense(x, w1, w2))
    grads_tp = ft.grad(lambda *a: (tp(*a) ** 2).sum(), argnums=(0, 1, 2))(x, w1, w2)
    grads = ft.grad(lambda *a: (dense(*a) ** 2).sum(), argnums=(0, 1, 2))(x, w1, w2)
    for a, b in zip(grads_tp, grads):
        assert_close(a, b, rtol=1e-10)

    matmul = ft.shard_map(lambda a, b: lax.psum(a @ b, "model"), mesh=mesh,
                          in_specs=(P(None, "model"), P("model", None)), out_specs=P())
    assert_close(matmul(x, w1), x @ w1)


def test_data_parallel_step_equals_single_device_step():
    mesh = make_mesh((4,), ("data",))
    rng = np.random.default_rng(10)
    w, x = rng.normal(size=(3, 2)), rng.normal(size=(16, 3))

    def dp_step(w, xb):
        loss, g = ft.value_and_grad(_loss)(w, xb)
        return lax.psum(loss, "data"), lax.psum(g, "data")
    step = ft.jit(ft.shard_map(dp_step, mesh=mesh, in_specs=(P(), P("data")),
                               out_specs=(P(), P())))
    loss, g = step(w, x)
    want_loss, want_g = ft.value_and_grad(_loss)(w, x)
    assert_close(loss, want_loss)
    assert_close(g, want_g)


def test_replicated_outputs_and_inputs_differentiate_exactly():
    mesh = make_mesh((4,), ("x",))
    f = ft.shard_map(lambda w, b: (w * 3.0, lax.psum(b * w, "x")), mesh=mesh,
                     in_specs=(P(), P("x")), out_specs=(P(), P()))
    w, b = 2.0 * np.ones(2), np.arange(8.0).reshape(4, 2)

    def loss(w, b):
        r, s = f(w, b)
        return (r ** 2).sum() + (s ** 2).sum()

    def dense(w, b):
        return ((w * 3.0) ** 2).sum() + ((b.sum(0) * w) ** 2).sum()
    for a, c in zip(ft.grad(loss, argnums=(0, 1))(w, b), ft.grad(dense, argnums=(0, 1))(w, b)):
        assert_close(a, c)


def test_vmap_and_jit_of_shard_map():
    mesh = make_mesh((2,), ("x",))
    f = ft.shard_map(lambda b: b / lax.psum(b.sum(), "x"), mesh=mesh, in_specs=P("x"),
                     out_specs=P("x"))
    xs = np.random.default_rng(11).uniform(1, 2, size=(3, 4))
    assert_close(ft.vmap(f)(xs), xs / xs.sum(1, keepdims=True))
    assert_close(ft.jit(ft.vmap(f))(xs), xs / xs.sum(1, keepdims=True))


def test_device_put_and_named_sharding():
    mesh = make_mesh((2, 2), ("x", "y"))
    x = ft.device_put(np.arange(16.0).reshape(4, 4), NamedSharding(mesh, P("x", "y")))
    assert len(x.addressable_shards) == 4
    assert x.addressable_shards[1].data.tolist() == [[2.0, 3.0], [6.0, 7.0]]
    assert x.sharding.shard_shape(x.shape) == (2, 2)
    one = ft.device_put(fnp.ones(3), ft.devices()[3])
    assert one.devices() == {ft.devices()[3]}
    assert_close(one + 1, 2 * np.ones(3))
    assert ft.block_until_ready({"a": one})["a"] is one
    assert Mesh(np.array(ft.devices()[:2]), ("a",)).shape == {"a": 2}


# ---- devices and their number ---------------------------------------------------------------
def test_device_api():
    assert ft.device_count() == ft.local_device_count() == 4
    assert [d.id for d in ft.devices()] == [0, 1, 2, 3]
    assert ft.local_devices()[0].platform == "cpu" and ft.process_index() == 0
    assert ft.process_count() == 1
    with pytest.raises(RuntimeError, match="available backends are"):
        ft.devices("tpu")


def test_num_cpu_devices_changes_at_run_time_and_arrays_survive():
    y = ft.pmap(lambda a: a + 1)(np.zeros((4, 2)))
    ft.config.update("num_cpu_devices", 2)
    assert ft.device_count() == 2
    assert_close(np.asarray(y), np.ones((4, 2)))  # arrays on former devices stay readable
    assert_close(ft.pmap(lambda a: lax.psum(a, "i"), "i")(np.ones((2, 1))), 2 * np.ones((2, 1)))
    with pytest.raises(ValueError, match="positive integer"):
        ft.config.update("num_cpu_devices", 0)


def test_device_count_from_environment():
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-c", "import functrans as ft; "
                          "print(ft.device_count())"], capture_output=True, text=True,
                         env={**__import__("os").environ, "FUNCTRANS_NUM_CPU_DEVICES": "3"},
                         timeout=120)
    assert out.stdout.strip() == "3", out.stderr


# ---- debug callbacks in shards --------------------------------------------------------------
def test_debug_callback_runs_in_every_shard_in_order():
    seen = []
    f = ft.pmap(lambda x: ft.debug.callback(lambda v, i: seen.append((int(i), float(v))),
                                            x, lax.axis_index("i")) or x * 2, "i")
    for _ in range(3):
        seen.clear()
        f(np.arange(4.0))
        assert seen == [(0, 0.0), (1, 1.0), (2, 2.0), (3, 3.0)]


def test_debug_print_under_jit_vmap_grad(capsys):
    ft.jit(lambda x: ft.debug.print("v={}", x) or x)(2.0)
    ft.vmap(lambda x: ft.debug.print("b={}", x))(np.arange(2))
    ft.grad(lambda x: (ft.debug.print("p={}", x), x * x)[1])(3.0)
    assert capsys.readouterr().out.split() == ["v=2.0", "b=0", "b=1", "p=3.0"]


def test_debug_callback_is_never_removed_by_jit_passes():
    seen = []
    ft.jit(lambda x: (ft.debug.callback(seen.append, 1.0), ft.debug.callback(seen.append, 1.0),
                      x)[2])(0.0)
    assert len(seen) == 2


# ---- bad input and faults -------------------------------------------------------------------
def test_mapped_sizes_must_agree():
    with pytest.raises(ValueError, match="inconsistent sizes"):
        ft.pmap(lambda a, b: a + b)(np.ones((2, 3)), np.ones((3, 3)))


def test_more_shards_than_devices():
    with pytest.raises(ValueError, match="more than the 4 available devices"):
        ft.pmap(lambda a: a)(np.ones((5, 2)))
    with pytest.raises(ValueError, match="must match"):
        ft.pmap(lambda a: a, devices=ft.devices()[:2])(np.ones((3, 2)))


def test_axis_name_not_in_scope():
    with pytest.raises(NameError, match="unbound axis name 'j'"):
        ft.pmap(lambda a: lax.psum(a, "j"), "i")(np.ones(2))
    mesh = make_mesh((2,), ("x",))
    with pytest.raises(NameError, match="unbound axis name 'z'"):
        ft.shard_map(lambda a: lax.psum(a, "z"), mesh=mesh, in_specs=P("x"),
                     out_specs=P("x"))(np.ones(2))


def test_specs_that_do_not_divide_or_name_unknown_axes():
    mesh = make_mesh((2,), ("x",))
    f = ft.shard_map(lambda a: a, mesh=mesh, in_specs=P("x"), out_specs=P("x"))
    with pytest.raises(ValueError, match="size 3, which the mesh axes .'x',. .of 2 shards"):
        f(np.ones(3))
    g = ft.shard_map(lambda a: a, mesh=mesh, in_specs=P("y"), out_specs=P("x"))
    with pytest.raises(ValueError, match="names axis 'y'"):
        g(np.ones(2))
    h = ft.shard_map(lambda a: a, mesh=mesh, in_specs=P("x", None, None), out_specs=P("x"))
    with pytest.raises(ValueError, match="has 3 entries but the array has only 1"):
        h(np.ones(2))
    with pytest.raises(ValueError, match="do not divide"):
        ft.device_put(np.ones(3), NamedSharding(mesh, P("x")))


@pytest.mark.timeout(120)
def test_exception_in_one_shard_names_it_and_releases_the_others():
    def check(i):
        if int(i) == 2:
            raise ValueError("bad shard")

    def f(x):  # the other shards go on to wait at the psum
        ft.debug.callback(check, lax.axis_index("i"))
        return lax.psum(fnp.sin(x), "i")
    with pytest.raises(ft.ShardError, match="shard 2 raised ValueError: bad shard"):
        ft.jit(ft.pmap(f, "i"))(np.ones(4))
    # The device threads are free again: the next program runs.
    assert_close(ft.pmap(lambda a: lax.psum(a, "i"), "i")(np.ones(4)), 4 * np.ones(4))


def test_jit_backend_and_device():
    from functools import partial
    with pytest.raises(RuntimeError, match=r"Unknown backend 'rocm'; the available backends "
                                           r"are \['cpu'"):
        ft.jit(fnp.sin, backend="rocm")
    with pytest.raises(RuntimeError, match="Unknown backend 'tpu'"):
        partial(ft.jit, backend="tpu")(fnp.sin)
    f = partial(ft.jit, backend="cpu")(lambda x: x * 2)
    assert_close(f(np.ones(2)), 2 * np.ones(2))
    placed = ft.jit(lambda x: x + 1, device=ft.devices()[2])(np.zeros(2))
    assert placed.devices() == {ft.devices()[2]}
    with pytest.raises(TypeError, match="device must be a Device"):
        ft.jit(fnp.sin, device="cpu:0")


def test_parallel_kernels_in_shards_with_numba_workqueue_layer():
    """Numba's workqueue layer aborts the process when two threads enter prange kernels at
    once; shards must not make it (their big-array kernels use prange)."""
    import subprocess
    import sys
    code = ("import numpy as np, functrans as ft, functrans.numpy as fnp\n"
            "ft.config.update('num_cpu_devices', 2)\n"
            "x = np.linspace(0, 1, 2 << 19).reshape(2, -1)\n"
            "f = ft.pmap(lambda v: fnp.sin(v) * 2 + fnp.tanh(v))\n"
            "for _ in range(10): y = f(x)\n"
            "assert np.allclose(y, np.sin(x) * 2 + np.tanh(x))\n"
            "import numba; print(numba.threading_layer())\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300, env={**__import__("os").environ,
                                           "NUMBA_THREADING_LAYER": "workqueue"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "workqueue"


def test_psum_of_a_python_number_is_a_weak_python_number():
    # JAX: psum(1, axis) is the axis size as a Python number, so float32 stays float32.
    with ft.config.override(num_cpu_devices=2):
        out = ft.pmap(lambda x: x / lax.psum(1, "i"), "i")(np.ones(2, np.float32))
        assert out.dtype == np.float32 and out.tolist() == [0.5, 0.5]
    a, two = ft.vmap(lambda x: lax.psum((x, 2.0), ("i",)), axis_name="i")(np.arange(3.0))
    assert a.tolist() == [3.0] * 3 and two.tolist() == [6.0] * 3


def test_pmap_under_another_transformation_traces_its_function_again():
    # As JAX's pmap: called eagerly, a signature is traced once (its cache); inside
    # eval_shape or jit it is traced afresh each time, so Python side effects (haiku's
    # summaries recording module calls) happen there too.
    calls = []

    def f(x):
        calls.append(1)
        return x * 2

    p = ft.pmap(f)
    x = np.ones((1, 3))
    p(x), p(x)
    assert len(calls) == 1
    assert ft.eval_shape(p, x).shape == (1, 3) and ft.eval_shape(p, x).shape == (1, 3)
    assert len(calls) == 3
    np.testing.assert_array_equal(ft.jit(p)(x), 2 * x)
