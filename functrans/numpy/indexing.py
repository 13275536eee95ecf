"""NumPy indexing (``x[idx]``) and functional updates (``x.at[idx].set(v)``).

An index expression is parsed once into a :class:`_Plan`: static slices and integers become
``slice``/``rev``/``squeeze``; traced scalar integers become ``dynamic_slice``; integer arrays
become one ``gather`` (or ``scatter*`` for updates); ``None`` adds axes. The position of the
advanced-index dimensions follows NumPy's rule (together where the advanced indices are
adjacent, else first)::

    >>> x = fnp.arange(12).reshape(3, 4)
    >>> x[1:, fnp.array([0, 3])].tolist()
    [[4, 7], [8, 11]]
    >>> x.at[0, 1].set(-1)[0].tolist()
    [0, -1, 2, 3]
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .. import lax
from .. import primitives as P
from ..core import dtypes
from ..core.array import Array
from ..core.trace import Tracer, get_aval
from ._core import asarray, broadcast_to_shape, convert, normalize_axis

__all__ = ["take", "take_along_axis", "put_along_axis"]


class NonConcreteBooleanIndexError(IndexError):
    """A boolean mask whose value is unknown while tracing: the result shape would depend on it."""


class _Entry(NamedTuple):
    kind: str  # "slice" | "int" | "scalar" | "array" | "none"
    axis: int  # operand axis (-1 for "none")
    value: object  # (start, stop, step, size) | int | traced scalar | int array | None


def wrap_negative(idx, n):
    """Traced integer indices: negative entries count from the end (``i + n``)."""
    dtype = get_aval(idx).dtype
    if dtype.kind != "i":
        return idx
    weak = lax.ops._convert_weak
    return lax.select(P.lt_p.bind1(idx, weak(0, dtype)), P.add_p.bind1(idx, weak(n, dtype)), idx)


def _concrete(x):
    """NumPy value of x if it is known now (Array, ndarray, concrete tracer), else None."""
    if type(x) is Array:
        return x._value
    if isinstance(x, Tracer):
        return x.concrete_value()
    return np.asarray(x)


def _is_int_like(x) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _expand(idx, ndim):
    """Normalize to a tuple with bool masks turned into integer arrays and Ellipsis expanded."""
    if not isinstance(idx, tuple):
        idx = (idx,)
    out = []
    for i in idx:
        if isinstance(i, list):
            i = asarray(i) if i else np.zeros(0, np.intp)
        if isinstance(i, (bool, np.bool_)):
            raise IndexError("boolean scalar indices are not supported; use fnp.where or "
                             "x[None] for a new axis")
        if type(i) is Array or isinstance(i, (Tracer, np.ndarray)):
            aval = get_aval(i)
            if aval.dtype == dtypes.bool_:
                mask = _concrete(i)
                if mask is None:
                    raise NonConcreteBooleanIndexError(
                        f"boolean mask index of type {aval.str_short()} is traced, so the result "
                        "shape is unknown; use fnp.where(mask, x, other) or a fixed-size "
                        "fnp.nonzero(mask, size=...) instead")
                out.extend(Array._wrap(np.asarray(n, dtypes.default_int_dtype()))
                           for n in np.nonzero(mask))
                continue
            if aval.dtype.kind not in "iu":
                raise IndexError(f"arrays used as indices must be of integer (or boolean) type, "
                                 f"got {aval.str_short()}")
        elif not (i is None or i is Ellipsis or isinstance(i, slice) or _is_int_like(i)):
            raise IndexError(f"only integers, slices (`:`), ellipsis (`...`), None and integer "
                             f"or boolean arrays are valid indices, got {type(i).__name__}")
        out.append(i)
    n_ell = sum(1 for i in out if i is Ellipsis)
    if n_ell > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    consumed = sum(1 for i in out if i is not None and i is not Ellipsis)
    if consumed > ndim:
        raise IndexError(f"too many indices for array: array is {ndim}-dimensional, but "
                         f"{consumed} were indexed")
    if n_ell:
        k = out.index(Ellipsis)
        out[k:k + 1] = [slice(None)] * (ndim - consumed)
    else:
        out += [slice(None)] * (ndim - consumed)
    return out


def _static_int(v, name="slice bound"):
    if v is None or _is_int_like(v):
        return v
    c = _concrete(v) if (type(v) is Array or isinstance(v, Tracer)) else None
    if c is None or c.shape != () or c.dtype.kind not in "iu":
        raise IndexError(f"{name}s must be static integers (got {v!r:.60}); for traced "
                         "offsets use lax.dynamic_slice")
    return int(c)


class _Plan:
    """A parsed index expression for an array of ``shape``."""

    def __init__(self, shape, idx):
        self.shape = tuple(shape)
        entries = []
        axis = 0
        for i in _expand(idx, len(shape)):
            if i is None:
                entries.append(_Entry("none", -1, None))
                continue
            n = shape[axis]
            if isinstance(i, slice):
                start, stop, step = (_static_int(i.start), _static_int(i.stop),
                                     _static_int(i.step, "slice step"))
                if step == 0:
                    raise ValueError("slice step cannot be zero")
                r = range(*slice(start, stop, step).indices(n))
                entries.append(_Entry("slice", axis, (r.start, r.stop, r.step, len(r))))
            elif _is_int_like(i):
                i = int(i)
                if not -n <= i < n:
                    raise IndexError(f"index {i} is out of bounds for axis {axis} with size {n}")
                entries.append(_Entry("int", axis, i % n))
            else:
                entries.append(self._array_entry(i, axis, n))
            axis += 1
        self.entries = entries
        adv = [k for k, e in enumerate(entries) if e.kind in ("array", "scalar")]
        if adv:  # NumPy counts integers as advanced indices when arrays are present
            adv = [k for k, e in enumerate(entries) if e.kind in ("array", "scalar", "int")]
        self.adv_positions = adv
        self.has_arrays = any(entries[k].kind == "array" for k in adv)
        self.adjacent = adv == list(range(adv[0], adv[-1] + 1)) if adv else True
        shapes = [get_aval(entries[k].value).shape for k in adv
                  if entries[k].kind in ("array", "scalar")]
        try:
            self.batch = np.broadcast_shapes(*shapes) if shapes else ()
        except ValueError:
            raise IndexError("shape mismatch: indexing arrays could not be broadcast together "
                             f"with shapes {' '.join(map(str, shapes))}") from None

    @staticmethod
    def _array_entry(i, axis, n):
        """An integer array (or scalar) index; negative entries count from the end."""
        c = _concrete(i)
        if c is not None:
            if c.size and (c.min() < -n or c.max() >= n):
                bad = c[(c < -n) | (c >= n)].flat[0]
                raise IndexError(f"index {bad} is out of bounds for axis {axis} with size {n}")
            value = Array._wrap(np.where(c < 0, c + n, c).astype(c.dtype))
        else:
            value = wrap_negative(i, n)
        return _Entry("scalar" if get_aval(value).shape == () else "array", axis, value)

    def layout(self):
        """Output dims in order: ``("B",)`` for the advanced block, ``("s", entry)`` for a
        slice, ``("n",)`` for None."""
        tokens = []
        placed = False
        if self.adv_positions and not self.adjacent:
            tokens.append(("B",))
            placed = True
        for k, e in enumerate(self.entries):
            if e.kind == "slice":
                tokens.append(("s", e))
            elif e.kind == "none":
                tokens.append(("n",))
            elif not placed and k in self.adv_positions:
                tokens.append(("B",))
                placed = True
        return tokens

    def out_shape(self):
        shape = []
        for t in self.layout():
            shape.extend(self.batch if t[0] == "B" else (1,) if t[0] == "n" else (t[1].value[3],))
        return tuple(shape)


def getitem(x, idx):
    """``x[idx]`` with NumPy semantics (traced array indices are clamped into range)."""
    x = asarray(x)
    plan = _Plan(get_aval(x).shape, idx)
    y = x
    # 1. Static slices (reversed for negative steps) and static integers.
    starts, limits, strides, revs, ints = [], [], [], [], []
    for e in plan.entries:
        if e.kind == "none":
            continue
        n = plan.shape[e.axis]
        if e.kind == "slice":
            start, stop, step, size = e.value
            if step < 0 and size:
                revs.append(e.axis)
                start = n - 1 - start
                step = -step
            starts.append(start if size else 0)
            limits.append(start + (size - 1) * step + 1 if size else 0)
            strides.append(step)
        elif e.kind == "int":
            starts.append(e.value)
            limits.append(e.value + 1)
            strides.append(1)
            ints.append(e.axis)
        else:
            starts.append(0)
            limits.append(n)
            strides.append(1)
    if revs:
        y = lax.rev(y, revs)
    y = lax.slice(y, starts, limits, strides)
    if not any(e.kind in ("array", "scalar") for e in plan.entries):
        return _finish_basic(plan, lax.squeeze(y, ints))
    # 2. Advanced indices on the remaining axes (ints become scalar indices of value 0 now).
    adv = [e for e in plan.entries if e.kind in ("array", "scalar", "int")]
    if not plan.has_arrays:
        starts = [lax.ops._index_scalar(0)] * get_aval(y).ndim
        for e in adv:
            if e.kind == "scalar":
                starts[e.axis] = e.value
        sizes = [1 if e.kind in ("scalar", "int") else get_aval(y).shape[e.axis]
                 for e in sorted((e for e in plan.entries if e.kind != "none"),
                                 key=lambda e: e.axis)]
        y = lax.dynamic_slice(y, starts, sizes)
        y = lax.squeeze(y, [e.axis for e in adv])
        return _finish_basic(plan, y)
    indices = [e.value if e.kind != "int" else Array._wrap(np.asarray(0, np.int32))
               for e in adv]
    y = P.gather_p.bind1(y, *indices, axes=tuple(e.axis for e in adv), mode="clip",
                         fill_value=None)
    return _arrange(plan, y)


def _finish_basic(plan, y):
    """Insert None axes into a result whose dims are the slice dims in order."""
    return _arrange(plan, y, batch_first=False)


def _arrange(plan, y, batch_first=True):
    """Reorder [B..., slice dims...] (or [slice dims...]) into the plan's layout."""
    tokens = plan.layout()
    nb = len(plan.batch) if batch_first else 0
    slice_dims = iter(range(nb, get_aval(y).ndim))
    perm = []
    for t in tokens:
        if t[0] == "B":
            perm.extend(range(nb))
        elif t[0] == "s":
            perm.append(next(slice_dims))
    y = lax.transpose(y, perm)
    return lax.reshape(y, plan.out_shape())


