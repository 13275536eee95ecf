"""JAX's global-view sharding API: axis types, the context mesh, shard_map's JAX signature,
reshard/auto_axes/explicit_axes, visualize_array_sharding, make_array_from_*, multihost_utils.

Printed forms, specs and error types are what JAX 0.10.2 gives (hard-coded, marked "JAX
0.10.2"); values are checked against NumPy. Every value here is a sum of at most a few
float64 numbers, exact in float64, so values compare exactly.
"""
import importlib
import pathlib
import subprocess
import sys
import threading
from functools import partial

import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp
from functrans import lax
from functrans.experimental import multihost_utils as mhu
from functrans.sharding import (AbstractMesh, AxisType, Mesh, NamedSharding, P,
                                SingleDeviceSharding, auto_axes, explicit_axes,
                                get_abstract_mesh, get_mesh, reshard, set_mesh, use_mesh)


@pytest.fixture(autouse=True)
def four_devices():
    with ft.config.override(num_cpu_devices=4):
        yield
    set_mesh(None)  # a failed test must not leave its global mesh to the next


def explicit(shape=(2,), names=("x",)):
    return ft.make_mesh(shape, names)


def auto(shape=(2,), names=("x",)):
    return ft.make_mesh(shape, names, axis_types=(AxisType.Auto,) * len(names))


# ---- axis types and meshes ------------------------------------------------------------------
def test_make_mesh_defaults_to_explicit_axes_and_prints_as_jax():
    m = ft.make_mesh((2, 2), ("x", "y"))
    assert m.axis_types == (AxisType.Explicit, AxisType.Explicit)
    # JAX 0.10.2
    assert repr(m) == "Mesh(axis_sizes=(2, 2), axis_names=('x', 'y'), axis_types=(Explicit, " \
        "Explicit))"
    assert str(auto()) == "Mesh('x': 2, axis_types=(Auto,))"
    assert m.are_all_axes_explicit and not m.are_all_axes_auto
    assert m.explicit_axes == ("x", "y") and m.auto_axes == () and m.axis_sizes == (2, 2)
    assert str(AxisType.Auto) == "AxisType.Auto" and repr(AxisType.Manual) == "Manual"
    assert [t.name for t in AxisType] == ["Auto", "Explicit", "Manual"]


def test_mesh_constructor_defaults_to_auto_and_types_take_part_in_equality():
    devs = np.array(ft.devices()[:2])
    assert Mesh(devs, ("x",)).axis_types == (AxisType.Auto,)  # JAX 0.10.2
    assert Mesh(devs, ("x",), (AxisType.Explicit,)) == explicit()
    assert explicit() != auto()  # JAX 0.10.2: False
    assert ft.make_mesh((2,), ("x",), axis_types=AxisType.Auto) == auto()
    assert list(ft.make_mesh((2,), "x", devices=ft.devices()[2:]).devices) == ft.devices()[2:]


def test_abstract_meshes_carry_axis_types():
    # JAX 0.10.2
    assert repr(AbstractMesh((2,), ("x",))) == "AbstractMesh('x': 2, axis_types=(Auto,))"
    assert repr(AbstractMesh((), ())) == "AbstractMesh((), axis_types=())"
    am = explicit().abstract_mesh
    assert am.axis_types == (AxisType.Explicit,) and am.shape == {"x": 2}
    assert am != AbstractMesh((2,), ("x",))
    assert am.update_axis_types({"x": AxisType.Manual}).axis_types == (AxisType.Manual,)


def test_bad_axis_types_are_named():
    with pytest.raises(ValueError, match="axis_types"):  # JAX 0.10.2: ValueError
        ft.make_mesh((2,), ("x",), axis_types=(AxisType.Explicit, AxisType.Auto))
    with pytest.raises(TypeError, match="AxisType"):  # JAX 0.10.2: TypeError
        ft.make_mesh((2,), ("x",), axis_types=("Explicit",))
    with pytest.raises(ValueError, match="needs 8 devices"):
        ft.make_mesh((8,), ("x",))


