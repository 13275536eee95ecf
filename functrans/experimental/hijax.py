"""``jax.experimental.hijax``: JAX's experimental API for library-defined *high-level
types* (mutable aggregate values with their own primitives). functrans defines its names, so
libraries that declare such types at import (flax.nnx's optional hijax ``Variable``) import
and run their other code paths; functrans has no high-level types, so *using* one (binding a
:class:`HiPrimitive`, asking for :func:`cur_qdd`) raises ``NotImplementedError`` naming it.
Hijax *primitives* on arrays (:class:`VJPHiPrimitive`, custom derivative rules) work
(``hijax_primitive.py``).

    >>> class Box(HiType): ...
    >>> register_hitype(Box, lambda box: Box())
    >>> isinstance(ShapedArray((2,), "float32"), AbstractValue)
    True
"""
from __future__ import annotations

import abc
import dataclasses
import functools

from functrans.core.avals import ShapedArray
from functrans.core.values import hitype_avals
from functrans.interpreters.ad import Zero, instantiate_zeros, is_undefined_primal
from functrans.ref import AbstractRef

from .hijax_primitive import GradAccum, NullAccum, ValAccum, VJPHiPrimitive

__all__ = ["AbstractRef", "AbstractValue", "AvalMutableQDD", "AvalQDD", "GradAccum",
           "HiPrimitive", "HiType", "MutableHiType", "NullAccum", "ShapedArray", "ValAccum",
           "VJPHiPrimitive", "Zero", "aval_method",
           "aval_property", "control_flow_allowed_effects", "cur_qdd", "instantiate_zeros",
           "is_undefined_primal", "register_hitype"]

_UNSUPPORTED = ("functrans does not implement JAX's high-level (hijax) types; a library "
                "option that needs them (e.g. flax's `flax_hijax_variable`) must stay off")


class AbstractValue(abc.ABC):
    """Base of abstract values: functrans's :class:`ShapedArray` and :class:`AbstractRef` are
    (virtual) subclasses, high-level types subclass it."""


AbstractValue.register(ShapedArray)
AbstractValue.register(AbstractRef)


class HiType(AbstractValue):
    """Base class of a library's high-level (immutable) type."""


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
    """Declare ``cls`` a high-level type whose values have abstract value ``to_aval(x)``:
    ``typeof`` gives it; functrans's transformations do not accept such values (hijax
    primitives take and return them eagerly).

    >>> class Pair:
    ...     pass
    >>> register_hitype(Pair, lambda p: "PairTy")
    >>> from functrans.core.values import typeof
    >>> typeof(Pair())
    'PairTy'
    """
    _hitypes[cls] = to_aval
    hitype_avals[cls] = to_aval


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