# ---- updates --------------------------------------------------------------------------------------
def _scatter_indices(plan):
    """Index arrays (one per indexed operand axis) broadcasting to B + (partial slice dims),
    plus the operand axes they index and the full-slice axes left as window dims."""
    partial = [e for e in plan.entries if e.kind == "slice"
               and e.value[:3] != (0, plan.shape[e.axis], 1)]
    full = [e for e in plan.entries if e.kind == "slice" and e not in partial]
    nb, np_ = len(plan.batch), len(partial)
    indices, axes = [], []
    for e in plan.entries:
        if e.kind in ("array", "scalar"):
            v = broadcast_to_shape(e.value, plan.batch)
            indices.append(lax.reshape(v, plan.batch + (1,) * np_))
        elif e.kind == "int":
            indices.append(Array._wrap(np.asarray(e.value, dtypes.default_int_dtype())))
        elif e in partial:
            start, _, step, size = e.value
            k = partial.index(e)
            r = np.arange(size, dtype=dtypes.default_int_dtype()) * step + start
            indices.append(Array._wrap(r.reshape((1,) * (nb + k) + (size,) + (1,) * (np_ - k - 1))))
        else:
            continue
        axes.append(e.axis)
    return indices, tuple(axes), partial, full


def _updates_layout(plan, values, dtype, partial, full):
    """Broadcast ``values`` to ``x[idx]``'s shape, then reorder to B + partial + full dims."""
    v = convert(asarray(values), dtype)
    v = broadcast_to_shape(v, plan.out_shape())
    tokens = [t for t in plan.layout() if t[0] != "n"]
    shape_no_none = []
    for t in tokens:
        shape_no_none.extend(plan.batch if t[0] == "B" else (t[1].value[3],))
    v = lax.reshape(v, tuple(shape_no_none))
    pos, where = 0, {}
    for t in tokens:
        if t[0] == "B":
            where["B"] = list(range(pos, pos + len(plan.batch)))
            pos += len(plan.batch)
        else:
            where[id(t[1])] = [pos]
            pos += 1
    perm = list(where.get("B", []))
    for e in partial + full:
        perm += where[id(e)]
    return lax.transpose(v, perm)


