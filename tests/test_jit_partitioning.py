"""jit over sharded arguments (transforms/partition): the partitioned program equals the
unpartitioned one for every primitive family, on meshes 1x2, 2x1 and 2x2 with hypothesis-drawn
specs; grad and vmap of sharded programs; the layouts and collectives chosen for data, fully
sharded data and tensor parallelism; errors for meshes and specs that do not fit.

Tolerances: float64 values compared to 1e-12 relative: a partitioned sum adds per-shard partial
sums (at most 4 of them here) where the unpartitioned one adds the elements in one order, and
reassociating at most 64 float64 terms of size <= ~1e3 stays below 1e-12 relative; integer,
sorted and gathered values are compared exactly.
"""
import pathlib
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import functrans as ft
import functrans.numpy as fnp
from functrans import lax
from functrans.core.errors import ShardingTypeError
from functrans.sharding import AxisType, NamedSharding, PartitionSpec as P
from functrans.transforms.partition.partitioner import (MeshMismatchError, mesh_and_specs,
                                                         partitioned)

RTOL = 1e-12


@pytest.fixture(autouse=True)
def four_devices():
    with ft.config.override(num_cpu_devices=4):
        yield


def _plan(fn, *args):
    """The Partitioned executable jit builds for ``fn`` at these (placed) arguments."""
    jaxpr = ft.jit(fn).trace(*args).jaxpr
    leaves = ft.tree_util.tree_leaves(args)
    return partitioned(jaxpr, *mesh_and_specs(jaxpr, leaves), "test")


def _collectives(plan):
    return [e.prim.name for e in plan.per_shard.eqns
            if e.prim.name in ("psum", "all_gather", "psum_scatter", "pmax", "pmin")]


# ---- every primitive family: partitioned == unpartitioned ----------------------------------
def _conv(a, b):
    return lax.conv_general_dilated(a.reshape(1, 1, 4, 4), b[:3, :3].reshape(1, 1, 3, 3),
                                    (1, 1), "SAME")


PROGRAMS = {
    "elementwise": lambda a, b: fnp.sin(a) * b + 1.0,
    "elementwise, transposed operand": lambda a, b: fnp.maximum(a, b.T) - fnp.exp(-a * a),
    "broadcast": lambda a, b: a + b[0] * b.sum(0, keepdims=True),
    "dot": lambda a, b: a @ b,
    "dot, contracting both": lambda a, b: fnp.einsum("ij,ij->", a, b),
    "dot, batch": lambda a, b: fnp.einsum("bi,bj->bij", a, b),
    "dot chain": lambda a, b: fnp.tanh(a @ b) @ b.T,
    "sum": lambda a, b: (a.sum(0), a.sum(1), a.sum()),
    "max, min": lambda a, b: (a.max(1), b.min(0), a.max()),
    "prod, any, argmax": lambda a, b: (a.prod(0), fnp.any(a > 0.5, 1), fnp.argmax(b, 0)),
    "reshape": lambda a, b: (a.reshape(2, 8), a.reshape(16), b.reshape(2, 2, 4).sum(1)),
    "reshape, transpose": lambda a, b: a.reshape(2, 2, 4).transpose(1, 0, 2) * 2.0,
    "cumulative, sort": lambda a, b: (fnp.cumsum(a, 1), fnp.sort(b, 0), lax.cummax(a, 0)),
    "rev, slice, pad": lambda a, b: (a[::-1], a[1:3], fnp.pad(b, ((1, 1), (0, 0))), b[:, ::2]),
    "concatenate": lambda a, b: fnp.concatenate([a, b], 1) * 3.0,
    "dynamic slices": lambda a, b: (lax.dynamic_slice(a, (1, 0), (2, 4)),
                                    lax.dynamic_update_slice(a, b[:2], (1, 0))),
    "gather, scatter": lambda a, b: (a[fnp.array([2, 0, 1])], a.at[1].set(b[0]),
                                     b.at[:, 2].add(1.0)),
    "iota": lambda a, b: a + fnp.arange(4.0) + lax.iota(np.float64, 4)[:, None],
    "cond": lambda a, b: lax.cond(a.sum() > 0, lambda: a @ b, lambda: a - b),
    "loops": lambda a, b: lax.fori_loop(0, 3, lambda i, v: v @ b * 0.5, a),
    "scan": lambda a, b: lax.scan(lambda c, r: (c + r, c * r), b[0], a),
    "convolution": _conv,
    "random": lambda a, b: a * ft.random.normal(ft.random.PRNGKey(0), (4, 4)),
    "with_sharding_constraint": lambda a, b: lax.with_sharding_constraint(
        a * 2.0, NamedSharding(a_mesh(), P(None, "y"))) @ b,
}

