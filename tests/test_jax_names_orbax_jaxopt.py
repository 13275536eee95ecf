"""The names orbax and jaxopt import from JAX: mesh_utils, pjit, the older shard_map module,
jax.extend.backend, tree_util.flatten_one_level and lax.approx_max_k/approx_min_k."""
from __future__ import annotations

import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp
from functrans import lax, tree_util
from functrans.sharding import P


# ---- lax.approx_max_k / approx_min_k --------------------------------------------------------
def test_approx_max_k_and_min_k_are_exact_top_k_along_the_reduction_dimension():
    x = np.array([[1.0, 5.0, 3.0, 5.0], [4.0, 2.0, 6.0, 0.0], [7.0, 1.0, 2.0, 8.0]])
    vals, inds = lax.approx_max_k(fnp.array(x), 2)
    tv, ti = lax.top_k(fnp.array(x), 2)
    np.testing.assert_array_equal(vals, tv)
    np.testing.assert_array_equal(inds, ti)
    assert inds.dtype == np.int32
    vals, inds = lax.approx_max_k(fnp.array(x), 1, reduction_dimension=0, recall_target=0.5,
                                  reduction_input_size_override=10, aggregate_to_topk=False)
    np.testing.assert_array_equal(vals, x.max(0, keepdims=True))
    np.testing.assert_array_equal(inds, x.argmax(0)[None])
    vals, inds = lax.approx_min_k(fnp.array(x), 2, reduction_dimension=1)
    np.testing.assert_array_equal(inds, np.argsort(x, 1, kind="stable")[:, :2])
    np.testing.assert_array_equal(vals, np.sort(x, 1)[:, :2])
    vals, _ = lax.approx_min_k(fnp.array([3, -2, 7], dtype=fnp.int32), 1)
    assert vals.tolist() == [-2]
    with pytest.raises(ValueError, match="recall_target"):
        lax.approx_max_k(fnp.array(x), 1, recall_target=0.0)
    with pytest.raises(ValueError, match="k=9"):
        lax.approx_min_k(fnp.array(x), 9)


def test_approx_max_k_derivatives_follow_top_k():
    x = fnp.array([[1.0, 5.0, 3.0], [4.0, 2.0, 6.0]])
    w = fnp.array([[2.0, 3.0], [5.0, 7.0]])
    g_approx = ft.grad(lambda v: (lax.approx_max_k(v, 2)[0] * w).sum())(x)
    g_top = ft.grad(lambda v: (lax.top_k(v, 2)[0] * w).sum())(x)
    np.testing.assert_array_equal(g_approx, g_top)
    g_min = ft.jit(ft.grad(lambda v: lax.approx_min_k(v, 1, reduction_dimension=0)[0].sum()))(x)
    np.testing.assert_array_equal(g_min, [[1.0, 0.0, 1.0], [0.0, 1.0, 0.0]])
    _, tangent = ft.jvp(lambda v: lax.approx_max_k(v, 1)[0], (x,), (x * 10,))
    np.testing.assert_array_equal(tangent, [[50.0], [60.0]])
    batched = ft.vmap(lambda r: lax.approx_min_k(r, 1)[1])(x)
    np.testing.assert_array_equal(batched, [[0], [1]])


# ---- tree_util.flatten_one_level ------------------------------------------------------------
def test_flatten_one_level_is_public_in_tree_util():
    assert tree_util.flatten_one_level({"b": 2, "a": [1]}) == (([1], 2), ("a", "b"))
    with pytest.raises(ValueError):
        tree_util.flatten_one_level(1.0)



@pytest.fixture
def four_devices():
    with ft.config.override(num_cpu_devices=4):
        yield ft.devices()


# ---- jax.experimental.mesh_utils ------------------------------------------------------------
def test_create_device_mesh_shapes_the_devices_in_order(four_devices):
    from functrans.experimental import mesh_utils
    mesh = mesh_utils.create_device_mesh((2, 2))
    assert mesh.shape == (2, 2) and mesh.dtype == object
    assert mesh.ravel().tolist() == four_devices
    assert mesh_utils.create_device_mesh([2], four_devices[2:]).tolist() == four_devices[2:]
    with pytest.raises(ValueError, match="must equal the product of mesh_shape"):
        mesh_utils.create_device_mesh((3,))
    m = ft.sharding.Mesh(mesh_utils.create_device_mesh((4,)), ("x",))
    out = ft.shard_map(lambda b: lax.psum(b.sum(), "x"), mesh=m, in_specs=P("x"),
                       out_specs=P())(fnp.arange(8.0))
    assert float(out) == 28.0


