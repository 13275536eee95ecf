"""JAX's API on functrans.lax and functrans.numpy: ``lax.Precision`` and
``preferred_element_type`` on every product, ``lax.broadcast_shapes``, ``lax.pswapaxes``,
the dtype names and predicates of ``functrans.numpy``, and the error types JAX raises.

Oracles: NumPy for values, Python loops for collectives, and JAX's behaviour for semantics.
Values and messages marked "JAX 0.10.2" were obtained by running JAX (with x64 enabled, as
functrans's default) and are hard-coded here.

Tolerances: products of small integers and of values exactly representable in the compute
dtype are exact (compared with ``==``); products of random floats may sum in another order
than NumPy's BLAS, a few ulps for these short contractions, so ``rtol=1e-12`` in float64.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, strategies as st

import functrans as ft
import functrans.numpy as fnp
from functrans import lax
from functrans.numpy import dtype_utils, scalar_types

Precision, Preset = lax.Precision, lax.DotAlgorithmPreset
BAD_PRECISION = "Precision argument must be one of"


# ---- lax.Precision and lax.DotAlgorithmPreset ----------------------------------------------------
def test_precision_members_print_as_in_jax():
    # JAX 0.10.2: values 0/1/2, str() the name, repr() "Precision.NAME".
    assert [(p.name, p.value) for p in Precision] == [("DEFAULT", 0), ("HIGH", 1),
                                                      ("HIGHEST", 2)]
    assert str(Precision.HIGH) == "HIGH" and repr(Precision.HIGHEST) == "Precision.HIGHEST"
    assert Precision["HIGH"] is Precision.HIGH and Precision(2) is Precision.HIGHEST


@pytest.mark.parametrize("name, member", [
    ("default", "DEFAULT"), ("bfloat16", "DEFAULT"), ("fastest", "DEFAULT"), ("high", "HIGH"),
    ("tensorfloat32", "HIGH"), ("bfloat16_3x", "HIGH"), ("highest", "HIGHEST"),
    ("float32", "HIGHEST"), (None, "DEFAULT")])
def test_precision_from_jax_strings(name, member):
    assert Precision(name) is Precision[member]  # JAX 0.10.2's mapping


@pytest.mark.parametrize("bad", ["foo", "DEFAULT", 3, 1.5])
def test_precision_rejects_other_values(bad):
    with pytest.raises(ValueError, match="is not a valid Precision"):
        Precision(bad)


def test_dot_algorithm_preset_members_as_in_jax():
    # JAX 0.10.2's members and values, in order.
    names = ["DEFAULT", "ANY_F8_ANY_F8_F32", "ANY_F8_ANY_F8_F32_FAST_ACCUM", "ANY_F8_ANY_F8_ANY",
             "ANY_F8_ANY_F8_ANY_FAST_ACCUM", "F16_F16_F16", "F16_F16_F32", "BF16_BF16_BF16",
             "BF16_BF16_F32", "BF16_BF16_F32_X3", "BF16_BF16_F32_X6", "BF16_BF16_F32_X9",
             "TF32_TF32_F32", "TF32_TF32_F32_X3", "F32_F32_F32", "F64_F64_F64"]
    assert [(p.name, p.value) for p in Preset] == [(n, i + 1) for i, n in enumerate(names)]
    assert str(Preset.F32_F32_F32) == "F32_F32_F32"
    assert repr(Preset.DEFAULT) == "DotAlgorithmPreset.DEFAULT"


def _conv_oracle(x, k):
    """Valid 2-d cross-correlation of NCHW x with OIHW k, by loops."""
    n, _, h, w = x.shape
    o, _, kh, kw = k.shape
    out = np.zeros((n, o, h - kh + 1, w - kw + 1), np.result_type(x, k))
    for i in range(out.shape[2]):
        for j in range(out.shape[3]):
            out[:, :, i, j] = np.einsum("nchw,ochw->no", x[:, :, i:i + kh, j:j + kw], k)
    return out


_DN = (((1,), (0,)), ((), ()))
# name -> (function of (a, b, **kw), NumPy oracle, operand shapes)
PRODUCTS = {
    "fnp.dot": (fnp.dot, np.dot, (3, 4), (4, 2)),
    "fnp.vdot": (fnp.vdot, np.vdot, (3, 4), (3, 4)),
    "fnp.matmul": (fnp.matmul, np.matmul, (2, 3, 4), (4, 5)),
    "fnp.inner": (fnp.inner, np.inner, (3, 4), (2, 4)),
    "fnp.tensordot": (lambda a, b, **kw: fnp.tensordot(a, b, 1, **kw),
                      lambda a, b: np.tensordot(a, b, 1), (3, 4), (4, 2)),
    "fnp.einsum": (lambda a, b, **kw: fnp.einsum("ij,jk->ik", a, b, **kw),
                   lambda a, b: np.einsum("ij,jk->ik", a, b), (3, 4), (4, 2)),
    "fnp.vecdot": (fnp.vecdot, lambda a, b: np.sum(a * b, -1), (3, 4), (3, 4)),
    "lax.dot": (lax.dot, np.dot, (3, 4), (4, 2)),
    "lax.dot_general": (lambda a, b, **kw: lax.dot_general(a, b, _DN, **kw), np.dot,
                        (3, 4), (4, 2)),
    "lax.batch_matmul": (lambda a, b, precision=None: lax.batch_matmul(a, b, precision),
                         np.matmul, (2, 3, 4), (2, 4, 5)),
    "lax.conv": (lambda a, b, **kw: lax.conv(a, b, (1, 1), "VALID", **kw), _conv_oracle,
                 (1, 2, 4, 4), (3, 2, 2, 2)),
    "lax.conv_general_dilated": (
        lambda a, b, **kw: lax.conv_general_dilated(a, b, (1, 1), "VALID", **kw),
        _conv_oracle, (1, 2, 4, 4), (3, 2, 2, 2)),
    "lax.conv_with_general_padding": (
        lambda a, b, **kw: lax.conv_with_general_padding(a, b, (1, 1), [(0, 0)] * 2, None,
                                                         None, **kw),
        _conv_oracle, (1, 2, 4, 4), (3, 2, 2, 2)),
}
NO_PREFERRED = {"lax.batch_matmul"}
PRECISIONS = [None, "highest", "float32", "bfloat16", Precision.HIGH, ("high", "default"),
              (Precision.HIGHEST, Precision.DEFAULT), Preset.DEFAULT, "DEFAULT"]


def _operands(name, dtype, seed=0):
    _, _, sa, sb = PRODUCTS[name]
    rng = np.random.default_rng(seed)
    return rng.normal(size=sa).astype(dtype), rng.normal(size=sb).astype(dtype)


@pytest.mark.parametrize("name", sorted(PRODUCTS))
@pytest.mark.parametrize("precision", PRECISIONS, ids=str)
def test_precision_is_accepted_and_changes_nothing(name, precision):
    fn, oracle, _, _ = PRODUCTS[name]
    for dtype, rtol in ((np.float64, 1e-12), (np.float32, 1e-5)):
        a, b = _operands(name, dtype)
        plain = np.asarray(fn(a, b))
        got = np.asarray(fn(a, b, precision=precision))
        np.testing.assert_array_equal(got, plain)  # CPU computes at full precision anyway
        assert got.dtype == dtype
        np.testing.assert_allclose(got, oracle(a.astype(np.float64), b.astype(np.float64)),
                                   rtol=rtol, atol=rtol)


@pytest.mark.parametrize("name", sorted(PRODUCTS))
@pytest.mark.parametrize("bad", ["foo", 3, 1.5, (Precision.HIGH,), (Precision.HIGH, "foo"),
                                 (Precision.HIGH, None), ("high",) * 3], ids=str)
def test_invalid_precision_is_jaxs_value_error(name, bad):
    fn, _, _, _ = PRODUCTS[name]
    a, b = _operands(name, np.float32)
    with pytest.raises(ValueError, match=BAD_PRECISION):
        fn(a, b, precision=bad)


@pytest.mark.parametrize("name", sorted(set(PRODUCTS) - NO_PREFERRED))
def test_preferred_int32_accumulates_int8_without_overflow(name):
    fn, oracle, _, _ = PRODUCTS[name]
    _, _, sa, sb = PRODUCTS[name]
    a, b = np.full(sa, 100, np.int8), np.full(sb, 2, np.int8)
    got = fn(a, b, preferred_element_type="int32")
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, oracle(a.astype(np.int32), b.astype(np.int32)))


@pytest.mark.parametrize("name", sorted(set(PRODUCTS) - NO_PREFERRED))
def test_preferred_float64_computes_float32_operands_in_float64(name):
    fn, oracle, _, _ = PRODUCTS[name]
    a, b = _operands(name, np.float32, seed=1)
    got = fn(a, b, preferred_element_type=np.float64)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, oracle(a.astype(np.float64), b.astype(np.float64)),
                               rtol=1e-12)


def test_preferred_type_without_a_product_in_jax_golden_cases():
    # JAX 0.10.2: int8 sums wrap without a preferred type and not with int32; a float product
    # asked for an int32 result is computed in float and then converted (1.4 -> 1).
    big = fnp.full((2, 2), 100, "int8")
    assert fnp.einsum("ij->", big, preferred_element_type="int32") == 400
    assert fnp.einsum("ij,j", big, fnp.full(2, 2, "int8")).tolist() == [-112, -112]
    assert fnp.einsum("ij,j", big, fnp.full(2, 2, "int8"),
                      preferred_element_type="int32").tolist() == [400, 400]
    x = fnp.array([0.7, 0.7], "float32")
    assert fnp.einsum("i->", x, preferred_element_type="int32") == 1
    assert lax.dot(x, fnp.ones(2, "float32"), preferred_element_type="int32") == 1
    assert fnp.dot(x, fnp.ones(2, "float32"), preferred_element_type="int32").dtype == np.int32
    assert fnp.dot(2, fnp.ones(2), preferred_element_type="float32").dtype == np.float32
    assert lax.dot(fnp.ones(2, "float32"), fnp.ones(2, "float32"),
                   preferred_element_type="float16").dtype == np.float16


@pytest.mark.parametrize("fn", [
    lambda a, b, t: lax.dot(a, b, preferred_element_type=t),
    lambda a, b, t: fnp.dot(a, b, preferred_element_type=t),
    lambda a, b, t: fnp.einsum("i,i", a, b, preferred_element_type=t)])
@pytest.mark.parametrize("dtype, preferred", [("int32", "int8"), ("int32", "bool"),
                                              ("int64", "int32")])
def test_narrower_preferred_integer_type_is_a_type_error(fn, dtype, preferred):
    x = np.ones(2, dtype)
    with pytest.raises(TypeError, match="must not be narrower than the original type"):
        fn(x, x, preferred)


@pytest.mark.parametrize("dtype, preferred, message", [
    ("float32", "int32", "Input type is incompatible"), ("complex64", "float32", "incompatible"),
    ("int8", "uint32", "same signedness"), ("float64", "float32", "must not be narrower")])
def test_convolution_preferred_type_rules_as_in_jax(dtype, preferred, message):
    x = np.ones((1, 1, 3, 3), dtype)
    with pytest.raises(TypeError, match=message):
        lax.conv(x, x[..., :2, :2], (1, 1), "VALID", preferred_element_type=preferred)


def test_convolution_int8_accumulates_in_preferred_int32():
    x, k = np.full((1, 2, 4, 4), 100, np.int8), np.full((1, 2, 2, 2), 3, np.int8)
    got = lax.conv(x, k, (1, 1), "VALID", preferred_element_type="int32")
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, _conv_oracle(x.astype(np.int32), k.astype(np.int32)))


def test_algorithm_presets_round_the_operands():
    x = np.array([1.1, 2.3, 0.7])
    got = lax.dot(x, x, precision=Preset.F32_F32_F32)
    assert got.dtype == np.float64
    # Computed in float32: within a float32 rounding of that computation, and visibly off the
    # float64 product (by 2.3e-7 here).
    in32 = float(np.dot(x.astype(np.float32), x.astype(np.float32)))
    np.testing.assert_allclose(float(got), in32, rtol=2.0 ** -23)
    assert abs(float(got) - float(np.dot(x, x))) > 1e-9
    assert float(lax.dot(x, x, precision="F64_F64_F64")) == float(np.dot(x, x))
    in16 = float(np.dot(x.astype(np.float16), x.astype(np.float16)))
    np.testing.assert_allclose(float(lax.dot(x, x, precision=Preset.F16_F16_F16)), in16,
                               rtol=2.0 ** -10)
    f32 = x.astype(np.float32)
    assert lax.dot(f32, f32, precision=Preset.F64_F64_F64).dtype == np.float32
    with pytest.raises(NotImplementedError, match="bfloat16"):
        lax.dot(x, x, precision=Preset.BF16_BF16_F32)
    with pytest.raises(NotImplementedError, match="F32_F32_F32"):
        lax.conv(np.ones((1, 1, 2, 2)), np.ones((1, 1, 1, 1)), (1, 1), "VALID",
                 precision=Preset.F32_F32_F32)


@pytest.mark.parametrize("lhs, rhs, value, dtype", [
    # JAX 0.10.2: operands of different dtypes meet in the more precise one.
    (np.array([1, 2], np.int8), np.array([1.5, 2], np.float32), 5.5, np.float32),
    (np.array([1j, 2], np.complex64), np.array([1, 2], np.float64), 4 + 1j, np.complex64),
    (np.array([1, 2], np.int8), np.array([1, 2], np.uint8), 5, np.int8),
    (np.array([1, 2], np.int32), np.array([1, 2], np.uint32), 5, np.int32),
    (np.array([True, False]), np.array([1, 2], np.int8), 1, np.int8),
    (np.array([1, 2], np.float16), np.array([1, 2], np.int32), 5, np.float16)])
def test_dot_general_of_mixed_dtypes_as_in_jax(lhs, rhs, value, dtype):
    got = lax.dot_general(lhs, rhs, (((0,), (0,)), ((), ())))
    assert got.dtype == dtype and complex(got) == value


@pytest.mark.parametrize("shapes, dims, message", [
    # JAX 0.10.2's TypeErrors, word for word.
    (((2, 3), (2, 3)), (((1,), (0,)), ((), ())),
     "dot_general requires contracting dimensions to have the same shape, got (3,) and (2,)."),
    (((2, 3), (3,)), (((5,), (0,)), ((), ())),
     "dot_general requires lhs dimension numbers to be nonnegative and less than the number of "
     "axes of the lhs value, got lhs_batch of () and lhs_contracting of (5,) for lhs of rank 2"),
    (((2, 3), (3,)), (((1,), (0,)), ((0,), ())),
     "dot_general requires equal numbers of lhs_batch and rhs_batch dimensions, got lhs_batch "
     "(0,) and rhs_batch ()."),
    (((2, 3), (3, 3)), (((1,), (1,)), ((0,), (0,))),
     "dot_general requires lhs batch dimensions and rhs batch dimensions to have the same "
     "shape, got (2,) and (3,)."),
    (((2, 3), (2, 3)), (((1, 1), (1, 0)), ((), ())),
     "dot_general requires lhs contracting dimensions to be distinct, got lhs_contracting "
     "(1, 1)."),
    (((2, 3), (2, 3)), (((1,), (1,)), ((0,), (1,))),
     "dot_general requires rhs batch dimensions to be disjoint from contracting dimensions, "
     "got rhs_batch (1,) and rhs_contracting (1,).")])
def test_dot_general_dimension_errors_are_jaxs_type_errors(shapes, dims, message):
    with pytest.raises(TypeError) as info:
        lax.dot_general(np.ones(shapes[0]), np.ones(shapes[1]), dims)
    assert str(info.value) == message


@pytest.mark.parametrize("call", [
    lambda: fnp.dot(np.ones((2, 3)), np.ones((2, 3))), lambda: fnp.dot(np.ones(3), np.ones(2)),
    lambda: fnp.matmul(np.ones((2, 3)), np.ones((2, 3))), lambda: np.ones((2, 3)) @ fnp.ones(2),
    lambda: fnp.ones((2, 3)) @ fnp.ones((2, 3)), lambda: fnp.vdot(np.ones(3), np.ones(2)),
    lambda: fnp.inner(np.ones(3), np.ones(2)), lambda: fnp.tensordot(np.ones(3), np.ones(2), 1),
    lambda: lax.dot_general(np.ones(3), np.ones(2), (((0,), (0,)), ((), ())))])
def test_mismatched_products_are_type_errors(call):
    # JAX 0.10.2 raises TypeError("dot_general requires contracting dimensions ...") for each.
    with pytest.raises(TypeError, match="dot_general requires contracting dimensions"):
        call()


def test_lax_dot_shapes_and_dimension_numbers():
    # JAX 0.10.2: lax.dot takes only simple products unless given dimension_numbers.
    for a, b in (((2,), (3,)), ((2, 3), (2, 3)), ((2, 3, 4), (4,)), ((2,), ())):
        with pytest.raises(ValueError, match="dimension_numbers must be specified"):
            lax.dot(np.ones(a), np.ones(b))
    x, y = np.arange(24.0).reshape(2, 3, 4), np.arange(8.0).reshape(2, 4)
    got = lax.dot(x, y, dimension_numbers=(((2,), (1,)), ((0,), (0,))))
    np.testing.assert_array_equal(got, np.einsum("bij,bj->bi", x, y))


def test_batch_matmul_errors_as_in_jax():
    with pytest.raises(ValueError, match="at least 2D, got 1, 2"):
        lax.batch_matmul(np.ones(2), np.ones((2, 2)))
    with pytest.raises(ValueError, match="same ndim, got 3, 2"):
        lax.batch_matmul(np.ones((1, 2, 2)), np.ones((2, 2)))


def test_out_sharding_is_accepted_when_it_asks_for_an_unsplit_value():
    a = np.ones((2, 2))
    unsplit = ft.typeof(a).sharding  # JAX: NamedSharding(AbstractMesh(()), P(None, None))
    assert unsplit.mesh.empty and not unsplit.mesh.are_all_axes_explicit
    assert tuple(unsplit.spec) == (None, None) and unsplit.shard_shape((2, 2)) == (2, 2)
    for fn in (fnp.dot, fnp.matmul, lambda x, y, **kw: fnp.einsum("ij,jk", x, y, **kw),
               lambda x, y, **kw: lax.dot_general(x, y, _DN, **kw)):
        np.testing.assert_array_equal(fn(a, a, out_sharding=None), a @ a)
        np.testing.assert_array_equal(fn(a, a, out_sharding=unsplit), a @ a)
        with pytest.raises(TypeError, match="out_sharding"):  # JAX 0.10.2: TypeError
            fn(a, a, out_sharding="x")


def test_creation_and_sampling_take_out_sharding_and_place_concrete_results():
    import inspect
    assert "out_sharding" in inspect.signature(ft.random.normal).parameters
    key = ft.random.PRNGKey(0)
    np.testing.assert_array_equal(ft.random.normal(key, (3,), out_sharding=None),
                                  ft.random.normal(key, (3,)))
    mesh = ft.sharding.make_mesh((1,), ("x",))
    split = ft.sharding.NamedSharding(mesh, ft.sharding.P("x"))
    placed = fnp.zeros((4,), out_sharding=split)
    assert placed.sharding == split and placed.tolist() == [0.0] * 4
    with pytest.raises(NotImplementedError, match="traced values carry no sharding"):
        ft.jit(lambda v: fnp.ones_like(v, out_sharding=split))(fnp.ones(4))


# ---- lax.broadcast_shapes ------------------------------------------------------------------------
@given(st.lists(st.lists(st.integers(0, 3), max_size=4), min_size=1, max_size=4))
def test_broadcast_shapes_matches_numpy(shapes):
    try:
        want = np.broadcast_shapes(*map(tuple, shapes))
    except ValueError:
        with pytest.raises(ValueError, match="Incompatible shapes for broadcasting: shapes="):
            lax.broadcast_shapes(*shapes)
        return
    got = lax.broadcast_shapes(*shapes)
    assert got == want and all(type(d) is int for d in got)


def test_broadcast_shapes_errors():
    # JAX 0.10.2's message for incompatible shapes; negative sizes are its TypeError.
    with pytest.raises(ValueError) as info:
        lax.broadcast_shapes((2,), (3,))
    assert str(info.value) == "Incompatible shapes for broadcasting: shapes=[(2,), (3,)]"
    with pytest.raises(TypeError, match="Only non-negative indices"):
        lax.broadcast_shapes((-1,), (1,))
    with pytest.raises(ValueError, match="at least one shape"):
        lax.broadcast_shapes()
    with pytest.raises(TypeError):
        lax.broadcast_shapes((2.5,))


# ---- lax.pswapaxes and all_to_all's axis_index_groups --------------------------------------------
def _swap_oracle(xs, axis, groups=None):
    """Member i gets x_j[..., r(i), ...] at index r(j) for j in i's group (r: rank in group)."""
    n = xs.shape[0]
    groups = groups or [list(range(n))]
    out = np.empty_like(xs)
    for g in groups:
        for p, i in enumerate(g):
            for q, j in enumerate(g):
                dst = [slice(None)] * (xs.ndim - 1)
                dst[axis] = q
                src = [slice(None)] * (xs.ndim - 1)
                src[axis] = p
                out[i][tuple(dst)] = xs[j][tuple(src)]
    return out


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("mapper", ["vmap", "pmap"])
def test_pswapaxes_swaps_the_named_axis_with_an_array_axis(axis, mapper):
    n = 4
    shape = [3, 3]
    shape[axis] = n
    xs = np.arange(n * 12, dtype=np.float64).reshape((n, *shape))
    f = lambda v: lax.pswapaxes(v, "i", axis)  # noqa: E731
    with ft.config.override(num_cpu_devices=n):
        got = ft.vmap(f, axis_name="i")(xs) if mapper == "vmap" else ft.pmap(f, "i")(xs)
    np.testing.assert_array_equal(got, _swap_oracle(xs, axis % 2))


