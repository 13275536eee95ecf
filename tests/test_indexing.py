"""x[idx], x.at[idx].<op>(v), take, take_along_axis and put_along_axis against NumPy.

Every case runs eagerly and under make_jaxpr (the jaxpr is type-checked and evaluated).
Indexing only moves values, so every comparison is exact, for every dtype.
"""
import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

import functrans as ft
import functrans.numpy as fnp
from functrans.core.eval import eval_jaxpr
from functrans.tree_util import tree_leaves

DTYPES = ["int32", "int64", "uint8", "float32", "float64", "bool"]


def traced(f, *args):
    """f evaluated through its type-checked jaxpr (a list of outputs when there are several)."""
    jaxpr = ft.make_jaxpr(f)(*args)
    ft.check_jaxpr(jaxpr)
    outs = eval_jaxpr(jaxpr, *tree_leaves(args))
    return outs[0] if len(outs) == 1 else outs


def assert_same(got, expected):
    got = np.asarray(got)
    assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    np.testing.assert_array_equal(got, expected, strict=True)


def operand(shape, dtype):
    """Distinct values (wrapped into small dtypes), so a wrong element is always visible."""
    x = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)
    return (x % 2 == 1) if dtype == "bool" else x.astype(dtype)


# ---- index expressions ----------------------------------------------------------------------------
@st.composite
def index_exprs(draw, bools=True):
    """(shape, idx, dynamic): a random NumPy index expression for an array of ``shape``.

    ``dynamic`` lists the positions in ``idx`` holding integers or integer arrays, which the
    traced tests turn into jaxpr inputs. Out-of-range entries are drawn now and then, so error
    parity with NumPy is exercised too.
    """
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=4))
    ndim = len(shape)
    batch = draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=0, max_side=3))
    use_mask = bools and draw(st.integers(0, 2)) == 0
    ellipsis = draw(st.booleans())
    # (draws of integers lean towards 0: count the axes left alone so most get indexed)
    n_front = ndim - draw(st.integers(0, ndim))
    n_back = ndim - n_front - draw(st.integers(0, ndim - n_front)) if ellipsis else 0
    axes = list(range(n_front)) + list(range(ndim - n_back, ndim))

    def int_value(n):
        if draw(st.integers(0, 9)) == 0:
            return draw(st.sampled_from([-n - 1, n]))
        return draw(st.integers(-n, n - 1)) if n else 0

    def int_array(n):
        lead = draw(st.integers(0, len(batch)))
        shp = tuple(d if draw(st.booleans()) else 1 for d in batch[lead:])
        lo, hi = (-n, n - 1) if n else (-1, 0)
        return draw(hnp.arrays(np.int64, shp, elements=st.integers(lo, hi)))

    items, dynamic, masked = [], [], False
    k = 0
    while k < len(axes):
        ax, n = axes[k], shape[axes[k]]
        kinds = ["int", "slice", "array", "array", "list", "0d"]
        if use_mask and not masked:
            kinds += ["mask", "mask"]
        kind = draw(st.sampled_from(kinds))
        if kind == "mask":
            # a mask covers a run of consecutive axes on the same side of the Ellipsis
            run = 1
            while k + run < len(axes) and axes[k + run] == ax + run and run < 2:
                run += 1
            m = draw(st.integers(1, run))
            items.append(draw(hnp.arrays(np.bool_, shape[ax:ax + m])))
            masked = True
            k += m
            if ellipsis and k >= n_front and not any(i is Ellipsis for i in items):
                items.append(Ellipsis)
            continue
        if kind == "int":
            dynamic.append(len(items))
            items.append(int_value(n))
        elif kind == "slice":
            bound = st.none() | st.integers(-n - 3, n + 3)
            step = st.none() | st.integers(-3, 3).filter(bool)
            items.append(slice(draw(bound), draw(bound), draw(step)))
        elif kind == "array":
            dynamic.append(len(items))
            items.append(int_array(n))
        elif kind == "list":
            items.append(int_array(n).reshape(-1)[:3].tolist())
        else:
            dynamic.append(len(items))
            items.append(np.asarray(int_value(n)))
        k += 1
        if ellipsis and k >= n_front and not any(i is Ellipsis for i in items):
            items.append(Ellipsis)
    if ellipsis and not any(i is Ellipsis for i in items):
        items.append(Ellipsis)
    for _ in range(draw(st.integers(0, 2))):  # new axes anywhere
        pos = draw(st.integers(0, len(items)))
        items.insert(pos, None)
        dynamic = [d + (d >= pos) for d in dynamic]
    if bools and draw(st.integers(0, 7)) == 0:
        pos = draw(st.integers(0, len(items)))
        items.insert(pos, draw(st.booleans()))
        dynamic = [d + (d >= pos) for d in dynamic]
    idx = items[0] if len(items) == 1 and draw(st.booleans()) else tuple(items)
    return shape, idx, dynamic