_SCATTERS = {"set": P.scatter_p, "add": P.scatter_add_p, "mul": P.scatter_mul_p,
             "min": P.scatter_min_p, "max": P.scatter_max_p}


def scatter_update(x, idx, values, kind, mode=None):
    """``x`` with ``values`` combined into ``x[idx]`` (``kind``: set/add/mul/min/max)."""
    x = asarray(x)
    aval = get_aval(x)
    plan = _Plan(aval.shape, idx)
    indices, axes, partial, full = _scatter_indices(plan)
    updates = _updates_layout(plan, values, aval.dtype, partial, full)
    if not axes:  # only full slices / None: every element is updated
        idx_all = [Array._wrap(np.arange(aval.shape[0], dtype=dtypes.default_int_dtype()))]
        if aval.ndim == 0:
            return _combine_whole(x, updates, kind)
        indices, axes = idx_all, (0,)
    prim = _SCATTERS[kind]
    if prim is P.scatter_mul_p and aval.dtype == dtypes.bool_:
        prim = P.scatter_min_p  # logical and
    return prim.bind1(x, updates, *indices, axes=axes, mode=mode or "drop")


def _combine_whole(x, v, kind):
    if kind == "set":
        return v
    prim = {"add": P.add_p, "mul": P.mul_p, "min": P.min_p, "max": P.max_p}[kind]
    return prim.bind1(x, v)