@pytest.mark.parametrize("mapper", ["vmap", "pmap"])
def test_pswapaxes_within_axis_index_groups(mapper):
    groups = [[0, 2], [3, 1]]
    xs = np.arange(4 * 2 * 3, dtype=np.float64).reshape(4, 2, 3)
    f = lambda v: lax.pswapaxes(v, "i", 0, axis_index_groups=groups)  # noqa: E731
    with ft.config.override(num_cpu_devices=4):
        got = ft.vmap(f, axis_name="i")(xs) if mapper == "vmap" else ft.pmap(f, "i")(xs)
    np.testing.assert_array_equal(got, _swap_oracle(xs, 0, groups))


@pytest.mark.parametrize("tiled", [False, True])
def test_all_to_all_with_one_group_is_all_to_all(tiled):
    xs = np.arange(4 * 4 * 2, dtype=np.float64).reshape(4, 4, 2)
    whole = ft.vmap(lambda v: lax.all_to_all(v, "i", 0, 1, tiled=tiled), axis_name="i")(xs)
    grouped = ft.vmap(lambda v: lax.all_to_all(v, "i", 0, 1, tiled=tiled,
                                               axis_index_groups=[[0, 1, 2, 3]]),
                      axis_name="i")(xs)
    np.testing.assert_array_equal(grouped, whole)


