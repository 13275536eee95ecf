"""Sharding in types (JAX's sharding guides): eager operations on placed arrays, shardings
through reshapes, committed arrays, auto_axes/explicit_axes as JAX 0.10.2 calls them.

Types, specs and error types are what JAX 0.10.2 prints for the same programs (hard-coded,
marked "JAX 0.10.2"); values are checked against NumPy.
"""
import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp
from functrans.core.errors import ShardingTypeError
from functrans.sharding import AxisType, NamedSharding, P, auto_axes, explicit_axes, set_mesh


@pytest.fixture(autouse=True)
def four_devices():
    with ft.config.override(num_cpu_devices=4):
        yield
    set_mesh(None)


def mesh2x2():
    return ft.make_mesh((2, 2), ("x", "y"))


def test_eager_operations_on_placed_arrays_keep_their_shardings():
    with set_mesh(mesh2x2()):
        a = ft.device_put(np.arange(4).reshape(4, 1), P("x", None))
        b = ft.device_put(np.arange(8).reshape(1, 8), P(None, "y"))
        r = a + b
        s = fnp.sin(ft.device_put(np.arange(8.0), P("x")))
    assert str(ft.typeof(r)) == "int64[4@x,8@y]"  # JAX 0.10.2 (int32 there): int32[4@x,8@y]
    assert r.sharding.spec == P("x", "y") and r.committed
    np.testing.assert_array_equal(r, np.arange(4).reshape(4, 1) + np.arange(8).reshape(1, 8))
    assert str(ft.typeof(s)) == "float64[8@x]" and s.sharding.spec == P("x")
    np.testing.assert_allclose(s, np.sin(np.arange(8.0)), rtol=1e-15)


def test_an_eager_product_contracting_split_dimensions_is_ambiguous_on_explicit_axes():
    with set_mesh(mesh2x2()):
        c = ft.device_put(np.arange(4.0).reshape(2, 2), P(None, "x"))
        d = ft.device_put(np.arange(4.0).reshape(2, 2), P("x", None))
        with pytest.raises(ShardingTypeError, match=r"lhs_contracting_spec=\('x',\)"):
            c @ d  # JAX 0.10.2: ShardingTypeError
    auto = ft.make_mesh((2, 2), ("x", "y"), axis_types=(AxisType.Auto,) * 2)
    c = ft.device_put(np.arange(4.0).reshape(2, 2), NamedSharding(auto, P(None, "x")))
    d = ft.device_put(np.arange(4.0).reshape(2, 2), NamedSharding(auto, P("x", None)))
    m = np.arange(4.0).reshape(2, 2)
    np.testing.assert_array_equal(c @ d, m @ m)


def test_reshapes_adding_or_dropping_unit_dimensions_keep_the_split():
    with set_mesh(mesh2x2()):
        b = ft.device_put(np.arange(8).reshape(1, 8), P(None, "y"))
        v = ft.device_put(np.arange(8.0), P("y"))
        r = ft.jit(lambda u: u.reshape(8) * 2)(b)
        r1 = ft.jit(lambda u: u.reshape(1, 8))(v)
    assert str(ft.typeof(r)) == "int64[8@y]"  # JAX 0.10.2: int32[8@y]
    assert str(ft.typeof(r1)) == "float64[1,8@y]"  # JAX 0.10.2: float32[1,8@y]
    np.testing.assert_array_equal(r, np.arange(8) * 2)
    np.testing.assert_array_equal(r1, np.arange(8.0).reshape(1, 8))


def test_committed_is_whether_an_array_was_placed():
    x = fnp.arange(4.0)
    # JAX 0.10.2: False False True, and True for an array placed on a mesh
    assert (x.committed, ft.device_put(x).committed,
            ft.device_put(x, ft.devices()[0]).committed) == (False, False, True)
    assert ft.device_put(x, NamedSharding(mesh2x2(), P("x"))).committed


