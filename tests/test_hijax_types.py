"""High-level (hijax) types: JAX's quantized-array example through jit, grad, vjp, vmap and
scan, against the same computation on plain arrays (the oracle), and the errors."""
from dataclasses import dataclass

import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp
from functrans.core.mesh import NamedSharding
from functrans.experimental.hijax import HiType, ShapedArray, VJPHiPrimitive, register_hitype
from functrans.tree_util import tree_leaves


@dataclass(frozen=True)
class QArray:
    qvalue: object  # int8[*leading, n]
    scale: object   # f32[*leading]


@dataclass(frozen=True)
class QArrayTy(HiType):
    shape: tuple

    def lo_ty(self):
        return [ShapedArray(self.shape, np.int8), ShapedArray(self.shape[:-1], np.float32)]

    def lower_val(self, q):
        return [q.qvalue, q.scale]

    def raise_val(self, qvalue, scale):
        return QArray(qvalue, scale)

    def to_tangent_aval(self):
        return ShapedArray(self.shape, np.float32)

    def str_short(self, short_dtypes=False, mesh_axis_types=False):
        return f"q8[{','.join(map(str, self.shape))}]"

    __repr__ = str_short


register_hitype(QArray, lambda q: QArrayTy(tuple(q.qvalue.shape)))


def _quantize_arrays(x):
    scale = fnp.max(fnp.abs(x), axis=-1) / 127.0
    return fnp.round(x / scale[..., None]).astype(fnp.int8), scale


class Quantize(VJPHiPrimitive):
    def __init__(self, x_aval):
        if x_aval.dtype != np.float32:
            raise TypeError(f"quantize takes float32, got {x_aval.dtype}")
        self.in_avals, self.out_aval, self.params = (x_aval,), QArrayTy(x_aval.shape), {}
        super().__init__()

    def expand(self, x):
        return QArray(*_quantize_arrays(x))

    def vjp_fwd(self, nzs_in, x):  # straight-through estimator
        return self(x), None

    def vjp_bwd_retval(self, _res, g):
        return (g,)


class Dequantize(VJPHiPrimitive):
    def __init__(self, q_aval):
        self.in_avals = (q_aval,)
        self.out_aval, self.params = ShapedArray(q_aval.shape, np.float32), {}
        super().__init__()

    def expand(self, q):
        return q.qvalue.astype(fnp.float32) * q.scale[..., None]

    def vjp_fwd(self, nzs_in, q):
        return self(q), None

    def vjp_bwd_retval(self, _res, g):
        return (g,)


class MatmulQ(VJPHiPrimitive):
    def __init__(self, x_aval, q_aval):
        self.in_avals = (x_aval, q_aval)
        self.out_aval = ShapedArray((x_aval.shape[0], q_aval.shape[1]), np.float32)
        self.params = {}
        super().__init__()

    def expand(self, x, q):
        return (x * q.scale) @ q.qvalue.astype(fnp.float32)

    def vjp_fwd(self, nzs_in, x, q):
        return self(x, q), (x, q)

    def vjp_bwd_retval(self, res, g):
        x, q = res
        w = dequantize(q)  # rules are traced code: primitives, not attributes
        return g @ w.T, x.T @ g


def quantize(x):
    return Quantize(ft.typeof(x))(x)


def dequantize(q):
    return Dequantize(ft.typeof(q))(q)


def matmul_q(x, q):
    return MatmulQ(ft.typeof(x), ft.typeof(q))(x, q)


def _oracle_roundtrip(x):
    """Quantize then dequantize on plain NumPy arrays."""
    x = np.asarray(x, np.float32)
    scale = np.max(np.abs(x), axis=-1) / np.float32(127.0)
    return np.round(x / scale[..., None]).astype(np.int8).astype(np.float32) * scale[..., None]


X = np.array([[1., 2., 3.], [4., -5., 6.]], np.float32)
W = (np.arange(12., dtype=np.float32).reshape(3, 4) / 12.)

# Values are exact: every operation is float32 on both sides, done in the same order.
EXACT = dict(rtol=0, atol=0)