def test_pswapaxes_gradient_is_the_swap_back():
    # d/dx sum(w * swap(x)) = swap^T(w), and pswapaxes is its own transpose.
    xs = np.arange(9.0).reshape(3, 3)
    w = np.linspace(-1, 1, 9).reshape(3, 3)
    swap = ft.vmap(lambda v: lax.pswapaxes(v, "i", 0), axis_name="i")
    g = ft.grad(lambda x: fnp.sum(swap(x) * w))(xs)
    np.testing.assert_array_equal(g, _swap_oracle(w, 0))
    np.testing.assert_array_equal(ft.jit(swap)(xs), xs.T)


def test_pswapaxes_errors():
    with pytest.raises(ValueError, match="equal x.shape\\[split_axis\\], but they are 3 and 2"):
        ft.vmap(lambda v: lax.pswapaxes(v, "i", 0), axis_name="i")(np.ones((3, 2)))
    for groups, message in (([[0, 1], [2]], "same size"), ([[0, 1], [1, 2]], "exactly once")):
        with pytest.raises(ValueError, match=message):
            ft.vmap(lambda v: lax.pswapaxes(v, "i", 0, axis_index_groups=groups),
                    axis_name="i")(np.ones((3, len(groups[0]))))


# ---- dtype names and predicates ------------------------------------------------------------------
def test_scalar_types_are_classes_as_in_jax():
    for name in ("bool_", "int8", "uint32", "float16", "float32", "float64", "complex64",
                 "complex128"):
        t = getattr(fnp, name)
        assert isinstance(t, type) and t.__module__ == "functrans.numpy"
        np_type = np.dtype(name.rstrip("_")).type
        assert t == np_type and hash(t) == hash(np_type) and {t: 1}[np_type] == 1
        assert fnp.dtype(t) == np.dtype(np_type) and t.dtype == np.dtype(np_type)
        assert isinstance(np_type(0), t) and not isinstance(fnp.zeros((), t), t)
    assert fnp.float32 != "float32"  # as np.float32 (and JAX's)
    assert str(fnp.float32) == "<class 'functrans.numpy.float32'>"
    z = fnp.complex64(1 + 2j)
    assert z.dtype == np.complex64 and complex(z) == 1 + 2j
    assert fnp.float32([1, 2]).dtype == np.float32 and float(fnp.float32("1.5")) == 1.5
    assert fnp.zeros(2, fnp.complex128).dtype == np.complex128