_MESHES = {}


def a_mesh():
    return _MESHES["current"]


def _mesh(shape):
    """A mesh of Auto axes: jit chooses layouts and reshards (JAX's automatic mode)."""
    return ft.make_mesh(shape, ("x", "y"), axis_types=(AxisType.Auto,) * 2)


def _spec(draw, rank):
    """A spec for a (4,) * rank array: each mesh axis used at most once."""
    parts, used = [], set()
    for _ in range(rank):
        options = [None] + [a for a in ("x", "y", ("x", "y"))
                            if not set((a,) if isinstance(a, str) else a) & used]
        p = draw(st.sampled_from(options))
        used |= set((p,) if isinstance(p, str) else (p or ()))
        parts.append(p)
    return P(*parts)


@st.composite
def _cases(draw):
    shape = draw(st.sampled_from([(1, 2), (2, 1), (2, 2)]))
    name = draw(st.sampled_from(sorted(PROGRAMS)))
    return shape, name, _spec(draw, 2), _spec(draw, 2)


def _assert_same(got, want):
    for g, w in zip(ft.tree_util.tree_leaves(got), ft.tree_util.tree_leaves(want)):
        assert g.shape == w.shape and g.dtype == w.dtype
        if np.issubdtype(w.dtype, np.inexact):
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=RTOL, atol=RTOL)
        else:
            np.testing.assert_array_equal(np.asarray(g), np.asarray(w))


def _assert_placed(out, mesh):
    """Each result lives on the mesh and each device's shard is the block its spec names."""
    for o in ft.tree_util.tree_leaves(out):
        assert isinstance(o.sharding, NamedSharding) and o.sharding.mesh == mesh
        value = np.asarray(o)
        for shard in o.addressable_shards:
            np.testing.assert_array_equal(np.asarray(shard.data), value[shard.index])


def _check(shape, name, spec_a, spec_b):
    mesh = _MESHES["current"] = _mesh(shape)
    rng = np.random.default_rng(len(name))
    a, b = rng.normal(size=(4, 4)), rng.normal(size=(4, 4))
    fn = PROGRAMS[name]
    want = ft.jit(fn)(a, b)
    placed = [ft.device_put(v, NamedSharding(mesh, s)) for v, s in ((a, spec_a), (b, spec_b))]
    got = ft.jit(fn)(*placed)
    _assert_same(got, want)
    _assert_placed(got, mesh)


@settings(max_examples=250, deadline=None)
@given(_cases())
def test_partitioned_programs_equal_unpartitioned_ones(case):
    _check(*case)


@pytest.mark.parametrize("specs", [(P("x", "y"), P("y", "x")), (P(None, ("x", "y")), P()),
                                   (P(("y", "x")), P(None, "x"))], ids=str)
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_every_family_on_a_2x2_mesh(name, specs):
    _check((2, 2), name, *specs)


def test_float32_programs_agree_to_float32_rounding():
    # Partial sums of 4 float32 blocks reassociate a 64-term sum: 1e-5 relative covers it.
    mesh = _mesh((2, 2))
    rng = np.random.default_rng(0)
    a = rng.normal(size=(8, 16)).astype(np.float32)
    w = rng.normal(size=(16, 4)).astype(np.float32)
    fn = lambda a, w: fnp.mean(fnp.tanh(a @ w) ** 2)  # noqa: E731
    got = ft.jit(fn)(ft.device_put(a, NamedSharding(mesh, P("x", "y"))),
                     ft.device_put(w, NamedSharding(mesh, P("y"))))
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, ft.jit(fn)(a, w), rtol=1e-5)


# ---- grad and vmap of sharded programs -----------------------------------------------------
def _loss(w, x):
    return fnp.mean(fnp.tanh(x @ w[0]) @ w[1])


