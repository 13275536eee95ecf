"""High-level values: values of a library's own type (JAX's *hijax types*) as
transformations carry them.

A high-level type (``jax.experimental.hijax.HiType``) says which arrays make up its values
(``lo_ty()``; ``lower_val``/``raise_val`` convert a value to that list of arrays and back) and,
optionally, the type of its tangents (``to_tangent_aval()``, an array type). Transformations
see such a value as a pytree node: its arrays, then its *tangent carrier*, an array of the
tangent type whose value is always zero. The carrier is what differentiation follows:
``grad`` with respect to a high-level value differentiates with respect to its carrier (the
arrays making up the value stay fixed), and the high-level primitives' rules route the
carriers' tangents and cotangents (``experimental/hijax_primitive.py``). That is how a
quantized array (int8 values with float scales) gets float tangents.

Outside every transformation a value is an instance of the library's class; inside one it
is a :class:`HiVal`: its type and its (traced) arrays, read only by the type's primitives.

    >>> class Pair:
    ...     def __init__(self, a, b): self.a, self.b = a, b
    >>> class PairTy:
    ...     def lo_ty(self): return [ShapedArray((), np.float64)] * 2
    ...     def lower_val(self, p): return [p.a, p.b]
    ...     def raise_val(self, a, b): return Pair(a, b)
    ...     def __eq__(self, other): return type(other) is PairTy
    ...     def __hash__(self): return 0
    >>> register_hi_class(Pair, lambda p: PairTy())
    >>> leaves, tree = tree_flatten(Pair(np.float64(1.0), np.float64(2.0)))
    >>> leaves
    [np.float64(1.0), np.float64(2.0)]
    >>> type(tree_unflatten(tree, leaves)).__name__
    'Pair'
"""
from __future__ import annotations

import numpy as np

from .array import Array
from .avals import ShapedArray
from .ir import Eqn, Jaxpr, Var, source_info
from .pytree import PUBLIC_LEAVES, _NodeType, _registry, tree_flatten, tree_unflatten
from .staging import StagingTrace, StagingTracer
from .trace import Primitive, Tracer, new_trace, current_trace

__all__ = ["HiStagingTrace", "HiVal", "call_hi_primitive_p", "hi_type_of", "hi_jaxpr",
           "is_hi_type", "is_hi_value", "lower_specs", "register_hi_class", "tangent_view",
           "tangent_carrier_aval"]

_classes: dict = {}  # the library's value class -> its typeof function


def is_hi_type(aval) -> bool:
    """Whether ``aval`` is a high-level type (it lowers to arrays with ``lo_ty``)."""
    return callable(getattr(aval, "lo_ty", None)) and not isinstance(aval, ShapedArray)


def tangent_carrier_aval(ty):
    """The array type of ``ty``'s tangents, or None when it has none (no ``to_tangent_aval``,
    or one giving another high-level type: values of such types are not differentiated)."""
    try:
        t = ty.to_tangent_aval()
    except (AttributeError, NotImplementedError, AssertionError):
        return None
    return t if isinstance(t, ShapedArray) else None


def _zero_carrier(ty):
    t = tangent_carrier_aval(ty)
    return None if t is None else Array._wrap(np.zeros(t.shape, t.dtype))


class HiVal:
    """A high-level value inside a transformation: its type ``aval``, the arrays ``lo`` it
    lowers to (``aval.lower_val``'s), and its tangent ``carrier`` (None when the type has no
    tangents). Only the type's primitives read it; its class's attributes are not there::

        >>> HiVal("q8[2]", [], None).qvalue  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        AttributeError: a traced value of type q8[2] has no attribute 'qvalue'...
    """

    __slots__ = ("aval", "lo", "carrier")

    def __init__(self, aval, lo, carrier):
        self.aval, self.lo, self.carrier = aval, list(lo), carrier

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise AttributeError(
            f"a traced value of type {_type_str(self.aval)} has no attribute {name!r}: inside "
            "a transformation a high-level value is read only by its type's primitives (their "
            "`expand` sees the value's class)")

    @property
    def shape(self):
        return self.aval.shape

    def __repr__(self):
        tracer = next((x for x in self.lo if isinstance(x, Tracer)), None)
        where = tracer._trace.describe() if tracer is not None else "a transformation"
        return f"Traced<{_type_str(self.aval)}>with<{where}>"


def _type_str(aval) -> str:
    short = getattr(aval, "str_short", None)
    return short() if callable(short) else str(aval)


def is_hi_value(x) -> bool:
    """Whether ``x`` is a high-level value (a :class:`HiVal` or a registered class's)."""
    return type(x) is HiVal or type(x) in _classes