def test_dtype_names_jax_has():
    # Aliases as in JAX 0.10.2; abstract categories and dtype/ComplexWarning are NumPy's own.
    assert fnp.float_ is fnp.float64 and fnp.complex_ is fnp.complex128
    assert fnp.csingle is fnp.complex64 and fnp.cdouble is fnp.complex128
    assert fnp.single is fnp.float32 and fnp.double is fnp.float64 and fnp.bool is fnp.bool_
    assert fnp.int_ is fnp.int64 and fnp.uint is fnp.uint64
    for name in ("generic", "number", "integer", "signedinteger", "unsignedinteger", "floating",
                 "complexfloating", "inexact", "character", "flexible", "object_"):
        assert getattr(fnp, name) is getattr(np, name)
    assert fnp.dtype is np.dtype and fnp.ComplexWarning is np.exceptions.ComplexWarning
    assert set(scalar_types.__all__) <= set(dir(fnp))
    assert set(dtype_utils.__all__) <= set(dir(fnp))


# (expression, JAX 0.10.2's result); a type means JAX raised it.
PREDICATES = [
    ("iscomplexobj(fnp.float32)", False), ("iscomplexobj(fnp.complex64)", True),
    ("iscomplexobj(np.complex64)", TypeError), ("iscomplexobj(np.dtype('complex64'))", TypeError),
    ("iscomplexobj('complex64')", False), ("iscomplexobj(1j)", True),
    ("iscomplexobj([1j])", True), ("iscomplexobj((1.0,))", False), ("iscomplexobj(None)", False),
    ("iscomplexobj(np.ones(2, complex))", True), ("iscomplexobj(fnp.ones(2))", False),
    ("iscomplexobj(np.complex64(1))", True), ("iscomplexobj(fnp.ones(2) * 1j)", True),
    ("isrealobj(fnp.float32)", True), ("isrealobj(fnp.complex64)", False),
    ("isrealobj(np.complex64)", TypeError), ("isrealobj([1.0])", True), ("isrealobj(None)", True),
    ("isscalar(fnp.float32)", False), ("isscalar(np.float32)", False), ("isscalar(1.0)", True),
    ("isscalar(fnp.array(1.0))", True), ("isscalar(np.float32(1))", True),
    ("isscalar([1])", False), ("isscalar(np.array(1.0))", True), ("isscalar('a')", True),
    ("isscalar(None)", False), ("isscalar(np.dtype('float32'))", False),
    ("isscalar(fnp.ones(2))", False),
    ("issubdtype(fnp.float32, fnp.floating)", True), ("issubdtype(fnp.float32, np.floating)", True),
    ("issubdtype(np.float32, fnp.float32)", True),
    ("issubdtype(fnp.complex64, fnp.complexfloating)", True),
    ("issubdtype('int8', fnp.integer)", True), ("issubdtype(fnp.ones(2), fnp.floating)", True),
    ("issubdtype(fnp.bool_, fnp.integer)", False), ("issubdtype(fnp.float32, 'float32')", True),
    ("issubdtype(None, fnp.floating)", True), ("issubdtype(fnp.float32, float)", False),
    ("issubdtype(float, fnp.floating)", True), ("issubdtype(int, fnp.integer)", True),
    ("issubdtype('foo', fnp.floating)", TypeError),
    ("isdtype(fnp.float32, 'real floating')", True), ("isdtype(fnp.float32, fnp.float32)", True),
    ("isdtype(np.dtype('int8'), ('integral',))", True),
    ("isdtype('float32', 'real floating')", True), ("isdtype(fnp.ones(2), 'real floating')", True),
    ("isdtype(fnp.float32, 'foo')", ValueError), ("isdtype(fnp.float32, 3)", TypeError),
    ("isdtype(fnp.float32, 'numeric')", True), ("isdtype(fnp.bool_, 'bool')", True),
    ("isdtype(fnp.bool_, 'numeric')", False), ("isdtype(fnp.complex64, 'complex floating')", True),
    ("isdtype(fnp.uint8, 'unsigned integer')", True), ("isdtype(fnp.int8, 'signed integer')", True),
    ("isdtype(fnp.int8, np.int8)", True), ("isdtype(fnp.int8, fnp.integer)", TypeError),
    ("isdtype(fnp.float32, 'float32')", True),
    ("isdtype(fnp.float32, ('bool', fnp.float32))", True),
    ("isdtype(fnp.float32, ['bool'])", TypeError), ("isdtype(fnp.float32, None)", False),
    ("isdtype(fnp.ones(2), fnp.ones(2))", True),
    ("finfo(fnp.float32).eps", np.float32(1.1920929e-07)), ("iinfo(fnp.int8).max", 127),
    ("finfo(fnp.ones(2)).eps", np.finfo(np.float64).eps), ("finfo(fnp.int32)", ValueError),
    ("promote_types(fnp.float32, fnp.int8)", np.dtype("float32")),
    ("promote_types('int8', 'uint8')", np.dtype("int16")),
    ("promote_types(fnp.int64, fnp.uint64)", np.dtype("float64")),
    ("promote_types(fnp.ones(2), fnp.float32)", np.dtype("float64")),
    ("result_type(fnp.float32, 1.0)", np.dtype("float32")),
    ("result_type(fnp.int8, fnp.uint8)", np.dtype("int16")), ("result_type()", ValueError),
    ("result_type([1.0])", TypeError), ("can_cast(fnp.float32, fnp.int32)", False),
    ("can_cast(fnp.ones(2), fnp.int32)", False), ("can_cast(1, fnp.int32)", TypeError),
    ("can_cast(fnp.float32, fnp.float16, 'same_kind')", True),
    ("can_cast(fnp.float32, fnp.float16, 'bogus')", ValueError),
]