@pytest.mark.parametrize("how", ["jit(grad)", "grad(jit)", "vmap(jit)", "jit(vmap(grad))"])
def test_grad_and_vmap_of_sharded_programs(how):
    mesh = _mesh((2, 2))
    rng = np.random.default_rng(1)
    w = [rng.normal(size=(6, 4)), rng.normal(size=(4, 2))]
    x = rng.normal(size=(8, 6))
    ws = [ft.device_put(w[0], NamedSharding(mesh, P(None, "y"))),
          ft.device_put(w[1], NamedSharding(mesh, P("y")))]
    xs = ft.device_put(x, NamedSharding(mesh, P("x")))
    if how == "jit(grad)":
        f = ft.jit(ft.grad(_loss))
    elif how == "grad(jit)":
        f = ft.grad(ft.jit(_loss))
    elif how == "vmap(jit)":
        f = ft.vmap(ft.jit(_loss), in_axes=(None, 0))
        x, xs = x.reshape(2, 4, 6), ft.device_put(x.reshape(2, 4, 6),
                                                  NamedSharding(mesh, P("x")))
    else:
        f = ft.jit(ft.vmap(ft.grad(_loss), in_axes=(None, 0)))
        x, xs = x.reshape(2, 4, 6), ft.device_put(x.reshape(2, 4, 6),
                                                  NamedSharding(mesh, P("x")))
    _assert_same(f(ws, xs), f(w, x))


def test_cotangents_of_sharded_inputs_keep_their_sharding():
    mesh = _mesh((2, 2))
    w = ft.device_put(np.ones((4, 8)), NamedSharding(mesh, P("x", "y")))
    g = ft.jit(ft.grad(lambda w: fnp.sum(fnp.sin(w) ** 2)))(w)
    assert g.sharding == w.sharding


# ---- what the partitioner chooses for the standard patterns --------------------------------
def _mlp_step(params, x):
    def loss(p):
        return fnp.mean((fnp.tanh(x @ p[0]) @ p[1]) ** 2)
    grads = ft.grad(loss)(params)
    return [p - 0.1 * g for p, g in zip(params, grads)]


def _pattern(w_specs, x_spec):
    mesh = _mesh((2, 1))
    rng = np.random.default_rng(2)
    w = [rng.normal(size=(16, 8)), rng.normal(size=(8, 4))]
    x = rng.normal(size=(32, 16))
    ws = [ft.device_put(v, NamedSharding(mesh, s)) for v, s in zip(w, w_specs)]
    xs = ft.device_put(x, NamedSharding(mesh, x_spec))
    out = ft.jit(_mlp_step)(ws, xs)
    _assert_same(out, ft.jit(_mlp_step)(w, x))
    return out, _plan(_mlp_step, ws, xs)


def test_data_parallelism_all_reduces_the_gradients():
    out, plan = _pattern([P(), P()], P("x"))
    assert [o.sharding.spec for o in out] == [P(), P()]
    assert set(_collectives(plan)) == {"psum"}  # gradients summed; nothing gathered


def test_fully_sharded_data_parallelism_gathers_weights_and_reduce_scatters_gradients():
    out, plan = _pattern([P("x"), P("x")], P("x"))
    assert [o.sharding.spec for o in out] == [P("x"), P("x")]  # updated shards stay sharded
    names = _collectives(plan)
    assert "all_gather" in names and names.count("psum_scatter") == 2 and "psum" not in names


def test_megatron_tensor_parallelism_splits_columns_then_rows():
    out, plan = _pattern([P(None, "x"), P("x")], P())
    assert [o.sharding.spec for o in out] == [P(None, "x"), P("x")]
    assert set(_collectives(plan)) == {"psum"}  # the row-parallel layer's partial sums
    hidden = [lay.spec for v, lay in plan.layouts.items() if v.aval.shape == (32, 8)]
    assert hidden and all(s == ((), ("x",)) for s in hidden)  # activations split by column


def test_output_shardings_match_jax():
    # JAX 0.10.2 (Auto axes) prints these specs for the same programs and placements.
    mesh = ft.make_mesh((2,), ("x",), axis_types=(AxisType.Auto,))
    x = ft.device_put(fnp.arange(8.0).reshape(4, 2), NamedSharding(mesh, P("x")))
    w = ft.device_put(fnp.ones((2, 6)), NamedSharding(mesh, P(None, "x")))
    assert ft.jit(lambda a: fnp.sin(a) * 2)(x).sharding.spec == P("x")
    assert ft.jit(lambda a, w: a @ w)(x, w).sharding.spec == P(None, "x")
    assert ft.jit(lambda a: a.sum(0))(x).sharding.spec == P()
    assert ft.jit(lambda a: a.T)(x).sharding.spec == P(None, "x")


