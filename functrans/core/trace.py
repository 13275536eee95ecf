"""Traces, tracers, primitives and ``bind``: the context-based (stackless) tracing core.

There is always a *current trace* (per thread). ``prim.bind(*args)`` hands the primitive to it.
At the root sits the eval trace, which runs the primitive's NumPy impl. A transformation installs
its own trace whose parent is the trace that was current; its rules run with the parent as
current trace, so the work they bind flows outwards. Values of other traces met by a trace are
constants to it (outer tracers) or, if their trace has finished, leaked tracers (an error)::

    >>> sin_p = Primitive("sin", impl=lambda x: [np.sin(x)], abstract_eval=lambda a: [a])
    >>> sin_p.bind(1.0)
    Array(0.84147098, dtype=float64, weak_type=True)
"""
from __future__ import annotations

import contextlib
import threading

import numpy as np

from . import dtypes
from .array import Array
from .avals import ShapedArray
from .config import config
from .distributed_array import apply_on_shards, apply_on_mesh
from .errors import ConcretizationTypeError, TracerArrayConversionError, UnexpectedTracerError
from .ir import Jaxpr, source_info, walk_jaxprs
from .mesh import NamedSharding
from .unreduced import apply_unreduced


_PRIMITIVES: list = []


def all_primitives() -> dict:
    """Every primitive created so far, by name (tests check each one's rules)."""
    return {p.name: p for p in _PRIMITIVES}


class Primitive:
    """A named operation with a NumPy ``impl`` and an ``abstract_eval`` (its type rule).

    Both take/return lists (``impl(*ndarrays, **params) -> [ndarray]``,
    ``abstract_eval(*avals, **params) -> [ShapedArray]``). Transformation rules live in the
    transforms' registries, keyed by primitive. ``traits`` is a free-form set of labels
    (e.g. ``"elementwise"``) that passes may look at instead of checking names.
    ``register=False`` keeps it out of :func:`all_primitives` (whose names are unique).
    ``call_primitive``/``map_primitive`` are JAX's marks of primitives whose params hold a
    ``call_jaxpr`` (libraries that walk jaxprs ask for them): none of functrans's own.
    ``multiple_results`` is JAX's static mark of a primitive with a list of outputs (control
    flow, calls, callbacks, sort, the multi-output decompositions): :meth:`bind` returns that
    list, and the one output of every other primitive; :meth:`bind_all` always gives a list.
    """

    call_primitive = False
    map_primitive = False
    multiple_results = False

    def __init__(self, name, *, impl=None, abstract_eval=None, traits=(), print_params=None,
                 register=True):
        self.name = name
        self.impl = impl
        self.abstract_eval = abstract_eval
        self.traits = frozenset(traits)
        if print_params is not None:
            self.print_params = print_params
        if register:  # primitives defined by libraries (jax.extend) are not functrans's own
            _PRIMITIVES.append(self)

    def bind(self, *args, **params):
        """Apply the primitive in the current trace, with JAX's result convention: the list of
        outputs when ``multiple_results``, else the one output.

            >>> from functrans.primitives import sin_p, sort_p
            >>> sin_p.bind(0.0)
            Array(0., dtype=float64, weak_type=True)
            >>> sort_p.bind(np.array([2, 1]), dimension=0, is_stable=True, num_keys=1)
            [Array([1, 2], dtype=int64)]
        """
        outs = _state.trace.process_primitive(self, args, params)
        if self.multiple_results:
            return outs
        if len(outs) != 1:  # a variadic use of a single-result primitive: bind_all's job
            raise TypeError(f"{self.name}.bind gave {len(outs)} outputs but the primitive has "
                            "multiple_results=False: use bind_all for the list of outputs")
        return outs[0]

    def bind_all(self, *args, **params) -> list:
        """Apply the primitive in the current trace; returns the list of its outputs, whatever
        their number (functrans's interpreters and rules bind with it)."""
        return _state.trace.process_primitive(self, args, params)

    def bind1(self, *args, **params):
        """``bind`` for single-output primitives: returns the one output."""
        return _state.trace.process_primitive(self, args, params)[0]

    def __repr__(self):
        return self.name