@pytest.mark.parametrize("expr, want", PREDICATES, ids=[e for e, _ in PREDICATES])
def test_dtype_predicates_as_in_jax(expr, want):
    scope = {"fnp": fnp, "np": np, **{n: getattr(fnp, n) for n in dtype_utils.__all__}}
    if isinstance(want, type):
        with pytest.raises(want):
            eval(expr, scope)
    else:
        got = eval(expr, scope)
        assert got == want and type(got) is type(want)


# ---- lax's dtype errors --------------------------------------------------------------------------
BINARY = ["add", "sub", "mul", "div", "rem", "max", "min", "atan2", "nextafter", "eq", "ne",
          "lt", "le", "gt", "ge", "complex"]


@pytest.mark.parametrize("name", BINARY)
def test_lax_binary_ops_refuse_mixed_dtypes(name):
    fn = getattr(lax, name)
    # JAX 0.10.2: "lax.add requires arguments to have the same dtypes, got float32, float64."
    for x, y, shown in ((np.ones(2, np.float32), np.ones(2, np.float64), "float32, float64"),
                        (1, 1.0, "int64, float64"), (np.ones(2, np.float32), 1, "float32, int64"),
                        (1.0, np.ones(2, np.float32) < 0, "float64, bool")):
        with pytest.raises(TypeError, match=f"lax.{name} requires arguments to have the same "
                                            f"dtypes, got {shown}"):
            fn(x, y)


