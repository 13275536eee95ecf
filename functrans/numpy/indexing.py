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
from ..core.config import config
from ..core.shape_poly import DimExpr, is_constant_dim, is_symbolic_shape, max_dim, min_dim
from ..core.shape_poly import broadcast_shapes as symbolic_broadcast_shapes
from ..core.array import Array
from ..core.trace import Tracer, get_aval
from ._core import check_arraylike, asarray, broadcast_shapes, broadcast_to_shape, convert, normalize_axis

__all__ = ["take", "take_along_axis", "put_along_axis"]


class NonConcreteBooleanIndexError(IndexError):
    """A boolean mask whose value is unknown while tracing: the result shape would depend on it."""


class _Entry(NamedTuple):
    kind: str  # "slice" | "int" | "scalar" | "array" | "none" | "sep" (see _SEPARATOR)
    axis: int  # operand axis (-1 for "none" and "sep")
    value: object  # (start, stop, step, size) | int | traced scalar | int array | None


def wrap_negative(idx, n):
    """Integer indices with negative entries counting from the end (``i + n``); computed with
    ``select``, so it works on traced indices too.

    >>> wrap_negative(fnp.array([-1, 2]), 5)
    Array([4, 2], dtype=int64)
    """
    dtype = get_aval(idx).dtype
    if dtypes.kind(dtype) != "i":
        return idx
    if dtype.itemsize < dtypes.default_int_dtype().itemsize:  # i + n must not overflow
        dtype = dtypes.default_int_dtype()
        idx = convert(idx, dtype)
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


class _Mask(NamedTuple):
    value: np.ndarray  # a concrete boolean array covering value.ndim operand axes


# Stands for an Ellipsis that covers no axes: NumPy still counts it as separating the advanced
# indices around it (x[:, [0], ..., [0]] puts their dims first even when ... is empty).
_SEPARATOR = object()


def _expand(idx, shape):
    """Normalize to a list with Ellipsis expanded and bool masks turned into integer arrays."""
    ndim = len(shape)
    if not isinstance(idx, tuple):
        idx = (idx,)
    out = []
    for i in idx:
        if isinstance(i, list):
            i = asarray(i) if i else np.zeros(0, np.intp)
        if type(i) is Array or isinstance(i, (Tracer, np.ndarray)):
            aval = get_aval(i)
            if aval.dtype == dtypes.bool_:
                mask = _concrete(i)
                if mask is None:
                    raise NonConcreteBooleanIndexError(
                        f"boolean mask index of type {aval.str_short()} is traced, so the result "
                        "shape is unknown; use fnp.where(mask, x, other) or a fixed-size "
                        "fnp.nonzero(mask, size=...) instead")
                i = _Mask(mask)
            elif dtypes.kind(aval.dtype) not in "iu":
                raise IndexError(f"arrays used as indices must be of integer (or boolean) type, "
                                 f"got {aval.str_short()}")
        elif not (i is None or i is Ellipsis or isinstance(i, slice) or _is_int_like(i)):
            raise IndexError(f"only integers, slices (`:`), ellipsis (`...`), None and integer "
                             f"or boolean arrays are valid indices, got {type(i).__name__}")
        out.append(i)
    n_ell = sum(1 for i in out if i is Ellipsis)
    if n_ell > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    consumed = sum(i.value.ndim if type(i) is _Mask else 1 for i in out
                   if i is not None and i is not Ellipsis)
    if consumed > ndim:
        raise IndexError(f"too many indices for array: array is {ndim}-dimensional, but "
                         f"{consumed} were indexed")
    if n_ell:
        k = next(k for k, i in enumerate(out) if i is Ellipsis)
        out[k:k + 1] = [slice(None)] * (ndim - consumed) or [_SEPARATOR]
    else:
        out += [slice(None)] * (ndim - consumed)
    expanded, axis = [], 0
    for i in out:
        if type(i) is _Mask:
            covered = shape[axis:axis + i.value.ndim]
            # as NumPy, an empty mask dimension matches any axis length
            if any(m != a and m != 0 for m, a in zip(i.value.shape, covered)):
                raise IndexError(f"boolean index of shape {i.value.shape} does not match the "
                                 f"indexed axes {axis}..{axis + i.value.ndim - 1} of shape "
                                 f"{covered}")
            expanded.extend(Array._wrap(np.asarray(n, dtypes.default_int_dtype()))
                            for n in np.nonzero(i.value))
            axis += i.value.ndim
        else:
            expanded.append(i)
            axis += i is not None and i is not _SEPARATOR
    return expanded