def test_auto_axes_takes_out_sharding_at_the_call_and_retypes_the_mesh():
    seen = []

    def double(u):
        seen.append(ft.sharding.get_abstract_mesh().axis_types)
        seen.append(ft.typeof(u).sharding.spec)
        return u * 2
    with set_mesh(mesh2x2()):
        s = ft.device_put(np.arange(8.0), P("x"))
        out = auto_axes(double)(s, out_sharding=P("y"))
        out2 = auto_axes(double, axes="x", out_sharding=P("x"))(s)
        assert s.sharding.spec == P("x")  # the argument itself is not moved
    # JAX 0.10.2: [(Auto, Auto), P(None,), (Auto, Explicit), P(None,)], float32[8@y], [8@x]
    assert seen == [(AxisType.Auto, AxisType.Auto), P(None),
                    (AxisType.Auto, AxisType.Explicit), P(None)]
    assert str(ft.typeof(out)) == "float64[8@y]" and str(ft.typeof(out2)) == "float64[8@x]"
    np.testing.assert_array_equal(out, np.arange(8.0) * 2)


def test_explicit_axes_takes_in_sharding_at_the_call_and_needs_a_mesh():
    auto = ft.make_mesh((2, 2), ("x", "y"), axis_types=(AxisType.Auto,) * 2)
    seen = []

    def inc(u):
        seen.append(ft.sharding.get_abstract_mesh().axis_types)
        return u + 1
    with set_mesh(auto):
        y = explicit_axes(inc)(np.arange(4.0), in_sharding=P("x"))
        z = ft.jit(lambda u: explicit_axes(inc)(fnp.sin(u), in_sharding=P("x")) * 2)(
            ft.device_put(np.arange(4.0), P("x")))
        with pytest.raises(TypeError, match="in_sharding"):  # JAX 0.10.2: TypeError
            explicit_axes(inc)(np.arange(4.0))
    assert seen[0] == (AxisType.Explicit, AxisType.Explicit)
    assert y.sharding.spec == P("x")
    np.testing.assert_array_equal(y, np.arange(4.0) + 1)
    np.testing.assert_allclose(z, (np.sin(np.arange(4.0)) + 1) * 2)
    with pytest.raises(ValueError, match="context mesh is empty"):  # JAX 0.10.2: ValueError
        explicit_axes(inc)(np.arange(4.0), in_sharding=P("x"))


# ---- out_sharding= on products and reshapes ---------------------------------------------------
PRODUCTS = {
    "dot": (lambda u, v: fnp.dot(u, v, out_sharding=P("x", None)), "[2@x,2]"),
    "einsum": (lambda u, v: fnp.einsum("ij,jk->ik", u, v, out_sharding=P(None, "y")),
               "[2,2@y]"),
    "matmul": (lambda u, v: fnp.matmul(u, v, out_sharding=P()), "[2,2]"),
    "dot_general": (lambda u, v: ft.lax.dot_general(u, v, (((1,), (0,)), ((), ())),
                                                    out_sharding=P("y", "x")), "[2@y,2@x]"),
}


@pytest.mark.parametrize("name", PRODUCTS)
def test_out_sharding_of_a_product_contracting_split_dimensions(name):
    f, dims = PRODUCTS[name]
    a_np, b_np = np.arange(8.0).reshape(2, 4), np.arange(8.0, 16.0).reshape(4, 2)
    with set_mesh(mesh2x2()):
        a = ft.device_put(a_np, P(None, "x"))
        b = ft.device_put(b_np, P("x", None))
        eager, jitted = f(a, b), ft.jit(f)(a, b)
    # JAX 0.10.2: the same types (float32) both ways, and the values [[76, 82], [252, 274]]
    assert str(ft.typeof(eager)) == str(ft.typeof(jitted)) == "float64" + dims
    np.testing.assert_array_equal(eager, a_np @ b_np)
    np.testing.assert_array_equal(jitted, a_np @ b_np)


def test_gradients_and_batches_through_a_product_with_out_sharding():
    a_np, b_np = np.arange(8.0).reshape(2, 4), np.arange(8.0, 16.0).reshape(4, 2)
    with set_mesh(mesh2x2()):
        a = ft.device_put(a_np, P(None, "x"))
        b = ft.device_put(b_np, P("x", None))
        ga, gb = ft.jit(ft.grad(lambda u, v: fnp.sum(
            fnp.dot(u, v, out_sharding=P("x", None)) ** 2), argnums=(0, 1)))(a, b)
        batched = ft.jit(ft.vmap(lambda u, w: fnp.dot(u, w, out_sharding=P()),
                                 in_axes=(0, None)))(fnp.ones((3, 2, 4)), b)
    c = a_np @ b_np  # d sum(c**2) = 2c: da = 2c b^T, db = a^T 2c (JAX 0.10.2's values)
    np.testing.assert_array_equal(ga, 2 * c @ b_np.T)
    np.testing.assert_array_equal(gb, a_np.T @ (2 * c))
    assert str(ft.typeof(gb)) == "float64[4@x,2]"  # JAX 0.10.2: float32[4@x,2]
    assert float(fnp.sum(batched)) == 552.0  # JAX 0.10.2: 552.0