# ---- the context mesh -----------------------------------------------------------------------
def test_outside_any_context_the_mesh_is_empty():
    # JAX 0.10.2
    assert repr(get_mesh()) == "Mesh(axis_sizes=(), axis_names=())"
    assert repr(get_abstract_mesh()) == "AbstractMesh((), axis_types=())"
    assert get_mesh().empty and get_abstract_mesh().empty
    assert not get_abstract_mesh().are_all_axes_explicit


def test_set_mesh_is_a_context_manager_and_a_global_setter():
    m, m2 = explicit(), explicit((2, 2), ("x", "y"))
    with set_mesh(m) as entered:
        assert entered is None  # JAX 0.10.2
        assert get_mesh() == m and get_abstract_mesh() == m.abstract_mesh
        with set_mesh(m2):
            assert get_mesh() == m2
        assert get_mesh() == m
    assert get_mesh().empty
    set_mesh(m)
    with set_mesh(m2):
        pass
    assert get_mesh() == m  # the context restores the global one
    set_mesh(None)
    assert get_mesh().empty
    with use_mesh(m):
        assert get_mesh() == m
    assert get_mesh().empty


def test_the_context_mesh_is_per_thread_as_in_jax():
    seen = []
    with set_mesh(explicit()):
        t = threading.Thread(target=lambda: seen.append(get_mesh()))
        t.start()
        t.join()
    assert seen[0].empty  # JAX 0.10.2: another thread sees the empty mesh


def test_set_mesh_refuses_what_is_not_a_mesh():
    with pytest.raises(ValueError, match="expected a functrans.sharding.Mesh.*int"):
        set_mesh(3)  # JAX 0.10.2: ValueError
    with pytest.raises(ValueError, match="AbstractMesh"):
        set_mesh(explicit().abstract_mesh)


# ---- shard_map's JAX signature --------------------------------------------------------------
def test_shard_map_as_a_decorator_on_the_context_mesh():
    x = np.arange(8.0)
    with set_mesh(explicit()):
        @partial(ft.shard_map, in_specs=P("x"), out_specs=P())
        def total(block):
            return lax.psum(block.sum(), "x")

        assert float(total(x)) == x.sum()
        out = ft.shard_map(lambda b: b * 2, in_specs=P("x"), out_specs=P("x"))(x)
    np.testing.assert_array_equal(out, x * 2)
    assert out.sharding == NamedSharding(explicit(), P("x"))
    assert out.sharding.spec == P("x")  # JAX 0.10.2: P('x',)


def test_shard_map_keyword_and_positional_forms_agree():
    m, x = explicit(), np.arange(4.0)
    f = lambda b: b - lax.pmean(b, "x")  # noqa: E731
    blocks = x.reshape(2, 2)  # one row per shard; pmean averages them elementwise
    expected = (blocks - blocks.mean(axis=0)).ravel()
    np.testing.assert_array_equal(ft.shard_map(f, mesh=m, in_specs=P("x"), out_specs=P("x"))(x),
                                  expected)
    np.testing.assert_array_equal(ft.shard_map(f, m, P("x"), P("x"))(x), expected)
    np.testing.assert_array_equal(
        ft.shard_map(mesh=m, in_specs=P("x"), out_specs=P("x"))(f)(x), expected)


def test_shard_map_composes_with_jit_and_grad():
    m, x = explicit(), np.arange(4.0)
    f = ft.shard_map(lambda b: lax.psum((b ** 2).sum(), "x"), mesh=m, in_specs=P("x"),
                     out_specs=P())
    np.testing.assert_array_equal(ft.grad(ft.jit(f))(x), 2 * x)