def test_lax_weak_scalars_take_their_partners_dtype_within_a_kind():
    f32 = np.ones(2, np.float32)
    assert lax.add(f32, 1.0).dtype == np.float32  # as JAX's default (32-bit) mode
    assert lax.mul(np.ones(2, np.int8), 3).dtype == np.int8
    r = lax.add(1, 2)
    assert r.dtype == np.int64 and r.weak_type  # JAX 0.10.2: Array(3, weak_type=True)
    for bad in ((np.ones(2, np.int32), 1.5), (True, np.ones(2, np.int32)),
                (np.ones(2, np.float32), 1j)):
        with pytest.raises(TypeError, match="requires arguments to have the same dtypes"):
            lax.add(*bad)
    with pytest.raises(TypeError, match="lax.select requires arguments to have the same dtypes"):
        lax.select(np.array([True]), np.ones(1, np.float32), np.ones(1, np.float64))
    with pytest.raises(TypeError, match="got float32, float64, float32"):
        lax.clamp(np.float32(0), np.ones(1), np.float32(1))


def test_lax_pow_takes_integer_exponents():
    # JAX 0.10.2: an integer exponent is accepted with an inexact base; inexact ones must match.
    x = np.array([2.0, 3.0], np.float32)
    got = lax.pow(x, np.array([3, 2], np.int32))
    assert got.dtype == np.float32 and got.tolist() == [8.0, 9.0]
    assert lax.pow(x, 2).tolist() == [4.0, 9.0]
    with pytest.raises(TypeError, match="two inexact dtypes must match, but got float32 and "
                                        "float64"):
        lax.pow(x, np.ones(2))
    with pytest.raises(TypeError, match="does not accept dtype bool"):
        lax.pow(np.array([True]), np.array([True]))


# ---- lists and tuples where JAX wants arrays -----------------------------------------------------
_L = [1.0, 2.0]
_A = np.ones(2)
_M = [[1.0, 2.0], [3.0, 4.0]]
# The calls JAX 0.10.2 was probed with; REFUSED maps a name to (call index, position) pairs
# for which JAX raised "<name> requires ndarray or scalar arguments, got <class 'list'> at
# position <position>.".
CALLS = [lambda f: f(_L), lambda f: f(_L, _L), lambda f: f(_L, 0), lambda f: f(_A, _L),
         lambda f: f(_L, _A), lambda f: f(_M), lambda f: f(_M, _M), lambda f: f(_L, _L, _L),
         lambda f: f(_A, _A, _L), lambda f: f(_A, _L, _A), lambda f: f(1, _L), lambda f: f(_L, 1),
         lambda f: f(_L, 2), lambda f: f(_M, 1), lambda f: f(_L, [0]), lambda f: f(_A, [0]),
         lambda f: f(_A, 1, _L)]