class _IndexUpdateRef:
    """``x.at[idx]``: functional versions of ``x[idx] = v``, ``x[idx] += v``, ..."""

    __slots__ = ("array", "index")

    def __init__(self, array, index):
        self.array, self.index = array, index

    def get(self, *, mode=None, fill_value=None, indices_are_sorted=False,
            unique_indices=False):
        """``x[idx]``; ``mode="fill"`` returns ``fill_value`` for out-of-range indices."""
        if mode in (None, "clip", "promise_in_bounds"):
            return getitem(self.array, self.index)
        if mode != "fill":
            raise ValueError(f"unknown mode {mode!r} for .at[].get (clip, fill)")
        return _get_fill(self.array, self.index, fill_value)

    def set(self, values, *, mode=None, indices_are_sorted=False, unique_indices=False):
        """``x[idx] = values`` (the last write wins for repeated indices)."""
        return scatter_update(self.array, self.index, values, "set", _mode(mode))

    def add(self, values, *, mode=None, indices_are_sorted=False, unique_indices=False):
        """``x[idx] += values``, accumulating over repeated indices."""
        return scatter_update(self.array, self.index, values, "add", _mode(mode))

    def multiply(self, values, *, mode=None, indices_are_sorted=False, unique_indices=False):
        """``x[idx] *= values``, accumulating over repeated indices."""
        return scatter_update(self.array, self.index, values, "mul", _mode(mode))

    mul = multiply

    def divide(self, values, *, mode=None, indices_are_sorted=False, unique_indices=False):
        """``x[idx] /= values``."""
        from .ufuncs import true_divide
        return self.apply(lambda v: true_divide(v, values), mode=mode)

    def power(self, values, *, mode=None, indices_are_sorted=False, unique_indices=False):
        """``x[idx] **= values``."""
        from .ufuncs import power
        return self.apply(lambda v: power(v, values), mode=mode)

    def min(self, values, *, mode=None, indices_are_sorted=False, unique_indices=False):
        """``x[idx] = minimum(x[idx], values)``, over repeated indices too."""
        return scatter_update(self.array, self.index, values, "min", _mode(mode))

    def max(self, values, *, mode=None, indices_are_sorted=False, unique_indices=False):
        """``x[idx] = maximum(x[idx], values)``, over repeated indices too."""
        return scatter_update(self.array, self.index, values, "max", _mode(mode))

    def apply(self, func, *, mode=None, indices_are_sorted=False, unique_indices=False):
        """``x[idx] = func(x[idx])``."""
        current = getitem(self.array, self.index)
        new = convert(asarray(func(current)), get_aval(self.array).dtype)
        return scatter_update(self.array, self.index, new, "set", _mode(mode))

    def __repr__(self):
        return f"_IndexUpdateRef({self.array!r}, {self.index!r})"


