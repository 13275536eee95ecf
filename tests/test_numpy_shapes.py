"""Shape manipulation of functrans.numpy (shape_ops.py) against NumPy, eagerly and traced.

Every function here only moves, copies or selects elements (``clip``/``where``/``diff`` apart,
which run exact ufuncs), so results must equal NumPy's bit for bit: no tolerances.
Each case strategy draws the arrays (every dtype, shapes with empty and size-1 dimensions,
rank 0 where NumPy allows it) and the static arguments (negative axes, tuples, ...).
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, strategies as st

import functrans.numpy as fnp
from functrans import testing as T
from functrans.numpy import joining, shape_ops


def _array(draw, min_dims=0, max_dims=3, dtypes=None, min_side=0, shape=None):
    shape = draw(T.shapes(min_dims, max_dims, min_side=min_side)) if shape is None else shape
    return draw(T.arrays(T.all_dtypes() if dtypes is None else dtypes, shape, specials=True))


def _perm(draw, n):
    p = draw(st.permutations(range(n)))
    return tuple(a - n if draw(st.booleans()) else a for a in p)


def _axis(draw, ndim):
    return draw(st.integers(-ndim, ndim - 1))


def _same_shape_arrays(draw, shape, n_min=1, n_max=3):
    return [_array(draw, shape=shape) for _ in range(draw(st.integers(n_min, n_max)))]


@st.composite
def reshape(draw):
    x = _array(draw)
    n = x.size
    divisors = [d for d in range(1, n + 1) if n % d == 0] or [1]
    d = draw(st.sampled_from(divisors))
    shape = draw(st.sampled_from([(n,), (-1,), (d, n // d) if n else (0, 3), (d, -1) if n else
                                  (2, 0, 1), x.shape[::-1], (1,) + x.shape + (1,), n]))
    return (x, shape), {}


@st.composite
def transpose(draw):
    x = _array(draw)
    return (x, draw(st.sampled_from([None, _perm(draw, x.ndim)]))), {}


@st.composite
def permute_dims(draw):
    x = _array(draw)
    return (x, _perm(draw, x.ndim)), {}


@st.composite
def moveaxis(draw):
    x = _array(draw, min_dims=1)
    k = draw(st.integers(1, x.ndim))
    src, dst = _perm(draw, x.ndim)[:k], _perm(draw, x.ndim)[:k]
    if k == 1 and draw(st.booleans()):
        src, dst = src[0], dst[0]
    return (x, src, dst), {}


@st.composite
def swapaxes(draw):
    x = _array(draw, min_dims=1)
    return (x, _axis(draw, x.ndim), _axis(draw, x.ndim)), {}


@st.composite
def rollaxis(draw):
    x = _array(draw, min_dims=1)
    return (x, _axis(draw, x.ndim), draw(st.integers(-x.ndim, x.ndim))), {}


@st.composite
def squeeze(draw):
    shape = tuple(draw(st.lists(st.sampled_from([0, 1, 1, 2, 3]), max_size=4)))
    x = _array(draw, shape=shape)
    ones = [i for i, d in enumerate(shape) if d == 1]
    axis = draw(st.sampled_from([None] + ([ones[0], tuple(ones), -len(shape) + ones[-1]]
                                          if ones else [])))
    return (x,), {"axis": axis}


@st.composite
def expand_dims(draw):
    x = _array(draw)
    k = draw(st.integers(1, 2))
    n = x.ndim + k
    axes = draw(st.lists(st.integers(-n, n - 1), min_size=k, max_size=k,
                         unique_by=lambda a: a % n))
    return (x, tuple(axes) if k > 1 else axes[0]), {}


@st.composite
def broadcast_to(draw):
    x = _array(draw)
    lead = tuple(draw(st.lists(st.integers(0, 3), max_size=2)))
    target = lead + tuple(draw(st.integers(0, 3)) if d == 1 else d for d in x.shape)
    return (x, target), {}


@st.composite
def broadcast_arrays(draw):
    shapes = draw(T.broadcastable_shapes(draw(st.integers(1, 3))))
    return tuple(_array(draw, shape=s) for s in shapes), {}


@st.composite
def broadcast_shapes(draw):
    return tuple(draw(T.broadcastable_shapes(draw(st.integers(1, 3))))), {}


@st.composite
def concatenate(draw):
    shape = draw(T.shapes(min_dims=1))
    axis = draw(st.sampled_from([None, _axis(draw, len(shape))]))
    arrays = []
    for _ in range(draw(st.integers(1, 3))):
        s = list(shape)
        if axis is not None:
            s[axis] = draw(st.integers(0, 3))
        arrays.append(_array(draw, shape=tuple(s)))
    kw = {"axis": axis}
    if draw(st.integers(0, 3)) == 0:
        kw["dtype"] = draw(T.float_dtypes())
    return (arrays,), kw


@st.composite
def stack(draw):
    shape = draw(T.shapes())
    kw = {"axis": draw(st.integers(-len(shape) - 1, len(shape)))}
    if draw(st.integers(0, 3)) == 0:
        kw["dtype"] = draw(T.float_dtypes())
    return (_same_shape_arrays(draw, shape),), kw


def _stacker(min_dims=0, max_dims=3):
    @st.composite
    def case(draw):
        return (_same_shape_arrays(draw, draw(T.shapes(min_dims, max_dims))),), {}
    return case()


@st.composite
def split(draw):
    x = _array(draw, min_dims=1)
    axis = _axis(draw, x.ndim)
    n = x.shape[axis]
    sections = draw(st.sampled_from([d for d in range(1, n + 1) if n % d == 0] or [1]))
    indices = sorted(draw(st.lists(st.integers(-n - 1, n + 2), max_size=3)))
    return (x, draw(st.sampled_from([sections, indices]))), {"axis": axis}


@st.composite
def array_split(draw):
    x = _array(draw, min_dims=1)
    axis = _axis(draw, x.ndim)
    arg = draw(st.one_of(st.integers(1, 5), st.lists(st.integers(-5, 5), max_size=3)))
    return (x, arg), {"axis": axis}


def _split_along(axis, min_dims):
    @st.composite
    def case(draw):
        x = _array(draw, min_dims=min_dims)
        ax = 1 if axis == "h" and x.ndim > 1 else (0 if axis in ("h", "v") else 2)
        n = x.shape[ax]
        sections = draw(st.sampled_from([d for d in range(1, n + 1) if n % d == 0] or [1]))
        return (x, draw(st.sampled_from([sections, [1, 2]]))), {}
    return case()


@st.composite
def tile(draw):
    x = _array(draw)
    reps = draw(st.one_of(st.integers(0, 3), st.lists(st.integers(0, 3), max_size=4).map(tuple)))
    return (x, reps), {}


@st.composite
def repeat(draw):
    x = _array(draw)
    axis = draw(st.sampled_from([None] + ([_axis(draw, x.ndim)] if x.ndim else [])))
    n = x.size if axis is None else x.shape[axis]
    # Per-element counts as an array: JAX (and so functrans) refuses lists here.
    repeats = draw(st.one_of(st.integers(0, 3), st.lists(st.integers(0, 3), min_size=n,
                                                         max_size=n).map(
        lambda r: np.array(r, np.int64))))
    return (x, repeats), {"axis": axis}


@st.composite
def flip(draw):
    x = _array(draw)
    return (x,), {"axis": draw(T.axes(x.ndim))}


@st.composite
def roll(draw):
    x = _array(draw)
    axis = draw(T.axes(x.ndim))
    k = len(axis) if isinstance(axis, tuple) else 1
    shift = draw(st.one_of(st.integers(-7, 7),
                           st.lists(st.integers(-7, 7), min_size=k, max_size=k).map(tuple)))
    return (x, shift), {"axis": axis}


@st.composite
def rot90(draw):
    x = _array(draw, min_dims=2)
    a, b = _perm(draw, x.ndim)[:2]
    return (x,), {"k": draw(st.integers(-5, 5)), "axes": (a, b)}


@st.composite
def pad(draw):
    x = _array(draw)
    mode = draw(st.sampled_from(["constant", "edge", "reflect", "symmetric", "wrap"]))
    widths = draw(st.one_of(st.integers(0, 3), st.tuples(st.integers(0, 3), st.integers(0, 3)),
                            st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3)),
                                     min_size=x.ndim, max_size=x.ndim).map(tuple)))
    kw = {"mode": mode}
    if mode == "constant" and draw(st.booleans()):
        kw["constant_values"] = draw(st.one_of(
            st.integers(0, 5), st.tuples(st.integers(0, 5), st.integers(0, 5)),
            st.lists(st.tuples(st.integers(0, 5), st.integers(0, 5)), min_size=x.ndim,
                     max_size=x.ndim).map(tuple)))
    return (x, widths), kw


def _atleast(draw):
    return tuple(_array(draw) for _ in range(draw(st.integers(1, 3)))), {}


@st.composite
def where(draw):
    shapes = draw(T.broadcastable_shapes(3))
    cond = draw(T.arrays(T.dtypes_from(["bool", "int8", "float32"]), shapes[0]))
    xy = [draw(st.one_of(T.arrays(T.all_dtypes(), s, specials=True),
                         T.python_scalars(draw(st.sampled_from("bif"))))) for s in shapes[1:]]
    return (cond, *xy), {}


@st.composite
def select(draw):
    shapes = draw(T.broadcastable_shapes(4))
    n = draw(st.integers(1, 2))
    conds = [draw(T.arrays(np.dtype(bool), s)) for s in shapes[:n]]
    dtype = draw(T.numeric_dtypes())
    choices = [draw(T.arrays(dtype, s)) for s in shapes[2:2 + n]]
    return (conds, choices), {"default": draw(st.integers(0, 5))}


@st.composite
def clip(draw):
    shapes = draw(T.broadcastable_shapes(3))
    a = draw(T.arrays(T.numeric_dtypes(), shapes[0], specials=True))
    lo = draw(st.one_of(st.none(), st.integers(-5, 0),
                        T.arrays(a.dtype, shapes[1], int_range=(-5, 0), bound=5)))
    hi = draw(st.one_of(st.none(), st.integers(1, 5), st.floats(1, 5),
                        T.arrays(a.dtype, shapes[2], int_range=(1, 5), bound=5)))
    if lo is None and hi is None:
        hi = 3
    return (a, lo, hi), {}


@st.composite
def _one(draw, min_dims=0):
    return (_array(draw, min_dims=min_dims),), {}


@st.composite
def size(draw):
    x = _array(draw, min_dims=1)
    return (x,), {"axis": draw(st.sampled_from([None, _axis(draw, x.ndim)]))}


@st.composite
def append(draw):
    x = _array(draw, min_dims=1)
    axis = draw(st.sampled_from([None, _axis(draw, x.ndim)]))
    shape = list(x.shape)
    if axis is not None:
        shape[axis] = draw(st.integers(0, 2))
    return (x, _array(draw, shape=tuple(shape) if axis is not None else None)), {"axis": axis}


@st.composite
def diff(draw):
    x = _array(draw, min_dims=1, dtypes=T.dtypes_from(T.ALL_DTYPES))
    axis = _axis(draw, x.ndim)
    kw = {"n": draw(st.integers(0, 3)), "axis": axis}
    for side in ("prepend", "append"):
        if draw(st.integers(0, 3)) == 0:
            shape = list(x.shape)
            shape[axis] = draw(st.integers(1, 2))
            kw[side] = draw(st.one_of(st.integers(0, 5), T.arrays(x.dtype, tuple(shape))))
    return (x,), kw


@st.composite
def ediff1d(draw):
    x = _array(draw, dtypes=T.numeric_dtypes())
    kw = {}
    for side in ("to_end", "to_begin"):
        if draw(st.booleans()):
            kw[side] = draw(st.one_of(st.integers(0, 5), T.arrays(x.dtype, T.shapes(max_dims=2))))
    return (x,), kw


@st.composite
def unstack(draw):
    x = _array(draw, min_dims=1)
    return (x,), {"axis": _axis(draw, x.ndim)}


@st.composite
def astype(draw):
    target = draw(T.all_dtypes())
    src = draw(T.all_dtypes())
    # Float -> integer casts of nan, inf or out-of-range values are undefined in C.
    if src.kind == "f" and target.kind in "iu":
        lo = 0 if target.kind == "u" else -100
        x = draw(T.arrays(src, T.shapes(), elements=st.floats(lo, 100, width=8 * src.itemsize)))
    else:
        x = draw(T.arrays(src, T.shapes(), specials=True))
    return (x, target), {}


@st.composite
def resize(draw):
    x = _array(draw)
    return (x, draw(st.one_of(st.integers(0, 6), T.shapes(max_dims=3)))), {}


CASES = {
    "reshape": reshape(), "ravel": _one(), "transpose": transpose(),
    "permute_dims": permute_dims(), "moveaxis": moveaxis(), "swapaxes": swapaxes(),
    "rollaxis": rollaxis(), "squeeze": squeeze(), "expand_dims": expand_dims(),
    "broadcast_to": broadcast_to(), "broadcast_arrays": broadcast_arrays(),
    "broadcast_shapes": broadcast_shapes(), "concatenate": concatenate(),
    "concat": concatenate(), "stack": stack(), "vstack": _stacker(), "row_stack": _stacker(),
    "hstack": _stacker(), "dstack": _stacker(), "column_stack": _stacker(1, 2),
    "split": split(), "array_split": array_split(), "hsplit": _split_along("h", 1),
    "vsplit": _split_along("v", 2), "dsplit": _split_along("d", 3), "tile": tile(),
    "repeat": repeat(), "flip": flip(), "fliplr": _one(min_dims=2), "flipud": _one(min_dims=1),
    "roll": roll(), "rot90": rot90(),
    "pad": pad(), "atleast_1d": st.composite(_atleast)(), "atleast_2d": st.composite(_atleast)(),
    "atleast_3d": st.composite(_atleast)(), "where": where(), "select": select(),
    "clip": clip(), "shape": _one(), "ndim": _one(), "size": size(),
    "append": append(), "diff": diff(), "ediff1d": ediff1d(), "unstack": unstack(),
    "astype": astype(), "copy": _one(), "resize": resize(), "matrix_transpose": _one(min_dims=2),
}

ORACLES = {"row_stack": np.vstack}


def test_every_shape_function_is_tested():
    assert sorted(CASES) == sorted(shape_ops.__all__ + joining.__all__)


@pytest.mark.parametrize("name", sorted(CASES))
@given(data=st.data())
def test_matches_numpy(name, data):
    args, kwargs = data.draw(CASES[name])
    fn, oracle = getattr(fnp, name), ORACLES.get(name, getattr(np, name))
    if T.raises_like(fn, oracle, *args, **kwargs):
        return
    # Query functions return Python values; there is nothing to trace. Traced repeat counts
    # need total_repeat_length (tested separately).
    trace = name not in ("shape", "ndim", "size", "broadcast_shapes") and not (
        name == "repeat" and isinstance(args[1], np.ndarray))
    T.check_against(fn, oracle, *args, trace=trace, **kwargs)


# ---- clear errors -----------------------------------------------------------------------------------
def test_reshape_size_mismatch():
    with pytest.raises(ValueError, match=r"cannot reshape array of size 6 into shape \(4, -1\)"):
        fnp.reshape(np.ones((2, 3)), (4, -1))


def test_broadcast_to_incompatible():
    with pytest.raises(ValueError, match=r"shape \(3,\) to \(2, 4\)"):
        fnp.broadcast_to(np.ones(3), (2, 4))
    with pytest.raises(ValueError, match=r"broadcast_arrays.*\(2,\) \(3,\)"):
        fnp.broadcast_arrays(np.ones(2), np.ones(3))


def test_concatenate_and_stack_mismatches():
    with pytest.raises(ValueError, match="same number of dimensions"):
        fnp.concatenate([np.ones((2, 2)), np.ones(2)])
    with pytest.raises(ValueError, match=r"along dimension 1.*\(2, 3\) and \(2, 4\)"):
        fnp.concatenate([np.ones((2, 3)), np.ones((2, 4))])
    with pytest.raises(ValueError, match="same shape"):
        fnp.stack([np.ones(2), np.ones(3)])


def test_axis_errors_name_the_axis():
    with pytest.raises(np.exceptions.AxisError, match="axis 3 is out of bounds"):
        fnp.flip(np.ones((2, 2)), 3)
    with pytest.raises(np.exceptions.AxisError, match="-4"):
        fnp.moveaxis(np.ones((2, 2, 2)), -4, 0)
    with pytest.raises(ValueError, match="size not equal to one"):
        fnp.squeeze(np.ones((2, 1)), axis=0)
    with pytest.raises(ValueError, match="equal division"):
        fnp.split(np.ones(5), 2)


def test_unsupported_dtype_in_astype():
    with pytest.raises(TypeError, match="complex256|supported"):
        fnp.astype(np.ones(2), np.clongdouble)
    with pytest.raises(TypeError, match="supported"):
        fnp.concatenate([np.array(["a"]), np.array(["b"])])


def test_where_one_argument_is_nonzero():
    x = np.array([[0, 1], [2, 0]])
    for got, want in zip(fnp.where(x), np.where(x)):
        T.assert_close(got, want)


@given(T.arrays(T.all_dtypes(), T.shapes(1, 2, min_side=1)), st.data())
def test_repeat_with_traced_counts_needs_total_repeat_length(x, data):
    # JAX's convention: a static total; extra output is cut off, a short one repeats the
    # last element. Eagerly the counts are concrete; traced they are not.
    counts = data.draw(T.arrays(np.dtype(np.int64), (x.shape[0],), int_range=(0, 3)))
    total = data.draw(st.integers(0, 8))

    def oracle(x, counts):
        r = np.repeat(x, counts, axis=0)
        if len(r) < total:
            r = np.concatenate([r, np.repeat(x[-1:] if len(r) == 0 else r[-1:],
                                             total - len(r), axis=0)])
        return r[:total]
    T.check_against(lambda x, c: fnp.repeat(x, c, axis=0, total_repeat_length=total), oracle,
                    x, counts)
    with pytest.raises(ValueError, match="total_repeat_length"):
        import functrans as ft
        ft.make_jaxpr(lambda c: fnp.repeat(x, c, axis=0))(counts)


def test_roll_by_traced_shifts_matches_numpy_under_jit_vmap_and_grad():
    # A traced shift (jraph's get_fully_connected_graph vmaps roll over per-graph counts) rolls
    # by a dynamic slice; the oracle is NumPy's roll with the same shifts, a Python loop over
    # the batch for vmap, and central differences for the gradient (linear in x, so only
    # rounding: eps * |f| / h with |f| ~ 100 and h = 1e-6 is 2e-8; held to 1e-7).
    import functrans as ft
    from finite_diff import fd_grad
    x = np.arange(24.0).reshape(4, 6)
    shifts = np.array([1, -1, 7, 0])
    got = ft.vmap(fnp.roll)(x, shifts)
    T.assert_close(got, np.stack([np.roll(r, s) for r, s in zip(x, shifts)]))
    for s, ax in [(np.array([2, -3]), (0, 1)), (np.array(5), 1), (np.array(-9), None)]:
        T.assert_close(ft.jit(lambda v, s: fnp.roll(v, s, axis=ax))(x, s), np.roll(x, s, ax))
    T.assert_close(ft.jit(lambda s: fnp.roll(x, [s, s], axis=[0, 0]))(3), np.roll(x, 6, 0))
    weights = np.linspace(-1.0, 1.0, 24).reshape(4, 6)
    loss = lambda v, s: (fnp.roll(v, s, axis=1) * weights).sum()  # noqa: E731
    g = ft.jit(ft.grad(loss))(x, np.array(2))
    T.assert_close(g, fd_grad(lambda v: (np.roll(v, 2, 1) * weights).sum(), x), atol=1e-7)
    with pytest.raises(ValueError, match="scalars or 1-D"):
        ft.jit(lambda s: fnp.roll(x, s, axis=0))(np.ones((2, 2), np.int32))