def numpy_getitem(x, idx):
    try:
        return x[idx], None
    except IndexError as e:
        return None, e


def as_tuple(idx):
    return idx if isinstance(idx, tuple) else (idx,)


def with_dynamic(idx, dynamic, values):
    """idx with the entries at ``dynamic`` positions replaced by ``values``."""
    items = list(as_tuple(idx))
    for pos, v in zip(dynamic, values):
        items[pos] = v
    return tuple(items) if isinstance(idx, tuple) or len(items) != 1 else items[0]


@given(index_exprs(), st.sampled_from(DTYPES))
def test_getitem_matches_numpy(case, dtype):
    shape, idx, _ = case
    x = operand(shape, dtype)
    expected, error = numpy_getitem(x, idx)
    if error is not None:
        with pytest.raises(IndexError):
            fnp.asarray(x)[idx]
        return
    assert_same(fnp.asarray(x)[idx], expected)
    # Index arrays given as functrans Arrays behave the same.
    as_arrays = tuple(fnp.asarray(i) if isinstance(i, np.ndarray) else i for i in as_tuple(idx))
    assert_same(fnp.asarray(x)[as_arrays], expected)


@given(index_exprs(), st.sampled_from(DTYPES))
def test_getitem_traced_matches_numpy(case, dtype):
    """Integers and integer arrays become traced jaxpr inputs (dynamic_slice / gather)."""
    shape, idx, dynamic = case
    x = operand(shape, dtype)
    expected, error = numpy_getitem(x, idx)
    if error is not None:
        return  # out-of-range traced indices are clamped instead (test_traced_index_clamps)
    dyn = [np.asarray(as_tuple(idx)[p]) for p in dynamic]
    got = traced(lambda x, *d: x[with_dynamic(idx, dynamic, d)], x, *dyn)
    assert_same(got, expected)


# ---- NumPy's placement of advanced dimensions, by hand ----------------------------------------------
X = np.arange(2 * 3 * 4 * 5).reshape(2, 3, 4, 5)
A, B = np.array([[0, 1], [1, 0], [0, 0]]), np.array([2, 0])
MIXED = {
    "adjacent arrays stay in place": (slice(None), A, B),
    "separated arrays go first": (A, slice(None), B),
    "int and array adjacent": (slice(None), 1, B),
    "int and array separated": (1, slice(None), B),
    "None between arrays separates them": (slice(None), A, None, B),
    "Ellipsis between arrays": (A, Ellipsis, B),
    "Ellipsis after adjacent arrays": (A, [1, 2], Ellipsis),
    "empty Ellipsis still separates": (slice(None), A, Ellipsis, B, 1),
    "empty mask dims match any axis": (np.zeros((0, 3), bool), Ellipsis),
    "empty 1-d mask": (slice(None), np.zeros((0,), bool)),
    "arrays after a None": (None, 0, slice(None), B, Ellipsis),
    "mask then array": (np.array([True, False]), slice(None), B),
    "2-d mask": (np.array([[True, False, False], [False, False, True]]), B),
    "mask between slices": (slice(None), np.array([False, True, True]), slice(1, 3)),
    "0-d int array": (np.array(1), slice(None, None, -1)),
    "bool scalar True": (True, 0),
    "bool scalar False with int": (1, False),
    "bool scalar True with arrays": (A, True, slice(None), B),
    "0-d bool array": (np.array(True), Ellipsis, 1),
    "empty list": ([],),
    "empty int array with int": (np.zeros((0,), np.int64), 1),
    "negative strided slices": (slice(None, None, -2), slice(10, -10, -1), slice(-1, 0, -3)),
    "out-of-range slice bounds": (slice(-100, 100), slice(5, 1), slice(3, None, 7)),
}