def _is_bool_scalar(i) -> bool:
    if isinstance(i, (bool, np.bool_)):
        return True
    if type(i) is Array or isinstance(i, (Tracer, np.ndarray)):
        aval = get_aval(i)
        return aval.shape == () and aval.dtype == dtypes.bool_
    return False


def _axes_consumed(i) -> int:
    if i is None or i is Ellipsis or _is_bool_scalar(i):
        return 0
    if isinstance(i, list):
        i = np.asarray(i)
    if type(i) is Array or isinstance(i, (Tracer, np.ndarray)):
        aval = get_aval(i)
        return aval.ndim if aval.dtype == dtypes.bool_ else 1
    return 1


def _lift_bool_scalars(shape, idx):
    """NumPy reads a boolean scalar index as a 0-d mask: True adds a length-1 axis, False a
    length-0 one, and it joins the advanced indices. Rewrite each as an integer array (``[0]`` or
    ``[]``) indexing a new size-1 operand axis, so the plan only sees integer indices.

    Returns ``(shape, idx)`` for the operand with those axes inserted (unchanged if none)."""
    items = idx if isinstance(idx, tuple) else (idx,)
    if not any(_is_bool_scalar(i) for i in items):
        return tuple(shape), idx
    consumed = sum(_axes_consumed(i) for i in items)
    new_shape, new_items, ax = list(shape), [], 0
    for i in items:
        if _is_bool_scalar(i):
            value = _concrete(i)
            if value is None:
                raise NonConcreteBooleanIndexError(
                    "a traced boolean scalar index makes the result shape value-dependent; "
                    "use fnp.where(cond, x, other) instead")
            new_shape.insert(ax, 1)
            new_items.append(Array._wrap(np.zeros(int(bool(value)), dtypes.default_int_dtype())))
            ax += 1
            continue
        ax += max(len(shape) - consumed, 0) if i is Ellipsis else _axes_consumed(i)
        new_items.append(i)
    return tuple(new_shape), tuple(new_items)


def _static_int(v, name="slice bound"):
    if v is None or _is_int_like(v) or type(v) is DimExpr:
        return v
    c = _concrete(v) if (type(v) is Array or isinstance(v, Tracer)) else None
    if c is None or c.shape != () or dtypes.kind(c.dtype) not in "iu":
        raise IndexError(f"{name}s must be static integers (got {v!r:.60}); for traced "
                         "offsets use lax.dynamic_slice")
    return int(c)