REFUSED = {
    "abs": ((0, 0),), "absolute": ((0, 0),), "acos": ((0, 0),), "acosh": ((0, 0),),
    "add": ((1, 0), (3, 1)), "all": ((0, 0),), "allclose": ((1, 0), (3, 1)), "amax": ((0, 0),),
    "amin": ((0, 0),), "angle": ((0, 0),), "any": ((0, 0),), "append": ((1, 0),),
    "apply_along_axis": ((7, 0),), "apply_over_axes": ((7, 0),), "arccos": ((0, 0),),
    "arccosh": ((0, 0),), "arcsin": ((0, 0),), "arcsinh": ((0, 0),), "arctan": ((0, 0),),
    "arctan2": ((1, 0), (3, 1)), "arctanh": ((0, 0),), "argmax": ((0, 0),), "argmin": ((0, 0),),
    "argpartition": ((2, 0),), "argsort": ((0, 0),), "argwhere": ((0, 0),), "around": ((0, 0),),
    "array_split": ((1, 0),), "asin": ((0, 0),), "asinh": ((0, 0),), "astype": ((1, 0),),
    "atan": ((0, 0),), "atan2": ((1, 0), (3, 1)), "atanh": ((0, 0),),
    "atleast_1d": ((0, 0), (3, 1)), "atleast_2d": ((0, 0), (3, 1)),
    "atleast_3d": ((0, 0), (3, 1)), "bincount": ((0, 0),), "bitwise_and": ((1, 0), (3, 1)),
    "bitwise_count": ((0, 0),), "bitwise_invert": ((0, 0),),
    "bitwise_left_shift": ((1, 0), (3, 1)), "bitwise_not": ((0, 0),),
    "bitwise_or": ((1, 0), (3, 1)), "bitwise_right_shift": ((1, 0), (3, 1)),
    "bitwise_xor": ((1, 0), (3, 1)), "broadcast_arrays": ((0, 0), (3, 1)),
    "broadcast_to": ((1, 0),), "cbrt": ((0, 0),), "ceil": ((0, 0),), "choose": ((1, 0),),
    "clip": ((0, 0),), "column_stack": ((5, 0),), "compress": ((1, 0), (3, 1)),
    "concat": ((5, 0),), "concatenate": ((5, 0),), "conj": ((0, 0),), "conjugate": ((0, 0),),
    "convolve": ((1, 0), (3, 1)), "copy": ((0, 0),), "copysign": ((1, 0), (3, 1)),
    "corrcoef": ((0, 0), (3, 1)), "correlate": ((1, 0), (3, 1)), "cos": ((0, 0),),
    "cosh": ((0, 0),), "count_nonzero": ((0, 0),), "cov": ((0, 0), (3, 1)),
    "cross": ((1, 0), (3, 1)), "cumprod": ((0, 0),), "cumsum": ((0, 0),),
    "cumulative_prod": ((0, 0),), "cumulative_sum": ((0, 0),), "deg2rad": ((0, 0),),
    "degrees": ((0, 0),), "delete": ((1, 0), (3, 1)), "diag": ((0, 0),),
    "diag_indices_from": ((0, 0),), "diagflat": ((0, 0),), "diagonal": ((0, 0),),
    "diff": ((0, 0),), "digitize": ((1, 0), (3, 1)), "divide": ((1, 0), (3, 1)),
    "divmod": ((1, 0), (3, 1)), "dot": ((1, 0), (3, 1)), "dsplit": ((1, 0),), "dstack": ((5, 0),),
    "ediff1d": ((0, 0),), "einsum": ((14, 0),), "empty_like": ((0, 0),),
    "equal": ((1, 0), (3, 1)), "exp": ((0, 0),), "exp2": ((0, 0),), "expand_dims": ((1, 0),),
    "expm1": ((0, 0),), "extract": ((1, 0), (3, 1)), "eye": ((7, 0),), "fabs": ((0, 0),),
    "flatnonzero": ((0, 0),), "flip": ((0, 0),), "fliplr": ((0, 0),), "flipud": ((0, 0),),
    "float_power": ((1, 0), (3, 1)), "floor": ((0, 0),), "floor_divide": ((1, 0), (3, 1)),
    "fmax": ((1, 0), (3, 1)), "fmin": ((1, 0), (3, 1)), "fmod": ((1, 0), (3, 1)),
    "frexp": ((0, 0),), "full": ((1, 0),), "full_like": ((1, 0), (3, 1)), "gcd": ((1, 0), (3, 1)),
    "greater": ((1, 0), (3, 1)), "greater_equal": ((1, 0), (3, 1)), "heaviside": ((1, 0), (3, 1)),
    "histogram": ((0, 0), (3, 1)), "histogram2d": ((1, 0), (3, 1)),
    "histogram_bin_edges": ((0, 0), (3, 1)), "histogramdd": ((0, 0),), "hsplit": ((1, 0),),
    "hstack": ((5, 0),), "hypot": ((1, 0), (3, 1)), "i0": ((0, 0),), "imag": ((0, 0),),
    "inner": ((1, 0), (3, 1)), "insert": ((7, 0), (8, 2)), "interp": ((7, 0), (8, 2)),
    "intersect1d": ((1, 0), (3, 1)), "invert": ((0, 0),), "isclose": ((1, 0), (3, 1)),
    "iscomplex": ((0, 0),), "isfinite": ((0, 0),), "isin": ((1, 0), (3, 1)), "isinf": ((0, 0),),
    "isnan": ((0, 0),), "isneginf": ((0, 0),), "isposinf": ((0, 0),), "isreal": ((0, 0),),
    "ix_": ((0, 0), (3, 1)), "kron": ((1, 0), (3, 1)), "lcm": ((1, 0), (3, 1)),
    "ldexp": ((1, 0), (3, 1)), "left_shift": ((1, 0), (3, 1)), "less": ((1, 0), (3, 1)),
    "less_equal": ((1, 0), (3, 1)), "lexsort": ((5, 0),), "linspace": ((1, 0), (3, 1)),
    "log": ((0, 0),), "log10": ((0, 0),), "log1p": ((0, 0),), "log2": ((0, 0),),
    "logaddexp": ((1, 0), (3, 1)), "logaddexp2": ((1, 0), (3, 1)),
    "logical_and": ((1, 0), (3, 1)), "logical_not": ((0, 0),), "logical_or": ((1, 0), (3, 1)),
    "logical_xor": ((1, 0), (3, 1)), "matmul": ((1, 0), (3, 1)), "matrix_transpose": ((0, 0),),
    "matvec": ((1, 0), (3, 1)), "max": ((0, 0),), "maximum": ((1, 0), (3, 1)), "mean": ((0, 0),),
    "median": ((0, 0),), "meshgrid": ((0, 0), (3, 1)), "min": ((0, 0),),
    "minimum": ((1, 0), (3, 1)), "mod": ((1, 0), (3, 1)), "modf": ((0, 0),),
    "moveaxis": ((7, 0),), "multiply": ((1, 0), (3, 1)), "nan_to_num": ((0, 0),),
    "nanargmax": ((0, 0),), "nanargmin": ((0, 0),), "nancumprod": ((0, 0),),
    "nancumsum": ((0, 0),), "nanmax": ((0, 0),), "nanmean": ((0, 0),), "nanmedian": ((0, 0),),
    "nanmin": ((0, 0),), "nanpercentile": ((1, 0), (3, 1)), "nanprod": ((0, 0),),
    "nanquantile": ((1, 0), (3, 1)), "nanstd": ((0, 0),), "nansum": ((0, 0),),
    "nanvar": ((0, 0),), "negative": ((0, 0),), "nextafter": ((1, 0), (3, 1)),
    "nonzero": ((0, 0),), "not_equal": ((1, 0), (3, 1)), "ones_like": ((0, 0),),
    "outer": ((1, 0), (3, 1)), "packbits": ((0, 0),), "pad": ((1, 0),), "partition": ((2, 0),),
    "percentile": ((1, 0), (3, 1)), "permute_dims": ((1, 0),), "piecewise": ((7, 0),),
    "poly": ((0, 0),), "polyadd": ((1, 0), (3, 1)), "polyder": ((0, 0),),
    "polyint": ((0, 0), (16, 1)), "polymul": ((1, 0), (3, 1)), "polysub": ((1, 0), (3, 1)),
    "polyval": ((1, 0), (3, 1)), "positive": ((0, 0),), "pow": ((1, 0), (3, 1)),
    "power": ((1, 0), (3, 1)), "prod": ((0, 0),), "ptp": ((0, 0),), "quantile": ((1, 0), (3, 1)),
    "rad2deg": ((0, 0),), "radians": ((0, 0),), "ravel": ((0, 0),), "real": ((0, 0),),
    "reciprocal": ((0, 0),), "remainder": ((1, 0), (3, 1)), "repeat": ((1, 0), (3, 1)),
    "reshape": ((1, 0),), "resize": ((2, 0),), "right_shift": ((1, 0), (3, 1)), "rint": ((0, 0),),
    "roll": ((1, 0),), "rollaxis": ((2, 0),), "roots": ((0, 0),), "rot90": ((0, 0),),
    "round": ((0, 0),), "searchsorted": ((1, 0), (3, 1)), "select": ((6, 0), (7, 4)),
    "setdiff1d": ((1, 0), (3, 1)), "sign": ((0, 0),), "signbit": ((0, 0),), "sin": ((0, 0),),
    "sinc": ((0, 0),), "sinh": ((0, 0),), "sort": ((0, 0),), "sort_complex": ((0, 0),),
    "spacing": ((0, 0),), "split": ((1, 0),), "sqrt": ((0, 0),), "square": ((0, 0),),
    "squeeze": ((0, 0),), "stack": ((5, 0),), "std": ((0, 0),), "subtract": ((1, 0), (3, 1)),
    "sum": ((0, 0),), "take": ((1, 0), (3, 1)), "tan": ((0, 0),), "tanh": ((0, 0),),
    "tensordot": ((1, 0), (3, 1)), "tile": ((1, 0),), "trace": ((0, 0),), "transpose": ((0, 0),),
    "trapezoid": ((0, 0), (3, 1)), "tril": ((0, 0),), "tril_indices_from": ((0, 0),),
    "trim_zeros": ((0, 0),), "triu": ((0, 0),), "triu_indices_from": ((0, 0),),
    "true_divide": ((1, 0), (3, 1)), "trunc": ((0, 0),), "union1d": ((1, 0), (3, 1)),
    "unique": ((0, 0),), "unique_all": ((0, 0),), "unique_counts": ((0, 0),),
    "unique_inverse": ((0, 0),), "unique_values": ((0, 0),), "unpackbits": ((0, 0),),
    "unravel_index": ((1, 0),), "unstack": ((0, 0),), "unwrap": ((0, 0),), "vander": ((0, 0),),
    "var": ((0, 0),), "vdot": ((1, 0), (3, 1)), "vecdot": ((1, 0), (3, 1)),
    "vecmat": ((1, 0), (3, 1)), "vsplit": ((1, 0),), "vstack": ((5, 0),),
    "where": ((0, 0), (3, 1)), "zeros_like": ((0, 0),),
    "take_along_axis": ((None, 0), (None, 1)),
}
_SPECIAL = {("take_along_axis", 0): lambda f: f(_L, np.zeros(1, int), 0),
            ("take_along_axis", 1): lambda f: f(_A, [0], 0)}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_lists_are_refused_where_jax_refuses_them(name):
    fn = getattr(fnp, name)
    for index, position in REFUSED[name]:
        call = _SPECIAL[name, position] if index is None else CALLS[index]
        with pytest.raises(TypeError, match=f"requires ndarray or scalar arguments, got <class "
                                            f"'list'> at position {position}\\.$"):
            call(fn)