@pytest.mark.parametrize("name", sorted(MIXED))
def test_mixed_indexing_layout(name):
    idx = MIXED[name]
    expected = X[idx]
    assert_same(fnp.asarray(X)[idx], expected)
    assert_same(traced(lambda x: x[idx], X), expected)


def test_traced_scalar_index_uses_dynamic_slice():
    jaxpr = ft.make_jaxpr(lambda x, i: x[i, 1:])(X, 1)
    names = [e.prim.name for e in jaxpr.eqns]
    assert "dynamic_slice" in names and "gather" not in names


def clamp_like_jax(i, n):
    return min(max(i + n if i < 0 else i, 0), n - 1)


@pytest.mark.parametrize("i", [-9, -4, -3, -1, 0, 1, 2, 5])
def test_traced_index_clamps(i):
    """Traced indices wrap once if negative, then clamp into range, as in JAX."""
    x = np.arange(12).reshape(3, 4)
    assert_same(traced(lambda x, i: x[i], x, i), x[clamp_like_jax(i, 3)])
    assert_same(traced(lambda x, i: x[::-1, i, None], x, i), x[::-1, clamp_like_jax(i, 4), None])
    assert_same(traced(lambda x, a: x[a, 1], x, np.array([i, 0])),
                x[[clamp_like_jax(i, 3), 0], 1])


def test_traced_scalar_index_with_static_out_of_range_int():
    x = fnp.arange(6.0)
    assert_same(traced(lambda x, i: x.at[i].get(mode="fill", fill_value=-1.0), x, 7),
                np.array(-1.0))


# ---- errors ---------------------------------------------------------------------------------------
def test_too_many_indices():
    with pytest.raises(IndexError, match="too many indices"):
        fnp.zeros((2, 3))[0, 0, 0]
    with pytest.raises(IndexError, match="too many indices"):
        fnp.zeros(())[0]


@pytest.mark.parametrize("idx,axis,size", [((5,), 0, 2), ((0, -4), 1, 3), ((slice(None), 3), 1, 3),
                                           (([0, 7],), 0, 2)])
def test_out_of_bounds_static_index(idx, axis, size):
    with pytest.raises(IndexError, match=f"axis {axis} with size {size}"):
        fnp.zeros((2, 3))[idx]
    with pytest.raises(IndexError, match=f"axis {axis} with size {size}"):
        ft.make_jaxpr(lambda x: x[idx])(np.zeros((2, 3)))


def test_bad_index_types():
    x = fnp.zeros((3, 3))
    with pytest.raises(IndexError, match="integer"):
        x[fnp.array([0.0, 1.0])]
    with pytest.raises(IndexError):
        x[1.5]
    with pytest.raises(IndexError, match="single ellipsis"):
        x[..., ...]
    with pytest.raises(IndexError, match="shape mismatch"):
        x[[0, 1], [0, 1, 2]]
    with pytest.raises(ValueError, match="step"):
        x[::0]