class Trace:
    """One active transformation. ``parent`` is the trace that was current when it began."""

    name = "a transformation"

    def __init__(self, parent: "Trace | None"):
        self.parent = parent
        self.alive = True

    def process_primitive(self, prim: Primitive, args, params) -> list:
        raise NotImplementedError

    def describe(self) -> str:
        return self.name

    def on_parent(self, prim: Primitive, args, params) -> list:
        """Process ``prim`` on the parent trace, as if bound there: for values this trace has
        nothing to do with (they pass through without being repacked)."""
        prev = _state.trace
        parent = _state.trace = self.parent
        try:
            return parent.process_primitive(prim, args, params)
        finally:
            _state.trace = prev

    @property
    def main(self) -> "Trace":
        """What tells this transformation's tracers from others' (JAX's ``trace.main``, its
        tag; equinox compares ``tracer._trace.main``): the trace itself, as functrans makes
        one trace per transformation applied.

            >>> EVAL_TRACE.main is EVAL_TRACE
            True
        """
        return self

    def check_foreign(self, x: "Tracer") -> None:
        """Called when this trace meets another trace's tracer: fine if that one is alive."""
        if not x._trace.alive:
            raise UnexpectedTracerError(x)


class Tracer:
    """A value inside a transformation: knows its aval and, when it can, its concrete value.
    Weakly referenceable, as JAX's tracers are (TensorFlow Probability's caches hold weak
    references to the values they are keyed on)."""

    __slots__ = ("_trace", "__weakref__")
    __array_priority__ = 1000

    aval: ShapedArray  # provided by subclasses

    shape = property(lambda self: self.aval.shape)
    dtype = property(lambda self: self.aval.dtype)
    ndim = property(lambda self: self.aval.ndim)
    size = property(lambda self: self.aval.size)
    weak_type = property(lambda self: self.aval.weak_type)

    def concrete_value(self):
        """The value as an ndarray if it is known while tracing (e.g. eager grad), else None."""
        return None

    def _concrete(self, what):
        v = self.concrete_value()
        if v is None:
            raise ConcretizationTypeError(self, what)
        return v

    def __bool__(self):
        return bool(self._concrete("bool()"))

    def __int__(self):
        return int(self._concrete("int()"))

    def __float__(self):
        return float(self._concrete("float()"))

    def __complex__(self):
        return complex(self._concrete("complex()"))

    def __index__(self):
        v = self._concrete("using it as an index (__index__)")
        if not dtypes.is_int(v.dtype):
            raise TypeError(f"only integer arrays can be used as an index, not {v.dtype}")
        return int(v)

    def __array__(self, dtype=None, copy=None):
        v = self.concrete_value()
        if v is None:
            raise TracerArrayConversionError(self)
        return np.asarray(v, dtype=dtype)

    def item(self):
        return self._concrete(".item()").item()

    def tolist(self):
        return self._concrete(".tolist()").tolist()

    def __len__(self):
        if not self.aval.shape:
            raise TypeError("len() of unsized object (a 0-d traced array)")
        return self.aval.shape[0]

    def __iter__(self):
        if not self.aval.shape:
            raise TypeError("iteration over a 0-d traced array")
        return (self[i] for i in range(self.aval.shape[0]))

    __hash__ = None

    def __repr__(self):
        return f"Traced<{self.aval.str_short()}>with<{self._trace.describe()}>"


type(Array).virtual = (Tracer,)  # isinstance(tracer, Array), as JAX's Array is tracers' base

_array_avals: dict = {}  # (shape, dtype, weak) -> ShapedArray: avals are immutable