def test_a_constraint_lays_out_a_replicated_input():
    mesh = _mesh((2, 2))
    s = NamedSharding(mesh, P(None, "y"))
    f = ft.jit(lambda a: lax.with_sharding_constraint(a * 2.0, s) + 1.0)
    out = f(np.ones((4, 4)))
    assert out.sharding == s
    np.testing.assert_array_equal(out, np.full((4, 4), 3.0))


# ---- Explicit axes: shardings are part of the types --------------------------------------
def _explicit(*arrays_and_specs):
    mesh = ft.make_mesh((2,), ("x",))  # Explicit by default, as in JAX 0.10.2
    return [ft.device_put(np.ones(shape, np.float32), NamedSharding(mesh, spec))
            for shape, spec in arrays_and_specs]


def test_explicit_axes_follow_jax_result_shardings():
    # JAX 0.10.2 on the same placements (make_mesh's default Explicit axes).
    a, b, w, r = _explicit(((4, 4), P("x", None)), ((4, 4), P(None, "x")),
                           ((4, 6), P("x", None)), ((4, 6), P()))
    assert str(ft.typeof(a)) == "float32[4@x,4]"
    assert ft.jit(lambda a, w: a @ w)(a, w).sharding.spec == P("x", None)  # w gathered
    assert ft.jit(lambda a, r: a @ r)(a, r).sharding.spec == P("x", None)
    assert ft.jit(lambda a: a.sum(0))(a).sharding.spec == P(None)
    assert ft.jit(lambda a: a.reshape(16))(a).sharding.spec == P("x")
    np.testing.assert_array_equal(ft.jit(lambda a, w: a @ w)(a, w), np.full((4, 6), 4.0))


@pytest.mark.parametrize("fn, which, message", [
    (lambda a, b: a + b, (0, 1), r"add operation with inputs: f32\[4@x,4\], f32\[4,4@x\] "
     r"produces an illegally sharded result: f32\[4@x,4@x\] \(at test_jit_partitioning"),
    (lambda a, b: b @ a, (0, 1), r"Contracting dimensions are sharded .* "
     r"lhs_contracting_spec=\('x',\) and rhs_contracting_spec=\('x',\)"),
    (lambda a, b: b.reshape(2, 8), (0, 1), r"This reshape is not supported.* operand type: "
     r"float32\[4,4@x\], new sizes: \(2, 8\)"),
    (lambda a, c: a * c, (0, 2), r"mul got incompatible shardings for broadcasting: "
     r"\('x', None\), \('y', None\)"),
], ids=["add", "dot", "reshape", "mul"])
def test_explicit_axes_reject_ambiguous_operations_naming_both_operands(fn, which, message):
    mesh = ft.make_mesh((2, 2), ("x", "y"))
    arrays = [ft.device_put(np.ones((4, 4), np.float32), NamedSharding(mesh, s))
              for s in (P("x", None), P(None, "x"), P("y", None))]
    with pytest.raises(ShardingTypeError, match=message):
        ft.jit(fn)(*[arrays[i] for i in which])


def test_programs_with_their_own_shard_map_are_not_partitioned_again():
    mesh = ft.make_mesh((2,), ("x",))
    inner = ft.shard_map(lambda b: lax.psum(b, "x"), mesh=mesh, in_specs=P("x"),
                         out_specs=P())
    x = ft.device_put(fnp.arange(4.0), NamedSharding(mesh, P("x")))
    np.testing.assert_array_equal(ft.jit(inner)(x), [2.0, 4.0])


# ---- errors --------------------------------------------------------------------------------
def test_arguments_on_different_meshes_raise_naming_both():
    a = ft.device_put(np.ones(4), NamedSharding(ft.make_mesh((2,), ("x",)), P("x")))
    devs = np.array(ft.devices()[2:4])
    b = ft.device_put(np.ones(4), NamedSharding(ft.sharding.Mesh(devs, ("x",)), P("x")))
    with pytest.raises(MeshMismatchError, match="argument 0 is placed on .* but argument 1"):
        ft.jit(lambda a, b: a + b)(a, b)


