"""``jax.core`` under :mod:`functrans.as_jax`: the public names of JAX's core module, as
functrans's own types.

    >>> from functrans.as_jax import jax_core
    >>> jax_core.ShapedArray((3,), np.float32).shape
    (3,)
"""
from __future__ import annotations

from typing import Any, Union

from functrans.core import shape_poly as _shape_poly
from functrans.core.avals import ShapedArray
from functrans.core.eval import eval_jaxpr as _eval_jaxpr
from functrans.core.ir import DropVar, Literal, Var
from functrans.core.trace import Trace, Tracer, pytype_aval_mappings
from functrans.extend.core import get_opaque_trace_state, valid_jaxtype

__all__ = ["AbstractValue", "Atom", "DropVar", "ParamDict", "ShapedArray", "Trace", "Tracer",
           "Value", "dimension_as_value", "eval_jaxpr", "get_opaque_trace_state",
           "is_constant_dim", "is_symbolic_dim", "max_dim", "min_dim",
           "pytype_aval_mappings", "valid_jaxtype"]

AbstractValue = ShapedArray  # functrans's only abstract value
Atom = Union[Var, Literal]
Value = Any
ParamDict = dict


def eval_jaxpr(jaxpr, consts, *args, propagate_source_info=True):
    """Run ``jaxpr`` with its constants ``consts`` on ``args`` (JAX's argument order).

        >>> j = ft.make_jaxpr(lambda x: x * 2.0)(1.0)
        >>> eval_jaxpr(j.jaxpr, j.consts, 3.0)
        [Array(6., dtype=float64, weak_type=True)]
    """
    del propagate_source_info  # functrans's equations always keep theirs
    return _eval_jaxpr(jaxpr.replace(consts=list(consts)), *args)


def max_dim(d1, d2):
    """The larger of two dimension sizes; for symbolic sizes whose order depends on the
    dimension variables, a ``max`` expression (JAX's).

        >>> max_dim(2, 3)
        3
    """
    return _shape_poly.max_dim(d1, d2)


def min_dim(d1, d2):
    """The smaller of two dimension sizes (a ``min`` expression when it is not decided)."""
    return _shape_poly.min_dim(d1, d2)


def is_constant_dim(d) -> bool:
    """Whether ``d`` is a concrete size (not a symbolic one).

        >>> is_constant_dim(3)
        True
    """
    return _shape_poly.is_constant_dim(d)


def is_symbolic_dim(d) -> bool:
    """Whether ``d`` is a symbolic dimension size (shape polymorphism)."""
    return _shape_poly.is_symbolic_dim(d)


def dimension_as_value(d):
    """A dimension size as a value: an int as it is, a symbolic size as a scalar array of the
    program being traced."""
    from functrans.primitives.shape_poly import dimension_as_value as as_value
    return as_value(d)


def __getattr__(name):
    # The context managers live on functrans's top level (JAX has them on both).
    if name in ("ensure_compile_time_eval", "eval_context"):
        import functrans
        return getattr(functrans, "ensure_compile_time_eval")
    raise AttributeError(f"module 'jax.core' has no attribute {name!r}: functrans does not "
                         f"provide jax.core.{name}")
