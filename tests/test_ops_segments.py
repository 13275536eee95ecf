"""``functrans.ops`` (``jax.ops``): segment_sum / prod / max / min against a NumPy oracle
(``np.add.at`` and friends on an array of the identity), under jit, vmap and grad, and
``import jax.ops`` under ``functrans.as_jax``; plus ``lax.broadcast_to_rank``."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import functrans as ft
import functrans.numpy as fnp
from functrans import lax, ops
from finite_diff import fd_grad

OPS = {"sum": (ops.segment_sum, np.add), "prod": (ops.segment_prod, np.multiply),
       "max": (ops.segment_max, np.maximum), "min": (ops.segment_min, np.minimum)}


def _identity(name, dtype):
    dtype = np.dtype(dtype)
    if name == "sum":
        return 0
    if name == "prod":
        return 1
    if dtype.kind == "f":
        return np.inf if name == "min" else -np.inf
    info = np.iinfo(dtype)
    return info.max if name == "min" else info.min


def oracle(name, data, ids, num_segments):
    data, ids = np.asarray(data), np.asarray(ids)
    out = np.full((num_segments,) + data.shape[1:], _identity(name, data.dtype), data.dtype)
    keep = (ids >= 0) & (ids < num_segments)
    OPS[name][1].at(out, ids[keep], data[keep])
    return out


def _data(rng, shape, dtype):
    if np.dtype(dtype).kind == "i":
        return rng.integers(-5, 6, shape).astype(dtype)
    return rng.normal(size=shape).astype(dtype)


@pytest.mark.parametrize("name", list(OPS))
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32"])
@pytest.mark.parametrize("sorted_ids", [False, True])
def test_matches_numpy_with_dropped_ids_and_empty_segments(name, dtype, sorted_ids):
    rng = np.random.default_rng(0)
    ids = np.array([3, 0, 3, -1, 7, 0, 3, 5], np.int32)  # -1, 7 dropped; 1, 2, 4 empty
    if sorted_ids:
        ids = np.sort(ids)
    data = _data(rng, (8, 2, 3), dtype)  # trailing dims are kept
    got = OPS[name][0](data, ids, num_segments=6, indices_are_sorted=sorted_ids)
    assert got.dtype == np.dtype(dtype) and got.shape == (6, 2, 3)
    np.testing.assert_allclose(np.asarray(got), oracle(name, data, ids, 6), rtol=1e-6)


@pytest.mark.parametrize("name", list(OPS))
def test_empty_segments_hold_the_identity(name):
    got = OPS[name][0](fnp.zeros(0, "float32"), fnp.zeros(0, "int32"), num_segments=2)
    assert got.tolist() == [_identity(name, "float32")] * 2
    ints = OPS[name][0](fnp.zeros(0, "int32"), fnp.zeros(0, "int32"), num_segments=1)
    assert ints.tolist() == [_identity(name, "int32")] and ints.dtype == np.int32


def test_num_segments_inferred_outside_jit_and_required_inside():
    data, ids = fnp.arange(4.0), fnp.array([0, 2, 2, 1])
    assert ops.segment_sum(data, ids).tolist() == [0.0, 3.0, 3.0]
    with pytest.raises(ft.ConcretizationTypeError, match="num_segments"):
        ft.jit(lambda d, i: ops.segment_sum(d, i))(data, ids)
    # static num_segments under jit
    f = ft.jit(ops.segment_max, static_argnames="num_segments")
    assert f(data, ids, num_segments=4).tolist() == [0.0, 3.0, 2.0, -np.inf]
    with pytest.raises(ValueError, match="non-negative"):
        ops.segment_sum(data, ids, num_segments=-1)


def test_modes_and_buckets():
    data, ids = np.arange(1.0, 7.0), np.array([0, 1, 1, 0, 9, -3])
    assert ops.segment_sum(data, ids, 2).tolist() == [5.0, 5.0]
    assert ops.segment_sum(data, ids, 2, mode="clip").tolist() == [11.0, 10.0]
    for name in OPS:
        np.testing.assert_allclose(OPS[name][0](data, ids, 3, bucket_size=4),
                                   oracle(name, data, ids, 3), rtol=1e-12)


@pytest.mark.parametrize("name", list(OPS))
def test_jit(name):
    rng = np.random.default_rng(1)
    data, ids = _data(rng, (10, 3), "float32"), rng.integers(-1, 5, 10).astype("int32")
    got = ft.jit(lambda d, i: OPS[name][0](d, i, num_segments=4))(data, ids)
    np.testing.assert_allclose(np.asarray(got), oracle(name, data, ids, 4), rtol=1e-6)


@pytest.mark.parametrize("name", list(OPS))
@pytest.mark.parametrize("in_axes", [(0, None), (None, 0), (0, 0), (1, 0)])
def test_vmap(name, in_axes):
    rng = np.random.default_rng(2)
    data = _data(rng, (3, 6, 2), "float64")
    ids = rng.integers(-1, 5, (3, 6))
    d = data if in_axes[0] == 0 else (np.moveaxis(data, 0, 1) if in_axes[0] == 1 else data[0])
    i = ids if in_axes[1] == 0 else ids[0]
    got = ft.jit(ft.vmap(lambda d, i: OPS[name][0](d, i, num_segments=4), in_axes))(d, i)
    want = np.stack([oracle(name, data[b] if in_axes[0] is not None else data[0],
                            ids[b] if in_axes[1] is not None else ids[0], 4)
                     for b in range(3)])
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12)



@pytest.mark.parametrize("name", ["sum", "prod", "max", "min"])
def test_grad_matches_finite_differences(name):
    """float64; central differences with step 1e-6: agreement to 1e-6 (distinct values, so
    max/min have no ties)."""
    rng = np.random.default_rng(3)
    data = rng.uniform(0.5, 2.0, (7, 2))
    ids = np.array([2, 0, 2, 5, 0, 2, -1])
    w = rng.normal(size=(4, 2))

    def loss(d):  # empty segments (+-inf for max/min) count 0
        out = OPS[name][0](d, ids, num_segments=4)
        return fnp.sum(fnp.where(fnp.isfinite(out), out, 0.0) * w)

    def loss_np(d):
        out = oracle(name, d, ids, 4)
        return float(np.sum(np.where(np.isfinite(out), out, 0.0) * w))

    got = ft.grad(loss)(data)
    np.testing.assert_allclose(np.asarray(got), fd_grad(loss_np, data), atol=1e-6)
    # rows with dropped ids get no gradient
    assert np.all(np.asarray(got)[-1] == 0) and np.all(np.asarray(got)[3] == 0)


def test_grad_under_jit_and_vmap():
    data = np.arange(1.0, 7.0)
    ids = np.array([[0, 0, 1, 1, 2, 2], [2, 1, 0, 2, 1, 0]])
    g = ft.jit(ft.vmap(ft.grad(lambda d, i: ops.segment_prod(d, i, 3).sum()), (None, 0)))(
        data, ids)
    want = [[2, 1, 4, 3, 6, 5], [4, 5, 6, 1, 2, 3]]
    np.testing.assert_allclose(np.asarray(g), want)


@pytest.mark.parametrize("name", list(OPS))
def test_scalar_data_is_every_rows_value(name):
    # As in JAX (jraph's attention takes segment_max of the constant 1.0): a scalar is
    # broadcast to the ids' shape; the oracle is the same reduction of that broadcast row
    # vector, and its gradient the derivative of the broadcast (d/dx of segment_sum(x) summed
    # is the count of kept ids, 7 here).
    ids = np.array([0, 0, 2, 1, 3, 2, 1, 9], np.int32)
    got = OPS[name][0](np.float32(3.0), ids, 7)
    want = oracle(name, np.full(8, 3.0, np.float32), ids, 7)
    assert got.shape == (7,) and got.dtype == np.float32
    np.testing.assert_array_equal(np.asarray(got), want)
    np.testing.assert_array_equal(np.asarray(ft.jit(lambda d: OPS[name][0](d, ids, 7))(3.0)),
                                  want)
    if name == "sum":
        assert float(ft.grad(lambda d: ops.segment_sum(d, ids, 7).sum())(3.0)) == 7.0


@given(n=st.integers(0, 8), trailing=st.lists(st.integers(0, 3), max_size=2),
       num_segments=st.integers(0, 5), name=st.sampled_from(list(OPS)),
       dtype=st.sampled_from(["float32", "float64", "int32"]), seed=st.integers(0, 2**16))
def test_drawn_shapes(n, trailing, num_segments, name, dtype, seed):
    rng = np.random.default_rng(seed)
    data = _data(rng, (n, *trailing), dtype)
    ids = rng.integers(-2, num_segments + 3, n).astype("int32")
    got = OPS[name][0](data, ids, num_segments=num_segments)
    want = oracle(name, data, ids, num_segments)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)


def test_broadcast_to_rank():
    assert lax.broadcast_to_rank(fnp.arange(3), 3).shape == (1, 1, 3)
    assert lax.broadcast_to_rank(fnp.ones((2, 3)), 1).shape == (2, 3)
    assert lax.broadcast_to_rank(2.0, 2).tolist() == [[2.0]]
    assert ft.jit(lambda x: lax.broadcast_to_rank(x, 2))(fnp.ones(3)).shape == (1, 3)


def test_jax_ops_under_as_jax(tmp_path):
    for name in ("jax", "jaxlib"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text(
            f"raise RuntimeError('the installed {name} was imported')\n")
    (tmp_path / "prog.py").write_text(textwrap.dedent("""
        import jax, jax.numpy as jnp
        import jax.ops
        from jax.ops import segment_max
        out = jax.ops.segment_sum(jnp.array([1.0, 2.0, 3.0]), jnp.array([1, 1, 0]), 2)
        jitted = jax.jit(jax.ops.segment_sum, static_argnums=2)(jnp.ones(3), jnp.arange(3), 4)
        print(out.tolist(), out.dtype, jitted.tolist(), jax.ops is jax.ops,
              segment_max(jnp.ones(2), jnp.array([0, 0]), num_segments=1).tolist(),
              jax.lax.broadcast_to_rank(jnp.ones(2), 3).shape)
    """))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path)] + sys.path))
    env.pop("JAX_ENABLE_X64", None)
    run = subprocess.run([sys.executable, "-m", "functrans.as_jax", "prog.py"], env=env,
                         cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.split() == ["[3.0,", "3.0]", "float32", "[1.0,", "1.0,", "1.0,", "0.0]",
                                  "True", "[1.0]", "(1,", "1,", "2)"]
