"""editing.py (block, insert, delete, choose, compress, extract, trim_zeros, index arithmetic,
bit packing) against NumPy, eagerly and traced. Everything here moves, selects or counts
elements, so results must equal NumPy's exactly.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, strategies as st

import functrans as ft
import functrans.numpy as fnp
from functrans import testing as T
from functrans.numpy import editing


def _array(draw, min_dims=0, max_dims=3, dtypes=None, shape=None, **kw):
    shape = draw(T.shapes(min_dims, max_dims)) if shape is None else shape
    return draw(T.arrays(T.all_dtypes() if dtypes is None else dtypes, shape, specials=True,
                         **kw))


@st.composite
def _block(draw):
    # A 2-level layout: rows of blocks sharing heights, each row's widths summing equally.
    nd = draw(st.integers(0, 3))
    lead = draw(T.shapes(max(nd - 2, 0), max(nd - 2, 0)))
    width = draw(st.integers(0, 4))
    rows = []
    for _ in range(draw(st.integers(1, 3))):
        h = draw(st.integers(0, 3))
        cuts = sorted(draw(st.lists(st.integers(0, width), max_size=2)))
        widths = np.diff([0] + cuts + [width]).tolist()
        rows.append([_array(draw, shape=lead + (h, w)) for w in widths])
    layout = draw(st.sampled_from(["nested", "flat", "single"]))
    if layout == "flat":
        return ([r[0] for r in rows] if nd >= 2 else [_array(draw, shape=lead + (1,))]),
    if layout == "single":
        return _array(draw),
    return rows,


@st.composite
def _insert(draw):
    x = _array(draw)
    axis = draw(st.sampled_from([None] + ([draw(st.integers(-x.ndim, x.ndim - 1))]
                                          if x.ndim else [])))
    n = x.size if axis is None else x.shape[axis]
    # Several positions as an array: JAX (and so functrans) refuses lists here.
    obj = draw(st.one_of(st.integers(-n, n), st.lists(st.integers(-n, n), max_size=3).map(
        lambda o: np.array(o, np.int64)), st.just(slice(0, n, 2))))
    vshape = draw(st.sampled_from([(), (1,), (2,)]))
    values = draw(st.one_of(st.integers(0, 5), T.arrays(x.dtype, vshape)))
    return (x, obj, values), {"axis": axis}


@st.composite
def _delete(draw):
    x = _array(draw)
    axis = draw(st.sampled_from([None] + ([draw(st.integers(-x.ndim, x.ndim - 1))]
                                          if x.ndim else [])))
    n = x.size if axis is None else x.shape[axis]
    obj = draw(st.one_of(st.integers(-n - 1, n), st.lists(st.integers(-n, max(n - 1, -n)),
                                                          max_size=3 if n else 0).map(
        lambda o: np.array(o, np.int64)), st.just(slice(1, None, 2)),
                         T.arrays(np.dtype(bool), (n,))))
    return (x, obj), {"axis": axis}


@st.composite
def _choose(draw):
    n = draw(st.integers(1, 3))
    shapes = draw(T.broadcastable_shapes(n + 1))
    mode = draw(st.sampled_from(["raise", "wrap", "clip"]))
    lo, hi = (0, n - 1) if mode == "raise" else (-3, n + 2)
    a = draw(T.arrays(T.int_dtypes(), shapes[0], int_range=(lo, hi)))
    dtype = draw(T.all_dtypes())
    choices = [draw(T.arrays(dtype, s)) for s in shapes[1:]]
    return (a, choices), {"mode": mode}


@st.composite
def _compress(draw):
    x = _array(draw, min_dims=1)
    axis = draw(st.sampled_from([None, draw(st.integers(-x.ndim, x.ndim - 1))]))
    n = x.size if axis is None else x.shape[axis]
    cond = draw(T.arrays(np.dtype(bool), (draw(st.integers(0, n)),)))
    return (cond, x), {"axis": axis}


@st.composite
def _extract(draw):
    x = _array(draw)
    return (draw(T.arrays(T.dtypes_from(["bool", "int8"]), x.shape, int_range=(0, 2))), x), {}


@st.composite
def _trim_zeros(draw):
    x = draw(T.arrays(T.numeric_dtypes(), T.shapes(1, 2), int_range=(0, 1),
                      elements=lambda d: st.sampled_from([0, 0, 1, 2]).map(d.type)))
    kw = {"trim": draw(st.sampled_from(["fb", "f", "b", "BF"]))}
    if x.ndim > 1 and draw(st.booleans()):
        kw["axis"] = draw(st.integers(-x.ndim, x.ndim - 1))
    return (x,), kw


@st.composite
def _unravel(draw):
    shape = draw(T.shapes(1, 3, min_side=1))
    size = int(np.prod(shape))
    idx = draw(T.arrays(T.int_dtypes(), T.shapes(max_dims=2), int_range=(0, size - 1)))
    return (idx, shape), {"order": draw(st.sampled_from(["C", "F"]))}


@st.composite
def _ravel_multi(draw):
    dims = draw(T.shapes(1, 3, min_side=1))
    mode = draw(st.sampled_from(["raise", "wrap", "clip"]))
    shape = draw(T.shapes(max_dims=2))
    coords = tuple(draw(T.arrays(T.dtypes_from(["int8", "int64", "uint16"]), shape,
                                 int_range=(0, d - 1) if mode == "raise" else (-9, 9)))
                   for d in dims)
    return (coords, dims), {"mode": mode, "order": draw(st.sampled_from(["C", "F"]))}


@st.composite
def _packbits(draw):
    x = _array(draw, dtypes=T.dtypes_from(["bool", "int8", "uint8", "int64"]), int_range=(0, 2))
    axis = draw(st.sampled_from([None] + ([draw(st.integers(-x.ndim, x.ndim - 1))]
                                          if x.ndim else [])))
    return (x,), {"axis": axis, "bitorder": draw(st.sampled_from(["big", "little"]))}


@st.composite
def _unpackbits(draw):
    x = _array(draw, dtypes=st.just(np.dtype(np.uint8)))
    axis = draw(st.sampled_from([None] + ([draw(st.integers(-x.ndim, x.ndim - 1))]
                                          if x.ndim else [])))
    count = draw(st.one_of(st.none(), st.integers(-10, 20)))
    if x.size == 0 and count is not None and count > 0:
        count = None  # NumPy leaves the padding of empty inputs uninitialized
    return (x,), {"axis": axis, "count": count,
                  "bitorder": draw(st.sampled_from(["big", "little"]))}


CASES = {
    "block": _block().map(lambda a: (a, {})), "insert": _insert(), "delete": _delete(),
    "choose": _choose(), "compress": _compress(), "extract": _extract(),
    "trim_zeros": _trim_zeros(), "unravel_index": _unravel(), "ravel_multi_index": _ravel_multi(),
    "packbits": _packbits(), "unpackbits": _unpackbits(),
}
# The layout of these depends on values: they are checked eagerly (traced: see below).
VALUE_DEPENDENT = {"compress", "extract", "trim_zeros"}


def test_every_editing_function_is_tested():
    assert sorted(CASES) == sorted(editing.__all__)


@pytest.mark.parametrize("name", sorted(CASES))
@given(data=st.data())
def test_matches_numpy(name, data):
    args, kwargs = data.draw(CASES[name])
    fn, oracle = getattr(fnp, name), getattr(np, name)
    if T.raises_like(fn, oracle, *args, **kwargs):
        return
    # mode="raise" checks the indices' values: it needs them concrete (see the error test).
    trace = name not in VALUE_DEPENDENT and kwargs.get("mode") != "raise" and not (
        name in ("insert", "delete") and isinstance(args[1], np.ndarray))  # obj is static
    T.check_against(fn, oracle, *args, trace=trace, **kwargs)


@given(T.arrays(T.all_dtypes(), T.shapes(1, 2)), st.data())
def test_compress_traced_condition_needs_size(x, data):
    cond = data.draw(T.arrays(np.dtype(bool), (x.shape[0],)))
    size = data.draw(st.integers(0, x.shape[0] + 2))

    def oracle(c, a):
        r = np.compress(c, a, axis=0)[:size]
        pad = np.zeros((size - len(r),) + a.shape[1:], a.dtype)
        return np.concatenate([r, pad + np.asarray(7).astype(a.dtype)])
    T.check_against(lambda c, a: fnp.compress(c, a, axis=0, size=size, fill_value=7), oracle,
                    cond, x)
    with pytest.raises(TypeError, match="size="):
        ft.make_jaxpr(lambda c: fnp.compress(c, x, axis=0))(cond)


def test_insert_with_traced_values():
    x = np.arange(6).reshape(2, 3)
    T.check_against(lambda v: fnp.insert(x, np.array([0, 2]), v, axis=1),
                    lambda v: np.insert(x, [0, 2], v, axis=1), np.array([[7, 8], [9, 10]]))


# ---- clear errors -----------------------------------------------------------------------------------
def test_static_positions_are_required():
    with pytest.raises(TypeError, match="obj must be static"):
        ft.make_jaxpr(lambda i: fnp.delete(np.arange(4), i))(1)
    with pytest.raises(TypeError, match="must be concrete"):
        ft.make_jaxpr(fnp.trim_zeros)(np.array([0.0, 1.0]))


def test_editing_errors_name_the_problem():
    with pytest.raises(IndexError, match="fnp.insert.*out of bounds"):
        fnp.insert(np.arange(3), 5, 1)
    with pytest.raises(ValueError, match="mismatched"):
        fnp.block([[np.ones(2)], np.ones(2)])
    with pytest.raises(TypeError, match="tuple"):
        fnp.block((np.ones(2), np.ones(2)))
    with pytest.raises(ValueError, match="invalid entry"):
        fnp.choose(np.array([0, 3]), [np.ones(2), np.zeros(2)])
    with pytest.raises(TypeError, match="unsigned byte"):
        fnp.unpackbits(np.ones(2, np.int8))
    with pytest.raises(ValueError, match="needs concrete indices"):
        ft.make_jaxpr(lambda a: fnp.choose(a, [np.ones(2), np.zeros(2)]))(np.array([0, 1]))
