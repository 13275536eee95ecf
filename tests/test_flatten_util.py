"""ravel_pytree: values against NumPy, result dtypes against the dtypes JAX's ravel_pytree gives,
derivatives against the exact ones, vmap against Python loops."""
import itertools
from collections import OrderedDict

import numpy as np
import pytest
from hypothesis import given, strategies as st

import functrans as ft
import functrans.numpy as fnp
from functrans import tree_util as tu
from functrans.flatten_util import ravel_pytree

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "float32", "float64", "complex64", "complex128"]
_SHORT = dict(zip(DTYPES, ["b", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f2", "f4", "f8",
                           "c8", "c16"]))
_LONG = {v: k for k, v in _SHORT.items()}

# The dtype of jax.flatten_util.ravel_pytree([zeros(1, a), zeros(1, b)]) for each pair of
# dtypes, printed by JAX 0.10.2 with jax_enable_x64 on and off. (JAX promotes over a lattice,
# not NumPy's table: i4+f2 is f2 here, f8 in NumPy.)
_JAX_PAIRS_X64 = """
b+i1=i1 b+i2=i2 b+i4=i4 b+i8=i8 b+u1=u1 b+u2=u2 b+u4=u4 b+u8=u8 b+f2=f2 b+f4=f4 b+f8=f8 b+c8=c8
b+c16=c16 i1+i2=i2 i1+i4=i4 i1+i8=i8 i1+u1=i2 i1+u2=i4 i1+u4=i8 i1+u8=f8 i1+f2=f2 i1+f4=f4
i1+f8=f8 i1+c8=c8 i1+c16=c16 i2+i4=i4 i2+i8=i8 i2+u1=i2 i2+u2=i4 i2+u4=i8 i2+u8=f8 i2+f2=f2
i2+f4=f4 i2+f8=f8 i2+c8=c8 i2+c16=c16 i4+i8=i8 i4+u1=i4 i4+u2=i4 i4+u4=i8 i4+u8=f8 i4+f2=f2
i4+f4=f4 i4+f8=f8 i4+c8=c8 i4+c16=c16 i8+u1=i8 i8+u2=i8 i8+u4=i8 i8+u8=f8 i8+f2=f2 i8+f4=f4
i8+f8=f8 i8+c8=c8 i8+c16=c16 u1+u2=u2 u1+u4=u4 u1+u8=u8 u1+f2=f2 u1+f4=f4 u1+f8=f8 u1+c8=c8
u1+c16=c16 u2+u4=u4 u2+u8=u8 u2+f2=f2 u2+f4=f4 u2+f8=f8 u2+c8=c8 u2+c16=c16 u4+u8=u8 u4+f2=f2
u4+f4=f4 u4+f8=f8 u4+c8=c8 u4+c16=c16 u8+f2=f2 u8+f4=f4 u8+f8=f8 u8+c8=c8 u8+c16=c16 f2+f4=f4
f2+f8=f8 f2+c8=c8 f2+c16=c16 f4+f8=f8 f4+c8=c8 f4+c16=c16 f8+c8=c16 f8+c16=c16 c8+c16=c16
"""
_JAX_PAIRS_X32 = """
b+i1=i1 b+i2=i2 b+i4=i4 b+i8=i4 b+u1=u1 b+u2=u2 b+u4=u4 b+u8=u4 b+f2=f2 b+f4=f4 b+f8=f4 b+c8=c8
b+c16=c8 i1+i2=i2 i1+i4=i4 i1+i8=i4 i1+u1=i2 i1+u2=i4 i1+u4=i4 i1+u8=i4 i1+f2=f2 i1+f4=f4
i1+f8=f4 i1+c8=c8 i1+c16=c8 i2+i4=i4 i2+i8=i4 i2+u1=i2 i2+u2=i4 i2+u4=i4 i2+u8=i4 i2+f2=f2
i2+f4=f4 i2+f8=f4 i2+c8=c8 i2+c16=c8 i4+i8=i4 i4+u1=i4 i4+u2=i4 i4+u4=i4 i4+u8=i4 i4+f2=f2
i4+f4=f4 i4+f8=f4 i4+c8=c8 i4+c16=c8 i8+u1=i4 i8+u2=i4 i8+u4=i4 i8+u8=i4 i8+f2=f2 i8+f4=f4
i8+f8=f4 i8+c8=c8 i8+c16=c8 u1+u2=u2 u1+u4=u4 u1+u8=u4 u1+f2=f2 u1+f4=f4 u1+f8=f4 u1+c8=c8
u1+c16=c8 u2+u4=u4 u2+u8=u4 u2+f2=f2 u2+f4=f4 u2+f8=f4 u2+c8=c8 u2+c16=c8 u4+u8=u4 u4+f2=f2
u4+f4=f4 u4+f8=f4 u4+c8=c8 u4+c16=c8 u8+f2=f2 u8+f4=f4 u8+f8=f4 u8+c8=c8 u8+c16=c8 f2+f4=f4
f2+f8=f4 f2+c8=c8 f2+c16=c8 f4+f8=f4 f4+c8=c8 f4+c16=c8 f8+c8=c8 f8+c16=c8 c8+c16=c8
"""