def test_traced_boolean_mask_suggests_where():
    def f(x):
        return x[x > 0]
    with pytest.raises(IndexError, match="fnp.where"):
        ft.make_jaxpr(f)(np.arange(3.0))
    with pytest.raises(IndexError, match="fnp.where"):
        ft.make_jaxpr(lambda x, b: x[b])(np.arange(3.0), True)


def test_concrete_mask_shape_mismatch_is_an_index_error():
    with pytest.raises(IndexError):
        fnp.arange(6).reshape(2, 3)[np.ones((3, 2), bool)]


# ---- .at[idx] updates ------------------------------------------------------------------------------
UFUNC_AT = {"add": np.add, "multiply": np.multiply, "min": np.minimum, "max": np.maximum}


@st.composite
def update_cases(draw):
    """(x, idx, dynamic, values): values broadcastable to x[idx] (valid NumPy indices only)."""
    shape, idx, dynamic = draw(index_exprs().filter(
        lambda c: numpy_getitem(np.empty(c[0]), c[1])[1] is None))
    dtype = draw(st.sampled_from(["int32", "int64", "uint8", "float32", "float64"]))
    x = operand(shape, dtype)
    out_shape = x[idx].shape
    lead = draw(st.integers(0, len(out_shape)))
    vshape = tuple(d if draw(st.booleans()) else 1 for d in out_shape[lead:])
    vdtype = draw(st.sampled_from([dtype, "float64", "int8"]))
    values = draw(hnp.arrays(vdtype, vshape, elements=st.integers(0, 5)))
    return x, idx, dynamic, values


def numpy_update(op, x, idx, values):
    """NumPy's in-place update on a copy; values are cast to x's dtype first, as in JAX."""
    y = x.copy()
    v = values.astype(x.dtype)
    if op == "set":
        y[idx] = v  # repeated indices: the last write wins
    else:
        UFUNC_AT[op].at(y, idx, v)  # repeated indices accumulate
    return y


@given(update_cases(), st.sampled_from(["set", "add", "multiply", "min", "max"]))
def test_at_update_matches_numpy(case, op):
    x, idx, dynamic, values = case
    expected = numpy_update(op, x, idx, values)
    assert_same(getattr(fnp.asarray(x).at[idx], op)(values), expected)
    dyn = [np.asarray(as_tuple(idx)[p]) for p in dynamic]
    got = traced(lambda x, v, *d: getattr(x.at[with_dynamic(idx, dynamic, d)], op)(v),
                 x, values, *dyn)
    assert_same(got, expected)


@given(update_cases())
def test_at_get_matches_getitem(case):
    x, idx, dynamic, _ = case
    assert_same(fnp.asarray(x).at[idx].get(), x[idx])
    dyn = [np.asarray(as_tuple(idx)[p]) for p in dynamic]
    assert_same(traced(lambda x, *d: x.at[with_dynamic(idx, dynamic, d)].get(), x, *dyn),
                x[idx])


REPEATED = np.array([[1, 3], [1, 0], [3, 1]])


@pytest.mark.parametrize("op", ["set", "add", "multiply", "min", "max"])
@pytest.mark.parametrize("idx", [(REPEATED,), (slice(None), REPEATED), (REPEATED, 2),
                                 (REPEATED, slice(1, None), REPEATED[:, :1])])
def test_at_repeated_indices(op, idx):
    x = np.arange(4 * 4 * 4, dtype=np.float64).reshape(4, 4, 4) - 30
    values = np.arange(np.prod(x[idx].shape), dtype=np.float64).reshape(x[idx].shape) - 7
    expected = numpy_update(op, x, idx, values)
    assert_same(getattr(fnp.asarray(x).at[idx], op)(values), expected)
    assert_same(traced(lambda x, v: getattr(x.at[idx], op)(v), x, values), expected)