def test_shard_map_signature_errors_are_jaxs():
    m = explicit()
    with pytest.raises(ValueError, match="context mesh is empty"):  # JAX 0.10.2: ValueError
        ft.shard_map(lambda b: b, in_specs=P("x"), out_specs=P("x"))(np.ones(2))
    with pytest.raises(TypeError, match="out_specs"):  # JAX 0.10.2: TypeError
        ft.shard_map(lambda b: b, mesh=m, in_specs=P("x"))
    with pytest.raises(TypeError, match="check_rep"):  # JAX 0.10.2 knows only check_vma
        ft.shard_map(lambda b: b, mesh=m, in_specs=P("x"), out_specs=P(), check_rep=False)
    with pytest.raises(TypeError, match="callable"):
        ft.shard_map(3, mesh=m, in_specs=P("x"), out_specs=P())
    with pytest.raises(TypeError, match="mesh must be"):
        ft.shard_map(lambda b: b, mesh=3, in_specs=P("x"), out_specs=P())
    ok = ft.shard_map(lambda b: b, mesh=m, in_specs=P("x"), out_specs=P("x"), check_vma=False)
    np.testing.assert_array_equal(ok(np.arange(2.0)), [0.0, 1.0])


def test_shard_map_axis_names_maps_over_some_axes():
    m = auto((2, 2), ("x", "y"))
    x = np.arange(4.0)
    f = partial(ft.shard_map, mesh=m, axis_names={"x"})
    # JAX 0.10.2: [0., 0., 1., 1.]
    idx = f(lambda b: b * 0 + lax.axis_index("x"), in_specs=P("x"), out_specs=P("x"))(x)
    np.testing.assert_array_equal(idx, [0.0, 0.0, 1.0, 1.0])
    out = f(lambda b: b * 2, in_specs=P("x"), out_specs=P("x"))(x)
    np.testing.assert_array_equal(out, 2 * x)
    assert out.sharding.mesh == m  # JAX 0.10.2: the whole mesh
    with pytest.raises(NameError, match="'y'"):  # JAX 0.10.2: NameError, y is not mapped
        f(lambda b: lax.psum(b, "y"), in_specs=P("x"), out_specs=P())(x)
    with pytest.raises(ValueError, match="'y'.*axis_names"):  # JAX 0.10.2: ValueError
        f(lambda b: b, in_specs=P("y"), out_specs=P("y"))(x)
    with pytest.raises(ValueError, match="subset"):  # JAX 0.10.2: ValueError
        ft.shard_map(lambda b: b, mesh=m, in_specs=P("x"), out_specs=P("x"),
                     axis_names={"z"})(x)


def test_shard_map_infers_in_specs_on_explicit_meshes():
    m, x = explicit(), np.arange(4.0)
    f = ft.shard_map(lambda b: b * 2, mesh=m, out_specs=P("x"))
    # JAX 0.10.2: an unsplit argument is replicated, so each shard returns all of it
    np.testing.assert_array_equal(f(x), np.concatenate([2 * x, 2 * x]))
    np.testing.assert_array_equal(f(ft.device_put(x, NamedSharding(m, P("x")))), 2 * x)
    with pytest.raises(TypeError, match="in_specs"):  # JAX 0.10.2: TypeError on Auto axes
        ft.shard_map(lambda b: b, mesh=auto(), out_specs=P("x"))(x)


def test_inside_shard_map_the_abstract_mesh_axes_are_manual():
    seen = []
    with set_mesh(explicit()):
        ft.shard_map(lambda b: seen.append(get_abstract_mesh()) or b, in_specs=P("x"),
                     out_specs=P("x"))(np.ones(2))
        assert get_abstract_mesh().axis_types == (AxisType.Explicit,)
    assert seen[0].axis_types == (AxisType.Manual,) and seen[0].shape == {"x": 2}  # JAX 0.10.2


# ---- reshard, with_sharding_constraint, auto_axes, explicit_axes ----------------------------
def test_reshard_places_concrete_arrays_on_the_context_mesh():
    m = explicit()
    with set_mesh(m):
        y = ft.reshard(np.arange(4.0), P("x"))
        tree = reshard({"a": fnp.ones(2), "b": fnp.zeros((2, 2))}, {"a": P(), "b": P(None, "x")})
    assert y.sharding == NamedSharding(m, P("x"))
    assert [s.data.tolist() for s in y.addressable_shards] == [[0.0, 1.0], [2.0, 3.0]]
    assert [s.data.shape for s in tree["b"].addressable_shards] == [(2, 1), (2, 1)]
    assert tree["a"].sharding.is_fully_replicated
    assert reshard(fnp.ones(4), NamedSharding(m, P("x"))).sharding.spec == P("x")