def test_refusal_message_is_jaxs():
    # JAX 0.10.2, word for word.
    with pytest.raises(TypeError) as info:
        fnp.sum([1, 2])
    assert str(info.value) == ("sum requires ndarray or scalar arguments, got <class 'list'> "
                               "at position 0.")
    with pytest.raises(TypeError, match="got <class 'tuple'> at position 1"):
        fnp.add(np.ones(2), (1, 2))
    with pytest.raises(TypeError, match="concatenate .* at position 1"):
        fnp.concatenate([np.ones(2), [1.0]])
    with pytest.raises(TypeError, match="einsum .* at position 1"):
        fnp.einsum("i,i", np.ones(2), [1.0, 2.0])
    with pytest.raises(TypeError, match="requires ndarray or scalar arguments"):
        fnp.ones(2) + [1.0, 2.0]


@pytest.mark.parametrize("call", [
    lambda: fnp.linalg.det([[1.0, 0.0], [0.0, 1.0]]), lambda: fnp.linalg.solve(np.eye(2), [1, 2]),
    lambda: fnp.linalg.norm([3.0, 4.0]), lambda: fnp.linalg.multi_dot([np.eye(2), [[1, 2]]]),
    lambda: fnp.fft.fft([1.0, 2.0]), lambda: fnp.fft.fftshift([1.0, 2.0]),
    lambda: fnp.swapaxes([[1.0]], 0, 1), lambda: fnp.average([1.0, 2.0]),
    lambda: fnp.logspace(0, [1, 2], 3), lambda: fnp.fill_diagonal(np.eye(2), [1, 2],
                                                                  inplace=False),
    lambda: fnp.put_along_axis(np.ones(2), [0], 1.0, 0), lambda: fnp.in1d(np.ones(2), [1])])
def test_lists_refused_by_the_other_checked_functions(call):
    # Each of these checks its arguments in JAX 0.10.2 (ensure_arraylike in its source).
    with pytest.raises(TypeError, match="requires ndarray or scalar arguments"):
        call()


@pytest.mark.parametrize("call, want", [
    # JAX 0.10.2 accepts sequences here: constructors, shapes, axes, widths and counts.
    (lambda m: m.array([1, 2]), np.array([1, 2])), (lambda m: m.asarray((1.0, 2.0)), [1.0, 2.0]),
    (lambda m: m.zeros([2]), np.zeros(2)), (lambda m: m.full([2], 3), [3, 3]),
    (lambda m: m.pad(m.ones(2), [(1, 1)]), [0, 1, 1, 0]),
    (lambda m: m.reshape(m.ones(4), [2, 2]), np.ones((2, 2))),
    (lambda m: m.tile(m.ones(2), [2]), np.ones(4)),
    (lambda m: m.transpose(m.ones((2, 3)), [1, 0]), np.ones((3, 2))),
    (lambda m: m.split(m.arange(4), [1, 2])[1], [1]),
    (lambda m: m.roll(m.arange(3), [1], [0]), [2, 0, 1]),
    (lambda m: m.select([m.arange(2) > 0], [m.ones(2)]), [0, 1]),
    (lambda m: m.stack([m.ones(2), m.zeros(2)]), [[1, 1], [0, 0]]),
    (lambda m: m.array_equal([1], [1]), True),
    (lambda m: m.broadcast_shapes([2, 1], [3]), (2, 3)),
    (lambda m: m.block([[m.ones(1), m.zeros(1)]]), [[1, 0]]),
    (lambda m: m.iscomplexobj([1j]), True)])
def test_sequences_still_accepted_where_jax_accepts_them(call, want):
    np.testing.assert_array_equal(call(fnp), np.asarray(want))
    np.testing.assert_array_equal(call(np), np.asarray(want))  # the oracle agrees


def test_like_constructors_take_shape_dtype_structs():
    import functrans as ft
    s = ft.ShapeDtypeStruct((2, 3), np.float32)
    for fn, want in ((fnp.zeros_like, 0.0), (fnp.ones_like, 1.0),
                     (lambda a: fnp.full_like(a, 7.0), 7.0)):
        out = fn(s)
        assert out.shape == (2, 3) and out.dtype == np.float32
        np.testing.assert_array_equal(out, np.full((2, 3), want, np.float32))
    with pytest.raises(TypeError, match="zeros_like requires ndarray or scalar arguments"):
        fnp.zeros_like([1, 2])
