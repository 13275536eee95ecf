"""JAX's ``Primitive`` for libraries that define their own operations, on functrans's core.

A library primitive is two objects. :class:`Primitive` is what the library holds, with JAX's
conventions: ``bind`` returns one value unless ``multiple_results`` is set, ``impl`` and the
abstract evaluation return one value (or a list), and the rules registered in
``jax.interpreters.ad``/``batching``/``mlir`` follow JAX's signatures. Its
:class:`LibraryPrimitive` is what functrans's traces and jaxprs see (``eqn.prim``), with
functrans's convention (lists of outputs throughout); it adapts each call to the library's
functions, read from the :class:`Primitive` when called, so rules and impls may be set in
any order::

    >>> p = Primitive("double")
    >>> _ = p.def_impl(lambda x: 2 * x)
    >>> _ = p.def_abstract_eval(lambda a: a)
    >>> p.bind(fnp.arange(3.0))
    Array([0., 2., 4.], dtype=float64)
    >>> ft.make_jaxpr(p.bind)(1.0).eqns[0].prim.facade is p
    True
"""
from __future__ import annotations

import numpy as np

from functrans.core import dtypes
from functrans.core.array import Array
from functrans.core.avals import ShapedArray
from functrans.core.trace import (EVAL_TRACE, Primitive as CorePrimitive, current_trace,
                                  set_current_trace)
from functrans.transforms.jit.lowerings import lowering_for

__all__ = ["Primitive", "LibraryPrimitive", "core_primitive", "jax_primitive",
           "multiple_results", "jax_bind", "no_effects"]

no_effects: frozenset = frozenset()


class Primitive:
    """A named operation defined by a library (JAX's ``jax.extend.core.Primitive``).

    Give it an impl (``def_impl``: concrete inputs -> output), an abstract evaluation
    (``def_abstract_eval``: ``ShapedArray`` inputs -> ``ShapedArray`` output) and, as needed,
    rules in ``jax.interpreters.ad`` (``primitive_jvps``, ``primitive_transposes``),
    ``batching`` (``primitive_batchers``) and ``mlir`` (``register_lowering`` with
    ``lower_fun``). Set ``multiple_results = True`` for a primitive whose impl, abstract
    evaluation and ``bind`` give a list of outputs::

        >>> from functrans.core.avals import ShapedArray
        >>> halves_p = Primitive("halves")
        >>> halves_p.multiple_results = True
        >>> _ = halves_p.def_impl(lambda x: [x[:2], x[2:]])
        >>> _ = halves_p.def_abstract_eval(lambda a: [ShapedArray((2,), a.dtype)] * 2)
        >>> halves_p.bind(fnp.arange(4.0))
        [Array([0., 1.], dtype=float64), Array([2., 3.], dtype=float64)]
    """

    multiple_results = False
    call_primitive = False
    map_primitive = False
    ref_primitive = False
    skip_canonicalization = False
    is_effectful = None

    def __init__(self, name: str):
        if not isinstance(name, str):
            raise TypeError(f"Primitive: name must be a str, got {type(name).__name__}")
        self.name = name
        self._core = LibraryPrimitive(self)

    def __repr__(self):
        return self.name

    def bind(self, *args, **params):
        """Apply the primitive in the current transformation: one output, or a list of them
        when ``multiple_results``."""
        outs = self._core.bind_all(*args, **params)
        return outs if self.multiple_results else outs[0]

    def def_impl(self, impl):
        """Set how the primitive runs on concrete values; returns ``impl`` (a decorator)."""
        self.impl = impl
        return impl

    def def_abstract_eval(self, abstract_eval):
        """Set the abstract evaluation (output type(s) from input types, no effects)."""
        def with_effects(*avals, **params):
            return abstract_eval(*avals, **params), no_effects
        self.abstract_eval = with_effects
        return abstract_eval

    def def_effectful_abstract_eval(self, effectful_abstract_eval):
        """Set an abstract evaluation returning ``(output type(s), effects)``. A primitive with
        effects is never removed from a program, even when its outputs are unused."""
        self.abstract_eval = effectful_abstract_eval
        return effectful_abstract_eval

    def impl(self, *args, **params):
        raise NotImplementedError(f"Evaluation rule for '{self.name}' not implemented")

    def abstract_eval(self, *avals, **params):
        raise NotImplementedError(f"Abstract evaluation for '{self.name}' not implemented")

    def get_bind_params(self, params):
        """The params to ``bind`` an equation of this primitive again with."""
        return params

    def is_high(self, *avals, **params) -> bool:
        return False