def test_reshard_leaves_traced_values_unchanged():
    with set_mesh(explicit()):
        f = ft.jit(lambda v: reshard(v * 2.0, P("x")).sum())
        assert float(f(fnp.arange(4.0))) == 12.0
        np.testing.assert_array_equal(ft.grad(f)(fnp.arange(4.0)), [2.0] * 4)
        with pytest.raises(ValueError, match="shape \\(3,\\).*divide"):
            f(fnp.arange(3.0))  # what JAX refuses is refused at trace time too


def test_reshard_errors_name_what_is_wrong():
    with pytest.raises(ValueError, match="PartitionSpec\\('x'\\).*needs a mesh"):
        reshard(fnp.ones(4), P("x"))  # JAX 0.10.2: ValueError
    with set_mesh(explicit()):
        with pytest.raises(TypeError, match="Device"):  # JAX 0.10.2: TypeError
            reshard(fnp.ones(4), ft.devices()[0])
        with pytest.raises(ValueError, match="None"):  # JAX 0.10.2: ValueError
            reshard(fnp.ones(4), None)
        with pytest.raises(ValueError, match="'z'"):  # JAX 0.10.2: ValueError
            reshard(fnp.ones(4), P("z"))
    with set_mesh(auto()):
        with pytest.raises(ValueError, match="not Explicit"):  # JAX 0.10.2: ValueError
            reshard(fnp.ones(4), P("x"))


def test_with_sharding_constraint_takes_a_bare_spec_under_a_mesh():
    m = auto()
    with set_mesh(m):
        y = lax.with_sharding_constraint(fnp.arange(4.0), P("x"))
        assert y.sharding == NamedSharding(m, P("x"))  # JAX 0.10.2 on an Auto mesh
        z = ft.jit(lambda v: lax.with_sharding_constraint(v + 1, P("x")))(fnp.zeros(2))
        np.testing.assert_array_equal(z, [1.0, 1.0])
    with pytest.raises(RuntimeError, match="needs a mesh"):  # JAX 0.10.2: RuntimeError
        lax.with_sharding_constraint(fnp.ones(2), P("x"))


def test_auto_axes_runs_f_and_places_its_result():
    m = explicit()
    x = ft.device_put(np.arange(8.0).reshape(4, 2), NamedSharding(m, P("x")))
    with set_mesh(m):
        y = auto_axes(lambda a: a * 2, out_sharding=P("x"))(x)
        z = partial(auto_axes, axes="x", out_sharding=P(None, "x"))(lambda a: a + 1)(x)
        w = ft.jit(auto_axes(lambda a: a * 2, out_sharding=P("x")))(x)
        with pytest.raises(TypeError, match="out_sharding"):  # JAX 0.10.2: TypeError
            auto_axes(lambda a: a)(x)
        with pytest.raises(ValueError, match="'z'"):
            auto_axes(lambda a: a, axes="z", out_sharding=P())(x)
    np.testing.assert_array_equal(y, np.arange(8.0).reshape(4, 2) * 2)
    np.testing.assert_array_equal(w, y)
    assert y.sharding.spec == P("x") and z.sharding.spec == P(None, "x")
    # JAX 0.10.2: without a context mesh the result comes back as it is
    np.testing.assert_array_equal(auto_axes(lambda a: a * 2, out_sharding=P("x"))(
        fnp.arange(4.0)), [0.0, 2.0, 4.0, 6.0])


def test_explicit_axes_places_the_arguments():
    for mesh in (explicit(), auto()):  # JAX 0.10.2: an Auto axis is fine here
        with set_mesh(mesh):
            spec = explicit_axes(lambda a: a.sharding.spec, in_sharding=P("x"))(fnp.ones(4))
            assert spec == P("x")
            y = explicit_axes(lambda a: a * 2, in_sharding=P("x"))(fnp.arange(4.0))
            np.testing.assert_array_equal(y, [0.0, 2.0, 4.0, 6.0])
    with pytest.raises(TypeError, match="in_sharding"):  # JAX 0.10.2: TypeError
        explicit_axes(lambda a: a)(fnp.ones(2))