def test_eager_values_and_type():
    q = quantize(fnp.asarray(X))
    assert type(q) is QArray and str(ft.typeof(q)) == "q8[2,3]"
    np.testing.assert_array_equal(np.asarray(q.qvalue), [[42, 85, 127], [85, -106, 127]])
    np.testing.assert_allclose(np.asarray(dequantize(q)), _oracle_roundtrip(X), **EXACT)
    # a high-level value is one leaf to users' tree functions, as in JAX
    assert tree_leaves({"q": q}) == [q]


def test_jit_takes_returns_and_carries_high_level_values():
    x = fnp.asarray(X)
    q = ft.jit(quantize)(x)
    assert type(q) is QArray and str(ft.typeof(q)) == "q8[2,3]"
    np.testing.assert_allclose(np.asarray(ft.jit(dequantize)(q)), _oracle_roundtrip(X), **EXACT)
    np.testing.assert_allclose(np.asarray(ft.jit(lambda x: dequantize(quantize(x)))(x)),
                               _oracle_roundtrip(X), **EXACT)
    seen = []
    ft.jit(lambda q: seen.append(str(ft.typeof(q))) or dequantize(q))(q)
    assert seen == ["q8[2,3]"]


def test_matmul_against_dequantized_oracle():
    x, qw = fnp.asarray(X), quantize(fnp.asarray(W))
    w = _oracle_roundtrip(W)
    # float32 products summed in a different order than x @ w: a few ulps
    np.testing.assert_allclose(np.asarray(matmul_q(x, qw)), X @ w, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(ft.jit(matmul_q)(x, qw)), X @ w, rtol=1e-6)


def test_grad_through_straight_through_estimator():
    x = fnp.asarray(X)
    g = ft.grad(lambda x: fnp.sum(dequantize(quantize(x))))(x)
    np.testing.assert_array_equal(np.asarray(g), np.ones((2, 3), np.float32))
    g = ft.jit(ft.grad(lambda x: fnp.sum(dequantize(quantize(x)) ** 2)))(x)
    np.testing.assert_allclose(np.asarray(g), 2 * _oracle_roundtrip(X), rtol=1e-6)


def test_grad_with_respect_to_a_high_level_value_has_its_tangent_type():
    q = quantize(fnp.asarray(X))
    loss = lambda q: fnp.sum(dequantize(q) ** 2)  # noqa: E731
    for g in (ft.grad(loss)(q), ft.jit(ft.grad(loss))(q), ft.grad(ft.jit(loss))(q)):
        assert str(ft.typeof(g)) == "float32[2,3]"
        np.testing.assert_allclose(np.asarray(g), 2 * _oracle_roundtrip(X), rtol=1e-6)
    out, f_vjp = ft.vjp(dequantize, q)
    (ct,) = f_vjp(fnp.ones((2, 3), fnp.float32))
    assert str(ft.typeof(ct)) == "float32[2,3]"


def test_grad_of_mixed_operands():
    x, qw = fnp.asarray(X), quantize(fnp.asarray(W))
    gx, gw = ft.grad(lambda x, q: fnp.sum(matmul_q(x, q) ** 2), argnums=(0, 1))(x, qw)
    w = _oracle_roundtrip(W)
    y = X @ w
    # oracle: d sum((x w)^2) = 2 (x w) w^T, 2 x^T (x w)
    np.testing.assert_allclose(np.asarray(gx), 2 * y @ w.T, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(gw), 2 * X.T @ y, rtol=1e-5)


def test_vmap_stacks_high_level_values_against_a_loop():
    xs = np.arange(24., dtype=np.float32).reshape(4, 2, 3) + 1
    qs = ft.vmap(quantize)(fnp.asarray(xs))
    assert str(ft.typeof(qs)) == "q8[4,2,3]"
    back = ft.vmap(dequantize)(qs)
    np.testing.assert_allclose(np.asarray(back),
                               np.stack([_oracle_roundtrip(x) for x in xs]), **EXACT)
    g = ft.vmap(ft.grad(lambda x: fnp.sum(dequantize(quantize(x)) ** 2)))(fnp.asarray(xs))
    np.testing.assert_allclose(np.asarray(g), np.stack([2 * _oracle_roundtrip(x) for x in xs]),
                               rtol=1e-6)