def get_aval(x) -> ShapedArray:
    """The abstract value of any array-like input (Array, Tracer, ndarray, Python scalar)."""
    t = type(x)
    if t is Array:
        v = x._value
        key = (v.shape, v.dtype, x._weak)
        aval = _array_avals.get(key)
        if aval is None:
            if len(_array_avals) >= 4096:
                _array_avals.clear()
            aval = _array_avals[key] = ShapedArray(*key)
        return aval
    if isinstance(x, Tracer):
        return x.aval
    if t is np.ndarray or isinstance(x, np.generic):
        return ShapedArray(x.shape, dtypes.canonicalize_dtype(x.dtype))
    if t in (bool, int, float, complex):
        return ShapedArray((), dtypes.python_scalar_dtype(x), True)
    if not getattr(type(x), "_host_backed", True) and isinstance(x, Array):  # elsewhere
        return x.aval
    if isinstance(x, (np.ndarray, Array)):  # subclasses
        return get_aval(np.asarray(x))
    handler = pytype_aval_mappings.get(t)
    if handler is not None:  # a type a library registered
        return handler(x)
    raise TypeError(f"value of type {t.__name__} is not an array: {x!r:.80}; "
                    "functrans accepts functrans/NumPy arrays and Python scalars")


pytype_aval_mappings: dict = {}
"""Python type -> function giving its values' abstract value (JAX's
``core.pytype_aval_mappings``): functrans's own array and scalar types map to
:func:`get_aval`; a type a library registers here is accepted by :func:`get_aval` (values
of exactly that type).

    >>> pytype_aval_mappings[float](2.0)
    ShapedArray(f64[], weak_type=True)
"""


def _numpy_aval(x) -> ShapedArray:
    # By the value's shape and dtype, not its type, as JAX's handler: libraries register it
    # for their own array-like types (TensorFlow Probability's variables), which get_aval
    # would send back here.
    return ShapedArray(np.shape(x), dtypes.canonicalize_dtype(x.dtype))


pytype_aval_mappings.update(
    {t: get_aval for t in (Array, bool, int, float, complex)} | {np.ndarray: _numpy_aval}
    | {t: _numpy_aval for t in np.sctypeDict.values() if issubclass(t, (np.number, np.bool_))})


def concrete_of(x):
    """The concrete ndarray behind ``x`` if it is known now (else None)."""
    if type(x) is Array:
        return x._value
    if isinstance(x, Tracer):
        return x.concrete_value()
    return np.asarray(x)


def to_numpy(x, aval: ShapedArray | None = None) -> np.ndarray:
    """A read-only ndarray view of a concrete input, converted to its canonical dtype."""
    t = type(x)
    if t is Array:
        return x._value
    if aval is None:
        aval = get_aval(x)
    v = np.asarray(x, dtype=aval.dtype)
    if v.flags.writeable:
        v = v.view()
        v.flags.writeable = False  # impl outputs may alias inputs: never the user's buffer
    return v


def nan_error(prim) -> FloatingPointError:
    """The debug_nans error for a NaN produced by ``prim``, naming the user's line."""
    where = _state.nan_where
    where, context = where if where is not None else (source_info(), "")
    return FloatingPointError(f"invalid value (nan) encountered in {prim.name}"
                              + (f" at {where}" if where else "") + context
                              + " (debug_nans is on)")


class nan_source:
    """Context manager: NaNs found meanwhile are reported at ``source`` (an equation's line,
    while a compiled program is re-run eagerly to locate one), with ``context`` appended."""

    __slots__ = ("where", "prev")

    def __init__(self, source, context=""):
        self.where = (source, context)

    def __enter__(self):
        self.prev = _state.nan_where
        _state.nan_where = self.where

    def __exit__(self, *exc):
        _state.nan_where = self.prev


def _check_nans(prim, vals, params, outs):
    for o in outs:
        if dtypes.kind(o.dtype) == "f" and np.isnan(o).any():
            locate = getattr(prim, "locate_nan", None)
            if locate is not None:  # a compiled call: name the primitive inside it
                locate(vals, params)
            raise nan_error(prim)


_NARROW = dtypes._NARROW  # filled when ml_dtypes is first needed (core/dtypes.py)
_FLOAT32 = np.dtype(np.float32)