def _pairs(table):
    out = {}
    for item in table.split():
        ab, c = item.split("=")
        a, b = ab.split("+")
        out[_LONG[a], _LONG[b]] = np.dtype(_LONG[c])
    return out


PAIRS = {True: _pairs(_JAX_PAIRS_X64), False: _pairs(_JAX_PAIRS_X32)}


def test_golden_tables_cover_every_pair():
    for table in PAIRS.values():
        assert set(table) == set(itertools.combinations(DTYPES, 2))


@pytest.mark.parametrize("x64", [True, False])
def test_result_dtype_of_every_pair_is_jaxs(x64):
    with ft.config.override(enable_x64=x64):
        for (a, b), expected in PAIRS[x64].items():
            leaves = [np.array([1], a), np.array([0, 1], b)]
            flat, unravel = ravel_pytree(leaves)
            assert flat.dtype == expected, (a, b)
            back = unravel(flat)
            # each leaf gets its own (canonical) dtype back, and its values: 0 and 1 are exact
            for x, y in zip(leaves, back):
                assert y.dtype == ft.numpy.asarray(x).dtype and y.shape == x.shape
                np.testing.assert_array_equal(np.asarray(y), x)


def test_weak_float_meeting_point_gives_way_to_a_concrete_float():
    """uint64 and int64 meet at JAX's weak float, which float16 then absorbs (JAX 0.10.2 gives
    float16 for this triple, float32 for (uint64, int8, float32), complex64 with complex64)."""
    for third, expected in [("float16", "float16"), ("float32", "float32"),
                            ("complex64", "complex64")]:
        flat, _ = ravel_pytree([np.zeros(1, "uint64"), np.zeros(1, "int64"), np.zeros(1, third)])
        assert flat.dtype == expected


dtypes_without_u64 = st.sampled_from([d for d in DTYPES if d != "uint64"])
shapes = st.lists(st.integers(0, 3), max_size=3).map(tuple)
leaf_specs = st.tuples(dtypes_without_u64, shapes)
tree_specs = st.recursive(
    leaf_specs,
    lambda kids: st.one_of(st.lists(kids, max_size=3), st.lists(kids, max_size=3).map(tuple),
                           st.dictionaries(st.sampled_from("abc"), kids, max_size=3)),
    max_leaves=6)


def _build(spec, rng):
    if isinstance(spec, tuple) and len(spec) == 2 and isinstance(spec[0], str):
        dtype, shape = spec
        return rng.integers(0, 2, size=shape).astype(dtype)  # 0/1: exact in every dtype
    if isinstance(spec, dict):
        return {k: _build(v, rng) for k, v in spec.items()}
    return type(spec)(_build(s, rng) for s in spec)


@given(tree_specs, st.integers(0, 2**31))
def test_ravel_and_unravel_against_numpy(spec, seed):
    tree = _build(spec, np.random.default_rng(seed))
    leaves = tu.tree_leaves(tree)
    flat, unravel = ravel_pytree(tree)
    if not leaves:
        assert flat.shape == (0,) and flat.dtype == np.float32
        assert unravel(flat) == tree
        return
    # lattice joins are associative: fold the golden pair table over the leaves' dtypes
    expected_dtype = np.dtype(leaves[0].dtype)
    for x in leaves[1:]:
        if x.dtype != expected_dtype:
            expected_dtype = PAIRS[True].get((expected_dtype.name, x.dtype.name)) or \
                PAIRS[True][x.dtype.name, expected_dtype.name]
    assert flat.dtype == expected_dtype
    np.testing.assert_array_equal(
        np.asarray(flat),
        np.concatenate([x.ravel().astype(expected_dtype) for x in leaves]))
    back = unravel(flat)
    assert tu.tree_structure(back) == tu.tree_structure(tree)
    for x, y in zip(leaves, tu.tree_leaves(back)):
        assert y.dtype == x.dtype and y.shape == x.shape
        np.testing.assert_array_equal(np.asarray(y), x)