def _mode(mode):
    if mode in (None, "drop", "fill"):
        return "drop"
    if mode in ("clip", "promise_in_bounds"):
        return "clip"
    raise ValueError(f"unknown mode {mode!r} for an indexed update (drop, clip)")


def _get_fill(x, idx, fill_value):
    x = asarray(x)
    plan = _Plan(get_aval(x).shape, idx)
    indices, axes, partial, full = _scatter_indices(plan)
    if not axes:
        return getitem(x, idx)
    out = P.gather_p.bind1(x, *indices, axes=axes, mode="fill", fill_value=fill_value)
    # out dims: B + partial + full; reorder like _updates_layout in reverse.
    tokens = [t for t in plan.layout() if t[0] != "n"]
    order = []
    nb = len(plan.batch)
    ids = {id(e): nb + k for k, e in enumerate(partial + full)}
    for t in tokens:
        order.extend(range(nb) if t[0] == "B" else [ids[id(t[1])]])
    return lax.reshape(lax.transpose(out, order), plan.out_shape())


class _IndexUpdateHelper:
    """The ``.at`` property: ``x.at[idx].set(v)``."""

    __slots__ = ("array",)

    def __init__(self, array):
        self.array = array

    def __getitem__(self, index):
        return _IndexUpdateRef(self.array, index)

    def __repr__(self):
        return f"_IndexUpdateHelper({self.array!r})"


# ---- take and friends -------------------------------------------------------------------------------
def take(a, indices, axis=None, out=None, mode=None, unique_indices=False,
         indices_are_sorted=False, fill_value=None):
    """Elements of ``a`` at ``indices`` along ``axis`` (flattened when None).

    ``mode``: "fill" (default, as JAX: out-of-range reads give NaN/fill_value), "clip" or
    "wrap" (modular).

    >>> take(fnp.array([10, 20, 30]), fnp.array([2, 0]))
    Array([30, 10], dtype=int64)
    """
    a = asarray(a)
    if axis is None:
        a = lax.reshape(a, (get_aval(a).size,))
        axis = 0
    axis = normalize_axis(axis, get_aval(a).ndim)
    n = get_aval(a).shape[axis]
    idx = asarray(indices)
    if get_aval(idx).dtype.kind not in "iu":
        raise IndexError(f"take: indices must be integers, got {get_aval(idx).str_short()}")
    mode = mode or "fill"
    if mode == "wrap":
        from .ufuncs import remainder
        idx = remainder(idx, n)
    elif mode in ("fill", "clip", "raise"):
        if mode == "raise":
            c = _concrete(idx)
            if c is None:
                raise ValueError("take(mode='raise') needs concrete indices")
            if c.size and (c.min() < -n or c.max() >= n):
                raise IndexError(f"take: index out of range for axis {axis} with size {n}")
            mode = "clip"
        idx = wrap_negative(idx, n)
    else:
        raise ValueError(f"take: unknown mode {mode!r} (fill, clip, wrap, raise)")
    g = P.gather_p.bind1(a, idx, axes=(axis,), mode="fill" if mode == "fill" else "clip",
                         fill_value=fill_value)
    # gather puts the index dims first; NumPy puts them at `axis`.
    k = get_aval(idx).ndim
    nd = get_aval(g).ndim
    perm = list(range(k, k + axis)) + list(range(k)) + list(range(k + axis, nd))
    return lax.transpose(g, perm)