def impl_via_float32(prim, vals, params, out_avals) -> list:
    """``prim.impl`` where a value is bfloat16 or float8: as JAX does on CPU, the operation
    computes in float32 and its results are rounded to their narrow types (one rounding per
    operation). Primitives with the ``"narrow_native"`` trait (bitcasts) and those whose
    params hold programs or functions (control flow, calls, callbacks) see the values as
    they are.

        >>> import ml_dtypes
        >>> from functrans.primitives import add_p
        >>> x = np.array([1.0, 2.0], ml_dtypes.bfloat16)
        >>> impl_via_float32(add_p, [x, x], {}, [ShapedArray((2,), x.dtype)])[0].dtype
        dtype(bfloat16)
    """
    if "narrow_native" not in prim.traits and not _holds_code(params):
        vals = [v.astype(_FLOAT32) if getattr(v, "dtype", None) in _NARROW else v for v in vals]
    return [o if np.asarray(o).dtype == a.dtype else np.asarray(o).astype(a.dtype)
            for o, a in zip(prim.impl(*vals, **params), out_avals)]


def _holds_code(params) -> bool:
    # Control flow, calls and callbacks run programs typed for the narrow values (whose own
    # equations compute through float32) or user code that expects them as they are.
    return any(True for _ in walk_jaxprs(params)) or any(callable(v) for v in params.values())


def check_impl_outputs(prim, outs, out_avals):
    """The impl must produce exactly what the type rule promises (checked in test runs)."""
    if len(outs) != len(out_avals):
        raise AssertionError(f"{prim}: impl returned {len(outs)} values, abstract_eval "
                             f"{len(out_avals)}")
    for i, (o, a) in enumerate(zip(outs, out_avals)):
        shape, dtype = np.shape(o), np.asarray(o).dtype
        if shape != tuple(a.shape) or dtype != a.dtype:
            raise AssertionError(f"{prim}: impl output {i} is {dtype}{list(shape)}, "
                                 f"abstract_eval says {a.str_short()}")


class EvalTrace(Trace):
    """The root trace: runs impls on concrete values (type rules through ``type_rule``'s
    cache)."""

    name = "eager evaluation"

    def __init__(self):
        super().__init__(None)

    def process_primitive(self, prim, args, params):
        sig, vals, user, narrow, placed = [], [], None, False, False
        for x in args:
            if type(x) is Array:
                v = x._value
                sig.append((v.shape, v.dtype, x._weak))
                vals.append(v)
                if v.dtype in _NARROW:
                    narrow = True
                if type(x._sharding) is NamedSharding:
                    placed = True
            elif type(x) is np.ndarray and x.ndim:
                # The caller's array itself: outputs that could alias it are copied below.
                d = dtypes.canonicalize_dtype(x.dtype)
                sig.append((x.shape, d, False))
                narrow = narrow or d in _NARROW
                if d != x.dtype:
                    vals.append(x.astype(d))
                else:
                    vals.append(x)
                    if x.flags.writeable:
                        user = (user or []) + [x]
            elif isinstance(x, Tracer):
                raise UnexpectedTracerError(x)  # only tracers of finished traces get here
            elif getattr(type(x), "_unreduced", False):  # partial sums on its devices
                return apply_unreduced(prim, args, params)
            elif getattr(type(x), "_spread", False):  # over processes: no value here
                return apply_on_shards(prim, args, params)  # (transforms/partition)
            else:
                aval = get_aval(x)
                sig.append((aval.shape, aval.dtype, aval.weak_type))
                narrow = narrow or aval.dtype in _NARROW
                vals.append(to_numpy(x, aval))  # (a read-only view: wrapping an output that
                # is the input itself must not freeze the caller's array)
                if type(x) is np.ndarray and x.flags.writeable:
                    user = (user or []) + [x]
        if placed:
            # On a mesh of several devices an eager operation is a partitioned program (as
            # JAX runs it jitted): its results keep their shardings, and ambiguous ones on
            # Explicit axes raise ShardingTypeError.
            outs = apply_on_mesh(prim, args, params)
            if outs is not None:
                return outs
        out_avals = type_rule(prim, sig, params)
        if narrow:
            outs = impl_via_float32(prim, vals, params, out_avals)
        else:
            outs = prim.impl(*vals, **params)
        if config.check_jaxprs:
            check_impl_outputs(prim, outs, out_avals)
        result = []
        for o, a in zip(outs, out_avals):
            if type(o) is not np.ndarray or o.dtype != a.dtype:
                o = np.asarray(o, dtype=a.dtype)
            if user and (o.base is not None or any(o is u for u in user)) and \
                    any(np.may_share_memory(o, u) for u in user):
                o = o.copy()  # a view of the caller's writable array would not stay immutable
            o.setflags(write=False)
            r = _new_object(Array)  # Array._wrap, inlined: this is the hottest path
            r._value, r._weak, r._sharding = o, a.weak_type, None
            result.append(r)
        if config.debug_nans:
            _check_nans(prim, vals, params, [r._value for r in result])
        return result


