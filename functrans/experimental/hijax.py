"""``jax.experimental.hijax``: JAX's experimental API for library-defined *high-level
types*: a :class:`HiType` says which arrays make up its values (``lo_ty``, ``lower_val``,
``raise_val``) and the type of their tangents (``to_tangent_aval``); :func:`register_hitype`
makes a class's values values of such a type, which ``typeof`` gives and jit, grad/vjp, vmap
and scan accept (``core/hivalues.py``); :class:`VJPHiPrimitive` subclasses are the type's
primitives, the only code that reads the values (``hijax_primitive.py``). *Mutable*
high-level types (:class:`MutableHiType`, :func:`cur_qdd`, binding a :class:`HiPrimitive`)
are not implemented: using one raises ``NotImplementedError`` naming it (libraries that
declare them at import, flax.nnx's optional hijax ``Variable``, import and run their other
code paths).

    >>> from dataclasses import dataclass
    >>> @dataclass(frozen=True)
    ... class Pair:
    ...     a: object
    ...     b: object
    >>> @dataclass(frozen=True)
    ... class PairTy(HiType):
    ...     def lo_ty(self): return [ShapedArray((), "float32")] * 2
    ...     def lower_val(self, p): return [p.a, p.b]
    ...     def raise_val(self, a, b): return Pair(a, b)
    ...     def str_short(self, short_dtypes=False, mesh_axis_types=False): return "pair"
    >>> register_hitype(Pair, lambda p: PairTy())
    >>> import functrans as ft
    >>> ft.typeof(Pair(1.0, 2.0))
    PairTy()
    >>> ft.jit(lambda p: p)(Pair(1.0, 2.0)).b
    Array(2., dtype=float64, weak_type=True)
"""
from __future__ import annotations

import abc
import dataclasses
import functools

from functrans.core.avals import ShapedArray as _ShapedArray
from functrans.core.hivalues import HiVal, register_hi_class
from functrans.core.values import hitype_avals
from functrans.interpreters.ad import Zero, instantiate_zeros, is_undefined_primal
from functrans.ref import AbstractRef

from .hijax_avals import HiPspec, ShapedArray
from .hijax_primitive import GradAccum, NullAccum, ValAccum, VJPHiPrimitive

__all__ = ["AbstractRef", "AbstractValue", "AvalMutableQDD", "AvalQDD", "GradAccum",
           "HiPrimitive", "HiPspec", "HiType", "MutableHiType", "NullAccum", "ShapedArray", "ValAccum",
           "VJPHiPrimitive", "Zero", "aval_method",
           "aval_property", "control_flow_allowed_effects", "cur_qdd", "instantiate_zeros",
           "is_undefined_primal", "register_hitype"]

_UNSUPPORTED = ("functrans does not implement JAX's mutable high-level (hijax) types; a "
                "library option that needs them (e.g. flax's `flax_hijax_variable`) must stay "
                "off")


class AbstractValue(abc.ABC):
    """Base of abstract values: functrans's :class:`ShapedArray` and :class:`AbstractRef` are
    (virtual) subclasses, high-level types subclass it."""


AbstractValue.register(_ShapedArray)
AbstractValue.register(AbstractRef)


class HiType(AbstractValue):
    """Base class of a library's high-level (immutable) type. A subclass is hashable and
    comparable (a frozen dataclass) and defines ``lo_ty()`` (the array types its values
    lower to), ``lower_val(value)`` (those arrays) and ``raise_val(*arrays)`` (the value);
    for differentiation ``to_tangent_aval()`` (an array type); for printing ``str_short``.
    Where it defines ``dec_rank``/``inc_rank`` and ``leading_axis_spec``, they are JAX's
    hooks; functrans's vmap and scan map a value's arrays along their leading axes and
    type the result with the class's ``typeof`` function."""

    is_high = True
    has_qdd = False

    def to_ct_aval(self):
        return self.to_tangent_aval()

    def str_short(self, short_dtypes=False, mesh_axis_types=False) -> str:
        return repr(self)


class MutableHiType(HiType):
    """Base class of a library's mutable high-level type."""


@dataclasses.dataclass(frozen=True)
class AvalQDD:
    """An abstract value with its quasi-dynamic data (the state a mutable type carries)."""
    aval: AbstractValue
    qdd: object


@dataclasses.dataclass
class AvalMutableQDD:
    """An abstract value with mutable quasi-dynamic data."""
    aval: AbstractValue
    mutable_qdd: object


class HiPrimitive:
    """Base class of a high-level type's primitives: subclasses define ``abstract_eval``,
    ``to_lojax``, ``jvp``, ``transpose``. Binding one raises ``NotImplementedError``.

    >>> class Get(HiPrimitive): ...
    >>> Get("get").bind(1.0)
    Traceback (most recent call last):
    NotImplementedError: the high-level primitive 'get' cannot run: functrans does not ...
    """

    multiple_results = False

    def __init__(self, name: str):
        self.name = name

    def bind(self, *args, **params):
        raise NotImplementedError(f"the high-level primitive {self.name!r} cannot run: "
                                  f"{_UNSUPPORTED}")

    def __repr__(self):
        return self.name


class _EffectTypeSet:
    """Effect types a library allows in control flow. functrans's control flow does not
    restrict effect types, so this records them for libraries that read it back."""

    def __init__(self):
        self._types: set = set()

    def add_type(self, effect_type: type) -> None:
        self._types.add(effect_type)

    def contains(self, effect) -> bool:
        return isinstance(effect, tuple(self._types))


control_flow_allowed_effects = _EffectTypeSet()

_hitypes: dict = {}


def register_hitype(cls: type, to_aval) -> None:
    """Declare ``cls``'s values values of the high-level type ``to_aval(x)`` (a
    :class:`HiType`): ``typeof`` gives it, and transformations accept them, lowered to the
    type's arrays (see the module's example).

    >>> class Opaque:
    ...     pass
    >>> register_hitype(Opaque, lambda p: "OpaqueTy")
    >>> from functrans.core.values import typeof
    >>> typeof(Opaque())
    'OpaqueTy'
    """
    if not isinstance(cls, type):
        raise TypeError(f"register_hitype: the first argument must be a class, got {cls!r}")
    if not callable(to_aval):
        raise TypeError(f"register_hitype: the second argument must be a function from a "
                        f"{cls.__name__} to its type, got {to_aval!r}")
    _hitypes[cls] = to_aval
    hitype_avals[cls] = to_aval
    register_hi_class(cls, to_aval)


hitype_avals[HiVal] = lambda h: h.aval  # a traced high-level value's type


class aval_method:
    """A method of a high-level type's abstract value, callable on it as a bound method."""

    def __init__(self, fun):
        self.fun = fun
        functools.update_wrapper(self, fun)

    def __get__(self, obj, owner=None):
        return self if obj is None else functools.partial(self.fun, obj)


class aval_property(property):
    """A property of a high-level type's abstract value."""


def cur_qdd(x):
    """The current quasi-dynamic data of a mutable high-level value (unsupported)."""
    raise NotImplementedError(f"cur_qdd({type(x).__name__}): {_UNSUPPORTED}")