def hi_type_of(x):
    """The high-level type of ``x`` (a :class:`HiVal` or a registered class's value)."""
    return x.aval if type(x) is HiVal else _classes[type(x)](x)


def as_hival(x) -> HiVal:
    """``x`` as a :class:`HiVal` (a registered class's value is lowered, with a zero
    carrier)."""
    if type(x) is HiVal:
        return x
    ty = _classes[type(x)](x)
    _mutable_refused(ty)
    return HiVal(ty, ty.lower_val(x), _zero_carrier(ty))


def _flatten_hival(h: HiVal):
    children = list(h.lo) + ([h.carrier] if h.carrier is not None else [])
    return children, (h.aval, len(h.lo), h.carrier is not None)


def _mutable_refused(ty):
    if getattr(ty, "has_qdd", False):
        raise NotImplementedError(
            f"values of the mutable high-level type {_type_str(ty)} cannot enter a "
            "transformation: functrans implements immutable high-level types only")


def _flatten_value(x):
    ty = _classes[type(x)](x)
    _mutable_refused(ty)
    lo = list(ty.lower_val(x))
    if any(isinstance(v, Tracer) for v in lo):
        raise TypeError(
            f"a {type(x).__name__} holding traced arrays was passed through a transformation: "
            f"inside one, values of type {_type_str(ty)} must be made by the type's primitives "
            f"(build {type(x).__name__} only in a primitive's `expand`)")
    carrier = _zero_carrier(ty)
    return lo + ([carrier] if carrier is not None else []), (ty, len(lo), carrier is not None)


def _is_array(x) -> bool:
    return isinstance(x, (Array, np.ndarray, np.generic))


def _unflatten(aux, children):
    ty, n, has_carrier = aux
    lo, carrier = list(children[:n]), children[n] if has_carrier else None
    if lo and all(_is_array(v) and not isinstance(v, Tracer) for v in lo):
        return ty.raise_val(*lo)  # concrete: the library's value again
    if any(isinstance(v, Tracer) for v in lo):
        ty = _retyped(ty, lo)
        return HiVal(ty, lo, carrier)
    return HiVal(ty, lo, carrier)  # a structure of other things (specs, axes, None)


def _retyped(ty, lo):
    """``ty``, or the type of these arrays when their shapes are not ``ty``'s (vmap and scan
    slice and stack the arrays of a value: the value then has the type its class's typeof
    gives the arrays)."""
    try:
        expected = [tuple(a.shape) for a in ty.lo_ty()]
    except Exception:  # noqa: BLE001 - a type without lo_ty types keeps its type
        return ty
    if expected == [tuple(np.shape(v)) for v in lo]:
        return ty
    value = ty.raise_val(*lo)
    to_aval = _classes.get(type(value))
    return ty if to_aval is None else to_aval(value)


_HIVAL_NODE = _NodeType(_flatten_hival, _unflatten)
_registry[HiVal] = _HIVAL_NODE
PUBLIC_LEAVES.add(HiVal)


def register_hi_class(cls: type, to_aval) -> None:
    """Make ``cls``'s values high-level values of type ``to_aval(value)``: transformations
    open them to their arrays (and tangent carrier), users' tree functions see leaves."""
    _classes[cls] = to_aval
    _registry[cls] = _NodeType(_flatten_value, _unflatten, None, HiVal)
    PUBLIC_LEAVES.add(cls)


def tangent_view(tree):
    """``(view, rebuild)`` for differentiating with respect to ``tree``: ``view`` has each
    high-level value replaced by its tangent carrier; ``rebuild(view_like)`` puts values
    back, carrying the given carriers (so derivatives with respect to a high-level value are
    its carrier's, of its tangent type). ``rebuild`` is None when there is none.

        >>> tangent_view((1.0, [2.0]))
        ((1.0, [2.0]), None)
    """
    if not _classes:  # no high-level type registered: nothing to view (the common case)
        return tree, None
    leaves, td = tree_flatten(tree, is_leaf=is_hi_value)
    if not any(is_hi_value(x) for x in leaves):
        return tree, None
    his = [as_hival(x) if is_hi_value(x) else None for x in leaves]
    for x, h in zip(leaves, his):
        if h is not None and h.carrier is None:
            raise TypeError(f"cannot differentiate with respect to a value of type "
                            f"{_type_str(h.aval)}: its type has no array tangent type "
                            "(to_tangent_aval)")
    view = tree_unflatten(td, [h.carrier if h is not None else x for x, h in zip(leaves, his)])

    def rebuild(view_like):
        new = tree_flatten(view_like, is_leaf=is_hi_value)[0]
        return tree_unflatten(td, [HiVal(h.aval, h.lo, c) if h is not None else c
                                   for c, h in zip(new, his)])
    return view, rebuild