def test_scan_carries_and_stacks_high_level_values():
    xs = np.arange(24., dtype=np.float32).reshape(4, 2, 3)

    def step(qtotal, x):
        return quantize(dequantize(qtotal) + x), quantize(2 * x + 1)

    qzero = quantize(fnp.zeros((2, 3), fnp.float32) + 1)
    qtotal, qys = ft.lax.scan(step, qzero, fnp.asarray(xs))
    assert str(ft.typeof(qtotal)) == "q8[2,3]" and str(ft.typeof(qys)) == "q8[4,2,3]"
    total = _oracle_roundtrip(np.ones((2, 3), np.float32))  # the same loop on plain arrays
    for x in xs:
        total = _oracle_roundtrip(total + x)
    np.testing.assert_allclose(np.asarray(dequantize(qtotal)), total, **EXACT)
    np.testing.assert_allclose(np.asarray(ft.vmap(dequantize)(qys)),
                               np.stack([_oracle_roundtrip(2 * x + 1) for x in xs]), **EXACT)
    # scanning over a stack of them: the body sees one q8[2,3] per step
    tot, _ = ft.lax.scan(lambda c, q: (c + fnp.sum(dequantize(q)), None), 0.0, qys)
    np.testing.assert_allclose(float(tot), sum(_oracle_roundtrip(2 * x + 1).sum() for x in xs),
                               rtol=1e-6)


def test_traced_value_hides_its_class_attributes():
    q = quantize(fnp.asarray(X))
    with pytest.raises(AttributeError, match="q8.2,3. has no attribute 'qvalue'"):
        ft.jit(lambda q: q.qvalue)(q)


def test_class_built_from_traced_arrays_is_refused():
    def bad_quantize(x):
        return QArray(*_quantize_arrays(x))
    with pytest.raises(TypeError, match="QArray holding traced arrays"):
        ft.jit(bad_quantize)(fnp.asarray(X))


def test_primitive_argument_kind_is_checked():
    with pytest.raises(TypeError, match="should be a value of type q8"):
        Dequantize(QArrayTy((2, 3)))(fnp.asarray(X))
    q = quantize(fnp.asarray(X))
    with pytest.raises(TypeError, match="should be an array of type"):
        ft.jit(lambda q: Quantize(ShapedArray((2, 3), np.float32))(q))(q)


def test_register_hitype_checks_its_arguments():
    with pytest.raises(TypeError, match="must be a class"):
        register_hitype("QArray", lambda q: None)
    with pytest.raises(TypeError, match="must be a function"):
        register_hitype(QArray, "QArrayTy")


def test_shaped_array_sharding_keyword():
    from functrans.core.mesh import AbstractMesh, AxisType, P
    mesh = AbstractMesh((4,), ("i",), (AxisType.Explicit,))
    s = NamedSharding(mesh, P("i"))
    assert str(ShapedArray((8, 3), np.float32, sharding=s)) == "float32[8@i,3]"
    assert ShapedArray((8,), np.float32, sharding=s.update(spec=P())) == \
        ShapedArray((8,), np.float32)
    with pytest.raises(ValueError, match="does not divide"):
        ShapedArray((6, 3), np.float32, sharding=s)
    with pytest.raises(TypeError, match="unexpected arguments"):
        s.update(specs=P())


def test_types_under_a_mesh_name_its_abstract_mesh():
    # JAX: typeof of an unplaced value under set_mesh is unsplit on the context's abstract
    # mesh, and a product's out_sharding may be such a type's sharding.
    from functrans.core.config import config
    from functrans.core.mesh import P, make_mesh, set_mesh
    with config.override(num_cpu_devices=4):
        mesh = make_mesh((4,), ("i",))
        with set_mesh(mesh):
            x = fnp.ones((8, 3), fnp.float32)
            s = ft.typeof(x).sharding
            assert s.mesh == mesh.abstract_mesh and s.spec == P(None, None)
            rows = ft.device_put(x, P("i"))
            want = ft.typeof(rows).sharding
            y = fnp.matmul(x, fnp.ones((3, 2), fnp.float32), out_sharding=want)
            assert str(ft.typeof(y)) == "float32[8@i,2]"
            np.testing.assert_array_equal(np.asarray(y), np.full((8, 2), 3, np.float32))