def test_out_sharding_of_a_reshape():
    v_np = np.arange(8.0).reshape(2, 4)
    with set_mesh(mesh2x2()):
        v = ft.device_put(v_np, P("x", "y"))
        r = ft.jit(lambda u: fnp.reshape(u, 8, out_sharding=P("x")))(v)
        r2 = ft.lax.reshape(v, (4, 2), out_sharding=P(None, "y"))
    # JAX 0.10.2: float32[8@x], float32[4,2@y]
    assert str(ft.typeof(r)) == "float64[8@x]" and str(ft.typeof(r2)) == "float64[4,2@y]"
    np.testing.assert_array_equal(r, v_np.reshape(8))
    np.testing.assert_array_equal(r2, v_np.reshape(4, 2))


# ---- lax.pcast ----------------------------------------------------------------------------
def test_pcast_to_varying_keeps_values_gradients_and_batches():
    with ft.config.override(num_cpu_devices=2), set_mesh(ft.make_mesh((2,), ("i",))):
        x = ft.device_put(fnp.arange(6.0), P("i"))
        y = fnp.arange(3.0) + 1

        @ft.shard_map(in_specs=(P("i"), P()), out_specs=P("i"))
        def f(a, b):
            return a * ft.lax.pcast(b, "i", to="varying")
        out = f(x, y)
        gx, gy = ft.grad(lambda a, b: fnp.sum(f(a, b) ** 2), argnums=(0, 1))(x, y)
        batched = ft.jit(ft.vmap(f, in_axes=(0, None)))(fnp.stack([x, x + 1]), y)
        with pytest.raises(NameError, match="'j'"):  # JAX 0.10.2 fails here too
            ft.shard_map(lambda b: ft.lax.pcast(b, "j", to="varying"), in_specs=P(),
                         out_specs=P())(y)
    # JAX 0.10.2's values
    np.testing.assert_array_equal(out, [0.0, 2.0, 6.0, 3.0, 8.0, 15.0])
    np.testing.assert_array_equal(gx, [0.0, 8.0, 36.0, 6.0, 32.0, 90.0])
    np.testing.assert_array_equal(gy, [18.0, 68.0, 174.0])
    np.testing.assert_array_equal(batched, [[0.0, 2.0, 6.0, 3.0, 8.0, 15.0],
                                            [1.0, 4.0, 9.0, 4.0, 10.0, 18.0]])


def test_pcast_arguments_are_checked_as_jax_checks_them():
    with pytest.raises(TypeError, match="must be a tuple or a str"):  # JAX 0.10.2: TypeError
        ft.lax.pcast(fnp.ones(2), {"i"}, to="varying")
    with pytest.raises(ValueError, match="Allowed `to` values"):  # JAX 0.10.2: ValueError
        ft.vmap(lambda v: ft.lax.pcast(v, "i", to="sideways"), axis_name="i")(fnp.ones(2))
    assert ft.lax.pcast(3.0, (), to="varying") == 3.0  # no axes: unchanged, as JAX


# ---- unreduced and reduced axes -----------------------------------------------------------
def test_partition_specs_with_unreduced_and_reduced_axes_are_jaxs():
    spec = P("x", None, unreduced={"y"})
    assert spec.unreduced == frozenset({"y"}) and spec.reduced == frozenset()
    assert spec.partitions == ("x", None) and spec != P("x", None)  # JAX 0.10.2: unequal
    assert spec == P("x", None, unreduced=frozenset({"y"})) and hash(spec) == hash(
        P("x", None, unreduced={"y"}))
    assert repr(P(reduced={"x"})) == "PartitionSpec(reduced={'x'})"
    assert spec.update(unreduced=set()) == P("x", None)
    import pickle
    assert pickle.loads(pickle.dumps(spec)) == spec
    # JAX 0.10.2's errors, word for word
    with pytest.raises(ValueError, match="partitions cannot overlap with unreduced axes"):
        P("x", unreduced={"x"})
    with pytest.raises(ValueError, match="cannot overlap"):
        P("x", unreduced={"y"}, reduced={"y"})
    with pytest.raises(TypeError, match="should of type `frozenset` or `set`"):
        P("x", unreduced=["y"])
    with pytest.raises(ValueError, match="Unreduced axes z is not found"):
        NamedSharding(mesh2x2(), P("x", unreduced={"z"}))
    auto = ft.make_mesh((2, 2), ("x", "y"), axis_types=(AxisType.Auto,) * 2)
    with pytest.raises(ValueError, match="only refer to mesh axes that is of type `Explicit`"):
        NamedSharding(auto, P("x", unreduced={"y"}))
    s = NamedSharding(mesh2x2(), P("x", unreduced={"y"}))
    assert not s.is_fully_replicated and s != NamedSharding(mesh2x2(), P("x"))
    assert NamedSharding(mesh2x2(), P(reduced={"y"})).is_fully_replicated