def test_python_and_numpy_scalars():
    """Golden dtypes from JAX 0.10.2 (x64 on): Python scalars take the default dtypes."""
    flat, unravel = ravel_pytree([1, 2.5])
    assert flat.dtype == np.float64 and np.asarray(flat).tolist() == [1.0, 2.5]
    a, b = unravel(flat)
    assert (a.dtype, b.dtype) == (np.int64, np.float64) and (int(a), float(b)) == (1, 2.5)
    flat, unravel = ravel_pytree((np.float32(2.0), np.int32(1)))
    assert flat.dtype == np.float32 and np.asarray(flat).tolist() == [2.0, 1.0]
    assert [x.dtype for x in unravel(flat)] == [np.float32, np.int32]
    flat, unravel = ravel_pytree(3.0)  # one weakly typed leaf: no conversion
    assert flat.shape == (1,) and unravel(flat).shape == () and float(unravel(flat)) == 3.0
    with ft.config.override(enable_x64=False):
        flat, _ = ravel_pytree({"a": np.ones(2, np.float64), "b": 1})
        assert flat.dtype == np.float32


@pytest.mark.parametrize("x64", [True, False])
def test_empty_tree_gives_an_empty_float32_vector(x64):
    """JAX 0.10.2 gives float32 whatever jax_enable_x64 says."""
    with ft.config.override(enable_x64=x64):
        for tree in [{}, None, [(), {"a": None}]]:
            flat, unravel = ravel_pytree(tree)
            assert flat.shape == (0,) and flat.dtype == np.float32
            assert unravel(flat) == tree and unravel(fnp.zeros(0, "int32")) == tree


def test_leaf_order_and_containers():
    tree = OrderedDict([("z", fnp.array([1.0, 2.0])), ("a", (fnp.array(3.0), None))])
    flat, unravel = ravel_pytree(tree)
    np.testing.assert_array_equal(np.asarray(flat), [1.0, 2.0, 3.0])  # insertion order
    back = unravel(fnp.array([4.0, 5.0, 6.0]))
    assert type(back) is OrderedDict and list(back) == ["z", "a"] and back["a"][1] is None
    np.testing.assert_array_equal(np.asarray(back["z"]), [4.0, 5.0])


def test_single_dtype_unravel_keeps_the_given_dtype():
    """As in JAX: with one leaf dtype there is no conversion, so any dtype passes through."""
    _, unravel = ravel_pytree([fnp.ones(2, "float32"), fnp.ones(3, "float32")])
    a, b = unravel(fnp.arange(5, dtype="int16"))
    assert a.dtype == b.dtype == np.int16
    np.testing.assert_array_equal(np.asarray(b), [2, 3, 4])


def test_unravel_rejects_wrong_sizes_and_dtypes():
    """Error types as JAX 0.10.2 raises them: ValueError for a length, TypeError for a dtype."""
    _, unravel = ravel_pytree([fnp.ones(2, "float32"), fnp.ones(3, "int32")])
    with pytest.raises(ValueError, match=r"shape \(4,\).*expected shape \(5,\)"):
        unravel(fnp.zeros(4, "float32"))
    with pytest.raises(ValueError, match=r"shape \(\).*expected shape \(5,\)"):
        unravel(fnp.zeros((), "float32"))
    with pytest.raises(TypeError, match="dtype float16, but expected dtype float32"):
        unravel(fnp.zeros(5, "float16"))
    with pytest.raises(TypeError, match="dtype float64, but expected dtype float32"):
        unravel(np.zeros(5))
    with pytest.raises(TypeError, match="list is not an array"):
        unravel([0.0] * 5)
    _, unravel = ravel_pytree([fnp.ones(2), fnp.ones(3)])
    with pytest.raises(ValueError, match=r"shape \(6,\).*expected shape \(5,\)"):
        unravel(fnp.zeros(6))


def test_leaves_that_are_not_arrays_are_named_by_path():
    with pytest.raises(TypeError, match=r"leaf at \['a'\]\[1\] is not an array.*str"):
        ravel_pytree({"a": [1.0, "x"]})
    with pytest.raises(TypeError, match="leaf at the root is not an array"):
        ravel_pytree(object())