# ---- visualize_array_sharding ---------------------------------------------------------------
def show(x, capsys):
    ft.debug.visualize_array_sharding(x)
    return capsys.readouterr().out


def test_visualize_a_one_dimensional_split(capsys):
    m = ft.make_mesh((4,), ("x",))
    assert show(ft.device_put(fnp.zeros(8), NamedSharding(m, P("x"))), capsys) == (
        "┌───────┬───────┬───────┬───────┐\n"
        "│ CPU 0 │ CPU 1 │ CPU 2 │ CPU 3 │\n"
        "└───────┴───────┴───────┴───────┘\n")
    assert show(fnp.zeros(8), capsys) == "┌───────┐\n│ CPU 0 │\n└───────┘\n"


def test_visualize_two_dimensional_splits_and_replication(capsys):
    m = ft.make_mesh((2, 2), ("x", "y"))
    x = fnp.zeros((4, 4))
    assert show(ft.device_put(x, NamedSharding(m, P("x", "y"))), capsys) == (
        "┌───────┬───────┐\n"
        "│       │       │\n"
        "│ CPU 0 │ CPU 1 │\n"
        "│       │       │\n"
        "├───────┼───────┤\n"
        "│       │       │\n"
        "│ CPU 2 │ CPU 3 │\n"
        "│       │       │\n"
        "└───────┴───────┘\n")
    # JAX 0.10.2 labels a block held by several devices "CPU 0,2"
    assert show(ft.device_put(x, NamedSharding(m, P(None, "y"))), capsys) == (
        "┌─────────┬─────────┐\n"
        "│         │         │\n"
        "│ CPU 0,2 │ CPU 1,3 │\n"
        "│         │         │\n"
        "└─────────┴─────────┘\n")
    assert "CPU 0,1,2,3" in show(ft.device_put(x, NamedSharding(m, P())), capsys)
    with pytest.raises(ValueError, match="1-D and 2-D"):  # JAX 0.10.2: ValueError
        ft.debug.visualize_array_sharding(fnp.zeros((2, 2, 2)))


# ---- make_array_from_* ----------------------------------------------------------------------
G = np.arange(16.0).reshape(4, 4)


def test_make_array_from_callback_calls_once_per_device_with_its_index():
    s = NamedSharding(ft.make_mesh((2, 2), ("x", "y")), P("x"))
    calls = []
    a = ft.make_array_from_callback((4, 4), s, lambda i: calls.append(i) or G[i])
    rows, whole = slice(0, 2), slice(None)
    # JAX 0.10.2: one call per device, devices in mesh order
    assert calls == [(rows, whole), (rows, whole), (slice(2, 4), whole), (slice(2, 4), whole)]
    np.testing.assert_array_equal(a, G)
    assert a.sharding == s
    assert ft.make_array_from_callback((4, 4), s, lambda i: G[i], dtype=np.float32).dtype == \
        np.float32
    with pytest.raises(ValueError, match="blocks of shape \\(2, 4\\).*shape \\(3, 3\\)"):
        ft.make_array_from_callback((4, 4), s, lambda i: np.zeros((3, 3)))
    with pytest.raises(ValueError, match="divide"):
        ft.make_array_from_callback((3, 4), s, lambda i: G[i])


def test_make_array_from_single_device_arrays_checks_each_block():
    s = NamedSharding(ft.make_mesh((2, 2), ("x", "y")), P("x"))
    idx = s.addressable_devices_indices_map((4, 4))
    blocks = [ft.device_put(G[i], d) for d, i in idx.items()]
    a = ft.make_array_from_single_device_arrays((4, 4), s, blocks)
    np.testing.assert_array_equal(a, G)
    assert a.sharding == s
    make = partial(ft.make_array_from_single_device_arrays, (4, 4), s)
    with pytest.raises(ValueError, match="shape \\(3, 4\\)"):  # JAX 0.10.2: ValueError
        make([ft.device_put(np.zeros((3, 4)), d) for d in idx])
    with pytest.raises(ValueError, match="expected 4.*got 3"):  # JAX 0.10.2: ValueError
        make(blocks[:3])
    with pytest.raises(TypeError, match="ndarray"):  # JAX 0.10.2: TypeError
        make([G[:2]] * 4)
    with pytest.raises(ValueError, match="distinct devices"):  # JAX 0.10.2: ValueError
        make([ft.device_put(G[:2], ft.devices()[0])] * 4)
    with pytest.raises(ValueError, match="one dtype"):  # JAX 0.10.2: ValueError
        make(blocks[:3] + [ft.device_put(G[2:].astype(np.int32), ft.devices()[3])])