def _symbolic_slice(start, stop, step, n) -> tuple:
    """``slice(start, stop, step).indices(n)`` and the length, where the size or a bound is
    symbolic: bounds are clamped with max/min of sizes, which stay symbolic where the order
    depends on the dimension variables (``x[:5]`` has ``min(a, 5)`` elements, as in JAX)."""
    step = 1 if step is None else step

    def clamp(i, lo, hi):
        if is_constant_dim(i) and i < 0:
            i = i + n
        return max_dim(lo, min_dim(hi, i))

    if step > 0:
        lo = 0 if start is None else clamp(start, 0, n)
        hi = n if stop is None else clamp(stop, 0, n)
        length = max_dim(0, (hi - lo + step - 1) // step)
    else:
        lo = n - 1 if start is None else clamp(start, -1, n - 1)
        hi = -1 if stop is None else clamp(stop, -1, n - 1)
        length = max_dim(0, (lo - hi - step - 1) // -step)
    return lo, hi, step, length


class _Plan:
    """A parsed index expression for an array of ``shape``."""

    def __init__(self, shape, idx, strict=True):
        self.shape = tuple(shape)
        entries, pending = [], []  # pending: out-of-range messages of array indices
        axis = 0
        for i in _expand(idx, self.shape):
            if i is None or i is _SEPARATOR:
                entries.append(_Entry("none" if i is None else "sep", -1, None))
                continue
            n = shape[axis]
            if isinstance(i, slice):
                start, stop, step = (_static_int(i.start), _static_int(i.stop),
                                     _static_int(i.step, "slice step"))
                if step == 0:
                    raise ValueError("slice step cannot be zero")
                if type(n) is DimExpr or type(start) is DimExpr or type(stop) is DimExpr:
                    entries.append(_Entry("slice", axis, _symbolic_slice(start, stop, step, n)))
                else:
                    r = range(*slice(start, stop, step).indices(n))
                    entries.append(_Entry("slice", axis, (r.start, r.stop, r.step, len(r))))
            elif _is_int_like(i):
                i = int(i)
                if -n <= i < n:
                    entries.append(_Entry("int", axis, i + n if i < 0 else i))
                elif strict:
                    raise IndexError(f"index {i} is out of bounds for axis {axis} with size {n}")
                else:  # left to the update's mode (drop/clip) or get's fill
                    entries.append(self._array_entry(np.asarray(i), axis, n, strict)[0])
            else:
                entry, bad = self._array_entry(i, axis, n, strict)
                entries.append(entry)
                if bad is not None:
                    pending.append(bad)
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
            self.batch = (() if not shapes else broadcast_shapes("indexing", *shapes)
                          if any(is_symbolic_shape(s) for s in shapes) else
                          np.broadcast_shapes(*shapes))
        except ValueError:
            raise IndexError("shape mismatch: indexing arrays could not be broadcast together "
                             f"with shapes {' '.join(map(str, shapes))}") from None
        if pending and 0 not in self.batch:  # as NumPy: nothing is read when B is empty
            raise IndexError(pending[0])

    @staticmethod
    def _array_entry(i, axis, n, strict=True):
        """An integer array (or scalar) index, negative entries counting from the end, and the
        message for its first out-of-range entry (raised now for 0-d indices if ``strict``;
        for arrays only if anything is read). Without ``strict`` they stay out of range."""
        # (with a symbolic size, constant indices are normalized in the program)
        c = _concrete(i) if type(n) is not DimExpr else None
        bad = None
        if c is not None:
            if strict and c.size and (c.min() < -n or c.max() >= n):
                first = c[(c < -n) | (c >= n)].flat[0]
                bad = f"index {first} is out of bounds for axis {axis} with size {n}"
                if c.ndim == 0:
                    raise IndexError(bad)
            if dtypes.kind(c.dtype) == "u":  # huge unsigned values must stay out of range in int64
                c = np.minimum(c, np.uint64(n))
            c = c.astype(np.int64)
            value = Array._wrap(np.where(c < 0, c + n, c).astype(dtypes.default_int_dtype()))
        else:
            value = wrap_negative(i, n)
        return _Entry("scalar" if get_aval(value).shape == () else "array", axis, value), bad

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


def getitem(x, idx, strict=None):
    """``x[idx]`` with NumPy semantics (traced array indices are clamped into range).

    Concrete out-of-range indices raise IndexError unless ``strict=False`` (``.at[].get()``),
    where they are clamped like traced ones; None follows the ``strict_indexing`` flag (True
    unless changed; JAX programs under functrans.as_jax clamp, as in JAX).

    >>> getitem(fnp.arange(6).reshape(2, 3), (slice(None), [2, 0])).tolist()
    [[2, 0], [5, 3]]
    """
    if strict is None:
        strict = config.strict_indexing
    x = asarray(x)
    shape, idx = _lift_bool_scalars(get_aval(x).shape, idx)
    y = x if shape == get_aval(x).shape else lax.reshape(x, shape)
    plan = _Plan(shape, idx, strict)
    # 1. Static slices (reversed for negative steps) and static integers.
    starts, limits, strides, revs, ints = [], [], [], [], []
    for e in plan.entries:
        if e.kind in ("none", "sep"):
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
            strides.append(step if size else 1)
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
                 for e in sorted((e for e in plan.entries if e.kind not in ("none", "sep")),
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
    """``x`` with ``values`` combined into ``x[idx]`` (``kind``: set/add/mul/min/max).

    >>> scatter_update(fnp.zeros(3), [0, 0], 1.0, "add").tolist()
    [2.0, 0.0, 0.0]
    """
    x = asarray(x)
    shape, idx = _lift_bool_scalars(get_aval(x).shape, idx)
    if shape != get_aval(x).shape:
        out = scatter_update(lax.reshape(x, shape), idx, values, kind, mode)
        return lax.reshape(out, get_aval(x).shape)
    aval = get_aval(x)
    plan = _Plan(aval.shape, idx, strict=False)
    indices, axes, partial, full = _scatter_indices(plan)
    updates = _updates_layout(plan, values, aval.dtype, partial, full)
    if not axes:  # only full slices / None: every element is updated once, in order
        return _combine_whole(x, updates, kind)
    prim = _SCATTERS[kind]
    if prim is P.scatter_mul_p and aval.dtype == dtypes.bool_:
        prim = P.scatter_min_p  # logical and
    return prim.bind1(x, updates, *indices, axes=axes, mode=mode or "drop")


def _combine_whole(x, v, kind):
    if kind == "set":
        return v
    if kind == "mul" and get_aval(x).dtype == dtypes.bool_:
        kind = "min"  # logical and
    prim = {"add": P.add_p, "mul": P.mul_p, "min": P.min_p, "max": P.max_p}[kind]
    return prim.bind1(x, v)


class _IndexUpdateRef:
    """``x.at[idx]``: functional versions of ``x[idx] = v``, ``x[idx] += v``, ...

    Values are cast to ``x``'s dtype and broadcast to ``x[idx]``'s shape. ``mode`` handles
    out-of-range indices: "drop" (the default for updates: they are skipped), "clip" (clamped),
    and for ``get`` "fill" (they read ``fill_value``).

    >>> x = fnp.zeros(4)
    >>> x.at[fnp.array([1, 1, 9])].add(1.0).tolist()
    [0.0, 2.0, 0.0, 0.0]
    >>> x.at[fnp.array([0, 9])].get(mode="fill", fill_value=-1.0).tolist()
    [0.0, -1.0]
    """

    __slots__ = ("array", "index")

    def __init__(self, array, index):
        self.array, self.index = array, index

    def get(self, *, mode=None, fill_value=None, indices_are_sorted=False,
            unique_indices=False, out_sharding=None, wrap_negative_indices=True):
        """``x[idx]``; ``mode="fill"`` returns ``fill_value`` for out-of-range indices.
        Without ``wrap_negative_indices``, negative integer indices are out of range (clamped
        to 0, or filled) instead of counting from the end."""
        if mode not in (None, "clip", "promise_in_bounds", "fill"):
            raise ValueError(f"unknown mode {mode!r} for .at[].get (clip, fill)")
        index = self.index
        if not wrap_negative_indices:
            index = _unwrapped_negatives(index, fill=mode == "fill")
        if mode != "fill":
            return getitem(self.array, index, strict=False)
        return _get_fill(self.array, index, fill_value)

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
        """``x[idx] /= values`` (true division; repeated indices divide repeatedly).

        As in JAX, ``x`` is divided by the product of the values landing on each element.
        """
        from .ufuncs import true_divide
        return true_divide(self.array, self._product_of_values(values, mode))

    def power(self, values, *, mode=None, indices_are_sorted=False, unique_indices=False):
        """``x[idx] **= values`` (repeated indices raise repeatedly: ``(x**a)**b = x**(a*b)``)."""
        from .ufuncs import power
        return power(self.array, self._product_of_values(values, mode))

    def _product_of_values(self, values, mode):
        ones = lax.full_like(asarray(self.array), 1)
        return scatter_update(ones, self.index, values, "mul", _mode(mode))

    def min(self, values, *, mode=None, indices_are_sorted=False, unique_indices=False):
        """``x[idx] = minimum(x[idx], values)``, over repeated indices too."""
        return scatter_update(self.array, self.index, values, "min", _mode(mode))

    def max(self, values, *, mode=None, indices_are_sorted=False, unique_indices=False):
        """``x[idx] = maximum(x[idx], values)``, over repeated indices too."""
        return scatter_update(self.array, self.index, values, "max", _mode(mode))

    def apply(self, func, *, mode=None, indices_are_sorted=False, unique_indices=False):
        """``func.at(x, idx)`` for an elementwise ``func``: repeated indices apply it repeatedly.

        >>> fnp.arange(4).at[fnp.array([1, 1, 3])].apply(lambda v: v * 10).tolist()
        [0, 100, 2, 30]
        """
        x = asarray(self.array)
        aval = get_aval(x)
        hits = scatter_update(lax.full(aval.shape, 0, dtypes.int32), self.index, 1, "add",
                              _mode(mode))
        counts = _concrete(hits)
        if counts is not None:
            rounds = int(counts.max()) if counts.size else 0
        else:  # traced indices: an element is hit at most once per advanced-index position
            shape, idx = _lift_bool_scalars(aval.shape, self.index)
            rounds = int(np.prod(_Plan(shape, idx, strict=False).batch))
        if rounds <= 1:  # no repeats: func sees only the indexed elements
            current = getitem(x, self.index, strict=False)
            new = convert(asarray(func(current)), aval.dtype)
            return scatter_update(x, self.index, new, "set", _mode(mode))
        y = x
        for k in range(rounds):
            again = P.gt_p.bind1(hits, np.int32(k))
            y = lax.select(again, convert(asarray(func(y)), aval.dtype), y)
        return y

    def __repr__(self):
        return f"_IndexUpdateRef({self.array!r}, {self.index!r})"


def _mode(mode):
    if mode in (None, "drop", "fill"):
        return "drop"
    if mode in ("clip", "promise_in_bounds"):
        return "clip"
    raise ValueError(f"unknown mode {mode!r} for an indexed update (drop, clip)")


def _unwrapped_negatives(idx, fill):
    """``idx`` with its negative integer indices made out of range: 0 (where out-of-range
    indices clamp) or past every axis (where they are filled); slices are unchanged."""
    from .shape_ops import where
    from .ufuncs import maximum

    def fix(i):
        if isinstance(i, (bool, np.bool_)) or i is None or i is Ellipsis or isinstance(i, slice):
            return i
        if isinstance(i, (int, np.integer)):
            return (np.iinfo(np.int32).max if fill else 0) if i < 0 else i
        aval = get_aval(asarray(i))
        if dtypes.kind(aval.dtype) not in "iu":
            return i
        if fill:
            return where(i < 0, np.iinfo(aval.dtype).max, i)
        return maximum(i, 0)

    return tuple(fix(i) for i in idx) if isinstance(idx, tuple) else fix(idx)


def _get_fill(x, idx, fill_value):
    x = asarray(x)
    shape, idx = _lift_bool_scalars(get_aval(x).shape, idx)
    x = lax.reshape(x, shape) if shape != get_aval(x).shape else x
    plan = _Plan(shape, idx, strict=False)
    indices, axes, partial, full = _scatter_indices(plan)
    if not axes:
        return getitem(x, idx, strict=False)
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
    """The ``.at`` property: ``x.at[idx]`` gives the update methods.

    >>> fnp.arange(3).at[-1].set(7).tolist()
    [0, 1, 7]
    """

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

    ``mode``: "fill" (default, as JAX: out-of-range reads give NaN/fill_value), "clip" (indices
    clamped into range, negative ones to 0 as in NumPy), "wrap" (modular) or "raise" (concrete
    indices only).

    >>> take(fnp.array([10, 20, 30]), fnp.array([2, 0]))
    Array([30, 10], dtype=int64)
    """
    check_arraylike("take", a, indices)
    a = asarray(a)
    if axis is None:
        a = lax.reshape(a, (get_aval(a).size,))
        axis = 0
    axis = normalize_axis(axis, get_aval(a).ndim)
    n = get_aval(a).shape[axis]
    idx = asarray(indices)
    if dtypes.kind(get_aval(idx).dtype) not in "iu":
        raise IndexError(f"take: indices must be integers, got {get_aval(idx).str_short()}")
    mode = mode or "fill"
    if mode == "wrap":
        from .ufuncs import remainder
        idx = remainder(idx, n)
    elif mode in ("fill", "raise"):
        if mode == "raise":
            c = _concrete(idx)
            if c is None:
                raise ValueError("take(mode='raise') needs concrete indices")
            if c.size and (c.min() < -n or c.max() >= n):
                bad = c[(c < -n) | (c >= n)].flat[0]
                raise IndexError(f"take: index {bad} is out of bounds for axis {axis} with "
                                 f"size {n}")
            mode = "clip"
        idx = wrap_negative(idx, n)
    elif mode == "clip":
        pass  # as NumPy: clipping replaces negative indices by 0, it does not wrap them
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

    Negative indices count from the end; as in JAX, out-of-range ones read ``fill_value``
    (NaN for floats) by default, or are clamped with ``mode="clip"``.

    >>> take_along_axis(fnp.array([[3, 1, 2]]), fnp.array([[1, 2, 0]]), axis=1).tolist()
    [[1, 2, 3]]
    """
    check_arraylike("take_along_axis", arr, indices)
    arr, indices = asarray(arr), asarray(indices)
    if axis is None:
        arr = lax.reshape(arr, (get_aval(arr).size,))
        indices = lax.reshape(indices, (get_aval(indices).size,))
        axis = 0
    if mode not in (None, "fill", "clip"):
        raise ValueError(f"take_along_axis: unknown mode {mode!r} (fill, clip)")
    index_arrays, _ = _along_axis_indices("take_along_axis", arr, indices, axis)
    return P.gather_p.bind1(arr, *index_arrays, axes=tuple(range(get_aval(arr).ndim)),
                            mode="clip" if mode == "clip" else "fill", fill_value=fill_value)


def _along_axis_indices(name, arr, indices, axis):
    """One index array per axis of ``arr``: ``indices`` (negatives wrapped) along ``axis``,
    iotas elsewhere, broadcasting against each other like NumPy's ``*_along_axis``.

    Returns the index arrays and the shape they broadcast to."""
    aval, ival = get_aval(arr), get_aval(indices)
    if ival.ndim != aval.ndim:
        raise ValueError(f"{name}: indices {ival.str_short()} and arr {aval.str_short()} must "
                         "have the same rank")
    if dtypes.kind(ival.dtype) not in "iu":
        raise IndexError(f"{name}: indices must be integers, got {ival.str_short()}")
    axis = normalize_axis(axis, aval.ndim)
    try:
        shape = symbolic_broadcast_shapes(
            tuple(1 if d == axis else n for d, n in enumerate(aval.shape)),
            tuple(1 if d == axis else n for d, n in enumerate(ival.shape)))
    except ValueError:
        raise ValueError(f"{name}: indices {ival.str_short()} do not broadcast against arr "
                         f"{aval.str_short()} outside axis {axis}") from None
    shape = shape[:axis] + (ival.shape[axis],) + shape[axis + 1:]
    index_arrays = []
    for d in range(aval.ndim):
        if d == axis:
            index_arrays.append(wrap_negative(broadcast_to_shape(indices, shape),
                                              aval.shape[axis]))
        elif aval.shape[d] == 1:  # arr broadcasts along d: always its only row
            index_arrays.append(lax.full((1,) * aval.ndim, 0, dtypes.default_int_dtype()))
        else:
            index_arrays.append(lax.broadcasted_iota(dtypes.default_int_dtype(), tuple(
                shape[k] if k == d else 1 for k in range(aval.ndim)), d))
    return index_arrays, shape


def put_along_axis(arr, indices, values, axis, inplace=False, mode=None):
    """``arr`` with ``values`` written at ``indices`` along ``axis`` (functional: as in JAX,
    ``inplace`` must be False). Out-of-range indices are dropped (``mode="clip"`` clamps).

    >>> put_along_axis(fnp.zeros((2, 3)), fnp.array([[2], [0]]), 1.0, axis=1, inplace=False)
    Array([[0., 0., 1.],
           [1., 0., 0.]], dtype=float64)
    """
    check_arraylike("put_along_axis", arr, indices, values)
    if inplace:
        raise ValueError("functrans arrays are immutable: put_along_axis needs inplace=False")
    arr, indices = asarray(arr), asarray(indices)
    if axis is None:
        from .shape_ops import ravel
        out = put_along_axis(lax.reshape(arr, (get_aval(arr).size,)),
                             lax.reshape(indices, (get_aval(indices).size,)), ravel(values), 0,
                             mode=mode)
        return lax.reshape(out, get_aval(arr).shape)
    index_arrays, shape = _along_axis_indices("put_along_axis", arr, indices, axis)
    v = broadcast_to_shape(convert(asarray(values), get_aval(arr).dtype), shape)
    return P.scatter_p.bind1(arr, v, *index_arrays, axes=tuple(range(get_aval(arr).ndim)),
                             mode=_mode(mode))