def test_shard_map_with_a_high_level_partition_spec():
    from functrans.core.config import config
    from functrans.core.mesh import P, make_mesh, set_mesh
    from functrans.experimental.hijax import HiPspec

    @dataclass(frozen=True)
    class QArrayP(HiPspec):
        spec: object

        def to_lo(self):
            return (self.spec, self.spec)  # values and scales split together

    xs = np.arange(24., dtype=np.float32).reshape(8, 3) + 1
    with config.override(num_cpu_devices=4):
        with set_mesh(make_mesh((4,), ("i",))):
            rows = ft.device_put(fnp.asarray(xs), P("i"))
            shapes = []

            def quantize_shard(x):
                shapes.append(x.shape)
                return quantize(x)

            def dequantize_shard(q):
                shapes.append(str(ft.typeof(q)))
                return dequantize(q)

            for wrap in (lambda f: f, ft.jit):
                shapes.clear()
                q = wrap(ft.shard_map(quantize_shard, in_specs=P("i"),
                                      out_specs=QArrayP(P("i"))))(rows)
                assert str(ft.typeof(q)) == "q8[8,3]"
                assert q.qvalue.sharding.spec[0] == q.scale.sharding.spec[0] == "i"
                back = wrap(ft.shard_map(dequantize_shard, in_specs=QArrayP(P("i")),
                                         out_specs=P("i")))(q)
                assert shapes == [(2, 3), "q8[2,3]"]
                # per-row scales: quantizing shard by shard is quantizing the whole
                np.testing.assert_allclose(np.asarray(back), _oracle_roundtrip(xs), **EXACT)
                assert back.sharding.spec[0] == "i"


def test_traced_jaxpr_shows_high_level_values_as_jax_prints_them():
    x, qw = fnp.asarray(X), quantize(fnp.asarray(W))
    # JAX 0.10.2's text for these two programs
    assert str(ft.jit(lambda x: dequantize(quantize(x))).trace(x).jaxpr) == (
        "{ lambda ; a:f32[2,3]. let\n"
        "    b:q8[2,3] = call_hi_primitive[_prim=Quantize[{}]] a\n"
        "    c:f32[2,3] = call_hi_primitive[_prim=Dequantize[{}]] b\n"
        "  in (c,) }")
    assert str(ft.jit(matmul_q).trace(x, qw).jaxpr) == (
        "{ lambda ; a:f32[2,3] b:q8[3,4]. let\n"
        "    c:f32[2,4] = call_hi_primitive[_prim=MatmulQ[{}]] a b\n"
        "  in (c,) }")
    # a high-level value closed over is a constant of its type
    jaxpr = ft.jit(lambda x: matmul_q(x, qw)).trace(x).jaxpr
    assert [str(v.aval) for v in jaxpr.constvars] == ["q8[3,4]"]
    # what runs is the program of the arrays (the shown one is for reading)
    lowered = ft.jit(matmul_q).trace(x, qw).lower().as_text("jaxpr")
    assert "call_hi_primitive" not in lowered
    # programs without high-level values are shown as they are
    plain = ft.jit(lambda x: x * 2).trace(x)
    assert plain.jaxpr is plain._entry.jaxpr


class Triple(VJPHiPrimitive):
    """3 * dequantize(q), with a JVP rule instead of VJP rules."""

    def __init__(self, q_aval):
        self.in_avals = (q_aval,)
        self.out_aval, self.params = ShapedArray(q_aval.shape, np.float32), {}
        super().__init__()

    def expand(self, q):
        return 3 * (q.qvalue.astype(fnp.float32) * q.scale[..., None])

    def jvp(self, primals, tangents):
        (q,), (t,) = primals, tangents
        return self(q), 3 * t


def test_jvp_rule_on_a_high_level_argument_forward_and_reverse():
    q = quantize(fnp.asarray(X))
    f = lambda q: Triple(ft.typeof(q))(q)  # noqa: E731
    t = np.arange(6., dtype=np.float32).reshape(2, 3)
    out, tout = ft.jvp(f, (q,), (fnp.asarray(t),))
    np.testing.assert_allclose(np.asarray(out), 3 * _oracle_roundtrip(X), rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(tout), 3 * t)
    for grad in (ft.grad(lambda q: fnp.sum(f(q))), ft.jit(ft.grad(lambda q: fnp.sum(f(q))))):
        np.testing.assert_array_equal(np.asarray(grad(q)), np.full((2, 3), 3, np.float32))