def lower_specs(specs: list, tree) -> list:
    """Per-leaf partition specs of ``tree`` (``shard_map``'s, matched as a prefix) with each
    high-level value's spec (a ``hijax.HiPspec``, given to all its leaves) replaced by its
    arrays' specs (``to_lo()``); its tangent carrier is split like the array of its shape
    (replicated if none has it).

        >>> lower_specs(["s"], (1.0,))
        ['s']
    """
    if not any(callable(getattr(s, "to_lo", None)) for s in specs):
        return specs
    out, i = [], 0
    for x in tree_flatten(tree, is_leaf=is_hi_value)[0]:
        if not is_hi_value(x):
            out.append(specs[i])
            i += 1
            continue
        h = as_hival(x)
        n = len(h.lo) + (h.carrier is not None)
        spec = specs[i]
        i += n
        if not callable(getattr(spec, "to_lo", None)):
            out += [spec] * n
            continue
        lo = list(spec.to_lo())
        if len(lo) != len(h.lo):
            raise ValueError(f"{type(spec).__name__}.to_lo() gave {len(lo)} specs for a value "
                             f"of type {_type_str(h.aval)} made of {len(h.lo)} arrays")
        out += lo
        if h.carrier is not None:
            shape = np.shape(h.carrier)
            out.append(next((s for s, v in zip(lo, h.lo) if np.shape(v) == shape), ()))
    return out


# ---- jaxprs as JAX shows them: high-level values as single variables ------------------------

class _CallHiPrimitive(Primitive):
    """A high-level primitive applied in a :func:`hi_jaxpr` (param ``_prim``: the primitive,
    whose ``in_avals``/``out_aval`` type it). Binding it applies the primitive in the
    current trace (so ``eval_jaxpr`` runs such a jaxpr); compiled programs have the
    primitive's ``expand`` in its place."""

    multiple_results = True

    def bind_all(self, *args, _prim):
        out = _prim(*tree_unflatten(_prim.in_tree, list(args)))
        return tree_flatten(out, is_leaf=is_hi_value)[0]

    bind = bind_all

    def bind1(self, *args, _prim):
        return self.bind_all(*args, _prim=_prim)[0]


call_hi_primitive_p = _CallHiPrimitive("call_hi_primitive", register=False)


staged_hi_calls = [0]
"""How many high-level primitives were applied inside transformations so far: ``jit`` tells
by it whether a program it traced has any (its jaxpr is then shown with :func:`hi_jaxpr`)."""


class HiStagingTrace(StagingTrace):
    """A staging trace where a high-level value is one variable of its type and a
    high-level primitive one ``call_hi_primitive`` equation (``stage_hi``): the program as
    JAX prints it. It is for showing; jit runs the program of the values' arrays."""

    def stage_hi(self, prim, args) -> list:
        """Record ``prim`` (a ``VJPHiPrimitive``) applied to ``args`` (flat); its outputs."""
        atoms = [self._hi_const(x) if is_hi_value(x) else self.atom(x) for x in args]
        outs = [StagingTracer(self, a, Var(a)) for a in prim.out_avals_flat]
        self.eqns.append(Eqn(call_hi_primitive_p, atoms, [o._var for o in outs],
                             {"_prim": prim}, source_info()))
        return outs

    def _hi_const(self, x):
        """A high-level value from outside: a constant of its type."""
        atom = self._const_atoms.get(id(x))
        if atom is None:
            atom = self._const_atoms[id(x)] = Var(hi_type_of(x))
            self.constvars.append(atom)
            self.consts.append(x)
        return atom


def hi_jaxpr(fun, args, name="jit") -> Jaxpr:
    """The jaxpr of ``fun(*args)`` with each high-level value among ``args`` (and made
    inside) one variable of its type, typed as ``typeof`` types the arguments (with their
    shardings). ``fun`` takes and returns pytrees; nothing runs.

        >>> print(hi_jaxpr(lambda x: x * 2, (1.0,)))
        { lambda ; a:f64[]. let b:f64[] = mul a 2.0:f64[] in (b,) }
    """
    from .values import typeof
    leaves, tree = tree_flatten(args, is_leaf=is_hi_value)
    trace = HiStagingTrace(current_trace(), name)
    with new_trace(trace):
        tracers = [trace.new_arg(hi_type_of(x) if is_hi_value(x) else typeof(x))
                   for x in leaves]
        out = fun(*tree_unflatten(tree, tracers))
        outs = tree_flatten(out, is_leaf=is_hi_value)[0]
        return trace.to_jaxpr(outs)
