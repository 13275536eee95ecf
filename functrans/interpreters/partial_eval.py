"""``jax.interpreters.partial_eval``: the public pieces of JAX's partial evaluation.

functrans's staging tracers (``make_jaxpr``, ``jit``, and the unknown values of
linearization) are :class:`DynamicJaxprTracer` and :class:`JaxprTracer` both::

    >>> seen = []
    >>> _ = ft.jit(lambda x: seen.append(isinstance(x, DynamicJaxprTracer)) or x)(1.0)
    >>> seen
    [True]
"""
from __future__ import annotations

from functrans.core.staging import StagingTracer, trace_to_jaxpr
from functrans.core.trace import get_aval
from functrans.transforms.autodiff.partial_eval import dce_jaxpr as _dce_jaxpr

__all__ = ["DynamicJaxprTracer", "JaxprTracer", "PartialVal", "dce_jaxpr",
           "trace_to_jaxpr_dynamic"]

DynamicJaxprTracer = StagingTracer
JaxprTracer = StagingTracer


class PartialVal(tuple):
    """A value that is either known, ``(None, const)``, or unknown with only its abstract
    value known, ``(aval, None)``.

        >>> from functrans.core.avals import ShapedArray
        >>> PartialVal.known(2.0).get_aval()
        ShapedArray(f64[], weak_type=True)
        >>> PartialVal.unknown(ShapedArray((3,), "int32")).is_known()
        False
    """

    def __new__(cls, xs):
        pv, const = xs
        if (pv is None) == (const is None):
            raise ValueError("PartialVal: exactly one of the abstract value and the constant "
                             f"must be None, got ({pv!r}, {const!r:.60})")
        return tuple.__new__(cls, xs)

    @classmethod
    def known(cls, const) -> "PartialVal":
        return PartialVal((None, const))

    @classmethod
    def unknown(cls, aval) -> "PartialVal":
        return PartialVal((aval, None))

    def is_known(self) -> bool:
        return self[0] is None

    def get_known(self):
        """The known value, or None if unknown."""
        return self[1] if self[0] is None else None

    def get_aval(self):
        """The abstract value (of the constant, when known)."""
        known = self.get_known()
        return get_aval(known) if known is not None else self[0]


def dce_jaxpr(jaxpr, used_outputs, instantiate=False):
    """Dead-code elimination: the program computing only the outputs where ``used_outputs``
    is set, from only the inputs it reads (and those where ``instantiate`` is set). Returns
    ``(new_jaxpr, used_inputs)``.

        >>> j = ft.make_jaxpr(lambda x, y: (fnp.sin(x), y * 2))(1.0, 2.0)
        >>> new, used = dce_jaxpr(j, [True, False])
        >>> used, len(new.eqns)
        ([True, False], 1)
    """
    n_out, n_in = len(jaxpr.outvars), len(jaxpr.invars)
    used_outputs = [used_outputs] * n_out if isinstance(used_outputs, bool) else \
        list(used_outputs)
    instantiate = [instantiate] * n_in if isinstance(instantiate, bool) else list(instantiate)
    if len(used_outputs) != n_out or len(instantiate) != n_in:
        raise ValueError(f"dce_jaxpr: used_outputs needs {n_out} entries and instantiate "
                         f"{n_in}, got {len(used_outputs)} and {len(instantiate)}")
    new, used = _dce_jaxpr(jaxpr, used_outputs)
    used = [u or i for u, i in zip(used, instantiate)]
    return new.replace(invars=[v for v, u in zip(new.invars, used) if u]), used


def trace_to_jaxpr_dynamic(fun, in_avals, *, keep_inputs=None, lower=False, auto_dce=False):
    """Trace ``fun`` (a ``WrappedFun`` or function of flat arguments returning a flat list)
    on arguments of types ``in_avals``: ``(jaxpr, out_avals, consts)``. functrans's jaxpr
    carries its constants, so ``consts`` are ``jaxpr.consts``.

        >>> from functrans.core.avals import ShapedArray
        >>> jaxpr, out_avals, consts = trace_to_jaxpr_dynamic(
        ...     lambda x: [x + 1], [ShapedArray((), "float32")])
        >>> out_avals
        [ShapedArray(f32[])]
    """
    if keep_inputs is not None and not all(keep_inputs):
        raise NotImplementedError("trace_to_jaxpr_dynamic: keep_inputs (dropping inputs) is "
                                  "not supported")
    call = getattr(fun, "call_wrapped", fun)
    jaxpr = trace_to_jaxpr(lambda *xs: list(call(*xs)), list(in_avals))
    return jaxpr, jaxpr.out_avals, list(jaxpr.consts)


def __getattr__(name):
    raise AttributeError(f"module 'jax.interpreters.partial_eval' has no attribute {name!r}: "
                         f"functrans does not provide jax.interpreters.partial_eval.{name}")