def test_unravel_is_hashable_and_equal_for_equal_layouts():
    def make():
        return ravel_pytree({"w": fnp.ones((2, 2), "float32"), "n": fnp.ones(1, "int32")})[1]
    u1, u2 = make(), make()
    assert u1 == u2 and hash(u1) == hash(u2) and len({u1, u2}) == 1
    assert u1 != ravel_pytree({"w": fnp.ones((2, 2), "float32"), "n": fnp.ones(2, "int32")})[1]
    assert u1 != ravel_pytree({"w": fnp.ones((2, 2), "float32"), "n": fnp.ones(1, "int16")})[1]


def test_under_jit():
    tree = {"a": 1.0, "b": fnp.arange(3.0), "c": (fnp.ones((2, 1)),)}
    flat, unravel = ravel_pytree(tree)
    jitted = ft.jit(lambda t: ravel_pytree(t)[0])(tree)
    np.testing.assert_array_equal(np.asarray(jitted), np.asarray(flat))
    back = ft.jit(unravel)(flat * 2)
    np.testing.assert_array_equal(np.asarray(back["c"][0]), np.full((2, 1), 2.0))
    assert float(back["a"]) == 2.0


def test_grad_through_ravel_is_exact():
    """d/dx sum(w * ravel(tree)^3) = 3 w x^2, laid out as the leaves."""
    tree = {"a": fnp.array([1.0, -2.0]), "b": fnp.array([[0.5], [3.0]])}
    w = fnp.array([1.0, 2.0, 3.0, 4.0])
    g = ft.grad(lambda t: fnp.sum(w * ravel_pytree(t)[0] ** 3))(tree)
    np.testing.assert_allclose(np.asarray(g["a"]), 3 * np.array([1.0, 2.0]) * [1.0, 4.0],
                               rtol=1e-14)
    np.testing.assert_allclose(np.asarray(g["b"]), 3 * np.array([[3.0], [4.0]]) * [[0.25], [9.0]],
                               rtol=1e-14)


def test_grad_through_unravel_matches_finite_differences():
    """loss(unravel(v)) for a tree with a float32 leaf among float64 ones. Central differences
    with step 1e-6 in float64 have error ~1e-9 here, so rtol 1e-6 separates right from wrong;
    they are taken for the float64 entries only (a 1e-6 step is below float32's resolution
    near 1), and the exact derivative checks all entries."""
    tree = {"a": fnp.array([0.3, -1.2]), "s": fnp.array(0.7), "t": fnp.ones(2, "float32")}
    v0, unravel = ravel_pytree(tree)
    assert v0.dtype == np.float64

    def loss(v):
        t = unravel(v)
        return fnp.sum(fnp.sin(t["a"]) * t["s"]) + fnp.sum(t["a"] ** 2) + \
            fnp.sum(t["t"].astype("float64") * 3.0)

    g = np.asarray(ft.grad(loss)(v0))
    v = np.asarray(v0)
    fd = np.array([(float(loss(fnp.asarray(v + e))) - float(loss(fnp.asarray(v - e)))) / 2e-6
                   for e in np.eye(len(v))[:3] * 1e-6])  # entries 0-2: leaves "a" and "s"
    np.testing.assert_allclose(g[:3], fd, rtol=1e-6, atol=1e-7)
    a, s = np.array([0.3, -1.2]), 0.7
    np.testing.assert_allclose(g, np.concatenate([np.cos(a) * s + 2 * a, [np.sum(np.sin(a))],
                                                  [3.0, 3.0]]), rtol=1e-12)


def test_vmap_matches_a_python_loop():
    batch = {"a": fnp.arange(6.0).reshape(3, 2), "b": (fnp.arange(3, dtype="int32"),)}
    out = ft.vmap(lambda t: ravel_pytree(t)[0])(batch)
    rows = [ravel_pytree(tu.tree_map(lambda x: x[i], batch))[0] for i in range(3)]
    np.testing.assert_array_equal(np.asarray(out), np.stack([np.asarray(r) for r in rows]))

    _, unravel = ravel_pytree({"a": fnp.ones(2), "b": 1.0})
    vs = fnp.arange(12.0).reshape(4, 3)
    got = ft.vmap(unravel)(vs)
    for i in range(4):
        want = unravel(vs[i])
        np.testing.assert_array_equal(np.asarray(got["a"][i]), np.asarray(want["a"]))
        assert float(got["b"][i]) == float(want["b"])