@pytest.mark.parametrize("idx", [(REPEATED,), (slice(None), REPEATED), 2, (REPEATED, 2)])
def test_at_divide_and_power(idx):
    """x / (product of the values hitting each element), as JAX; NumPy divides one value at a
    time, so results agree to a few rounding errors: the values are small integers and x is
    float64, giving rtol 4 eps (divide) and 16 eps (power: (x**a)**b vs x**(a*b) with
    exponents up to 9)."""
    x = np.linspace(0.5, 3.0, 4 * 4 * 4).reshape(4, 4, 4)
    shape = x[idx].shape
    values = (np.arange(np.prod(shape)).reshape(shape) % 3 + 1).astype(np.float64)
    eps = np.finfo(np.float64).eps
    for name, ufunc, rtol in [("divide", np.divide, 4 * eps), ("power", np.power, 16 * eps)]:
        expected = x.copy()
        ufunc.at(expected, idx, values)
        got = getattr(fnp.asarray(x).at[idx], name)(values)
        np.testing.assert_allclose(np.asarray(got), expected, rtol=rtol, atol=0)
        got = traced(lambda x, v: getattr(x.at[idx], name)(v), x, values)
        np.testing.assert_allclose(np.asarray(got), expected, rtol=rtol, atol=0)


def test_at_divide_integer_operand_is_true_division():
    x = np.arange(6)
    got = fnp.asarray(x).at[np.array([1, 1, 4])].divide(2)
    assert_same(got, np.array([0, 0.25, 2, 3, 2, 5]))


@pytest.mark.parametrize("idx", [(REPEATED,), (slice(None), REPEATED), (1, slice(None, None, -1)),
                                 (np.array([True, False, True, True]),)])
@pytest.mark.parametrize("ufunc,fn", [(np.negative, fnp.negative), (np.square, fnp.square)])
def test_at_apply_matches_ufunc_at(idx, ufunc, fn):
    """Repeated indices apply the function repeatedly, as ufunc.at does."""
    x = np.arange(4 * 4, dtype=np.int64).reshape(4, 4) - 5
    expected = x.copy()
    ufunc.at(expected, idx, )
    assert_same(fnp.asarray(x).at[idx].apply(fn), expected)
    assert_same(traced(lambda x: x.at[idx].apply(fn), x), expected)


def test_at_apply_traced_indices_repeat():
    x = np.arange(5.0)
    idx = np.array([1, 3, 1, 1])
    expected = x.copy()
    np.square.at(expected, idx)
    assert_same(traced(lambda x, i: x.at[i].apply(fnp.square), x, idx), expected)
    expected = x.copy()
    np.square.at(expected, 3)
    assert_same(traced(lambda x, i: x.at[i].apply(fnp.square), x, 3), expected)


def test_at_set_casts_and_broadcasts_values():
    x = np.zeros((3, 4), np.int32)
    got = fnp.asarray(x).at[1:, ::2].set(np.array([2.7, -1.2]))
    expected = x.copy()
    expected[1:, ::2] = np.array([2.7, -1.2])  # NumPy truncates toward zero too
    assert_same(got, expected)
    assert_same(fnp.asarray(x).at[...].set(7), np.full((3, 4), 7, np.int32))
    assert_same(fnp.asarray(np.zeros((), np.float32)).at[()].add(1.5), np.array(1.5, np.float32))
    b = np.zeros(4, bool)
    assert_same(fnp.asarray(b).at[np.array([0, 2])].set(1), np.array([True, False, True, False]))
    assert_same(fnp.asarray(~b).at[np.array([1, 1])].multiply(False),
                np.array([True, False, True, True]))


def test_at_updates_with_traced_values_and_index():
    x = np.arange(6.0)
    got = traced(lambda x, i, v: x.at[i].add(v), x, -2, 10.0)
    assert_same(got, np.array([0, 1, 2, 3, 14, 5.0]))


# ---- modes ------------------------------------------------------------------------------------------
IDX_OOB = np.array([0, 7, -1, -9, 2, 7])