def test_placing_unreduced_puts_the_value_on_the_first_device_and_resharding_sums():
    x = np.arange(8.0).reshape(4, 2)
    with set_mesh(mesh2x2()):
        y = ft.device_put(x, P("x", None, unreduced={"y"}))
        z = ft.reshard(y, P("x", None))
        w = ft.device_put(x, P(None, None, reduced={"x"}))
        twice = y + y
        with pytest.raises(ShardingTypeError, match="lhs is unreduced while rhs is not"):
            y + ft.device_put(x, P("x", None))
        with pytest.raises(NotImplementedError, match="unreduced rule for cos"):
            fnp.cos(y)  # JAX 0.10.2: the same NotImplementedError
    # JAX 0.10.2: float32[4@X,2]{U:Y} (axes named X, Y there), blocks [[0,1],[2,3]], zeros,
    # [[4,5],[6,7]], zeros; the reshard gives the value; float32[4,2]{R:X}
    assert str(ft.typeof(y)) == "float64[4@x,2]{U:y}"
    assert [b.data.tolist() for b in y.addressable_shards] == [
        [[0.0, 1.0], [2.0, 3.0]], [[0.0, 0.0], [0.0, 0.0]],
        [[4.0, 5.0], [6.0, 7.0]], [[0.0, 0.0], [0.0, 0.0]]]
    np.testing.assert_array_equal(z, x)
    assert z.sharding.spec == P("x", None) and str(ft.typeof(w)) == "float64[4,2]{R:x}"
    assert all(np.array_equal(b.data, x) for b in w.addressable_shards)
    assert str(ft.typeof(twice)) == "float64[4@x,2]{U:y}"
    assert [b.data.tolist() for b in twice.addressable_shards][:2] == [
        [[0.0, 2.0], [4.0, 6.0]], [[0.0, 0.0], [0.0, 0.0]]]
    np.testing.assert_array_equal(np.asarray(twice), 2 * x)  # the value: the blocks' sum


def test_a_product_left_unreduced_holds_each_devices_partial_sum():
    with ft.config.override(num_cpu_devices=2), set_mesh(ft.make_mesh((2,), ("X",))):
        a = ft.device_put(np.arange(4.0).reshape(2, 2), P(None, "X"))
        b = ft.device_put(np.arange(4.0, 8.0).reshape(2, 2), P("X", None))
        c = fnp.einsum("ij,jk->ik", a, b, out_sharding=P(None, None, unreduced={"X"}))
        c2 = fnp.einsum("ij,jk->ik", 2.0 * a, b, out_sharding=P(None, None, unreduced={"X"}))
        total = ft.reshard(c, P(None, None))
        both = c + c2
    # JAX 0.10.2 (the sharding-in-types guide): float32[2,2]{U:X}; device 0 holds
    # [[0, 0], [8, 10]], device 1 [[6, 7], [18, 21]]; resharded: [[6, 7], [26, 31]]
    assert str(ft.typeof(c)) == "float64[2,2]{U:X}" and str(ft.typeof(both)) == str(ft.typeof(c))
    assert [s.data.tolist() for s in c.addressable_shards] == [[[0.0, 0.0], [8.0, 10.0]],
                                                               [[6.0, 7.0], [18.0, 21.0]]]
    np.testing.assert_array_equal(total, [[6.0, 7.0], [26.0, 31.0]])
    np.testing.assert_array_equal(np.asarray(both), 3 * np.array([[6.0, 7.0], [26.0, 31.0]]))