def take_along_axis(arr, indices, axis, mode=None, fill_value=None):
    """``arr`` values at ``indices`` along ``axis`` (indices broadcast against ``arr``).

    >>> take_along_axis(fnp.array([[3, 1, 2]]), fnp.array([[1, 2, 0]]), axis=1).tolist()
    [[1, 2, 3]]
    """
    arr, indices = asarray(arr), asarray(indices)
    if axis is None:
        arr = lax.reshape(arr, (get_aval(arr).size,))
        indices = lax.reshape(indices, (get_aval(indices).size,))
        axis = 0
    aval, ival = get_aval(arr), get_aval(indices)
    if ival.ndim != aval.ndim:
        raise ValueError(f"take_along_axis: indices {ival.str_short()} and arr "
                         f"{aval.str_short()} must have the same rank")
    axis = normalize_axis(axis, aval.ndim)
    shape = list(np.broadcast_shapes(tuple(1 if i == axis else d for i, d in enumerate(aval.shape)),
                                     tuple(1 if i == axis else d for i, d in enumerate(ival.shape))))
    idx_shape = list(shape)
    idx_shape[axis] = ival.shape[axis]
    indices = broadcast_to_shape(indices, tuple(idx_shape))
    indices = wrap_negative(indices, aval.shape[axis])
    # Index every axis: iotas for the others (broadcast), `indices` for `axis`.
    index_arrays, axes = [], []
    for d in range(aval.ndim):
        if d == axis:
            index_arrays.append(indices)
        else:
            if aval.shape[d] != shape[d]:
                raise ValueError(f"take_along_axis: arr dimension {d} ({aval.shape[d]}) does not "
                                 f"match indices ({ival.shape[d]})")
            index_arrays.append(lax.broadcasted_iota(ival.dtype, tuple(
                idx_shape[k] if k == d else 1 for k in range(aval.ndim)), d))
        axes.append(d)
    return P.gather_p.bind1(arr, *index_arrays, axes=tuple(axes),
                            mode="fill" if mode == "fill" else "clip", fill_value=fill_value)


def put_along_axis(arr, indices, values, axis, inplace=False, mode=None):
    """``arr`` with ``values`` written at ``indices`` along ``axis`` (functional; as JAX,
    ``inplace`` must be False)."""
    if inplace:
        raise ValueError("functrans arrays are immutable: put_along_axis needs inplace=False")
    arr, indices = asarray(arr), asarray(indices)
    aval, ival = get_aval(arr), get_aval(indices)
    axis = normalize_axis(axis, aval.ndim)
    indices = wrap_negative(indices, aval.shape[axis])
    index_arrays = []
    for d in range(aval.ndim):
        if d == axis:
            index_arrays.append(indices)
        else:
            index_arrays.append(lax.broadcasted_iota(ival.dtype, tuple(
                ival.shape[k] if k == d else 1 for k in range(aval.ndim)), d))
    shape = np.broadcast_shapes(*[get_aval(i).shape for i in index_arrays])
    v = broadcast_to_shape(convert(asarray(values), aval.dtype), shape)
    return P.scatter_p.bind1(arr, v, *index_arrays, axes=tuple(range(aval.ndim)),
                             mode=_mode(mode))