@pytest.mark.parametrize("op", ["set", "add", "multiply", "min", "max"])
def test_at_drop_mode_skips_out_of_range_updates(op):
    x = np.arange(5.0) + 1
    values = np.arange(6.0) + 10
    keep = (IDX_OOB >= -5) & (IDX_OOB < 5)
    expected = numpy_update(op, x, IDX_OOB[keep], values[keep])
    for mode in (None, "drop"):
        assert_same(getattr(fnp.asarray(x).at[IDX_OOB], op)(values, mode=mode), expected)
        assert_same(traced(lambda x, i, v: getattr(x.at[i], op)(v, mode=mode), x, IDX_OOB,
                           values), expected)
    # A static out-of-range integer updates nothing.
    assert_same(getattr(fnp.asarray(x).at[9], op)(1.0), x)


def test_at_clip_mode_clamps_updates():
    x = np.zeros(5)
    # JAX's normalization: negatives wrap once, then everything is clamped into [0, 4].
    clipped = np.clip(np.where(IDX_OOB < 0, IDX_OOB + 5, IDX_OOB), 0, 4)
    expected = x.copy()
    np.add.at(expected, clipped, np.arange(6.0))
    assert_same(fnp.asarray(x).at[IDX_OOB].add(np.arange(6.0), mode="clip"), expected)
    assert_same(fnp.asarray(x).at[IDX_OOB].get(mode="clip"), x[clipped])


@pytest.mark.parametrize("fill_value", [None, -1.0])
def test_at_get_fill_mode(fill_value):
    x = np.arange(12.0).reshape(3, 4)
    idx = np.array([0, 5, -1, -4, 2])
    inside = (idx >= -3) & (idx < 3)
    fill = np.nan if fill_value is None else fill_value
    expected = np.where(inside[:, None], x[np.where(inside, idx, 0)], fill)
    got = fnp.asarray(x).at[idx].get(mode="fill", fill_value=fill_value)
    assert_same(got, expected)
    got = traced(lambda x, i: x.at[i].get(mode="fill", fill_value=fill_value), x, idx)
    assert_same(got, expected)
    # along a later axis, behind a slice
    inside4 = (idx >= -4) & (idx < 4)
    expected = np.where(inside4[None, :], x[1:, np.where(inside4, idx, 0)], fill)
    assert_same(fnp.asarray(x).at[1:, idx].get(mode="fill", fill_value=fill_value), expected)
    int_x = np.arange(4)
    assert_same(fnp.asarray(int_x).at[np.array([1, 9])].get(mode="fill"),
                np.array([1, np.iinfo(np.int64).min]))


def test_bad_modes():
    x = fnp.zeros(3)
    with pytest.raises(ValueError, match="mode"):
        x.at[0].set(1.0, mode="bogus")
    with pytest.raises(ValueError, match="mode"):
        x.at[0].get(mode="bogus")


# ---- take, take_along_axis, put_along_axis --------------------------------------------------------
@given(hnp.arrays(np.float32, hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4),
                  elements=st.integers(-50, 50)), st.data())
def test_take_matches_numpy(x, data):
    axis = data.draw(st.sampled_from([None] + list(range(-x.ndim, x.ndim))))
    n = x.size if axis is None else x.shape[axis]
    idx = data.draw(hnp.arrays(np.int64, hnp.array_shapes(min_dims=0, max_dims=2, max_side=3),
                               elements=st.integers(-2 * n, 2 * n)))
    for mode in ("clip", "wrap"):
        expected = np.take(x, idx, axis=axis, mode=mode)
        assert_same(fnp.take(x, idx, axis=axis, mode=mode), expected)
        assert_same(traced(lambda x, i: fnp.take(x, i, axis=axis, mode=mode), x, idx), expected)
    inside = (idx >= -n) & (idx < n)
    if inside.all():
        expected = np.take(x, idx, axis=axis)
        assert_same(fnp.take(x, idx, axis=axis), expected)
        assert_same(fnp.take(x, idx, axis=axis, mode="raise"), expected)
        assert_same(fnp.asarray(x).take(idx, axis=axis), expected)
    else:
        with pytest.raises(IndexError, match="out of bounds"):
            fnp.take(x, idx, axis=axis, mode="raise")