def test_a_constraint_on_another_mesh_than_the_arguments_raises():
    a = ft.device_put(np.ones(4), NamedSharding(ft.make_mesh((2,), ("x",)), P("x")))
    other = ft.sharding.Mesh(np.array(ft.devices()[2:4]), ("x",))
    f = ft.jit(lambda a: lax.with_sharding_constraint(a, NamedSharding(other, P("x"))))
    with pytest.raises(ValueError, match="with_sharding_constraint names"):
        f(a)


def test_a_constraint_that_does_not_divide_raises_at_the_call():
    s = NamedSharding(_mesh((2, 2)), P("x"))
    with pytest.raises(ValueError, match="dimension 0 .* size 3"):
        ft.jit(lambda a: lax.with_sharding_constraint(a, s))(np.ones(3))


# ---- across processes ----------------------------------------------------------------------
MPIEXEC = pathlib.Path(sys.executable).parent / "mpiexec"


@pytest.mark.skipif(not MPIEXEC.exists(), reason="needs the mpi extra's mpiexec; the README's "
                    "test command installs it")
@pytest.mark.timeout(300)
def test_partitioned_steps_across_two_processes():
    script = pathlib.Path(__file__).parent / "mpi" / "partitioned.py"
    out = subprocess.run([str(MPIEXEC), "-n", "2", sys.executable, "-m", "mpi4py", str(script)],
                         capture_output=True, text=True, timeout=280)
    assert out.returncode == 0, out.stdout + out.stderr
    for rank in (0, 1):
        assert f"process {rank}: partitioned checks passed" in out.stdout


# ---- whole programs: hypothesis-built chains of families -----------------------------------
STEPS = {
    "sin": lambda a, b: fnp.sin(a),
    "scale": lambda a, b: a * 0.5 - 1.0,
    "add": lambda a, b: a + b,
    "mul": lambda a, b: a * b.T,
    "maximum": lambda a, b: fnp.maximum(a, b),
    "matmul": lambda a, b: fnp.tanh(a @ b) * 0.5,
    "matmul_t": lambda a, b: a.T @ b * 0.25,
    "transpose": lambda a, b: a.T,
    "sum_back": lambda a, b: a - a.sum(0, keepdims=True) * 0.25,
    "max_back": lambda a, b: a - a.max(1, keepdims=True),
    "reshape": lambda a, b: (a.reshape(2, 8) * 2.0).reshape(4, 4),
    "flatten": lambda a, b: a.reshape(16)[::-1].reshape(4, 4),
    "cumsum": lambda a, b: fnp.cumsum(a, 0) * 0.25,
    "slice_pad": lambda a, b: fnp.pad(a[1:3], ((1, 1), (0, 0))),
    "concat": lambda a, b: fnp.concatenate([a[:, :2], b[:, 2:]], 1),
    "constrain": lambda a, b: lax.with_sharding_constraint(
        a, NamedSharding(a_mesh(), P("y", "x"))),
}


@settings(max_examples=60, deadline=None)
@given(st.sampled_from([(1, 2), (2, 1), (2, 2)]),
       st.lists(st.sampled_from(sorted(STEPS)), min_size=3, max_size=10),
       st.data())
def test_random_programs_partition_as_they_compute(shape, steps, data):
    mesh = _MESHES["current"] = _mesh(shape)

    def program(a, b):
        for name in steps:
            a, b = STEPS[name](a, b), a
        return a, fnp.sum(a * b)

    rng = np.random.default_rng(len(steps))
    a, b = rng.normal(size=(4, 4)), rng.normal(size=(4, 4))
    specs = [data.draw(st.builds(lambda s: s, st.sampled_from(
        [P(), P("x"), P(None, "y"), P("y", "x"), P(("x", "y")), P(None, ("y", "x"))])))
        for _ in range(2)]
    want = ft.jit(program)(a, b)
    got = ft.jit(program)(*[ft.device_put(v, NamedSharding(mesh, s))
                            for v, s in zip((a, b), specs)])
    _assert_same(got, want)
    _assert_placed(got, mesh)


def test_reshard_under_jit_lays_out_the_value():
    mesh = ft.make_mesh((2,), ("x",))
    with ft.set_mesh(mesh):
        out = ft.jit(lambda v: ft.reshard(v * 2.0, P("x")) + 1.0)(np.ones(4))
    assert out.sharding == NamedSharding(mesh, P("x"))
    np.testing.assert_array_equal(out, np.full(4, 3.0))