def test_make_array_from_process_local_data_on_one_process():
    s = NamedSharding(ft.make_mesh((2,), ("x",)), P("x"))
    a = ft.make_array_from_process_local_data(s, G)
    np.testing.assert_array_equal(a, G)
    assert [sh.data.shape for sh in a.addressable_shards] == [(2, 4), (2, 4)]
    np.testing.assert_array_equal(ft.make_array_from_process_local_data(s, G, (4, 4)), G)
    with pytest.raises(ValueError, match="global_shape"):  # JAX 0.10.2: ValueError
        ft.make_array_from_process_local_data(s, G, (8, 4))
    with pytest.raises(ValueError, match="divide"):
        ft.make_array_from_process_local_data(s, np.ones((3, 4)))
    single = ft.make_array_from_process_local_data(SingleDeviceSharding(ft.devices()[1]), G)
    assert single.devices() == {ft.devices()[1]}


# ---- multihost_utils, one process -----------------------------------------------------------
def test_multihost_utils_on_one_process_are_jaxs():
    out = mhu.process_allgather({"a": fnp.arange(2.0), "b": 3.0})
    # JAX 0.10.2: {'a': array([[0., 1.]]), 'b': array([3.])}, NumPy arrays
    assert type(out["a"]) is np.ndarray and out["a"].tolist() == [[0.0, 1.0]]
    assert out["b"].tolist() == [3.0]
    assert mhu.process_allgather(fnp.arange(2.0), tiled=True).tolist() == [0.0, 1.0]
    assert mhu.process_allgather(np.float64(3.0), tiled=True).shape == ()  # JAX 0.10.2
    sharded = ft.device_put(fnp.arange(4.0), NamedSharding(explicit(), P("x")))
    assert mhu.process_allgather(sharded).tolist() == [[0.0, 1.0, 2.0, 3.0]]  # JAX 0.10.2
    b = mhu.broadcast_one_to_all({"a": fnp.arange(2), "b": 3.0}, is_source=False)
    assert type(b["a"]) is np.ndarray and b["a"].tolist() == [0, 1] and b["b"].shape == ()
    assert mhu.sync_global_devices("step") is None
    mhu.assert_equal({"x": 1})  # one process always agrees with itself
    g = mhu.host_local_array_to_global_array(np.arange(4.0), explicit(), P("x"))
    assert g.sharding.spec == P("x")
    np.testing.assert_array_equal(mhu.global_array_to_host_local_array(g, explicit(), P("x")),
                                  np.arange(4.0))