_new_object = object.__new__
_RULE_CACHE_SIZE = 8192
_rule_cache: dict = {}


def type_rule(prim, sig, params) -> list:
    """``prim.abstract_eval`` on inputs of types ``sig`` ((shape, dtype, weak) each).

    Type rules are pure functions of the input types and params, so their results are
    cached per (primitive, x64 flag, input types, params): a signature seen before skips
    validation. Collectives and params holding programs or functions are not cached.
    """
    try:
        key = (prim, config.enable_x64, *sig, *params.items()) if params else \
            (prim, config.enable_x64, *sig)
        out_avals = _rule_cache.get(key)
    except TypeError:  # unhashable params
        key = out_avals = None
    if out_avals is None:
        out_avals = prim.abstract_eval(*[ShapedArray(*s) for s in sig], **params)
        if key is not None and context_free_rule(prim, params):
            if len(_rule_cache) >= _RULE_CACHE_SIZE:
                _rule_cache.clear()
            _rule_cache[key] = out_avals
    return out_avals


def context_free_rule(prim, params) -> bool:
    """Whether the type rule depends on the inputs and params alone: not for collectives
    (named axes in scope), nor for params holding programs or functions (kept alive by
    identity and seldom seen twice)."""
    if getattr(prim, "named_axis_rule", False) or getattr(prim, "host_only", False):
        return False
    return not any(callable(v) or isinstance(v, (Jaxpr, tuple)) and any(walk_jaxprs({0: v}))
                   for v in params.values())


EVAL_TRACE = EvalTrace()


class _State(threading.local):
    trace: Trace = EVAL_TRACE  # every thread starts at the root
    nan_where = None  # (source, context) while nan_source is active


_state = _State()


def current_trace() -> Trace:
    return _state.trace


class set_current_trace:
    """Context manager: make ``trace`` current (rules use it to bind on their parent)."""

    __slots__ = ("trace", "prev")

    def __init__(self, trace):
        self.trace = trace

    def __enter__(self):
        self.prev = _state.trace
        _state.trace = self.trace

    def __exit__(self, *exc):
        _state.trace = self.prev


class _TakenTrace(Trace):
    """Current while :func:`take_current_trace` holds the trace: binding is an error."""

    name = "no trace (taken by take_current_trace)"

    def process_primitive(self, prim, args, params):
        raise RuntimeError(f"cannot bind {prim.name} while the current trace is taken "
                           "(inside take_current_trace); bind on the trace it gave")


@contextlib.contextmanager
def take_current_trace():
    """Context manager (JAX's): yields the current trace and, while inside, leaves no trace
    current, so a primitive bound there raises; bind on the yielded trace instead (its
    ``process_primitive``), or make a trace current with :class:`set_current_trace`.

        >>> with take_current_trace() as t:
        ...     t is EVAL_TRACE
        True
    """
    prev = _state.trace
    _state.trace = _TakenTrace(prev)
    try:
        yield prev
    finally:
        _state.trace = prev


class TraceTag:
    """A tag telling one transformation's traces from every other's (JAX's): hashable,
    equal only to itself.

        >>> a, b = TraceTag(), TraceTag()
        >>> a == a, a == b, len({a, b, a})
        (True, False, 2)
    """

    __slots__ = ("__weakref__",)

    def __repr__(self):
        return f"TraceTag({id(self):#x})"


class new_trace(set_current_trace):
    """Context manager: run a transformation's trace; its tracers are dead afterwards."""

    __slots__ = ()

    def __enter__(self):
        super().__enter__()
        return self.trace

    def __exit__(self, exc_type, *exc):
        _state.trace = self.prev
        self.trace.alive = False
        if config.check_tracer_leaks and exc_type is None:
            from .leaks import check_leaks
            check_leaks(self.trace)