@dataclass(frozen=True)
class Opaque:
    data: object


@dataclass(frozen=True)
class OpaqueTy(HiType):
    def lo_ty(self):
        return [ShapedArray((), np.float32)]

    def lower_val(self, o):
        return [o.data]

    def raise_val(self, data):
        return Opaque(data)


register_hitype(Opaque, lambda o: OpaqueTy())


def test_type_without_tangent_type_passes_jit_but_is_not_differentiated():
    o = Opaque(fnp.float32(2.0))
    assert type(ft.jit(lambda o: o)(o)) is Opaque
    with pytest.raises(TypeError, match="has no array tangent type"):
        ft.grad(lambda o: 1.0)(o)


def test_make_jaxpr_shows_high_level_values_and_its_jaxpr_runs():
    x, qw = fnp.asarray(X), quantize(fnp.asarray(W))
    jaxpr = ft.make_jaxpr(matmul_q)(x, qw)
    assert str(jaxpr) == ("{ lambda ; a:f32[2,3] b:q8[3,4]. let\n"
                          "    c:f32[2,4] = call_hi_primitive[_prim=MatmulQ[{}]] a b\n"
                          "  in (c,) }")
    # evaluating it applies the primitives: eagerly, under jit and under grad
    want = np.asarray(matmul_q(x, qw))
    np.testing.assert_array_equal(np.asarray(ft.eval_jaxpr(jaxpr, x, qw)[0]), want)
    # (compiled: float32 sums in another order, a few ulps)
    np.testing.assert_allclose(
        np.asarray(ft.jit(lambda x, q: ft.eval_jaxpr(jaxpr, x, q)[0])(x, qw)), want, rtol=1e-6)
    roundtrip = ft.make_jaxpr(lambda x: dequantize(quantize(x)))(x)
    g = ft.grad(lambda x: fnp.sum(ft.eval_jaxpr(roundtrip, x)[0]))(x)
    np.testing.assert_array_equal(np.asarray(g), np.ones((2, 3), np.float32))
    # static arguments stay Python values; a closed-over value is a constant of its type
    scaled = ft.make_jaxpr(lambda x, n: matmul_q(x * n, qw), static_argnums=1)(x, 2)
    assert [str(v.aval) for v in scaled.constvars] == ["q8[3,4]"]
    assert "mul b 2.0" in str(scaled)


def test_cond_and_loops_carry_high_level_values():
    q = quantize(fnp.asarray(X))
    twice = lambda q: quantize(dequantize(q) * 2)  # noqa: E731
    for pred in (True, False):
        for run in (lambda q: ft.lax.cond(pred, twice, lambda q: q, q),
                    ft.jit(lambda q: ft.lax.cond(pred, twice, lambda q: q, q))):
            out = run(q)
            want = _oracle_roundtrip(2 * _oracle_roundtrip(X)) if pred else _oracle_roundtrip(X)
            assert type(out) is QArray
            np.testing.assert_allclose(np.asarray(dequantize(out)), want, **EXACT)
    want = _oracle_roundtrip(X)  # the same loop on plain arrays
    for _ in range(3):
        want = _oracle_roundtrip(want + 1)
    step = lambda q: quantize(dequantize(q) + 1)  # noqa: E731
    n, out = ft.lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, step(c[1])), (0, q))
    np.testing.assert_allclose(np.asarray(dequantize(out)), want, **EXACT)
    out = ft.lax.fori_loop(0, 3, lambda i, q: step(q), q)
    np.testing.assert_allclose(np.asarray(dequantize(out)), want, **EXACT)


def test_mutable_high_level_values_are_refused_by_name():
    from functrans.experimental.hijax import MutableHiType

    class Cell:
        pass

    class CellTy(MutableHiType):
        has_qdd = True

        def __repr__(self):
            return "Cell{}"

    register_hitype(Cell, lambda c: CellTy())
    with pytest.raises(NotImplementedError, match="mutable high-level type Cell"):
        ft.jit(lambda c: 1.0)(Cell())