MPI_SCRIPT = """
import numpy as np
import functrans as ft
import functrans.numpy as fnp
ft.config.update("num_cpu_devices", 2)
ft.distributed.initialize()
from functrans.experimental import multihost_utils as mu
from functrans.sharding import NamedSharding, P
r = ft.process_index()
assert mu.process_allgather(np.full(2, float(r))).tolist() == [[0.0, 0.0], [1.0, 1.0]]
assert mu.process_allgather(np.full(2, float(r)), tiled=True).tolist() == [0, 0, 1, 1]
assert mu.process_allgather(np.float64(r), tiled=True).tolist() == [0.0, 1.0]
assert mu.broadcast_one_to_all({"v": np.array([r + 10])})["v"].tolist() == [10]
assert int(mu.broadcast_one_to_all(np.array(r), is_source=(r == 1))) == 1
mu.sync_global_devices("here")
try:
    mu.sync_global_devices(f"name{r}")
    raise SystemExit("different barrier names passed")
except AssertionError:
    pass
s = NamedSharding(ft.make_mesh((4,), ("x",)), P("x"))
x = ft.make_array_from_callback((8,), s, lambda i: np.arange(8.0)[i])
# Each process holds its own devices' blocks only; reading the whole value raises, as in JAX.
assert not x.is_fully_addressable and x.local_nbytes == 4 * 8 and len(x.addressable_shards) == 2
assert [sh.data.tolist() for sh in x.addressable_shards] == [[4 * r + 0.0, 4 * r + 1.0],
                                                           [4 * r + 2.0, 4 * r + 3.0]]
try:
    np.asarray(x)
    raise SystemExit("the value of a non-fully-addressable array was read")
except RuntimeError as e:
    assert "process_allgather" in str(e)
assert mu.process_allgather(x, tiled=True).tolist() == list(np.arange(8.0))
blocks = [ft.device_put(np.full(2, float(d.id)), d) for d in ft.local_devices()]
y = ft.make_array_from_single_device_arrays((8,), s, blocks)
assert mu.process_allgather(y, tiled=True).tolist() == [0, 0, 1, 1, 2, 2, 3, 3]
z = ft.make_array_from_process_local_data(s, np.full(4, float(r)))
assert z.shape == (8,) and mu.process_allgather(z, tiled=True).tolist() == [0] * 4 + [1] * 4
# jit runs over each process's shards and keeps the results spread.
f = ft.jit(lambda a, b: (fnp.sin(a) * b, fnp.sum(a * b)))
u, total = f(x, y)
assert not u.is_fully_addressable and u.sharding.spec == P("x")
np.testing.assert_allclose(mu.process_allgather(u, tiled=True),
                           np.sin(np.arange(8.0)) * np.repeat(np.arange(4.0), 2), rtol=1e-15)
np.testing.assert_allclose(mu.process_allgather(total, tiled=True),
                           np.sum(np.arange(8.0) * np.repeat(np.arange(4.0), 2)), rtol=1e-15)
w = ft.device_put(np.arange(16.0).reshape(8, 2), s)  # from global data: only local blocks kept
assert w.local_nbytes == 8 * 8
moved = ft.device_put(w, NamedSharding(s.mesh, P(None, None)))  # resharded by a program
assert mu.process_allgather(moved, tiled=True).tolist() == np.arange(16.0).reshape(8, 2).tolist()
print(f"process {r}: multihost checks passed")
"""


@pytest.mark.skipif(not (pathlib.Path(sys.executable).parent / "mpiexec").exists(),
                    reason="needs the mpi extra's mpiexec")
def test_multihost_utils_and_array_assembly_across_two_processes(tmp_path):
    script = tmp_path / "multihost.py"
    script.write_text(MPI_SCRIPT)
    mpiexec = pathlib.Path(sys.executable).parent / "mpiexec"
    out = subprocess.run([str(mpiexec), "-n", "2", sys.executable, "-m", "mpi4py", str(script)],
                         capture_output=True, text=True, timeout=240)
    assert out.returncode == 0, out.stdout + out.stderr
    for rank in (0, 1):
        assert f"process {rank}: multihost checks passed" in out.stdout


# ---- the names resolve as jax.* -------------------------------------------------------------
def test_the_api_resolves_under_jax_names():
    from functrans import as_jax
    from functrans.as_jax import jax_root
    for name in ("set_mesh", "reshard", "shard_map", "make_mesh", "make_array_from_callback",
                 "make_array_from_single_device_arrays", "make_array_from_process_local_data",
                 "typeof", "NamedSharding", "P"):
        assert getattr(jax_root, name) is getattr(ft, name)
    for name in ("AxisType", "set_mesh", "get_mesh", "get_abstract_mesh", "use_abstract_mesh",
                 "reshard", "auto_axes", "explicit_axes", "AbstractMesh", "Mesh"):
        assert hasattr(ft.sharding, name), name
    target = as_jax.target("jax.experimental.multihost_utils")
    assert importlib.import_module(target) is mhu
    assert callable(importlib.import_module(as_jax.target("jax.debug")).visualize_array_sharding)