def test_shard_map_gives_and_returns_partial_sums_over_unreduced_axes():
    with ft.config.override(num_cpu_devices=2), set_mesh(ft.make_mesh((2,), ("X",))):
        a = ft.device_put(fnp.arange(4.0).reshape(2, 2), P(None, "X"))
        b = ft.device_put(fnp.arange(4.0, 8.0).reshape(2, 2), P("X", None))

        @ft.shard_map(in_specs=(P(None, "X"), P("X", None)),
                      out_specs=P(None, None, unreduced={"X"}))
        def partial_product(u, v):
            return ft.lax.pcast(u @ v, "X", to="unreduced")

        @ft.shard_map(in_specs=(P(None, None, unreduced={"X"}), P(None, None, reduced={"X"})),
                      out_specs=(P(None, None, unreduced={"X"}), P(None, None, reduced={"X"})))
        def through(u, r):
            return u, r
        c = partial_product(a, b)
        u, r = through(c, ft.reshard(fnp.ones((2, 2)), P(None, None, reduced={"X"})))

        def loss(p, q):
            return fnp.sum(ft.reshard(partial_product(p, q), P(None, None)) ** 2)
        grads = ft.grad(loss, argnums=(0, 1))(a, b)
        jit_grads = ft.jit(ft.grad(loss, argnums=(0, 1)))(a, b)
    # JAX 0.10.2: float32[2,2]{U:X}, device 0 [[0, 0], [8, 10]], device 1 [[6, 7], [18, 21]];
    # passed through unchanged; gradients [[118, 170], [518, 746]], [[104, 124], [168, 200]]
    blocks = [[[0.0, 0.0], [8.0, 10.0]], [[6.0, 7.0], [18.0, 21.0]]]
    assert str(ft.typeof(c)) == "float64[2,2]{U:X}"
    assert [s.data.tolist() for s in c.addressable_shards] == blocks
    assert [s.data.tolist() for s in u.addressable_shards] == blocks
    np.testing.assert_array_equal(r, np.ones((2, 2)))
    for ga, gb in (grads, jit_grads):
        np.testing.assert_array_equal(ga, [[118.0, 170.0], [518.0, 746.0]])
        np.testing.assert_array_equal(gb, [[104.0, 124.0], [168.0, 200.0]])


def test_a_scalar_left_unreduced_crosses_shard_map():
    with ft.config.override(num_cpu_devices=2), set_mesh(ft.make_mesh((2,), ("i",))):
        xs = ft.device_put(fnp.arange(8.0), P("i"))
        xu = fnp.einsum("i,i->", xs, xs, out_sharding=P(unreduced={"i"}))
        r = ft.shard_map(lambda c: c + c, in_specs=P(unreduced={"i"}),
                         out_specs=P(unreduced={"i"}))(xu)
        total = ft.reshard(r, P())
    # JAX 0.10.2: float32[]{U:i} [14, 126]; float32[]{U:i} [28, 252]; 280
    assert str(ft.typeof(xu)) == "float64[]{U:i}" and str(ft.typeof(r)) == "float64[]{U:i}"
    assert [s.data.tolist() for s in xu.addressable_shards] == [14.0, 126.0]
    assert [s.data.tolist() for s in r.addressable_shards] == [28.0, 252.0]
    assert float(total) == 280.0


def test_gradients_contracting_a_split_batch_on_explicit_axes():
    x_np, w_np = np.arange(32.0).reshape(8, 4), np.arange(8.0).reshape(4, 2) / 10
    with ft.config.override(num_cpu_devices=2), set_mesh(ft.make_mesh((2,), ("X",))):
        x = ft.device_put(x_np, P("X", None))
        w = ft.device_put(w_np, P(None, None))

        def loss(w, x):
            return fnp.sum((x @ w) ** 2)
        eager = ft.grad(loss, argnums=(0, 1))(w, x)
        jitted = ft.jit(ft.grad(loss, argnums=(0, 1)))(w, x)
        with pytest.raises(ShardingTypeError, match="Contracting dimensions are sharded"):
            ft.jit(lambda u: u.T @ u)(x)  # a product the user wrote stays ambiguous
    # JAX 0.10.2 (the sharding-in-types AD guide): float32[4,2] -> float32[4,2],
    # float32[8@X,4] -> float32[8@X,4]
    assert str(ft.typeof(eager[0])) == "float64[4,2]"
    c = x_np @ w_np
    for dw, dx in (eager, jitted):
        assert ft.typeof(dw).sharding.spec == P(None, None)  # (not split)
        assert str(ft.typeof(dx)) == "float64[8@X,4]"
        np.testing.assert_allclose(dw, x_np.T @ (2 * c), rtol=1e-14)
        np.testing.assert_allclose(dx, 2 * c @ w_np.T, rtol=1e-14)


