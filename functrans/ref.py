"""Mutable array references (``jax.ref``): ``new_ref(x)`` makes a :class:`Ref` whose value
is read with ``ref[idx]`` and written with ``ref[idx] = v``; ``freeze(ref)`` gives its final
value as an immutable array.

    >>> r = new_ref(fnp.zeros(3))
    >>> r[1] = 5.0
    >>> r[0] += 2.0
    >>> freeze(r)
    Array([2., 5., 0.], dtype=float64)

A write replaces the reference's value with an updated array (``x.at[idx].set(v)``), so a
reference works eagerly and inside the transformation that created it (a ``jit``-, ``grad``-
or ``vmap``-traced function making and using its own references: the writes become ordinary
updates of the traced program). A reference passed to a ``jit``-ted function is updated with
the value the function leaves in it (``transforms/jit/refs.py``), and so is one made outside
any transformation that a jitted function reads or writes (closes over); ``vmap`` passes
references by value and writes back each instance's slice; a ``scan`` body's
(``fori_loop``'s, ``map``'s) are carried through the loop (``lax/closed_refs.py``); ``vjp``
and ``grad`` take them too (``transforms/autodiff/ref_args.py``); ``make_jaxpr`` traces those
made outside any transformation with their values, writing nothing into them.
Otherwise references do not cross a transformation boundary: reading or writing one in a
``while_loop`` body, branch or nested transformation while it was made outside raises a
``TypeError`` that says so (JAX threads such effects through the program; functrans refuses
rather than compute a wrong value).
"""
from __future__ import annotations

from .core.api_util import ForeignRef
from .core.avals import ShapedArray
from .core.trace import current_trace, get_aval

__all__ = ["AbstractRef", "Ref", "addupdate", "freeze", "get", "new_ref", "set", "swap"]


class AbstractRef:
    """The abstract value of a :class:`Ref` (``jax.typeof(ref)``): the type of the array it
    holds, printed ``Ref{f32[3]}``.

    >>> from functrans import typeof
    >>> typeof(new_ref(fnp.zeros(2, "float32")))
    Ref{f32[2]}
    """

    __slots__ = ("inner_aval",)

    def __init__(self, inner_aval: ShapedArray):
        self.inner_aval = inner_aval

    shape = property(lambda self: self.inner_aval.shape)
    dtype = property(lambda self: self.inner_aval.dtype)
    ndim = property(lambda self: self.inner_aval.ndim)

    def __eq__(self, other):
        return isinstance(other, AbstractRef) and other.inner_aval == self.inner_aval

    def __hash__(self):
        return hash(("AbstractRef", self.inner_aval))

    def __repr__(self):
        return f"Ref{{{self.inner_aval.str_short()}}}"


class Ref:
    """A mutable reference to an array (make one with :func:`new_ref`). Index it to read
    (``ref[...]``, ``ref[0]``) and assign to write (``ref[...] = v``, ``ref[1:] += 1``).

    >>> r = new_ref(fnp.arange(3.0))
    >>> r[...] = r[...] * 2
    >>> r[2], r.shape
    (Array(4., dtype=float64), (3,))
    """

    __slots__ = ("_value", "_trace")
    _is_ref = True  # (how transformations recognize references without importing this)

    def __init__(self, value, trace):
        self._value, self._trace = value, trace

    def _check(self, what: str):
        if current_trace() is not self._trace:
            raise ForeignRef(
                f"{what} a Ref made outside the current transformation (it holds "
                f"{self.aval.inner_aval.str_short()}): functrans's references stay in the "
                "function that made them or are passed to jit as arguments; pass and "
                "return the value instead (or make the Ref inside the loop body or branch)",
                self)
        return self._value

    @property
    def aval(self) -> AbstractRef:
        return AbstractRef(get_aval(self._value))

    shape = property(lambda self: self.aval.shape)
    dtype = property(lambda self: self.aval.dtype)
    ndim = property(lambda self: self.aval.ndim)

    def __getitem__(self, index):
        value = self._check("reading")
        return value if index is Ellipsis or index == () else value[index]

    def __setitem__(self, index, update):
        from . import numpy as fnp
        value = self._check("writing")
        if index is Ellipsis or index == ():
            update = fnp.asarray(update)
            if update.shape != value.shape:
                update = fnp.broadcast_to(update, value.shape)
            self._value = update.astype(value.dtype)
        else:
            self._value = value.at[index].set(update)

    def unsafe_buffer_pointer(self) -> int:
        """The address of the buffer holding the reference's current value. A write gives
        the reference a new (updated) array, so the address changes with writes, unlike
        JAX's in-place buffers.

        >>> r = new_ref(fnp.zeros(2))
        >>> r.unsafe_buffer_pointer() == r[...].unsafe_buffer_pointer()
        True
        """
        return self._check("reading").unsafe_buffer_pointer()

    def __len__(self):
        return self.shape[0] if self.shape else len(self._value)

    def __repr__(self):
        return f"Ref({self._value!r})"

    __hash__ = object.__hash__


def new_ref(init_val) -> Ref:
    """A new :class:`Ref` holding ``init_val`` (an array or scalar).

    >>> new_ref(1.0)[...]
    Array(1., dtype=float64, weak_type=True)
    """
    from . import numpy as fnp
    if isinstance(init_val, Ref):
        raise TypeError("new_ref: the initial value is a Ref already; pass its value "
                        "(ref[...]) to copy it")
    return Ref(fnp.asarray(init_val), current_trace())


def freeze(ref: Ref):
    """The value of ``ref`` as an (immutable) array.

    >>> freeze(new_ref(fnp.ones(2)))
    Array([1., 1.], dtype=float64)
    """
    return _ref_arg(ref, "freeze")._check("freezing")


def get(ref: Ref, idx=...):
    """``ref[idx]``.

    >>> get(new_ref(fnp.arange(3)), 1)
    Array(1, dtype=int64)
    """
    return _ref_arg(ref, "get")[idx]


def set(ref: Ref, idx, value) -> None:  # noqa: A001 - JAX's name
    """``ref[idx] = value``.

    >>> r = new_ref(fnp.zeros(2)); set(r, 0, 3.0); r[...]
    Array([3., 0.], dtype=float64)
    """
    _ref_arg(ref, "set")[idx] = value


def swap(ref: Ref, idx, value):
    """Write ``value`` at ``ref[idx]`` and return what was there.

    >>> r = new_ref(fnp.zeros(2)); swap(r, 0, 3.0), r[...]
    (Array(0., dtype=float64), Array([3., 0.], dtype=float64))
    """
    old = _ref_arg(ref, "swap")[idx]
    ref[idx] = value
    return old


def addupdate(ref: Ref, idx, value) -> None:
    """``ref[idx] += value`` (``value`` has the shape of ``ref[idx]``, as in JAX).

    >>> r = new_ref(fnp.ones(2)); addupdate(r, ..., fnp.ones(2)); r[...]
    Array([2., 2.], dtype=float64)
    """
    from . import numpy as fnp
    old = _ref_arg(ref, "addupdate")[idx]
    if fnp.shape(value) != old.shape:
        raise ValueError(f"addupdate: the value has shape {fnp.shape(value)}, but ref[{idx!r}] "
                         f"has shape {old.shape}")
    ref[idx] = old + value


def _ref_arg(ref, name: str) -> Ref:
    if not isinstance(ref, Ref):
        raise TypeError(f"{name}: expected a Ref (from new_ref), got {type(ref).__name__}")
    return ref
