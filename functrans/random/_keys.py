"""Typed PRNG key arrays: ``random.key``'s keys, whose elements are whole keys.

A key array of shape ``S`` holds raw threefry2x32 data of shape ``S + (2,)`` (``uint32``) and
reports shape ``S`` and dtype ``key<fry>``, as JAX's typed keys do. For transformations it is
a pytree node around that data, so ``jit``, ``vmap``, ``grad``, ``scan``, ``pmap`` ... carry
keys in and out of programs as the ``uint32`` arrays they hold (``vmap``'s axes count over
the key dimensions, which lead the data's). To the public tree functions
(``functrans.tree_util``, ``functrans.tree``) a key array is a leaf, as JAX's are. Raw keys
(``random.PRNGKey``) stay plain arrays; every sampler accepts both.

    >>> k = random.key(0)
    >>> k.shape, k.dtype
    ((), key<fry>)
    >>> random.split(k, 3).shape
    (3,)
"""
from __future__ import annotations

import numpy as np

from ..core import pytree as _pytree
from ..core.array import _ArrayMeta
from ..core.avals import ShapedArray
from ..core.trace import Tracer
from ..core.dtype_api import THREEFRY_KEY


class KeyArray:
    """An array of typed PRNG keys (see the module docstring); build one with
    ``random.key`` or ``random.wrap_key_data``, read its data with ``random.key_data``.

    >>> ks = random.split(random.key(1), 4)
    >>> ks[1:].shape, ks.reshape(2, 2).shape, random.key_data(ks).shape
    ((3,), (2, 2), (4, 2))
    """

    __slots__ = ("_data",)
    __array_priority__ = 101
    dtype = THREEFRY_KEY
    # How functrans.lax and functrans.numpy recognize keys without importing this module
    # (they are below random): a value with ``_is_key_array`` set is handled by its own
    # type's methods below (``_where``, ``_stack``, ``_concatenate``, ``_array_equal``), as
    # ``astype`` is, so the lower layers dispatch to the key functions instead of naming them.
    _is_key_array = True

    def __init__(self, data):
        # No validation: transformations rebuild nodes around placeholders (axis specs,
        # abstract values); the key functions validate their data.
        self._data = data

    @property
    def shape(self) -> tuple:
        return tuple(self._data.shape[:-1])

    @property
    def aval(self):
        """The abstract value (``jax.typeof(keys)``): the key shape with the key dtype."""
        aval = object.__new__(ShapedArray)  # (its constructor takes NumPy dtypes only)
        aval.shape, aval.dtype, aval.weak_type, aval._hash = self.shape, self.dtype, False, None
        return aval

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of an unsized key array (shape ())")
        return self.shape[0]

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d key array")
        return (self[i] for i in range(self.shape[0]))

    def __getitem__(self, index):
        # A trailing full slice keeps each key's two words whatever the index holds.
        index = index if isinstance(index, tuple) else (index,)
        return KeyArray(self._data[index + (slice(None),)])

    def reshape(self, *shape, order="C"):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        return KeyArray(self._data.reshape(*shape, 2, order=order))

    def transpose(self, *axes):
        axes = tuple(axes[0]) if len(axes) == 1 and isinstance(axes[0], (tuple, list)) else axes
        axes = axes or tuple(reversed(range(self.ndim)))
        return KeyArray(self._data.transpose(*[a % self.ndim for a in axes], self.ndim))

    @property
    def T(self):
        return self.transpose()

    def ravel(self):
        return self.reshape(-1)

    flatten = ravel

    def squeeze(self, axis=None):
        from .. import numpy as fnp
        axis = tuple(a % self.ndim for a in ((axis,) if isinstance(axis, int) else axis)) \
            if axis is not None else tuple(i for i, d in enumerate(self.shape) if d == 1)
        return KeyArray(fnp.squeeze(self._data, axis))

    def __eq__(self, other):
        return self._compare(other, "__eq__")

    def __ne__(self, other):
        return self._compare(other, "__ne__")

    def _compare(self, other, op):
        if not isinstance(other, KeyArray):
            return NotImplemented
        from .. import numpy as fnp
        same = fnp.all(self._data == other._data, axis=-1)
        return same if op == "__eq__" else fnp.logical_not(same)

    __hash__ = None

    def block_until_ready(self):
        ready = getattr(self._data, "block_until_ready", None)
        if ready is not None:
            ready()
        return self

    def copy(self):
        return self

    def astype(self, dtype):
        """The same keys for their own dtype (as JAX); other dtypes are refused."""
        if dtype == self.dtype:
            return self
        raise TypeError(f"cannot convert typed PRNG keys ({self.dtype}) to {dtype}; use "
                        "random.key_data(keys) for their uint32 data")

    def __array__(self, dtype=None, copy=None):
        raise TypeError("a typed key array has no NumPy value; use random.key_data(keys) "
                        "for its uint32 data")

    def __repr__(self):
        data = np.asarray(self._data) if not _is_abstract(self._data) else None
        head = f"Array({self.shape}, dtype={self.dtype})"
        return head if data is None else f"{head} overlaying:\n{data}"

    def _op_error(self, *_):
        raise TypeError(f"arithmetic on typed PRNG keys ({self.dtype}) is not defined; use "
                        "random.split/fold_in to derive keys, random.key_data for their data")

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _op_error
    __truediv__ = __rtruediv__ = __neg__ = __lt__ = __le__ = __gt__ = __ge__ = _op_error

    # The lower layers' entry points (see ``_is_key_array``), filled in below.
    _where = _stack = _concatenate = _array_equal = None