def test_take_fill_mode_default():
    """As in JAX: out-of-range indices read NaN (floats) / the minimum (signed ints)."""
    x = np.arange(4.0)
    idx = np.array([5, -1, -5, 0])
    assert_same(fnp.take(x, idx), np.array([np.nan, 3.0, np.nan, 0.0]))
    assert_same(fnp.take(x, idx, fill_value=-7.0), np.array([-7.0, 3.0, -7.0, 0.0]))
    assert_same(traced(lambda x, i: fnp.take(x, i), x, idx), np.array([np.nan, 3.0, np.nan, 0.0]))
    lo = np.iinfo(np.int64).min
    assert_same(fnp.take(np.arange(4), idx), np.array([lo, 3, lo, 0]))
    with pytest.raises(IndexError, match="integer"):
        fnp.take(x, np.array([0.5]))
    with pytest.raises(ValueError, match="mode"):
        fnp.take(x, idx, mode="bogus")


def along_axis_shapes(data, shape, axis, length):
    """An indices shape for ``*_along_axis``: ``length`` along ``axis``; elsewhere the array's
    size or 1 (broadcast), or a larger size where the array has 1 (the array broadcasts)."""
    out = []
    for d, s in enumerate(shape):
        if d == axis % len(shape):
            out.append(length)
        else:
            out.append(data.draw(st.sampled_from([1, s] if s != 1 else [1, 3])))
    return tuple(out)


@given(hnp.arrays(np.int32, hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4),
                  elements=st.integers(-50, 50)), st.data())
def test_take_along_axis_matches_numpy(x, data):
    axis = data.draw(st.sampled_from([None] + list(range(-x.ndim, x.ndim))))
    if axis is None:
        ishape, n = (data.draw(st.integers(0, 5)),), x.size
    else:
        ishape, n = along_axis_shapes(data, x.shape, axis, data.draw(st.integers(0, 4))), \
            x.shape[axis]
    idx = data.draw(hnp.arrays(np.int64, ishape, elements=st.integers(-n, n - 1)))
    expected = np.take_along_axis(x, idx, axis=axis)
    assert_same(fnp.take_along_axis(x, idx, axis=axis), expected)
    assert_same(traced(lambda x, i: fnp.take_along_axis(x, i, axis=axis), x, idx), expected)


def test_take_along_axis_out_of_range_modes():
    x = np.arange(4.0)
    idx = np.array([5, -1, -5])
    assert_same(fnp.take_along_axis(x, idx, axis=0), np.array([np.nan, 3.0, np.nan]))
    assert_same(fnp.take_along_axis(x, idx, axis=0, mode="clip"), np.array([3.0, 3.0, 0.0]))
    assert_same(fnp.take_along_axis(x, idx, axis=0, fill_value=0.5), np.array([0.5, 3.0, 0.5]))
    with pytest.raises(ValueError, match="rank"):
        fnp.take_along_axis(np.zeros((2, 3)), np.zeros(3, int), axis=1)
    with pytest.raises(ValueError, match="broadcast"):
        fnp.take_along_axis(np.zeros((2, 3)), np.zeros((3, 1), int), axis=1)
    with pytest.raises(IndexError, match="integer"):
        fnp.take_along_axis(np.zeros((2, 3)), np.zeros((2, 1)), axis=1)


@given(hnp.arrays(np.float64, hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4),
                  elements=st.integers(-50, 50)), st.data())