def test_shard_map_inside_jit_infers_in_specs_from_the_jit_arguments_placement():
    blocks = []
    with set_mesh(ft.make_mesh((4,), ("b",))):
        x = ft.device_put(fnp.arange(8.0), P("b"))
        w = ft.device_put(fnp.arange(8.0) / 8, P())

        @ft.shard_map(out_specs=P())
        def f(x, w):
            blocks.append((x.shape, w.shape))
            return ft.lax.psum(fnp.sum(x * w[:2]), "b")
        direct = ft.jit(f)(x, w)
        grad = ft.jit(ft.grad(f))(x, w)
        nested = ft.jit(lambda a, v: ft.jit(f)(a, v))(x, w)
        with pytest.raises(NotImplementedError, match="pass in_specs"):
            ft.jit(lambda a, v: f(a * 2, v))(x, w)  # JAX 0.10.2 infers 8@b from types: 4.0
    # JAX 0.10.2: blocks (2,) and (8,); 2.0; [0, .125, 0, .125, ...]; 2.0
    assert set(blocks[:3]) == {((2,), (8,))}
    assert float(direct) == 2.0 and float(nested) == 2.0
    np.testing.assert_array_equal(grad, [0.0, 0.125] * 4)


def test_reshard_on_an_abstract_mesh_of_other_axes_over_the_same_devices():
    x_np = np.arange(32.0).reshape(8, 4)
    with ft.config.override(num_cpu_devices=8), set_mesh(ft.make_mesh((4, 2), ("X", "Y"))):
        x = ft.device_put(x_np, P("X", "Y"))

        @ft.jit
        def f(x):
            a = ft.sharding.AbstractMesh((8,), ("A",), (AxisType.Explicit,))
            with ft.sharding.use_abstract_mesh(a):
                return ft.reshard(x, P("A", None)) * 2
        z = f(x)
    # JAX 0.10.2: float32[8@A,4] (here the same split named by the mesh's axes, 8@(X,Y)),
    # one row per device, device 1 holding [[8, 10, 12, 14]]
    assert str(ft.typeof(z)) == "float64[8@(X,Y),4]"
    assert [s.data.shape for s in z.addressable_shards] == [(1, 4)] * 8
    assert z.addressable_shards[1].data.tolist() == [[8.0, 10.0, 12.0, 14.0]]
    np.testing.assert_array_equal(z, 2 * x_np)


def test_typeof_inside_shard_map_shows_the_axes_a_value_varies_over():
    seen = []
    with ft.config.override(num_cpu_devices=8), set_mesh(ft.make_mesh((4, 2), ("i", "j"))):
        @ft.shard_map(in_specs=P("i", "j"), out_specs=P("i"))
        def f(x):
            y = ft.lax.psum(x, "j")
            seen.extend([str(ft.typeof(x)), str(ft.typeof(y)),
                         ft.typeof(y).manual_axis_type.varying])
            return y

        @ft.shard_map(in_specs=P(), out_specs=P())
        def g(x):
            y = ft.lax.pcast(x, "i", to="varying")
            seen.extend([str(ft.typeof(x)), str(ft.typeof(y)),
                         str(ft.typeof(ft.lax.psum(y, "i"))), str(ft.typeof(y * x))])
            return ft.lax.psum(y, "i") / 4
        out = f(ft.device_put(fnp.arange(32.0).reshape(8, 4), P("i", "j")))
        same = g(fnp.arange(6.0))
    # JAX 0.10.2 (the shard_map guide): float32[2,2]{V:(i,j)}, float32[2,2]{V:i}, {'i'};
    # float32[6], float32[6]{V:i}, float32[6], float32[6]{V:i}
    assert seen == ["float64[2,2]{V:(i,j)}", "float64[2,2]{V:i}", frozenset({"i"}),
                    "float64[6]", "float64[6]{V:i}", "float64[6]", "float64[6]{V:i}"]
    x = np.arange(32.0).reshape(8, 4)
    np.testing.assert_array_equal(out, x[:, :2] + x[:, 2:])
    np.testing.assert_array_equal(same, np.arange(6.0))