def _data_of(keys, name: str) -> list:
    if not all(isinstance(k, KeyArray) for k in keys):
        raise TypeError(f"{name}: typed PRNG keys can only be joined with other typed keys, got "
                        + ", ".join(type(k).__name__ for k in keys))
    return [k._data for k in keys]


def _key_axis(axis: int, ndim: int, name: str) -> int:
    """``axis`` of a key array of rank ``ndim`` as an axis of its data (which has one more,
    trailing, dimension)."""
    if not -ndim <= axis < ndim:
        raise ValueError(f"{name}: axis {axis} is out of bounds for key arrays of rank {ndim}")
    return axis % ndim


def stack_keys(keys, axis: int = 0) -> KeyArray:
    """``numpy.stack`` of typed keys (``fnp.stack`` calls it for key arrays).

    >>> stack_keys([random.key(0), random.key(1)]).shape
    (2,)
    """
    from .. import numpy as fnp
    data = _data_of(keys, "stack")
    return KeyArray(fnp.stack(data, _key_axis(axis, keys[0].ndim + 1, "stack")))


def concatenate_keys(keys, axis: int = 0) -> KeyArray:
    """``numpy.concatenate`` of typed keys (``fnp.concatenate`` calls it for key arrays).

    >>> concatenate_keys([random.split(random.key(0)), random.split(random.key(1), 3)]).shape
    (5,)
    """
    from .. import numpy as fnp
    data = _data_of(keys, "concatenate")
    if keys[0].ndim == 0:
        raise ValueError("zero-dimensional key arrays cannot be concatenated")
    return KeyArray(fnp.concatenate(data, _key_axis(axis, keys[0].ndim, "concatenate")))


def where_keys(condition, x, y) -> KeyArray:
    """``numpy.where`` choosing between typed keys (``fnp.where``/``lax.select`` call it).

    >>> k = random.split(random.key(0), 2)
    >>> bool(where_keys(fnp.array([False, True]), k, k[::-1])[0] == k[1])
    True
    """
    from .. import numpy as fnp
    x_data, y_data = _data_of([x, y], "where")
    c = fnp.asarray(condition)
    shape = fnp.broadcast_shapes(fnp.shape(c), x.shape, y.shape)
    data_shape = shape + (2,)
    return KeyArray(fnp.where(fnp.broadcast_to(c, shape)[..., None],
                              fnp.broadcast_to(x_data, data_shape),
                              fnp.broadcast_to(y_data, data_shape)))


def keys_equal(a, b):
    """``numpy.array_equal`` of typed keys: same shape, every key equal.

    >>> bool(keys_equal(random.key(0), random.key(0)))
    True
    """
    from .. import numpy as fnp
    a_data, b_data = _data_of([a, b], "array_equal")
    if a.shape != b.shape:
        return fnp.asarray(False)
    return fnp.all(a_data == b_data)


def _is_abstract(data) -> bool:
    return isinstance(data, Tracer) or not hasattr(data, "__array__")


# functrans.numpy's where/stack/concatenate/array_equal and lax.select call these for keys.
KeyArray._where = staticmethod(where_keys)
KeyArray._stack = staticmethod(stack_keys)
KeyArray._concatenate = staticmethod(concatenate_keys)
KeyArray._array_equal = staticmethod(keys_equal)

_pytree.register_pytree_node(KeyArray, lambda k: ((k._data,), None),
                             lambda _, children: KeyArray(children[0]),
                             lambda k: ([(None, k._data)], None))  # no key-path entry
_pytree.PUBLIC_LEAVES.add(KeyArray)  # leaves to users' tree functions, as JAX's keys
# isinstance(keys, Array) holds, as JAX's key arrays are jax.Arrays.
_ArrayMeta.virtual = (*_ArrayMeta.virtual, KeyArray)