def test_put_along_axis_matches_numpy(x, data):
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    n = x.shape[axis]
    # Distinct positions along `axis` (some written as negatives), and indices never larger
    # than x elsewhere, so no element is written twice and NumPy's write order cannot matter.
    k = data.draw(st.integers(1, n))
    ishape = tuple(s if d == axis % x.ndim else data.draw(st.sampled_from([1, s]))
                   for d, s in enumerate(along_axis_shapes(data, x.shape, axis, k)))
    ishape = tuple(min(i, s) if d != axis % x.ndim else i
                   for d, (i, s) in enumerate(zip(ishape, x.shape)))
    positions = data.draw(st.permutations(range(n)))[:k]
    positions = np.array([p - n if data.draw(st.booleans()) else p for p in positions])
    shape_along = [1] * x.ndim
    shape_along[axis] = k
    idx = np.broadcast_to(positions.reshape(shape_along), ishape).copy()
    values = data.draw(hnp.arrays(np.float64, ishape, elements=st.integers(100, 200)))
    expected = x.copy()
    np.put_along_axis(expected, idx, values, axis=axis)
    assert_same(fnp.put_along_axis(x, idx, values, axis=axis), expected)
    assert_same(traced(lambda x, i, v: fnp.put_along_axis(x, i, v, axis=axis), x, idx, values),
                expected)


def test_put_along_axis_modes_and_inplace():
    x = np.arange(4.0)
    idx = np.array([5, -1, -5])
    # drop (default): 5 and -5 + 4 = -1 stay out of range after wrapping once
    assert_same(fnp.put_along_axis(x, idx, 9.0, axis=0), np.array([0.0, 1.0, 2.0, 9.0]))
    assert_same(fnp.put_along_axis(x, idx, 9.0, axis=0, mode="clip"), np.array([9.0, 1, 2, 9]))
    with pytest.raises(ValueError, match="inplace"):
        fnp.put_along_axis(x, idx, 9.0, axis=0, inplace=True)
    expected = np.zeros(6)
    np.put_along_axis(expected, np.array([1, -2]), np.array([3.0, 4.0]), axis=None)
    assert_same(fnp.put_along_axis(np.zeros(6), np.array([1, -2]), np.array([3.0, 4.0]),
                                   axis=None), expected)


def test_out_of_range_indices_clamp_as_in_jax_without_strict_indexing():
    # JAX's values for the same indexing (jnp.arange(3) and jnp.arange(6).reshape(2, 3))
    x = fnp.arange(3)
    with pytest.raises(IndexError, match="out of bounds"):
        x[5]
    with ft.config.override(strict_indexing=False):
        assert x[5].tolist() == 2 and x[-5].tolist() == 0
        assert x[np.array([5, 1])].tolist() == [2, 1]
        assert x[np.array([-7, 7])].tolist() == [0, 2]
        assert fnp.arange(6).reshape(2, 3)[5, -9].tolist() == 3


def test_at_get_without_wrapping_negative_indices():
    # JAX 0.10.2's results: a negative integer index is out of range (clamped to 0, or
    # filled), slices are unchanged (lineax reads its tridiagonal bands this way).
    x = fnp.arange(5.0)
    i = fnp.array([-1, 2])
    assert x.at[i].get(wrap_negative_indices=False).tolist() == [0.0, 2.0]
    assert x.at[i].get(mode="fill", fill_value=-9.0, wrap_negative_indices=False).tolist() == \
        [-9.0, 2.0]
    assert float(x.at[-1].get(wrap_negative_indices=False)) == 0.0
    y = fnp.arange(12.0).reshape(3, 4)
    assert y.at[fnp.array([0, -1]), fnp.array([-2, 1])].get(
        wrap_negative_indices=False).tolist() == [0.0, 1.0]
    assert y.at[:, -1].get(wrap_negative_indices=False).tolist() == [0.0, 4.0, 8.0]
    assert y.at[:, -1].get(mode="fill", fill_value=7.0,
                           wrap_negative_indices=False).tolist() == [7.0, 7.0, 7.0]
    assert y.at[:, -1].get().tolist() == [3.0, 7.0, 11.0]