class LibraryPrimitive(CorePrimitive):
    """What functrans's traces and jaxprs hold for a library's :class:`Primitive`
    (``facade``): lists in, lists out, adapted to the library's functions.

        >>> p = Primitive("neg_it")
        >>> _ = p.def_impl(lambda x: -x)
        >>> _ = p.def_abstract_eval(lambda a: a)
        >>> p._core.bind_all(1.0)
        [Array(-1., dtype=float64, weak_type=True)]
    """

    def __init__(self, facade: Primitive):
        super().__init__(facade.name, impl=self._impl, abstract_eval=self._abstract_eval,
                         register=False)
        self.facade = facade
        self._effectful = False

    @property
    def effectful(self) -> bool:
        return self._effectful

    @property
    def multiple_results(self) -> bool:  # the library's, read when bound
        return bool(self.facade.multiple_results)

    def bind_all(self, *args, **params) -> list:
        if current_trace() is EVAL_TRACE and not _has_abstract_eval(self.facade):
            # As in JAX, evaluating needs only the impl: the outputs are what it computes.
            outs = self._impl(*args, **params)
            return [Array._wrap(np.asarray(o, dtypes.canonicalize_dtype(np.asarray(o).dtype)))
                    for o in outs]
        return super().bind_all(*args, **params)

    @property
    def host_only(self) -> bool:
        # Without a lowering jit runs the Python impl between compiled segments.
        return lowering_for(self) is None

    def _impl(self, *vals, **params):
        facade = self.facade
        # Wrapped as the Arrays a JAX impl gets; a view keeps a caller's buffer writable.
        args = [Array._wrap(v.view() if v.flags.writeable else v)
                for v in map(np.asarray, vals)]
        with set_current_trace(EVAL_TRACE):  # impls get concrete values whoever calls them
            out = facade.impl(*args, **params)
        outs = _as_list(out, facade, "impl")
        return [o._value if type(o) is Array else np.asarray(o) for o in outs]

    def _abstract_eval(self, *avals, **params):
        facade = self.facade
        res = facade.abstract_eval(*avals, **params)
        if not (isinstance(res, tuple) and len(res) == 2):
            raise TypeError(f"the abstract evaluation of '{facade.name}' set with "
                            "def_effectful_abstract_eval must return (avals, effects), got "
                            f"{type(res).__name__}")
        out, effects = res
        if effects:
            self._effectful = True  # kept by dead-code elimination from now on
        return [_as_aval(a, facade) for a in _as_list(out, facade, "abstract evaluation")]


def _has_abstract_eval(facade) -> bool:
    return ("abstract_eval" in vars(facade)
            or type(facade).abstract_eval is not Primitive.abstract_eval)


def _as_list(out, facade, what):
    if not facade.multiple_results:
        return [out]
    if not isinstance(out, (list, tuple)):
        raise TypeError(f"the {what} of '{facade.name}' (multiple_results=True) must return a "
                        f"list or tuple, got {type(out).__name__}")
    return list(out)


def _as_aval(a, facade) -> ShapedArray:
    if type(a) is ShapedArray:
        return a
    shape, dtype = getattr(a, "shape", None), getattr(a, "dtype", None)
    if shape is None or dtype is None or callable(shape):
        raise TypeError(f"the abstract evaluation of '{facade.name}' must return ShapedArray "
                        f"values, got {type(a).__name__}: {a!r:.80}")
    return ShapedArray(shape, dtypes.canonicalize_dtype(dtype), getattr(a, "weak_type", False))


def core_primitive(p) -> CorePrimitive:
    """The primitive functrans's traces and rule tables use for ``p`` (a library
    :class:`Primitive`, or one of functrans's own).

        >>> p = Primitive("mine")
        >>> core_primitive(p) is p._core, jax_primitive(core_primitive(p)) is p
        (True, True)
    """
    if isinstance(p, Primitive):
        return p._core
    if isinstance(p, CorePrimitive):
        return p
    raise TypeError(f"expected a primitive, got {type(p).__name__}: {p!r:.80}")


def jax_primitive(prim: CorePrimitive):
    """The object a JAX program knows for functrans's ``prim``: the library's
    :class:`Primitive` for a library primitive, else ``prim`` itself.

        >>> from functrans.primitives import sin_p
        >>> jax_primitive(sin_p) is sin_p
        True
    """
    return getattr(prim, "facade", prim)


def multiple_results(p) -> bool:
    """Whether ``p``'s ``bind`` and rules give a list of outputs in JAX's conventions.

        >>> from functrans.primitives import sin_p, cond_p
        >>> multiple_results(sin_p), multiple_results(cond_p)
        (False, True)
    """
    return bool(jax_primitive(p).multiple_results)


def jax_bind(p, *args, **params):
    """``p.bind`` with JAX's result convention, for library and functrans primitives alike.

        >>> from functrans.primitives import sin_p
        >>> jax_bind(sin_p, 0.0)
        Array(0., dtype=float64, weak_type=True)
    """
    return p.bind(*args, **params)