def test_create_hybrid_device_mesh_tiles_granules_of_devices(four_devices):
    from functrans.experimental import mesh_utils
    mesh = mesh_utils.create_hybrid_device_mesh((2, 2), (1, 1), process_is_granule=True)
    assert mesh.shape == (2, 2) and mesh.ravel().tolist() == four_devices
    with pytest.raises(ValueError, match="slice_index"):  # no TPU slices, as on JAX's CPU
        mesh_utils.create_hybrid_device_mesh((2, 2), (1, 1))
    with pytest.raises(ValueError, match="granules 1 must equal"):
        mesh_utils.create_hybrid_device_mesh((2, 1), (2, 1), process_is_granule=True)


# ---- jax.experimental.pjit ------------------------------------------------------------------
def test_pjit_is_jit_with_its_arguments(four_devices):
    from functrans.experimental.pjit import pjit
    mesh = ft.sharding.make_mesh((4,), ("x",))
    sharded = ft.sharding.NamedSharding(mesh, P("x"))
    f = pjit(lambda x, n: x * n, in_shardings=(sharded,), out_shardings=sharded,
             static_argnums=1, donate_argnums=0)
    out = f(fnp.arange(8.0), 3)
    np.testing.assert_array_equal(out, np.arange(8.0) * 3)
    assert out.sharding == sharded
    assert f.lower(fnp.arange(8.0), 3) is not None  # a jit-wrapped function
    with pytest.raises(NotImplementedError, match="abstracted_axes"):
        pjit(lambda x: x, abstracted_axes=({0: "n"},))


# ---- jax.experimental.shard_map -------------------------------------------------------------
def test_experimental_shard_map_takes_the_older_argument_names(four_devices):
    from functrans.experimental.shard_map import shard_map
    mesh = ft.sharding.make_mesh((4,), ("x",))
    out = shard_map(lambda b: lax.psum(b.sum(), "x"), mesh, P("x"), P(),
                    check_rep=False)(fnp.arange(8.0))
    assert float(out) == 28.0
    mesh2 = ft.sharding.make_mesh((2, 2), ("x", "y"))
    # auto={"y"}: f is mapped over x only, so each shard sees half of the rows
    shapes = []
    f = shard_map(lambda b: (shapes.append(b.shape), lax.psum(b, "x"))[1], mesh2, P("x"), P(),
                  auto=frozenset({"y"}))
    np.testing.assert_array_equal(f(fnp.ones((4, 2))), np.full((2, 2), 2.0))
    assert shapes == [(2, 2)]
    with pytest.raises(ValueError, match="auto"):
        shard_map(lambda b: b, mesh2, P(), P(), auto=frozenset({"z"}))


# ---- jax.extend.backend ---------------------------------------------------------------------
def test_extend_backend_get_backend_answers_as_a_jax_client(four_devices):
    from functrans.extend import backend
    b = backend.get_backend()
    assert b is backend.get_backend("cpu") and b.platform == "cpu"
    assert b.devices() == four_devices and b.device_count() == 4
    assert b.local_devices() == four_devices and b.local_device_count() == 4
    assert b.process_index() == 0
    with pytest.raises(RuntimeError, match="Unknown backend 'tpu'"):
        backend.get_backend("tpu")


def test_extend_backend_clear_backends_starts_the_devices_again():
    from functrans.core import devices
    from functrans.extend import backend
    ft.devices()
    backend.clear_backends()
    assert not devices.initialized()
    with ft.config.override(num_cpu_devices=3):
        assert backend.get_backend().device_count() == 3 and devices.initialized()


# ---- under as_jax: the modules orbax and jaxopt import --------------------------------------
def test_orbax_and_jaxopt_imports_resolve_under_as_jax(tmp_path):
    import os
    import subprocess
    import sys
    import textwrap
    for name in ("jax", "jaxlib"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text("raise RuntimeError('real jax')\n")
    (tmp_path / "prog.py").write_text(textwrap.dedent("""
        import jax, jax.numpy as jnp
        from jax.experimental import mesh_utils
        from jax.experimental.pjit import pjit
        from jax.experimental.shard_map import shard_map
        from jax.extend import backend
        from jax.sharding import Mesh, PartitionSpec as P
        mesh = Mesh(mesh_utils.create_device_mesh((2,)), ("x",))
        f = shard_map(lambda b: jax.lax.psum(b.sum(), "x"), mesh, P("x"), P())
        print(float(pjit(f)(jnp.arange(4.0))), backend.get_backend().platform,
              jax.tree_util.flatten_one_level([1, 2])[0],
              jax.lax.approx_max_k(jnp.array([1.0, 3.0, 2.0]), 2)[1].tolist())
    """))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path)] + sys.path),
               XLA_FLAGS="--xla_force_host_platform_device_count=2")
    run = subprocess.run([sys.executable, "-m", "functrans.as_jax", str(tmp_path / "prog.py")],
                         env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.split() == ["6.0", "cpu", "[1,", "2]", "[1,", "2]"]
